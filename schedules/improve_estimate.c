/* improve_estimate.c - a quick estimate of the cost after a one-rank move
 * (see improve_eval.h), so that the local search re-times only the
 * moves that may pass its acceptance test.
 *
 * As in job-shop local search (heads and tails): the cost is a longest
 * path, end(last op of R) - start(first op of R) at most over ranks R,
 * and every op lies on paths of the pass graph: tail[id] is the longest
 * way from id's end to the end of some rank's last op, less that rank's
 * start, so end[id] + tail[id] <= cost, with equality on a critical
 * path. A move reorders rank r's window lo..hi only; the estimate
 * re-times the window's ops forward from the times of their inputs
 * (outside the window: as they are) and their tails backward from those
 * of their successors (likewise), and takes the longest path through
 * the window. Where the ops outside keep their times and tails, that is
 * the cost of every path through the window; paths around it keep
 * their lengths, so the new cost is at least the estimate. Outside ops
 * can move, though (a path from the window back into it through other
 * ranks), so it is an estimate, not a bound: the search uses it only to
 * skip re-timing moves it would reject by a wide margin. */
#include <math.h>
#include "improve_eval.h"

/* The lag on the edge from op a to its successor b. */
static double edge_lag(const struct improve_state *st, int a, int b)
{
    const struct improve_op *y = &st->op[b];

    for (int k = 0; k < y->npred; k++)
        if (y->pred[k] == a)
            return y->lag[k];
    return 0;
}

/* Whether op id is in the window being estimated (stamped this round). */
static inline bool in_window(const struct improve_state *st, int id)
{
    return st->est_stamp[id] == st->est_round;
}

/* t, or more: the longest way through id's successors (their tails from
 * est_tail[] for those in the window being estimated, when `window`). */
static double via_succs(const struct improve_state *st, int id, double t,
                        bool window)
{
    const struct improve_op *x = &st->op[id];

    for (int j = 0; j < x->nsucc; j++) {
        int y = x->succ[j];
        double ty = window && in_window(st, y) ? st->est_tail[y]
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
    st->work += (long)st->nops / 2 + st->pp;
}

double improve_estimate(struct improve_state *st, int r, int from, int to)
{
    int lo = from < to ? from : to, hi = from + to - lo;
    const int *ord = st->order[r];
    double prev, first = st->start[ord[0]], est = -INFINITY;

    if (!st->tails_valid)
        compute_tails(st);
    st->est_round++;
    st->work += hi - lo + 1;
    /* Forward: the window in its new order. */
    prev = lo > 0 ? st->end[ord[lo - 1]] : 0;
    for (int k = lo; k <= hi; k++) {
        int id = improve_moved_at(st, r, from, to, k);
        const struct improve_op *x = &st->op[id];
        double t = prev;

        for (int j = 0; j < x->npred; j++) {
            int q = x->pred[j];
            t = fmax(t, (in_window(st, q) ? st->est_end[q] : st->end[q]) +
                            x->lag[j]);
        }
        if (k == 0)
            first = t;          /* the rank's first op moved */
        st->est_stamp[id] = st->est_round;
        st->est_end[id] = prev = t + x->dur;
    }
    /* Backward: tails through the window, then the longest path. */
    for (int k = hi; k >= lo; k--) {
        int id = improve_moved_at(st, r, from, to, k);
        double t;

        if (k + 1 <= hi) {          /* the next op is in the window */
            int nx = improve_moved_at(st, r, from, to, k + 1);
            t = st->op[nx].dur + st->est_tail[nx];
        } else if (k + 1 < st->len[r]) {
            t = st->op[ord[k + 1]].dur + st->tail[ord[k + 1]];
        } else {                    /* the rank's last op */
            t = -first;
        }
        st->est_tail[id] = t = via_succs(st, id, t, true);
        est = fmax(est, st->est_end[id] + t);
    }
    return est;
}
