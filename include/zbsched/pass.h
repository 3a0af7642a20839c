/* pass.h - the pass graph every module shares: pass identifiers and the
 * dependencies of each pass (docs/design.md, "The problem").
 *
 * A pass is (kind, stage, microbatch) with kind F, B or W; a fused BW op
 * performs both the B and the W pass. */
#ifndef ZBSCHED_PASS_H
#define ZBSCHED_PASS_H

#include "zbsched/profile.h"
#include "zbsched/op.h"

enum zb_pass { ZB_PASS_F, ZB_PASS_B, ZB_PASS_W, ZB_PASS_COUNT };

struct zb_dep {
    enum zb_pass pass;
    int stage, mb;
};

/* Dense index of a pass, in [0, 3 * stages * microbatches). */
static inline long zb_pass_index(const struct zb_profile *p, enum zb_pass k,
                                 int stage, int mb)
{
    return ((long)k * zb_profile_stages(p) + stage) * p->microbatches + mb;
}

static inline long zb_pass_count(const struct zb_profile *p)
{
    return (long)ZB_PASS_COUNT * zb_profile_stages(p) * p->microbatches;
}

/* The passes a compute op must wait for (at most 2): F(s) needs F(s-1);
 * B(s) and BW(s) need F(s) and B(s+1) (the last stage only F(s));
 * W(s) needs B(s). kind is one pass's (not FB: split it, op.h). Returns
 * how many it wrote to out. */
int zb_pass_deps(const struct zb_profile *p, enum zb_op_kind kind, int stage,
                 int mb, struct zb_dep out[2]);

/* The pass kind an op completes first (BW: B; not FB: split it). Inline
 * like op.h's facts: asked once per placed pass. */
static inline enum zb_pass zb_pass_of(enum zb_op_kind kind)
{
    return kind == ZB_OP_F ? ZB_PASS_F
         : kind == ZB_OP_W ? ZB_PASS_W : ZB_PASS_B;
}

#endif
