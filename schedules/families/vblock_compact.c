/* vblock_compact.c - the last step of the controllable-memory
 * construction (Qi et al., NeurIPS 2024): the building block repeated as
 * it is leaves passes waiting in the warm-up and the cool-down while
 * earlier slots of their rank stand free; the paper moves them into those
 * slots without raising the peak memory. Here every pass, in slot order,
 * moves to the first free slot of its rank at or after the slot its input
 * is ready in (unit times, comm 0, as the grid assumes), never later than
 * its own; an F moves only where its rank keeps within the block's own
 * peak of live chunk activations (F to its W). The caller times the
 * result with the real durations and keeps it only where it gains and no
 * rank's simulated peak grows (v_half.c). */
#include <stdlib.h>
#include "families/families.h"
#include "zbsched/xalloc.h"

#define NP VBLOCK_PASSES

/* Index of stage st's F (or B) of microbatch j in the slot table. */
static int pass_index(const struct zb_profile *p, int st, int j, bool f)
{
    int r = zb_profile_stage_rank(p, st), c = zb_profile_stage_chunk(p, st);

    return (r * p->microbatches + j) * NP + (f ? c : 3 - c);
}

/* The pass index i waits for, or -1: an F the F of the stage before, a B
 * the B of the stage after (the last stage's B its F), a W its B. */
static int input_of(const struct zb_profile *p, int i)
{
    static const int chunks[NP] = { 0, 1, 1, 0, 1, 0 };
    int k = i % NP, j = (i / NP) % p->microbatches,
        r = i / NP / p->microbatches;
    int st = zb_profile_rank_stage(p, r, chunks[k]);

    if (k >= 4)
        return i - 2;
    if (k < 2)
        return st > 0 ? pass_index(p, st - 1, j, true) : -1;
    return st < zb_profile_stages(p) - 1 ? pass_index(p, st + 1, j, false)
                                         : pass_index(p, st, j, true);
}

/* Per rank, how many chunk activations are live at each slot (from an F
 * to its chunk's W); the block's own most is the cap an F's move may not
 * pass. */
struct live {
    int *count;         /* pp rows of len */
    int *cap;           /* pp */
    int len;
};

static void live_add(struct live *lv, int r, int from, int to, int d)
{
    for (int t = from; t < to; t++)
        lv->count[(size_t)r * lv->len + t] += d;
}

static bool live_room(const struct live *lv, int r, int from, int to)
{
    for (int t = from; t < to; t++)
        if (lv->count[(size_t)r * lv->len + t] + 1 > lv->cap[r])
            return false;
    return true;
}

/* Move pass i (of rank r, input ready at `ready`) into the first free slot
 * that allows it; at is r's row of the slot table's inverse (-1: free). */
static void move_pass(int i, int r, int ready, int *slot, int *at,
                      struct live *lv)
{
    const int k = i % NP;

    for (int t = ready; t < slot[i]; t++) {
        if (at[t] >= 0 || (k < 2 && !live_room(lv, r, t, slot[i])))
            continue;
        /* An earlier F holds its activations longer; an earlier W frees
         * them sooner. */
        if (k < 2)
            live_add(lv, r, t, slot[i], 1);
        else if (k >= 4)
            live_add(lv, r, t, slot[i], -1);
        at[slot[i]] = -1;
        at[t] = i;
        slot[i] = t;
        return;
    }
}

void zbi_vblock_compact(const struct zb_profile *p, int *slot)
{
    const int m = p->microbatches, n = p->pp * m * NP;
    bool *done = zb_xcalloc((size_t)n, sizeof(*done));
    int len = 0, *at;
    struct live lv;

    for (int i = 0; i < n; i++)
        if (slot[i] + 1 > len)
            len = slot[i] + 1;
    at = zb_xmalloc((size_t)p->pp * len * sizeof(*at));
    for (int i = 0; i < p->pp * len; i++)
        at[i] = -1;
    lv = (struct live){ zb_xcalloc((size_t)p->pp * len, sizeof(int)),
                        zb_xcalloc((size_t)p->pp, sizeof(int)), len };
    for (int i = 0; i < n; i++) {
        int r = i / NP / m;
        at[(size_t)r * len + slot[i]] = i;
        /* F k (0, 1) lives until the W of its chunk, k 5 - k. */
        if (i % NP < 2)
            live_add(&lv, r, slot[i], slot[i - i % NP + 5 - i % NP], 1);
    }
    for (int i = 0; i < p->pp * len; i++)
        if (lv.count[i] > lv.cap[i / len])
            lv.cap[i / len] = lv.count[i];
    /* In slot order; a pass moves only to a slot already passed, so each
     * is seen once. */
    for (int t = 0; t < len; t++)
        for (int r = 0; r < p->pp; r++) {
            int i = at[(size_t)r * len + t], in;
            if (i < 0)
                continue;
            in = input_of(p, i);
            done[i] = true;
            /* An input in a later slot (the block waits for it): stays. */
            if (in < 0 || done[in])
                move_pass(i, r, in < 0 ? 0 : slot[in] + 1, slot,
                          &at[(size_t)r * len], &lv);
        }
    free(done);
    free(at);
    free(lv.count);
    free(lv.cap);
}
