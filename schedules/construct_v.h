/* construct_v.h - ZB-V built the way the Zero Bubble paper builds it
 * (two-leg backward, warm-up with a memory reserve, W passes placed into
 * gaps against a per-rank slack, refinement, variants; best kept).
 * Internal to schedules/: the `zb-v` family and `zb` call it. */
#ifndef ZBSCHED_CONSTRUCT_V_H
#define ZBSCHED_CONSTRUCT_V_H

#include "zbsched/error.h"
#include "zbsched/profile.h"
#include "zbsched/schedule.h"

/* Fill s (initialised for p, empty lists) with the compute order (F, B, W)
 * of the best constructed candidate that fits every rank's limit; an
 * unlimited rank gets twice 1F1B's activation memory (4p * M_B).
 * Candidates are timed by the simulator and compared by cost, then
 * makespan, then peak memory. Errors: ZB_EUNSUPPORTED unless placement v
 * with vpp 2; ZB_ENOMEM_LIMIT when a rank's limit is below what the
 * construction needs (2 * M_B: one microbatch's two chunks) or no
 * candidate fits. */
int construct_v(const struct zb_profile *p, struct zb_schedule *s,
                   struct zb_error *err);

#endif
