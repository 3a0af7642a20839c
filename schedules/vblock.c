/* vblock.c - orders built from a repeated building block (Qi et al.,
 * "Pipeline parallelism with controllable memory", NeurIPS 2024), shared
 * by v-half and v-min.
 *
 * On a grid of unit slots, microbatch j's four passes on rank r sit at
 * 6j + off[k] (F chunk 0, F chunk 1, B chunk 1, B chunk 0): every rank
 * repeats the block every six slots, and the block's offsets set how long
 * a microbatch's activations live on a rank, hence the peak memory. The
 * two W passes a microbatch leaves on a rank fill the two free slots of
 * each period, oldest first; so a W follows its B within a few slots and
 * memory is freed about when the paper frees it. Reading each rank's grid
 * in slot order gives the compute order; the simulator then times it with
 * the profile's real durations and comm (the grid only fixes the order). */
#include <stdlib.h>
#include "families.h"
#include "zbsched/xalloc.h"

#define VBLOCK_PERIOD 6

struct slot {
    enum zb_op_kind kind;
    int stage, mb;
    bool used;
};

/* The pass of offset index k: F0, F1, B1, B0. */
static void pass_of(const struct zb_profile *p, int rank, int k, int mb,
                    struct slot *out)
{
    static const enum zb_op_kind kinds[4] = { ZB_OP_F, ZB_OP_F, ZB_OP_B,
                                              ZB_OP_B };
    static const int chunks[4] = { 0, 1, 1, 0 };

    *out = (struct slot){ kinds[k],
                          zb_profile_rank_stage(p, rank, chunks[k]), mb,
                          true };
}

/* Rank r's grid, read in slot order, into s (W passes into free slots). */
static int build_rank(const struct zb_profile *p, int r, const int off[4],
                      struct zb_schedule *s, struct zb_error *err)
{
    const int m = p->microbatches;
    int len = VBLOCK_PERIOD * (m - 1) + 1, head = 0, tail = 0;
    struct slot *grid, *pending;

    /* The families' offsets are distinct mod 6 for every p (checked up to
     * p 1024); a new block that is not gets an error, not a bad order. */
    for (int k = 0; k < 4; k++)
        for (int j = 0; j < k; j++)
            if ((off[k] - off[j]) % VBLOCK_PERIOD == 0)
                return zb_error_set(err, ZB_EUNSUPPORTED,
                                    "building block collides on rank %d "
                                    "(offsets %d and %d)", r, off[j],
                                    off[k]);
    for (int k = 0; k < 4; k++)
        if (off[k] + VBLOCK_PERIOD * (m - 1) + 1 > len)
            len = off[k] + VBLOCK_PERIOD * (m - 1) + 1;
    grid = zb_xcalloc((size_t)len, sizeof(*grid));
    pending = zb_xmalloc((size_t)(2 * m) * sizeof(*pending));
    for (int j = 0; j < m; j++)
        for (int k = 0; k < 4; k++)
            pass_of(p, r, k, j, &grid[VBLOCK_PERIOD * j + off[k]]);
    for (int t = 0; t < len; t++) {
        struct slot *g = &grid[t];
        if (!g->used) {
            if (head < tail) {
                zb_schedule_push(s, r, ZB_OP_W, pending[head].stage,
                                 pending[head].mb);
                head++;
            }
            continue;
        }
        zb_schedule_push(s, r, g->kind, g->stage, g->mb);
        if (g->kind == ZB_OP_B)
            pending[tail++] = *g;
    }
    for (; head < tail; head++)
        zb_schedule_push(s, r, ZB_OP_W, pending[head].stage,
                         pending[head].mb);
    free(grid);
    free(pending);
    return 0;
}

int vblock_order(const struct zb_profile *p,
                 void (*offsets)(int pp, int rank, int off[4]),
                 struct zb_schedule *s, struct zb_error *err)
{
    for (int r = 0; r < p->pp; r++) {
        int off[4], rc;
        offsets(p->pp, r, off);
        if ((rc = build_rank(p, r, off, s, err)) < 0)
            return rc;
    }
    return 0;
}
