/* bound.h - closed-form lower bounds on cost and makespan for a profile
 * and its memory limits (valid for every legal schedule; bound.c derives
 * them). The simulator reports them as `lower_bound`. */
#ifndef ZBSCHED_BOUND_H
#define ZBSCHED_BOUND_H

#include "zbsched/profile.h"

/* Lower bound on cost = max over ranks of the span any legal schedule must
 * have on that rank (busy time + forced head and tail idle). */
double zb_bound_cost(const struct zb_profile *p);

/* Lower bound on makespan: the cost bound, and for every rank its busy
 * time plus the earliest its first pass can start. */
double zb_bound_makespan(const struct zb_profile *p);

/* Lower bound on the step with data parallelism (dp >= 2; zero.h's
 * step_time): the makespan bound per rank, plus the gather ZeRO-3 waits
 * for at the start and the rank's shortest REDUCE_GRAD after its last W.
 * Without data parallelism, the makespan bound. */
double zb_bound_step(const struct zb_profile *p);

#endif
