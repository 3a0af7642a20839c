/* schedule.h - a schedule: per-rank op lists for one profile, with the
 * measures the simulator predicts for it.
 *
 * Generators fill only compute ops (F, B, W, BW); zb_lower() adds the
 * communication and the optimizer step; zb_sim_run() times the compute ops
 * and fills `predicted`; zb_schedule_validate() is the one executable
 * definition of a legal schedule. Ownership: a schedule owns its profile
 * copy and op arrays; zb_schedule_release() frees them. */
#ifndef ZBSCHED_SCHEDULE_H
#define ZBSCHED_SCHEDULE_H

#include <stdbool.h>
#include "zbsched/error.h"
#include "zbsched/profile.h"

enum zb_op_kind {
    ZB_OP_F,        /* forward */
    ZB_OP_B,        /* input gradient */
    ZB_OP_W,        /* weight gradient */
    ZB_OP_BW,       /* B and W fused (classic backward) */
    ZB_OP_SEND_F,   /* activations out of F at this rank's stage */
    ZB_OP_RECV_F,   /* activations into F at this rank's stage */
    ZB_OP_SEND_B,   /* input gradient out of B at this rank's stage */
    ZB_OP_RECV_B,   /* output gradient into B at this rank's stage */
    ZB_OP_STEP,     /* optimizer step */
    ZB_OP_KIND_COUNT
};

/* Comm ops name the stage on their own rank: SEND_F(s) pairs with
 * RECV_F(s+1) on the peer, SEND_B(s) with RECV_B(s-1). */
struct zb_op {
    enum zb_op_kind kind;
    int stage;          /* -1 for STEP */
    int mb;             /* microbatch, -1 for STEP */
    int peer;           /* comm ops: the other rank; else -1 */
    double start, end;  /* compute ops: predicted times; else 0 */
    int seq;            /* compute ops: position in the simulator's global
                           commit order (a topological order that follows
                           time); lowering sorts transfers by it */
};

struct zb_op_list {
    struct zb_op *ops;
    int n, cap;
};

struct zb_rank_measures {
    double busy;        /* sum of compute durations */
    double span;        /* last end - first start */
    double peak_memory; /* peak of the running memory sum */
    double first_start; /* start of the first pass */
    double last_end;    /* end of the last pass */
};

struct zb_measures {
    double cost;              /* max span (the Zero Bubble paper's measure) */
    double makespan;          /* last end - first start over all ranks */
    double bubble_ratio;      /* 1 - sum busy / (p * cost) */
    double sync_bubble_ratio; /* 1 - sum busy / (p * makespan) */
    double lower_bound;       /* proven lower bound on cost (bound.c) */
    double makespan_bound;    /* proven lower bound on makespan */
    bool fits_memory;         /* every peak within its rank's limit */
    struct zb_rank_measures *ranks;  /* pp entries */
};

#define ZB_SOLVER_STATUS_MAX 16
#define ZB_SOLVER_WARNING_MAX 192

struct zb_solver_info {
    bool present;             /* only solver-made schedules carry it */
    char status[ZB_SOLVER_STATUS_MAX]; /* optimal/feasible/heuristic/... */
    double objective, bound, gap, seconds;
    long nodes;
    /* What weakened the search ("GLPK failed: ..."), or "". */
    char warning[ZB_SOLVER_WARNING_MAX];
};

#define ZB_SCHEDULE_NAME_MAX 32

struct zb_schedule {
    char name[ZB_SCHEDULE_NAME_MAX];
    struct zb_profile profile;       /* owned copy */
    struct zb_op_list *ranks;        /* pp lists */
    bool post_validation;            /* STEP checked after the fact */
    struct zb_measures predicted;    /* valid after zb_sim_run() */
    struct zb_solver_info solver;
};

/* ---- Lifecycle ------------------------------------------------------- */

/* Empty op lists for a copy of prof. */
int zb_schedule_init(struct zb_schedule *s, const char *name,
                     const struct zb_profile *prof);
void zb_schedule_release(struct zb_schedule *s);

/* Append an op to rank's list (peer -1, times 0). */
void zb_schedule_push(struct zb_schedule *s, int rank, enum zb_op_kind kind,
                      int stage, int mb);
void zb_op_list_push(struct zb_op_list *l, const struct zb_op *op);

/* Drop all but the compute ops (undoes zb_lower()). */
void zb_schedule_strip_comm(struct zb_schedule *s);

/* ---- Op helpers -------------------------------------------------------- */

const char *zb_op_kind_name(enum zb_op_kind k);
int zb_op_kind_parse(const char *s, enum zb_op_kind *out);
bool zb_op_is_compute(enum zb_op_kind k);
bool zb_op_is_comm(enum zb_op_kind k);

/* Duration of a compute op under the profile (0 for others). */
double zb_op_duration(const struct zb_profile *p, const struct zb_op *op);

/* Memory change of a compute op: F +M_B, B -(M_B-M_W), W -M_W, BW -M_B. */
double zb_op_memory_delta(const struct zb_profile *p, enum zb_op_kind k);

/* "F stage 3 mb 7", "SEND_B stage 2 mb 0 to 1", "STEP" into buf. */
const char *zb_op_describe(const struct zb_op *op, char *buf, int size);

/* ---- Pipeline steps ---------------------------------------------------- */

/* Insert SEND/RECV for every cross-rank edge and a final STEP, in an order
 * that cannot deadlock under rendezvous semantics (lower.c explains why).
 * Needs zb_sim_run() to have succeeded on the compute order. */
int zb_lower(struct zb_schedule *s, struct zb_error *err);

/* Time the compute ops (event-driven: a rank runs its ops in list order,
 * each starting when the rank is free and its inputs have arrived, comm
 * added on cross-rank edges) and fill s->predicted, lower bounds included.
 * ZB_EILLEGAL if a pass waits on a pass that never runs (cycle, missing). */
int zb_sim_run(struct zb_schedule *s, struct zb_error *err);

/* Every measure but the bounds (left 0), from the start/end of the
 * compute ops in ranks (pp lists): the simulator's, or a realized run's.
 * ms->ranks must hold pp entries. */
void zb_measures_from_times(const struct zb_profile *p,
                            const struct zb_op_list *ranks,
                            struct zb_measures *ms);

/* The legal-schedule definition: passes exactly once, dependencies,
 * send/recv pairing and order, no deadlock under blocking semantics,
 * memory within limits. Messages name rank, op index and op. */
int zb_schedule_validate(const struct zb_schedule *s, struct zb_error *err);

/* Every rule but the memory limit: for reporting on schedules that are
 * well formed but do not fit (fixed families, `eval` of any file). */
int zb_schedule_validate_order(const struct zb_schedule *s,
                               struct zb_error *err);

#endif
