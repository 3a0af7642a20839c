/* helpers.h - building profiles and schedules in tests. */
#ifndef ZBSCHED_TEST_HELPERS_H
#define ZBSCHED_TEST_HELPERS_H

#include <criterion/criterion.h>
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include "zbsched/generator.h"
#include "zbsched/lower.h"
#include "zbsched/profile.h"
#include "zbsched/schedule.h"
#include "zbsched/sim.h"
#include "zbsched/validate.h"
#include "shapes.h"

/* Generate with a named family and run the validator on the result
 * (memory included when the schedule claims to fit); fails the test on
 * any error. */
static inline void gen(const char *name, const struct zb_profile *p,
                       struct zb_schedule *s)
{
    const struct zb_generator *g = zb_generator_find(name);
    struct zb_error err = { 0 };
    cr_assert_not_null(g, "no generator %s", name);
    cr_assert_eq(zb_generator_run(g, p, NULL, s, &err), 0, "%s: %s", name,
                 err.msg);
    cr_assert_eq(zb_validate_order(s, &err), 0, "%s: %s", name, err.msg);
    if (s->predicted.fits_memory)
        cr_assert_eq(zb_validate_schedule(s, &err), 0, "%s: %s", name,
                     err.msg);
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

/* a and b (same pp) run the same passes (kind, stage, microbatch) in the
 * same order on every rank. */
static inline void assert_same_ops(const struct zb_schedule *a,
                                   const struct zb_schedule *b)
{
    for (int r = 0; r < a->profile.pp; r++) {
        cr_assert_eq(a->ranks[r].n, b->ranks[r].n, "rank %d", r);
        for (int i = 0; i < a->ranks[r].n; i++) {
            const struct zb_op *x = &a->ranks[r].ops[i],
                               *y = &b->ranks[r].ops[i];
            cr_assert(x->kind == y->kind && x->stage == y->stage &&
                      x->mb == y->mb, "rank %d op %d", r, i);
        }
    }
}

/* Take rank r's first op of kind k on unit u out of s (one must be
 * there): a schedule with one collective missing. */
static inline void drop_op(struct zb_schedule *s, int r, enum zb_op_kind k,
                           int u)
{
    struct zb_op_list *l = &s->ranks[r];
    int at = -1;

    for (int i = 0; i < l->n && at < 0; i++)
        if (l->ops[i].kind == k && l->ops[i].unit == u)
            at = i;
    cr_assert_geq(at, 0);
    memmove(l->ops + at, l->ops + at + 1,
            (size_t)(l->n - at - 1) * sizeof(*l->ops));
    l->n--;
}

#endif
