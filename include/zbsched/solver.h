/* solver.h - the optimal-placement integer program (GLPK, solver/): the
 * best compute order for the real per-stage times, comm and per-rank
 * memory limits, with a proven lower bound on how good it is.
 *
 * Ownership: const pointer arguments are borrowed, never kept; `out` is
 * filled as by zb_generate() and released by the caller. Errors: ZB_EINVAL
 * (bad options), ZB_ENOMEM_LIMIT (no legal schedule fits a limit; the
 * message names the smallest limit that works), ZB_EIO (export), ZB_ESOLVER
 * (GLPK failed). The library never prints: progress goes to a callback. */
#ifndef ZBSCHED_SOLVER_H
#define ZBSCHED_SOLVER_H

#include <signal.h>
#include <stdbool.h>
#include "zbsched/error.h"
#include "zbsched/profile.h"
#include "zbsched/schedule.h"

/* ---- Options --------------------------------------------------------- */

enum zb_objective {
    ZB_OBJECTIVE_COST,      /* max span over ranks (DESIGN.md `cost`) */
    ZB_OBJECTIVE_MAKESPAN   /* last end - first start over all ranks */
};

struct zb_solver_progress {
    double elapsed;         /* seconds since the search began */
    double objective;       /* best schedule so far (simulated) */
    double bound;           /* best proven lower bound */
    double gap;             /* objective / bound - 1 */
    long nodes;             /* branch-and-bound nodes so far, all models */
};

struct zb_solver_options {
    double time_limit;      /* seconds of search (default 60) */
    double gap;             /* stop once objective/bound - 1 <= gap (0) */
    enum zb_objective objective;          /* default cost */
    int threads;            /* solver threads, 1 or 2 (default 2) */
    /* Nonzero stops the search; the best schedule so far is returned
     * (a SIGINT handler sets it). NULL: never interrupted. */
    const volatile sig_atomic_t *interrupt;
    /* Called from the calling thread at most once a second. */
    void (*progress)(const struct zb_solver_progress *pr, void *ctx);
    void *progress_ctx;
    /* Prove with the integer program alone: no closed-form bound in the
     * model or the stopping rule (to cross-check that bound in tests). */
    bool independent;
};

/* Defaults: 60 s, gap 0, cost, 2 threads, no interrupt, no progress. */
void zb_solver_options_init(struct zb_solver_options *opt);

/* ---- Solving --------------------------------------------------------- */

/* Search for the best schedule for p under opt (NULL: defaults). Starts
 * from the `zb` heuristic and never returns anything worse; out is
 * lowered, simulated and validated (memory included), named "ilp", with
 * out->solver filled: status "optimal" (proven, within a relative 3e-7),
 * "feasible" (better than the heuristic, not proven) or "heuristic" (the
 * heuristic's schedule, nothing better found); a search stopped by `gap`
 * reports feasible or heuristic with that gap. */
int zb_ilp_solve(const struct zb_profile *p,
                 const struct zb_solver_options *opt,
                 struct zb_schedule *out, struct zb_error *err);

/* The smallest limit under which rank r has any legal schedule: every
 * chunk of one microbatch holds its activations at the rank's last F. */
double zb_ilp_min_limit(const struct zb_profile *p, int r);

/* Write the model (all orders at least as good as the `zb` heuristic) to
 * path in CPLEX LP format, for other solvers. */
int zb_ilp_export_lp(const struct zb_profile *p,
                     const struct zb_solver_options *opt, const char *path,
                     struct zb_error *err);

#endif
