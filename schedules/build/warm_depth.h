/* warm_depth.h - a `zb` candidate for loop placement with one chunk: the
 * list scheduler with a warm-up depth per stage, the depths chosen on the
 * real times and limits. Internal to schedules/. */
#ifndef ZBSCHED_WARM_DEPTH_H
#define ZBSCHED_WARM_DEPTH_H

#include "zbsched/error.h"
#include "zbsched/profile.h"
#include "zbsched/schedule.h"

/* Fill s (initialised for p, empty lists) with the compute order of the
 * list scheduler (zbi_greedy_schedule()) in which stage s holds at most d[s]
 * microbatches between F and B; d starts at 1F1B's p - s scaled by the
 * rank's limit over 1F1B's peak, within what the limit holds, and each
 * depth, then each two neighbouring depths together, move by one while
 * that lowers the simulated cost (a bounded number of tries). Ops carry
 * the simulator's times, s->predicted is filled (measures from times, no
 * bounds). ZB_EUNSUPPORTED unless the placement is loop and vpp is 1;
 * ZB_ENOMEM_LIMIT when every try stalls. */
int zbi_warm_depth_loop(const struct zb_profile *p, struct zb_schedule *s,
                    struct zb_error *err);

#endif
