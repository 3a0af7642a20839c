/* bound.h - closed-form lower bounds on cost and makespan for a profile
 * and its memory limits (valid for every legal schedule; bound.c derives
 * them). A finished schedule carries them as `lower_bound` and
 * `makespan_bound` (zb_bound_set()); the simulator only times. */
#ifndef ZBSCHED_BOUND_H
#define ZBSCHED_BOUND_H

#include "zbsched/profile.h"
#include "zbsched/schedule.h"

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

/* zb_bound_cost() and zb_bound_makespan() at once, in one pass over the
 * ranks (the cost bound is the makespan bound's first term). */
void zb_bound_both(const struct zb_profile *p, double *cost,
                   double *makespan);

/* s's bounds into s->predicted (lower_bound, makespan_bound): p's, or,
 * where an FB op of s runs shorter than its F plus its B (profile `fb`),
 * those of p with F and B scaled by the smallest such ratio, so that
 * they hold for s. Once per finished schedule: zb_generator_finish(),
 * or after zb_sim_run() for a schedule read from a file. */
void zb_bound_set(struct zb_schedule *s);

/* The cost bound for every legal schedule of p, those with FB ops
 * included: F and B scaled as zb_bound_set() does, by the smallest
 * fb / (F + B) of any FB op p allows (an F and a B of stages on one
 * rank). Without `fb`, zb_bound_cost(). */
double zb_bound_cost_any(const struct zb_profile *p);

#endif
