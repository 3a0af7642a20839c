/* test_bound.c - the closed-form lower bound against exhaustive search
 * and proven optima: on tiny instances with random times, comm and
 * limits, every legal compute order (bound_grids.h) is simulated, and
 * none may beat the bound. Loop placement with one chunk and V placement
 * with two; m from below p to above it; limits from one microbatch to
 * unlimited. The grids run a slice here, whole in `make bench`. */
#include <stdlib.h>
#include <string.h>
#include "helpers.h"
#include "bound_grids.h"

/* A slice of each exhaustive grid (bound_grids.h): every fourth trial of
 * each family; `make bench` runs them whole (tools/bench_solver_check.c). */
static void assert_grid_slice(int g)
{
    struct order_tally t;

    cr_assert(order_grid_check(&order_grids[g], 4, &t), "%s grid: %s",
              order_grids[g].name, t.violation);
    cr_log_info("%s: bound tight in %d of %d cases", order_grids[g].name,
                t.tight, t.cases);
}

Test(bound, no_order_beats_the_lower_bound_on_tiny_instances)
{
    assert_grid_slice(0);
}

Test(bound, no_order_beats_the_lower_bound_with_two_chunks)
{
    assert_grid_slice(1);
}

Test(bound, no_order_beats_the_lower_bound_at_low_limits)
{
    assert_grid_slice(2);
}

/* The best of every order of p, which must have one that fits. */
static double best_cost(const struct zb_profile *p, int m)
{
    static struct seqs q;
    double opt;

    cr_assert(all_orders(&q, m, p->vpp));
    opt = best_order_cost(p, &q);
    cr_assert(isfinite(opt), "no order fits");
    return opt;
}

/* The memory tail (bound.c section 8): p 2, m 4, limit 2.25 microbatches,
 * M_W 0.5, comm 0.2. Rank 0 must free 1.75 before its last F: with few
 * B's done the W's left for the tail window cannot fill it, with all
 * three B's done the second round trip waits for the third. Sections
 * 1-7 give 10.9; the best of every order is 11.3, and section 8 meets
 * it. */
Test(bound, memory_tail_meets_the_best_order)
{
    struct shape sh = unit_shape(2, 4);
    struct zb_profile p;

    sh.comm = 0.2;
    sh.m_w = 0.5;
    sh.limit = 2.25;
    make_profile(&sh, &p);
    p.stage[0] = (struct zb_stage_times){ 1, 0.5, 1 };
    p.stage[1] = (struct zb_stage_times){ 1, 0.5, 0 };
    double lb = zb_bound_cost(&p), opt = best_cost(&p, 4);
    cr_assert_float_eq(opt, 11.3, 1e-9, "best order %g", opt);
    cr_assert_float_eq(lb, opt, 1e-9, "bound %g, best order %g", lb, opt);
    zb_profile_release(&p);
}

/* Section 8's start(x), one level further: at a limit of one
 * microbatch (M_W 0.25, so a B alone frees too little) each F of rank 0
 * waits for an earlier microbatch's B and W, and that microbatch's F for
 * one before it. With start(x) only charging the work and head idle the
 * bound is 14.5; chaining the round trips gives 15. The best order is
 * 16.5, so the bound stays below it. */
Test(bound, memory_tail_chains_the_earlier_round_trips)
{
    struct shape sh = unit_shape(2, 3);
    struct zb_profile p;

    sh.m_w = 0.25;
    sh.limit = 1;
    make_profile(&sh, &p);
    p.stage[0] = (struct zb_stage_times){ 0.5, 0.5, 1.5 };
    p.stage[1] = (struct zb_stage_times){ 1, 2, 1.5 };
    double lb = zb_bound_cost(&p), opt = best_cost(&p, 3);
    cr_assert_float_eq(opt, 16.5, 1e-9, "best order %g", opt);
    cr_assert_geq(lb, 15 - 1e-9, "bound %g", lb);
    cr_assert_leq(lb, opt + 1e-9, "bound %g above the best order %g", lb,
                  opt);
    zb_profile_release(&p);
}

/* A profile of shape sh with these per-stage times (p v of them). */
static void make_uneven(const struct shape *sh,
                        const struct zb_stage_times *times,
                        struct zb_profile *p)
{
    make_profile(sh, p);
    for (int st = 0; st < sh->pp * sh->vpp; st++)
        p->stage[st] = times[st];
}

/* The optimum of p that the ILP proves alone (without the closed-form
 * bound, which is under test) within `seconds`, on one thread. */
static double proven_optimum(const struct zb_profile *p, double seconds)
{
    struct zb_options o;
    struct zb_schedule s;
    struct zb_error err = { 0 };
    double opt;

    zb_options_init(&o);
    o.time_limit = seconds;
    o.threads = 1;
    o.independent = true;
    cr_assert_eq(zb_generator_run(zb_generator_find("ilp"), p, &o, &s, &err),
                 0, "%s", err.msg);
    cr_assert_str_eq(s.solver.status, "optimal", "p %d m %d", p->pp,
                     p->microbatches);
    opt = s.solver.objective;
    zb_schedule_release(&s);
    return opt;
}

/* V placement at 1F1B's memory (2p chunk activations), m just above p:
 * the middle rank must run B's and W's before its last forwards, and
 * the memory turn (bound.c section 7) charges them to rank 0's span.
 * The ILP, proving without the closed-form bound, finds the optimum;
 * the bound may not exceed it, and on equal stages it meets it (sections
 * 1-6 alone stay 0.6-0.9 % below); on unequal ones it is within 0.5 %
 * (sections 1-6 without column means: 2.6 %). */
Test(bound, memory_turn_meets_the_proven_optimum_in_v_at_1f1b_memory)
{
    static const struct shape cases[] = {
        { 2, 2, 3, ZB_PLACEMENT_V, 0.5, 0.62, 0.24, 0.02, 1, 0.45, 4 },
        { 2, 2, 4, ZB_PLACEMENT_V, 0.5, 0.62, 0.24, 0.02, 1, 0.45, 4 },
        { 2, 2, 3, ZB_PLACEMENT_V, 0.5, 0.66, 0.32, 0.05, 1, 0.6, 4 },
    };
    /* Unequal stages (grid instance 61 of bench_quality scaled to p 2,
     * m 3, M_W 0.45): the column means of sections 1 and 7 matter. */
    static const struct zb_stage_times uneven[] = {
        { 0.515, 0.638, 0.241 }, { 0.483, 0.621, 0.282 },
        { 0.544, 0.610, 0.271 }, { 0.475, 0.595, 0.278 },
    };
    const size_t n = sizeof(cases) / sizeof(cases[0]);

    for (size_t c = 0; c <= n; c++) {
        struct zb_profile p;
        double lb, opt;
        make_profile(&cases[c < n ? c : 0], &p);
        for (int st = 0; c == n && st < 4; st++)
            p.stage[st] = uneven[st];
        lb = zb_bound_cost(&p);
        opt = proven_optimum(&p, 60);
        cr_assert_leq(lb, opt * (1 + 1e-9),
                      "case %zu: bound %g above the optimum %g", c, lb, opt);
        cr_assert_geq(lb, opt * (c < n ? 1 - 1e-9 : 0.995),
                      "case %zu: bound %g below the optimum %g", c, lb, opt);
        zb_profile_release(&p);
    }
}

/* The memory turn's B and W work, at most m - 1 of each per stage
 * before the last F (bound.c, section 7): V at 1F1B's memory, p 2, m 4,
 * where the middle rank frees memory with more B's than one chunk has
 * before its last F, so some must be of its dearer stage. Random-profile
 * cases on which the caps lift the bound to at least 12.96 and 13.88
 * (without them 12.61 and 13.68); the ILP, proving without the
 * closed-form bound, finds the optimum above it (13.22 and 14.09). */
Test(bound, memory_turn_caps_each_stage_before_the_last_f)
{
    static const struct shape cases[] = {
        { 2, 2, 4, ZB_PLACEMENT_V, 1, 1, 1, 0.05, 1, 0.45, 4 },
        { 2, 2, 4, ZB_PLACEMENT_V, 1, 1, 1, 0.05, 1, 0.35, 4 },
    };
    static const struct zb_stage_times times[2][4] = {
        { { 0.59, 0.77, 0.39 }, { 0.7, 0.72, 0.33 },
          { 0.69, 0.44, 0.23 }, { 0.52, 0.32, 0.37 } },
        { { 0.45, 0.76, 0.35 }, { 0.66, 0.86, 0.4 },
          { 0.59, 0.65, 0.26 }, { 0.53, 0.73, 0.44 } },
    };
    static const double lifted[2] = { 12.96, 13.88 };

    for (int c = 0; c < 2; c++) {
        struct zb_profile p;
        double lb, opt;
        make_uneven(&cases[c], times[c], &p);
        lb = zb_bound_cost(&p);
        cr_assert_geq(lb, lifted[c] - 1e-9, "case %d: bound %g", c, lb);
        opt = proven_optimum(&p, 120);
        cr_assert_leq(lb, opt * (1 + 1e-9),
                      "case %d: bound %g above the optimum %g", c, lb, opt);
        zb_profile_release(&p);
    }
}

/* Paced returns (bound.c, section 9): loop, p 3, m 3, a limit of two
 * microbatches, one rank slower than the others. Rank 0's F's wait for
 * memory, so for its B's, which come back no faster than the slow rank
 * works through its own F's and B's; sections 1-8 price those returns
 * as pure round trips (9.4 and 10.08). With the pace the bound meets
 * the best of every order. */
Test(bound, paced_returns_meet_the_best_order)
{
    static const struct shape cases[] = {
        { 3, 1, 3, ZB_PLACEMENT_LOOP, 1, 1, 1, 0, 1, 0.5, 2 },
        { 3, 1, 3, ZB_PLACEMENT_LOOP, 1, 1, 1, 0.05, 1, 0.2, 2 },
    };
    static const struct zb_stage_times times[2][3] = {
        { { 0.6, 0.45, 0.9 }, { 0.6, 1.1, 0.4 }, { 0.5, 0.7, 0.6 } },
        { { 0.68, 0.51, 1.02 }, { 0.5, 0.7, 0.6 }, { 1, 0.6, 0.2 } },
    };
    static const double best[2] = { 9.7, 10.42 };

    for (int c = 0; c < 2; c++) {
        struct zb_profile p;
        double lb, opt;
        make_uneven(&cases[c], times[c], &p);
        lb = zb_bound_cost(&p);
        opt = best_cost(&p, 3);
        cr_assert_float_eq(opt, best[c], 1e-9, "case %d: best order %g", c,
                           opt);
        cr_assert_float_eq(lb, opt, 1e-9, "case %d: bound %g, best order %g",
                           c, lb, opt);
        zb_profile_release(&p);
    }
}
