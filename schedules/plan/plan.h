/* plan.h - the `zb` planner (internal to schedules/): its vocabulary and
 * the contract of each of its files.
 *
 * `zb` plans the way SQLite's query planner does: it builds candidates,
 * costs them, searches within a budget and picks. It collects every
 * candidate the table applies to the profile, each built and timed once
 * (candidates.c); picks the choice, the best that fits (pick.c); plans
 * the searches, which starts get how much of the budget (search_plan.c);
 * runs them and keeps the best result (zb.c); and with data parallelism
 * picks once more among that result and the candidates by step time.
 * So `zb` is never worse than any of its candidates. `ilp` hands the
 * same collection and `zb`'s result to the solver (ilp.c), and
 * generate's pick weighs it against every family in every shape
 * (choose.c), so nothing is built twice. A new candidate is one row of
 * candidates.c's table; the budget split is one function,
 * zbi_plan_searches().
 *
 * Vocabulary:
 *   candidate    a compute order (not lowered) with its measures, named
 *                after where it came from ("list-scheduler", "zb-v", ...):
 *                one row of the candidate table, or one fixed family.
 *   role         what the planner may do with a candidate (enum
 *                plan_role): be chosen, or be a start of its own.
 *   choice       the best candidate that fits the limit by cost, then
 *                makespan, then memory (pick.c), among those whose role
 *                lets them be chosen.
 *   runner-up    the best fitting candidate after the choice, among
 *                those that may be chosen save finished orders, whose
 *                order differs from the choice's: a second start, in
 *                another basin.
 *   start of its own  a candidate kept out of the choice (chosen only
 *                where nothing else fits or nothing is searched) and
 *                searched by itself where it fits and starts better than
 *                the choice: a search settles in its start's basin, and
 *                these starts win from their own.
 *   settled      the collection stopped early: a candidate met its lower
 *                bounds on cost and makespan, so a later one could at
 *                best tie it.
 *   close        a fitting candidate within PLAN_CLOSE_GAP of the cost
 *                bound (pick.c): at the default effort the dear starts of
 *                their own are then not built, and a close choice is not
 *                searched.
 *   outclassed   a fixed family left out of the collection: it never
 *                holds more than its peak_cap (generator.h), and a kept
 *                candidate costs less than the bound at that memory.
 *   search start a candidate and its share of the budget (struct
 *                plan_start).
 *   share        a search's budget in default budgets (--effort 0:
 *                zbi_improve_default_effort()); one plan's shares sum to
 *                at most PLAN_BUDGETS.
 *
 * Ownership: a collection owns its schedules (zbi_plan_release() frees
 * them); plan_start and the pick borrow them. */
#ifndef ZBSCHED_PLAN_H
#define ZBSCHED_PLAN_H

#include <stdbool.h>
#include "zbsched/error.h"
#include "zbsched/frontier.h"
#include "zbsched/options.h"
#include "zbsched/profile.h"
#include "zbsched/schedule.h"

/* ---- Candidates (candidates.c) ---- */

enum plan_role {
    PLAN_CHOSEN,        /* may be the choice or the runner-up */
    PLAN_FIXED,         /* a fixed family's order: as PLAN_CHOSEN; the
                           ilp warm start and generate's pick take these */
    PLAN_FINISHED,      /* a finished order that may be the choice but
                           not the runner-up ("building-blocks", V below
                           1F1B's memory): a runner-up's half budget from
                           it costs more than it gains (docs/tuning.md,
                           "Building-block search") */
    PLAN_DEPTH_START,   /* a start of its own searched beside the choice
                           and the runner-up ("warm-depth", loop) */
    PLAN_ROOM_START,    /* a start of its own that takes the runner-up's
                           search and all but a quarter of the choice's
                           ("zb-v-b-room", V) */
    PLAN_CAPPED_START   /* a start of its own that, with no room start
                           searched, takes the same and adds it to its
                           own ("capped-list") */
};

/* A start of its own (kept out of the choice); the others may be chosen. */
static inline bool plan_own_start(enum plan_role r)
{
    return r >= PLAN_DEPTH_START;
}

/* The candidates of one profile, in the order the table built them:
 * its rows, then every fixed family that serves the profile and does not
 * overlap passes (zb_generator.overlaps), in zb_generators order. Each is
 * timed (simulated, or measured from its builder's own times, which
 * leaves seq unset) and carries the profile's bounds. */
struct plan_candidates {
    struct zb_schedule *s;
    enum plan_role *role;       /* per candidate */
    bool *simulated;            /* per candidate: as zb_sim_run() leaves
                                   it (else measured: no seq) */
    int n;
    bool *outclassed;           /* per zb_generators entry: left out as
                                   outclassed */
    bool eager;                 /* opt asks for more than the default
                                   search (zbi_pick_eager()) */
    bool settled;               /* the collection stopped at a candidate
                                   that met its bounds (no data
                                   parallelism) */
    double cost_bound, makespan_bound;  /* the profile's, computed once */
    double cap, cap_bound;      /* the cost bound at the last peak_cap
                                   asked (outclassed()); cap 0: none */
};

/* Build and time every candidate for p. opt may be NULL; Ctrl-C
 * (opt->interrupt) ends the fixed families early. */
void zbi_plan_collect(const struct zb_profile *p,
                      const struct zb_options *opt,
                      struct plan_candidates *out);
void zbi_plan_release(struct plan_candidates *c);

/* The first candidate of c named `name` with role r, or -1. */
int zbi_plan_find(const struct plan_candidates *c, const char *name,
                  enum plan_role r);

/* ---- The comparison of timed schedules (pick.c) ---- */

/* Whether x beats y: cost, then makespan, then the largest peak memory,
 * each within a relative 1e-9 (zb_measures_better()). */
bool zbi_pick_better(const struct zb_schedule *x,
                     const struct zb_schedule *y);

/* Whether x beats y and holds no more memory than y on any rank (within
 * a relative 1e-9): a rewrite of y that saves time must not cost memory
 * (V-Half's compaction). */
bool zbi_pick_better_leaner(const struct zb_schedule *x,
                            const struct zb_schedule *y);

/* With data parallelism: whether x's step ends sooner than y's, or as
 * soon (within 1e-9) and x is better (zbi_pick_better()): the step's
 * optimum is flat, so another order often ties it more cheaply. */
bool zbi_pick_shorter(const struct zb_schedule *x,
                      const struct zb_schedule *y);

/* Whether s's cost meets its lower bound (within 1e-9): s is optimal,
 * and no search or other start can improve on it. */
bool zbi_pick_meets_bound(const struct zb_schedule *s);

/* A relative gap to the cost bound within which a fitting order is
 * close: what any search or further start could gain is at most that,
 * so at the default effort the dear starts are not built and nothing is
 * searched (docs/tuning.md, "Close to the bound"). */
#define PLAN_CLOSE_GAP 3e-3

/* Whether s fits and costs at most PLAN_CLOSE_GAP over its bound. */
bool zbi_pick_close(const struct zb_schedule *s);

/* Whether opt asks for more than the default search on p (--effort
 * above zbi_improve_default_effort()): then closeness saves nothing (opt
 * may be NULL). */
bool zbi_pick_eager(const struct zb_options *opt, const struct zb_profile *p);

/* The best that fits: the best candidate considered that fits the limit
 * (zbi_pick_better(); the first of equals). Those over it only tell how
 * far over the leanest one is. */
struct plan_pick {
    const struct zb_schedule *sched;    /* borrowed; NULL: none fits */
    double least_over;  /* smallest max over ranks of peak / limit */
    int over_rank;
    double over_peak;
};

void zbi_pick_init(struct plan_pick *b);
void zbi_pick_consider(struct plan_pick *b, const struct zb_schedule *cand);

/* 0 when a candidate fits, else ZB_ENOMEM_LIMIT naming what the leanest
 * one needs. */
int zbi_pick_result(const struct plan_pick *b, const struct zb_profile *p,
                    struct zb_error *err);

/* The choice among c into *out (borrowed from c): the best that fits
 * among the candidates that may be chosen; the starts of their own only
 * where none of those fits or nothing is searched (--effort < 0), so
 * `zb` stays never worse than any candidate. ZB_ENOMEM_LIMIT when
 * nothing fits. */
int zbi_pick_choice(const struct plan_candidates *c,
                    const struct zb_profile *p, const struct zb_options *opt,
                    const struct zb_schedule **out, struct zb_error *err);

/* ---- The search plan (search_plan.c) ---- */

/* The most default budgets one plan spends, over all its starts. */
#define PLAN_BUDGETS 2.5
/* The most starts one plan has: the choice, the runner-up, and two
 * starts of their own. */
#define PLAN_MAX_STARTS 4

struct plan_start {
    const struct zb_schedule *from;     /* borrowed from the collection */
    double share;       /* of the default budget; 0: not searched */
};

/* The searches for `zb` on c from its choice: starts[0] is always the
 * choice (share 0 where it meets its bound: it is optimal; and, unless
 * opt is eager, where it is close: then it is the only start), then the
 * runner-up and the starts of their own, in the order they are searched.
 * Returns the count. */
int zbi_plan_searches(const struct zb_profile *p,
                      const struct zb_options *opt,
                      const struct plan_candidates *c,
                      const struct zb_schedule *choice,
                      struct plan_start starts[PLAN_MAX_STARTS]);

/* ---- The frontier's shapes (frontier.c), which generate's pick
 * (choose.c) also builds in ---- */

/* Loop with 1 to 4 chunks, and V. */
#define PLAN_SHAPES 5
extern const struct zb_frontier_shape zbi_plan_shapes[PLAN_SHAPES];

/* opt (NULL: the defaults) with the frontier's effort per zb point
 * (ZB_FRONTIER_EFFORT) where it asks for zb's default. */
void zbi_plan_point_options(const struct zb_options *opt,
                            struct zb_options *out);

/* ---- zb (zb.c) ---- */

/* `zb`'s order from the collection c for p into s (initialised for p),
 * simulated (as zb_sim_run() leaves it): pick, plan the searches,
 * search, and with data parallelism pick by step; ZB_ENOMEM_LIMIT when
 * nothing fits. opt is never NULL. */
int zbi_plan_zb(const struct zb_profile *p, const struct zb_options *opt,
                const struct plan_candidates *c, struct zb_schedule *s,
                struct zb_error *err);

/* p's times divided by its mean pass time (or its comm, or 1 where all
 * are 0) and snapped to 24 significant bits into q (a copy of p), so
 * that p in any unit plans alike: zb and generate's pick decide on q and
 * time the winner on p. Memory is unchanged: fitting depends only on
 * each rank's order. */
void zbi_plan_normalise(const struct zb_profile *p, struct zb_profile *q);

/* zbi_plan_zb() on q (a normalised profile, with its collection c), the
 * order then copied into s (initialised for the profile q came from)
 * and simulated there. */
int zbi_plan_zb_on(const struct zb_profile *q, const struct zb_options *opt,
                   const struct plan_candidates *c, struct zb_schedule *s,
                   struct zb_error *err);

/* ---- Progress (report.c) ---- */

/* Tell opt's progress callback (if any) that `step`, begun at `since`
 * (zb_clock_now()), ended, if it took a second or more: done schedules,
 * the best cost so far (INFINITY: none). */
void zbi_plan_report(const struct zb_options *opt, const char *step,
                     int done, double best, double since);

#endif
