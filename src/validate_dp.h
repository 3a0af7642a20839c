/* validate_dp.h - the validator's rules for data-parallel collectives
 * (private to validate.c, which calls them as one more check). */
#ifndef ZBSCHED_VALIDATE_DP_H
#define ZBSCHED_VALIDATE_DP_H

#include "zbsched/error.h"
#include "zbsched/schedule.h"

/* With data parallelism (check_shape() rejects collectives without), per
 * rank and stage: one REDUCE_GRAD after the stage's last W (or BW), or,
 * reducing per microbatch, one per microbatch after its W and before the
 * stage's next W, naming that microbatch; for ZeRO-3 one
 * UNSHARD before its first pass and one RESHARD after its last, so no
 * pass runs on sharded weights; below ZeRO-3 no UNSHARD or RESHARD.
 * Needs zb_validate_shape() to hold. ZB_EILLEGAL naming rank, op index
 * and op. */
int zb_validate_collectives(const struct zb_schedule *s,
                            struct zb_error *err);

#endif
