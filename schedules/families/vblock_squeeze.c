/* vblock_squeeze.c - the controllable-memory paper's own finish of the
 * building block (Qi et al., NeurIPS 2024; the Zero Bubble repository's
 * V-Half/V-Min scheduler): two rounds of squeeze and reorder on the unit
 * grid under the block's own memory, then W passes split per chunk.
 *
 * Round one puts the W passes into the block's free slots (one kind, in B
 * order) and walks every pass in slot order: outside the steady state
 * (from rank 0's first chunk-0 B to the last chunk-0 F) a pass moves to
 * the first free slot of its rank after its inputs, where the rank's
 * live activations (F +1, W -1) stay within the block's peak over all
 * ranks; the grid is then re-timed as soon as possible at unit times
 * (the squeeze). Round two drops the W passes, lets them fill free slots
 * implicitly, moves the cool-down passes the same way and squeezes
 * again. Last, each B's W goes into a free slot, chunk 1's first. The
 * result depends on p and m only; the caller times it. */
#include <stdlib.h>
#include "families/families.h"
#include "zbsched/xalloc.h"

/* Pass kinds of a rank's grid: F chunk 0, F chunk 1, B chunk 1, B chunk
 * 0, then W (one kind in the rounds, W chunk 1 and W chunk 0 at the
 * end). */
enum { SQ_F0, SQ_F1, SQ_B1, SQ_B0, SQ_W, SQ_W0, SQ_KINDS };

/* pos[(r * SQ_KINDS + k) * 2m + j]: slot of rank r's j-th pass of kind
 * k, for the first `kinds` kinds; m passes of each kind but SQ_W, which
 * has 2m while it is the only W kind (split false). */
struct grid {
    int pp, m, kinds;
    int *pos;
};

static int *at(const struct grid *g, int r, int k, int j)
{
    return &g->pos[((size_t)r * SQ_KINDS + k) * 2 * g->m + j];
}

static int count(const struct grid *g, int k)
{
    return k == SQ_W && g->kinds == SQ_W + 1 ? 2 * g->m : g->m;
}

static int grid_len(const struct grid *g)
{
    int len = 0;

    for (int r = 0; r < g->pp; r++)
        for (int k = 0; k < g->kinds; k++)
            for (int j = 0; j < count(g, k); j++)
                if (*at(g, r, k, j) + 1 > len)
                    len = *at(g, r, k, j) + 1;
    return len;
}

/* Rank r's slot table: ev[t] = kind * 2m + j of the pass in slot t, or
 * -1; len slots. */
static void rank_events(const struct grid *g, int r, int *ev, int len)
{
    for (int t = 0; t < len; t++)
        ev[t] = -1;
    for (int k = 0; k < g->kinds; k++)
        for (int j = 0; j < count(g, k); j++)
            ev[*at(g, r, k, j)] = k * 2 * g->m + j;
}

/* Put W passes into free slots of each rank, in the order their B passes
 * come: one kind (split false, kind SQ_W in B order) or one per chunk
 * (chunk 1's first where both wait). After the last pass the rest
 * follow one per slot. */
static void put_w(struct grid *g, bool split)
{
    int len = grid_len(g);
    int *ev = zb_xmalloc((size_t)len * sizeof(*ev));

    for (int r = 0; r < g->pp; r++) {
        int wait[2] = { 0, 0 }, done[2] = { 0, 0 };
        int t = 0;

        rank_events(g, r, ev, len);
        for (; t < len; t++) {
            int k = ev[t] < 0 ? -1 : ev[t] / (2 * g->m);
            if (k == SQ_B1 || k == SQ_B0)
                wait[split && k == SQ_B0]++;
            else if (k < 0)
                for (int w = 0; w < 2; w++)
                    if (wait[w] > 0) {
                        *at(g, r, SQ_W + w, done[w]++) = t;
                        wait[w]--;
                        break;
                    }
        }
        for (int w = 0; w < 2; w++)
            for (; wait[w] > 0; wait[w]--)
                *at(g, r, SQ_W + w, done[w]++) = t++;
    }
    g->kinds = split ? SQ_KINDS : SQ_W + 1;
    free(ev);
}

/* The stage order's inputs of rank r's j-th pass of kind k on the unit
 * grid: the latest slot among them, or -1. W (one kind) waits for the
 * j-th B of its rank in slot order. */
static int input_slot(const struct grid *g, int r, int k, int j)
{
    int in = -1;

    if ((k == SQ_F0 || k == SQ_B1) && r > 0)
        in = *at(g, r - 1, k, j);
    if ((k == SQ_F1 || k == SQ_B0) && r + 1 < g->pp && *at(g, r + 1, k, j) > in)
        in = *at(g, r + 1, k, j);
    if (k > SQ_F0 && k < SQ_W && *at(g, r, k - 1, j) > in)
        in = *at(g, r, k - 1, j);
    if (k == SQ_W) {
        int a = 0, b = 0, nth = 0;
        for (int n = 0; n <= j; n++) {
            bool one = b >= g->m ||
                       (a < g->m && *at(g, r, SQ_B1, a) < *at(g, r, SQ_B0, b));
            nth = one ? *at(g, r, SQ_B1, a++) : *at(g, r, SQ_B0, b++);
        }
        if (nth > in)
            in = nth;
    }
    if (j > 0 && *at(g, r, k, j - 1) > in)
        in = *at(g, r, k, j - 1);
    return in;
}

/* Live activations of one rank slot by slot: F +1, W -1 where W passes
 * are placed (explicit), else each free slot retires one waiting B's W.
 * cur[t], wait[t]: the count and the waiting W passes after slot t. */
struct live {
    int *ev, *cur, *wait, len;
    bool explicit_w;
    int m;
};

/* One slot's step from (c, w) with the slot holding e. */
static void live_step(const struct live *lv, int e, int *c, int *w)
{
    int k = e < 0 ? -1 : e / (2 * lv->m);

    if (k == SQ_F0 || k == SQ_F1)
        (*c)++;
    else if (k == SQ_B1 || k == SQ_B0)
        (*w)++;
    else if (k == SQ_W)
        (*c)--;
    else if (!lv->explicit_w && *w > 0) {
        (*c)--;
        (*w)--;
    }
}

static void live_from(struct live *lv, int t)
{
    int c = t > 0 ? lv->cur[t - 1] : 0, w = t > 0 ? lv->wait[t - 1] : 0;

    for (; t < lv->len; t++) {
        live_step(lv, lv->ev[t], &c, &w);
        lv->cur[t] = c;
        lv->wait[t] = w;
    }
}

static int live_max(const struct live *lv)
{
    int most = 0;

    for (int t = 0; t < lv->len; t++)
        if (lv->cur[t] > most)
            most = lv->cur[t];
    return most;
}

/* Whether moving the pass in slot a to free slot t < a keeps every slot
 * within cap (every slot is within it before). Before t nothing changes;
 * from the first slot after a where the state is the old one, nothing
 * does either. */
static bool live_room(const struct live *lv, int t, int a, int cap)
{
    int c = t > 0 ? lv->cur[t - 1] : 0, w = t > 0 ? lv->wait[t - 1] : 0;

    for (int u = t; u < lv->len; u++) {
        if (u > a && c == lv->cur[u - 1] && w == lv->wait[u - 1])
            return true;
        live_step(lv, u == t ? lv->ev[a] : u == a ? -1 : lv->ev[u], &c, &w);
        if (c > cap)
            return false;
    }
    return true;
}

/* A pass of the walk: its rank, kind, index and slot at the start. */
struct pass {
    int r, k, j, slot;
};

static int pass_cmp(const void *x, const void *y)
{
    const struct pass *a = x, *b = y;

    if (a->slot != b->slot)
        return a->slot < b->slot ? -1 : 1;
    if (a->r != b->r)
        return a->r < b->r ? -1 : 1;
    if (a->k != b->k)
        return a->k < b->k ? -1 : 1;
    return (a->j > b->j) - (a->j < b->j);
}

/* Every pass of g in slot order (then rank, kind): n of them. */
static struct pass *passes(const struct grid *g, size_t *n)
{
    struct pass *ps = zb_xmalloc((size_t)g->pp * (g->kinds + 1) * g->m *
                                 sizeof(*ps));
    size_t c = 0;

    for (int r = 0; r < g->pp; r++)
        for (int k = 0; k < g->kinds; k++)
            for (int j = 0; j < count(g, k); j++)
                ps[c++] = (struct pass){ r, k, j, *at(g, r, k, j) };
    qsort(ps, c, sizeof(*ps), pass_cmp);
    *n = c;
    return ps;
}

/* Each pass as soon as possible at unit times, comm 0, in its rank's slot
 * order (the squeeze): its new slot is its start. */
static void squeeze(struct grid *g)
{
    size_t n;
    struct pass *ps = passes(g, &n);
    int *free_at = zb_xcalloc((size_t)g->pp, sizeof(*free_at));

    for (size_t i = 0; i < n; i++) {
        const struct pass *q = &ps[i];
        int start = free_at[q->r], in = -1;
        /* Inputs are earlier in the walk, so they hold their new start. */
        if ((q->k == SQ_F0 || q->k == SQ_B1) && q->r > 0)
            in = *at(g, q->r - 1, q->k, q->j);
        if ((q->k == SQ_F1 || q->k == SQ_B0) && q->r + 1 < g->pp &&
            *at(g, q->r + 1, q->k, q->j) > in)
            in = *at(g, q->r + 1, q->k, q->j);
        if (q->k > SQ_F0 && q->k < SQ_W && *at(g, q->r, q->k - 1, q->j) > in)
            in = *at(g, q->r, q->k - 1, q->j);
        if (q->j > 0 && *at(g, q->r, q->k, q->j - 1) > in)
            in = *at(g, q->r, q->k, q->j - 1);
        if (in + 1 > start)
            start = in + 1;
        *at(g, q->r, q->k, q->j) = start;
        free_at[q->r] = start + 1;
    }
    free(ps);
    free(free_at);
}

/* One round: move the passes outside the steady state (and, without W
 * passes, those of the warm-up stay too) into earlier free slots within
 * the grid's own peak of live activations, then squeeze. */
static void reorder(struct grid *g)
{
    const bool with_w = g->kinds > SQ_W;
    const int len = grid_len(g);
    size_t n;
    struct pass *ps = passes(g, &n);
    struct live *lv = zb_xmalloc((size_t)g->pp * sizeof(*lv));
    int cap = 0, phase = 0;

    for (int r = 0; r < g->pp; r++) {
        lv[r] = (struct live){ zb_xmalloc((size_t)len * sizeof(int)),
                               zb_xmalloc((size_t)len * sizeof(int)),
                               zb_xmalloc((size_t)len * sizeof(int)),
                               len, with_w, g->m };
        rank_events(g, r, lv[r].ev, len);
        live_from(&lv[r], 0);
        if (live_max(&lv[r]) > cap)
            cap = live_max(&lv[r]);
    }
    for (size_t i = 0; i < n; i++) {
        const struct pass *q = &ps[i];
        struct live *l = &lv[q->r];
        int a = q->slot;

        if (q->k == SQ_B0 && q->r == 0 && phase == 0)
            phase = 1;
        if (phase == 1) {
            if (q->k == SQ_F0 && q->j == g->m - 1)
                phase = 2;
            continue;
        }
        if (phase == 0 && !with_w)
            continue;
        for (int t = input_slot(g, q->r, q->k, q->j) + 1; t < a; t++)
            if (l->ev[t] < 0 && live_room(l, t, a, cap)) {
                l->ev[t] = l->ev[a];
                l->ev[a] = -1;
                *at(g, q->r, q->k, q->j) = t;
                live_from(l, t);
                break;
            }
    }
    for (int r = 0; r < g->pp; r++) {
        free(lv[r].ev);
        free(lv[r].cur);
        free(lv[r].wait);
    }
    free(lv);
    free(ps);
    if (!with_w)
        put_w(g, false);
    squeeze(g);
}

int zbi_vblock_squeezed(const struct zb_profile *p,
                        void (*offsets)(int pp, int rank, int off[4]),
                        struct zb_schedule *s, struct zb_error *err)
{
    static const enum zb_op_kind kinds[SQ_KINDS] = {
        ZB_OP_F, ZB_OP_F, ZB_OP_B, ZB_OP_B, ZB_OP_W, ZB_OP_W };
    static const int chunks[SQ_KINDS] = { 0, 1, 1, 0, 1, 0 };
    struct grid g = { p->pp, p->microbatches, 4,
                      zb_xcalloc((size_t)p->pp * SQ_KINDS * 2 *
                                 p->microbatches, sizeof(int)) };
    size_t n;
    struct pass *ps;

    for (int r = 0; r < p->pp; r++) {
        int off[4];
        offsets(p->pp, r, off);
        for (int k = 0; k < 4; k++)
            for (int j = 0; j < k; j++)
                if ((off[k] - off[j]) % 6 == 0) {
                    free(g.pos);
                    return zb_error_set(err, ZB_EUNSUPPORTED,
                                        "building block collides on rank "
                                        "%d (offsets %d and %d)", r, off[j],
                                        off[k]);
                }
        for (int k = 0; k < 4; k++)
            for (int j = 0; j < g.m; j++)
                *at(&g, r, k, j) = off[k] + 6 * j;
    }
    put_w(&g, false);
    reorder(&g);
    g.kinds = 4;
    reorder(&g);
    g.kinds = 4;
    put_w(&g, true);
    ps = passes(&g, &n);
    for (size_t i = 0; i < n; i++)
        zb_schedule_push(s, ps[i].r, kinds[ps[i].k],
                         zb_profile_rank_stage(p, ps[i].r, chunks[ps[i].k]),
                         ps[i].j);
    free(ps);
    free(g.pos);
    return 0;
}
