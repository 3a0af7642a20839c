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
 * memory is freed about when the paper frees it. Optionally the passes
 * then move into earlier free slots (vblock_compact.c). Reading each
 * rank's grid in slot order gives the compute order; the simulator then
 * times it with the profile's real durations and comm (the grid only
 * fixes the order). */
#include <stdlib.h>
#include "families/families.h"
#include "zbsched/xalloc.h"

#define VBLOCK_PERIOD 6

/* The pass of index k (VBLOCK_PASSES): F0, F1, B1, B0, W1, W0. */
static void push_pass(const struct zb_profile *p, int rank, int k, int mb,
                      struct zb_schedule *s)
{
    static const enum zb_op_kind kinds[VBLOCK_PASSES] = {
        ZB_OP_F, ZB_OP_F, ZB_OP_B, ZB_OP_B, ZB_OP_W, ZB_OP_W };
    static const int chunks[VBLOCK_PASSES] = { 0, 1, 1, 0, 1, 0 };

    zb_schedule_push(s, rank, kinds[k],
                     zb_profile_rank_stage(p, rank, chunks[k]), mb);
}

/* The four offsets of every rank, checked: the families' offsets are
 * distinct mod 6 for every p (checked up to p 1024); a new block that is
 * not gets an error, not a bad order. */
static int block_offsets(const struct zb_profile *p,
                         void (*offsets)(int pp, int rank, int off[4]),
                         int (*off)[4], struct zb_error *err)
{
    for (int r = 0; r < p->pp; r++) {
        offsets(p->pp, r, off[r]);
        for (int k = 0; k < 4; k++)
            for (int j = 0; j < k; j++)
                if ((off[r][k] - off[r][j]) % VBLOCK_PERIOD == 0)
                    return zb_error_set(err, ZB_EUNSUPPORTED,
                                        "building block collides on rank "
                                        "%d (offsets %d and %d)", r,
                                        off[r][j], off[r][k]);
    }
    return 0;
}

/* Rank r's W slots: each free slot of its grid takes the oldest B's W
 * still pending (B passes in slot order); the rest follow the grid. */
static void place_w(const struct zb_profile *p, int r, int *slot)
{
    const int m = p->microbatches;
    int *mine = &slot[(size_t)r * m * VBLOCK_PASSES];
    int len = 0, head = 0, tail = 0;
    int *at;            /* at[t]: index of the pass in slot t, or -1 */
    int *pending;       /* W indices, in the order of their B */

    for (int j = 0; j < m; j++)
        for (int k = 0; k < 4; k++)
            if (mine[j * VBLOCK_PASSES + k] + 1 > len)
                len = mine[j * VBLOCK_PASSES + k] + 1;
    at = zb_xmalloc((size_t)len * sizeof(*at));
    pending = zb_xmalloc((size_t)(2 * m) * sizeof(*pending));
    for (int t = 0; t < len; t++)
        at[t] = -1;
    for (int j = 0; j < m; j++)
        for (int k = 0; k < 4; k++)
            at[mine[j * VBLOCK_PASSES + k]] = j * VBLOCK_PASSES + k;
    for (int t = 0; t < len; t++) {
        if (at[t] < 0) {
            if (head < tail)
                mine[pending[head++]] = t;
            continue;
        }
        /* B1 (k 2) leaves W1 (k 4), B0 (k 3) W0 (k 5). */
        if (at[t] % VBLOCK_PASSES >= 2)
            pending[tail++] = at[t] + 2;
    }
    for (int t = len; head < tail; t++)
        mine[pending[head++]] = t;
    free(at);
    free(pending);
}

/* Rank r's passes in slot order into s. */
static void build_rank(const struct zb_profile *p, int r, const int *slot,
                       struct zb_schedule *s)
{
    const int n = p->microbatches * VBLOCK_PASSES;
    const int *mine = &slot[(size_t)r * n];
    int len = 0, *at;

    for (int i = 0; i < n; i++)
        if (mine[i] + 1 > len)
            len = mine[i] + 1;
    at = zb_xmalloc((size_t)len * sizeof(*at));
    for (int t = 0; t < len; t++)
        at[t] = -1;
    for (int i = 0; i < n; i++)
        at[mine[i]] = i;
    for (int t = 0; t < len; t++)
        if (at[t] >= 0)
            push_pass(p, r, at[t] % VBLOCK_PASSES, at[t] / VBLOCK_PASSES, s);
    free(at);
}

int zbi_vblock_order(const struct zb_profile *p,
                     void (*offsets)(int pp, int rank, int off[4]),
                     bool compact, struct zb_schedule *s,
                     struct zb_error *err)
{
    const int m = p->microbatches;
    int (*off)[4] = zb_xmalloc((size_t)p->pp * sizeof(*off));
    int *slot = zb_xmalloc((size_t)p->pp * m * VBLOCK_PASSES *
                           sizeof(*slot));
    int rc;

    if ((rc = block_offsets(p, offsets, off, err)) == 0) {
        for (int r = 0; r < p->pp; r++) {
            for (int j = 0; j < m; j++)
                for (int k = 0; k < 4; k++)
                    slot[((size_t)r * m + j) * VBLOCK_PASSES + k] =
                        VBLOCK_PERIOD * j + off[r][k];
            place_w(p, r, slot);
        }
        if (compact)
            zbi_vblock_compact(p, slot);
        for (int r = 0; r < p->pp; r++)
            build_rank(p, r, slot, s);
    }
    free(off);
    free(slot);
    return rc;
}
