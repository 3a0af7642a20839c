/* memory_model.h - memory as a GPU holds it, in bytes: the model state of
 * a rank's layers (weights, gradients, optimizer; ZeRO over dp replicas
 * as docs/zero.md says), the activations its stages keep per microbatch
 * in flight, and the send/receive buffers of its stage boundaries.
 * `zbsched plan` sums them per rank against --gpu-mem; the replay below
 * is the exact activation peak of a finished schedule, stage by stage.
 * Const pointer arguments are borrowed, never kept. */
#ifndef ZBSCHED_MEMORY_MODEL_H
#define ZBSCHED_MEMORY_MODEL_H

#include "zbsched/model.h"
#include "zbsched/profile.h"
#include "zbsched/schedule.h"

/* What one stage (a run of consecutive layers) weighs. */
struct zb_stage_bytes {
    double act;         /* F keeps until B: sum of its layers' act_bytes */
    double act_w;       /* B keeps until W: sum of act_w_bytes */
    double params;      /* parameters of its layers */
    double in_bytes;    /* activation received (out_bytes of the layer
                           before it; 0 for the first stage) */
    double out_bytes;   /* activation sent (its last layer's; 0 for the
                           last stage) */
};

/* Per-rank memory, the summary's "71.2 GiB of 80 GiB (model state 40.0,
 * activations 31.2)". */
struct zb_memory_rank {
    double model_state;
    double activations;     /* peak of the running sum */
    double buffers;         /* in-flight send/receive buffers */
    double total;           /* the three summed */
};

/* Layers first .. first+count-1 of m as one stage. */
void zb_memory_stage_bytes(const struct zb_model *m, int first, int count,
                           struct zb_stage_bytes *out);

/* Bytes of model state per parameter at a rank's peak with dp replicas
 * under ZeRO stage zero (0-3): weights + gradients + optimizer, the
 * optimizer divided by dp from ZeRO-1 on. ZeRO-2 and 3 hold the same at
 * the peak: a pipeline stage keeps its full gradient buffer from its
 * first W to its reduce at the step's end, and its weights gathered for
 * the whole step (docs/zero.md, "Memory"). The plan's count before a
 * split has a profile; the split's profile counts the same per
 * parameter (zb_profile_model_state(), which the plan reports). */
double zb_memory_state_per_param(const struct zb_model *m, int dp, int zero);

/* Buffers of rank r: for each of its stages, one activation and one
 * gradient in flight each way across every boundary to another rank
 * (2 x in_bytes + 2 x out_bytes where the neighbour is remote). st has
 * one entry per stage of p's shape. */
double zb_memory_buffers(const struct zb_profile *p,
                         const struct zb_stage_bytes *st, int r);

/* The activation peak of each rank (pp entries into peak) when s's
 * compute ops run in list order with each stage's own bytes: F adds
 * act, B releases act - act_w, W releases act_w, BW releases act, FB is
 * its F then its B. The schedule's profile may carry a uniform M_B: the
 * order is all this reads. */
void zb_memory_replay(const struct zb_schedule *s,
                      const struct zb_stage_bytes *st, double *peak);

#endif
