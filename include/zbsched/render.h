/* render.h - pictures of schedules: SVG Gantt charts, terminal timelines,
 * Chrome trace-event JSON (Perfetto), and realized timelines read back
 * from the executor's trace or report (docs/guide.md, "Formats").
 *
 * Ownership: returned strings and timelines are owned by the caller; const
 * pointer arguments are borrowed, never kept. */
#ifndef ZBSCHED_RENDER_H
#define ZBSCHED_RENDER_H

#include <stdbool.h>
#include "zbsched/error.h"
#include "zbsched/schedule.h"

/* ---- Timelines ------------------------------------------------------ */

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

/* ---- Pictures --------------------------------------------------------- */

/* One chart: a schedule's profile and name with the timeline to draw. */
struct zb_panel {
    const char *label;                /* "predicted", "realized" or NULL */
    const struct zb_schedule *s;      /* name, profile (memory, chunks) */
    const struct zb_op_list *ranks;   /* s->profile.pp lists with times */
    const struct zb_measures *m;      /* measures of those times */
};

/* SVG document (NUL-terminated): the panels stacked on one time axis,
 * `width` pixels wide (at least ZB_SVG_MIN_WIDTH). */
#define ZB_SVG_MIN_WIDTH 400
char *zb_render_svg(const struct zb_panel *panels, int n, int width);

/* Terminal picture: per panel a header line and one line per rank, each
 * at most `width` columns (at least ZB_ASCII_MIN_WIDTH). */
#define ZB_ASCII_MIN_WIDTH 40
char *zb_render_ascii(const struct zb_panel *panels, int n, int width);

/* ---- Traces ------------------------------------------------------------ */

/* Chrome trace-event JSON of a simulated, lowered schedule's predicted
 * timeline: process (pid) = rank, thread 0 = compute, thread 1 (and 2, 3,
 * ... where transfers overlap, since a thread's slices must nest) =
 * communication, with flow arrows from each SEND to its RECV. One profile
 * time unit lasts us_per_unit microseconds. */
char *zb_trace_format(const struct zb_schedule *s, double us_per_unit);

#endif
