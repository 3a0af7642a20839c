/* timeline.h - what ran when on each rank: a simulated schedule's times,
 * or a realized run read back from the executor's trace or report
 * (docs/guide.md, "Formats"). Ownership: returned timelines are owned by
 * the caller; const pointer arguments are borrowed, never kept. */
#ifndef ZBSCHED_TIMELINE_H
#define ZBSCHED_TIMELINE_H

#include "zbsched/error.h"
#include "zbsched/op.h"
#include "zbsched/profile.h"

/* What ran when on each rank: compute ops (F, B, W, BW) with start and
 * end in the profile's time unit, sorted by start. A predicted timeline is
 * simply a simulated schedule's op lists; a realized one is read back. */
struct zb_timeline {
    int pp;
    struct zb_op_list *ranks;   /* pp lists */
};

void zb_timeline_release(struct zb_timeline *t);

/* Parse what zbexec wrote: a Chrome trace (an object with "traceEvents"
 * or a bare event array; complete events "ph": "X" on thread 0 whose args
 * name op, stage and mb) or a report (an object with "ranks": [{"rank",
 * "ops": [{"op", "stage", "mb", "start", "end"}]}]). Times in both are
 * microseconds; us_per_unit converts them to the profile's unit, and the
 * earliest compute start becomes 0. When events carry args.iter, only
 * iteration `iter` is kept (-1: the last one present). Every op must name
 * a stage of its rank (pid) and a microbatch of p. On failure *out is
 * still safe to release. */
int zb_timeline_parse(const char *text, const struct zb_profile *p,
                      double us_per_unit, int iter, struct zb_timeline *out,
                      struct zb_error *err);

#endif
