/* split.h - the layer-split planner of `zbsched plan`: from a per-layer
 * model (model.h), a pipeline degree, microbatches and a GPU's memory to
 * the layers of each stage, the shape (vpp, placement) and a zb schedule,
 * with the exact memory per rank, a lower bound over every split it could
 * choose, and torchtitan's default split and the min-max compute split
 * beside it (docs/formats.md, "Plan"; docs/plan.md has the method).
 *
 * A split reaches the schedule layer as a profile with each stage's
 * activations and each boundary's transfer time (profile.h's stage_mem
 * and stage_comm), so the schedule's predicted times and memory are the
 * plan's; zb_memory_replay() gives the activation peak in bytes. The
 * profile also has each stage's parameters and the model's bytes per
 * parameter, so it counts the model state against --gpu-mem (profile.h,
 * mem_total), and with dp >= 2 the ring and ZeRO stage, so the schedule
 * holds the data-parallel collectives and its step_time is the plan's
 * step.
 * Ownership: a plan owns its splits and schedules; zb_plan_release()
 * frees them; returned strings are the caller's. */
#ifndef ZBSCHED_SPLIT_H
#define ZBSCHED_SPLIT_H

#include <stdbool.h>
#include "zbsched/error.h"
#include "zbsched/memory_model.h"
#include "zbsched/model.h"
#include "zbsched/profile.h"
#include "zbsched/schedule.h"

/* Point-to-point links between neighbouring stages: n bytes take
 * latency + n / bandwidth seconds; ranks sit gpus_per_node to a node, and
 * a boundary between nodes uses inter_bandwidth. */
struct zb_link {
    double bandwidth;           /* bytes/s; INFINITY: transfers are free */
    double latency;             /* seconds per transfer */
    int gpus_per_node;          /* 0: every rank on one node */
    double inter_bandwidth;     /* bytes/s between nodes */
};

/* The data-parallel collectives of a plan with dp >= 2: the ring that
 * reduces each rank's gradients over its replicas, and the FSDP options
 * of the profile (dp.h). */
struct zb_plan_dp {
    double bandwidth;           /* bytes/s; NAN: zb_plan_dp_link()'s rule */
    double latency;             /* seconds per ring step; NAN: the link's */
    int units;                  /* FSDP units per stage (1) */
    int prefetch;               /* ZeRO-3 gathers this many passes ahead
                                   (1; 0: FSDP's no-prefetch) */
    int reduce;                 /* enum zb_dp_reduce (step) */
};

enum zb_split_mode {
    ZB_SPLIT_AUTO,      /* search */
    ZB_SPLIT_EVEN,      /* torchtitan's default split */
    ZB_SPLIT_GIVEN      /* counts[] layers per stage */
};

struct zb_plan_request {
    int pp, microbatches;
    int vpp;                    /* chunks per rank; 0: auto (1 to 8,
                                   as the layers allow) */
    int placement;              /* enum zb_placement, or -1: auto */
    enum zb_split_mode split;
    const int *counts;          /* ZB_SPLIT_GIVEN: layers per stage */
    int n_counts;               /* pp*vpp entries: sets vpp */
    double gpu_mem;             /* bytes one GPU may hold */
    struct zb_link link;
    int dp, zero;               /* data-parallel replicas of each rank and
                                   their ZeRO stage (docs/zero.md) */
    struct zb_plan_dp dpx;      /* their collectives (dp >= 2) */
    double effort;              /* zb's search on the finalists (options.h;
                                   0: zb's default) */
};

/* Defaults: no placement or vpp chosen (auto), free links, dp 1, and
 * zb_plan_dp's defaults; the caller sets the rest. */
void zb_plan_request_init(struct zb_plan_request *rq);

/* The data-parallel ring of each pipeline rank, in bytes/s and seconds:
 * the given link, or zb_plan_dp_link()'s. */
void zb_plan_dp_link(const struct zb_plan_request *rq, double *bandwidth,
                     double *latency);

/* One split of the model over a shape's stages, evaluated. */
struct zb_plan_split {
    bool exists;                /* a split was made (every stage
                                   non-empty); the rest is valid only so */
    bool scheduled;             /* zb found an order within the
                                   conservative limits: sched, cost */
    bool fits;                  /* scheduled, and every rank's exact
                                   total within gpu_mem */
    int vpp;
    enum zb_placement placement;
    int nstages;                /* pp*vpp */
    int *counts;                /* layers per stage, in stage order */
    struct zb_schedule sched;   /* the order, on the conservative profile
                                   (model time unit, memory in GiB);
                                   the baselines keep none (ranks NULL) */
    double cost, makespan, bubble_ratio;    /* re-timed with each
                                               boundary's comm */
    double step;                /* what splits compare by: with dp >= 2
                                   the schedule's step_time (compute and
                                   the collectives that end the step),
                                   else cost */
    struct zb_memory_rank *ranks;   /* pp entries; activations from the
                                       exact replay (unscheduled: the
                                       least any schedule holds) */
    double effort;              /* the zb effort it was scheduled with */
};

struct zb_plan {
    struct zb_plan_split best;  /* the answer (exists even when nothing
                                   fits: then fits is false) */
    struct zb_plan_split even;  /* torchtitan's default in best's shape */
    struct zb_plan_split minmax;    /* min-max compute split, same shape */
    double lower_bound;         /* no split of any searched shape runs the
                                   step in less (>= total work / pp) */
    /* best's split with no memory limit: its step, and which rank's
       memory binds (-1: time does, the limit costs nothing) */
    double unlimited_cost;
    int binding_rank;
    int evaluations;            /* zb runs made */
};

/* Plan. ZB_EINVAL for a request the model cannot take (a shape with
 * more stages than layers, counts that do not add up to the layer count,
 * a layer whose bytes exceed the GPU alone, model state over every
 * split), each naming the problem; when no split fits the memory, 0
 * with best.fits false (the summary says what it needs). */
int zb_plan_run(const struct zb_model *m, const struct zb_plan_request *rq,
                struct zb_plan *out, struct zb_error *err);
void zb_plan_release(struct zb_plan *p);

/* Each boundary's transfer time in the model's time unit (nstages - 1
 * entries into comm; 0 between stages of one rank). */
void zb_plan_boundary_comm(const struct zb_model *m,
                           const struct zb_plan_request *rq,
                           const struct zb_profile *shape, const int *counts,
                           double *comm);

/* ---- What trainers take ------------------------------------------- */

/* Megatron's --pipeline-model-parallel-layout for split s (E embedding,
 * t layer, m MTP, L the head group, stages joined by |, x*n and (...)*n
 * repeats), or NULL where Megatron cannot express it (V placement, an
 * `other` layer, the head split over stages, E or L not at the ends). */
char *zb_plan_megatron_layout(const struct zb_model *m,
                              const struct zb_plan_split *s);

/* Parse a layout string back into layers per stage of m (at most max
 * stages into counts, their number into *nstages), reading as Megatron
 * does: commas dropped, (...)*n and x*n expanded, | between stages, E
 * and L standing for every embedding and head entry. ZB_EINVAL where the
 * letters do not follow m's layers. */
int zb_plan_layout_parse(const struct zb_model *m, const char *layout,
                         int *counts, int max, int *nstages,
                         struct zb_error *err);

/* torchtitan's pipeline_parallel_schedule that builds s's stages for
 * its CSV: "1F1B" (loop, vpp 1), "Interleaved1F1B" (loop, vpp > 1),
 * "ZBVZeroBubble" (v). */
const char *zb_plan_torchtitan_schedule(const struct zb_plan_split *s);

/* The Plan JSON document (docs/formats.md, "Plan"), newline-terminated. */
char *zb_plan_format_json(const struct zb_model *m,
                          const struct zb_plan_request *rq,
                          const struct zb_plan *p);

/* ---- The picture (docs/plan.md, "The picture") --------------------- */

/* What the picture draws of one split: per stage its rank and the F, B,
 * W of one microbatch summed over its layers; per rank its memory. */
struct zb_plan_view_split {
    bool exists, scheduled, fits;
    double step;                /* zb_plan_split.step, valid when
                                   scheduled */
    int nstages;
    int *counts, *rank;         /* per stage */
    double *f, *b, *w;          /* per stage */
    struct zb_memory_rank *ranks;   /* pp entries */
};

struct zb_plan_view {
    char *model;
    enum zb_time_unit time_unit;
    int pp, vpp, microbatches;
    enum zb_placement placement;
    double gpu_mem;             /* bytes */
    struct zb_plan_view_split plan, even;
};

/* The view of a finished plan, or of a Plan JSON document (the fields
 * zb_plan_format_json() writes; ZB_EPARSE naming the one missing or
 * wrong). zb_plan_view_release() frees either. */
void zb_plan_view_make(const struct zb_model *m,
                       const struct zb_plan_request *rq,
                       const struct zb_plan *p, struct zb_plan_view *out);
int zb_plan_view_parse(const char *text, struct zb_plan_view *out,
                       struct zb_error *err);
/* Whether text is a JSON object whose format is "zbsched-plan". */
bool zb_plan_json_detect(const char *text);
void zb_plan_view_release(struct zb_plan_view *v);

/* SVG document: the plan's split beside the even split, per stage a bar
 * of F + B + W per microbatch, per rank a stacked bar of model state,
 * activation peak and buffers against the GPU's memory. */
char *zb_plan_render_svg(const struct zb_plan_view *v);

#endif
