/* construct.h - the Zero Bubble paper's constructive heuristic (loop
 * placement, one chunk per rank), as a candidate for the `zb` generator.
 * Internal to schedules/, not part of the public API. */
#ifndef ZBSCHED_CONSTRUCT_H
#define ZBSCHED_CONSTRUCT_H

#include "zbsched/error.h"
#include "zbsched/profile.h"
#include "zbsched/schedule.h"

/* Fill s (initialised for p, empty lists) with the compute order (F, B, W)
 * of the best of the heuristic's variants: the reference's 2 x 2 x 2
 * (warm-up rule, "prioritise B", gap filling with W) times our "B first".
 * Variants are timed by the construction, which applies the simulator's
 * rules, and compared with zb_measures_better(); only those within every
 * rank's memory limit count. The winner is checked with zb_sim_run() (on
 * a disagreement every variant is simulated instead). Reads the per-stage
 * times, comm, M_B, M_W and per-rank limits (INFINITY = unlimited).
 * O(p*m) per variant. s comes back simulated (s->predicted filled).
 * ZB_EUNSUPPORTED unless the placement is loop and vpp is 1;
 * ZB_ENOMEM_LIMIT when no variant fits (a rank cannot hold one M_B). */
int zbi_construct_loop(const struct zb_profile *p, struct zb_schedule *s,
                 struct zb_error *err);

#define CONSTRUCT_VARIANTS 16

/* One variant (0 <= variant < CONSTRUCT_VARIANTS) into s, each op with
 * the start and end the construction gave it, which by design are the
 * simulator's (for tests and comparisons). Errors as zbi_construct_loop() except
 * that an order over the limit is returned (ZB_ENOMEM_LIMIT only for a rank
 * that cannot hold one activation). */
int zbi_construct_variant(const struct zb_profile *p, int variant,
                         struct zb_schedule *s, struct zb_error *err);

#endif
