/* block_time.c - the building-block search's grid timed on the real
 * durations and comm (block_grid.h): the simulator's rule (timing.h),
 * so that most blocks need no simulation to be left out. */
#include <math.h>
#include <stdlib.h>
#include "build/block_grid.h"
#include "zbsched/timing.h"
#include "zbsched/xalloc.h"

/* The stage of a kind's pass on rank r (V: chunk 1 of rank r is stage
 * 2p-1-r). */
static int kind_stage(const struct zb_profile *p, int r, int k)
{
    return zb_profile_rank_stage(p, r,
                                 k == BG_F1 || k == BG_B1 || k == BG_W1);
}

static double kind_time(const struct zb_profile *p, int stage, int k)
{
    const struct zb_stage_times *t = &p->stage[stage];

    return bg_is_f(k) ? t->f : bg_is_w(k) ? t->w : t->b;
}

/* The timing's walk: each pass's end, each row's free time and first
 * start. */
struct timing {
    const struct bgrid *g;
    const struct zb_profile *p;
    double *end, *free_at, *first;
};

/* A pass starts once its rank is free and its input has arrived
 * (timing.h; 0 lag on its own rank). */
static void time_pass(void *ctx, int r, int k, int j)
{
    struct timing *q = ctx;
    const struct bgrid *g = q->g;
    const int stage = kind_stage(q->p, r, k);
    const int in = g->in_kind[r * BG_KINDS + k];
    double start = q->free_at[r];

    if (in >= 0) {
        int from = g->in_rank[r * BG_KINDS + k];
        start = zb_timing_start(
            start, zb_timing_arrival(
                       q->p, kind_stage(q->p, from, in), stage, r,
                       q->end[(from * BG_KINDS + in) * g->m + j]));
    }
    q->free_at[r] = q->end[(r * BG_KINDS + k) * g->m + j] =
        start + kind_time(q->p, stage, k);
    if (start < q->first[r])
        q->first[r] = start;
}

bool zbi_bg_time(const struct bgrid *g, const struct zb_profile *p,
                 double *cost, double *makespan)
{
    const int n = g->pp;
    struct timing q = {
        g, p, zb_xmalloc((size_t)n * BG_KINDS * g->m * sizeof(double)),
        zb_xcalloc((size_t)n, sizeof(double)),
        zb_xmalloc((size_t)n * sizeof(double)) };
    double lo = INFINITY, hi = -INFINITY;
    bool ok;

    for (int r = 0; r < n; r++)
        q.first[r] = INFINITY;
    ok = zbi_bg_walk(g, false, time_pass, &q);
    *cost = 0;
    for (int r = 0; r < n; r++) {
        if (q.free_at[r] - q.first[r] > *cost)
            *cost = q.free_at[r] - q.first[r];
        lo = fmin(lo, q.first[r]);
        hi = fmax(hi, q.free_at[r]);
    }
    *makespan = hi > lo ? hi - lo : 0;
    free(q.end);
    free(q.free_at);
    free(q.first);
    return ok;
}
