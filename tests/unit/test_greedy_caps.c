/* test_greedy_caps.c - the list scheduler with searched in-flight caps
 * (greedy_caps.c): where it runs, that it is never worse than the plain
 * list scheduler, that it fills the gap between V-Half's memory and
 * 1F1B's that the other candidates leave, and that under interleaved
 * placement it keeps the list scheduler from filling memory with chunk-0
 * forwards. */
#include "helpers.h"
#include "build/build.h"
#include "quality_cases.h"

static int capped_rc(const struct zb_profile *p)
{
    struct zb_schedule s;
    int rc;

    zb_schedule_init(&s, "capped-list", p);
    rc = zbi_greedy_capped(p, &s, NULL);
    zb_schedule_release(&s);
    return rc;
}

/* Interleaved loop placement: p ranks, vpp chunks each, every chunk
 * alike, M_B 1, the limit on every rank. */
static void interleaved_profile(int p, int vpp, int m, double comm,
                                double m_w, double limit,
                                struct zb_profile *out)
{
    struct shape sh = { p, vpp, m, ZB_PLACEMENT_LOOP, 0.5, 0.6, 0.3, comm,
                        1, m_w, limit };
    make_profile(&sh, out);
}

Test(greedy_caps, runs_under_v_below_1f1b_memory_and_interleaved)
{
    struct zb_profile p;
    struct shape loop = unit_shape(4, 8);

    loop.limit = 3;
    make_profile(&loop, &p);
    cr_assert_eq(capped_rc(&p), ZB_EUNSUPPORTED, "loop placement");
    zb_profile_release(&p);
    interleaved_profile(4, 2, 8, 0, 0.5, INFINITY, &p);
    cr_assert_eq(capped_rc(&p), 0, "interleaved, no limit");
    zb_profile_release(&p);
    interleaved_profile(4, 2, 8, 0, 0.5, 16, &p);
    cr_assert_eq(capped_rc(&p), 0, "interleaved at 2x 1F1B's memory");
    zb_profile_release(&p);
    v_chunks_profile(4, 8, 1, 1, 1, 0, 1, INFINITY, &p);
    cr_assert_eq(capped_rc(&p), ZB_EUNSUPPORTED, "no limit");
    zb_profile_release(&p);
    v_chunks_profile(4, 8, 1, 1, 1, 0, 1, 8, &p);
    cr_assert_eq(capped_rc(&p), ZB_EUNSUPPORTED, "1F1B's memory");
    zb_profile_release(&p);
    v_chunks_profile(4, 8, 1, 1, 1, 0, 1, 7, &p);
    cr_assert_eq(capped_rc(&p), 0, "below 1F1B's memory");
    zb_profile_release(&p);
}

/* The capped list scheduler on case k of a random test: its order runs,
 * fits, costs at most `least` and, lowered, passes the validator (memory
 * included). */
static void assert_capped_order(const struct zb_profile *prof, int k,
                                double least)
{
    struct zb_schedule capped;
    struct zb_error err;

    zb_schedule_init(&capped, "capped-list", prof);
    cr_assert_eq(zbi_greedy_capped(prof, &capped, &err), 0, "case %d: %s", k,
                 err.msg);
    cr_assert_eq(zb_sim_run(&capped, &err), 0, "case %d: %s", k, err.msg);
    cr_assert(capped.predicted.fits_memory, "case %d", k);
    cr_assert_leq(capped.predicted.cost, least * (1 + 1e-9),
                  "case %d (p %d vpp %d m %d): %g above the list's %g", k,
                  prof->pp, prof->vpp, prof->microbatches,
                  capped.predicted.cost, least);
    cr_assert_eq(zb_lower_run(&capped, &err), 0, "case %d: %s", k, err.msg);
    cr_assert_eq(zb_validate_schedule(&capped, &err), 0, "case %d: %s", k,
                 err.msg);
    zb_schedule_release(&capped);
}

/* The least cost of the list scheduler, uncapped, under the policies the
 * caps search runs, ready first and forwards first (INFINITY if every
 * run stalls). */
static double least_uncapped(const struct zb_profile *p)
{
    struct zb_schedule list;
    double least = INFINITY;

    zb_schedule_init(&list, "list-scheduler", p);
    for (int q = 0; q < 2 * GREEDY_V_POLICIES; q++) {
        struct greedy_policy pol = zbi_greedy_policies[q / 2];
        pol.b_patience = q % 2;
        for (int r = 0; r < p->pp; r++)
            list.ranks[r].n = 0;
        if (zbi_greedy_schedule(p, &pol, &list, NULL) == 0 &&
            zb_sim_run(&list, NULL) == 0)
            least = fmin(least, list.predicted.cost);
    }
    zb_schedule_release(&list);
    return least;
}

/* Random V profiles below 1F1B's memory: the order is legal, fits and
 * costs no more than the list scheduler under any policy the search runs
 * uncapped, ready first or forwards first; lowered, it passes the
 * validator, memory included. */
Test(greedy_caps, never_worse_than_the_list_scheduler)
{
    unsigned seed = 20261128;

    for (int k = 0; k < 40; k++) {
        int p = 2 + rand_r(&seed) % 7;
        int m = p + rand_r(&seed) % (2 * p + 1);
        double peak = 2.0 * p;
        struct zb_profile prof;
        double least;

        v_chunks_profile(p, m, 1, 1, 1, uniform(&seed, 0, 0.15),
                         uniform(&seed, 0.3, 1),
                         uniform(&seed, 2, peak - 0.01), &prof);
        for (int s = 0; s < 2 * p; s++)
            prof.stage[s] = (struct zb_stage_times){
                uniform(&seed, 0.4, 0.6), uniform(&seed, 0.4, 0.7),
                uniform(&seed, 0.15, 0.5) };
        least = least_uncapped(&prof);
        cr_assert(isfinite(least), "case %d: every list run stalled", k);
        assert_capped_order(&prof, k, least);
        zb_profile_release(&prof);
    }
}

/* The paper's 1.5B times at p 8, m 24, limits of 12 to 14 chunk
 * activations (V-Half's peak is 10, 1F1B's 16): the plain list scheduler
 * and the ZB-V construction stay above V-Half's cost there (2.67e6);
 * with the caps searched the list scheduler gets below it. */
Test(greedy_caps, fills_the_gap_between_v_half_and_1f1b_memory)
{
    for (double lim = 12; lim <= 14; lim++) {
        struct zb_profile p;
        struct zb_schedule capped, vhalf;

        v_chunks_profile(8, 24, 18522, 18086, 9337, 601, 0.3664, lim, &p);
        zb_schedule_init(&capped, "capped-list", &p);
        cr_assert_eq(zbi_greedy_capped(&p, &capped, NULL), 0, "limit %g", lim);
        cr_assert_eq(zb_sim_run(&capped, NULL), 0);
        gen("v-half", &p, &vhalf);
        cr_assert_lt(capped.predicted.cost, vhalf.predicted.cost,
                     "limit %g: %g, v-half %g", lim, capped.predicted.cost,
                     vhalf.predicted.cost);
        zb_schedule_release(&capped);
        zb_schedule_release(&vhalf);
        zb_profile_release(&p);
    }
}

/* One rank with a huge limit and many microbatches: the caps tried stay
 * bounded (CAPS_TOP_MAX), the uncapped runs still count, the order fits. */
Test(greedy_caps, a_huge_limit_on_one_rank)
{
    struct zb_profile p;
    struct zb_schedule capped, list;

    v_chunks_profile(2, 600, 1, 1, 1, 0.05, 0.5, 3, &p);
    p.mem_limit[0] = 1e12;
    zb_schedule_init(&capped, "capped-list", &p);
    zb_schedule_init(&list, "list-scheduler", &p);
    cr_assert_eq(zbi_greedy_capped(&p, &capped, NULL), 0);
    cr_assert_eq(zbi_greedy_best(&p, &list, NULL), 0);
    cr_assert_eq(zb_sim_run(&capped, NULL), 0);
    cr_assert_eq(zb_sim_run(&list, NULL), 0);
    cr_assert(capped.predicted.fits_memory);
    cr_assert_leq(capped.predicted.cost, list.predicted.cost * (1 + 1e-9));
    zb_schedule_release(&capped);
    zb_schedule_release(&list);
    zb_profile_release(&p);
}

/* The list scheduler's cost on p with every limit lowered to 1F1B's
 * peak (INFINITY where it stalls), built here from zbi_greedy_best(), not
 * through zbi_greedy_best_1f1b(). */
static double list_at_1f1b_memory(const struct zb_profile *p)
{
    struct zb_profile lean;
    struct zb_schedule list;
    double cost = INFINITY;

    zb_profile_copy(&lean, p);
    for (int r = 0; r < p->pp; r++)
        lean.mem_limit[r] = fmin(lean.mem_limit[r], zb_profile_1f1b_peak(p));
    zb_schedule_init(&list, "list-scheduler", &lean);
    if (zbi_greedy_best(&lean, &list, NULL) == 0 &&
        zb_sim_run(&list, NULL) == 0)
        cost = list.predicted.cost;
    zb_schedule_release(&list);
    zb_profile_release(&lean);
    return cost;
}

/* Interleaved placement (2 or 3 chunks), random times and limits from
 * 1F1B's memory to twice it: the order is legal, fits, passes the
 * validator and costs no more than the plain list scheduler under any
 * of the policies the search runs uncapped, ready first or forwards
 * first, nor than the list scheduler held to 1F1B's memory (more memory
 * lets it crowd the ranks with chunk-0 forwards). */
Test(greedy_caps, interleaved_never_worse_than_its_list_runs)
{
    unsigned seed = 20261129;

    for (int k = 0; k < 24; k++) {
        int p = 2 + rand_r(&seed) % 6, vpp = 2 + rand_r(&seed) % 2;
        int m = p + rand_r(&seed) % (3 * p + 1);
        struct zb_profile prof;

        interleaved_profile(p, vpp, m, uniform(&seed, 0, 0.1),
                            uniform(&seed, 0.3, 0.6),
                            uniform(&seed, p * vpp, 2.0 * p * vpp), &prof);
        for (int s = 0; s < p * vpp; s++)
            prof.stage[s] = (struct zb_stage_times){
                uniform(&seed, 0.4, 0.6), uniform(&seed, 0.4, 0.7),
                uniform(&seed, 0.15, 0.5) };
        assert_capped_order(&prof, k, fmin(least_uncapped(&prof),
                                           list_at_1f1b_memory(&prof)));
        zb_profile_release(&prof);
    }
}

/* p 8, two chunks, m 26, twice 1F1B's memory: the plain list scheduler
 * fills the ranks with chunk-0 forwards and the last microbatches' round
 * trips end late; the caps keep room for chunk 1 and cost less
 * (tools/check_quality.c holds the margin). */
Test(greedy_caps, interleaved_beats_the_plain_list_scheduler)
{
    struct zb_profile prof;
    struct zb_schedule capped, list;

    make_profile(&capped_list_shape, &prof);
    zb_schedule_init(&list, "list-scheduler", &prof);
    zb_schedule_init(&capped, "capped-list", &prof);
    cr_assert_eq(zbi_greedy_best(&prof, &list, NULL), 0);
    cr_assert_eq(zbi_greedy_capped(&prof, &capped, NULL), 0);
    cr_assert_eq(zb_sim_run(&list, NULL), 0);
    cr_assert_eq(zb_sim_run(&capped, NULL), 0);
    cr_assert_lt(capped.predicted.cost, list.predicted.cost,
                 "capped %g, list %g", capped.predicted.cost,
                 list.predicted.cost);
    zb_schedule_release(&capped);
    zb_schedule_release(&list);
    zb_profile_release(&prof);
}
