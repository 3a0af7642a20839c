/* ilp_band.c - window search for instances too large for the relation
 * (zb_ilp_searchable() false: its bitsets alone would take hundreds of
 * megabytes). A window is a time band of the best order on
 * a few adjacent ranks; on each of them the passes starting inside the
 * band are a contiguous piece of the rank's list. Only those passes enter
 * a small integer program; everything else stays at its time in the best
 * order, which gives every window pass a release (its outside inputs and
 * the rank's pass before the piece) and a deadline (its outside consumers
 * and the rank's pass after the piece).
 *
 * Any solution is therefore a timing of the new order in which no pass
 * outside the window moves, and the simulator's as-soon-as-possible
 * timing is at most that one pass by pass: a window never makes any pass
 * end later, so the cost never grows. The model minimises the window's
 * sum of starts; the new order is kept when the simulator finds a lower
 * objective, or the same objective with a lower sum of pass ends
 * (ilp_shared's tie-break), so that slack gained off the critical path
 * is kept for later windows to use. Memory: each rank's level entering
 * its piece is fixed, and one row per F bounds the level after it. */
#include <glpk.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "ilp_workers.h"
#include "zbsched/xalloc.h"

/* Largest window, in passes: beyond it GLPK rarely finishes a window in
 * its time slice. */
#define BAND_MAX_PASSES 160

struct band {
    struct ilp_shared *sh;
    const struct ilp_inst *in;
    struct ilp_order cur;   /* the best order, as last fetched */
    struct ilp_eval ev;     /* its times */
    struct ilp_order next;  /* a candidate */
    double period;          /* longest F+B+W of a stage */
    double end;             /* the best order's last end */
    /* The window: its passes, each pass's index among them (-1: fixed),
     * and per rank the piece [lo, hi) of cur's list. */
    int *win, nwin;
    int *idx;
    int *lo, *hi;
    int r0, nr;
    /* The model's data per window pass. */
    double *rel, *dl;
    int *ycol;              /* nwin x nwin: c > 0: "i before j" is
                               column c; c < 0: it is 1 - column -c;
                               0: fixed, as `before` says */
    bool *before;           /* nwin x nwin: fixed order */
    double *x;              /* GLPK column values, 1-based */
    glp_prob *P;
    bool injected;
};

/* ---- the window -------------------------------------------------------- */

/* Mark the passes of ranks r0..r0+nr-1 starting in [t0, t0+len). */
static int mark(struct band *b, int r0, int nr, double t0, double len)
{
    const struct ilp_inst *in = b->in;

    for (int k = 0; k < b->nwin; k++)
        b->idx[b->win[k]] = -1;
    b->nwin = 0;
    b->r0 = r0;
    b->nr = nr;
    for (int r = r0; r < r0 + nr; r++) {
        const int *seq = b->cur.seq[r];
        int i = 0;
        while (i < in->rank_n[r] && b->ev.t[seq[i]] < t0)
            i++;
        b->lo[r] = i;
        while (i < in->rank_n[r] && b->ev.t[seq[i]] < t0 + len) {
            b->idx[seq[i]] = b->nwin;
            b->win[b->nwin++] = seq[i];
            i++;
        }
        b->hi[r] = i;
    }
    return b->nwin;
}

/* Releases and deadlines from the fixed passes around the window. */
static void limits(struct band *b)
{
    const struct ilp_inst *in = b->in;
    const double *t = b->ev.t;

    for (int k = 0; k < b->nwin; k++) {
        b->rel[k] = 0;
        b->dl[k] = INFINITY;
    }
    for (int r = b->r0; r < b->r0 + b->nr; r++) {
        const int *seq = b->cur.seq[r];
        const int last = seq[in->rank_n[r] - 1];
        if (b->lo[r] == b->hi[r])
            continue;
        for (int i = b->lo[r]; i < b->hi[r]; i++) {
            int k = b->idx[seq[i]];
            if (b->lo[r] > 0)
                b->rel[k] = t[seq[b->lo[r] - 1]] + in->dur[seq[b->lo[r] - 1]];
            /* The pass after the piece, or the rank's end: its span
             * must not grow either. */
            b->dl[k] = b->hi[r] < in->rank_n[r] ? t[seq[b->hi[r]]]
                                                : t[last] + in->dur[last];
        }
    }
    /* Arcs that cross the window's border, either way. */
    for (int c = 0; c < in->n; c++)
        for (int e = 0; e < in->npred[c]; e++) {
            int a = in->pred[c][e].from;
            double w = in->pred[c][e].w;
            if (b->idx[c] >= 0 && b->idx[a] < 0)
                b->rel[b->idx[c]] = fmax(b->rel[b->idx[c]], t[a] + w);
            else if (b->idx[a] >= 0 && b->idx[c] < 0)
                b->dl[b->idx[a]] = fmin(b->dl[b->idx[a]],
                                        t[c] - w + in->dur[a]);
        }
}

/* Fixed orders inside the window: paths of intrinsic arcs (closed
 * transitively, in the order of the best order's times, a topological
 * order), and pairs whose release and deadline allow one order only. */
static void fixed_orders(struct band *b)
{
    const struct ilp_inst *in = b->in;
    const int n = b->nwin;
    int *by_t = zb_xmalloc((size_t)n * sizeof(int));

    memset(b->before, 0, (size_t)n * n * sizeof(bool));
    /* win[] lists ranks one after the other; sort by start time. */
    for (int k = 0; k < n; k++)
        by_t[k] = k;
    for (int i = 1; i < n; i++)
        for (int j = i; j > 0 && b->ev.t[b->win[by_t[j]]] <
                                 b->ev.t[b->win[by_t[j - 1]]]; j--) {
            int s = by_t[j];
            by_t[j] = by_t[j - 1];
            by_t[j - 1] = s;
        }
    for (int i = 0; i < n; i++) {
        int kc = by_t[i], c = b->win[kc];
        for (int e = 0; e < in->npred[c]; e++) {
            int ka = b->idx[in->pred[c][e].from];
            if (ka < 0)
                continue;
            b->before[ka * n + kc] = true;
            for (int k = 0; k < n; k++)
                if (b->before[k * n + ka])
                    b->before[k * n + kc] = true;
        }
    }
    for (int i = 0; i < n; i++)
        for (int j = 0; j < n; j++) {
            int a = b->win[i], c = b->win[j];
            if (i == j || in->rank[a] != in->rank[c] ||
                b->before[i * n + j] || b->before[j * n + i])
                continue;
            /* c cannot run before a: a must run first. */
            if (b->rel[j] + in->dur[c] + in->dur[a] > b->dl[i] + 1e-9)
                b->before[i * n + j] = true;
        }
    free(by_t);
}

/* ---- the model --------------------------------------------------------- */

static void add_row(glp_prob *P, int nz, const int *ja, const double *ar,
                    int type, double bnd)
{
    int row = glp_add_rows(P, 1);
    glp_set_mat_row(P, row, nz, ja, ar);
    glp_set_row_bnds(P, row, type, bnd, bnd);
}

/* x_j - x_i >= d_i, unless y (column col) says otherwise: with sign +1
 * the row holds when y = 1, with -1 when y = 0; M from the windows. */
static void order_row(struct band *b, int i, int j, int col, int sign)
{
    const double d = b->in->dur[b->win[i]];
    int ja[4] = { 0, j + 1, i + 1, col };
    double ar[4] = { 0, 1, -1, 0 };

    if (!col) {
        add_row(b->P, 2, ja, ar, GLP_LO, d);
        return;
    }
    double M = b->dl[i] - b->rel[j];
    /* +1: x_j - x_i - M y >= d - M; -1: x_j - x_i + M y >= d. */
    ar[3] = -sign * M;
    add_row(b->P, 3, ja, ar, GLP_LO, sign > 0 ? d - M : d);
}

/* Memory after each F of a piece: the level entering the piece, the F
 * itself and every pass of the piece that runs before it. */
static void memory_rows(struct band *b)
{
    const struct ilp_inst *in = b->in;
    const int n = b->nwin;
    int *ja = zb_xmalloc((size_t)(n + 1) * sizeof(int));
    double *ar = zb_xmalloc((size_t)(n + 1) * sizeof(double));

    for (int r = b->r0; r < b->r0 + b->nr; r++) {
        const int *seq = b->cur.seq[r];
        double entry = 0, limit = in->p->mem_limit[r];
        if (!isfinite(limit))
            continue;
        for (int i = 0; i < b->lo[r]; i++)
            entry += in->delta[seq[i]];
        for (int s = b->lo[r]; s < b->hi[r]; s++) {
            int kf = b->idx[seq[s]], nz = 0;
            double level = entry + in->delta[seq[s]];
            if (in->delta[seq[s]] <= 0)
                continue;
            for (int u = b->lo[r]; u < b->hi[r]; u++) {
                int k = b->idx[seq[u]], col = b->ycol[k * n + kf];
                double dl = in->delta[seq[u]];
                if (k == kf)
                    continue;
                if (col > 0) {          /* y: k before kf */
                    ja[++nz] = col;
                    ar[nz] = dl;
                } else if (col < 0) {   /* 1 - y */
                    level += dl;
                    ja[++nz] = -col;
                    ar[nz] = -dl;
                } else if (b->before[k * n + kf]) {
                    level += dl;
                }
            }
            add_row(b->P, nz, ja, ar, GLP_UP, limit - level);
        }
    }
    free(ja);
    free(ar);
}

/* Columns: x per window pass (1..n), then y per open same-rank pair. */
static void build(struct band *b)
{
    const struct ilp_inst *in = b->in;
    const int n = b->nwin;

    b->P = glp_create_prob();
    glp_set_obj_dir(b->P, GLP_MIN);
    glp_add_cols(b->P, n);
    for (int k = 0; k < n; k++) {
        /* dl is finite (limits()); GLPK wants FX, not DB, for a pass
         * with no freedom (simplex would fail on it). */
        double ub = b->dl[k] - in->dur[b->win[k]];
        glp_set_col_bnds(b->P, k + 1, ub > b->rel[k] ? GLP_DB : GLP_FX,
                         b->rel[k], fmax(ub, b->rel[k]));
        glp_set_obj_coef(b->P, k + 1, 1);
    }
    memset(b->ycol, 0, (size_t)n * n * sizeof(int));
    for (int i = 0; i < n; i++)
        for (int j = i + 1; j < n; j++) {
            if (in->rank[b->win[i]] != in->rank[b->win[j]] ||
                b->before[i * n + j] || b->before[j * n + i])
                continue;
            int col = glp_add_cols(b->P, 1);
            glp_set_col_kind(b->P, col, GLP_BV);
            b->ycol[i * n + j] = col;       /* y = 1: i before j */
            b->ycol[j * n + i] = -col;
        }
    for (int i = 0; i < n; i++)
        for (int j = 0; j < n; j++) {
            int col = b->ycol[i * n + j];
            if (b->before[i * n + j] && in->rank[b->win[i]] ==
                                        in->rank[b->win[j]])
                order_row(b, i, j, 0, 0);
            else if (col > 0) {
                order_row(b, i, j, col, +1);
                order_row(b, j, i, col, -1);
            }
        }
    /* Intrinsic arcs inside the window (comm included). */
    for (int j = 0; j < n; j++) {
        int c = b->win[j];
        for (int e = 0; e < in->npred[c]; e++) {
            int i = b->idx[in->pred[c][e].from];
            if (i < 0)
                continue;
            add_row(b->P, 2, (int[]){ 0, j + 1, i + 1 },
                    (double[]){ 0, 1, -1 }, GLP_LO, in->pred[c][e].w);
        }
    }
    memory_rows(b);
}

/* The best order's values of the columns: the incumbent. */
static void incumbent(struct band *b)
{
    const int n = b->nwin;

    for (int k = 0; k < n; k++)
        b->x[k + 1] = b->ev.t[b->win[k]];
    for (int i = 0; i < n; i++)
        for (int j = 0; j < n; j++)
            if (b->ycol[i * n + j] > 0)
                b->x[b->ycol[i * n + j]] =
                    b->ev.t[b->win[i]] < b->ev.t[b->win[j]];
}

static void callback(glp_tree *T, void *info)
{
    struct band *b = info;

    if (zbi_ilp_shared_done(b->sh)) {
        glp_ios_terminate(T);
        return;
    }
    if (glp_ios_reason(T) == GLP_IHEUR && !b->injected) {
        incumbent(b);
        b->injected = glp_ios_heur_sol(T, b->x) == 0;
    }
}

struct solve_arg {
    struct band *b;
    double seconds;
};

/* Under zbi_ilp_glpk_run(): root LP and branch and cut; 0 with a solution in
 * b->x, else a GLPK code or ZB_ESOLVER. */
static int run_glpk(void *arg)
{
    struct solve_arg *sa = arg;
    struct band *b = sa->b;
    glp_smcp smcp;
    glp_iocp iocp;
    int st;

    build(b);
    glp_init_smcp(&smcp);
    smcp.msg_lev = GLP_MSG_OFF;
    smcp.tm_lim = zbi_ilp_glpk_ms(sa->seconds);
    /* The best order's timing satisfies every row: a failure here is
     * GLPK's, and only this window is lost. */
    if (glp_simplex(b->P, &smcp) != 0 || glp_get_status(b->P) != GLP_OPT)
        return ZB_ESOLVER;
    glp_init_iocp(&iocp);
    iocp.msg_lev = GLP_MSG_OFF;
    iocp.presolve = GLP_OFF;    /* the incumbent is in our columns */
    iocp.cb_func = callback;
    iocp.cb_info = b;
    iocp.tm_lim = smcp.tm_lim;
    b->injected = false;
    st = glp_intopt(b->P, &iocp);
    if (st != 0 && st != GLP_ETMLIM && st != GLP_ESTOP)
        return ZB_ESOLVER;
    if (glp_mip_status(b->P) != GLP_OPT && glp_mip_status(b->P) != GLP_FEAS)
        return ZB_ESOLVER;
    for (int k = 0; k < b->nwin; k++)
        b->x[k + 1] = glp_mip_col_val(b->P, k + 1);
    return 0;
}

/* The candidate: cur with each piece sorted by the model's start times
 * (ties: by the fixed or chosen order between them). */
static void candidate(struct band *b)
{
    const struct ilp_inst *in = b->in;
    const int n = b->nwin;

    zbi_ilp_order_copy(&b->next, &b->cur, in);
    for (int r = b->r0; r < b->r0 + b->nr; r++) {
        int *seq = b->next.seq[r];
        for (int i = b->lo[r] + 1; i < b->hi[r]; i++)
            for (int j = i; j > b->lo[r]; j--) {
                int kj = b->idx[seq[j]], ki = b->idx[seq[j - 1]];
                double tj = b->x[kj + 1], ti = b->x[ki + 1];
                int col = b->ycol[kj * n + ki];
                bool first = tj < ti - 1e-9 ||
                             (tj <= ti + 1e-9 &&
                              (b->before[kj * n + ki] ||
                               (col > 0 && glp_mip_col_val(b->P, col) > 0.5) ||
                               (col < 0 &&
                                glp_mip_col_val(b->P, -col) < 0.5)));
                if (!first)
                    break;
                int s = seq[j];
                seq[j] = seq[j - 1];
                seq[j - 1] = s;
            }
    }
}

/* Solve one window; a better order goes to the shared best. */
static void solve_window(struct band *b, double seconds)
{
    struct solve_arg sa = { b, seconds };
    char msg[ILP_GLPK_MSG_MAX] = "";
    const int n = b->nwin;

    b->rel = zb_xmalloc((size_t)n * sizeof(double));
    b->dl = zb_xmalloc((size_t)n * sizeof(double));
    b->ycol = zb_xmalloc((size_t)n * n * sizeof(int));
    b->before = zb_xmalloc((size_t)n * n * sizeof(bool));
    b->x = zb_xmalloc(((size_t)n * n + n + 1) * sizeof(double));
    b->P = NULL;
    limits(b);
    fixed_orders(b);
    if (zbi_ilp_glpk_run(run_glpk, &sa, msg, sizeof(msg)) == 0) {
        candidate(b);
        zbi_ilp_shared_offer(b->sh, &b->next);
    }
    if (msg[0])
        zbi_ilp_shared_fail(b->sh, msg);  /* the environment took P with it */
    else if (b->P)
        glp_delete_prob(b->P);
    free(b->rel);
    free(b->dl);
    free(b->ycol);
    free(b->before);
    free(b->x);
}

/* ---- the sweep --------------------------------------------------------- */

static void refresh(struct band *b, long *version)
{
    if (!zbi_ilp_shared_fetch(b->sh, &b->cur, version))
        return;
    if (zbi_ilp_order_eval(b->in, &b->cur, &b->ev) < 0)
        return;             /* the shared best always simulates */
    b->end = 0;
    for (int a = 0; a < b->in->n; a++)
        b->end = fmax(b->end, b->ev.t[a] + b->in->dur[a]);
}

void zbi_ilp_band_run(struct ilp_shared *sh, int lane, int lanes)
{
    const struct ilp_inst *in = sh->in;
    const int pp = in->p->pp;
    struct band b = { .sh = sh, .in = in };
    long version = -1, idx = 0;
    int level = 0, sweep = 0;
    double sweep_ends;

    zbi_ilp_order_init(&b.cur, in);
    zbi_ilp_order_init(&b.next, in);
    b.ev.t = zb_xmalloc((size_t)in->n * sizeof(double));
    b.win = zb_xmalloc((size_t)in->n * sizeof(int));
    b.idx = zb_xmalloc((size_t)in->n * sizeof(int));
    for (int a = 0; a < in->n; a++)
        b.idx[a] = -1;
    b.lo = zb_xcalloc((size_t)pp, sizeof(int));
    b.hi = zb_xcalloc((size_t)pp, sizeof(int));
    for (int s = 0; s < in->S; s++)
        b.period = fmax(b.period, in->p->stage[s].f + in->p->stage[s].b +
                                      in->p->stage[s].w);
    if (b.period <= 0)
        b.period = 1;
    refresh(&b, &version);
    sweep_ends = b.ev.ends;

    while (!zbi_ilp_shared_done(sh)) {
        /* Level L: 3 + 2L ranks over (1 + L/2) periods, sliding by half
         * of each; a sweep that gained nothing makes them larger, until
         * a window would exceed BAND_MAX_PASSES, then back to level 0
         * with the time grid shifted by a golden-ratio fraction. */
        int nr = 3 + 2 * level < pp ? 3 + 2 * level : pp;
        int rstep = nr / 2 > 0 ? nr / 2 : 1;
        int nrpos = (pp - nr + rstep - 1) / rstep + 1;
        double len = b.period * (1 + 0.5 * level), step = len / 2;
        double shift = step * fmod(sweep * 0.6180339887, 1.0);
        long nt = (long)ceil((b.end - shift) / step) + 1, total = nt * nrpos;

        refresh(&b, &version);
        if (idx >= total) {
            if (b.ev.ends >= sweep_ends)
                level++;
            idx = 0;
            sweep++;
            sweep_ends = b.ev.ends;
            continue;
        }
        if (idx++ % lanes != lane)
            continue;
        /* Time-major, from both ends inwards: the head and tail idle
         * set the spans, the steady state in between rarely does. */
        long j = (idx - 1) / nrpos, pos = j % 2 ? j / 2 : nt - 1 - j / 2;
        int r0 = (int)((idx - 1) % nrpos) * rstep;
        if (r0 > pp - nr)
            r0 = pp - nr;
        int got = mark(&b, r0, nr, shift + (pos - 1) * step, len);
        if (got > BAND_MAX_PASSES) {
            level = 0;
            idx = 0;
            sweep++;
            continue;
        }
        if (got >= 2)
            solve_window(&b, 0.5 + 0.25 * level);
    }
    zbi_ilp_order_release(&b.cur, in);
    zbi_ilp_order_release(&b.next, in);
    free(b.ev.t);
    free(b.win);
    free(b.idx);
    free(b.lo);
    free(b.hi);
}
