/* test_warm_depth.c - the warm-up-depth candidate of `zb`
 * (schedules/build/warm_depth.c): on random profiles with unequal stage times
 * and limits from 1F1B's memory to three times it, its order fits the
 * limit, the simulator times it as it says, and it lowers and validates. */
#include <stdio.h>
#include <string.h>
#include "helpers.h"
#include "zbsched/bound.h"
#include "build/build.h"

/* Loop placement, one chunk per rank, unequal stage times, a limit of 1
 * to 3 times 1F1B's peak (p activations) on every rank. */
static void random_unequal_profile(unsigned *seed, struct zb_profile *p)
{
    struct shape sh = unit_shape(1 + rand_r(seed) % 16, 1);

    sh.mb = 1 + rand_r(seed) % (4 * sh.pp);
    sh.comm = rand_r(seed) % 3 ? uniform(seed, 0, 0.3) : 0;
    sh.m_w = rand_r(seed) % 3 ? uniform(seed, 0.05, 1) : 1;
    sh.limit = uniform(seed, 1, 3) * sh.pp;
    make_profile(&sh, p);
    for (int s = 0; s < sh.pp; s++)
        p->stage[s] = (struct zb_stage_times){ uniform(seed, 0.5, 2),
                                               uniform(seed, 0.5, 2.5),
                                               uniform(seed, 0.1, 1.5) };
}

Test(warm_depth, fits_and_validates_on_random_unequal_profiles)
{
    unsigned seed = 9;

    for (int iter = 0; iter < 100; iter++) {
        struct zb_profile p;
        struct zb_schedule s;
        struct zb_error err = { 0 };
        double cost;
        char what[64];

        random_unequal_profile(&seed, &p);
        snprintf(what, sizeof(what), "iter %d (p %d m %d)", iter, p.pp,
                 p.microbatches);
        zb_schedule_init(&s, "zb", &p);
        cr_assert_eq(zbi_warm_depth_loop(&p, &s, &err), 0, "%s: %s", what,
                     err.msg);
        cr_assert(s.predicted.fits_memory, "%s: over the limit (measured "
                  "from its own times)", what);
        cost = s.predicted.cost;
        cr_assert_eq(zb_sim_run(&s, &err), 0, "%s: %s", what, err.msg);
        cr_assert(s.predicted.fits_memory, "%s: over the limit", what);
        cr_assert(fabs(s.predicted.cost - cost) <= 1e-9 * fmax(1, cost),
                  "%s: cost %g, simulated %g", what, cost,
                  s.predicted.cost);
        cr_assert_geq(cost, zb_bound_cost(&p) * (1 - 1e-9),
                      "%s: cost %g below the bound %g", what, cost,
                      zb_bound_cost(&p));
        cr_assert_eq(zb_lower_run(&s, &err), 0, "%s: %s", what, err.msg);
        cr_assert_eq(zb_validate_schedule(&s, &err), 0, "%s: %s", what,
                     err.msg);
        zb_schedule_release(&s);
        zb_profile_release(&p);
    }
}

Test(warm_depth, refuses_v_placement_and_several_chunks)
{
    struct shape sh = unit_shape(4, 8);
    struct zb_profile p;
    struct zb_schedule s;
    struct zb_error err = { 0 };

    sh.vpp = 2;
    sh.placement = ZB_PLACEMENT_V;
    make_profile(&sh, &p);
    zb_schedule_init(&s, "zb", &p);
    cr_assert_eq(zbi_warm_depth_loop(&p, &s, &err), ZB_EUNSUPPORTED);
    cr_assert(strstr(err.msg, "loop") != NULL, "message: %s", err.msg);
    zb_schedule_release(&s);
    zb_profile_release(&p);
}
