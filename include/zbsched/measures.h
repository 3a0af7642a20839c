/* measures.h - the measures (docs/design.md, "Measures"), computed in one
 * place for the simulator's predicted times and for a realized run
 * (zbexec), and the order in which schedules compare. */
#ifndef ZBSCHED_MEASURES_H
#define ZBSCHED_MEASURES_H

#include <math.h>
#include <stdbool.h>
#include "zbsched/op.h"
#include "zbsched/profile.h"

struct zb_rank_measures {
    double busy;        /* sum of compute durations */
    double span;        /* last end - first start */
    double peak_memory; /* peak of the running memory sum */
    double first_start; /* start of the first pass */
    double last_end;    /* end of the last pass */
    double total_memory; /* data parallelism: peak of activations plus
                            model state (zero.h); else 0 */
};

struct zb_measures {
    double cost;              /* max span (the Zero Bubble paper's measure) */
    double makespan;          /* last end - first start over all ranks */
    double bubble_ratio;      /* 1 - sum busy / (p * cost) */
    double sync_bubble_ratio; /* 1 - sum busy / (p * makespan) */
    double lower_bound;       /* proven lower bound on cost (bound.c) */
    double makespan_bound;    /* proven lower bound on makespan */
    bool fits_memory;         /* every peak within its rank's limit */
    double step_time;         /* data parallelism: end of the last pass or
                                 collective - first start; else 0 */
    struct zb_rank_measures *ranks;  /* pp entries */
};

/* A rank's compute ops in list order, accumulated: the one rule for its
 * busy time, first start, last end and memory peak. zb_measures_from_times()
 * tallies an op list; a construction that times passes as it places them
 * tallies them there and skips the second walk over its lists. */
struct zb_rank_tally {
    double first_start, last_end, busy;
    double mem, peak;   /* running memory sum and its peak (from 0) */
};

static inline void zb_tally_start(struct zb_rank_tally *t)
{
    t->first_start = INFINITY;
    t->last_end = -INFINITY;
    t->busy = t->mem = t->peak = 0;
}

/* A pass that ran from start to end (in any order of the rank's passes). */
static inline void zb_tally_pass(struct zb_rank_tally *t, double start,
                                 double end)
{
    t->busy += end - start;
    if (start < t->first_start)
        t->first_start = start;
    if (end > t->last_end)
        t->last_end = end;
}

/* A memory change, after the pass that makes it. */
static inline void zb_tally_memory(struct zb_rank_tally *t, double delta)
{
    t->mem += delta;
    if (t->mem > t->peak)
        t->peak = t->mem;
}

/* Rank r's measures from its tally (the rest of ms->ranks[r] 0); clears
 * ms->fits_memory when its peak is over the limit (validator's
 * tolerance). */
void zb_measures_set_rank(const struct zb_profile *p, int r,
                          const struct zb_rank_tally *t,
                          struct zb_measures *ms);

/* ms with every rank set (zb_measures_set_rank(), fits_memory true
 * before the first) finished: bounds 0, then zb_measures_summarise(). */
void zb_measures_finish(struct zb_measures *ms, int pp);

/* Every measure but the bounds (left 0), from the start/end of the
 * compute ops in ranks (pp lists): the simulator's, or a realized run's.
 * ms->ranks must hold pp entries. fits_memory uses the validator's
 * tolerance (zb_validate_within_limit()). */
void zb_measures_from_times(const struct zb_profile *p,
                            const struct zb_op_list *ranks,
                            struct zb_measures *ms);

/* From each rank's busy, first_start and last_end (pp entries in
 * ms->ranks): span per rank, cost, makespan and both bubble ratios. */
void zb_measures_summarise(struct zb_measures *ms, int pp);

/* src's measures into dst (both with pp ranks; dst keeps its own ranks
 * array). */
void zb_measures_copy(struct zb_measures *dst, const struct zb_measures *src,
                      int pp);

/* Largest peak memory over the pp ranks. */
double zb_measures_max_peak(const struct zb_measures *ms, int pp);
/* Largest total_memory over the pp ranks (data parallelism; else 0). */
double zb_measures_max_total(const struct zb_measures *ms, int pp);

/* Whether measures x beat y: cost, then makespan, then the largest peak
 * memory (each within a relative 1e-9). */
bool zb_measures_better(const struct zb_measures *x,
                        const struct zb_measures *y, int pp);

#endif
