/* render.h - pictures of schedules: SVG Gantt charts and terminal
 * timelines, of predicted or realized times (timeline.h) stacked on one
 * time axis (docs/guide.md, "Formats").
 *
 * Ownership: returned strings are owned by the caller; const
 * pointer arguments are borrowed, never kept. */
#ifndef ZBSCHED_RENDER_H
#define ZBSCHED_RENDER_H

#include <stdbool.h>
#include "zbsched/schedule.h"

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

/* 0 when the panels can be drawn: finite times and an axis end of 0 or
 * within a range the tick steps and columns can divide (one-line reason
 * otherwise). Both renderers assume it. */
int zb_render_check(const struct zb_panel *panels, int n,
                    struct zb_error *err);

/* Terminal picture: per panel a header line and one line per rank, each
 * at most `width` columns (at least ZB_ASCII_MIN_WIDTH). */
#define ZB_ASCII_MIN_WIDTH 40
char *zb_render_ascii(const struct zb_panel *panels, int n, int width);

#endif
