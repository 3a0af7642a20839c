/* improve_eval.c - the local search's state and its incremental re-timing
 * (see improve_eval.h).
 *
 * The times of a compute order are a longest path: an op starts when its
 * rank's previous op has ended and its inputs have arrived (timing.h;
 * each edge's lag is fixed when the graph is built). A move reorders one
 * rank from position a on. Let t0 be the old start of the op at a. Every
 * op that started before t0 keeps its time: its predecessors all started
 * before it (strictly earlier than t0 too) and none of them is a moved
 * op, so that set is closed under predecessors. We re-run sim.c's
 * event loop from each rank's first op starting at or after t0, and stop
 * early once the change has died out: every op whose end changed has had
 * all its successors re-timed, and the moved window has been passed. Past
 * that point every input equals its old value, so every time does. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "search/improve_eval.h"
#include "zbsched/pass.h"
#include "zbsched/timing.h"
#include "zbsched/xalloc.h"

/* ---- building the graph ---------------------------------------------- */

static int add_ops(struct improve_state *st, const struct zb_schedule *s,
                   long *pass_op)
{
    const struct zb_profile *p = st->p;
    int id = 0;

    for (int r = 0; r < p->pp; r++) {
        const struct zb_op_list *l = &s->ranks[r];
        for (int i = 0; i < l->n; i++) {
            const struct zb_op *o = &l->ops[i];
            struct improve_op *x;
            if (!zb_op_is_compute(o->kind))
                continue;
            x = &st->op[id];
            *x = (struct improve_op){
                .kind = o->kind, .rank = r, .stage = o->stage, .mb = o->mb,
                .cls = o->kind == ZB_OP_F ? 0 : o->kind == ZB_OP_W ? 2 : 1,
                .dur = zb_op_duration(p, o),
                .mem = zb_op_memory_delta(p, o) };
            pass_op[zb_pass_index(p, zb_pass_of(o->kind), o->stage, o->mb)]
                = id;
            if (o->kind == ZB_OP_BW)
                pass_op[zb_pass_index(p, ZB_PASS_W, o->stage, o->mb)] = id;
            st->order[r][st->len[r]] = id;
            st->pos[id] = st->len[r]++;
            id++;
        }
    }
    return id;
}

static int link_ops(struct improve_state *st, const long *pass_op,
                    struct zb_error *err)
{
    const struct zb_profile *p = st->p;

    for (int id = 0; id < st->nops; id++) {
        struct improve_op *x = &st->op[id];
        struct zb_dep deps[2];
        int n = zb_pass_deps(p, x->kind, x->stage, x->mb, deps);
        for (int k = 0; k < n; k++) {
            long pi = pass_op[zb_pass_index(p, deps[k].pass, deps[k].stage,
                                            deps[k].mb)];
            struct improve_op *y;
            if (pi < 0)
                return zb_error_set(err, ZB_EILLEGAL, "stage %d mb %d: a "
                                    "pass it needs is missing", x->stage,
                                    x->mb);
            y = &st->op[pi];
            x->pred[x->npred] = (int)pi;
            x->prank[x->npred] = y->rank;
            x->lag[x->npred++] = zb_timing_lag(p, y->stage, x->stage,
                                               x->rank);
            if (y->nsucc == 2)
                return zb_error_set(err, ZB_EILLEGAL, "stage %d mb %d: "
                                    "duplicate pass", y->stage, y->mb);
            y->srank[y->nsucc] = x->rank;
            y->succ[y->nsucc++] = id;
        }
    }
    return 0;
}

/* Units one op re-timed costs on a graph of nops ops: 1 up to 24 576 (the
 * default grid's largest), then half a unit more each time the graph doubles,
 * linearly within a doubling, as a large graph's ops fall out of the caches
 * (docs/tuning.md, "Search work per op: the op weight"). Only +, * and /: the
 * same budget on every machine. */
static double op_weight(long nops)
{
    double w = 1, at = 24576;

    while (nops >= 2 * at) {
        w += 0.5;
        at *= 2;
    }
    return nops > at ? w + 0.5 * (nops - at) / at : w;
}

static void alloc_state(struct improve_state *st, const struct zb_profile *p,
                        const struct zb_schedule *s)
{
    int pp = p->pp, n = 0;

    memset(st, 0, sizeof(*st));
    st->p = p;
    st->pp = pp;
    for (int r = 0; r < pp; r++)
        for (int i = 0; i < s->ranks[r].n; i++)
            n += zb_op_is_compute(s->ranks[r].ops[i].kind);
    st->op = zb_xcalloc((size_t)n + 1, sizeof(*st->op));
    st->order = zb_xcalloc((size_t)pp, sizeof(int *));
    st->mem = zb_xcalloc((size_t)pp, sizeof(double *));
    st->len = zb_xcalloc((size_t)pp, sizeof(int));
    for (int r = 0; r < pp; r++) {
        st->order[r] = zb_xcalloc((size_t)s->ranks[r].n + 1, sizeof(int));
        st->mem[r] = zb_xcalloc((size_t)s->ranks[r].n + 1, sizeof(double));
    }
    st->pos = zb_xcalloc((size_t)n + 1, sizeof(int));
    st->start = zb_xcalloc((size_t)n + 1, sizeof(double));
    st->end = zb_xcalloc((size_t)n + 1, sizeof(double));
    st->pend = zb_xcalloc((size_t)n + 1, sizeof(int));
    st->log = zb_xcalloc((size_t)n + 1, sizeof(*st->log));
    st->newmem = zb_xcalloc((size_t)n + 1, sizeof(double));
    st->span = zb_xcalloc((size_t)pp, sizeof(double));
    st->old_span = zb_xcalloc((size_t)pp, sizeof(double));
    st->fr = zb_xcalloc((size_t)pp, sizeof(int));
    st->ptr = zb_xcalloc((size_t)pp, sizeof(int));
    st->th = zb_xcalloc((size_t)pp, sizeof(int));
    st->queued = zb_xcalloc((size_t)pp, sizeof(bool));
    st->stack = zb_xcalloc((size_t)pp, sizeof(int));
    st->tail = zb_xcalloc((size_t)n + 1, sizeof(double));
    st->est_end = zb_xcalloc((size_t)n + 1, sizeof(double));
    st->est_tail = zb_xcalloc((size_t)n + 1, sizeof(double));
    st->est_stamp = zb_xcalloc((size_t)n + 1, sizeof(long));
    st->nops = n;
    st->op_weight = op_weight(n);
    for (int r = 0; r < pp; r++)
        if (isfinite(p->mem_limit[r]))
            st->limited = true;
}

static void rebuild_mem(struct improve_state *st)
{
    for (int r = 0; r < st->pp && st->limited; r++) {
        double m = 0;
        for (int i = 0; i < st->len[r]; i++) {
            m += st->op[st->order[r][i]].mem;
            st->mem[r][i] = m;
        }
    }
}

static int check_mem(const struct improve_state *st, struct zb_error *err)
{
    for (int r = 0; r < st->pp && st->limited; r++) {
        double lim = zb_timing_mem_cap(st->p->mem_limit[r]);
        for (int i = 0; i < st->len[r]; i++)
            if (st->mem[r][i] > lim)
                return zb_error_set(err, ZB_ENOMEM_LIMIT, "rank %d op %d: "
                                    "memory %g exceeds the limit %g", r, i,
                                    st->mem[r][i], st->p->mem_limit[r]);
    }
    return 0;
}

static int retime_all(struct improve_state *st);

int zbi_improve_state_init(struct improve_state *st,
                          const struct zb_profile *p,
                          const struct zb_schedule *s, struct zb_error *err)
{
    long npass = zb_pass_count(p);
    long *pass_op = zb_xmalloc((size_t)npass * sizeof(long));
    int rc;

    alloc_state(st, p, s);
    for (long i = 0; i < npass; i++)
        pass_op[i] = -1;
    add_ops(st, s, pass_op);
    rc = link_ops(st, pass_op, err);
    free(pass_op);
    if (rc < 0)
        return rc;
    rebuild_mem(st);
    if ((rc = check_mem(st, err)) < 0)
        return rc;
    if (retime_all(st) < 0)
        return zb_error_set(err, ZB_EILLEGAL, "the compute order cannot "
                            "run (a pass waits forever)");
    return 0;
}

void zbi_improve_state_release(struct improve_state *st)
{
    if (!st->op)
        return;
    for (int r = 0; r < st->pp; r++) {
        free(st->order[r]);
        free(st->mem[r]);
    }
    free(st->order);
    free(st->mem);
    free(st->len);
    free(st->op);
    free(st->pos);
    free(st->start);
    free(st->end);
    free(st->pend);
    free(st->log);
    free(st->newmem);
    free(st->span);
    free(st->old_span);
    free(st->fr);
    free(st->ptr);
    free(st->th);
    free(st->queued);
    free(st->stack);
    free(st->tail);
    free(st->est_end);
    free(st->est_tail);
    free(st->est_stamp);
    memset(st, 0, sizeof(*st));
}

/* ---- re-timing ---------------------------------------------------------- */

/* The op at position k of rank r, re-timed in this evaluation (at or past
 * fr[r]), has met one more successor. */
static inline void consume(struct improve_state *st, int id, int r, int k,
                           int *diff)
{
    if (k >= st->fr[r] && (st->pend[id] -= 2) == 1)
        (*diff)--;
}

/* Re-time rank r's next ops while their inputs are final (an op's time is
 * final once its rank's pointer has passed it: the ops before fr[]
 * started before t0, the others were re-timed). True when the change has
 * died out (early only) and every moved rank's ptr has reached its th[],
 * so the loop can stop.
 *
 * pend[id] = 2 * (successors not re-timed yet) + (its end changed), for
 * the ops re-timed in this evaluation; *diff counts those with a changed
 * end and a successor still to come. The search's hot loop: the inputs'
 * ranks and positions are read once, from the op and pos[]. */
static bool advance(struct improve_state *st, int r, bool early, int *diff)
{
    const int *ord = st->order[r];
    int k = st->ptr[r], len = st->len[r];
    double prev = k > 0 ? st->end[ord[k - 1]] : 0;

    while (k < len) {
        int id = ord[k], left, pk[2];
        const struct improve_op *x = &st->op[id];
        double t = prev, e;
        bool changed;
        struct improve_log *lg;

        for (int j = 0; j < x->npred; j++) {
            pk[j] = st->pos[x->pred[j]];
            if (pk[j] >= st->ptr[x->prank[j]])
                return false;
            t = zb_timing_start(t, st->end[x->pred[j]] + x->lag[j]);
        }
        e = t + x->dur;
        changed = e != st->end[id] || t != st->start[id];
        lg = &st->log[st->log_n++];
        lg->id = id;
        lg->start = st->start[id];
        lg->end = st->end[id];
        st->start[id] = t;
        st->end[id] = e;
        prev = e;
        st->ptr[r] = ++k;
        st->unmet -= k == st->th[r];
        left = x->nsucc + (k < len);
        st->pend[id] = 2 * left + changed;
        *diff += changed && left;
        if (k > 1)
            consume(st, ord[k - 2], r, k - 2, diff);
        for (int j = 0; j < x->npred; j++)
            consume(st, x->pred[j], x->prank[j], pk[j], diff);
        if (early && *diff == 0 && st->unmet == 0)
            return true;
        for (int j = 0; j < x->nsucc; j++)
            improve_wake(st, x->srank[j]);
    }
    return false;
}

/* Re-time from ptr = fr, ranks taken from a stack (any topological order
 * gives the same times). With early, stop once the change has died out
 * and every rank's ptr has reached th[]. -1 on a stall (a cycle). */
static int run_loop(struct improve_state *st, bool early)
{
    int diff = 0;

    st->stack_n = 0;
    for (int r = st->pp - 1; r >= 0; r--) {
        st->ptr[r] = st->fr[r];
        st->queued[r] = true;
        st->stack[st->stack_n++] = r;
    }
    while (st->stack_n > 0) {
        int r = st->stack[--st->stack_n];
        st->queued[r] = false;
        if (advance(st, r, early, &diff))
            return 0;
    }
    for (int r = 0; r < st->pp; r++)
        if (st->ptr[r] < st->len[r])
            return -1;
    return 0;
}

static void measure(struct improve_state *st)
{
    double first = INFINITY, last = -INFINITY, cost = 0;

    for (int r = 0; r < st->pp; r++) {
        double f = 0, l = 0;
        if (st->len[r] > 0) {
            f = st->start[st->order[r][0]];
            l = st->end[st->order[r][st->len[r] - 1]];
        }
        st->span[r] = l - f;
        cost = fmax(cost, st->span[r]);
        first = fmin(first, f);
        last = fmax(last, l);
    }
    st->cost = cost;
    st->makespan = last > first ? last - first : 0;
}


/* Charge a re-timing: its ops, and a start per rank (improve_op_units()). */
static void charge(struct improve_state *st)
{
    st->work += improve_op_units(st, st->log_n) + st->pp;
}

static int retime_all(struct improve_state *st)
{
    int rc;

    st->log_n = 0;
    for (int r = 0; r < st->pp; r++) {
        st->fr[r] = 0;
        st->th[r] = 0;
    }
    rc = run_loop(st, false);
    charge(st);
    measure(st);
    st->tails_valid = false;
    return rc;
}

void zbi_improve_retime(struct improve_state *st)
{
    retime_all(st);
}

/* ---- moves ------------------------------------------------------------ */

/* Same-class passes of a stage keep microbatch order; BW counts as a W
 * too. */
static bool conflict(const struct improve_op *x,
                     const struct improve_op *z)
{
    if (x->stage != z->stage)
        return false;
    return x->cls == z->cls || (x->kind == ZB_OP_BW && z->cls == 2) ||
           (z->kind == ZB_OP_BW && x->cls == 2);
}

static bool waits_for(const struct improve_state *st, int a, int b)
{
    const struct improve_op *x = &st->op[a];
    return (x->npred > 0 && x->pred[0] == b) ||
           (x->npred > 1 && x->pred[1] == b);
}

static bool check_mem_move(struct improve_state *st, int r, int from,
                           int to)
{
    int lo = from < to ? from : to, hi = from < to ? to : from, k;
    double lim = zb_timing_mem_cap(st->p->mem_limit[r]);
    double sum = lo > 0 ? st->mem[r][lo - 1] : 0;
    const double *old = st->mem[r];

    st->newmem_lo = lo;
    st->newmem_n = 0;
    if (!isfinite(lim))
        return true;
    for (k = lo; k <= hi; k++) {
        sum += st->op[improve_moved_at(st, r, from, to, k)].mem;
        if (sum > lim)
            return false;
        st->newmem[k - lo] = sum;
    }
    /* Past the window the same ops follow: once the sum equals the old
     * one bit for bit, the rest is unchanged too. */
    for (; k < st->len[r] && sum != old[k - 1]; k++) {
        sum += st->op[st->order[r][k]].mem;
        if (sum > lim)
            return false;
        st->newmem[k - lo] = sum;
    }
    st->newmem_n = k - lo;
    return true;
}

bool zbi_improve_check(struct improve_state *st, int r, int from, int to)
{
    int x, dir = to > from ? 1 : -1;

    if (from == to || from < 0 || to < 0 || from >= st->len[r] ||
        to >= st->len[r])
        return false;
    x = st->order[r][from];
    for (int k = from + dir; k != to + dir; k += dir) {
        int z = st->order[r][k];
        if (conflict(&st->op[x], &st->op[z]))
            return false;
        if (dir < 0 ? waits_for(st, x, z) : waits_for(st, z, x))
            return false;
    }
    return !st->limited || check_mem_move(st, r, from, to);
}

static void rotate(struct improve_state *st, int r, int from, int to)
{
    int *o = st->order[r], x = o[from];

    if (to < from) {
        memmove(&o[to + 1], &o[to], (size_t)(from - to) * sizeof(int));
        o[to] = x;
        for (int k = to; k <= from; k++)
            st->pos[o[k]] = k;
    } else {
        memmove(&o[from], &o[from + 1], (size_t)(to - from) * sizeof(int));
        o[to] = x;
        for (int k = from; k <= to; k++)
            st->pos[o[k]] = k;
    }
}

/* First position of rank r whose op starts at or after t0, below lim. */
static int first_at(const struct improve_state *st, int r, double t0,
                    int lim)
{
    int lo = 0, hi = lim;

    while (lo < hi) {
        int mid = (lo + hi) / 2;
        if (st->start[st->order[r][mid]] < t0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

static void restore_times(struct improve_state *st)
{
    for (int i = 0; i < st->log_n; i++) {
        st->start[st->log[i].id] = st->log[i].start;
        st->end[st->log[i].id] = st->log[i].end;
    }
    st->log_n = 0;
}

/* Rank r's running memory sums from position lo on, after a move that
 * changed positions lo..hi only: past hi, stop once a sum equals the old
 * one bit for bit. */
static void remem(struct improve_state *st, int r, int lo, int hi)
{
    double *m = st->mem[r], sum = lo > 0 ? m[lo - 1] : 0, old = 0;
    int k;

    for (k = lo; k <= hi; k++) {
        old = m[k];
        sum += st->op[st->order[r][k]].mem;
        m[k] = sum;
    }
    for (; k < st->len[r] && sum != old; k++) {
        old = m[k];
        sum += st->op[st->order[r][k]].mem;
        m[k] = sum;
    }
}

static void unrotate_all(struct improve_state *st)
{
    for (int i = st->mv_n - 1; i >= 0; i--)
        rotate(st, st->mv[i].rank, st->mv[i].to, st->mv[i].from);
}

static int try_moves(struct improve_state *st, int n,
                     const struct improve_move *mv)
{
    double t0 = INFINITY;

    memcpy(st->old_span, st->span, (size_t)st->pp * sizeof(double));
    st->old_cost = st->cost;
    st->old_makespan = st->makespan;
    st->mv_n = n;
    memcpy(st->mv, mv, (size_t)n * sizeof(*mv));
    for (int q = 0; q < st->pp; q++) {
        st->fr[q] = st->len[q];
        st->th[q] = 0;
    }
    for (int i = 0; i < n; i++) {
        int r = mv[i].rank, lo = improve_move_lo(&mv[i]);
        int hi = improve_move_hi(&mv[i]);
        t0 = fmin(t0, st->start[st->order[r][lo]]);
        st->fr[r] = lo;
        st->th[r] = hi + 2 < st->len[r] ? hi + 2 : st->len[r];
    }
    for (int i = 0; i < n; i++)
        rotate(st, mv[i].rank, mv[i].from, mv[i].to);
    st->log_n = 0;
    st->unmet = 0;
    for (int q = 0; q < st->pp; q++) {
        st->fr[q] = first_at(st, q, t0, st->fr[q]);
        st->unmet += st->th[q] > st->fr[q];
    }
    if (run_loop(st, true) < 0) {
        charge(st);
        restore_times(st);
        unrotate_all(st);
        return -1;
    }
    charge(st);
    measure(st);
    return 0;
}

int zbi_improve_try_n(struct improve_state *st, int n,
                      const struct improve_move *mv)
{
    st->fresh_mem = false;
    return try_moves(st, n, mv);
}

int zbi_improve_try(struct improve_state *st, int r, int from, int to)
{
    struct improve_move m = { r, from, to };

    st->fresh_mem = true;
    return try_moves(st, 1, &m);
}

void zbi_improve_undo(struct improve_state *st)
{
    restore_times(st);
    unrotate_all(st);
    memcpy(st->span, st->old_span, (size_t)st->pp * sizeof(double));
    st->cost = st->old_cost;
    st->makespan = st->old_makespan;
}

/* zbi_improve_try(): the sums zbi_improve_check() computed;
 * zbi_improve_try_n(): recomputed, rank by rank. */
void zbi_improve_commit(struct improve_state *st)
{
    if (st->limited && st->fresh_mem && st->newmem_n > 0)
        memcpy(&st->mem[st->mv[0].rank][st->newmem_lo], st->newmem,
               (size_t)st->newmem_n * sizeof(double));
    for (int i = 0; st->limited && !st->fresh_mem && i < st->mv_n; i++) {
        const struct improve_move *m = &st->mv[i];
        remem(st, m->rank, improve_move_lo(m), improve_move_hi(m));
    }
    st->log_n = 0;
    /* Tails go stale only around the move; a refresh is a pass over
     * every op (improve_estimate.c). */
    if (++st->tails_age >= IMPROVE_TAILS_AGE)
        st->tails_valid = false;
}

void zbi_improve_load(struct improve_state *st, int *const *orders)
{
    for (int r = 0; r < st->pp; r++) {
        memcpy(st->order[r], orders[r], (size_t)st->len[r] * sizeof(int));
        for (int k = 0; k < st->len[r]; k++)
            st->pos[st->order[r][k]] = k;
    }
    rebuild_mem(st);
    retime_all(st);
}

void zbi_improve_write(const struct improve_state *st,
                      struct zb_schedule *s)
{
    for (int r = 0; r < st->pp; r++) {
        s->ranks[r].n = 0;
        for (int k = 0; k < st->len[r]; k++) {
            const struct improve_op *x = &st->op[st->order[r][k]];
            zb_schedule_push(s, r, x->kind, x->stage, x->mb);
        }
    }
}
