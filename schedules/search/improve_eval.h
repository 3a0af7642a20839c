/* improve_eval.h - the state the local search (improve.c) works on: the
 * compute order per rank over a flat pass graph, the time of every op,
 * the running memory per rank, an incremental re-timing after a move or
 * a compound move (several ranks at once), and a quick estimate of
 * either's cost (improve_estimate.c).
 * Private to search/: search.h is the folder's contract; this is the
 * state its three files share, too wide to be anyone else's. */
#ifndef ZBSCHED_IMPROVE_EVAL_H
#define ZBSCHED_IMPROVE_EVAL_H

#include <stdbool.h>
#include "zbsched/error.h"
#include "zbsched/profile.h"
#include "zbsched/schedule.h"

/* Most moves in one compound move (zbi_improve_try_n). */
#define IMPROVE_MAX_MOVES 8

/* Moves committed before zbi_improve_estimate() refreshes the tails: a
 * move changes the tails of the ops that lead into it, a refresh walks
 * every op, and stale tails only blur an estimate (docs/tuning.md,
 * "Search tails age"). */
#define IMPROVE_TAILS_AGE 16

/* Take the op at position `from` of `rank` out and put it back at `to`. */
struct improve_move {
    int rank, from, to;
};

/* The window a move reorders: positions lo..hi of its rank. */
static inline int improve_move_lo(const struct improve_move *m)
{
    return m->from < m->to ? m->from : m->to;
}

static inline int improve_move_hi(const struct improve_move *m)
{
    return m->from < m->to ? m->to : m->from;
}

/* One compute op of the input schedule; ids index improve_state.op. */
struct improve_op {
    enum zb_op_kind kind;
    int rank, stage, mb;
    int cls;                /* order class: 0 F, 1 B or BW, 2 W */
    double dur;             /* duration */
    double mem;             /* memory delta */
    int npred, nsucc;
    int pred[2];            /* ops it waits for */
    double lag[2];          /* comm added on that edge (0 on one rank) */
    int succ[2];            /* ops that wait for it */
    int prank[2], srank[2]; /* their ranks (the re-timing's hot loop
                               reads these instead of their op) */
};

/* One entry of the undo log: an op and its times before the move. */
struct improve_log {
    int id;
    double start, end;
};

struct improve_state {
    const struct zb_profile *p;
    int pp, nops;
    struct improve_op *op;
    int **order;            /* per rank: op ids in list order */
    int *len;               /* per rank: ops */
    int *pos;               /* per op: index in its rank's order */
    double *start, *end;    /* per op: times of the current order */
    bool limited;           /* some rank has a finite limit */
    double **mem;           /* per rank and position: running memory sum
                               after that op (kept only when limited) */
    double *span;           /* per rank */
    double cost, makespan;  /* of the current order */
    long work;              /* ops re-timed so far (the budget's unit) */
    double op_weight;       /* units an op re-timed costs (op_weight()) */

    /* Scratch of one evaluation. */
    int *pend;              /* per op: successors not re-timed yet */
    int *fr, *ptr;          /* per rank: first op re-timed, next op */
    int *th;                /* per rank: ptr the early stop waits for */
    int unmet;              /* ranks whose ptr is still below th */
    bool *queued;
    int *stack, stack_n;    /* ranks that may advance */
    struct improve_log *log;    /* undo log */
    int log_n;
    double *old_span;
    double old_cost, old_makespan;
    double *newmem;         /* running sums of a checked move */
    int newmem_lo, newmem_n;
    int mv_n;               /* the moves under evaluation */
    struct improve_move mv[IMPROVE_MAX_MOVES];
    bool fresh_mem;         /* newmem holds the one move's sums */

    /* zbi_improve_estimate()'s (improve_estimate.c). */
    double *tail;           /* per op: longest way to the cost's end */
    bool tails_valid;       /* tail[] is of the order as it was */
    int tails_age;          /* moves committed since tail[] was taken */
    double *est_end, *est_tail; /* window ops' estimated end and tail */
    long *est_stamp, est_round; /* an op's estimate is of this round:
                                   stamp = round */
};

/* The budget's unit (search.h) is about one op re-timed on a graph of
 * up to 24 576 ops (improve_eval.c, op_weight()); on larger graphs an
 * op costs more (the times, orders and ops it reads fall out of the
 * caches). The charges below and in improve.c follow measured times, so
 * that a budget is the same time whatever mix of moves a search makes
 * and whatever the graph's size: n ops re-timed, or walked for the
 * tails, cost n times the graph's op weight (improve_state.op_weight). */
static inline long improve_op_units(const struct improve_state *st, long n)
{
    return (long)((double)n * st->op_weight);
}

/* One op of an estimate's window (about 0.3 us: its inputs, successors
 * and their lags). */
#define IMPROVE_WINDOW_OP_UNITS 12

/* Put rank r on the stack of ranks that may advance (the re-timing and
 * the tails walk ranks so), unless it is there. */
static inline void improve_wake(struct improve_state *st, int r)
{
    if (!st->queued[r]) {
        st->queued[r] = true;
        st->stack[st->stack_n++] = r;
    }
}

/* The op at position k of rank r (lo <= k <= hi) once the op at `from`
 * is moved to `to`. */
static inline int improve_moved_at(const struct improve_state *st, int r,
                                   int from, int to, int k)
{
    if (k == to)
        return st->order[r][from];
    return to < from ? st->order[r][k - 1] : st->order[r][k + 1];
}

/* Build the state for s's compute order (other ops ignored) and time it.
 * ZB_EILLEGAL if the order cannot run (a cycle), ZB_ENOMEM_LIMIT if it
 * does not fit a rank's limit. */
int zbi_improve_state_init(struct improve_state *st,
                          const struct zb_profile *p,
                          const struct zb_schedule *s, struct zb_error *err);
void zbi_improve_state_release(struct improve_state *st);

/* Whether moving the op at position `from` of rank r to position `to`
 * keeps same-class passes of a stage in order, jumps over no same-rank
 * dependency and keeps the running memory within the limit (the
 * validator's tolerance). Remembers the memory sums for the commit. */
bool zbi_improve_check(struct improve_state *st, int r, int from, int to);

/* Apply the checked move and re-time what it can change. Returns 0, or -1
 * when the order deadlocks (a cycle through other ranks): then the move
 * is already undone. */
int zbi_improve_try(struct improve_state *st, int r, int from, int to);

/* Apply n moves on n distinct ranks at once (a compound move), each
 * checked by zbi_improve_check() against the current order, and re-time once.
 * Returns 0, or -1 on a deadlock (the moves are then undone). */
int zbi_improve_try_n(struct improve_state *st, int n,
                      const struct improve_move *mv);

/* An estimate of the cost after the n checked moves mv (on distinct
 * ranks, as zbi_improve_try_n() takes them; n = 1: one move), without
 * applying them: the longest path through the moved windows with every
 * other op's time and tail as they are. Not a bound (other ops can move
 * too); charged to st->work, far less than a re-timing. */
double zbi_improve_estimate(struct improve_state *st, int n,
                            const struct improve_move *mv);

/* Keep or revert the move(s) zbi_improve_try*() applied. */
void zbi_improve_commit(struct improve_state *st);
void zbi_improve_undo(struct improve_state *st);

/* Re-time the whole order from scratch (after replacing order[]). */
void zbi_improve_retime(struct improve_state *st);

/* Replace the orders with those in `orders` (per rank, same lengths) and
 * re-time; the memory sums are rebuilt. */
void zbi_improve_load(struct improve_state *st, int *const *orders);

/* Write the current order into s's rank lists (compute ops only). */
void zbi_improve_write(const struct improve_state *st,
                      struct zb_schedule *s);

#endif
