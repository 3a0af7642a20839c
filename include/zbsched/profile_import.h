/* profile_import.h - profiles measured in real runs (docs/profiles.md):
 * PyTorch profiler traces, Megatron-LM timer logs and zbexec traces in,
 * per-stage medians with their spread and sample counts out; the checks
 * of `zbsched check-profile`; a schedule replayed under timing noise.
 *
 * Ownership: structs live in caller storage, filled by the functions here
 * and freed by their _release(); returned strings are the caller's; const
 * pointer arguments are borrowed, never kept. */
#ifndef ZBSCHED_PROFILE_IMPORT_H
#define ZBSCHED_PROFILE_IMPORT_H

#include <stdbool.h>
#include <stdint.h>
#include "zbsched/error.h"
#include "zbsched/profile.h"
#include "zbsched/schedule.h"

/* ---- A run's timeline ------------------------------------------------ */

enum zb_run_kind {
    ZB_RUN_F,       /* forward (PyTorch F) */
    ZB_RUN_B,       /* input gradient (PyTorch I) */
    ZB_RUN_W,       /* weight gradient (PyTorch W) */
    ZB_RUN_BW,      /* the whole backward (PyTorch B, FULL_BACKWARD) */
    ZB_RUN_KINDS
};

/* One timed pass. A lane is one timeline: a trace file (one rank, or one
 * tensor- or data-parallel replica of it), or one pid of a zbexec trace. */
struct zb_run_pass {
    enum zb_run_kind kind;
    int stage, mb;
    int lane;
    double start, end;  /* microseconds on the clock every lane shares */
    bool device;        /* from GPU kernels, not the host annotation */
};

struct zb_run {
    struct zb_run_pass *passes;
    int n, cap;
    int lanes;          /* lanes so far; a file added next starts here */
};

void zb_run_init(struct zb_run *r);
void zb_run_release(struct zb_run *r);

/* Add one PyTorch profiler trace (Chrome trace JSON, torch.profiler's
 * export_chrome_trace) of torch.distributed.pipelining as one new lane:
 * its "PP:<stage><F|I|W|B><mb>" annotations; device time where the trace
 * has GPU time for them ("gpu_user_annotation" slices of the same name,
 * else the span of the kernels whose launches the annotation holds,
 * matched by "correlation"), host time otherwise. Other actions (SEND_F,
 * UNSHARD, OVERLAP_F_B, ...) are not passes and are skipped.
 * ScheduleGPipe's "Forward <mb>" / "Backward <mb>" count as F and BW of
 * the stage distributedInfo.rank names (else the lane's number). ZB_EPARSE
 * naming the event on malformed input; a trace without a single PP:
 * compute annotation is an error. */
int zb_run_add_torch_trace(struct zb_run *r, const char *text,
                           struct zb_error *err);

/* Add a zbexec --trace file: its compute slices, one lane per pid; the
 * first iteration is dropped when there are more (zbexec's warm-up). */
int zb_run_add_zbexec_trace(struct zb_run *r, const char *text,
                            struct zb_error *err);

/* ---- Measured profile ------------------------------------------------ */

enum { ZB_MEAS_F, ZB_MEAS_B, ZB_MEAS_W, ZB_MEAS_KINDS };

struct zb_spread {
    double median, p10, p90;    /* in the measured profile's unit */
    int samples;                /* 0: not measured (values 0) */
};

#define ZB_MEASURED_NAME_MAX 16

struct zb_measured {
    int pp, vpp, microbatches;
    enum zb_placement placement;
    bool per_rank;      /* entries are ranks, each the sum of its chunks
                           (Megatron's timers); else stages */
    int n;              /* entries: pp*vpp stages, or pp ranks */
    struct zb_spread (*t)[ZB_MEAS_KINDS];   /* [n][F, B, W] */
    struct zb_spread comm;
    bool fused;         /* some entry's backward was timed whole: its B
                           holds W and its W is 0 */
    bool memory;        /* m_b and m_w were measured */
    double m_b, m_w;
    char source[ZB_MEASURED_NAME_MAX];  /* torch-trace, megatron, zbexec */
    char clock[ZB_MEASURED_NAME_MAX];   /* device, host, mixed, timers */
    char unit[4];       /* us, ms or s: the unit of every time */
};

/* What the user says about the run; 0 / unset: found in the input. */
struct zb_measure_opts {
    int pp, vpp, microbatches;
    bool placement_set;
    enum zb_placement placement;
    const char *unit;   /* "us", "ms" (NULL: ms) or "s" */
};

void zb_measured_init(struct zb_measured *m);
void zb_measured_release(struct zb_measured *m);

/* Per stage the median, p10 and p90 of each kind's durations, and comm:
 * the gap from a pass's end to the start of the pass on another rank that
 * takes its output, over the transfers the consumer waited for (its rank
 * was idle when the producer ended). Stages and placement follow from
 * the stages each lane holds (opts may fix them); a stage no lane holds,
 * or one without an F or a backward, is ZB_EINVAL naming it. Sets
 * out->source to "run": the caller names the format. */
int zb_measure_run(const struct zb_run *r, const struct zb_measure_opts *o,
                   struct zb_measured *out, struct zb_error *err);

/* The same from Megatron-LM logs (texts[0..n-1], any number of files):
 * the zero-bubble fork's "rank R profiling conclusion: ..." lines (per
 * chunk F, B, W, comm and memory) where present, else the
 * forward-compute and backward-compute timers of
 * --timing-log-option all (per rank, backward fused). */
int zb_measure_megatron(const char *const *texts, int n,
                        const struct zb_measure_opts *o,
                        struct zb_measured *out, struct zb_error *err);

/* The profile of the medians (comm and memory where measured; M_B 1 and
 * M_W = M_B otherwise). */
int zb_measured_profile(const struct zb_measured *m, struct zb_profile *out,
                        struct zb_error *err);

/* Profile JSON of p followed by a "measured" object holding m (which
 * zb_json_parse_profile accepts and ignores; docs/profiles.md). */
char *zb_json_format_measured(const struct zb_profile *p,
                              const struct zb_measured *m);

/* The "measured" object of a profile file; out->n is 0 when it has none.
 * ZB_EPARSE naming the field when it is malformed. */
int zb_json_parse_measured(const char *text, struct zb_measured *out,
                           struct zb_error *err);

/* ---- check-profile ---------------------------------------------------- */

/* The thresholds (docs/profiles.md, "check-profile"). */
#define ZB_CHECK_W_TINY 0.15      /* W below this share of B ... */
#define ZB_CHECK_B_FULL 1.5       /* ... with B above this many F: B holds W */
#define ZB_CHECK_B_SMALL 0.5      /* B below this many F ... */
#define ZB_CHECK_W_HOLDS_B 2.0    /* ... with W above this many B */
#define ZB_CHECK_SPREAD 1.25      /* p90 / median above this */
#define ZB_CHECK_APART 0.25       /* inner stages' F+B+W this far apart */
#define ZB_CHECK_MW_MAX 2.0       /* M_W above this many M_B */
#define ZB_CHECK_FLOPS_OFF 2.0    /* B/F or W/F this many times off FLOPs */

/* A transformer layer's dimensions, for the FLOPs the passes' time
 * ratios are compared with. */
struct zb_check_dims {
    double hidden;      /* h */
    double seq;         /* s, tokens a sequence */
};

struct zb_check {
    char (*msg)[ZB_ERROR_MSG_MAX];  /* one line each, no newline */
    int n, cap;
};

void zb_check_init(struct zb_check *c);
void zb_check_release(struct zb_check *c);

/* The warnings for profile p (m: its measured spread, or NULL; family:
 * the schedule it is for, NULL when not known, then the families that
 * split B and W count; dims: the model's, or NULL). Appends to out;
 * never fails. */
void zb_check_profile(const struct zb_profile *p, const struct zb_measured *m,
                      const char *family, const struct zb_check_dims *dims,
                      struct zb_check *out);

/* ---- Timing noise ------------------------------------------------------ */

/* A seeded generator (xoshiro256**), passed down: no global state. */
struct zb_rng {
    uint64_t s[4];
};

void zb_rng_seed(struct zb_rng *g, uint64_t seed);
uint64_t zb_rng_next(struct zb_rng *g);
/* Uniform in (0, 1]. */
double zb_rng_uniform(struct zb_rng *g);
/* Log-normal with mean `mean` and coefficient of variation cv. */
double zb_rng_lognormal(struct zb_rng *g, double mean, double cv);

struct zb_jitter_stat {
    double mean, p50, p95;
};

struct zb_jitter_result {
    double cv;                          /* -1: per stage (cvs) */
    int samples;
    uint64_t seed;
    struct {
        double cost, makespan, bubble_ratio;
    } exact;                            /* the replay with cv 0 */
    struct zb_jitter_stat cost, makespan, bubble_ratio;
};

/* Replay s's compute order samples times, each pass's duration drawn
 * log-normal around its profile time with coefficient of variation cv
 * (cvs, when not NULL: one per stage and pass kind, cvs[3 * stage + k]
 * with k F, B, W, and cv is not used), re-timed by the simulator's rule
 * (a pass starts when its rank is free and its inputs have arrived, comm
 * added across ranks). ZB_EINVAL for a cv outside [0, 10], samples
 * outside 1..1000000, or a schedule with data-parallel collectives (not
 * replayed). */
int zb_jitter_run(const struct zb_schedule *s, double cv, const double *cvs,
                  int samples, uint64_t seed, struct zb_jitter_result *out,
                  struct zb_error *err);

/* The coefficients of variation a measured profile's spread implies for
 * p's stages, taking each time as log-normal: sigma = ln(p90 / p10) /
 * (2 x 1.2816), cv = sqrt(exp(sigma^2) - 1); 0 where fewer than two
 * samples. Fills cvs[3 * stage + k] (3 * pp * vpp entries); per-rank
 * entries give each of the rank's chunks theirs. ZB_EINVAL when m has
 * no entries or another count of them than p has stages (or ranks). */
int zb_jitter_cvs(const struct zb_measured *m, const struct zb_profile *p,
                  double *cvs, struct zb_error *err);

#endif
