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

bool zbi_bg_time(const struct bgrid *g, const struct zb_profile *p,
                 double *cost, double *makespan)
{
    const int n = g->pp;
    int *cnt = zb_xcalloc((size_t)n * BG_KINDS, sizeof(*cnt));
    int *at = zb_xcalloc((size_t)n, sizeof(*at));
    double *end = zb_xmalloc((size_t)n * BG_KINDS * g->m * sizeof(*end));
    double *free_at = zb_xcalloc((size_t)n, sizeof(*free_at));
    double *first = zb_xmalloc((size_t)n * sizeof(*first));
    double lo = INFINITY, hi = -INFINITY;
    int left = n;
    bool moved = true;

    *cost = 0;
    for (int r = 0; r < n; r++)
        first[r] = INFINITY;
    /* As zbi_bg_squeeze(), on the real times: a pass starts once its rank
     * is free and its input has arrived (timing.h). */
    for (int sweep = 0; left > 0 && moved; sweep++) {
        moved = false;
        left = 0;
        for (int i = 0; i < n; i++) {
            int r = sweep % 2 ? n - 1 - i : i;
            for (; at[r] < g->len; at[r]++) {
                int k = *bg_cell(g, r, at[r]), j, from, turn, src = -1;
                int stage, in_rank = r, in_kind = k;
                double start = free_at[r];
                if (k == BG_EMPTY)
                    continue;
                j = cnt[r * BG_KINDS + k];
                from = g->from[r * BG_KINDS + k];
                turn = g->turn[r * BG_KINDS + k];
                if (bg_is_w(k))
                    in_kind = k == BG_W1 ? BG_B1 : BG_B0;
                else if (turn >= 0)
                    in_kind = turn;
                else if (from >= 0)
                    in_rank = from;
                else
                    in_kind = -1;
                if (in_kind >= 0) {
                    if (cnt[in_rank * BG_KINDS + in_kind] <= j)
                        break;
                    src = (in_rank * BG_KINDS + in_kind) * g->m + j;
                }
                stage = kind_stage(p, r, k);
                if (src >= 0)
                    start = zb_timing_start(
                        start, bg_is_w(k) ? end[src]
                                          : zb_timing_arrival(
                                                p, kind_stage(p, in_rank,
                                                              in_kind),
                                                stage, r, end[src]));
                end[(r * BG_KINDS + k) * g->m + j] =
                    start + kind_time(p, stage, k);
                free_at[r] = end[(r * BG_KINDS + k) * g->m + j];
                if (start < first[r])
                    first[r] = start;
                cnt[r * BG_KINDS + k] = j + 1;
                moved = true;
            }
            left += at[r] < g->len;
        }
    }
    for (int r = 0; r < n; r++) {
        if (free_at[r] - first[r] > *cost)
            *cost = free_at[r] - first[r];
        lo = fmin(lo, first[r]);
        hi = fmax(hi, free_at[r]);
    }
    *makespan = hi > lo ? hi - lo : 0;
    free(cnt);
    free(at);
    free(end);
    free(free_at);
    free(first);
    return left == 0;
}
