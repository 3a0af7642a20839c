/* solver.h - the optimal-placement integer program (GLPK, solver/): the
 * best compute order for the real per-stage times, comm and per-rank
 * memory limits, with a proven lower bound on how good it is.
 *
 * The solver knows nothing of the generator table: its warm start comes
 * from the caller (schedules/plan/ilp.c, the `ilp` row).
 * Ownership: const pointer arguments are borrowed, never kept. Errors:
 * ZB_EINVAL (bad options), ZB_ENOMEM_LIMIT (no legal schedule fits a
 * limit; the message names the smallest limit that works), ZB_EIO
 * (export), ZB_ESOLVER (GLPK failed). The library never prints: progress
 * goes to a callback. */
#ifndef ZBSCHED_SOLVER_H
#define ZBSCHED_SOLVER_H

#include "zbsched/error.h"
#include "zbsched/options.h"
#include "zbsched/profile.h"
#include "zbsched/schedule.h"

/* ---- Solving --------------------------------------------------------- */

/* Search for the best compute order for p under opt (NULL: defaults;
 * time_limit, gap, objective, threads, interrupt, progress, independent)
 * and fill s (initialised for p, empty lists) with it, named as s is, and
 * s->solver. The search starts from the best of the caller's candidates
 * warm[0..nwarm) (simulated compute orders; those over a memory limit are
 * skipped; none: one microbatch at a time) and never returns anything
 * worse. The order is not lowered: the generate pipeline (generator.h)
 * lowers and validates it like any generator's. s->solver.status is
 * "optimal" (proven, within a relative 3e-7), "feasible" (better than the
 * warm start, not proven), "heuristic" (the warm start, nothing better
 * found) or "interrupted" (opt->interrupt was set: the best order so far,
 * within a second; the warm start itself may be cut short then); a search
 * stopped by `gap` reports feasible or heuristic with that gap.
 * Profiles beyond zb_ilp_searchable() get the window search of large
 * instances only (docs/ilp.md). */
int zb_ilp_solve(const struct zb_profile *p, const struct zb_options *opt,
                 const struct zb_schedule *warm, int nwarm,
                 struct zb_schedule *s, struct zb_error *err);

/* Whether the full integer program can be built for p: at most 8192
 * passes and 512 on one rank (beyond, one propagation takes seconds and
 * its bitsets hundreds of megabytes); otherwise zb_ilp_solve() improves
 * the best warm start by windows of the order solved as small models,
 * with the closed-form bound. */
bool zb_ilp_searchable(const struct zb_profile *p);

/* The smallest limit under which rank r has any legal schedule: every
 * chunk of one microbatch holds its activations at the rank's last F. */
double zb_ilp_min_limit(const struct zb_profile *p, int r);

/* Write the model (all orders at least as good as the best warm
 * candidate, as for zb_ilp_solve()) to path in CPLEX LP format, for other
 * solvers. */
int zb_ilp_export_lp(const struct zb_profile *p, const struct zb_options *opt,
                     const struct zb_schedule *warm, int nwarm,
                     const char *path, struct zb_error *err);

#endif
