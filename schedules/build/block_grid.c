/* block_grid.c - the building-block search's unit grid (block_grid.h):
 * repeating a block, squeezing, cutting, labelling W passes, checking,
 * and reading the order out. */
#include <stdlib.h>
#include <string.h>
#include "build/block_grid.h"
#include "zbsched/xalloc.h"

/* Kinds that run from rank 0 toward rank p-1 (the input comes from the
 * rank before). */
static bool goes_down(int k)
{
    return k == BG_F0 || k == BG_B1;
}

void zbi_bg_init(struct bgrid *g, int pp, int m_max)
{
    *g = (struct bgrid){ .pp = pp, .m_max = m_max };
    g->pos = zb_xmalloc((size_t)pp * BG_KINDS * m_max * sizeof(*g->pos));
    g->in_rank = zb_xmalloc((size_t)pp * BG_KINDS * sizeof(*g->in_rank));
    g->in_kind = zb_xmalloc((size_t)pp * BG_KINDS * sizeof(*g->in_kind));
    for (int r = 0; r < pp; r++)
        for (int k = 0; k < BG_KINDS; k++) {
            int *rank = &g->in_rank[r * BG_KINDS + k];
            int *kind = &g->in_kind[r * BG_KINDS + k];
            int from = goes_down(k) ? r - 1 : r + 1;
            *rank = r;
            *kind = k == BG_W1                 ? BG_B1
                    : k == BG_W0               ? BG_B0
                    : k == BG_B1 && r == 0     ? BG_F1
                    : k == BG_F1 && r == pp - 1 ? BG_F0
                    : k == BG_B0 && r == pp - 1 ? BG_B1
                                                : -1;
            if (*kind < 0 && from >= 0 && from < pp) {
                *rank = from;
                *kind = k;
            }
        }
}

void zbi_bg_release(struct bgrid *g)
{
    free(g->cell);
    free(g->pos);
    free(g->in_rank);
    free(g->in_kind);
    *g = (struct bgrid){ 0 };
}

void zbi_bg_reserve(struct bgrid *g, int len)
{
    if (len > g->cap) {
        int cap = len + len / 2 + BG_PERIOD;
        signed char *cell = zb_xmalloc((size_t)g->pp * cap);
        memset(cell, BG_EMPTY, (size_t)g->pp * cap);
        for (int r = 0; r < g->pp; r++)
            if (g->len > 0)
                memcpy(&cell[(size_t)r * cap], bg_cell(g, r, 0),
                       (size_t)g->len);
        free(g->cell);
        g->cell = cell;
        g->cap = cap;
    }
    if (len > g->len)
        g->len = len;
}

/* Empty every row and set its length. */
static void clear(struct bgrid *g, int len)
{
    g->len = 0;
    zbi_bg_reserve(g, len);
    memset(g->cell, BG_EMPTY, (size_t)g->pp * g->cap);
    g->len = len;
}

/* Slot of row r's j-th pass of kind k (scratch table). */
static int *pos_at(const struct bgrid *g, int r, int k, int j)
{
    return &g->pos[((size_t)r * BG_KINDS + k) * g->m_max + j];
}

/* The walk of zbi_bg_repeat(): kinds in the order their first passes are
 * fixed, and whether they go down the ranks (else up). */
static const int walk_kinds[4] = { BG_F0, BG_F1, BG_B1, BG_B0 };
static const bool walk_down[4] = { true, false, true, false };

void zbi_bg_first_slots(const int (*block)[BG_KINDS], int pp,
                        int (*first)[BG_KINDS])
{
    int at = BG_PERIOD;

    for (int w = 0; w < 4; w++) {
        int k = walk_kinds[w];
        for (int i = 0; i < pp; i++) {
            int r = walk_down[w] ? i : pp - 1 - i, wk;
            while ((at - block[r][k]) % BG_PERIOD != 0)
                at++;
            first[r][k] = at++;
            if (k != BG_B1 && k != BG_B0)
                continue;
            /* Its W's first pass: the first of that kind from here. */
            wk = k == BG_B1 ? BG_W1 : BG_W0;
            first[r][wk] = at;
            while ((first[r][wk] - block[r][wk]) % BG_PERIOD != 0)
                first[r][wk]++;
        }
    }
}

void zbi_bg_repeat(struct bgrid *g, const int (*first)[BG_KINDS], int m)
{
    /* The walk moves at most a period per rank and kind past the first
     * period, then m periods follow. */
    g->m = m;
    clear(g, BG_PERIOD * (4 * g->pp + m + 1));
    for (int r = 0; r < g->pp; r++)
        for (int k = 0; k < BG_KINDS; k++)
            for (int j = 0; j < m; j++)
                *bg_cell(g, r, first[r][k] + BG_PERIOD * j) = (signed char)k;
}

/* Passes of kind k (first slot `first`, one a period) started by slot
 * t, of m. */
static int started(int first, int m, int t)
{
    int n = t < first ? 0 : (t - first) / BG_PERIOD + 1;

    return n < m ? n : m;
}

int zbi_bg_repeat_peak(const int (*first)[BG_KINDS], int pp, int m)
{
    int peak = 0;

    /* Once every kind of a row has started, its count repeats every
     * period until a forward kind ends, and falls after (its W kinds end
     * later): the peak is at a forward before the end of that period. */
    for (int r = 0; r < pp; r++) {
        int end = 0;
        for (int k = 0; k < BG_KINDS; k++)
            if (first[r][k] + BG_PERIOD > end)
                end = first[r][k] + BG_PERIOD;
        for (int f = BG_F0; f <= BG_F1; f++)
            for (int j = 0; j < m && first[r][f] + BG_PERIOD * j < end;
                 j++) {
                int t = first[r][f] + BG_PERIOD * j, live = 0;
                for (int k = 0; k < BG_KINDS; k++)
                    live += (bg_is_f(k) - bg_is_w(k)) *
                            started(first[r][k], m, t);
                if (live > peak)
                    peak = live;
            }
    }
    return peak;
}

int zbi_bg_peak(const struct bgrid *g, int r)
{
    int live = 0, peak = 0;

    for (int t = 0; t < g->len; t++) {
        int k = *bg_cell(g, r, t);
        live += bg_is_f(k) - bg_is_w(k);
        if (live > peak)
            peak = live;
    }
    return peak;
}

int zbi_bg_peak_all(const struct bgrid *g)
{
    int peak = 0;

    for (int r = 0; r < g->pp; r++) {
        int own = zbi_bg_peak(g, r);
        if (own > peak)
            peak = own;
    }
    return peak;
}

bool zbi_bg_walk(const struct bgrid *g, bool w_free,
                 void (*visit)(void *ctx, int r, int k, int j), void *ctx)
{
    const int p = g->pp;
    int *cnt = zb_xcalloc((size_t)p * BG_KINDS, sizeof(*cnt));
    int *at = zb_xcalloc((size_t)p, sizeof(*at));
    int left = p;
    bool moved = true, ok = true;

    for (int sweep = 0; left > 0 && moved && ok; sweep++) {
        moved = false;
        left = 0;
        for (int i = 0; i < p && ok; i++) {
            int r = sweep % 2 ? p - 1 - i : i;
            for (; at[r] < g->len; at[r]++) {
                int k = *bg_cell(g, r, at[r]), j, in;
                if (k == BG_EMPTY)
                    continue;
                j = cnt[r * BG_KINDS + k];
                in = g->in_kind[r * BG_KINDS + k];
                if (j >= g->m) {
                    ok = false;
                    break;
                }
                if (in >= 0 && !(w_free && bg_is_w(k)) &&
                    cnt[g->in_rank[r * BG_KINDS + k] * BG_KINDS + in] <= j)
                    break;
                visit(ctx, r, k, j);
                cnt[r * BG_KINDS + k] = j + 1;
                moved = true;
            }
            left += at[r] < g->len;
        }
    }
    free(cnt);
    free(at);
    return ok && left == 0;
}

/* The squeeze's walk: each pass's new slot (the scratch table), each
 * row's count of each kind and next free slot, the grid's new length. */
struct squeeze {
    struct bgrid *g;
    int *cnt, *next, len;
};

static void squeeze_pass(void *ctx, int r, int k, int j)
{
    struct squeeze *q = ctx;
    const struct bgrid *g = q->g;
    int start = q->next[r], in = g->in_kind[r * BG_KINDS + k];

    /* A W's slot follows only its row's order (w_free). */
    if (in >= 0 && !bg_is_w(k)) {
        int at = *pos_at(g, g->in_rank[r * BG_KINDS + k], in, j) + 1;
        if (at > start)
            start = at;
    }
    *pos_at(g, r, k, j) = start;
    q->cnt[r * BG_KINDS + k] = j + 1;
    q->next[r] = start + 1;
    if (start + 1 > q->len)
        q->len = start + 1;
}

bool zbi_bg_squeeze(struct bgrid *g)
{
    struct squeeze q = { g,
                         zb_xcalloc((size_t)g->pp * BG_KINDS, sizeof(int)),
                         zb_xcalloc((size_t)g->pp, sizeof(int)), 0 };
    bool ok = zbi_bg_walk(g, true, squeeze_pass, &q);

    if (ok) {
        clear(g, q.len);
        for (int r = 0; r < g->pp; r++)
            for (int k = 0; k < BG_KINDS; k++)
                for (int j = 0; j < q.cnt[r * BG_KINDS + k]; j++)
                    *bg_cell(g, r, *pos_at(g, r, k, j)) = (signed char)k;
    }
    free(q.cnt);
    free(q.next);
    return ok;
}

void zbi_bg_keep_first(struct bgrid *g, int m)
{
    for (int r = 0; r < g->pp; r++) {
        int cnt[BG_KINDS] = { 0 };
        for (int t = 0; t < g->len; t++) {
            signed char *c = bg_cell(g, r, t);
            if (*c != BG_EMPTY && cnt[*c]++ >= m)
                *c = BG_EMPTY;
        }
    }
    g->m = m;
}

bool zbi_bg_relabel_w(struct bgrid *g)
{
    int *fifo = zb_xmalloc((size_t)2 * g->m * sizeof(*fifo));
    bool ok = true;

    for (int r = 0; r < g->pp && ok; r++) {
        int head = 0, tail = 0;
        for (int t = 0; t < g->len; t++) {
            signed char *c = bg_cell(g, r, t);
            if (*c == BG_B1 || *c == BG_B0) {
                if (tail == 2 * g->m) {
                    ok = false;
                    break;
                }
                fifo[tail++] = *c == BG_B1 ? BG_W1 : BG_W0;
            } else if (bg_is_w(*c)) {
                if (head == tail) {
                    ok = false;
                    break;
                }
                *c = (signed char)fifo[head++];
            }
        }
    }
    free(fifo);
    return ok;
}

/* The slot of the input of row r's j-th pass of kind k (the scratch
 * table), or -1 where it has none. */
static int input_slot(const struct bgrid *g, int r, int k, int j)
{
    int in = g->in_kind[r * BG_KINDS + k];

    return in >= 0 ? *pos_at(g, g->in_rank[r * BG_KINDS + k], in, j) : -1;
}

bool zbi_bg_valid(const struct bgrid *g)
{
    for (int r = 0; r < g->pp; r++) {
        int cnt[BG_KINDS] = { 0 };
        for (int t = 0; t < g->len; t++) {
            int k = *bg_cell(g, r, t);
            if (k == BG_EMPTY)
                continue;
            if (cnt[k] >= g->m)
                return false;
            *pos_at(g, r, k, cnt[k]++) = t;
        }
        for (int k = 0; k < BG_KINDS; k++)
            if (cnt[k] != g->m)
                return false;
    }
    for (int r = 0; r < g->pp; r++)
        for (int k = 0; k < BG_KINDS; k++)
            for (int j = 0; j < g->m; j++)
                if (input_slot(g, r, k, j) >= *pos_at(g, r, k, j))
                    return false;
    return true;
}

void zbi_bg_to_order(const struct bgrid *g, const struct zb_profile *p,
                     struct zb_schedule *s)
{
    static const enum zb_op_kind ops[BG_KINDS] = {
        ZB_OP_F, ZB_OP_F, ZB_OP_B, ZB_OP_B, ZB_OP_W, ZB_OP_W };
    static const int chunks[BG_KINDS] = { 0, 1, 1, 0, 1, 0 };

    for (int r = 0; r < g->pp; r++) {
        int cnt[BG_KINDS] = { 0 };
        for (int t = 0; t < g->len; t++) {
            int k = *bg_cell(g, r, t);
            if (k != BG_EMPTY)
                zb_schedule_push(s, r, ops[k],
                                 zb_profile_rank_stage(p, r, chunks[k]),
                                 cnt[k]++);
        }
    }
}
