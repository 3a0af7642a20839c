/* helpers.h - building profiles and schedules in tests. */
#ifndef ZBSCHED_TEST_HELPERS_H
#define ZBSCHED_TEST_HELPERS_H

#include <criterion/criterion.h>
#include <math.h>
#include "zbsched/generator.h"
#include "zbsched/profile.h"
#include "zbsched/schedule.h"

struct shape {
    int pp, vpp, mb;
    enum zb_placement placement;
    double f, b, w, comm;
    double m_b, m_w;
    double limit;           /* every rank; INFINITY = unlimited */
};

/* Unit times, comm 0, M_B = M_W = 1, unlimited. */
static inline struct shape unit_shape(int pp, int mb)
{
    return (struct shape){ pp, 1, mb, ZB_PLACEMENT_LOOP, 1, 1, 1, 0, 1, 1,
                           INFINITY };
}

static inline void make_profile(const struct shape *sh, struct zb_profile *p)
{
    int n = sh->pp * sh->vpp;
    *p = (struct zb_profile){ .pp = sh->pp, .vpp = sh->vpp,
                              .microbatches = sh->mb,
                              .placement = sh->placement, .comm = sh->comm,
                              .m_b = sh->m_b, .m_w = sh->m_w };
    p->stage = calloc((size_t)n, sizeof(*p->stage));
    p->mem_limit = calloc((size_t)sh->pp, sizeof(double));
    for (int s = 0; s < n; s++)
        p->stage[s] = (struct zb_stage_times){ sh->f, sh->b, sh->w };
    for (int r = 0; r < sh->pp; r++)
        p->mem_limit[r] = sh->limit;
}

/* Generate with a named family; fails the test on any error. */
static inline void gen(const char *name, const struct zb_profile *p,
                       struct zb_schedule *s)
{
    const struct zb_generator *g = zb_generator_find(name);
    struct zb_error err = { 0 };
    cr_assert_not_null(g, "no generator %s", name);
    cr_assert_eq(zb_generate(g, p, s, &err), 0, "%s: %s", name, err.msg);
}

static inline double gen_cost(const char *name, const struct shape *sh)
{
    struct zb_profile p;
    struct zb_schedule s;
    double cost;
    make_profile(sh, &p);
    gen(name, &p, &s);
    cost = s.predicted.cost;
    zb_schedule_release(&s);
    zb_profile_release(&p);
    return cost;
}

#define assert_near(a, b, ...) cr_assert(fabs((a) - (b)) < 1e-9, __VA_ARGS__)

#endif
