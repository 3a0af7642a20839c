/* test_frontier.c - the frontier: its front falls as memory grows, every
 * point respects the bound at each limit it fits, and the controllable-
 * memory families fill the low-memory end. */
#include <string.h>
#include "helpers.h"
#include "zbsched/frontier.h"

static void build(int p, int m, struct zb_frontier *f)
{
    struct shape sh = unit_shape(p, m);
    struct zb_profile prof;
    struct zb_options opt;
    struct zb_error err = { 0 };

    zb_options_init(&opt);
    opt.effort = -1;    /* no local search: the test is about the sweep */
    make_profile(&sh, &prof);
    cr_assert_eq(zb_frontier_build(&prof, &opt, f, &err), 0, "%s", err.msg);
    zb_profile_release(&prof);
}

Test(frontier, front_falls_and_bound_holds)
{
    static const int cases[][2] = { { 2, 4 }, { 4, 8 } };
    for (int c = 0; c < 2; c++) {
        struct zb_frontier f;
        double last_peak = -1, last_cost = INFINITY;
        int on_front = 0;
        build(cases[c][0], cases[c][1], &f);
        assert_near(f.unit, cases[c][0], "1F1B's peak");
        for (int i = 0; i < f.n; i++) {
            const struct zb_frontier_point *pt = &f.pts[i];
            cr_assert_geq(pt->peak, last_peak, "sorted by peak");
            last_peak = pt->peak;
            if (isfinite(pt->limit))
                cr_assert_leq(pt->peak, pt->limit * (1 + 1e-9), "%s", pt->name);
            for (int k = 0; k < f.nb; k++)
                if (f.bounds[k].limit >= pt->peak * (1 - 1e-9))
                    cr_assert_geq(pt->cost, f.bounds[k].bound * (1 - 1e-9),
                                  "%s at %g beats the bound at %g", pt->name,
                                  pt->peak, f.bounds[k].limit);
            if (pt->front) {
                cr_assert_lt(pt->cost, last_cost, "front %s", pt->name);
                last_cost = pt->cost;
                on_front++;
            } else {
                /* Off the front: a point with no more memory costs no more. */
                cr_assert_geq(pt->cost, last_cost * (1 - 1e-12), "%s",
                              pt->name);
            }
        }
        cr_assert_geq(on_front, 2);
        zb_frontier_release(&f);
    }
}

Test(frontier, controllable_memory_families_and_zb_at_low_limits)
{
    struct zb_frontier f;
    bool vmin = false, zb_half = false;

    build(4, 8, &f);
    for (int i = 0; i < f.n; i++) {
        const struct zb_frontier_point *pt = &f.pts[i];
        if (!strcmp(pt->name, "v-min")) {
            vmin = true;
            assert_near(pt->peak, 2, "v-min: 2 of 4 stage activations");
        }
        /* zb fits half of 1F1B's memory in V placement. */
        if (!strcmp(pt->name, "zb") && pt->placement == ZB_PLACEMENT_V &&
            fabs(pt->limit - 2) < 1e-9)
            zb_half = true;
    }
    cr_assert(vmin && zb_half);
    zb_frontier_release(&f);
}
