/* test_construct.c - the Zero Bubble paper's constructive heuristic
 * (schedules/build/construct.c): the closed forms at unit times, the paper's
 * own numbers on its profiled settings, and legality, memory and the lower
 * bound on random heterogeneous profiles. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "helpers.h"
#include "zbsched/bound.h"
#include "build/build.h"
#include "quality_cases.h"

static const int ps[] = { 2, 4, 8, 16 };

/* The simulator gives s's order the times its ops carry. */
static void assert_simulator_agrees(struct zb_schedule *s, const char *what)
{
    const struct zb_profile *p = &s->profile;
    struct zb_error err = { 0 };
    double *t;
    long n = 0, k = 0;

    for (int r = 0; r < p->pp; r++)
        n += s->ranks[r].n;
    cr_assert_eq(n, 3L * p->pp * p->microbatches, "%s: %ld ops", what, n);
    t = malloc((size_t)n * 2 * sizeof(double));
    for (int r = 0; r < p->pp; r++)
        for (int i = 0; i < s->ranks[r].n; i++, k += 2) {
            t[k] = s->ranks[r].ops[i].start;
            t[k + 1] = s->ranks[r].ops[i].end;
        }
    cr_assert_eq(zb_sim_run(s, &err), 0, "%s: %s", what, err.msg);
    k = 0;
    for (int r = 0; r < p->pp; r++)
        for (int i = 0; i < s->ranks[r].n; i++, k += 2)
            cr_assert(fabs(t[k] - s->ranks[r].ops[i].start) <=
                          1e-9 * fmax(1, t[k]) &&
                      fabs(t[k + 1] - s->ranks[r].ops[i].end) <=
                          1e-9 * fmax(1, t[k + 1]),
                      "%s: rank %d op %d timed %g-%g, simulated %g-%g",
                      what, r, i, t[k], t[k + 1], s->ranks[r].ops[i].start,
                      s->ranks[r].ops[i].end);
    free(t);
}

/* Run zbi_construct_loop on p and take its output through the pipeline every
 * schedule passes (simulate, lower, validate with the memory limit).
 * Returns the cost; s keeps the lowered schedule. */
static double construct(const struct zb_profile *p, struct zb_schedule *s,
                        const char *what)
{
    struct zb_error err = { 0 };

    cr_assert_eq(zb_schedule_init(s, "zb", p), 0);
    cr_assert_eq(zbi_construct_loop(p, s, &err), 0, "%s: %s", what, err.msg);
    assert_simulator_agrees(s, what);
    cr_assert(s->predicted.fits_memory, "%s: over the memory limit", what);
    cr_assert_eq(zb_lower_run(s, &err), 0, "%s: %s", what, err.msg);
    cr_assert_eq(zb_validate_schedule(s, &err), 0, "%s: %s", what, err.msg);
    return s->predicted.cost;
}

static double construct_cost(const struct shape *sh, const char *what)
{
    struct zb_profile p;
    struct zb_schedule s;
    double cost;

    make_profile(sh, &p);
    cost = construct(&p, &s, what);
    zb_schedule_release(&s);
    zb_profile_release(&p);
    return cost;
}

Test(construct, reaches_zb_h1_cost_at_onef1b_memory)
{
    for (int i = 0; i < 4; i++)
        for (int k = 1; k <= 4; k *= 2) {
            int p = ps[i], m = k * p;
            struct shape sh = unit_shape(p, m);
            char what[64];
            sh.limit = p;
            snprintf(what, sizeof(what), "p %d m %d", p, m);
            assert_near(construct_cost(&sh, what), 3.0 * m + p - 1, "%s",
                        what);
            assert_near(gen_cost("zb-h1", &sh), 3.0 * m + p - 1, "%s", what);
        }
}

/* At twice 1F1B's memory the warm-up sized by the first B's return is
 * ZB-H2's, with no bubble once m >= 2p - 1 (for m = p the optimum is
 * 3m + p - 1, see test_generators.c). */
Test(construct, reaches_3m_at_twice_onef1b_memory)
{
    for (int i = 0; i < 4; i++) {
        int p = ps[i];
        int ms[] = { p, 2 * p - 1, 2 * p, 3 * p, 4 * p };
        for (int j = 0; j < 5; j++) {
            int m = ms[j];
            struct shape sh = unit_shape(p, m);
            double want = m >= 2 * p - 1 ? 3.0 * m : 3.0 * m + p - 1;
            char what[64];
            sh.limit = 2.0 * p;
            snprintf(what, sizeof(what), "p %d m %d", p, m);
            assert_near(construct_cost(&sh, what), want, "%s", what);
        }
    }
}

Test(construct, keeps_one_rank_busy_with_or_without_a_limit)
{
    struct shape sh = unit_shape(1, 5);

    sh.f = 2, sh.b = 3, sh.w = 0.5, sh.comm = 7;
    assert_near(construct_cost(&sh, "p 1"), 5 * 5.5, "one rank never idles");
    sh.limit = 1;
    assert_near(construct_cost(&sh, "p 1 limit 1"), 5 * 5.5,
                "one activation at a time");
}

/* Table 5 of the paper (Appendix D times, microseconds): its ZB-1p and
 * ZB-2p bubble rates, rounded to 4 places. */
struct paper_row {
    int p, m;
    double f, b, w, comm, m_w, zb1p, zb2p;
};

static const struct paper_row paper[] = {
    { 8, 24, 18522, 18086, 9337, 601, 0.3664, 0.1585, 0.0433 },
    { 8, 32, 18513, 18086, 9331, 626, 0.3664, 0.1242, 0.0039 },
    { 8, 64, 18546, 18097, 9321, 762, 0.3664, 0.0674, 0.0026 },
    { 8, 24, 29718, 29444, 19927, 527, 0.4324, 0.1323, 0.0029 },
    { 8, 32, 29802, 29428, 19530, 577, 0.4324, 0.1045, 0.0022 },
    { 8, 64, 29935, 29621, 19388, 535, 0.4324, 0.0554, 0.0010 },
    { 16, 48, 11347, 11248, 8132, 377, 0.4324, 0.1397, 0.0066 },
    { 16, 64, 11307, 11254, 8101, 379, 0.4324, 0.1088, 0.0054 },
    { 16, 128, 11325, 11308, 8109, 378, 0.4324, 0.0576, 0.0028 },
    { 32, 96, 10419, 10207, 7715, 408, 0.4324, 0.1421, 0.0038 },
    { 32, 128, 10408, 10204, 7703, 408, 0.4324, 0.1106, 0.0029 },
    { 32, 256, 10402, 10248, 7698, 460, 0.4324, 0.0594, 0.0018 },
};

Test(construct, matches_the_paper_on_its_profiled_settings)
{
    for (size_t i = 0; i < sizeof(paper) / sizeof(paper[0]); i++)
        for (int x = 1; x <= 2; x++) {
            const struct paper_row *r = &paper[i];
            struct shape sh = { r->p, 1, r->m, ZB_PLACEMENT_LOOP, r->f,
                                r->b, r->w, r->comm, 1, r->m_w,
                                x * (double)r->p };
            double want = x == 1 ? r->zb1p : r->zb2p;
            struct zb_profile p;
            struct zb_schedule s;
            char what[64];
            snprintf(what, sizeof(what), "p %d m %d %dp", r->p, r->m, x);
            make_profile(&sh, &p);
            construct(&p, &s, what);
            cr_assert_leq(s.predicted.bubble_ratio, want + 0.5e-4,
                          "%s: bubble %.5f, the paper's %.4f", what,
                          s.predicted.bubble_ratio, want);
            zb_schedule_release(&s);
            zb_profile_release(&p);
        }
}

/* Per-stage times, comm up to 0.3 F, M_W in (0, M_B], a common limit of
 * 1p..3p (or none) and some ranks with their own. */
static void random_loop_profile(unsigned *seed, struct zb_profile *p)
{
    struct shape sh = unit_shape(1 + rand_r(seed) % 16, 1);

    sh.mb = 1 + rand_r(seed) % (4 * sh.pp);
    sh.comm = rand_r(seed) % 3 ? uniform(seed, 0, 0.3) : 0;
    sh.m_w = rand_r(seed) % 3 ? uniform(seed, 0.05, 1) : 1;
    sh.limit = rand_r(seed) % 5 ? uniform(seed, 1, 3) * sh.pp : INFINITY;
    make_profile(&sh, p);
    for (int s = 0; s < sh.pp; s++)
        p->stage[s] = (struct zb_stage_times){ uniform(seed, 0.5, 2),
                                               uniform(seed, 0.5, 2.5),
                                               uniform(seed, 0.1, 1.5) };
    for (int r = 0; r < sh.pp; r++)
        if (rand_r(seed) % 4 == 0)
            p->mem_limit[r] = uniform(seed, 1, 3) * sh.pp;
}

Test(construct, is_legal_and_above_the_bound_on_random_profiles)
{
    unsigned seed = 4242;

    for (int iter = 0; iter < 120; iter++) {
        struct zb_profile p;
        struct zb_schedule s;
        char what[64];
        double cost;
        random_loop_profile(&seed, &p);
        snprintf(what, sizeof(what), "iter %d (p %d m %d)", iter, p.pp,
                 p.microbatches);
        cost = construct(&p, &s, what);
        cr_assert_geq(cost, zb_bound_cost(&p) * (1 - 1e-9),
                      "%s: cost %g below the bound %g", what, cost,
                      zb_bound_cost(&p));
        zb_schedule_release(&s);
        zb_profile_release(&p);
    }
}

/* Every variant, not only the winner, is timed as the simulator times it
 * (its gap decisions rely on that) and fits the limit by construction. */
Test(construct, times_every_variant_as_the_simulator_does)
{
    unsigned seed = 77;

    for (int iter = 0; iter < 40; iter++) {
        struct zb_profile p;
        random_loop_profile(&seed, &p);
        for (int v = 0; v < CONSTRUCT_VARIANTS; v++) {
            struct zb_schedule s;
            struct zb_error err = { 0 };
            char what[64];
            snprintf(what, sizeof(what), "iter %d variant %d", iter, v);
            zb_schedule_init(&s, "zb", &p);
            cr_assert_eq(zbi_construct_variant(&p, v, &s, &err), 0, "%s: %s",
                         what, err.msg);
            assert_simulator_agrees(&s, what);
            cr_assert(s.predicted.fits_memory, "%s: over the limit", what);
            zb_schedule_release(&s);
        }
        zb_profile_release(&p);
    }
}

/* The tightest limit that admits a schedule, one activation per rank,
 * forces F, B, W per microbatch on every rank: rank 0 then waits for each
 * microbatch's round trip, (2p + 1) m. */
Test(construct, fits_one_activation_per_rank)
{
    struct shape sh = unit_shape(4, 8);

    sh.limit = 1;
    sh.m_w = 0.5;
    assert_near(construct_cost(&sh, "limit 1"), 9.0 * 8, "p 4 m 8");
}

Test(construct, refuses_a_limit_below_one_activation)
{
    struct shape sh = unit_shape(4, 8);
    struct zb_profile p;
    struct zb_schedule s;
    struct zb_error err = { 0 };

    make_profile(&sh, &p);
    p.mem_limit[2] = 0.5;
    zb_schedule_init(&s, "zb", &p);
    cr_assert_eq(zbi_construct_loop(&p, &s, &err), ZB_ENOMEM_LIMIT);
    cr_assert(strstr(err.msg, "rank 2") != NULL, "message: %s", err.msg);
    zb_schedule_release(&s);
    zb_profile_release(&p);
}

Test(construct, refuses_v_placement_and_several_chunks)
{
    struct shape sh = unit_shape(4, 8);
    struct zb_profile p;
    struct zb_schedule s;
    struct zb_error err = { 0 };

    sh.vpp = 2;
    make_profile(&sh, &p);
    zb_schedule_init(&s, "zb", &p);
    cr_assert_eq(zbi_construct_loop(&p, &s, &err), ZB_EUNSUPPORTED);
    zb_schedule_release(&s);
    p.placement = ZB_PLACEMENT_V;
    zb_schedule_init(&s, "zb", &p);
    cr_assert_eq(zbi_construct_loop(&p, &s, &err), ZB_EUNSUPPORTED);
    cr_assert(strstr(err.msg, "loop") != NULL, "message: %s", err.msg);
    zb_schedule_release(&s);
    zb_profile_release(&p);
}

/* Uneven stage times at 1.5x 1F1B's memory, m >= 2p (the quality grid's
 * loop cells): the per-stage tuning starts from the best variant, so it
 * is never worse than any of them, never below the lower bound, and on
 * these profiles it gains somewhere (how much: tools/check_quality.c). */
Test(construct, tuning_per_stage_beats_every_variant_on_uneven_profiles)
{
    unsigned seed = 2027;
    int gained = 0;
    const int n = LOOP_UNEVEN_CASES;

    for (int i = 0; i < n; i++) {
        struct zb_profile p;
        struct zb_schedule s;
        double best = INFINITY, bound, cost;
        char what[64];

        loop_uneven_profile(&seed, &p);
        for (int v = 0; v < CONSTRUCT_VARIANTS; v++) {
            zb_schedule_init(&s, "zb", &p);
            cr_assert_eq(zbi_construct_variant(&p, v, &s, NULL), 0);
            zb_measures_from_times(&p, s.ranks, &s.predicted);
            if (s.predicted.fits_memory)
                best = fmin(best, s.predicted.cost);
            zb_schedule_release(&s);
        }
        snprintf(what, sizeof(what), "case %d (p %d m %d)", i, p.pp,
                 p.microbatches);
        cost = construct(&p, &s, what);
        bound = zb_bound_cost(&p);
        cr_assert_leq(cost, best * (1 + 1e-12), "%s: tuned %g, a variant %g",
                      what, cost, best);
        cr_assert_geq(cost, bound * (1 - 1e-9), "%s: tuned %g below the "
                      "bound %g", what, cost, bound);
        gained += cost < best * (1 - 1e-9);
        zb_schedule_release(&s);
        zb_profile_release(&p);
    }
    cr_assert_gt(gained, 0, "the tuning gained on none of %d profiles", n);
}
