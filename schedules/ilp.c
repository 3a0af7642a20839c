/* ilp.c - `ilp`: the optimal-placement integer program (solver/) as an
 * ordinary row: it reads the search options (time limit, gap, objective,
 * Ctrl-C, progress, --export-lp) and hands the solver its warm start, the
 * orders `zb` chooses from (best.c) plus `zb`'s choice, so the solver
 * needs nothing from this directory. */
#include <stdlib.h>
#include "best.h"
#include "zbsched/generator.h"
#include "zbsched/solver.h"
#include "zbsched/xalloc.h"

/* Every fixed family's order in table order, then `zb`'s winner: the
 * warm-start candidates, borrowed from c (nothing to free but the array). */
static struct zb_schedule *warm_orders(const struct best_candidates *c,
                                       const struct zb_profile *p, int *n)
{
    struct zb_schedule *w = zb_xcalloc((size_t)c->n + 1, sizeof(*w));
    struct best b;

    *n = 0;
    for (int i = c->fixed; i < c->n; i++)
        w[(*n)++] = c->s[i];
    best_init(&b);
    for (int i = 0; i < c->n; i++)
        best_consider(&b, &c->s[i]);
    if (best_result(&b, p, NULL) == 0)
        w[(*n)++] = *b.sched;
    return w;
}

static int gen_ilp(const struct zb_profile *p, const struct zb_options *opt,
                   struct zb_schedule *s, struct zb_error *err)
{
    struct best_candidates c;
    struct zb_schedule *warm;
    int nwarm, rc = 0;

    best_candidates_collect(p, opt, &c);
    warm = warm_orders(&c, p, &nwarm);
    if (opt->export_lp)
        rc = zb_ilp_export_lp(p, opt, warm, nwarm, opt->export_lp, err);
    if (rc == 0)
        rc = zb_ilp_solve(p, opt, warm, nwarm, s, err);
    free(warm);
    best_candidates_release(&c);
    return rc;
}

const struct zb_generator zb_gen_ilp = {
    .name = "ilp",
    .summary = "integer program (GLPK): best order for real times, comm "
               "and limits, with a proven bound",
    .placements = ZB_PLACES_LOOP | ZB_PLACES_V, .min_vpp = 1, .max_vpp = 64,
    .memory_aware = true,
    .solver = true,
    .generate = gen_ilp,
};
