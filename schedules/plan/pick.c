/* pick.c - the one order on timed schedules (see plan.h): which of two is
 * better, with data parallelism which ends its step sooner, and the best
 * that fits among many. `zb`, its search plan, generate's pick, the
 * frontier and V-Half all compare through it. */
#include <math.h>
#include <stddef.h>
#include "plan/plan.h"
#include "search/search.h"
#include "zbsched/measures.h"

bool zbi_pick_better(const struct zb_schedule *x, const struct zb_schedule *y)
{
    return zb_measures_better(&x->predicted, &y->predicted, x->profile.pp);
}

bool zbi_pick_better_leaner(const struct zb_schedule *x,
                            const struct zb_schedule *y)
{
    for (int r = 0; r < x->profile.pp; r++)
        if (x->predicted.ranks[r].peak_memory >
            y->predicted.ranks[r].peak_memory * (1 + 1e-9))
            return false;
    return zbi_pick_better(x, y);
}

bool zbi_pick_shorter(const struct zb_schedule *x,
                      const struct zb_schedule *y)
{
    double a = x->predicted.step_time, b = y->predicted.step_time;

    return a < b * (1 - 1e-9) ||
           (a <= b * (1 + 1e-9) && zbi_pick_better(x, y));
}

bool zbi_pick_meets_bound(const struct zb_schedule *s)
{
    return s->predicted.cost <= s->predicted.lower_bound * (1 + 1e-9);
}

bool zbi_pick_close(const struct zb_schedule *s)
{
    return s->predicted.fits_memory &&
           s->predicted.cost <= s->predicted.lower_bound * (1 + PLAN_CLOSE_GAP);
}

bool zbi_pick_eager(const struct zb_options *opt, const struct zb_profile *p)
{
    return opt && opt->effort > zbi_improve_default_effort(p);
}

void zbi_pick_init(struct plan_pick *b)
{
    *b = (struct plan_pick){ .sched = NULL, .least_over = INFINITY };
}

void zbi_pick_consider(struct plan_pick *b, const struct zb_schedule *cand)
{
    const struct zb_measures *x = &cand->predicted;

    if (!x->fits_memory) {
        double worst = 0;
        int rank = 0;
        for (int r = 0; r < cand->profile.pp; r++) {
            double ratio = x->ranks[r].peak_memory /
                           cand->profile.mem_limit[r];
            if (ratio > worst) {
                worst = ratio;
                rank = r;
            }
        }
        if (worst < b->least_over) {
            b->least_over = worst;
            b->over_rank = rank;
            b->over_peak = x->ranks[rank].peak_memory;
        }
        return;
    }
    if (!b->sched || zbi_pick_better(cand, b->sched))
        b->sched = cand;
}

int zbi_pick_result(const struct plan_pick *b, const struct zb_profile *p,
                    struct zb_error *err)
{
    if (b->sched)
        return 0;
    if (isfinite(b->least_over))
        return zb_error_set(err, ZB_ENOMEM_LIMIT,
                            "no schedule fits the memory limit: the leanest "
                            "found needs %g on rank %d (limit %g)",
                            b->over_peak, b->over_rank,
                            p->mem_limit[b->over_rank]);
    return zb_error_set(err, ZB_ENOMEM_LIMIT,
                        "no schedule fits the memory limit");
}

int zbi_pick_choice(const struct plan_candidates *c,
                    const struct zb_profile *p, const struct zb_options *opt,
                    const struct zb_schedule **out, struct zb_error *err)
{
    struct plan_pick b;
    int rc;

    zbi_pick_init(&b);
    for (int i = 0; i < c->n; i++)
        if (!plan_own_start(c->role[i]))
            zbi_pick_consider(&b, &c->s[i]);
    /* By role, so the extra start (depth or room) comes before the
     * capped list, whatever the order they were built in. */
    for (int r = PLAN_DEPTH_START; r <= PLAN_CAPPED_START; r++)
        for (int i = 0; i < c->n; i++)
            if ((int)c->role[i] == r && (!b.sched || opt->effort < 0))
                zbi_pick_consider(&b, &c->s[i]);
    rc = zbi_pick_result(&b, p, err);
    *out = b.sched;
    return rc;
}
