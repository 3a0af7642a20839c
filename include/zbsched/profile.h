/* profile.h - the problem a schedule is made for: ranks, chunks,
 * microbatches, per-stage pass times, communication and memory.
 *
 * Input arrives as a draft (from JSON and/or flags, every field optional)
 * and becomes a checked struct zb_profile through zb_profile_build(), the
 * one place where values are validated. Ownership: a profile owns its
 * arrays; zb_profile_release() frees them. */
#ifndef ZBSCHED_PROFILE_H
#define ZBSCHED_PROFILE_H

#include <stdbool.h>
#include "zbsched/dp.h"
#include "zbsched/error.h"
#include "zbsched/units.h"

/* At most this many passes (3*pp*vpp*microbatches): the largest schedule
 * that generates in seconds (zb at pp 512, 650 microbatches: 18 s) and
 * whose file (about 150 bytes a pass) reads back under io.h's input
 * limit. */
#define ZB_MAX_PASSES 1000000

/* Times and memory sizes are 0 or within this range: sums over every pass
 * stay finite (no inf in a cost), and ratios, pictures and tick steps made
 * from them stay normal numbers (a denormal time drew no axis). */
#define ZB_VALUE_MIN 1e-9
#define ZB_VALUE_MAX 1e12

/* The longest duration of a step (pass, transfer or collective) is at
 * most this many times its shortest pass: a double's 53 bits then still
 * hold every pass in a sum of start times. */
#define ZB_TIME_SPAN 1e12

enum zb_placement {
    ZB_PLACEMENT_LOOP,  /* stage s on rank s % p (Megatron interleaving) */
    ZB_PLACEMENT_V      /* chunk 0 of rank r is stage r, chunk 1 is 2p-1-r */
};

struct zb_stage_times {
    double f;           /* forward */
    double b;           /* gradient w.r.t. the stage input */
    double w;           /* gradient w.r.t. the weights */
};

/* One stage's activations where stages differ (the head's logits, the
 * embedding's nothing): what its F allocates and the part its W frees. */
struct zb_stage_memory {
    double m_b;
    double m_w;
};

/* A checked profile holds everything per stage (per chunk when vpp > 1),
 * whatever unit the input used (draft.per_rank). */
struct zb_profile {
    int pp;                          /* ranks */
    int vpp;                         /* chunks per rank */
    int microbatches;                /* m */
    enum zb_placement placement;
    struct zb_stage_times *stage;    /* pp*vpp entries, by stage */
    double comm;                     /* transfer time on a cross-rank
                                        edge; with stage_comm the largest
                                        of its entries */
    double *stage_comm;              /* NULL (every edge takes comm), or
                                        pp*vpp entries: entry s is the
                                        time between stage s and s + 1,
                                        activations down and gradients
                                        back (the last entry 0); read it
                                        through timing.h */
    double fb;                       /* an overlapped F&B op (FB); <= 0:
                                        its F plus its B */
    double m_b;                      /* activation memory one chunk's F
                                        allocates; with stage_mem the
                                        largest of any stage */
    double m_w;                      /* part of it W releases (B the rest);
                                        with stage_mem the largest */
    struct zb_stage_memory *stage_mem; /* NULL (every stage m_b, m_w), or
                                        pp*vpp entries that differ; read
                                        it through zb_profile_m_b/m_w() */
    double *mem_limit;               /* pp entries; INFINITY = unlimited:
                                        what activations may hold */
    double *mem_total;               /* pp entries, the limits as given
                                        when they bound model state plus
                                        activations (a size with params,
                                        zb_profile_count_state()); NULL
                                        when they bound activations */
    struct zb_dp dp;                 /* data parallelism (dp.h) */
    bool has_time_unit;              /* "time_unit" given: every time is */
    enum zb_time_unit time_unit;     /* in this unit (else unitless) */
    bool mem_gib;                    /* memory was given as sizes ("1.9GiB"):
                                        M_B, M_W and the limits are in GiB
                                        (else in M_B's unit) */
};

/* ---- Draft: what the user said, before checking -------------------- */

struct zb_opt {
    double value;
    bool set;
};

enum zb_limit_kind {
    ZB_LIMIT_NONE,      /* unlimited */
    ZB_LIMIT_VALUE,     /* one number for every rank */
    ZB_LIMIT_ARRAY,     /* one number per rank */
    ZB_LIMIT_TIMES_P    /* "Np": N times 1F1B's activation peak */
};

/* A "stages" entry: its times, and optionally its own M_B, M_W (a
 * number or a size, m_b_sized / m_w_sized as for the common ones) and
 * comm (the transfer to the next stage). */
struct zb_draft_stage {
    struct zb_opt f, b, w;
    struct zb_opt m_b, m_w, comm;
    bool m_b_sized, m_w_sized;
};

#define ZB_DRAFT_WARN_MAX 512

struct zb_profile_draft {
    struct zb_opt pp, vpp, microbatches;
    bool placement_set;
    enum zb_placement placement;
    /* "per": "rank": times, stages and M_B/M_W describe what one rank
     * holds (stages: one entry per rank), split evenly over its vpp
     * chunks; "chunk" (the default): per stage, per chunk when vpp > 1.
     * comm and the limit are the same either way. */
    bool per_rank;
    struct zb_opt f, b, w, comm;         /* the "time" object or flags */
    struct zb_opt fb;                    /* time.FB or --fb */
    bool time_given;                     /* a "time" object was present:
                                            then F, B and W are required */
    bool flag_times[3];                  /* f/b/w came from a flag: they
                                            override "stages" entries */
    bool flag_comm;                      /* --comm: overrides them too */
    bool flag_memory[2];                 /* --m-b, --m-w: likewise */
    struct zb_draft_stage *stages;       /* the "stages" array, or NULL */
    int n_stages;
    struct zb_opt m_b, m_w;
    /* Given as a size with a unit (then held in GiB), not a plain
     * number: every memory of a profile is one or the other. */
    bool m_b_sized, m_w_sized, limit_sized;
    bool time_unit_set;                  /* "time_unit" or --time-unit */
    enum zb_time_unit time_unit;
    enum zb_limit_kind limit_kind;
    double limit;                        /* VALUE, or N for TIMES_P */
    double *limits;                      /* ARRAY */
    int n_limits;
    char warnings[ZB_DRAFT_WARN_MAX];    /* "unknown key 'x'; ..." or "" */
    struct zb_dp_draft dp;               /* dp, zero, data_parallel */
};

void zb_profile_draft_init(struct zb_profile_draft *d);
void zb_profile_draft_release(struct zb_profile_draft *d);

/* Append a warning (several are joined with "; "). */
void zb_profile_draft_warn(struct zb_profile_draft *d, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* Apply a command-line override: name is the flag without dashes
 * ("pp", "vpp", "mb", "f", "b", "w", "fb", "comm", "m-b", "m-w",
 * "mem-limit", "placement", "per", "time-unit", and dp.h's data-parallel
 * flags), value its text. Returns ZB_EINVAL naming the flag on a value
 * that is not a decimal number (units.h), for m-b, m-w and mem-limit
 * not a size either ("1.9GiB", units.h) nor, for mem-limit, "Np"; not
 * a placement, rank|chunk or us|ms|s for the others. */
int zb_profile_draft_set(struct zb_profile_draft *d, const char *name,
                         const char *value, struct zb_error *err);

/* A time as text into d's time unit: a plain number as it is, or a time
 * with a unit ("14.4ms") when d has a time_unit (without one, ZB_EINVAL
 * saying so). what names the flag or field in the error. */
int zb_profile_draft_time(const struct zb_profile_draft *d, const char *what,
                          const char *text, double *out,
                          struct zb_error *err);

/* A memory's text: a plain number (M_B's unit, *sized false) or a size
 * with a unit ("1.9GiB", held in GiB, *sized true); what names the
 * flag or field in the error. */
int zb_profile_draft_memory(const char *what, const char *text, double *v,
                            bool *sized, struct zb_error *err);

/* Set the shape directly, as --pp, --vpp, --mb and --placement would (for
 * a caller that already holds the numbers, such as an imported CSV). */
void zb_profile_draft_set_shape(struct zb_profile_draft *d, int pp, int vpp,
                                int microbatches,
                                enum zb_placement placement);

/* Check every field and materialise the profile. Defaults: pp 8, vpp 1
 * (2 under placement v), microbatches 32 only when nothing set them;
 * F=B=W=1 and comm 0 when "time" and flags are absent; M_B 1, M_W = M_B;
 * no limit; no time unit. A "stages" entry's M_B, M_W and comm override
 * the common ones for that stage (its M_W defaults to its M_B times the
 * common M_W / M_B); stages that all agree leave stage_mem / stage_comm
 * NULL. Per-rank values are divided by vpp here.
 * Memory given as sizes is in GiB, then every memory but 0 and "Np" must
 * be a size (a plain M_B beside a "40GiB" limit would mean 40 of M_B)
 * and data_parallel.bytes_per_unit is a GiB; a bandwidth per second
 * needs the time unit. Errors name the field: "time.F must be a finite
 * number >= 0, got -1". */
int zb_profile_build(const struct zb_profile_draft *d, struct zb_profile *out,
                     struct zb_error *err);

/* ---- Profile -------------------------------------------------------- */

void zb_profile_release(struct zb_profile *p);
int zb_profile_copy(struct zb_profile *dst, const struct zb_profile *src);
/* Whether a and b are the same model: shape, every time, memory, limit
 * and data-parallel setting. */
bool zb_profile_equal(const struct zb_profile *a, const struct zb_profile *b);

/* The same model in another shape, built the way a per-rank profile is:
 * each rank's work (F, B, W, FB summed over its chunks), activations
 * (M_B, M_W, per stage where they differ) and data-parallel parameters
 * split evenly over its vpp chunks under placement; the limits as they
 * are, and every boundary the slowest one's comm. In p's own
 * shape, a copy (per-stage differences kept). ZB_EINVAL for a shape no
 * profile can have (v without vpp 2, vpp outside 1..64, more than
 * ZB_MAX_PASSES passes); then *out holds nothing to release. */
int zb_profile_reshape(const struct zb_profile *p,
                       enum zb_placement placement, int vpp,
                       struct zb_profile *out, struct zb_error *err);

static inline int zb_profile_stages(const struct zb_profile *p)
{
    return p->pp * p->vpp;
}

/* What F of `stage` allocates and what W of it frees (inline: the
 * simulator and the search ask for every pass). */
static inline double zb_profile_m_b(const struct zb_profile *p, int stage)
{
    return p->stage_mem ? p->stage_mem[stage].m_b : p->m_b;
}

static inline double zb_profile_m_w(const struct zb_profile *p, int stage)
{
    return p->stage_mem ? p->stage_mem[stage].m_w : p->m_w;
}

/* The activations of one microbatch through all of rank r's chunks: what
 * any schedule holds there before the rank's first B (vpp * M_B when
 * stages agree). */
double zb_profile_rank_microbatch(const struct zb_profile *p, int r);

/* 1F1B's activation peak, the unit of an "Np" limit: p microbatches of a
 * rank's activations, p * vpp * M_B, for every vpp and placement (ZB-V at
 * "1p" has 1F1B's memory, as in the papers); where stages differ, of the
 * rank whose microbatch holds most. */
double zb_profile_1f1b_peak(const struct zb_profile *p);

/* The same problem with one M_B and M_W for every stage, for code that
 * counts microbatches in flight (the builders): M_B the largest stage's,
 * M_W / M_B the largest ratio of any stage, and rank r's limit scaled by
 * M_B / (r's largest stage M_B). Each microbatch in flight then counts
 * at least its real memory on its rank, so an order within these limits
 * is within the real ones. A copy where stages agree. */
void zb_profile_uniform_memory(const struct zb_profile *p,
                               struct zb_profile *out);

/* Rank that holds a stage under the profile's placement (inline: the
 * simulator and the list scheduler ask for every pass). */
static inline int zb_profile_stage_rank(const struct zb_profile *p, int stage)
{
    if (p->placement == ZB_PLACEMENT_V && stage >= p->pp)
        return 2 * p->pp - 1 - stage;
    return stage % p->pp;
}

/* Chunk index (0..vpp-1) of a stage on its rank. */
static inline int zb_profile_stage_chunk(const struct zb_profile *p,
                                         int stage)
{
    return stage / p->pp;
}

/* The stage of chunk c on rank r. */
static inline int zb_profile_rank_stage(const struct zb_profile *p, int rank,
                                        int chunk)
{
    if (p->placement == ZB_PLACEMENT_V && chunk == 1)
        return 2 * p->pp - 1 - rank;
    return chunk * p->pp + rank;
}

bool zb_profile_has_limit(const struct zb_profile *p);

/* The most model state rank r can hold at once, in the memory unit:
 * over its stages, the state held all step (dp.h) plus ZeRO-2/3's full
 * gradient buffer and ZeRO-3's gathered weights, so that activations
 * within mem_limit fit the total in any order. At dp 1: params x
 * (weights + grads + optimizer bytes). 0 without params. */
double zb_profile_model_state(const struct zb_profile *p, int r);

/* The one rule of a total limit (mem_total): the activation budget of
 * rank r, mem_limit[r], is mem_total[r] minus its model state. Nothing
 * without mem_total. ZB_ENOMEM_LIMIT naming the rank and both sizes
 * when the model state leaves less than one microbatch's activations.
 * Rerun after changing p->dp (compare --zero-all). */
int zb_profile_count_state(struct zb_profile *p, struct zb_error *err);

const char *zb_placement_name(enum zb_placement pl);
int zb_placement_parse(const char *s, enum zb_placement *out);

#endif
