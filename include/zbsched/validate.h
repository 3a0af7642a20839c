/* validate.h - the one executable definition of a legal schedule. Every
 * rule lives here, the shape of an op list included (the memory
 * tolerance is timing.h's, shared with the timing engines); the
 * simulator, the generate pipeline, the commands and zbexec call these
 * rather than restating them. Messages name rank, op index and op. */
#ifndef ZBSCHED_VALIDATE_H
#define ZBSCHED_VALIDATE_H

#include <stdbool.h>
#include "zbsched/error.h"
#include "zbsched/profile.h"
#include "zbsched/schedule.h"

/* Whether holding mem on rank r keeps within r's limit, with timing.h's
 * slack (zb_timing_fits(), which the hot loops call inline). */
bool zb_validate_within_limit(const struct zb_profile *p, int r, double mem);

/* Every op but STEP names a stage and microbatch of the profile, and the
 * stage belongs to the op's rank (what the simulator needs to index;
 * compute-only lists pass it). ZB_EILLEGAL. */
int zb_validate_ranges(const struct zb_schedule *s, struct zb_error *err);

/* The shape of a lowered schedule: ranges as above, every comm op's peer
 * the rank of the neighbouring stage it talks to, one STEP ending each
 * list (what zbexec needs to index, even with --no-validate). */
int zb_validate_shape(const struct zb_schedule *s, struct zb_error *err);

/* Every rule but the memory limit: shape, passes exactly once, send/recv
 * pairing and order, every op after what it needs, no deadlock under
 * blocking semantics, collectives as data parallelism needs them (none
 * without it; docs/zero.md). For schedules that are well formed but may
 * not fit (fixed families, `eval` of any file). */
int zb_validate_order(const struct zb_schedule *s, struct zb_error *err);

/* The legal-schedule definition: zb_validate_order() and memory within
 * every rank's limit (ZB_ENOMEM_LIMIT). */
int zb_validate_schedule(const struct zb_schedule *s, struct zb_error *err);

#endif
