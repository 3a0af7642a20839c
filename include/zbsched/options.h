/* options.h - what a caller may ask of a generator beyond the profile:
 * one struct for every row of the generator table (generator.h), so a
 * search such as `ilp` is called like any other family. Rows read the
 * fields they understand and ignore the rest. */
#ifndef ZBSCHED_OPTIONS_H
#define ZBSCHED_OPTIONS_H

#include <signal.h>
#include <stdbool.h>

enum zb_objective {
    ZB_OBJECTIVE_COST,      /* max span over ranks (docs/design.md) */
    ZB_OBJECTIVE_MAKESPAN   /* last end - first start over all ranks */
};

/* What a progress report is about: the ILP's search (objective, bound,
 * gap, nodes), its warm start (reported once, when it ends), a sweep's
 * points (done of total), or a step of zb's plan that took a second or
 * more ended (`step` names it, done counts its schedules, objective the
 * best cost so far, elapsed the step's seconds; wall 0); the other
 * fields are 0 there. */
enum zb_progress_phase {
    ZB_PROGRESS_SEARCH,
    ZB_PROGRESS_WARM_START,
    ZB_PROGRESS_SWEEP,
    ZB_PROGRESS_STEP
};

struct zb_progress {
    enum zb_progress_phase phase;
    double elapsed;         /* seconds since the phase began */
    double wall;            /* seconds since the library call began */
    double objective;       /* best schedule so far (simulated) */
    double bound;           /* best proven lower bound */
    double gap;             /* objective / bound - 1 */
    long nodes;             /* branch-and-bound nodes so far, all models */
    int done, total;        /* sweep: points done of total */
    const char *step;       /* ZB_PROGRESS_STEP: "candidates", "search" */
};

struct zb_options {
    double time_limit;      /* seconds of search (default 60) */
    double gap;             /* stop once objective/bound - 1 <= gap (0) */
    enum zb_objective objective;          /* default cost */
    int threads;            /* search threads, 1 or 2 (default 2) */
    unsigned long seed;     /* randomised rows: the seed (default 0) */
    /* zb: seconds of local search on the chosen order, converted into a
     * fixed amount of work (the result does not depend on the machine's
     * speed or load); 0: the default budget, which grows with the
     * schedule (schedules/search/search.h); < 0: no search. */
    double effort;
    /* Nonzero stops a search; the best schedule so far is returned (a
     * SIGINT handler sets it). NULL: never interrupted. */
    const volatile sig_atomic_t *interrupt;
    /* Called from the calling thread at most once a second (ilp,
     * zb_frontier_build()), and as each step of zb's plan ends; NULL:
     * quiet. */
    void (*progress)(const struct zb_progress *pr, void *ctx);
    void *progress_ctx;
    /* ilp: also write the model in CPLEX LP format to this path, before
     * solving (NULL: no export). */
    const char *export_lp;
    /* ilp: prove with the integer program alone, no closed-form bound in
     * the model or the stopping rule (to cross-check that bound). */
    bool independent;
};

/* Defaults: 60 s, gap 0, cost, 2 threads, seed 0, effort 0 (default
 * budget), no interrupt, no progress, no export. */
void zb_options_init(struct zb_options *opt);

/* opt, or the defaults written into *def when opt is NULL. */
const struct zb_options *zb_options_or_default(const struct zb_options *opt,
                                               struct zb_options *def);

#endif
