/* sim.h - the simulator: times any schedule's compute ops (generated,
 * hand-written or imported) and fills its predicted measures. */
#ifndef ZBSCHED_SIM_H
#define ZBSCHED_SIM_H

#include "zbsched/error.h"
#include "zbsched/schedule.h"

/* Time the compute ops (event-driven: a rank runs its ops in list order,
 * each starting when the rank is free and its inputs have arrived, comm
 * added on cross-rank edges) and the data-parallel collectives (zero.h),
 * and fill s->predicted but for the lower bounds (left 0): those are set
 * once per finished schedule (bound.h, zb_bound_set()), not on each of
 * the thousands of orders a search times.
 * Ops must pass zb_validate_ranges(); ZB_EILLEGAL if a pass waits on a
 * pass that never runs (cycle, missing). */
int zb_sim_run(struct zb_schedule *s, struct zb_error *err);

/* zb_sim_run()'s measures for an order whose compute ops already hold the
 * times it would give them (a builder that times each pass as it places
 * it: zbi_greedy_best(), zbi_construct_v(), zbi_warm_depth_loop()):
 * s->predicted from those times (no lower bounds either), in one walk
 * over the lists instead of the event loop (v-min at p 64, m 1024: 6 ms
 * against 74). The ops
 * seq is left alone, so lowering still needs zb_sim_run(). With data
 * parallelism it is zb_sim_run() (the collectives need the loop). */
int zb_sim_measure(struct zb_schedule *s, struct zb_error *err);

#endif
