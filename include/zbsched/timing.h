/* timing.h - the two rules every timing engine applies, inline because
 * they sit in the hot loops: when a pass may start, and whether a rank's
 * memory fits its limit.
 *
 * The simulator (sim.c) is the definition of a schedule's times; the list
 * scheduler (greedy.c), the constructions (construct.c, construct_v_run.c)
 * and the local search's re-timing and estimate (improve_eval.c,
 * improve_estimate.c) time passes as they place or move them, for speed,
 * and must give the simulator's times. They all ask this header rather
 * than restating a rule: a pass starts at max(rank free, input end +
 * comm), where comm is the transfer time of the edge and 0 between two
 * stages of one rank; a rank holding mem fits a limit when mem is within
 * the limit plus a relative slack. The validator (validate.c) applies the
 * same memory rule. */
#ifndef ZBSCHED_TIMING_H
#define ZBSCHED_TIMING_H

#include <math.h>
#include <stdbool.h>
#include "zbsched/profile.h"

/* ---- The ready-time rule ----------------------------------------------- */

/* Transfer time on the edge from a pass of stage `from` to the dependent
 * pass of the neighbouring stage `to` when the two sit on different
 * ranks: the boundary's own time where boundaries differ, activations
 * and their gradients alike. */
static inline double zb_timing_comm(const struct zb_profile *p, int from,
                                    int to)
{
    return p->stage_comm ? p->stage_comm[from < to ? from : to] : p->comm;
}

/* What that edge adds to its producer's end: 0 when stage `from` sits on
 * to_rank (the rank of stage `to`, which every caller has at hand), else
 * zb_timing_comm(). */
static inline double zb_timing_lag(const struct zb_profile *p, int from,
                                   int to, int to_rank)
{
    return zb_profile_stage_rank(p, from) == to_rank
               ? 0 : zb_timing_comm(p, from, to);
}

/* When the output of a pass of stage `from` that ends at `end` reaches a
 * pass of stage `to` on to_rank (NAN stays NAN: an unplaced producer). */
static inline double zb_timing_arrival(const struct zb_profile *p, int from,
                                       int to, int to_rank, double end)
{
    return end + zb_timing_lag(p, from, to, to_rank);
}

/* When a pass starts: once its rank is free and its input has arrived
 * (fold it over the inputs). A comparison, not fmax(), which is a libm
 * call at -O2; the arrival is never NAN here. */
static inline double zb_timing_start(double rank_free, double arrival)
{
    return arrival > rank_free ? arrival : rank_free;
}

/* ---- The memory tolerance ---------------------------------------------- */

/* Relative slack on memory limits: sums of fractions such as 0.1 round. */
#define ZB_TIMING_MEM_TOL 1e-9

/* The most memory a rank whose limit is `limit` may hold (INFINITY for
 * an unlimited rank). */
static inline double zb_timing_mem_cap(double limit)
{
    return limit * (1 + ZB_TIMING_MEM_TOL);
}

/* Whether holding mem keeps within limit, with the slack. */
static inline bool zb_timing_fits(double mem, double limit)
{
    return mem <= zb_timing_mem_cap(limit);
}

/* How many whole units of memory `unit` a rank with limit `limit` holds
 * with the slack (INFINITY when unit is 0 or the rank unlimited). */
static inline double zb_timing_fit_count(double limit, double unit)
{
    return unit > 0 ? floor(zb_timing_mem_cap(limit) / unit) : INFINITY;
}

#endif
