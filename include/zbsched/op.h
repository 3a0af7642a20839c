/* op.h - the ops of a schedule's per-rank lists and the facts every module
 * shares about them: names, durations, memory deltas (docs/formats.md,
 * "Schedule"). Ownership: an op list owns its array; const pointer arguments
 * are borrowed, never kept. */
#ifndef ZBSCHED_OP_H
#define ZBSCHED_OP_H

#include <stdbool.h>
#include "zbsched/profile.h"

enum zb_op_kind {
    ZB_OP_F,        /* forward */
    ZB_OP_B,        /* input gradient */
    ZB_OP_W,        /* weight gradient */
    ZB_OP_BW,       /* B and W fused (classic backward) */
    ZB_OP_FB,       /* one microbatch's F and another's B, overlapped
                       (DualPipe): stage/mb name the F, b_stage/b_mb the B */
    ZB_OP_SEND_F,   /* activations out of F at this rank's stage */
    ZB_OP_RECV_F,   /* activations into F at this rank's stage */
    ZB_OP_SEND_B,   /* input gradient out of B at this rank's stage */
    ZB_OP_RECV_B,   /* output gradient into B at this rank's stage */
    ZB_OP_STEP,     /* optimizer step */
    /* Data-parallel collectives (dp.h), on each rank's collective stream,
     * naming a stage of the rank (mb -1; a REDUCE_GRAD of reduce
     * microbatch names its microbatch): */
    ZB_OP_REDUCE_GRAD, /* all-reduce or reduce-scatter of its gradients */
    ZB_OP_UNSHARD,  /* ZeRO-3: all-gather its weights before its passes */
    ZB_OP_RESHARD,  /* ZeRO-3: free the gathered weights after them */
    ZB_OP_KIND_COUNT
};

/* Comm ops name the stage on their own rank: SEND_F(s) pairs with
 * RECV_F(s+1) on the peer, SEND_B(s) with RECV_B(s-1). */
struct zb_op {
    enum zb_op_kind kind;
    int stage;          /* -1 for STEP */
    int mb;             /* microbatch, -1 for STEP and collectives but a
                           REDUCE_GRAD per microbatch */
    int b_stage, b_mb;  /* FB: the B half's stage and microbatch; else
                           unused */
    int peer;           /* comm ops: the other rank; else -1 */
    double start, end;  /* compute ops and collectives: predicted times;
                           else 0 */
    int seq;            /* compute ops: position in the simulator's global
                           commit order (a topological order that follows
                           time); lowering sorts transfers by it */
    int unit;           /* collectives with data_parallel.units K > 1: the
                           stage's unit 0 .. K-1 it acts on (dp.h); else 0 */
};

struct zb_op_list {
    struct zb_op *ops;
    int n, cap;
};

/* Append a copy of op. */
void zb_op_list_push(struct zb_op_list *l, const struct zb_op *op);

const char *zb_op_kind_name(enum zb_op_kind k);
int zb_op_kind_parse(const char *s, enum zb_op_kind *out);

/* The facts below are defined here, inline: the simulator, the
 * constructions and the measures ask them once per op, millions of
 * times in one generate at p 64, m 1024 (as calls they took 5 % of its
 * time). */
static inline bool zb_op_is_compute(enum zb_op_kind k)
{
    return k == ZB_OP_F || k == ZB_OP_B || k == ZB_OP_W || k == ZB_OP_BW ||
           k == ZB_OP_FB;
}

static inline bool zb_op_is_comm(enum zb_op_kind k)
{
    return k >= ZB_OP_SEND_F && k <= ZB_OP_RECV_B;
}

static inline bool zb_op_is_collective(enum zb_op_kind k)
{
    return k >= ZB_OP_REDUCE_GRAD && k <= ZB_OP_RESHARD;
}

/* The single-pass ops an op performs, in the order it performs them:
 * FB -> its F, then its B (times, seq and peer copied); any other op ->
 * itself. Returns 1 or 2. Modules that reason per pass (dependencies,
 * memory peaks, transfers) walk these. */
static inline int zb_op_split(const struct zb_op *op, struct zb_op out[2])
{
    out[0] = *op;
    if (op->kind != ZB_OP_FB)
        return 1;
    out[0].kind = ZB_OP_F;
    out[1] = *op;
    out[1].kind = ZB_OP_B;
    out[1].stage = op->b_stage;
    out[1].mb = op->b_mb;
    return 2;
}

/* Duration of a compute op under the profile (0 for others); FB takes
 * the profile's `fb` when set, else its F plus its B. */
static inline double zb_op_duration(const struct zb_profile *p,
                                    const struct zb_op *op)
{
    const struct zb_stage_times *t = &p->stage[op->stage];

    switch (op->kind) {
    case ZB_OP_F: return t->f;
    case ZB_OP_B: return t->b;
    case ZB_OP_W: return t->w;
    case ZB_OP_BW: return t->b + t->w;
    case ZB_OP_FB:
        return p->fb > 0 ? p->fb : t->f + p->stage[op->b_stage].b;
    default: return 0;
    }
}

/* Memory change of a pass of `stage`, with that stage's M_B and M_W:
 * F +M_B, B -(M_B-M_W), W -M_W, BW -M_B; 0 for any other op (a STEP
 * names no stage: nothing is read for it). */
static inline double zb_pass_memory_delta(const struct zb_profile *p,
                                          enum zb_op_kind k, int stage)
{
    if (k != ZB_OP_F && k != ZB_OP_B && k != ZB_OP_W && k != ZB_OP_BW)
        return 0;
    const double m_b = zb_profile_m_b(p, stage);
    const double m_w = zb_profile_m_w(p, stage);

    switch (k) {
    case ZB_OP_F: return m_b;
    case ZB_OP_B: return -(m_b - m_w);
    case ZB_OP_W: return -m_w;
    case ZB_OP_BW: return -m_b;
    default: return 0;
    }
}

/* Memory change of a compute op; an FB's is the sum of its halves (its
 * peak is after the F: split it, zb_op_split()). */
static inline double zb_op_memory_delta(const struct zb_profile *p,
                                        const struct zb_op *op)
{
    if (op->kind == ZB_OP_FB)
        return zb_pass_memory_delta(p, ZB_OP_F, op->stage) +
               zb_pass_memory_delta(p, ZB_OP_B, op->b_stage);
    return zb_pass_memory_delta(p, op->kind, op->stage);
}

/* "F stage 3 mb 7", "SEND_B stage 2 mb 0 to 1", "UNSHARD stage 3",
 * "REDUCE_GRAD stage 3 mb 7" (per microbatch), "STEP",
 * "FB stage 1 mb 4 + B stage 6 mb 2" into buf. */
const char *zb_op_describe(const struct zb_op *op, char *buf, int size);

#endif
