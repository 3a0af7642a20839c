/* lower.h - lowering: a timed compute order becomes per-rank lists with
 * SEND/RECV ops and a final STEP (lower.c explains why they cannot
 * deadlock). */
#ifndef ZBSCHED_LOWER_H
#define ZBSCHED_LOWER_H

#include "zbsched/error.h"
#include "zbsched/schedule.h"

/* Insert SEND/RECV for every cross-rank edge and a final STEP, in an order
 * that cannot deadlock under rendezvous semantics. Needs zb_sim_run() to
 * have succeeded on the compute order (ZB_EINVAL otherwise). */
int zb_lower_run(struct zb_schedule *s, struct zb_error *err);

#endif
