/* test_improve.c - the local search on compute orders
 * (schedules/search/improve.c): never worse, legal and within limits,
 * reproducible, and it does improve poor or heuristic starts. Efforts
 * are small: each test takes a second or two at most on an idle machine
 * (the `zb` ones run it whole). */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "plan/plan.h"
#include "search/search.h"
#include "search/improve_eval.h"
#include "helpers.h"
#include "zbsched/generator.h"

/* The compute order of a named generator, timed; `zb` without its own
 * local search (effort < 0), so that there is something left to find. */
static void start_from(const char *name, const struct zb_profile *p,
                       struct zb_schedule *s)
{
    struct zb_options o;
    struct zb_error err = { 0 };

    zb_options_init(&o);
    o.effort = -1;
    cr_assert_eq(zb_generator_run(zb_generator_find(name), p, &o, s, &err),
                 0, "%s: %s", name, err.msg);
    zb_schedule_strip_comm(s);
    cr_assert_eq(zb_sim_run(s, NULL), 0);
}

static void improve(const struct zb_profile *p, struct zb_schedule *s,
                    double effort, unsigned seed, int threads)
{
    struct improve_opts o = { .effort = effort, .seed = seed,
                              .threads = threads };
    struct zb_error err = { 0 };
    cr_assert_eq(zbi_improve_order(p, s, &o, NULL, &err), 0, "%s", err.msg);
}

/* Legal by every rule (lowered and validated, memory included), and the
 * predicted measures are the simulator's own. */
static void assert_legal(const struct zb_schedule *s)
{
    struct zb_schedule t;
    struct zb_error err = { 0 };

    cr_assert(s->predicted.fits_memory);
    zb_schedule_init(&t, "t", &s->profile);
    zb_schedule_copy_order(&t, s);
    cr_assert_eq(zb_sim_run(&t, &err), 0, "%s", err.msg);
    assert_near(t.predicted.cost, s->predicted.cost, "cost as simulated");
    cr_assert_eq(zb_lower_run(&t, &err), 0, "%s", err.msg);
    cr_assert_eq(zb_validate_schedule(&t, &err), 0, "%s", err.msg);
    zb_schedule_release(&t);
}

static bool same_order(const struct zb_schedule *a,
                       const struct zb_schedule *b)
{
    for (int r = 0; r < a->profile.pp; r++) {
        if (a->ranks[r].n != b->ranks[r].n)
            return false;
        for (int i = 0; i < a->ranks[r].n; i++) {
            const struct zb_op *x = &a->ranks[r].ops[i];
            const struct zb_op *y = &b->ranks[r].ops[i];
            if (x->kind != y->kind || x->stage != y->stage || x->mb != y->mb)
                return false;
        }
    }
    return true;
}

static void paper_profile(struct zb_profile *p, int pp, int mb)
{
    struct shape sh = unit_shape(pp, mb);
    sh.f = 29718, sh.b = 29444, sh.w = 19927, sh.comm = 527;
    sh.m_w = 0.4324;
    sh.limit = 2.0 * pp;
    make_profile(&sh, p);
}

Test(improve, never_returns_a_worse_order_and_stays_legal_on_random_profiles)
{
    static const struct random_ranges rr = { 2, 5, 2, 3, 2, 2.0, true };
    unsigned seed = 11;
    int improved = 0;

    for (int i = 0; i < 12; i++) {
        struct zb_profile p;
        struct zb_schedule s;
        double cost, makespan;
        random_profile(&seed, &rr, &p);
        start_from("zb", &p, &s);
        cost = s.predicted.cost;
        makespan = s.predicted.makespan;
        improve(&p, &s, 0.01, (unsigned)i, 1 + i % 2);
        cr_assert(s.predicted.cost < cost ||
                  (s.predicted.cost == cost &&
                   s.predicted.makespan <= makespan),
                  "profile %d: cost %g -> %g", i, cost, s.predicted.cost);
        improved += s.predicted.cost < cost;
        assert_legal(&s);
        zb_schedule_release(&s);
        zb_profile_release(&p);
    }
    cr_assert_gt(improved, 0, "no random profile improved at all");
}

Test(improve, same_seed_and_effort_give_the_identical_order)
{
    struct zb_profile p;
    struct zb_schedule a, b, c;

    /* From ZB-H1's order, which 2p memory leaves room to improve (zb's
     * unsearched choice can already meet the bound here, and then every
     * seed gives one order). */
    paper_profile(&p, 6, 18);
    start_from("zb-h1", &p, &a);
    start_from("zb-h1", &p, &b);
    start_from("zb-h1", &p, &c);
    improve(&p, &a, 0.03, 7, 2);
    improve(&p, &b, 0.03, 7, 2);
    improve(&p, &c, 0.03, 8, 2);
    cr_assert(same_order(&a, &b));
    assert_near(a.predicted.cost, b.predicted.cost, "same cost");
    /* and the seed matters (else the first assert proves little) */
    cr_assert(!same_order(&a, &c), "seeds 7 and 8 gave one order");
    zb_schedule_release(&a);
    zb_schedule_release(&b);
    zb_schedule_release(&c);
    zb_profile_release(&p);
}

/* The threads only decide whether the two chains run side by side. */
Test(improve, threads_do_not_change_the_order)
{
    struct zb_profile p;
    struct zb_schedule a, b;

    paper_profile(&p, 6, 18);
    start_from("zb-h1", &p, &a);    /* room to improve, as above */
    start_from("zb-h1", &p, &b);
    improve(&p, &a, 0.03, 3, 1);
    improve(&p, &b, 0.03, 3, 2);
    cr_assert(same_order(&a, &b), "one thread and two gave different orders");
    zb_schedule_release(&a);
    zb_schedule_release(&b);
    zb_profile_release(&p);
}

/* ZB-H1's order costs 3m + p - 1 at unit times; with 2p memory the same
 * passes can reach 3m (zb-h2 does). */
Test(improve, brings_a_zb_h1_order_at_2p_memory_to_3m)
{
    struct shape sh = unit_shape(4, 8);
    struct zb_profile p;
    struct zb_schedule s;

    sh.limit = 8;
    make_profile(&sh, &p);
    start_from("zb-h1", &p, &s);
    assert_near(s.predicted.cost, 27.0, "zb-h1 start");
    improve(&p, &s, 0.05, 1, 2);
    cr_assert_leq(s.predicted.cost, 24.0 + 1e-9, "reached %g",
                  s.predicted.cost);
    assert_legal(&s);
    zb_schedule_release(&s);
    zb_profile_release(&p);
}

/* The Zero Bubble paper's 6.2B profile (p 8 m 24 at 2p): ZB-H2's order,
 * made for equal times, leaves a 7 % bubble; a short search should cut it
 * at least in half. */
Test(improve, halves_the_bubble_of_zb_h2_on_unequal_times)
{
    struct zb_profile p;
    struct zb_schedule s;
    double before;

    paper_profile(&p, 8, 24);
    start_from("zb-h2", &p, &s);
    before = s.predicted.bubble_ratio;
    cr_assert_gt(before, 0.05);
    improve(&p, &s, 0.1, 1, 2);
    cr_assert_lt(s.predicted.bubble_ratio, before / 2, "%g -> %g", before,
                 s.predicted.bubble_ratio);
    assert_legal(&s);
    zb_schedule_release(&s);
    zb_profile_release(&p);
}

Test(improve, keeps_v_placement_legal_and_never_worse)
{
    struct shape sh = unit_shape(4, 12);
    struct zb_profile p;
    struct zb_schedule s;
    double before;

    sh.vpp = 2;
    sh.placement = ZB_PLACEMENT_V;
    sh.f = 0.5, sh.b = 0.6, sh.w = 0.3, sh.comm = 0.05;
    sh.m_b = 0.5, sh.m_w = 0.2;
    sh.limit = 4 * 1.5;
    make_profile(&sh, &p);
    start_from("zb", &p, &s);
    before = s.predicted.cost;
    improve(&p, &s, 0.03, 5, 2);
    cr_assert_leq(s.predicted.cost, before);
    assert_legal(&s);
    zb_schedule_release(&s);
    zb_profile_release(&p);
}

Test(improve, rejects_bad_options_and_an_order_over_the_limit)
{
    struct shape sh = unit_shape(4, 8);
    struct zb_profile p;
    struct zb_schedule s;
    struct improve_opts o = { .effort = 0.01, .seed = 1, .threads = 3 };
    struct zb_error err = { 0 };

    make_profile(&sh, &p);
    start_from("1f1b", &p, &s);
    cr_assert_eq(zbi_improve_order(&p, &s, &o, NULL, &err), ZB_EINVAL);
    o.threads = 1;
    for (int r = 0; r < 4; r++)
        p.mem_limit[r] = 2;    /* 1F1B needs p = 4 on rank 0 */
    cr_assert_eq(zbi_improve_order(&p, &s, &o, NULL, &err), ZB_ENOMEM_LIMIT);
    zb_schedule_release(&s);
    zb_profile_release(&p);
}

Test(improve, zero_effort_returns_the_input_order_timed)
{
    struct shape sh = unit_shape(4, 8);
    struct zb_profile p;
    struct zb_schedule s, t;
    struct improve_opts o = { .effort = 0, .seed = 1, .threads = 2 };
    struct improve_stats st;

    make_profile(&sh, &p);
    start_from("zb-h1", &p, &s);
    start_from("zb-h1", &p, &t);
    cr_assert_eq(zbi_improve_order(&p, &s, &o, &st, NULL), 0);
    cr_assert(same_order(&s, &t));
    cr_assert_eq(st.evals, 0);
    cr_assert_eq(st.skipped, 0);
    cr_assert_eq(st.chain, -1);
    assert_near(s.predicted.cost, t.predicted.cost, "timed");
    zb_schedule_release(&s);
    zb_schedule_release(&t);
    zb_profile_release(&p);
}

/* Ctrl-C: a budget of a day stops at once with the input order, timed. */
Test(improve, an_interrupt_stops_the_search_at_once, .timeout = 60)
{
    struct shape sh = unit_shape(4, 8);
    struct zb_profile p;
    struct zb_schedule s, t;
    volatile sig_atomic_t stop = 1;
    struct improve_opts o = { .effort = 86400, .seed = 1, .threads = 2,
                              .interrupt = &stop };
    struct improve_stats st;

    make_profile(&sh, &p);
    start_from("1f1b", &p, &s);
    start_from("1f1b", &p, &t);
    cr_assert_eq(zbi_improve_order(&p, &s, &o, &st, NULL), 0);
    cr_assert(same_order(&s, &t));
    cr_assert_eq(st.evals, 0);
    assert_legal(&s);
    zb_schedule_release(&s);
    zb_schedule_release(&t);
    zb_profile_release(&p);
}

/* Fused BW passes move as one op (1F1B's order is all F and BW). */
Test(improve, moves_fused_bw_passes_and_keeps_them_legal)
{
    struct shape sh = unit_shape(4, 8);
    struct zb_profile p;
    struct zb_schedule s;
    double before;

    sh.comm = 0.1;
    make_profile(&sh, &p);
    p.stage[3].b = 1.5;
    start_from("1f1b", &p, &s);
    before = s.predicted.cost;
    improve(&p, &s, 0.02, 2, 1);
    cr_assert_leq(s.predicted.cost, before);
    assert_legal(&s);
    zb_schedule_release(&s);
    zb_profile_release(&p);
}

/* The first annealing run of a larger effort is the default's whole
 * search, and the rest restart from its best: more effort never ends
 * worse (the fix for the cooling that stretched with the budget). */
Test(improve, more_effort_than_the_default_is_never_worse)
{
    struct zb_profile p;
    struct zb_schedule a, b;
    double e;

    paper_profile(&p, 4, 10);
    e = zbi_improve_default_effort(&p);
    start_from("zb-h1", &p, &a);
    start_from("zb-h1", &p, &b);
    improve(&p, &a, e, 5, 1);
    improve(&p, &b, 2.5 * e, 5, 1);
    cr_assert(b.predicted.cost < a.predicted.cost ||
              (b.predicted.cost == a.predicted.cost &&
               b.predicted.makespan <= a.predicted.makespan),
              "cost %g at %g s, %g at %g s", a.predicted.cost, e,
              b.predicted.cost, 2.5 * e);
    assert_legal(&b);
    zb_schedule_release(&a);
    zb_schedule_release(&b);
    zb_profile_release(&p);
}

/* A compound move over several ranks, re-timed incrementally, gives the
 * times of a full re-timing; undone, it gives back the old times. */
Test(improve, compound_moves_retime_like_a_full_pass_and_undo_exactly)
{
    struct zb_profile p;
    struct zb_schedule s;
    struct improve_state st;
    struct zb_error err = { 0 };
    int tried = 0;

    paper_profile(&p, 6, 12);
    start_from("zb-h1", &p, &s);
    cr_assert_eq(zbi_improve_state_init(&st, &p, &s, &err), 0, "%s", err.msg);
    for (int k = 3; k + 1 < st.len[0] && tried < 20; k++) {
        struct improve_move mv[3];
        size_t size = sizeof(double) * (size_t)st.nops;
        double cost = st.cost, *t = malloc(size), *t0 = malloc(size);
        int n = 0;
        for (int r = 0; r < 3; r++)
            if (zbi_improve_check(&st, r, k, k + 1))
                mv[n++] = (struct improve_move){ r, k, k + 1 };
        memcpy(t0, st.start, size);
        if (n >= 2 && zbi_improve_try_n(&st, n, mv) == 0) {
            tried++;
            memcpy(t, st.start, size);
            zbi_improve_undo(&st);
            cr_assert_eq(st.cost, cost);
            cr_assert_eq(memcmp(t0, st.start, size), 0, "undo at %d", k);
            cr_assert_eq(zbi_improve_try_n(&st, n, mv), 0);
            zbi_improve_commit(&st);
            zbi_improve_retime(&st);
            cr_assert_eq(memcmp(t, st.start, size), 0, "times at %d", k);
        }
        free(t);
        free(t0);
    }
    cr_assert_gt(tried, 0);
    zbi_improve_state_release(&st);
    zb_schedule_release(&s);
    zb_profile_release(&p);
}

/* Tails (improve_estimate.c): no path from an op's end exceeds the
 * cost, end + tail <= cost, and the critical path meets it. */
Test(improve, tails_bound_every_op_and_the_critical_path_meets_the_cost)
{
    struct zb_profile p;
    struct zb_schedule s;
    struct improve_state st;
    struct zb_error err = { 0 };
    double most = -INFINITY;
    int k = 0;

    paper_profile(&p, 6, 12);
    start_from("zb-h1", &p, &s);
    cr_assert_eq(zbi_improve_state_init(&st, &p, &s, &err), 0, "%s", err.msg);
    while (k + 1 < st.len[0] && !zbi_improve_check(&st, 0, k, k + 1))
        k++;
    cr_assert_lt(k + 1, st.len[0]);
    zbi_improve_estimate(&st, 1, &(struct improve_move){ 0, k, k + 1 });
    cr_assert(st.tails_valid);
    for (int id = 0; id < st.nops; id++) {
        cr_assert_leq(st.end[id] + st.tail[id], st.cost * (1 + 1e-12),
                      "op %d", id);
        most = fmax(most, st.end[id] + st.tail[id]);
    }
    cr_assert(fabs(most - st.cost) <= 1e-12 * st.cost);
    zbi_improve_state_release(&st);
    zb_schedule_release(&s);
    zb_profile_release(&p);
}

/* The search judges one-rank moves on their estimate first, and rejects
 * most of those it rejects there: a search from ZB-H1 on unequal times
 * skips re-timing moves, and still never ends worse and stays legal. */
Test(improve, most_rejected_moves_are_never_re_timed)
{
    struct zb_profile p;
    struct zb_schedule s;
    struct improve_opts o = { .effort = 0.02, .seed = 3, .threads = 2 };
    struct improve_stats st;
    double before;

    paper_profile(&p, 6, 12);
    start_from("zb-h1", &p, &s);
    before = s.predicted.cost;
    cr_assert_eq(zbi_improve_order(&p, &s, &o, &st, NULL), 0);
    cr_assert_gt(st.skipped, st.evals - st.accepted, "skipped %ld, "
                 "re-timed and rejected %ld", st.skipped,
                 st.evals - st.accepted);
    cr_assert_leq(s.predicted.cost, before);
    assert_legal(&s);
    zb_schedule_release(&s);
    zb_profile_release(&p);
}

/* The first of rank r's trailing W passes. */
static int trailing_ws(const struct improve_state *st, int r)
{
    int first = st->len[r];

    while (first > 0 && st->op[st->order[r][first - 1]].cls == 2)
        first--;
    return first;
}

/* A move among a rank's trailing W passes changes no other op's time or
 * tail (a W feeds nothing), so the estimate is exact there: the rank's
 * new span, the longest path through the window; and for such moves on
 * two ranks at once (as a column move makes them), the larger of the
 * two spans. V placement, where a rank's W's of two chunks may trade
 * places. */
Test(improve, the_estimate_is_exact_where_the_windows_feed_nothing)
{
    struct shape sh = unit_shape(4, 8);
    struct zb_profile p;
    struct zb_schedule s;
    struct improve_state st;
    struct zb_error err = { 0 };
    int tried = 0, pairs = 0;

    sh.vpp = 2;
    sh.placement = ZB_PLACEMENT_V;
    sh.f = 0.5, sh.b = 0.6, sh.w = 0.3, sh.comm = 0.05;
    make_profile(&sh, &p);
    for (int s0 = 0; s0 < 8; s0++)     /* uneven, so no ties hide a slip */
        p.stage[s0].w *= 1 + 0.1 * s0;
    start_from("zb-v", &p, &s);
    cr_assert_eq(zbi_improve_state_init(&st, &p, &s, &err), 0, "%s", err.msg);
    for (int r = 0; r < st.pp; r++)
        for (int a = trailing_ws(&st, r); a < st.len[r]; a++)
            for (int b = trailing_ws(&st, r); b < st.len[r]; b++) {
                struct improve_move mv[2] = { { r, a, b } };
                double est;
                if (!zbi_improve_check(&st, r, a, b))
                    continue;
                est = zbi_improve_estimate(&st, 1, mv);
                cr_assert_eq(zbi_improve_try(&st, r, a, b), 0);
                cr_assert(fabs(est - st.span[r]) <= 1e-9 * st.span[r],
                          "rank %d %d -> %d: %g against %g", r, a, b, est,
                          st.span[r]);
                zbi_improve_undo(&st);
                tried++;
                /* With the next rank's first two trailing W's
                 * swapped. */
                if (r + 1 == st.pp)
                    continue;
                mv[1].rank = r + 1;
                mv[1].from = trailing_ws(&st, r + 1);
                mv[1].to = mv[1].from + 1;
                if (!zbi_improve_check(&st, r, a, b) ||
                    !zbi_improve_check(&st, r + 1, mv[1].from, mv[1].to))
                    continue;
                est = zbi_improve_estimate(&st, 2, mv);
                cr_assert_eq(zbi_improve_try_n(&st, 2, mv), 0);
                cr_assert(fabs(est - fmax(st.span[r], st.span[r + 1])) <=
                              1e-9 * est, "ranks %d and %d: %g against "
                          "%g, %g", r, r + 1, est, st.span[r],
                          st.span[r + 1]);
                zbi_improve_undo(&st);
                pairs++;
            }
    cr_assert_gt(tried, 0);
    cr_assert_gt(pairs, 0);
    zbi_improve_state_release(&st);
    zb_schedule_release(&s);
    zb_profile_release(&p);
}

/* `zb` searches its best candidate for at least the default budget (the
 * runner-up's half goes to the best when the runner-up starts too far
 * above it, zb.c), so it never ends worse than that search alone, but
 * for a best candidate close to the bound (plan.h), which is not
 * searched: it is within PLAN_CLOSE_GAP of any search's result. Loop
 * profiles at 1F1B's memory with unequal stages; in one of these four
 * the runner-up starts too far behind to be searched, in the others the
 * two searches run. */
Test(improve, zb_is_never_worse_than_searching_its_best_candidate)
{
    unsigned seed = 7;

    for (int iter = 0; iter < 4; iter++) {
        struct shape sh = unit_shape(4 + iter, 3 * (4 + iter));
        struct zb_profile p;
        struct zb_options o;
        struct plan_candidates c;
        struct plan_pick b;
        struct zb_schedule s, z;
        struct zb_error err = { 0 };

        sh.comm = 0.1, sh.m_w = 0.45, sh.limit = sh.pp;
        make_profile(&sh, &p);
        for (int k = 0; k < sh.pp; k++)
            p.stage[k] = (struct zb_stage_times){ uniform(&seed, 0.9, 1.1),
                                                  uniform(&seed, 1.0, 1.3),
                                                  uniform(&seed, 0.5, 0.9) };
        zb_options_init(&o);
        zbi_plan_collect(&p, &o, &c);
        zbi_pick_init(&b);
        for (int i = 0; i < c.n; i++)
            zbi_pick_consider(&b, &c.s[i]);
        cr_assert_eq(zbi_pick_result(&b, &p, &err), 0, "%s", err.msg);
        zb_schedule_init(&s, "best", &p);
        zb_schedule_copy_order(&s, b.sched);
        improve(&p, &s, zbi_improve_default_effort(&p), (unsigned)o.seed, 1);
        cr_assert_eq(zb_generator_run(zb_generator_find("zb"), &p, &o, &z,
                                      &err), 0, "%s", err.msg);
        cr_assert_leq(z.predicted.cost,
                      s.predicted.cost * (1 + (zbi_pick_close(b.sched)
                                                   ? PLAN_CLOSE_GAP
                                                   : 1e-9)),
                      "iter %d: zb %g, its best candidate searched %g",
                      iter, z.predicted.cost, s.predicted.cost);
        zb_schedule_release(&s);
        zb_schedule_release(&z);
        zbi_plan_release(&c);
        zb_profile_release(&p);
    }
}

/* Every search of `zb` (the best candidate's, the runner-up's half, the
 * warm-up-depth order's) first runs what the default effort would run
 * for it (improve_opts.base_effort), then restarts: `zb` at a larger
 * effort never ends worse than at the default. V and loop at 1F1B's
 * memory with unequal stages, where the runner-up's search runs too; on
 * the third (V, p 6, m 12) a runner-up search that began with a whole
 * default cycle instead of its default half ended at 73.9446 against the
 * default's 73.8624. */
Test(improve, zb_at_a_larger_effort_is_never_worse_than_at_the_default)
{
    unsigned seed = 11;

    for (int iter = 0; iter < 3; iter++) {
        struct shape sh = unit_shape(4 + iter, 10 + iter);
        struct zb_profile p;
        struct zb_options o;
        struct zb_schedule a, b;
        struct zb_error err = { 0 };

        if (iter % 2 == 0)
            sh.placement = ZB_PLACEMENT_V, sh.vpp = 2;
        sh.comm = 0.05, sh.m_w = 0.45, sh.limit = sh.pp * sh.vpp;
        make_profile(&sh, &p);
        for (int k = 0; k < sh.pp * sh.vpp; k++)
            p.stage[k] = (struct zb_stage_times){ uniform(&seed, 0.9, 1.1),
                                                  uniform(&seed, 1.0, 1.3),
                                                  uniform(&seed, 0.4, 0.9) };
        zb_options_init(&o);
        cr_assert_eq(zb_generator_run(zb_generator_find("zb"), &p, &o, &a,
                                      &err), 0, "%s", err.msg);
        o.effort = 2.5 * zbi_improve_default_effort(&p);
        cr_assert_eq(zb_generator_run(zb_generator_find("zb"), &p, &o, &b,
                                      &err), 0, "%s", err.msg);
        cr_assert(b.predicted.cost < a.predicted.cost ||
                  (b.predicted.cost == a.predicted.cost &&
                   b.predicted.makespan <= a.predicted.makespan),
                  "iter %d: zb %.17g at the default, %.17g at %g s", iter,
                  a.predicted.cost, b.predicted.cost, o.effort);
        zb_schedule_release(&a);
        zb_schedule_release(&b);
        zb_profile_release(&p);
    }
}
