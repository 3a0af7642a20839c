/* test_scale.c - one answer in any unit: `zb` on a profile whose times
 * are all multiplied by a positive factor gives the same order, and its
 * cost multiplied by that factor (schedules/plan/zb.c normalises the
 * times once). Small random profiles (shapes.h), a low effort. */
#include "helpers.h"
#include "zbsched/frontier.h"
#include "zbsched/options.h"

/* p with every time multiplied by k, into q. */
static void scaled(const struct zb_profile *p, double k, struct zb_profile *q)
{
    zb_profile_copy(q, p);
    for (int s = 0; s < zb_profile_stages(p); s++) {
        q->stage[s].f = p->stage[s].f * k;
        q->stage[s].b = p->stage[s].b * k;
        q->stage[s].w = p->stage[s].w * k;
    }
    q->comm = p->comm * k;
}

static void run_zb(const struct zb_profile *p, struct zb_schedule *s)
{
    struct zb_options o;
    struct zb_error err = { 0 };

    zb_options_init(&o);
    o.effort = 0.05;
    cr_assert_eq(zb_generator_run(zb_generator_find("zb"), p, &o, s, &err),
                 0, "%s", err.msg);
}

Test(scale, zb_gives_the_same_order_in_any_time_unit)
{
    /* p 4-6, loop, V or interleaved, m up to 2p, limits per rank too;
     * without the normalisation three of these six differ */
    static const struct random_ranges rr = { 4, 3, 2, 2, 0, 2.0, true };
    static const double factor[] = { 1000, 1e-3, 7.3, 0.37 };
    unsigned seed = 1;

    for (int i = 0; i < 6; i++) {
        struct zb_profile p, q;
        struct zb_schedule a, b;
        double k = factor[i % 4];
        random_profile(&seed, &rr, &p);
        scaled(&p, k, &q);
        run_zb(&p, &a);
        run_zb(&q, &b);
        assert_same_ops(&a, &b);
        cr_assert(fabs(b.predicted.cost - k * a.predicted.cost) <=
                      1e-9 * k * a.predicted.cost,
                  "profile %d, factor %g: cost %.17g, scaled %.17g", i, k,
                  a.predicted.cost, b.predicted.cost);
        zb_schedule_release(&a);
        zb_schedule_release(&b);
        zb_profile_release(&p);
        zb_profile_release(&q);
    }
}

/* generate's pick (every family and zb, in the profile's shape and in
 * every shape) by the same rule: the same schedule in any unit. Without
 * the pick's own normalisation 35 of the 96 quality-grid profiles picked
 * another order at F x 1000. */
Test(scale, the_pick_gives_the_same_order_in_any_time_unit)
{
    static const struct random_ranges rr = { 4, 3, 2, 2, 0, 2.0, true };
    static const double factor[] = { 1000, 1e-3, 7.3 };
    unsigned seed = 11;

    for (int i = 0; i < 6; i++) {
        struct zb_profile p, q;
        struct zb_frontier_pick a, b;
        struct zb_options o;
        struct zb_error err = { 0 };
        double k = factor[i % 3];
        bool every = i % 2;

        zb_options_init(&o);
        o.effort = 0.05;
        random_profile(&seed, &rr, &p);
        scaled(&p, k, &q);
        cr_assert_eq(zb_frontier_pick(&p, every, &o, &a, &err), 0, "%s",
                     err.msg);
        cr_assert_eq(zb_frontier_pick(&q, every, &o, &b, &err), 0, "%s",
                     err.msg);
        cr_assert_str_eq(a.sched.name, b.sched.name, "profile %d", i);
        cr_assert_eq(a.sched.profile.vpp, b.sched.profile.vpp);
        cr_assert_eq(a.sched.profile.placement, b.sched.profile.placement);
        assert_same_ops(&a.sched, &b.sched);
        cr_assert(fabs(b.sched.predicted.cost - k * a.sched.predicted.cost) <=
                      1e-9 * k * a.sched.predicted.cost, "profile %d", i);
        zb_schedule_release(&a.sched);
        zb_schedule_release(&b.sched);
        zb_profile_release(&p);
        zb_profile_release(&q);
    }
}
