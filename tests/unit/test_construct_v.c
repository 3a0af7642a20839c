/* test_construct_v.c - the ZB-V construction (schedules/build/construct_v.c),
 * under the paper's rules and with full ranks making room with a B:
 * legal, within every limit, zero bubble at unit times, and the `zb-v`
 * family built on it. */
#include <string.h>
#include "helpers.h"
#include "zbsched/bound.h"
#include "build/build.h"
#include "build/construct_v_run.h"
#include "quality_cases.h"

static struct shape v_shape(int pp, int mb, double limit)
{
    struct shape sh = unit_shape(pp, mb);
    sh.vpp = 2;
    sh.placement = ZB_PLACEMENT_V;
    sh.limit = limit;
    return sh;
}

static double max_peak(const struct zb_schedule *s)
{
    double peak = 0;
    for (int r = 0; r < s->profile.pp; r++)
        peak = fmax(peak, s->predicted.ranks[r].peak_memory);
    return peak;
}

static const enum construct_v_rules both_rules[] = { CONSTRUCT_V_PAPER,
                                                     CONSTRUCT_V_B_ROOM };

/* Construct under `rules`, simulate, lower and validate (memory limits
 * included); s holds the lowered schedule with its measures. */
static void construct_legal(const struct zb_profile *p,
                            enum construct_v_rules rules,
                            struct zb_schedule *s)
{
    struct zb_error err = { 0 };

    zb_schedule_init(s, "zbv", p);
    cr_assert_eq(zbi_construct_v(p, rules, s, &err), 0, "construct: %s",
                 err.msg);
    cr_assert_eq(zb_sim_run(s, &err), 0, "sim: %s", err.msg);
    cr_assert_eq(zb_lower_run(s, &err), 0, "lower: %s", err.msg);
    cr_assert_eq(zb_validate_schedule(s, &err), 0, "validate: %s (p %d m %d)",
                 err.msg, p->pp, p->microbatches);
    cr_assert(s->predicted.fits_memory, "over a limit (p %d m %d)", p->pp,
              p->microbatches);
}

/* p's constructed cost under `rules`, checked legal, and its peak
 * memory into *peak unless peak is NULL. */
static double rules_cost(const struct zb_profile *p,
                         enum construct_v_rules rules, double *peak)
{
    struct zb_schedule s;
    double cost;

    construct_legal(p, rules, &s);
    cost = s.predicted.cost;
    if (peak)
        *peak = max_peak(&s);
    zb_schedule_release(&s);
    return cost;
}

/* The paper's construction on the shape sh (rules_cost()). */
static double construct_cost(const struct shape *sh, double *peak)
{
    struct zb_profile p;
    double cost;

    make_profile(sh, &p);
    cost = rules_cost(&p, CONSTRUCT_V_PAPER, peak);
    zb_profile_release(&p);
    return cost;
}

static const int ps[] = { 2, 4, 8, 16 };

Test(construct_v, is_zero_bubble_at_unit_times_and_onef1b_memory)
{
    for (int i = 0; i < 4; i++)
        for (int k = 2; k <= 4; k += 2) {
            int p = ps[i], m = k * p;
            struct shape sh = v_shape(p, m, 2.0 * p);
            assert_near(construct_cost(&sh, NULL), 6.0 * m, "p %d m %d", p, m);
        }
}

Test(construct_v, keeps_peak_memory_within_onef1b_at_its_memory)
{
    for (int i = 0; i < 4; i++)
        for (int k = 1; k <= 4; k *= 2) {
            int p = ps[i], m = k * p;
            struct shape sh = v_shape(p, m, 2.0 * p);
            double peak;
            sh.m_w = 0.5;
            construct_cost(&sh, &peak);
            cr_assert_leq(peak, 2.0 * p + 1e-9, "p %d m %d: peak %g", p, m,
                          peak);
        }
}

Test(construct_v, uses_twice_onef1b_memory_at_most_when_unlimited)
{
    struct shape sh = v_shape(8, 64, INFINITY);
    double peak;

    sh.comm = 0.1;
    sh.b = 1.3;
    construct_cost(&sh, &peak);
    cr_assert_leq(peak, 4.0 * 8 + 1e-9, "peak %g", peak);
    cr_assert_gt(peak, 2.0 * 8, "peak %g: the extra memory went unused",
                 peak);
}

/* From one microbatch's two chunks (the least the construction needs) up
 * to twice 1F1B's memory: always legal, and more memory never costs more
 * than the least. */
Test(construct_v, serves_every_limit_from_two_activations_up)
{
    for (int i = 0; i < 4; i++) {
        int p = ps[i], m = 3 * p;
        double least = 0;
        for (double lim = 2; lim <= 4.0 * p; lim += p > 4 ? 3 : 1) {
            struct shape sh = v_shape(p, m, lim);
            double peak, cost;
            sh.m_w = 0.4;
            sh.comm = 0.05;
            cost = construct_cost(&sh, &peak);
            cr_assert_leq(peak, lim * (1 + 1e-9), "p %d limit %g", p, lim);
            if (lim == 2)
                least = cost;
            cr_assert_leq(cost, least + 1e-9, "p %d limit %g: %g > %g", p,
                          lim, cost, least);
        }
    }
}

Test(construct_v, rejects_limits_below_two_activations_by_name)
{
    struct shape sh = v_shape(4, 8, 8);
    struct zb_profile p;
    struct zb_schedule s;
    struct zb_error err = { 0 };

    make_profile(&sh, &p);
    p.mem_limit[2] = 1.5;
    zb_schedule_init(&s, "zbv", &p);
    cr_assert_eq(zbi_construct_v(&p, CONSTRUCT_V_PAPER, &s, &err),
                 ZB_ENOMEM_LIMIT);
    cr_assert(strstr(err.msg, "rank 2") != NULL, "message: %s", err.msg);
    zb_schedule_release(&s);
    zb_profile_release(&p);
}

Test(construct_v, rejects_loop_placement_and_other_chunk_counts)
{
    struct shape shapes[2] = { unit_shape(4, 8), v_shape(4, 8, 8) };
    struct zb_error err = { 0 };

    shapes[0].vpp = 2;
    for (int i = 0; i < 2; i++) {
        struct zb_profile p;
        struct zb_schedule s;
        make_profile(&shapes[i], &p);
        if (i == 1)
            p.vpp = 1;      /* as if: V needs two chunks */
        zb_schedule_init(&s, "zbv", &p);
        cr_assert_eq(zbi_construct_v(&p, CONSTRUCT_V_PAPER, &s, &err),
                     ZB_EUNSUPPORTED, "case %d", i);
        zb_schedule_release(&s);
        zb_profile_release(&p);
    }
}

/* The builder times passes itself to compare candidates: its times must
 * be the simulator's. Random profiles in the ranges of the benchmarks
 * (per-stage times, comm, M_W, per-rank limits). */
static void random_v_profile(unsigned *seed, struct zb_profile *p)
{
    int pp = 2 + rand_r(seed) % 15;
    struct shape sh = v_shape(pp, pp + rand_r(seed) % (3 * pp + 1), 0);
    double b = uniform(seed, 0.85, 1.35), w = uniform(seed, 0.35, 1.0);

    sh.comm = uniform(seed, 0, 0.12);
    sh.m_w = uniform(seed, 0.3, 0.6);
    sh.limit = rand_r(seed) % 5 ? uniform(seed, 2.0, 4.0 * pp) : INFINITY;
    make_profile(&sh, p);
    for (int s = 0; s < 2 * pp; s++)
        p->stage[s] = (struct zb_stage_times){ uniform(seed, 0.8, 1.2),
                                               b * uniform(seed, 0.8, 1.2),
                                               w * uniform(seed, 0.8, 1.2) };
    for (int r = 0; r < pp; r++)
        if (rand_r(seed) % 4 == 0)
            p->mem_limit[r] = uniform(seed, 2.0, 4.0 * pp);
}

Test(construct_v, random_profiles_are_legal_and_above_the_bound)
{
    unsigned seed = 20240901;

    for (int i = 0; i < 40; i++) {
        struct zb_profile p;
        random_v_profile(&seed, &p);
        for (int k = 0; k < 2; k++) {
            struct zb_schedule s;
            construct_legal(&p, both_rules[k], &s);
            cr_assert_geq(s.predicted.cost, zb_bound_cost(&p) * (1 - 1e-9),
                          "case %d rules %d: cost %g below the bound %g", i,
                          k, s.predicted.cost, zb_bound_cost(&p));
            zb_schedule_release(&s);
        }
        zb_profile_release(&p);
    }
}

/* Skipping a chain that repeats one already run (construct_v.c, RULE_*)
 * changes nothing: on random profiles up to p 8, m 4p, where the
 * tuning's budget cannot bind (at most 3 sweeps x 9 moves x 8 ranks x
 * 12 runs = 2592 of the 5208 it allows there), the construction is the
 * one that runs every chain, pass for pass. */
Test(construct_v, skipping_repeated_chains_changes_nothing)
{
    unsigned seed = 11;
    int tested = 0;

    for (int i = 0; tested < 16; i++) {
        struct zb_profile p;
        struct zb_schedule a, b;
        struct zb_error err = { 0 };
        random_v_profile(&seed, &p);
        if (p.pp > 8) {
            zb_profile_release(&p);
            continue;
        }
        zb_schedule_init(&a, "zbv", &p);
        zb_schedule_init(&b, "zbv", &p);
        cr_assert_eq(zbi_construct_v(&p, both_rules[i % 2], &a, &err), 0,
                     "case %d: %s", i, err.msg);
        cr_assert_eq(zbi_construct_v_every_chain(&p, both_rules[i % 2], &b,
                                             &err), 0, "case %d: %s", i,
                     err.msg);
        for (int r = 0; r < p.pp; r++) {
            cr_assert_eq(a.ranks[r].n, b.ranks[r].n, "case %d rank %d", i,
                         r);
            for (int k = 0; k < a.ranks[r].n; k++) {
                const struct zb_op *x = &a.ranks[r].ops[k];
                const struct zb_op *y = &b.ranks[r].ops[k];
                cr_assert(x->kind == y->kind && x->stage == y->stage &&
                          x->mb == y->mb, "case %d rank %d op %d", i, r, k);
            }
        }
        zb_schedule_release(&a);
        zb_schedule_release(&b);
        zb_profile_release(&p);
        tested++;
    }
}

Test(construct_v, times_its_passes_as_the_simulator_does)
{
    unsigned seed = 7;

    for (int i = 0; i < 20; i++) {
        struct zb_profile p;
        struct zb_schedule s;
        struct zb_op_list *before;
        random_v_profile(&seed, &p);
        zb_schedule_init(&s, "zbv", &p);
        cr_assert_eq(zbi_construct_v(&p, both_rules[i % 2], &s, NULL), 0,
                     "case %d", i);
        before = calloc((size_t)p.pp, sizeof(*before));
        for (int r = 0; r < p.pp; r++) {
            before[r].n = s.ranks[r].n;
            before[r].ops = malloc((size_t)s.ranks[r].n *
                                   sizeof(struct zb_op));
            memcpy(before[r].ops, s.ranks[r].ops,
                   (size_t)s.ranks[r].n * sizeof(struct zb_op));
        }
        cr_assert_eq(zb_sim_run(&s, NULL), 0);
        for (int r = 0; r < p.pp; r++) {
            for (int k = 0; k < s.ranks[r].n; k++)
                assert_near(before[r].ops[k].start, s.ranks[r].ops[k].start,
                            "case %d rank %d op %d", i, r, k);
            free(before[r].ops);
        }
        free(before);
        zb_schedule_release(&s);
        zb_profile_release(&p);
    }
}

/* The simulated cost of one plain run of the construction (no variant
 * mixing, no refinement, no tuning) with every rank under `var` and the
 * room rule of `rules`; INFINITY if it stalls or does not fit. */
static double one_run_cost(const struct zb_profile *p,
                           enum construct_v_rules rules,
                           const struct variant *var)
{
    struct variant *each = calloc((size_t)p->pp, sizeof(*each));
    double *limit = malloc((size_t)p->pp * sizeof(*limit));
    double cost = INFINITY;
    struct zb_schedule s;
    struct vc v;

    for (int r = 0; r < p->pp; r++) {
        each[r] = *var;
        each[r].b_room = rules == CONSTRUCT_V_B_ROOM;
        limit[r] = isfinite(p->mem_limit[r]) ? p->mem_limit[r]
                                             : 2 * zb_profile_1f1b_peak(p);
    }
    zbi_vc_alloc(&v, p);
    zb_schedule_init(&s, "one-run", p);
    if (zbi_vc_run(&v, each, limit, NULL, &s) == 0 &&
        zb_sim_run(&s, NULL) == 0 && s.predicted.fits_memory)
        cost = s.predicted.cost;
    zb_schedule_release(&s);
    zbi_vc_release(&v);
    free(limit);
    free(each);
    return cost;
}

/* On 8 profiles drawn from u, built under `rules`: each construction is
 * legal and within its limits (rules_cost()), never below the bound, and
 * never above the paper's plain run (variant 0, the first chain the
 * construction runs and keeps unless something beats it), and the other
 * variants and the tuning beat that run on at least one profile. */
static void assert_beats_the_plain_run(struct uneven u,
                                       enum construct_v_rules rules)
{
    static const struct variant plain = { 0 };
    int gained = 0;

    for (int i = 0; i < UNEVEN_CASES; i++) {
        struct zb_profile p;
        double cost, bound, base;
        uneven_profile(&u, &p);
        cost = rules_cost(&p, rules, NULL);
        bound = zb_bound_cost(&p);
        base = one_run_cost(&p, rules, &plain);
        cr_assert_geq(cost, bound * (1 - 1e-9), "case %d: cost %g below "
                      "the bound %g", i, cost, bound);
        cr_assert_leq(cost, base * (1 + 1e-9), "case %d: cost %g above "
                      "the plain run's %g", i, cost, base);
        gained += cost < base * (1 - 1e-9);
        zb_profile_release(&p);
    }
    cr_assert_gt(gained, 0, "no profile beat the plain run");
}

/* At 1.5x 1F1B's memory with uneven stage times and a small W (the
 * quality grid's worst V instances are such), the paper's leg rule makes
 * a rank wait for the second leg's input while the first leg's is there;
 * the early leg and extra warm-up variants and tuning each rank's rules
 * (step 6) beat the paper's plain run (by how much on these profiles:
 * tools/check_quality.c). */
Test(construct_v, uneven_times_at_one_and_a_half_onef1b_memory)
{
    assert_beats_the_plain_run(uneven_at_one_and_a_half,
                               CONSTRUCT_V_PAPER);
}

/* At 1F1B's memory with uneven stage times the warm-up is as long as
 * memory allows and the rounds decide: ranks running their F before
 * their B in each round (step 6's f_first) keep the heavier ranks fed
 * (the mean gap to the bound on these profiles: tools/check_quality.c). */
Test(construct_v, uneven_times_at_onef1b_memory)
{
    assert_beats_the_plain_run(uneven_at_onef1b, CONSTRUCT_V_PAPER);
}

/* At p 32, m 1040 (199 680 passes) the variants run on a copy with 520
 * microbatches and the two cheapest there run on the profile itself
 * (construct_v.c, build()): on these uneven profiles (1F1B's memory
 * under the paper's rules, 1.5x with a B making room) the order is legal,
 * within every limit and never below the bound (that it costs no more
 * than every variant run on the whole profile: tools/check_quality.c). */
Test(construct_v, long_runs_choose_variants_on_a_shorter_copy)
{
    unsigned seed = 4848;

    for (int k = 0; k < 2; k++) {
        struct zb_profile p;
        long_v_profile(&seed, k, &p);
        double cost = rules_cost(&p, both_rules[k], NULL);
        cr_assert_geq(cost, zb_bound_cost(&p) * (1 - 1e-9), "case %d: cost "
                      "%g below the bound %g", k, cost, zb_bound_cost(&p));
        zb_profile_release(&p);
    }
}

/* The same profiles built with full ranks making room with a B
 * (build/build.h). Neither rule wins everywhere, which is why `zb`
 * searches both starts: on these 16 profiles (p 10-20) each rule builds
 * the lower cost on some. */
Test(construct_v, making_room_with_a_b_at_onef1b_memory)
{
    struct uneven u = uneven_at_onef1b;
    int room_lower = 0;

    for (int i = 0; i < 16; i++) {
        struct zb_profile p;
        double paper, room;
        uneven_profile(&u, &p);
        paper = rules_cost(&p, CONSTRUCT_V_PAPER, NULL);
        room = rules_cost(&p, CONSTRUCT_V_B_ROOM, NULL);
        room_lower += room < paper * (1 - 1e-9);
        zb_profile_release(&p);
    }
    cr_assert(room_lower > 0 && room_lower < 16, "room lower on %d of 16",
              room_lower);
}

/* ---- the zb-v family ----------------------------------------------- */

Test(construct_v, zb_v_is_zero_bubble_at_unit_times)
{
    struct shape sh = v_shape(8, 32, INFINITY);
    assert_near(gen_cost("zb-v", &sh), 192, "p 8 m 32");
}

/* zb-v keeps the better of the construction and the list scheduler it
 * used alone before, so it is never worse than the latter. */
Test(construct_v, zb_v_is_never_worse_than_the_list_scheduler)
{
    unsigned seed = 99;

    for (int i = 0; i < 15; i++) {
        struct zb_profile p, capped;
        struct zb_schedule s, list;
        random_v_profile(&seed, &p);
        zb_profile_copy(&capped, &p);
        for (int r = 0; r < p.pp; r++)
            capped.mem_limit[r] = 2.0 * p.pp * p.m_b;
        gen("zb-v", &p, &s);
        zb_schedule_init(&list, "list", &capped);
        cr_assert_eq(zbi_greedy_best(&capped, &list, NULL), 0);
        cr_assert_eq(zb_sim_run(&list, NULL), 0);
        cr_assert_leq(s.predicted.cost, list.predicted.cost * (1 + 1e-9),
                      "case %d: %g > %g", i, s.predicted.cost,
                      list.predicted.cost);
        cr_assert_leq(max_peak(&s), 2.0 * p.pp * p.m_b * (1 + 1e-9),
                      "case %d", i);
        zb_schedule_release(&s);
        zb_schedule_release(&list);
        zb_profile_release(&capped);
        zb_profile_release(&p);
    }
}
