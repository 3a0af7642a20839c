/* measures.h - the measures of DESIGN.md ("Measures"), computed in one
 * place for the simulator's predicted times and for a realized run
 * (zbexec), and the order in which schedules compare. */
#ifndef ZBSCHED_MEASURES_H
#define ZBSCHED_MEASURES_H

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

/* Largest peak memory over the pp ranks. */
double zb_measures_max_peak(const struct zb_measures *ms, int pp);
/* Largest total_memory over the pp ranks (data parallelism; else 0). */
double zb_measures_max_total(const struct zb_measures *ms, int pp);

/* Whether measures x beat y: cost, then makespan, then the largest peak
 * memory (each within a relative 1e-9). */
bool zb_measures_better(const struct zb_measures *x,
                        const struct zb_measures *y, int pp);

#endif
