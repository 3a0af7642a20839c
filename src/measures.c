/* measures.c - the measures of docs/design.md from compute ops' times, one
 * definition for the simulator's predictions and zbexec's realized runs,
 * and the order in which candidate schedules compare. */
#include <math.h>
#include <string.h>
#include "zbsched/measures.h"
#include "zbsched/validate.h"

void zb_measures_summarise(struct zb_measures *ms, int pp)
{
    double busy = 0, first = INFINITY, last = -INFINITY;

    ms->cost = 0;
    for (int r = 0; r < pp; r++) {
        struct zb_rank_measures *rm = &ms->ranks[r];
        rm->span = rm->last_end - rm->first_start;
        busy += rm->busy;
        ms->cost = fmax(ms->cost, rm->span);
        first = fmin(first, rm->first_start);
        last = fmax(last, rm->last_end);
    }
    ms->makespan = last > first ? last - first : 0;
    ms->bubble_ratio = ms->cost > 0 ? 1 - busy / (pp * ms->cost) : 0;
    ms->sync_bubble_ratio =
        ms->makespan > 0 ? 1 - busy / (pp * ms->makespan) : 0;
}

void zb_measures_set_rank(const struct zb_profile *p, int r,
                          const struct zb_rank_tally *t,
                          struct zb_measures *ms)
{
    struct zb_rank_measures *rm = &ms->ranks[r];

    *rm = (struct zb_rank_measures){ .busy = t->busy,
                                     .first_start = t->first_start,
                                     .last_end = t->last_end,
                                     .peak_memory = t->peak };
    if (rm->last_end < rm->first_start)     /* no pass */
        rm->first_start = rm->last_end = 0;
    if (!zb_validate_within_limit(p, r, rm->peak_memory))
        ms->fits_memory = false;
}

void zb_measures_finish(struct zb_measures *ms, int pp)
{
    ms->lower_bound = ms->makespan_bound = ms->step_time = 0;
    zb_measures_summarise(ms, pp);
}

void zb_measures_from_times(const struct zb_profile *p,
                            const struct zb_op_list *ranks,
                            struct zb_measures *ms)
{
    ms->fits_memory = true;
    for (int r = 0; r < p->pp; r++) {
        struct zb_rank_tally t;

        zb_tally_start(&t);
        for (int i = 0; i < ranks[r].n; i++) {
            const struct zb_op *op = &ranks[r].ops[i];
            if (!zb_op_is_compute(op->kind))
                continue;
            struct zb_op part[2];
            int np = zb_op_split(op, part);     /* an FB peaks after its F */
            zb_tally_pass(&t, op->start, op->end);
            for (int h = 0; h < np; h++)
                zb_tally_memory(&t, zb_op_memory_delta(p, &part[h]));
        }
        zb_measures_set_rank(p, r, &t, ms);
    }
    zb_measures_finish(ms, p->pp);
}

void zb_measures_copy(struct zb_measures *dst, const struct zb_measures *src,
                      int pp)
{
    struct zb_rank_measures *ranks = dst->ranks;

    *dst = *src;
    dst->ranks = ranks;
    memcpy(ranks, src->ranks, (size_t)pp * sizeof(*ranks));
}

double zb_measures_max_peak(const struct zb_measures *ms, int pp)
{
    double peak = 0;

    for (int r = 0; r < pp; r++)
        peak = fmax(peak, ms->ranks[r].peak_memory);
    return peak;
}

double zb_measures_max_total(const struct zb_measures *ms, int pp)
{
    double total = 0;

    for (int r = 0; r < pp; r++)
        total = fmax(total, ms->ranks[r].total_memory);
    return total;
}

bool zb_measures_better(const struct zb_measures *x,
                        const struct zb_measures *y, int pp)
{
    const double eps = 1e-9;
    double px = 0, py = 0;

    if (fabs(x->cost - y->cost) > eps * fmax(1, y->cost))
        return x->cost < y->cost;
    if (fabs(x->makespan - y->makespan) > eps * fmax(1, y->makespan))
        return x->makespan < y->makespan;
    for (int r = 0; r < pp; r++) {
        px = fmax(px, x->ranks[r].peak_memory);
        py = fmax(py, y->ranks[r].peak_memory);
    }
    return px < py - eps;
}
