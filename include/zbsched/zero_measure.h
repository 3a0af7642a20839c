/* zero_measure.h - the step time and per-rank memory of a simulated
 * schedule with data parallelism (docs/zero.md). Below the simulator,
 * which calls zb_zero_measure(); placing the collectives is zero.h's. */
#ifndef ZBSCHED_ZERO_MEASURE_H
#define ZBSCHED_ZERO_MEASURE_H

#include "zbsched/schedule.h"

/* After a simulation of a schedule with data parallelism: step_time
 * (the last compute op or collective minus the first start) and each
 * rank's total_memory (activations plus model state, dp.h). Called by
 * zb_sim_run(). */
void zb_zero_measure(struct zb_schedule *s);

/* The peak of rank's model state alone over its list (total_memory's
 * walk without the activations): what zbexec compares its buffers with.
 * 0 without data parallelism. */
double zb_zero_state_peak(const struct zb_schedule *s, int rank);

/* When a rank's step ends, its list's last compute op or collective, and
 * into *begin (unless NULL) when it begins, its first (a ZeRO-3 step
 * begins with a gather). Read off the op times of a simulated list. */
double zb_zero_rank_end(const struct zb_op_list *l, double *begin);

/* ---- FSDP units (data_parallel.units K > 1; docs/zero.md, "Units") ----
 * A pass that units act on runs as segments, one per unit it uses (F:
 * units 0 .. K-1; B, W, BW: K-1 .. 0; FB: its F's, then its B's), each
 * taking the pass's time over K. ZeRO-3: each segment of an F, B, BW or
 * FB waits for its unit's UNSHARD, placed right before the pass and run
 * on the collective stream in list order; the j-th is issued when
 * segment j - prefetch starts, counting back into the compute op before
 * the pass (or when that op starts, if it has no segments); with
 * prefetch 0 when it is reached: the first when the compute op before
 * the pass ends, the j-th when segment j - 1 ends, so a pass holds one
 * unit at a time and waits for every gather. The unit's
 * RESHARD after the pass frees it when the segment ends (its time).
 * Reducing per microbatch, each segment of a W or BW waits for the end
 * of its unit's previous REDUCE_GRAD (one buffer per unit), and the
 * unit's REDUCE_GRAD after the pass starts when the segment ends. W
 * needs no weights (dW = X^T dY). */

/* Whether op is a collective on one unit, timed with its pass. */
bool zb_zero_unit_op(const struct zb_profile *p, const struct zb_op *op);

/* Whether compute op op runs as unit segments. */
bool zb_zero_unit_pass(const struct zb_profile *p, const struct zb_op *op);

/* The simulator's state for units over one run. */
struct zb_zero_units;
struct zb_zero_units *zb_zero_units_new(const struct zb_profile *p);
void zb_zero_units_free(struct zb_zero_units *u);

/* Time pass i of rank r's list l (zb_zero_unit_pass()), whose inputs
 * are ready at ready, with its unit collectives on the stream *coll_free;
 * sets the pass's end and returns its start. */
double zb_zero_units_time(struct zb_zero_units *u, struct zb_op_list *l,
                          int r, int i, double ready, double *coll_free);

#endif
