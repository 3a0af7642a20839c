/* improve_step.h - the step's end for the local search (improve.c) with
 * data parallelism: each stage's REDUCE_GRAD follows its last W on its
 * rank's collective stream (docs/zero.md), read off the search's
 * incremental timings (improve_eval.h) at O(pp vpp) per evaluation.
 * Private to search/, like improve_eval.h. */
#ifndef ZBSCHED_IMPROVE_STEP_H
#define ZBSCHED_IMPROVE_STEP_H

#include <stdbool.h>
#include "search/improve_eval.h"

struct improve_step {
    bool on;                /* data parallelism: the step is the score */
    int pp, vpp;
    int *last;              /* per rank and chunk: op id of the stage's
                               last W (or BW), -1 if none */
    double *reduce;         /* per rank and chunk: its REDUCE_GRAD's time */
};

/* Set x up for st's profile and ops (off without data parallelism). */
void zbi_improve_step_init(struct improve_step *x,
                           const struct improve_state *st);
void zbi_improve_step_release(struct improve_step *x);

/* When the step ends under st's current times: over ranks, the end of
 * the rank's reduces, run one at a time in the order of their last Ws
 * (each starts when its W has ended and the stream is free). A rank's
 * last compute op is a W, so this covers the compute too. ZeRO-3's
 * gathers are left out: they run at the step's start, not at its end. */
double zbi_improve_step_end(const struct improve_step *x,
                            const struct improve_state *st);

#endif
