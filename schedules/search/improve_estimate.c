/* improve_estimate.c - a quick estimate of the cost after a move (see
 * improve_eval.h), so that the local search re-times only the moves that
 * may pass its acceptance test.
 *
 * As in job-shop local search (heads and tails): the cost is a longest
 * path, end(last op of R) - start(first op of R) at most over ranks R,
 * and every op lies on paths of the pass graph: tail[id] is the longest
 * way from id's end to the end of some rank's last op, less that rank's
 * start, so end[id] + tail[id] <= cost, with equality on a critical
 * path. A move reorders a window lo..hi of one rank (a column move: of
 * several ranks); the estimate re-times the windows' ops forward from
 * the times of their inputs (outside the windows: as they are) and their
 * tails backward from those of their successors (likewise), and takes
 * the longest path through a window. Where the ops outside keep their
 * times and tails, that is the cost of every path through the windows;
 * paths around them keep their lengths, so the new cost is at least the
 * estimate. Outside ops can move, though (a path from a window back into
 * one through other ranks), so it is an estimate, not a bound: the search
 * uses it only to skip re-timing moves it would reject by a wide margin.
 * A column's windows feed one another both ways (its F's forward, the B's
 * beside them backward), so with several windows each pass is made twice,
 * the second from what the first found. */
#include <math.h>
#include "search/improve_eval.h"
#include "zbsched/timing.h"

/* The lag on the edge from op a to its successor b. */
static double edge_lag(const struct improve_state *st, int a, int b)
{
    const struct improve_op *y = &st->op[b];

    for (int k = 0; k < y->npred; k++)
        if (y->pred[k] == a)
            return y->lag[k];
    return 0;
}

/* Whether window op id has its estimate of this round: its est_end[]
 * while going forward, its est_tail[] going backward (stamped). */
static inline bool estimated(const struct improve_state *st, int id)
{
    return st->est_stamp[id] == st->est_round;
}

/* t, or more: the longest way through id's successors (their tails from
 * est_tail[] for those estimated(), when `in_windows`). */
static double via_succs(const struct improve_state *st, int id, double t,
                        bool in_windows)
{
    const struct improve_op *x = &st->op[id];

    for (int j = 0; j < x->nsucc; j++) {
        int y = x->succ[j];
        double ty = in_windows && estimated(st, y) ? st->est_tail[y]
                                                   : st->tail[y];
        t = fmax(t, edge_lag(st, id, y) + st->op[y].dur + ty);
    }
    return t;
}

/* tail[] for the current order: run_loop() mirrored, each rank from its
 * last op down, an op taken once every successor has its tail (ptr[q]:
 * the next op of rank q still to do; ops above it are done). */
static void compute_tails(struct improve_state *st)
{
    st->stack_n = 0;
    for (int r = st->pp - 1; r >= 0; r--) {
        st->ptr[r] = st->len[r] - 1;
        st->queued[r] = true;
        st->stack[st->stack_n++] = r;
    }
    while (st->stack_n > 0) {
        int r = st->stack[--st->stack_n];
        const int *ord = st->order[r];

        st->queued[r] = false;
        while (st->ptr[r] >= 0) {
            int k = st->ptr[r], id = ord[k];
            const struct improve_op *x = &st->op[id];
            double t;
            bool ready = true;

            for (int j = 0; j < x->nsucc && ready; j++)
                ready = st->pos[x->succ[j]] > st->ptr[x->srank[j]];
            if (!ready)
                break;
            t = k + 1 < st->len[r]
                    ? st->op[ord[k + 1]].dur + st->tail[ord[k + 1]]
                    : -st->start[ord[0]];
            st->tail[id] = via_succs(st, id, t, false);
            st->ptr[r]--;
            for (int j = 0; j < x->npred; j++)
                improve_wake(st, x->prank[j]);
        }
    }
    st->tails_valid = true;
    st->tails_age = 0;
    st->work += improve_op_units(st, st->nops) + st->pp;
}

/* Forward over move m's window in its new order: each op's estimated
 * end from its inputs (est_end[] for those estimated(), else as they
 * are) and the op before it. Returns the rank's start: the new one where
 * the window begins its list, else the current one. */
static double window_forward(struct improve_state *st,
                             const struct improve_move *m)
{
    int r = m->rank, lo = improve_move_lo(m), hi = improve_move_hi(m);
    const int *ord = st->order[r];
    double prev = lo > 0 ? st->end[ord[lo - 1]] : 0;
    double first = st->start[ord[0]];

    for (int k = lo; k <= hi; k++) {
        int id = improve_moved_at(st, r, m->from, m->to, k);
        const struct improve_op *x = &st->op[id];
        double t = prev;

        for (int j = 0; j < x->npred; j++) {
            int q = x->pred[j];
            t = zb_timing_start(t, (estimated(st, q) ? st->est_end[q]
                                                     : st->end[q]) +
                                       x->lag[j]);
        }
        if (k == 0)
            first = t;
        st->est_stamp[id] = st->est_round;
        st->est_end[id] = prev = t + x->dur;
    }
    return first;
}

/* Backward over move m's window: each op's estimated tail (through
 * est_tail[] of successors estimated(), else their tail[]); the longest
 * path through the window, given the rank's start `first`. */
static double window_backward(struct improve_state *st,
                              const struct improve_move *m, double first)
{
    int r = m->rank, lo = improve_move_lo(m), hi = improve_move_hi(m);
    const int *ord = st->order[r];
    double est = -INFINITY;

    for (int k = hi; k >= lo; k--) {
        int id = improve_moved_at(st, r, m->from, m->to, k);
        double t;

        if (k + 1 <= hi) {          /* the next op is in the window */
            int nx = improve_moved_at(st, r, m->from, m->to, k + 1);
            t = st->op[nx].dur + st->est_tail[nx];
        } else if (k + 1 < st->len[r]) {
            t = st->op[ord[k + 1]].dur + st->tail[ord[k + 1]];
        } else {                    /* the rank's last op */
            t = -first;
        }
        st->est_tail[id] = t = via_succs(st, id, t, true);
        st->est_stamp[id] = st->est_round;
        est = fmax(est, st->est_end[id] + t);
    }
    return est;
}

double zbi_improve_estimate(struct improve_state *st, int n,
                            const struct improve_move *mv)
{
    int sweeps = n > 1 ? 2 : 1;
    double first[IMPROVE_MAX_MOVES], est = -INFINITY;

    if (!st->tails_valid)
        compute_tails(st);
    st->est_round++;
    for (int i = 0; i < n; i++)
        st->work += (long)sweeps * IMPROVE_WINDOW_OP_UNITS *
                    (improve_move_hi(&mv[i]) - improve_move_lo(&mv[i]) + 1);
    for (int w = 0; w < sweeps; w++)
        for (int i = 0; i < n; i++)
            first[i] = window_forward(st, &mv[i]);
    /* Tails: from here a window op is estimated() once its tail is
     * done; the last sweep's paths are the estimate. */
    st->est_round++;
    for (int w = 0; w < sweeps; w++) {
        est = -INFINITY;
        for (int i = n - 1; i >= 0; i--)
            est = fmax(est, window_backward(st, &mv[i], first[i]));
    }
    return est;
}
