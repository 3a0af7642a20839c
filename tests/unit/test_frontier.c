/* test_frontier.c - the frontier: its front falls as memory grows, every
 * point respects the bound at each limit it fits, and the controllable-
 * memory families fill the low-memory end. */
#include <string.h>
#include "plan/plan.h"
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
                cr_assert_leq(pt->peak, pt->limit * (1 + 1e-9), "%s",
                              pt->name);
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

/* With an FB time shorter than some stages' F plus B, an overlapping
 * family (DualPipeV) runs less work than the passes' times say; the bound
 * at each limit scales for the shortest FB any rank can run, not stage
 * 0's alone (here stage 0 is the fast one, whose ratio would scale
 * nothing, and DualPipeV would beat the bound). */
Test(frontier, bound_holds_for_overlapped_passes_on_uneven_stages)
{
    struct shape sh = unit_shape(4, 8);
    struct zb_profile prof;
    struct zb_options opt;
    struct zb_frontier f;
    struct zb_error err = { 0 };
    int overlapped = 0;

    make_profile(&sh, &prof);
    prof.fb = 2.0;
    prof.stage[0] = (struct zb_stage_times){ 0.6, 0.8, 1 };
    prof.stage[3] = (struct zb_stage_times){ 1.3, 2.0, 1.1 };
    zb_options_init(&opt);
    opt.effort = -1;
    cr_assert_eq(zb_frontier_build(&prof, &opt, &f, &err), 0, "%s", err.msg);
    for (int i = 0; i < f.n; i++) {
        const struct zb_frontier_point *pt = &f.pts[i];
        overlapped += !strcmp(pt->name, "dualpipev");
        for (int k = 0; k < f.nb; k++)
            if (f.bounds[k].limit >= pt->peak * (1 - 1e-9))
                cr_assert_geq(pt->cost, f.bounds[k].bound * (1 - 1e-9),
                              "%s (vpp %d) at %g beats the bound at %g",
                              pt->name, pt->vpp, pt->peak, f.bounds[k].limit);
    }
    cr_assert_gt(overlapped, 0);
    zb_frontier_release(&f);
    zb_profile_release(&prof);
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

/* The own shape keeps its per-stage times: a heavy first stage makes
 * 1f1b's point what 1f1b costs on the profile itself, not on the mean. */
Test(frontier, own_shape_keeps_per_stage_times)
{
    struct shape sh = unit_shape(4, 8);
    struct zb_profile prof;
    struct zb_schedule s;
    struct zb_options opt;
    struct zb_frontier f;
    struct zb_error err = { 0 };
    bool seen = false;

    make_profile(&sh, &prof);
    prof.stage[0].f = 3;
    gen("1f1b", &prof, &s);
    zb_options_init(&opt);
    opt.effort = -1;
    cr_assert_eq(zb_frontier_build(&prof, &opt, &f, &err), 0, "%s", err.msg);
    for (int i = 0; i < f.n; i++)
        if (!strcmp(f.pts[i].name, "1f1b")) {
            assert_near(f.pts[i].cost, s.predicted.cost, "1f1b's cost");
            seen = true;
        }
    cr_assert(seen);
    zb_frontier_release(&f);
    zb_schedule_release(&s);
    zb_profile_release(&prof);
}

static void pick(struct zb_profile *prof, bool every_shape,
                 struct zb_frontier_pick *pk)
{
    struct zb_error err = { 0 };

    cr_assert_eq(zb_frontier_pick(prof, every_shape, NULL, pk, &err), 0,
                 "%s", err.msg);
    cr_assert(pk->sched.predicted.fits_memory);
    cr_assert_eq(zb_validate_schedule(&pk->sched, &err), 0, "%s", err.msg);
}

/* At 1F1B's memory, p 4, m 8: every shape lets V win (zb at 24, no
 * bubble); the runner-up is another shape's, no cheaper. In the
 * profile's own shape (loop) zb wins (it takes every family as a
 * candidate); at 1F1B's memory it meets the bound there, so no other
 * family of the shape is built and there is no runner-up; with two
 * slower stages zb is above the bound and the runner-up is another
 * family of that shape. */
Test(frontier, pick_tries_every_shape_or_the_profiles_own)
{
    struct shape sh = unit_shape(4, 8);
    struct zb_profile prof;
    struct zb_frontier_pick pk;

    sh.limit = 4;
    make_profile(&sh, &prof);
    pick(&prof, true, &pk);
    cr_assert_str_eq(pk.sched.name, "zb");
    cr_assert_eq(pk.sched.profile.placement, ZB_PLACEMENT_V);
    assert_near(pk.sched.predicted.cost, 24, "zb in V at 1p");
    cr_assert(pk.has_runner_up);
    cr_assert_eq(pk.runner_shape.placement, ZB_PLACEMENT_LOOP);
    cr_assert_gt(pk.runner_cost, 24);
    zb_schedule_release(&pk.sched);

    pick(&prof, false, &pk);
    cr_assert_str_eq(pk.sched.name, "zb");
    cr_assert_eq(pk.sched.profile.placement, ZB_PLACEMENT_LOOP);
    cr_assert_eq(pk.sched.profile.vpp, 1);
    assert_near(pk.sched.predicted.cost, pk.sched.predicted.lower_bound,
                "zb in loop at 1p");
    cr_assert_not(pk.has_runner_up, "runner-up %s", pk.runner_up);
    zb_schedule_release(&pk.sched);

    prof.stage[1].f = 1.4;
    prof.stage[2].b = 1.9;
    pick(&prof, false, &pk);
    cr_assert_str_eq(pk.sched.name, "zb");
    cr_assert_gt(pk.sched.predicted.cost,
                 pk.sched.predicted.lower_bound * (1 + 1e-9));
    cr_assert(pk.has_runner_up);
    cr_assert_str_neq(pk.runner_up, "zb");
    cr_assert_eq(pk.runner_shape.vpp, 1);
    cr_assert_geq(pk.runner_cost, pk.sched.predicted.cost);
    zb_schedule_release(&pk.sched);
    zb_profile_release(&prof);
}

/* The pick takes the fixed families' orders from zb's own candidates
 * (choose.c, pool_shape()): each must be the order the family builds
 * alone. With uneven stages and a limit the families' costs differ, so
 * the runner-up's cost names the order it came from; in V, and with the
 * V runner-up forced by a limit only some families fit. */
Test(frontier, pick_weighs_each_family_as_it_builds_alone)
{
    static const struct { enum zb_placement placement; int vpp;
                          double limit; } cases[] = {
        { ZB_PLACEMENT_LOOP, 1, 6 }, { ZB_PLACEMENT_V, 2, 12 },
        { ZB_PLACEMENT_V, 2, 6 },
    };

    for (size_t k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
        struct shape sh = { 4, cases[k].vpp, 12, cases[k].placement,
                            1, 1.3, 0.6, 0.05, 1, 0.5, cases[k].limit };
        struct zb_profile prof;
        struct zb_frontier_pick pk;
        struct zb_schedule alone;
        struct zb_error err = { 0 };

        make_profile(&sh, &prof);
        prof.stage[1].f = 1.4;
        prof.stage[2].b = 1.9;
        pick(&prof, false, &pk);
        cr_assert(pk.has_runner_up, "case %zu", k);
        cr_assert_eq(zb_generator_run(zb_generator_find(pk.runner_up), &prof,
                                      NULL, &alone, &err), 0, "%s", err.msg);
        cr_assert_eq(alone.predicted.cost, pk.runner_cost,
                     "case %zu: %s built alone costs %g, in the pick %g", k,
                     pk.runner_up, alone.predicted.cost, pk.runner_cost);
        zb_schedule_release(&alone);
        zb_schedule_release(&pk.sched);
        zb_profile_release(&prof);
    }
}

/* A family that never holds more than 1F1B's memory (zb-v, v-half,
 * v-min: zb_generator.peak_cap) cannot beat a candidate that already
 * costs less than the bound at that memory: zb's collection leaves it
 * out above 1F1B's limit (candidates.c, outclassed()), and the pick does not
 * build it either; at 1F1B's limit it stays. V, p 4, m 8, comm 0.2: at
 * 1.5p zb costs 48.4, zb-v 50.8 above a bound of 50.6 at 1F1B's
 * memory. */
Test(frontier, leaves_out_a_family_outclassed_at_its_memory)
{
    for (int k = 0; k < 2; k++) {
        struct shape sh = { 4, 2, 8, ZB_PLACEMENT_V, 1, 1, 1, 0.2, 1, 0.5,
                            k == 0 ? 8 : 12 };
        struct zb_profile prof;
        struct zb_options opt;
        struct plan_candidates c;
        struct zb_frontier_pick pk;
        struct zb_schedule alone;

        make_profile(&sh, &prof);
        zb_options_init(&opt);
        zbi_plan_collect(&prof, &opt, &c);
        pick(&prof, false, &pk);
        for (int i = 0; zb_generators[i]; i++) {
            const struct zb_generator *g = zb_generators[i];
            if (!(g->peak_cap > 0) || zb_generator_accepts(g, &prof, NULL))
                continue;
            cr_assert_eq(c.outclassed[i], k == 1, "%s, limit %g", g->name,
                         sh.limit);
            gen(g->name, &prof, &alone);
            if (k == 1) {
                cr_assert(pk.has_runner_up);
                cr_assert_str_neq(pk.runner_up, g->name);
                cr_assert_lt(pk.sched.predicted.cost, alone.predicted.cost);
            }
            zb_schedule_release(&alone);
        }
        zbi_plan_release(&c);
        zb_schedule_release(&pk.sched);
        zb_profile_release(&prof);
    }
}

/* A family beats zb where zb cannot follow: dualpipev's overlapped FB
 * (zb moves one pass per op) with FB well under F + B. */
Test(frontier, pick_takes_a_family_that_beats_zb)
{
    struct shape sh = unit_shape(4, 8);
    struct zb_profile prof;
    struct zb_frontier_pick pk;

    sh.vpp = 2;
    sh.placement = ZB_PLACEMENT_V;
    sh.limit = 12;
    make_profile(&sh, &prof);
    prof.fb = 1.2;
    pick(&prof, false, &pk);
    cr_assert_str_eq(pk.sched.name, "dualpipev");
    cr_assert_str_eq(pk.runner_up, "zb");
    cr_assert_lt(pk.sched.predicted.cost, pk.runner_cost);
    zb_schedule_release(&pk.sched);
    zb_profile_release(&prof);
}

/* Data parallelism travels into every shape (its per-stage parameters
 * are split too). */
Test(frontier, builds_with_data_parallelism)
{
    struct shape sh = unit_shape(2, 4);
    static const char *const flags[][2] = { { "dp", "2" }, { "zero", "1" },
                                            { "params", "1e6" } };
    struct zb_profile prof;
    struct zb_dp_draft dd;
    struct zb_options opt;
    struct zb_frontier f;
    struct zb_error err = { 0 };

    make_profile(&sh, &prof);
    zb_dp_draft_init(&dd);
    for (int i = 0; i < 3; i++)
        cr_assert_eq(zb_dp_draft_set(&dd, flags[i][0], flags[i][1], &err),
                     0, "%s", err.msg);
    cr_assert_eq(zb_dp_build(&dd, 2, &prof.dp, &err), 0, "%s", err.msg);
    zb_dp_draft_release(&dd);
    zb_options_init(&opt);
    opt.effort = -1;
    cr_assert_eq(zb_frontier_build(&prof, &opt, &f, &err), 0, "%s", err.msg);
    cr_assert_gt(f.n, 5);
    zb_frontier_release(&f);
    zb_profile_release(&prof);
}
