/* generator.h - schedule families, the one table that lists them, and the
 * one pipeline their output goes through.
 *
 * A generator fills only the compute order per rank (F, B, W, BW ops);
 * zb_generator_run() then simulates, lowers and validates it, so every
 * schedule that leaves the library has passed the validator. Every row,
 * the `ilp` search included, takes the same options (options.h). */
#ifndef ZBSCHED_GENERATOR_H
#define ZBSCHED_GENERATOR_H

#include <stdbool.h>
#include "zbsched/error.h"
#include "zbsched/options.h"
#include "zbsched/profile.h"
#include "zbsched/schedule.h"

#define ZB_PLACES_LOOP (1u << ZB_PLACEMENT_LOOP)
#define ZB_PLACES_V (1u << ZB_PLACEMENT_V)

struct zb_generator {
    const char *name;        /* --schedule NAME */
    const char *summary;     /* one line for `zbsched list` */
    unsigned placements;     /* ZB_PLACES_* bits it serves */
    int min_vpp, max_vpp;    /* accepted chunks per rank */
    int min_mb_per_pp;       /* needs m >= this * pp (0: any m) */
    /* The shape it runs in where the user gives no placement or vpp
     * (zb-v: v, 2; interleaved: loop, 2). shape_vpp 0: the profile's
     * defaults (loop; vpp 1, or 2 under placement v). */
    enum zb_placement shape_placement;
    int shape_vpp;
    bool memory_aware;       /* reads the limit (else a fixed shape): its
                                output must fit, the pipeline checks it */
    bool overlaps;           /* its orders run a forward and a backward
                                overlapped (FB ops), which the local search
                                and the solver cannot move: `zb` and the
                                ilp warm start leave it out */
    /* The most it holds on any rank, in 1F1B's activation peaks
     * (zb_profile_1f1b_peak()), whatever the limit: a promise
     * (test_generators checks it) that lets `zb` and generate's pick skip
     * the family where a candidate already costs less than the lower
     * bound at that memory (schedules/plan/candidates.c). Set where
     * building is dear (zb-v, v-half, v-min); a cheap family is built
     * anyway, and the pick can name it as the runner-up. 0: no such
     * promise. */
    double peak_cap;
    bool simulated;          /* generate() leaves s as zb_sim_run() does
                                (zb: its search times the winner), so the
                                pipeline does not simulate it again */
    bool stage_memory;       /* counts every stage's own M_B and M_W
                                (ilp); the others count microbatches and
                                build on zb_profile_uniform_memory()'s
                                view, their order then timed and
                                measured on the profile itself */
    bool solver;             /* a time-limited search (ilp): it reads the
                                search options (time limit, gap, objective,
                                export); bulk loops (tests, benchmarks,
                                golden files) leave it out */
    /* Fill s (initialised for prof, empty lists) with the compute order,
     * reading what it needs of opt (never NULL here). ZB_EUNSUPPORTED for
     * a profile the family cannot serve. */
    int (*generate)(const struct zb_profile *prof,
                    const struct zb_options *opt, struct zb_schedule *s,
                    struct zb_error *err);
};

/* NULL-terminated, in `zbsched list` order (schedules/registry.c). */
extern const struct zb_generator *const zb_generators[];

const struct zb_generator *zb_generator_find(const char *name);
/* A family by its name in any case or a PyTorch/torchtitan schedule name
 * (schedules/aliases.c); NULL and err ("did you mean") otherwise. */
const struct zb_generator *zb_generator_lookup(const char *n,
                                               struct zb_error *err);
/* PyTorch's name (torch.distributed.pipelining, torchtitan's
 * pipeline_parallel_schedule) of the schedule that runs g's order, or
 * NULL where PyTorch has none. */
const char *zb_generator_pytorch_name(const struct zb_generator *g);

/* Whether g accepts prof's vpp, placement and microbatch count; if not,
 * ZB_EUNSUPPORTED naming both ("interleaved needs vpp between 2 and 64,
 * got 1", "dualpipev needs at least 2p = 8 microbatches, got 7"). */
int zb_generator_accepts(const struct zb_generator *g,
                         const struct zb_profile *prof, struct zb_error *err);

/* Build d (zb_profile_build()) in g's shape: g's placement and vpp where
 * d sets none. A placement or vpp the user set that g cannot serve is
 * ZB_EUNSUPPORTED naming both ("zb-v needs placement 'v', got 'loop'"). */
int zb_generator_profile(const struct zb_generator *g,
                         const struct zb_profile_draft *d,
                         struct zb_profile *out, struct zb_error *err);

/* The one pipeline: generate -> simulate -> lower -> validate. out is a
 * complete schedule named after g (opt NULL: defaults). A memory-aware
 * row's output passes the whole validator (zb_validate_schedule()); a
 * fixed family may exceed the limit (out->predicted.fits_memory says so;
 * `generate` refuses to write it) but passes every other rule. On failure
 * out holds nothing to release. */
int zb_generator_run(const struct zb_generator *g,
                     const struct zb_profile *prof,
                     const struct zb_options *opt, struct zb_schedule *out,
                     struct zb_error *err);

/* The pipeline in two steps, for a chooser that weighs many orders and
 * keeps one: zb_generator_time() generates and simulates (out's order
 * and measures, as zb_generator_run() would leave them, but for the
 * lower bounds: zb_bound_set());
 * zb_generator_finish() lowers, places the data-parallel collectives
 * (which re-times s), sets the bounds and validates.
 * zb_generator_timed() is the first step's simulation alone, for an order
 * g's own code produced outside g->generate. Each leaves nothing to
 * release on failure. */
int zb_generator_time(const struct zb_generator *g,
                      const struct zb_profile *prof,
                      const struct zb_options *opt, struct zb_schedule *out,
                      struct zb_error *err);
int zb_generator_timed(const struct zb_generator *g, struct zb_schedule *s,
                       struct zb_error *err);
int zb_generator_finish(const struct zb_generator *g,
                        const struct zb_options *opt, struct zb_schedule *s,
                        struct zb_error *err);

#endif
