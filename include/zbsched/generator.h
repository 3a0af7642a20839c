/* generator.h - schedule families and the one table that lists them.
 *
 * A generator fills only the compute order per rank (F, B, W, BW ops);
 * zb_generate() then lowers, simulates and validates its output, so every
 * schedule that leaves the library has passed the validator. */
#ifndef ZBSCHED_GENERATOR_H
#define ZBSCHED_GENERATOR_H

#include <stdbool.h>
#include "zbsched/error.h"
#include "zbsched/profile.h"
#include "zbsched/schedule.h"

#define ZB_PLACES_LOOP (1u << ZB_PLACEMENT_LOOP)
#define ZB_PLACES_V (1u << ZB_PLACEMENT_V)

struct zb_generator {
    const char *name;        /* --schedule NAME */
    const char *summary;     /* one line for `zbsched list` */
    unsigned placements;     /* ZB_PLACES_* bits it serves */
    int min_vpp, max_vpp;    /* accepted chunks per rank */
    bool memory_aware;       /* reads the limit (else a fixed shape) */
    bool solver;             /* a time-limited search (ilp): commands run
                                it with their options, bulk loops (tests,
                                benchmarks, golden files) leave it out */
    /* Fill s (initialised for prof, empty lists) with the compute order.
     * ZB_EUNSUPPORTED for a profile the family cannot serve. */
    int (*generate)(const struct zb_profile *prof, struct zb_schedule *s,
                    struct zb_error *err);
};

/* NULL-terminated, in `zbsched list` order (schedules/registry.c). */
extern const struct zb_generator *const zb_generators[];

const struct zb_generator *zb_generator_find(const char *name);

/* Whether g accepts prof's vpp and placement; if not, ZB_EUNSUPPORTED with
 * the reason ("interleaved needs vpp >= 2, got 1"). */
int zb_generator_accepts(const struct zb_generator *g,
                         const struct zb_profile *prof, struct zb_error *err);

/* Generate, lower, simulate and validate: out is a complete schedule
 * named after g. The memory limit is not enforced here (a fixed family may
 * exceed it; out->predicted.fits_memory says so) but every other rule is. */
int zb_generate(const struct zb_generator *g, const struct zb_profile *prof,
                struct zb_schedule *out, struct zb_error *err);

#endif
