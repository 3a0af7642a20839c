/* dp.h - data parallelism with ZeRO 0-3 (docs/zero.md): the profile's
 * `dp`, `zero` and `data_parallel` keys, the ring cost model of the three
 * collectives and the ZeRO memory model per stage.
 *
 * Each pipeline rank is replicated over `dp` ranks that run the same op
 * list; a profile without `dp` (or with dp 1) has no data parallelism and
 * every output stays as it was. Ownership: struct zb_dp owns its params
 * array; zb_dp_release() frees it. */
#ifndef ZBSCHED_DP_H
#define ZBSCHED_DP_H

#include <stdbool.h>
#include "zbsched/error.h"

struct zb_profile;

/* Bytes per parameter of mixed-precision Adam (ZeRO paper, section 3.1):
 * fp16 weights, fp16 gradients, fp32 master weights, momentum, variance. */
#define ZB_DP_BYTES_WEIGHT 2.0
#define ZB_DP_BYTES_GRAD 2.0
#define ZB_DP_BYTES_OPTIM 12.0

/* When the gradients are reduced (`data_parallel.reduce`, --reduce). */
enum zb_dp_reduce {
    ZB_DP_REDUCE_STEP,      /* one REDUCE_GRAD per stage, after its last W */
    ZB_DP_REDUCE_MICROBATCH /* ZeRO >= 2: one per W, a reduce-scatter of
                               that microbatch's gradient into the shard */
};

struct zb_dp {
    int degree;             /* d: replicas of each pipeline rank; 1 = none */
    int zero;               /* ZeRO stage 0-3 */
    double *params;         /* pp*vpp entries: parameters of each stage
                               (NULL when degree is 1) */
    double bandwidth;       /* bytes per time unit through one rank's link */
    double latency;         /* time per ring step */
    double bytes_weight, bytes_grad, bytes_optim; /* per parameter */
    double unit_bytes;      /* bytes in one memory unit (M_B's unit) */
    int prefetch;           /* ZeRO-3: UNSHARD this many passes ahead (with
                               units > 1: this many units ahead); 0: no
                               prefetch, each gather issued when its pass
                               (unit) is reached */
    int units;              /* FSDP units per stage (`data_parallel.units`,
                               --fsdp-units): 1 = the stage is one unit,
                               gathered all step; K > 1: K equal units,
                               gathered per pass (docs/zero.md, "Units") */
    enum zb_dp_reduce reduce;
    /* Times of one stage's collective when given (NAN: from bytes). */
    double all_reduce, reduce_scatter, all_gather;
};

/* What the user said; NAN = not given. */
struct zb_dp_draft {
    double degree, zero, bandwidth, latency, unit_bytes, prefetch, units;
    double bytes_weight, bytes_grad, bytes_optim;
    double all_reduce, reduce_scatter, all_gather;
    double bandwidth_per_s; /* a bandwidth given with a unit ("50GB/s"):
                               bytes per second, NAN otherwise; the
                               profile's time_unit turns it into
                               bandwidth (profile.c) */
    int reduce;             /* enum zb_dp_reduce, or -1 */
    double params;          /* one count for every stage */
    double *params_list;    /* or one per stage (owned) */
    int n_params;
};

void zb_dp_draft_init(struct zb_dp_draft *d);
void zb_dp_draft_release(struct zb_dp_draft *d);

/* Whether name (without dashes) is one of the flags below: "dp", "zero",
 * "params", "bandwidth", "latency", "prefetch", "fsdp-units", "reduce". */
bool zb_dp_is_flag(const char *name);

/* Apply one of those flags; ZB_EINVAL when value is not a decimal
 * number (units.h) or, for "bandwidth", a bandwidth with a unit
 * ("50GB/s"); for "reduce": not "step" or "microbatch". */
int zb_dp_draft_set(struct zb_dp_draft *d, const char *name,
                    const char *value, struct zb_error *err);

/* "step" or "microbatch" into *out; ZB_EINVAL naming key otherwise. */
int zb_dp_reduce_parse(const char *s, const char *key, int *out,
                       struct zb_error *err);
const char *zb_dp_reduce_name(enum zb_dp_reduce r);

/* Check and materialise for nstages stages. Defaults: dp 1, zero 0,
 * params 0, bandwidth unlimited, latency 0, 2/2/12 bytes per parameter,
 * unit_bytes 1, prefetch 1, units 1, reduce step. Errors name the key
 * ("zero must be 0, 1, 2 or 3, got 4"; "zero 3 needs dp >= 2"; "reduce
 * microbatch needs zero >= 2"; "data_parallel.units > 1 needs zero 3 or
 * reduce microbatch"). */
int zb_dp_build(const struct zb_dp_draft *d, int nstages, struct zb_dp *out,
                struct zb_error *err);

void zb_dp_release(struct zb_dp *dp);
void zb_dp_copy(struct zb_dp *dst, const struct zb_dp *src, int nstages);
/* Whether a and b (nstages stages each) describe the same replicas. */
bool zb_dp_equal(const struct zb_dp *a, const struct zb_dp *b, int nstages);

/* Whether the profile has data parallelism (dp >= 2). */
bool zb_dp_active(const struct zb_profile *p);

/* Whether it reduces per microbatch (reduce microbatch, dp >= 2). */
bool zb_dp_per_mb(const struct zb_profile *p);

/* Whether the stages are split into units > 1 that some collective acts
 * on: ZeRO-3 gathers them per pass, reducing per microbatch reduces them
 * per unit (dp >= 2). */
bool zb_dp_units(const struct zb_profile *p);

/* ---- Ring collectives over d ranks (alpha-beta model) ----------------
 * With n bytes per rank, a ring moves n/d bytes per step:
 *   reduce-scatter = all-gather = (d-1) (latency + n/(d bw))
 *   all-reduce = reduce-scatter + all-gather = 2(d-1) (latency + n/(d bw))
 * 0 when d is 1. */
double zb_dp_ring_all_reduce(const struct zb_dp *dp, double bytes);
double zb_dp_ring_half(const struct zb_dp *dp, double bytes);

/* Time of a REDUCE_GRAD or UNSHARD of a stage (RESHARD: 0, a free).
 * REDUCE_GRAD is the all-reduce of the gradients for ZeRO-0, their
 * reduce-scatter plus the all-gather of the updated weights after the
 * sharded optimizer step for ZeRO-1/2, and the reduce-scatter alone for
 * ZeRO-3 (whose weights stay sharded until the next UNSHARD). UNSHARD is
 * the all-gather of the stage's weights. Given times override. */
double zb_dp_op_time(const struct zb_profile *p, int kind, int stage);

/* Time of one REDUCE_GRAD of a stage, last telling whether it is the
 * stage's last of the step. Reducing per step, the one above. Per
 * microbatch, each is the reduce-scatter of one microbatch's gradient,
 * and ZeRO-2 charges the all-gather of the updated weights to the last,
 * which then takes as long as the one above. */
double zb_dp_reduce_time(const struct zb_profile *p, int stage, bool last);

/* With units > 1: the time of one unit's UNSHARD (AG of P/K) or, for a
 * REDUCE_GRAD per microbatch, its reduce-scatter RS(G/K), plus at ZeRO-2
 * on the unit's last of the step the all-gather AG(P/K) of its updated
 * weights. Given (measured) times are per stage: a unit takes 1/K. */
double zb_dp_unit_time(const struct zb_profile *p, int kind, int stage,
                       bool last);

/* ---- Memory, in the profile's memory unit -----------------------------
 * Model state of one stage that a rank holds all step: weights (a 1/d
 * shard for ZeRO-3), optimizer state (a shard for ZeRO >= 1), gradients
 * (full for ZeRO 0-1; none for ZeRO-2/3, whose gradients the optimizer
 * step consumed and freed). */
double zb_dp_state_memory(const struct zb_profile *p, int stage);

/* ZeRO-2/3 gradients: the full buffer from the stage's first W to its
 * REDUCE_GRAD, then the 1/d shard it leaves (0 below ZeRO-2). Reducing
 * per microbatch, a buffer lives from each W to its reduce-scatter's end
 * and the shard from the stage's first W (zero_measure.c). */
double zb_dp_grad_buffer(const struct zb_profile *p, int stage);
double zb_dp_grad_shard(const struct zb_profile *p, int stage);

/* ZeRO-3: what an UNSHARD adds to the stage's weight shard (the other
 * d-1 shards) until its RESHARD (0 below ZeRO-3). */
double zb_dp_gathered(const struct zb_profile *p, int stage);

#endif
