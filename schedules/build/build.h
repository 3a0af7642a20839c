/* build.h - the building blocks of memory-aware orders (internal to
 * schedules/, not part of the public API): the list scheduler and its
 * policies (greedy.c), its in-flight caps searched (greedy_caps.c), its
 * warm-up depths chosen per stage (warm_depth.c), the Zero Bubble paper's
 * two constructions (construct.c for loop placement, construct_v*.c for
 * V), the controllable-memory paper's search over building blocks
 * (block_*.c, on a unit grid of its own: block_grid.h), and the side
 * thread they share the work with (side_thread.c).
 *
 * Vocabulary. A *builder* places passes one at a time on the real
 * per-stage times, comm and per-rank limits, timing each as it places it
 * by the simulator's rule (zbsched/timing.h), so it sees the gaps it
 * leaves and never breaks a limit (timing.h's tolerance). A *policy* is
 * the list scheduler's rule for which ready pass a rank runs; a *cap* is
 * the most microbatches a stage may hold between its F and its B; a
 * *warm-up depth* is such a cap chosen per stage; a *variant* is one
 * setting of a construction's rules, and a builder tries many and keeps
 * the best by zb_measures_better() (cost, then makespan, then memory).
 * The contract: every entry fills the caller's schedule s (initialised for
 * p, empty lists) with a compute order (F, B, W) that fits every rank's
 * limit, each op with the start and end the simulator would give it;
 * ZB_EUNSUPPORTED for a shape the builder does not cover, ZB_ENOMEM_LIMIT
 * when no order it can build fits. Work split over the side thread never
 * changes a result: the same order comes back with one thread or two. */
#ifndef ZBSCHED_BUILD_H
#define ZBSCHED_BUILD_H

#include <pthread.h>
#include <stdbool.h>
#include "zbsched/error.h"
#include "zbsched/profile.h"
#include "zbsched/schedule.h"

/* ---- The list scheduler (greedy.c) ------------------------------------ */

/* A rank's choice among the passes it can start: the one ready first; on
 * a tie B, then F, then W, then the later stage. The patience values bend
 * that rule toward the critical path (B passes flowing back to rank 0). */
struct greedy_policy {
    /* A W ready now runs only if no B or F becomes ready before
     * now + w_patience * T_W: 0 fills every gap with W, 1 never lets a W
     * delay a pass that is about to be ready. */
    double w_patience;
    /* An F ready now waits for a B that becomes ready before
     * now + f_patience * T_F: 0 never waits. */
    double f_patience;
    /* Per stage, the most microbatches it holds between F and B (its
     * warm-up depth, kept in the steady state), or NULL: memory alone
     * limits them. */
    const int *in_flight;
    /* Forwards first: a B ready now waits for an F that becomes ready
     * before now + b_patience * T_B (0: never waits). Where memory holds
     * most microbatches' forwards and the first backward is a long round
     * trip away (interleaved, m close to p vpp), a rank that runs every
     * forward it can before that round trip ends idles less. */
    double b_patience;
};

/* Memory-aware list scheduler (the Zero Bubble paper's automatic
 * scheduling, section 3, in our own form): simulates time and, whenever a
 * rank can start something, picks the pass that can start first under the
 * policy; F passes only when the rank's memory limit allows (keeping room
 * for the microbatch's later chunks on the same rank), passes of one kind
 * and stage in microbatch order. Fills s with the compute order, each op
 * with the start and end the simulator would give it.
 * ZB_ENOMEM_LIMIT when the limit stalls it. */
int zbi_greedy_schedule(const struct zb_profile *p,
                        const struct greedy_policy *pol,
                        struct zb_schedule *s, struct zb_error *err);

/* zbi_greedy_schedule() under each policy in a fixed table; s gets the
 * order with the lowest simulated cost (then makespan, then peak
 * memory). */
int zbi_greedy_best(const struct zb_profile *p, struct zb_schedule *s,
                    struct zb_error *err);

/* zbi_greedy_best() with every limit above 1F1B's activation peak lowered
 * to it; s (initialised for p) gets the order. The list scheduler starts
 * forwards while memory allows, so more memory can make it worse:
 * forwards of early chunks crowd the ranks before the backwards return
 * (interleaved placement above all); its run at 1F1B's memory fits any
 * larger limit. ZB_EUNSUPPORTED where no rank has more. */
int zbi_greedy_best_1f1b(const struct zb_profile *p, struct zb_schedule *s,
                         struct zb_error *err);

/* The policies zbi_greedy_best() runs, in order; under V placement the
 * first GREEDY_V_POLICIES. */
#define GREEDY_POLICIES 8
#define GREEDY_V_POLICIES 4
extern const struct greedy_policy zbi_greedy_policies[GREEDY_POLICIES];

/* ---- In-flight caps (greedy_caps.c) ----------------------------------- */

/* V placement (two chunks) with some rank below 1F1B's activation peak,
 * or interleaved loop placement (vpp >= 2) at any limit or none:
 * zbi_greedy_schedule() with in-flight caps that follow each stage's round
 * trip, their two parameters searched with the V policies (once ready
 * first and once forwards first), or zbi_greedy_best_1f1b() where that is
 * better; s gets the best order found, timed.
 * ZB_EUNSUPPORTED for other profiles and for those too large for the
 * search's budget to run its first grid; ZB_ENOMEM_LIMIT when every run
 * stalls. */
int zbi_greedy_capped(const struct zb_profile *p, struct zb_schedule *s,
                      struct zb_error *err);

/* ---- Building blocks (block_search.c and the grid, block_grid.h) ----- */

/* V placement (two chunks, pp >= 2): the controllable-memory paper's
 * search over building blocks (its repeat, squeeze and reorder on the
 * unit grid, block_grid.h), each block's order timed with the real
 * durations; s gets the order of the best that fits every rank's limit.
 * The grid counts live chunk activations the paper's way (F +1, W -1),
 * each at the largest M_B, so its orders fit whatever M_W is. Eager: a
 * larger work budget (asked for more effort).
 * ZB_EUNSUPPORTED for other shapes and where the work is over the
 * budget; ZB_ENOMEM_LIMIT when no block fits. */
int zbi_block_search(const struct zb_profile *p, bool eager,
                     struct zb_schedule *s, struct zb_error *err);

/* ---- Warm-up depths (warm_depth.c) ------------------------------------ */

/* Loop placement with one chunk: the compute order of the list scheduler
 * in which stage s holds at most d[s] microbatches between F and B; d
 * starts at 1F1B's p - s scaled by the rank's limit over 1F1B's peak,
 * within what the limit holds, and each depth, then each two neighbouring
 * depths together, move by one while that lowers the simulated cost (a
 * bounded number of tries). s->predicted is filled (measures from times,
 * no bounds). ZB_EUNSUPPORTED unless the placement is loop and vpp is 1;
 * ZB_ENOMEM_LIMIT when every try stalls. */
int zbi_warm_depth_loop(const struct zb_profile *p, struct zb_schedule *s,
                        struct zb_error *err);

/* ---- The loop construction (construct.c) ------------------------------ */

/* The Zero Bubble paper's constructive heuristic (loop placement, one
 * chunk per rank): the best of its variants, the reference's 2 x 2 x 2
 * (warm-up rule, "prioritise B", gap filling with W) times our "B first".
 * Variants are timed by the construction and compared with
 * zb_measures_better(); only those within every rank's memory limit
 * count. The winner is checked with zb_sim_run() (on a disagreement every
 * variant is simulated instead). Reads the per-stage times, comm, M_B,
 * M_W and per-rank limits (INFINITY = unlimited). O(p*m) per variant. s
 * comes back simulated (s->predicted filled).
 * ZB_EUNSUPPORTED unless the placement is loop and vpp is 1;
 * ZB_ENOMEM_LIMIT when no variant fits (a rank cannot hold one M_B). */
int zbi_construct_loop(const struct zb_profile *p, struct zb_schedule *s,
                       struct zb_error *err);

#define CONSTRUCT_VARIANTS 16

/* One variant (0 <= variant < CONSTRUCT_VARIANTS) into s, each op with
 * the start and end the construction gave it, which by design are the
 * simulator's (for tests and comparisons). Errors as zbi_construct_loop()
 * except that an order over the limit is returned (ZB_ENOMEM_LIMIT only
 * for a rank that cannot hold one activation). */
int zbi_construct_variant(const struct zb_profile *p, int variant,
                          struct zb_schedule *s, struct zb_error *err);

/* ---- The V construction (construct_v.c, construct_v_run.c) ------------ */

/* ZB-V built the way the Zero Bubble paper builds it (two-leg backward,
 * warm-up with a memory reserve, W passes placed into gaps against a
 * per-rank slack, refinement, variants; best kept); the `zb-v` family and
 * `zb` call it, and `zb` also weighs it with one rule changed:
 *
 * How a rank full to its limit makes room for its next F: the paper's
 * way (W passes, oldest first), or first a B whose input is already
 * there (its second leg before its first), then W's if still needed. A
 * B frees more than a W (M_B - M_W against M_W) and moves a backward
 * stream on, where a W only frees; at 1F1B's limit, where every rank is
 * full through most of the steady state, that is the difference (see
 * docs/model.md, "V at 1F1B's memory"). Neither rule wins everywhere. */
enum construct_v_rules {
    CONSTRUCT_V_PAPER,
    CONSTRUCT_V_B_ROOM
};

/* The best candidate constructed under `rules` that fits every rank's
 * limit; an unlimited rank gets twice 1F1B's activation memory (4p *
 * M_B). Candidates are timed by the simulator's rule and compared by cost,
 * then makespan, then peak memory. Errors: ZB_EUNSUPPORTED unless
 * placement v with vpp 2; ZB_ENOMEM_LIMIT when a rank's limit is below
 * what the construction needs (2 * M_B: one microbatch's two chunks) or
 * no candidate fits. */
int zbi_construct_v(const struct zb_profile *p, enum construct_v_rules rules,
                    struct zb_schedule *s, struct zb_error *err);

/* zbi_construct_v() running every refinement chain, also those it skips as
 * repeats of one it ran (a rule their decisions never turned on:
 * construct_v.c, RULE_*): the same order wherever the tuning's budget
 * does not bind, in more time. For tests. */
int zbi_construct_v_every_chain(const struct zb_profile *p,
                                enum construct_v_rules rules,
                                struct zb_schedule *s,
                                struct zb_error *err);

/* ---- The side thread (side_thread.c) ---------------------------------- */

/* One piece of work on a second thread while the caller does its own.
 * Every user's result must not depend on which thread ran what: when no
 * thread can be had, the work runs in zbi_side_thread_join() instead, and
 * the result is the same. */
struct side_thread {
    void *(*fn)(void *);
    void *arg;
    pthread_t thread;
    bool started;
};

/* Start fn(arg) on a thread of its own, if one can be had. */
void zbi_side_thread_start(struct side_thread *t, void *(*fn)(void *),
                           void *arg);
/* Wait for fn(arg) to end, or run it here if no thread started. */
void zbi_side_thread_join(struct side_thread *t);

#endif
