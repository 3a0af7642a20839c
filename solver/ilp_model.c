/* ilp_model.c - the integer program of a prepared relation, through the
 * GLPK C API (docs/ilp.md has the formulation).
 *
 * Columns: a start time per pass, the objective C, a binary per free
 * pair. Rows: fixed arcs, two big-M rows per free pair (M from the start
 * windows), memory after each F, and for every pass with open pairs the
 * rank's work before it and after it (what lifts the LP bound to the
 * closed-form head bound). The triplets are checked and loaded at once:
 * GLPK aborts on a bad or repeated index. */
#include <glpk.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include "ilp.h"
#include "zbsched/pass.h"
#include "zbsched/xalloc.h"

struct ilp_model {
    glp_prob *P;
    const struct ilp_rel *rel;
    int col_c, col_y;       /* x of pass a is column a + 1 */
};

struct rows {
    int *ia, *ja;
    double *ar;
    int nz, cap;
    int *type;
    double *bnd;
    int nrows, rcap;
    const char **name;      /* row kind, for names */
};

/* y = 1 means pair.a before pair.b: the indicator that b runs before a
 * is y when b is pair.a, else 1 - y (coefficient and constant). */
static void before_term(const struct ilp_rel *rel, int k, int b, double *c,
                        double *k0)
{
    if (rel->free[k].a == b) {
        *c = 1;
        *k0 = 0;
    } else {
        *c = -1;
        *k0 = 1;
    }
}

static void row_begin(struct rows *rw, int type, double bnd, const char *nm)
{
    zb_xgrow((void **)&rw->type, &rw->rcap, rw->nrows + 1, sizeof(int));
    rw->bnd = zb_xrealloc(rw->bnd, (size_t)rw->rcap * sizeof(double));
    rw->name = zb_xrealloc(rw->name, (size_t)rw->rcap * sizeof(char *));
    rw->type[rw->nrows] = type;
    rw->bnd[rw->nrows] = bnd;
    rw->name[rw->nrows++] = nm;
}

static void row_add(struct rows *rw, int col, double v)
{
    int cap = rw->cap;
    if (fabs(v) < 1e-12)
        return;
    zb_xgrow((void **)&rw->ia, &cap, rw->nz + 2, sizeof(int));
    cap = rw->cap;
    zb_xgrow((void **)&rw->ja, &cap, rw->nz + 2, sizeof(int));
    zb_xgrow((void **)&rw->ar, &rw->cap, rw->nz + 2, sizeof(double));
    /* GLPK arrays are 1-based; row_begin() already counted this row, so
     * nrows is its 1-based index. */
    rw->nz++;
    rw->ia[rw->nz] = rw->nrows;
    rw->ja[rw->nz] = col;
    rw->ar[rw->nz] = v;
}

static void arc_rows(const struct ilp_rel *rel, struct rows *rw)
{
    const struct ilp_inst *in = rel->in;

    for (int b = 0; b < in->n; b++)
        for (int k = 0; k < in->npred[b]; k++) {
            row_begin(rw, GLP_LO, in->pred[b][k].w, "dep");
            row_add(rw, b + 1, 1);
            row_add(rw, in->pred[b][k].from + 1, -1);
        }
    for (int e = 0; e < rel->nextra; e++) {
        int a = rel->extra[e].a, b = rel->extra[e].b;
        row_begin(rw, GLP_LO, in->dur[a], "fix");
        row_add(rw, b + 1, 1);
        row_add(rw, a + 1, -1);
    }
}

static void pair_rows(const struct ilp_model *md, struct rows *rw)
{
    const struct ilp_rel *rel = md->rel;
    const double *d = rel->in->dur;

    for (int k = 0; k < rel->nfree; k++) {
        int a = rel->free[k].a, b = rel->free[k].b, y = md->col_y + k;
        double m1 = fmax(0, rel->ub[a] + d[a] - rel->lb[b]);
        double m2 = fmax(0, rel->ub[b] + d[b] - rel->lb[a]);
        row_begin(rw, GLP_LO, d[a] - m1, "ab");
        row_add(rw, b + 1, 1);
        row_add(rw, a + 1, -1);
        row_add(rw, y, -m1);
        row_begin(rw, GLP_LO, d[b], "ba");
        row_add(rw, a + 1, 1);
        row_add(rw, b + 1, -1);
        row_add(rw, y, m2);
    }
}

/* For pass a: coefficient of every free pair with a, and the constant,
 * of sum over same-rank b of w(b) * [b before a] (or after, when after). */
static int open_terms(const struct ilp_model *md, int a, const double *w,
                      bool after, int *col, double *coef, double *k0)
{
    const struct ilp_rel *rel = md->rel;
    const struct ilp_inst *in = rel->in;
    const int r = in->rank[a], nr = in->rank_n[r];
    const int *row = rel->pair[r] + (size_t)in->slot[a] * nr;
    int n = 0;

    *k0 = 0;
    for (int i = 0; i < nr; i++) {
        int b = in->rank_pass[r][i], v = row[i];
        if (b == a)
            continue;
        /* v says how a stands to b: ILP_AFTER = b before a. */
        if (v == (after ? ILP_AFTER : ILP_BEFORE))
            continue;
        if (v == (after ? ILP_BEFORE : ILP_AFTER)) {
            *k0 += w[b];
            continue;
        }
        double c, c0;
        before_term(rel, v, b, &c, &c0);
        if (after) {    /* [b after a] = 1 - [b before a] */
            c = -c;
            c0 = 1 - c0;
        }
        col[n] = md->col_y + v;
        coef[n++] = w[b] * c;
        *k0 += w[b] * c0;
    }
    return n;
}

static void rank_rows(const struct ilp_model *md, struct rows *rw)
{
    const struct ilp_rel *rel = md->rel;
    const struct ilp_inst *in = rel->in;
    const struct zb_profile *p = in->p;
    const int n = in->n;
    int *col = zb_xmalloc((size_t)n * sizeof(int));
    double *coef = zb_xmalloc((size_t)n * sizeof(double)), k0;

    for (int a = 0; a < n; a++) {
        const int r = in->rank[a];
        double limit = p->mem_limit[r];
        int k;

        /* Memory right after F(a): its own allocation plus every change
         * before it. */
        if (in->delta[a] > 0 && isfinite(limit) &&
            (k = open_terms(md, a, in->delta, false, col, coef, &k0)) > 0) {
            double rhs = limit - in->delta[a] - k0, most = 0;
            for (int i = 0; i < k; i++)
                most += fmax(0, coef[i]);
            if (most > rhs + 1e-9) {
                row_begin(rw, GLP_UP, rhs, "mem");
                for (int i = 0; i < k; i++)
                    row_add(rw, col[i], coef[i]);
            }
        }
        /* Start after the rank's work before a. */
        if ((k = open_terms(md, a, in->dur, false, col, coef, &k0)) > 0) {
            row_begin(rw, GLP_LO, in->start[r] + k0, "head");
            row_add(rw, a + 1, 1);
            for (int i = 0; i < k; i++)
                row_add(rw, col[i], -coef[i]);
        }
        /* The objective covers a, and the rank's work after a. */
        k = open_terms(md, a, in->dur, true, col, coef, &k0);
        bool last = true;
        for (int i = 0; i < in->rank_n[r] && last; i++)
            last = !ilp_rel_before(rel, a, in->rank_pass[r][i]);
        if (k > 0 || last) {
            row_begin(rw, GLP_LO, in->dur[a] + k0 - in->off[r], "tail");
            row_add(rw, md->col_c, 1);
            row_add(rw, a + 1, -1);
            for (int i = 0; i < k; i++)
                row_add(rw, col[i], -coef[i]);
        }
    }
    free(col);
    free(coef);
}

/* The step (in->step): each stage's REDUCE_GRAD follows its last W,
 * W(s, m-1), and a rank's reduces run one at a time in the order of those
 * Ws. One stream with release times ends at the latest, over its jobs,
 * of a job's release plus the work of it and of every job released
 * after it, so for each of the rank's last Ws a:
 *     C >= x_a + d_a + R_a + sum over the rank's other last Ws b of
 *          R_b [a before b]
 * which is exact for a fixed order; [a before b] is a constant or a
 * pair's binary. */
static void stream_rows(const struct ilp_model *md, struct rows *rw)
{
    const struct ilp_rel *rel = md->rel;
    const struct ilp_inst *in = rel->in;
    const struct zb_profile *p = in->p;
    int *last = zb_xmalloc((size_t)p->vpp * 2 * sizeof(int));
    int *col = last + p->vpp;
    double *coef = zb_xmalloc((size_t)p->vpp * sizeof(double));

    for (int r = 0; r < p->pp; r++) {
        const int nr = in->rank_n[r];
        for (int c = 0; c < p->vpp; c++)
            last[c] = (int)zb_pass_index(p, ZB_PASS_W,
                                         zb_profile_rank_stage(p, r, c),
                                         in->m - 1);
        for (int c = 0; c < p->vpp; c++) {
            int a = last[c], sa = a / in->m % in->S;
            double rhs = in->dur[a] + in->reduce[sa];
            const int *row = rel->pair[r] + (size_t)in->slot[a] * nr;
            int k = 0;
            for (int e = 0; e < p->vpp; e++) {
                int b = last[e], v;
                double rb = in->reduce[b / in->m % in->S], cy, c0;
                if (e == c)
                    continue;
                v = row[in->slot[b]];
                if (v == ILP_BEFORE) {
                    rhs += rb;
                    continue;
                }
                if (v == ILP_AFTER)
                    continue;
                /* [a before b] = 1 - [b before a] */
                before_term(rel, v, b, &cy, &c0);
                col[k] = md->col_y + v;
                coef[k++] = rb * cy;
                rhs += rb * (1 - c0);
            }
            row_begin(rw, GLP_LO, rhs, "step");
            row_add(rw, md->col_c, 1);
            row_add(rw, a + 1, -1);
            for (int i = 0; i < k; i++)
                row_add(rw, col[i], coef[i]);
        }
    }
    free(last);
    free(coef);
}

static void name_columns(const struct ilp_model *md)
{
    const struct ilp_rel *rel = md->rel;
    const struct ilp_inst *in = rel->in;
    static const char kind[] = "FBW";
    char buf[64];

    for (int a = 0; a < in->n; a++) {
        int k = a / (in->S * in->m);
        snprintf(buf, sizeof(buf), "x_%c_s%d_m%d", kind[k],
                 a / in->m % in->S, a % in->m);
        glp_set_col_name(md->P, a + 1, buf);
    }
    glp_set_col_name(md->P, md->col_c, "C");
    for (int k = 0; k < rel->nfree; k++) {
        int a = rel->free[k].a, b = rel->free[k].b;
        snprintf(buf, sizeof(buf), "y_%c%d_%d_%c%d_%d",
                 kind[a / (in->S * in->m)], a / in->m % in->S, a % in->m,
                 kind[b / (in->S * in->m)], b / in->m % in->S, b % in->m);
        glp_set_col_name(md->P, md->col_y + k, buf);
    }
}

struct ilp_model *zbi_ilp_model_build(const struct ilp_rel *rel, bool names)
{
    const struct ilp_inst *in = rel->in;
    struct ilp_model *md = zb_xcalloc(1, sizeof(*md));
    struct rows rw = { 0 };
    int ncols = in->n + 1 + rel->nfree;

    md->rel = rel;
    md->col_c = in->n + 1;
    md->col_y = in->n + 2;
    md->P = glp_create_prob();
    glp_set_obj_dir(md->P, GLP_MIN);
    glp_add_cols(md->P, ncols);
    for (int a = 0; a < in->n; a++) {
        /* A ZeRO-3 stage's first pass waits for its gather (in->gathered:
         * the earliest that can end; the prefetch rule may end it later,
         * so the model is a relaxation there, docs/ilp.md). */
        double lo = in->step && a < in->S * in->m && a % in->m == 0
                        ? fmax(rel->lb[a], in->gathered[a / in->m])
                        : rel->lb[a];
        double hi = fmax(lo, rel->ub[a]);
        glp_set_col_bnds(md->P, a + 1, hi > lo ? GLP_DB : GLP_FX, lo, hi);
    }
    glp_set_col_bnds(md->P, md->col_c,
                     rel->horizon > rel->obj_lb ? GLP_DB : GLP_FX,
                     rel->obj_lb, fmax(rel->obj_lb, rel->horizon));
    glp_set_obj_coef(md->P, md->col_c, 1);
    for (int k = 0; k < rel->nfree; k++)
        glp_set_col_kind(md->P, md->col_y + k, GLP_BV);

    arc_rows(rel, &rw);
    pair_rows(md, &rw);
    rank_rows(md, &rw);
    if (in->step)
        stream_rows(md, &rw);
    glp_add_rows(md->P, rw.nrows);
    for (int i = 0; i < rw.nrows; i++) {
        glp_set_row_bnds(md->P, i + 1, rw.type[i], rw.bnd[i], rw.bnd[i]);
        if (names) {
            char buf[32];
            snprintf(buf, sizeof(buf), "%s%d", rw.name[i], i + 1);
            glp_set_row_name(md->P, i + 1, buf);
        }
    }
    for (int i = 1; i <= rw.nz; i++)
        if (rw.ia[i] < 1 || rw.ia[i] > rw.nrows || rw.ja[i] < 1 ||
            rw.ja[i] > ncols)
            abort();    /* a bug here; GLPK would abort less clearly */
    glp_load_matrix(md->P, rw.nz, rw.ia, rw.ja, rw.ar);
    if (names)
        name_columns(md);
    free(rw.ia);
    free(rw.ja);
    free(rw.ar);
    free(rw.type);
    free(rw.bnd);
    free(rw.name);
    return md;
}

void zbi_ilp_model_free(struct ilp_model *md)
{
    if (!md)
        return;
    if (md->P)
        glp_delete_prob(md->P);
    free(md);
}

void zbi_ilp_model_lost(struct ilp_model *md)
{
    md->P = NULL;
}

struct glp_prob *zbi_ilp_model_prob(struct ilp_model *md)
{
    return md->P;
}

const struct ilp_rel *zbi_ilp_model_rel(const struct ilp_model *md)
{
    return md->rel;
}

int zbi_ilp_model_cols(const struct ilp_model *md)
{
    return md->col_y + md->rel->nfree - 1;
}

int zbi_ilp_model_col_c(const struct ilp_model *md)
{
    return md->col_c;
}

int zbi_ilp_model_col_y(const struct ilp_model *md)
{
    return md->col_y;
}

void zbi_ilp_model_point(const struct ilp_model *md, const struct ilp_order *o,
                         const struct ilp_eval *ev, double *x)
{
    const struct ilp_rel *rel = md->rel;
    const struct ilp_inst *in = rel->in;
    int *pos = zb_xmalloc((size_t)in->n * sizeof(int));

    for (int r = 0; r < in->p->pp; r++)
        for (int i = 0; i < in->rank_n[r]; i++)
            pos[o->seq[r][i]] = i;
    for (int a = 0; a < in->n; a++)
        x[a + 1] = ev->t[a];
    x[md->col_c] = ev->obj;
    for (int k = 0; k < rel->nfree; k++)
        x[md->col_y + k] = pos[rel->free[k].a] < pos[rel->free[k].b];
    free(pos);
}

struct ranked {
    int before;             /* same-rank passes that precede it */
    double t;
    int a;
};

static int ranked_cmp(const void *x, const void *y)
{
    const struct ranked *a = x, *b = y;
    if (a->before != b->before)
        return a->before - b->before;
    if (a->t != b->t)
        return a->t < b->t ? -1 : 1;
    return a->a - b->a;
}

void zbi_ilp_model_order(const struct ilp_model *md, const double *x,
                         struct ilp_order *o)
{
    const struct ilp_rel *rel = md->rel;
    const struct ilp_inst *in = rel->in;

    for (int r = 0; r < in->p->pp; r++) {
        const int nr = in->rank_n[r];
        struct ranked *rk = zb_xmalloc((size_t)nr * sizeof(*rk));
        for (int i = 0; i < nr; i++) {
            int a = in->rank_pass[r][i];
            rk[i] = (struct ranked){ 0, x[a + 1], a };
            for (int j = 0; j < nr; j++) {
                int v = rel->pair[r][(size_t)i * nr + j], b;
                if (j == i)
                    continue;
                b = in->rank_pass[r][j];
                if (v == ILP_AFTER)
                    rk[i].before++;
                else if (v >= 0)
                    rk[i].before += (x[md->col_y + v] > 0.5) ==
                                    (rel->free[v].a == b);
            }
        }
        /* A consistent solution ranks the passes 0..nr-1 (the count of
         * predecessors is the position); times break ties otherwise. */
        qsort(rk, (size_t)nr, sizeof(*rk), ranked_cmp);
        for (int i = 0; i < nr; i++)
            o->seq[r][i] = rk[i].a;
        free(rk);
    }
}

int zbi_ilp_model_write_lp(struct ilp_model *md, const char *path, double unit)
{
    char name[96];

    snprintf(name, sizeof(name), "zbsched: times in units of %.17g, memory "
             "in units of M_B", unit);
    glp_set_prob_name(md->P, name);
    return glp_write_lp(md->P, NULL, path) == 0 ? 0 : ZB_EIO;
}
