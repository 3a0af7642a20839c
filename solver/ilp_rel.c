/* ilp_rel.c - the fixed-order relation between same-rank passes, and the
 * start windows derived from it: what shrinks the integer program.
 *
 * A pair of passes on one rank needs a binary only if no fixed order
 * (precedence, memory, the horizon, a fixed part of the incumbent) decides
 * it. Windows come from longest paths plus the rank's own work: a pass
 * starts after all the same-rank passes that must precede it, and every
 * pass must fit under the horizon (the incumbent's objective). Pairs whose
 * windows exclude one order get fixed, which moves the windows again;
 * this repeats until nothing changes (constraint propagation). */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "ilp.h"
#include "zbsched/pass.h"
#include "zbsched/xalloc.h"

struct span {
    double key, d;
};

void zbi_ilp_rel_init(struct ilp_rel *rel, const struct ilp_inst *in)
{
    const int n = in->n, pp = in->p->pp;

    *rel = (struct ilp_rel){ .in = in, .words = (n + 63) / 64 };
    rel->reach = zb_xcalloc((size_t)n * rel->words, sizeof(uint64_t));
    rel->back = zb_xcalloc((size_t)n * rel->words, sizeof(uint64_t));
    rel->topo = zb_xmalloc((size_t)n * sizeof(int));
    rel->lb = zb_xmalloc((size_t)n * sizeof(double));
    rel->ub = zb_xmalloc((size_t)n * sizeof(double));
    rel->pair = zb_xcalloc((size_t)pp, sizeof(int *));
}

void zbi_ilp_rel_release(struct ilp_rel *rel)
{
    if (!rel->reach)
        return;
    for (int r = 0; r < rel->in->p->pp; r++)
        free(rel->pair[r]);
    free(rel->pair);
    free(rel->reach);
    free(rel->back);
    free(rel->extra);
    free(rel->topo);
    free(rel->lb);
    free(rel->ub);
    free(rel->free);
    memset(rel, 0, sizeof(*rel));
}

void zbi_ilp_rel_add(struct ilp_rel *rel, int a, int b)
{
    zb_xgrow((void **)&rel->extra, &rel->cap_extra, rel->nextra + 1,
          sizeof(*rel->extra));
    rel->extra[rel->nextra++] = (struct ilp_pair){ a, b };
}

void zbi_ilp_rel_fix_memory(struct ilp_rel *rel)
{
    const struct ilp_inst *in = rel->in;
    const struct zb_profile *p = in->p;

    /* With one stage per rank the passes that free memory before F(j) are
     * the first B's and W's of that stage, in order; with several chunks
     * which stage frees is open and the memory rows decide. */
    if (p->vpp != 1)
        return;
    for (int s = 0; s < in->S; s++) {
        double limit = p->mem_limit[zb_profile_stage_rank(p, s)];
        const double m_b = zb_profile_m_b(p, s), fw = zb_profile_m_w(p, s);
        const double fb = m_b - fw;
        if (!isfinite(limit))
            continue;
        for (int j = 1; j < in->m; j++) {
            double need = (j + 1) * m_b - limit;
            int f = (int)zb_pass_index(p, ZB_PASS_F, s, j);
            if (need <= 1e-9 * m_b)
                continue;
            /* nB B's and nW <= nB W's free nB*fb + nW*fw >= need. */
            int nb = (int)ceil(need / m_b - 1e-9);
            if (nb > j)
                nb = j;     /* infeasible; the rows will say so */
            zbi_ilp_rel_add(rel,
                            (int)zb_pass_index(p, ZB_PASS_B, s, nb - 1), f);
            if (fw > 0) {
                /* With fb < 0 (M_W > M_B) B's free nothing alone: each W
                 * with its B frees M_B. */
                int nw = fb >= 0 ? (int)ceil((need - j * fb) / fw - 1e-9)
                                 : (int)ceil(need / m_b - 1e-9);
                if (nw > j)
                    nw = j;
                if (nw > 0)
                    zbi_ilp_rel_add(rel, (int)zb_pass_index(p, ZB_PASS_W, s,
                                                        nw - 1), f);
            }
        }
    }
}

void zbi_ilp_rel_fix_order(struct ilp_rel *rel, const struct ilp_order *o,
                           const bool *open)
{
    const struct ilp_inst *in = rel->in;

    for (int r = 0; r < in->p->pp; r++) {
        const int *seq = o->seq[r];
        int prev = -1;      /* last fixed pass so far */
        for (int i = 0; i < in->rank_n[r]; i++) {
            int a = seq[i];
            if (!open[a]) {
                /* The open passes since prev float between prev and a. */
                for (int k = i - 1; k >= 0 && open[seq[k]]; k--)
                    zbi_ilp_rel_add(rel, seq[k], a);
                if (prev >= 0)
                    zbi_ilp_rel_add(rel, prev, a);
                prev = a;
            } else if (prev >= 0) {
                zbi_ilp_rel_add(rel, prev, a);
            }
        }
    }
}

/* Successor and predecessor lists of intrinsic and extra arcs (CSR). */
struct graph {
    int *sbeg, *succ, *pbeg, *pred;
};

static void graph_build(const struct ilp_rel *rel, struct graph *g)
{
    const struct ilp_inst *in = rel->in;
    const int n = in->n;
    int m = rel->nextra;

    for (int b = 0; b < n; b++)
        m += in->npred[b];
    g->sbeg = zb_xcalloc((size_t)n + 1, sizeof(int));
    g->pbeg = zb_xcalloc((size_t)n + 1, sizeof(int));
    g->succ = zb_xmalloc((size_t)m * sizeof(int));
    g->pred = zb_xmalloc((size_t)m * sizeof(int));
    for (int b = 0; b < n; b++)
        for (int k = 0; k < in->npred[b]; k++) {
            g->sbeg[in->pred[b][k].from + 1]++;
            g->pbeg[b + 1]++;
        }
    for (int e = 0; e < rel->nextra; e++) {
        g->sbeg[rel->extra[e].a + 1]++;
        g->pbeg[rel->extra[e].b + 1]++;
    }
    for (int a = 0; a < n; a++) {
        g->sbeg[a + 1] += g->sbeg[a];
        g->pbeg[a + 1] += g->pbeg[a];
    }
    int *sfill = zb_xmalloc((size_t)n * sizeof(int));
    int *pfill = zb_xmalloc((size_t)n * sizeof(int));
    memcpy(sfill, g->sbeg, (size_t)n * sizeof(int));
    memcpy(pfill, g->pbeg, (size_t)n * sizeof(int));
    for (int b = 0; b < n; b++)
        for (int k = 0; k < in->npred[b]; k++) {
            int a = in->pred[b][k].from;
            g->succ[sfill[a]++] = b;
            g->pred[pfill[b]++] = a;
        }
    for (int e = 0; e < rel->nextra; e++) {
        g->succ[sfill[rel->extra[e].a]++] = rel->extra[e].b;
        g->pred[pfill[rel->extra[e].b]++] = rel->extra[e].a;
    }
    free(sfill);
    free(pfill);
}

static void graph_release(struct graph *g)
{
    free(g->sbeg);
    free(g->succ);
    free(g->pbeg);
    free(g->pred);
}

static void set_bit(uint64_t *row, int b)
{
    row[b / 64] |= (uint64_t)1 << (b % 64);
}

/* Topological order and transitive closure; false on a cycle. */
static bool close_rel(struct ilp_rel *rel, const struct graph *g)
{
    const int n = rel->in->n, W = rel->words;
    int *indeg = zb_xcalloc((size_t)n, sizeof(int));
    int head = 0, tail = 0;

    for (int a = 0; a < n; a++)
        indeg[a] = g->pbeg[a + 1] - g->pbeg[a];
    for (int a = 0; a < n; a++)
        if (!indeg[a])
            rel->topo[tail++] = a;
    while (head < tail) {
        int a = rel->topo[head++];
        for (int k = g->sbeg[a]; k < g->sbeg[a + 1]; k++)
            if (--indeg[g->succ[k]] == 0)
                rel->topo[tail++] = g->succ[k];
    }
    free(indeg);
    if (tail < n)
        return false;
    for (int i = n - 1; i >= 0; i--) {
        int a = rel->topo[i];
        uint64_t *ra = rel->reach + (size_t)a * W;
        memset(ra, 0, (size_t)W * sizeof(uint64_t));
        for (int k = g->sbeg[a]; k < g->sbeg[a + 1]; k++) {
            int b = g->succ[k];
            const uint64_t *rb = rel->reach + (size_t)b * W;
            for (int w = 0; w < W; w++)
                ra[w] |= rb[w];
            set_bit(ra, b);
        }
    }
    for (int i = 0; i < n; i++) {
        int b = rel->topo[i];
        uint64_t *bb = rel->back + (size_t)b * W;
        memset(bb, 0, (size_t)W * sizeof(uint64_t));
        for (int k = g->pbeg[b]; k < g->pbeg[b + 1]; k++) {
            int a = g->pred[k];
            const uint64_t *ba = rel->back + (size_t)a * W;
            for (int w = 0; w < W; w++)
                bb[w] |= ba[w];
            set_bit(bb, a);
        }
    }
    return true;
}

static int span_desc(const void *x, const void *y)
{
    const struct span *a = x, *b = y;
    return a->key < b->key ? 1 : a->key > b->key ? -1 : 0;
}

static int span_asc(const void *x, const void *y)
{
    return span_desc(y, x);
}

static bool bit(const uint64_t *row, int b)
{
    return row[b / 64] >> (b % 64) & 1;
}

/* Earliest start of a from its fixed same-rank predecessors: all those
 * released at or after some time t run between t and a. */
static double rank_head(const struct ilp_rel *rel, int a, struct span *buf)
{
    const struct ilp_inst *in = rel->in;
    const int r = in->rank[a];
    const uint64_t *ba = rel->back + (size_t)a * rel->words;
    double best = -INFINITY, sum = 0;
    int k = 0;

    for (int i = 0; i < in->rank_n[r]; i++) {
        int b = in->rank_pass[r][i];
        if (bit(ba, b))
            buf[k++] = (struct span){ rel->lb[b], in->dur[b] };
    }
    qsort(buf, (size_t)k, sizeof(*buf), span_desc);
    for (int i = 0; i < k; i++) {
        sum += buf[i].d;
        best = fmax(best, buf[i].key + sum);
    }
    return best;
}

/* Latest start of a from its fixed same-rank successors: all those due
 * by some time t run between a's end and t. */
static double rank_tail(const struct ilp_rel *rel, int a, struct span *buf)
{
    const struct ilp_inst *in = rel->in;
    const int r = in->rank[a];
    const uint64_t *ra = rel->reach + (size_t)a * rel->words;
    double best = INFINITY, sum = 0;
    int k = 0;

    for (int i = 0; i < in->rank_n[r]; i++) {
        int b = in->rank_pass[r][i];
        if (bit(ra, b))
            buf[k++] = (struct span){ rel->ub[b] + in->dur[b], in->dur[b] };
    }
    qsort(buf, (size_t)k, sizeof(*buf), span_asc);
    for (int i = 0; i < k; i++) {
        sum += buf[i].d;
        best = fmin(best, buf[i].key - sum);
    }
    return best - in->dur[a];
}

/* Start windows under the horizon; false if one is empty. */
static bool windows(struct ilp_rel *rel, const struct graph *g, double tol)
{
    const struct ilp_inst *in = rel->in;
    const int n = in->n;
    struct span *buf = zb_xmalloc((size_t)n * sizeof(*buf));
    bool ok = true;

    for (int i = 0; i < n; i++) {
        int a = rel->topo[i];
        double t = 0;
        for (int k = 0; k < in->npred[a]; k++)
            t = fmax(t, rel->lb[in->pred[a][k].from] + in->pred[a][k].w);
        for (int k = g->pbeg[a]; k < g->pbeg[a + 1]; k++)
            t = fmax(t, rel->lb[g->pred[k]] + in->dur[g->pred[k]]);
        rel->lb[a] = fmax(t, rank_head(rel, a, buf));
    }
    for (int i = n - 1; i >= 0; i--) {
        int a = rel->topo[i], r = in->rank[a];
        double t = rel->horizon + in->off[r] - in->dur[a];
        /* Successors over intrinsic arcs carry comm; extra arcs are
         * same-rank and covered by rank_tail. */
        for (int k = g->sbeg[a]; k < g->sbeg[a + 1]; k++) {
            int b = g->succ[k];
            double w = in->dur[a] + ilp_lag(in, a, b);
            t = fmin(t, rel->ub[b] - w);
        }
        if (a == in->first[r])
            t = fmin(t, in->start[r]);
        rel->ub[a] = fmin(t, rank_tail(rel, a, buf));
        if (rel->ub[a] < rel->lb[a] - tol)
            ok = false;
    }
    free(buf);
    return ok;
}

/* Fix pairs whose windows allow one order only; -1 if neither fits. */
static int fix_by_windows(struct ilp_rel *rel, double tol)
{
    const struct ilp_inst *in = rel->in;
    int added = 0;

    for (int r = 0; r < in->p->pp; r++)
        for (int i = 0; i < in->rank_n[r]; i++) {
            int a = in->rank_pass[r][i];
            for (int j = i + 1; j < in->rank_n[r]; j++) {
                int b = in->rank_pass[r][j];
                if (ilp_rel_before(rel, a, b) || ilp_rel_before(rel, b, a))
                    continue;
                bool ab = rel->lb[a] + in->dur[a] <= rel->ub[b] + tol;
                bool ba = rel->lb[b] + in->dur[b] <= rel->ub[a] + tol;
                if (!ab && !ba)
                    return -1;
                if (!ab)
                    zbi_ilp_rel_add(rel, b, a);
                else if (!ba)
                    zbi_ilp_rel_add(rel, a, b);
                else
                    continue;
                added++;
            }
        }
    return added;
}

static int pair_cmp(const void *x, const void *y)
{
    const struct ilp_pair *a = x, *b = y;
    return a->a != b->a ? a->a - b->a : a->b - b->b;
}

/* Drop extra arcs implied through another pass, and duplicates (reach
 * stays the same). */
static void reduce_extra(struct ilp_rel *rel)
{
    const int W = rel->words;
    int k = 0;

    if (rel->nextra > 1)
        qsort(rel->extra, (size_t)rel->nextra, sizeof(*rel->extra),
              pair_cmp);
    for (int e = 0; e < rel->nextra; e++) {
        const uint64_t *ra = rel->reach + (size_t)rel->extra[e].a * W;
        const uint64_t *bb = rel->back + (size_t)rel->extra[e].b * W;
        bool implied = k > 0 && !pair_cmp(&rel->extra[k - 1],
                                          &rel->extra[e]);
        for (int w = 0; w < W && !implied; w++)
            implied = (ra[w] & bb[w]) != 0;
        if (!implied)
            rel->extra[k++] = rel->extra[e];
    }
    rel->nextra = k;
}

static void list_pairs(struct ilp_rel *rel)
{
    const struct ilp_inst *in = rel->in;
    int cap = 0;

    rel->nfree = 0;
    for (int r = 0; r < in->p->pp; r++) {
        const int nr = in->rank_n[r];
        free(rel->pair[r]);
        rel->pair[r] = zb_xmalloc((size_t)nr * nr * sizeof(int));
        for (int i = 0; i < nr; i++) {
            int a = in->rank_pass[r][i];
            rel->pair[r][i * nr + i] = ILP_BEFORE;
            for (int j = i + 1; j < nr; j++) {
                int b = in->rank_pass[r][j];
                int v;
                if (ilp_rel_before(rel, a, b)) {
                    v = ILP_BEFORE;
                    rel->pair[r][j * nr + i] = ILP_AFTER;
                } else if (ilp_rel_before(rel, b, a)) {
                    v = ILP_AFTER;
                    rel->pair[r][j * nr + i] = ILP_BEFORE;
                } else {
                    zb_xgrow((void **)&rel->free, &cap, rel->nfree + 1,
                          sizeof(*rel->free));
                    rel->free[rel->nfree] = (struct ilp_pair){ a, b };
                    v = rel->nfree++;
                    rel->pair[r][j * nr + i] = v;
                }
                rel->pair[r][i * nr + j] = v;
            }
        }
    }
}

bool zbi_ilp_rel_prepare(struct ilp_rel *rel, double horizon)
{
    double tol = ILP_TOL * fmax(1, fabs(horizon));
    bool ok = false;

    rel->horizon = horizon + tol;
    for (;;) {
        struct graph g;
        int added;
        if (rel->cancel && rel->cancel(rel->cancel_arg)) {
            rel->cancelled = true;
            return false;
        }
        graph_build(rel, &g);
        if (!close_rel(rel, &g) || !windows(rel, &g, tol)) {
            graph_release(&g);
            break;
        }
        graph_release(&g);
        if ((added = fix_by_windows(rel, tol)) < 0)
            break;
        if (added == 0) {
            ok = true;
            break;
        }
    }
    if (!ok)
        return false;
    reduce_extra(rel);
    list_pairs(rel);
    return true;
}
