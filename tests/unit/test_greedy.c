/* test_greedy.c - the list scheduler's policies (greedy.c): forwards
 * first, where memory holds every microbatch's forwards and the first
 * backward is a long round trip away. */
#include "helpers.h"
#include "build/build.h"
#include "quality_cases.h"

/* The cost of zbi_greedy_schedule() under policy q (INFINITY if it stalls or
 * does not fit). */
static double policy_cost(const struct zb_profile *p, int q)
{
    struct zb_schedule s;
    double cost = INFINITY;

    zb_schedule_init(&s, "list-scheduler", p);
    if (zbi_greedy_schedule(p, &zbi_greedy_policies[q], &s, NULL) == 0 &&
        zb_sim_run(&s, NULL) == 0 && s.predicted.fits_memory)
        cost = s.predicted.cost;
    zb_schedule_release(&s);
    return cost;
}

/* Interleaved, p 12, two chunks, m 16 (fewer than p vpp), 1.5 times
 * 1F1B's memory: every forward fits before the first backward returns
 * from its trip through all 24 stages. The ready-first policies start
 * backwards as soon as they arrive and leave forwards waiting behind the
 * returning stream; forwards first keeps the ranks busy while the first
 * ones travel, and its best policy costs less (tools/check_quality.c
 * holds the margin). */
Test(greedy, forwards_first_wins_under_interleaved_with_few_microbatches)
{
    struct zb_profile p;
    double ready_first = INFINITY, forwards_first = INFINITY;

    make_profile(&forwards_first_shape, &p);
    for (int q = 0; q < GREEDY_POLICIES; q++) {
        double c = policy_cost(&p, q);
        if (zbi_greedy_policies[q].b_patience > 0)
            forwards_first = fmin(forwards_first, c);
        else
            ready_first = fmin(ready_first, c);
    }
    cr_assert_lt(forwards_first, ready_first,
                 "forwards first %g, ready first %g", forwards_first,
                 ready_first);
    zb_profile_release(&p);
}
