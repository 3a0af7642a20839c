/* ilp.h - internals of the integer-program solver (not public API): the
 * pass instance, orders, the fixed-order relation that shapes a model and
 * the GLPK model. The search is layered on top, each layer calling only
 * those below it: ilp_shared.h (the blackboard the threads share),
 * ilp_workers.h (the searches that run in them), ilp_search.h (the
 * coordinator). docs/ilp.md explains the model. */
#ifndef ZBSCHED_SOLVER_ILP_H
#define ZBSCHED_SOLVER_ILP_H

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "zbsched/clock.h"
#include "zbsched/solver.h"
#include "zbsched/timing.h"

/* Relative slack of every proof and comparison: objectives this close
 * count as equal (float sums of durations differ by far less), as GLPK's
 * own tol_obj does. "Optimal" means proven within 3 * ILP_TOL. */
#define ILP_TOL 1e-7

/* Longest GLPK failure message kept (zbi_ilp_glpk_run). */
#define ILP_GLPK_MSG_MAX 160

/* Whether obj is proven optimal by bound. */
static inline bool ilp_meets(double obj, double bound)
{
    return obj - bound <= 3 * ILP_TOL * obj;
}

/* ---- Instance: passes of a profile (ilp_inst.c) ----------------------
 * A pass id is zb_pass_index(): ((kind * stages) + stage) * m + mb. */

struct ilp_arc {
    int from;
    double w;               /* from's duration, plus comm across ranks */
};

struct ilp_inst {
    const struct zb_profile *p;
    enum zb_objective objective;
    int S, m, n;            /* stages, microbatches, passes */
    double *dur;            /* per pass */
    double *delta;          /* per pass: memory change */
    int *rank, *slot;       /* per pass: its rank, index in rank_pass */
    int **rank_pass;        /* per rank: its passes */
    int *rank_n;
    /* Intrinsic precedence: dependencies and same-kind microbatch order
     * (at most 3 predecessors a pass). */
    struct ilp_arc (*pred)[3];
    int *npred;
    double *start;          /* per rank: ASAP start of its first pass */
    int *first;             /* per rank: that pass, F(lowest stage, 0) */
    double *off;            /* per rank: subtracted from its end in the
                               objective (start for cost, 0 makespan,
                               minus its least reduce for the step) */
    /* Data parallelism (dp >= 2): the objective is the step, which ends
     * with the last collective (docs/ilp.md, "With data parallelism"). */
    bool step;
    double *reduce;         /* per stage: its REDUCE_GRAD's time */
    double *gathered;       /* per stage: ZeRO-3, when its UNSHARD can end
                               at the earliest (its rank's gathers run one
                               after another from 0); else 0 */
};

void zbi_ilp_inst_init(struct ilp_inst *in, const struct zb_profile *p,
                       enum zb_objective obj);

/* What the arc from pass `from` to pass `to` adds to from's duration:
 * timing.h's lag, 0 on one rank, else the edge's comm (pass ids are
 * zb_pass_index(), so a pass's stage is id / m % S). */
static inline double ilp_lag(const struct ilp_inst *in, int from, int to)
{
    return zb_timing_lag(in->p, from / in->m % in->S, to / in->m % in->S,
                         in->rank[to]);
}

/* Whether the instance is small enough to search: one propagation costs
 * O(passes^2 / 64 + rank passes^2) and takes seconds beyond these, which
 * neither a time limit nor Ctrl-C could interrupt (docs/tuning.md, "ILP
 * size limits"). */
#define ILP_MAX_PASSES 8192
#define ILP_MAX_RANK_PASSES 512
bool zbi_ilp_inst_searchable(const struct ilp_inst *in);
void zbi_ilp_inst_release(struct ilp_inst *in);

/* A copy of p in the model's units (ilp_scale.c): durations and comm
 * divided by the mean pass duration, which is returned (multiply
 * objectives and bounds by it to get back to p's units), memory by M_B. */
double zbi_ilp_scale_profile(const struct zb_profile *p,
                             struct zb_profile *out);

/* ---- Orders (ilp_order.c) -------------------------------------------- */

/* A compute order: per rank, its passes in the order they run. */
struct ilp_order {
    int **seq;              /* seq[r][0..rank_n[r]) pass ids */
};

void zbi_ilp_order_init(struct ilp_order *o, const struct ilp_inst *in);
void zbi_ilp_order_release(struct ilp_order *o, const struct ilp_inst *in);
void zbi_ilp_order_copy(struct ilp_order *dst, const struct ilp_order *src,
                        const struct ilp_inst *in);

/* A timed order: cost, makespan and objective from the simulator, and
 * every pass's start time. */
struct ilp_eval {
    double cost, makespan, obj;
    double ends;            /* sum of every pass's end (tie-break) */
    double *t;              /* per pass: start; may be NULL */
};

/* Simulate o; 0 if legal and within the memory limits, else <0. */
int zbi_ilp_order_eval(const struct ilp_inst *in, const struct ilp_order *o,
                       struct ilp_eval *ev);

/* Take a generated schedule's compute order (BW split into B then W)
 * with same-kind passes renumbered in start-time order, which keeps it
 * legal and its times (docs/ilp.md). */
void zbi_ilp_order_from_schedule(struct ilp_order *o,
                                 const struct ilp_inst *in,
                                 const struct zb_schedule *s);

void zbi_ilp_order_to_schedule(const struct ilp_order *o,
                               const struct ilp_inst *in,
                               struct zb_schedule *s);

/* Each rank's passes sorted by t (pass id breaks ties): an LP solution's
 * start times keep every dependency, so this order is legal, if not
 * always within the memory limits. */
void zbi_ilp_order_by_times(struct ilp_order *o, const struct ilp_inst *in,
                            const double *t);

/* One microbatch at a time through the whole pipeline: legal whenever
 * every limit is at least zb_ilp_min_limit(). */
void zbi_ilp_order_serial(struct ilp_order *o, const struct ilp_inst *in);

/* ---- Fixed-order relation (ilp_rel.c) --------------------------------
 * Which same-rank pairs of passes have a fixed order (implied by
 * precedence, memory, the horizon, or fixed on purpose) and the earliest
 * and latest start of every pass; the free pairs become binaries. */

enum { ILP_BEFORE = -1, ILP_AFTER = -2 };

struct ilp_pair {
    int a, b;               /* y = 1 means a runs before b */
};

struct ilp_rel {
    const struct ilp_inst *in;
    int words;              /* 64-bit words per bitset row */
    uint64_t *reach;        /* reach[a]: passes that must follow a */
    uint64_t *back;         /* back[b]: passes that must precede b */
    struct ilp_pair *extra; /* same-rank arcs beyond the intrinsic: a
                               before b */
    int nextra, cap_extra;
    int *topo;              /* passes in a topological order */
    double *lb, *ub;        /* earliest and latest start */
    double horizon;         /* objective value the model must not exceed */
    double obj_lb;          /* lower bound on the objective column */
    int **pair;             /* per rank, slot x slot: ILP_BEFORE/AFTER or
                               the index of the free pair */
    struct ilp_pair *free;
    int nfree;
    /* Asked between rounds of propagation (one round takes up to a few
     * hundred milliseconds at the largest searchable sizes): true
     * abandons zbi_ilp_rel_prepare(), which returns false with `cancelled`
     * set, proving nothing. NULL (zbi_ilp_rel_init's): never. */
    bool (*cancel)(void *arg);
    void *cancel_arg;
    bool cancelled;
};

void zbi_ilp_rel_init(struct ilp_rel *rel, const struct ilp_inst *in);
void zbi_ilp_rel_release(struct ilp_rel *rel);

/* Fix a before b (same rank). */
void zbi_ilp_rel_add(struct ilp_rel *rel, int a, int b);

/* Fix every order the memory limits force (enough B and W passes must
 * precede each F). */
void zbi_ilp_rel_fix_memory(struct ilp_rel *rel);

/* Fix each rank's order to o's except for the passes marked in `open`,
 * which float between their nearest fixed neighbours in o. */
void zbi_ilp_rel_fix_order(struct ilp_rel *rel, const struct ilp_order *o,
                           const bool *open);

/* Close the relation, derive start windows for objective <= horizon and
 * fix every order those windows forbid, until nothing changes; then list
 * the free pairs. Returns false when no schedule fits the horizon, or
 * when cancelled (rel->cancelled: no proof). */
bool zbi_ilp_rel_prepare(struct ilp_rel *rel, double horizon);

/* Whether the fixed relation says a runs before b. */
static inline bool ilp_rel_before(const struct ilp_rel *rel, int a, int b)
{
    return rel->reach[(size_t)a * rel->words + b / 64] >> (b % 64) & 1;
}

/* Largest objective value in [lo, hi) refuted by propagation (the
 * optimum lies above it), or lo; stops probing at the deadline or when
 * *interrupt (may be NULL) is set (bound_strong.c). */
double zbi_ilp_bound_strong(const struct ilp_inst *in, double lo, double hi,
                            double deadline,
                            const volatile sig_atomic_t *interrupt);

/* ---- GLPK model (ilp_model.c) ---------------------------------------- */

struct ilp_model;

/* Build the model of rel (prepared). names: give rows and columns
 * readable names (for the LP export). */
struct ilp_model *zbi_ilp_model_build(const struct ilp_rel *rel, bool names);
void zbi_ilp_model_free(struct ilp_model *md);
/* GLPK's environment was freed under md (zbi_ilp_glpk_run): forget its
 * problem object, so that zbi_ilp_model_free() frees only ours. */
void zbi_ilp_model_lost(struct ilp_model *md);

/* Column values of an order timed by ev (the incumbent for GLPK). */
void zbi_ilp_model_point(const struct ilp_model *md, const struct ilp_order *o,
                         const struct ilp_eval *ev, double *x);

/* Order encoded by column values x (1-based, as GLPK holds them). */
void zbi_ilp_model_order(const struct ilp_model *md, const double *x,
                         struct ilp_order *o);

/* The GLPK problem object, its relation and its columns. */
struct glp_prob *zbi_ilp_model_prob(struct ilp_model *md);
const struct ilp_rel *zbi_ilp_model_rel(const struct ilp_model *md);
int zbi_ilp_model_cols(const struct ilp_model *md);
int zbi_ilp_model_col_c(const struct ilp_model *md);    /* the objective */
int zbi_ilp_model_col_y(const struct ilp_model *md);    /* first binary */

/* Whether the orders fixed at the current node of P (column bounds of
 * the binaries) leave no schedule with objective <= horizon (ilp_node.c). */
bool zbi_ilp_node_refuted(const struct ilp_model *md, struct glp_prob *P,
                          double horizon);

/* Write the model in CPLEX LP format; its name says the time unit. */
int zbi_ilp_model_write_lp(struct ilp_model *md, const char *path,
                           double unit);

/* ---- GLPK environment (ilp_glpk.c) ------------------------------------ */

/* The calling thread's GLPK environment (ilp_glpk.c; GLPK keeps one per
 * thread). quiet: no terminal output; done: free it (every object in it). */
void zbi_ilp_glpk_quiet(void);
void zbi_ilp_glpk_done(void);

/* GLPK's time limits (tm_lim) are milliseconds in an int: seconds
 * converted and clamped to [1, INT_MAX] (a limit of 2147484 s or more
 * would overflow; INT_MAX ms is 24.8 days, longer than any search). */
int zbi_ilp_glpk_ms(double seconds);

/* Run fn(arg) with GLPK's error hook armed and return what it returns; if
 * GLPK fails inside (an internal assertion, a bad call), the thread's
 * environment is freed, with every problem object in it, msg gets GLPK's
 * reason and ZB_ESOLVER is returned. */
int zbi_ilp_glpk_run(int (*fn)(void *), void *arg, char *msg, size_t size);

#endif
