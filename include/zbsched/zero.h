/* zero.h - placing the data-parallel collectives in a lowered schedule
 * (docs/zero.md): a pass above the simulator, which it re-runs. Measuring
 * the step they end is zero_measure.h's, below the simulator.
 *
 * Placement, per rank and stage: REDUCE_GRAD right after the stage's last
 * W (or BW), or, reducing per microbatch, right after each W naming its
 * microbatch; for ZeRO-3 an UNSHARD `prefetch` compute passes before the
 * stage's first pass (prefetch 0: right before it) and a RESHARD right
 * after its last. With units (K > 1) each pass's gathers stand right
 * before it whatever the prefetch, which only sets when they are issued
 * (zero_measure.h). The simulator (sim.h) times the collectives on one
 * collective stream per rank. */
#ifndef ZBSCHED_ZERO_H
#define ZBSCHED_ZERO_H

#include "zbsched/error.h"
#include "zbsched/schedule.h"
#include "zbsched/zero_measure.h"

/* Drop every collective op (undoes zb_zero_place()). */
void zb_zero_strip(struct zb_schedule *s);

/* Insert the collectives into a lowered schedule (any already there are
 * replaced) and re-simulate it. Nothing to do without data parallelism.
 * Errors: those of zb_sim_run(). */
int zb_zero_place(struct zb_schedule *s, struct zb_error *err);

/* The post-pass that finishes stages' last W earlier: on each rank, the
 * W ops that end its list (no pass after them depends on them) are
 * grouped by stage in the order of chunks that ends the rank's step
 * soonest, so one stage's REDUCE_GRAD overlaps the other stages' Ws. The
 * rank's compute ends as before; tried for vpp 2 to 4 (with one chunk
 * there is nothing to reorder). Then zb_zero_place(). */
int zb_zero_group_tail_w(struct zb_schedule *s, struct zb_error *err);

/* The step a compute order leads to: out (initialised here; release it)
 * gets a copy of order's compute order, simulated, lowered, with the
 * collectives placed and, when that ends the step sooner, the W post-pass
 * applied (*grouped says whether). Errors: those of the simulator and of
 * lowering (out is then released). */
int zb_zero_best_step(const struct zb_schedule *order, struct zb_schedule *out,
                      bool *grouped, struct zb_error *err);

#endif
