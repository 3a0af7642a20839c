/* block_phases.c - the building-block search's reorder phases
 * (block_grid.h): the warm-up and the cool-down rebuilt, spare memory
 * spent on W passes, and free slots filled greedily (the Zero Bubble
 * repository's v_auto_schedule, read and written anew). */
#include <stdlib.h>
#include "build/block_grid.h"
#include "zbsched/xalloc.h"

static int min_int(int a, int b)
{
    return a < b ? a : b;
}

/* Put kind k into row r's slot t, growing the row; false where the slot
 * holds a pass already (the rebuilt phase would run into the rest). */
static bool put(struct bgrid *g, int r, int t, int k)
{
    if (t < 0)
        return false;
    if (t >= g->len)
        zbi_bg_reserve(g, t + 1);
    if (*bg_cell(g, r, t) != BG_EMPTY)
        return false;
    *bg_cell(g, r, t) = (signed char)k;
    return true;
}

/* The next pass of kind k (u[k] placed so far) into row r's slot t
 * where fewer than `upto` are placed; *ok turns false on a collision. */
static void place_next(struct bgrid *g, int r, int t, int k, int *u,
                       int upto, bool *ok)
{
    if (u[k] < upto) {
        *ok = *ok && put(g, r, t, k);
        u[k]++;
    }
}

/* Rank r's warm-up: n[k] passes of each kind came before its first
 * chunk-0 B (all cleared); f0 and f1 of the forwards go before its first
 * chunk-1 B. */
static bool rebuild_warmup(struct bgrid *g, int r, const int *n, int f0,
                           int f1)
{
    int u[BG_KINDS] = { 0 }, t = r;
    bool ok = true;

    /* Chunk-0 forwards alone while the first ones travel down. */
    for (int i = 0; i < 2 * (g->pp - 1 - r); i++)
        place_next(g, r, t++, BG_F0, u, min_int(f0, n[BG_F0]), &ok);
    /* Then both chunks' forwards in turn. */
    for (int i = 0; i < r + 1; i++) {
        place_next(g, r, t++, BG_F0, u, min_int(f0, n[BG_F0]), &ok);
        place_next(g, r, t++, BG_F1, u, min_int(f1, n[BG_F1]), &ok);
    }
    /* Then B, W and a forward (chunk 1's first) until all are back. */
    while (ok && (u[BG_F0] < n[BG_F0] || u[BG_F1] < n[BG_F1] ||
                  u[BG_B1] < n[BG_B1] || u[BG_W1] < n[BG_W1])) {
        place_next(g, r, t++, BG_B1, u, n[BG_B1], &ok);
        place_next(g, r, t++, BG_W1, u, n[BG_W1], &ok);
        if (u[BG_F1] < n[BG_F1]) {
            /* A chunk-1 F needs its chunk-0 F first. */
            ok = ok && u[BG_F1] < u[BG_F0];
            place_next(g, r, t, BG_F1, u, n[BG_F1], &ok);
        } else {
            place_next(g, r, t, BG_F0, u, n[BG_F0], &ok);
        }
        t++;
    }
    return ok;
}

bool zbi_bg_warmup(struct bgrid *g)
{
    const int p = g->pp;
    int peak = min_int(zbi_bg_peak_all(g), 2 * p);

    for (int r = 0; r < p; r++) {
        int n[BG_KINDS] = { 0 };
        int f1 = min_int(min_int(r + 1, peak / 2), g->m);
        int f0 = min_int(peak - f1, g->m);
        for (int t = 0; t < g->len; t++) {
            signed char *c = bg_cell(g, r, t);
            if (*c == BG_B0)
                break;
            /* Only forwards, chunk-1 B and their W come before. */
            if (*c == BG_W0)
                return false;
            if (*c != BG_EMPTY)
                n[*c]++;
            *c = BG_EMPTY;
        }
        if (!rebuild_warmup(g, r, n, f0, f1))
            return false;
    }
    return true;
}

void zbi_bg_release_w(struct bgrid *g, int peak)
{
    const int len = g->len;
    int least = peak, *own = zb_xmalloc((size_t)g->pp * sizeof(*own));

    for (int r = 0; r < g->pp; r++) {
        own[r] = zbi_bg_peak(g, r);
        least = min_int(least, own[r]);
    }
    zbi_bg_reserve(g, len + (peak - least));
    for (int r = 0; r < g->pp; r++) {
        int moved = 0;
        for (int t = 0; t < len && own[r] + moved < peak; t++) {
            signed char *c = bg_cell(g, r, t);
            if (bg_is_w(*c)) {
                *bg_cell(g, r, len + moved++) = *c;
                *c = BG_EMPTY;
            }
        }
    }
    free(own);
}

/* Cool-down step one on row r: its last B passes (chunk 1: at most r + 1
 * and max_b; chunk 0: max_bb) and enough tail W passes to cover them
 * and the peak come out; the B passes go back at a stride of two from
 * rank 0's last chunk-1 F (last_f1), chunk 0 later down the ranks,
 * chunk 1 earlier. Sets *own_last_f1 to the row's last chunk-1 F. */
static bool reset_tail(struct bgrid *g, int r, int peak, int max_b,
                       int max_bb, int last_f1, int *own_last_f1)
{
    int n[BG_KINDS] = { 0 };

    *own_last_f1 = -1;
    for (int t = g->len - 1; t >= 0; t--) {
        signed char *c = bg_cell(g, r, t);
        if (*c == BG_F1 && *own_last_f1 < 0)
            *own_last_f1 = t;
        if (*c == BG_B1 && n[BG_B1] < r + 1 && n[BG_B1] < max_b) {
            *c = BG_EMPTY;
            n[BG_B1]++;
        } else if (*c == BG_B0 && n[BG_B0] < max_bb) {
            *c = BG_EMPTY;
            n[BG_B0]++;
        }
    }
    for (int t = g->len - 1; t >= 0; t--) {
        signed char *c = bg_cell(g, r, t);
        if (n[BG_W1] >= n[BG_B1] && n[BG_W0] >= n[BG_B0] &&
            n[BG_W1] + n[BG_W0] >= peak)
            break;
        if (bg_is_w(*c)) {
            n[*c]++;
            *c = BG_EMPTY;
        }
    }
    if (r == 0)
        last_f1 = *own_last_f1;
    for (int i = 0; i < n[BG_B0]; i++)
        if (!put(g, r, last_f1 - r + 2 * g->pp - 2 * i, BG_B0))
            return false;
    for (int i = 0; i < n[BG_B1]; i++)
        if (!put(g, r, last_f1 + 1 + r - 2 * i, BG_B1))
            return false;
    return true;
}

/* Cool-down step two on row r: every B without its W gets one in the
 * free slots after the row's last W (chunk 1's first), the rest after
 * the grid's end. */
static void refill_w(struct bgrid *g, int r)
{
    int last = -1, owed[2] = { 0, 0 }, end = g->len;

    for (int t = 0; t < end; t++)
        if (bg_is_w(*bg_cell(g, r, t)))
            last = t;
    for (int t = 0; t < end; t++) {
        signed char *c = bg_cell(g, r, t);
        if (*c == BG_B1 || *c == BG_B0)
            owed[*c == BG_B0]++;
        else if (bg_is_w(*c))
            owed[*c == BG_W0]--;
        else if (*c == BG_EMPTY && t > last)
            for (int w = 0; w < 2; w++)
                if (owed[w] > 0) {
                    *c = w ? BG_W0 : BG_W1;
                    owed[w]--;
                    break;
                }
    }
    zbi_bg_reserve(g, end + owed[0] + owed[1]);
    for (int w = 0; w < 2; w++)
        for (; owed[w] > 0; owed[w]--)
            *bg_cell(g, r, end++) = w ? BG_W0 : BG_W1;
}

bool zbi_bg_cooldown(struct bgrid *g)
{
    const int p = g->pp, peak = zbi_bg_peak_all(g);
    const int max_bb = min_int((peak + 1) / 2, g->m);
    const int max_b = min_int(peak - max_bb, g->m);
    int last_f1 = -1;

    if (peak > 2 * p)
        return false;
    for (int r = 0; r < p; r++) {
        int own;
        if (!reset_tail(g, r, peak, max_b, max_bb, last_f1, &own))
            return false;
        if (r == 0)
            last_f1 = own;
    }
    /* A row's slots past its own end are free: filling them in turn is
     * appending. */
    for (int r = 0; r < p; r++)
        refill_w(g, r);
    return zbi_bg_squeeze(g);
}

/* The greedy walk's state: per row and kind, the last slot holding one
 * at the start and the count placed so far; the slots placed so far of
 * each pass (pos[(r * BG_KINDS + k) * m + j], -1: not yet); each row's
 * live activations; the grid's peak, which no move may pass. */
struct greedy {
    int *last, *cnt, *pos, *live;
    int peak;
};

/* Whether row r's next pass of kind k (its j-th) may run in slot t of
 * the walk: its input done before t. Rows are walked in rank order
 * within a slot, so the row after r has placed nothing in t yet. */
static bool greedy_ready(const struct bgrid *g, const struct greedy *w,
                         int r, int k, int j, int t)
{
    const int in = g->in_kind[r * BG_KINDS + k];
    const int from = g->in_rank[r * BG_KINDS + k];
    int at;

    if (in < 0)
        return true;
    if (from == r)
        return w->cnt[r * BG_KINDS + in] > j;
    at = w->pos[((size_t)from * BG_KINDS + in) * g->m + j];
    return at >= 0 && at < t;
}

/* The free slot t of row r takes the first later pass of a kind (the
 * first of each kind is the only candidate: passes of a kind keep their
 * order) that is ready there and, for an F, keeps the row within the
 * peak over every slot it passes. Returns its kind, or BG_EMPTY. */
static int fill_slot(struct bgrid *g, const struct greedy *w, int r, int t)
{
    int seen = 0, delta = 0, high = 0;

    for (int x = 0; x < BG_KINDS; x++)
        if (w->last[r * BG_KINDS + x] <= t)
            seen |= 1 << x;
    for (int u = t + 1; u < g->len && seen != (1 << BG_KINDS) - 1; u++) {
        int c = *bg_cell(g, r, u), before = high;
        delta += bg_is_f(c) - bg_is_w(c);
        if (delta > high)
            high = delta;
        if (c == BG_EMPTY || (seen & (1 << c)))
            continue;
        seen |= 1 << c;
        if ((bg_is_f(c) && w->live[r] + before >= w->peak) ||
            !greedy_ready(g, w, r, c, w->cnt[r * BG_KINDS + c], t))
            continue;
        *bg_cell(g, r, t) = (signed char)c;
        *bg_cell(g, r, u) = BG_EMPTY;
        return c;
    }
    return BG_EMPTY;
}

void zbi_bg_reorder_greedy(struct bgrid *g)
{
    const int p = g->pp;
    const size_t passes = (size_t)p * BG_KINDS * g->m;
    struct greedy w = {
        zb_xmalloc((size_t)p * BG_KINDS * sizeof(int)),
        zb_xcalloc((size_t)p * BG_KINDS, sizeof(int)),
        zb_xmalloc(passes * sizeof(int)),
        zb_xcalloc((size_t)p, sizeof(int)),
        zbi_bg_peak_all(g) };

    for (size_t i = 0; i < passes; i++)
        w.pos[i] = -1;
    for (int i = 0; i < p * BG_KINDS; i++)
        w.last[i] = -1;
    for (int r = 0; r < p; r++)
        for (int t = 0; t < g->len; t++)
            if (*bg_cell(g, r, t) != BG_EMPTY)
                w.last[r * BG_KINDS + *bg_cell(g, r, t)] = t;
    for (int t = 0; t < g->len; t++)
        for (int r = 0; r < p; r++) {
            int k = *bg_cell(g, r, t);
            if (k == BG_EMPTY && (k = fill_slot(g, &w, r, t)) == BG_EMPTY)
                continue;
            w.pos[((size_t)r * BG_KINDS + k) * g->m +
                  w.cnt[r * BG_KINDS + k]++] = t;
            w.live[r] += bg_is_f(k) - bg_is_w(k);
        }
    free(w.last);
    free(w.cnt);
    free(w.pos);
    free(w.live);
}
