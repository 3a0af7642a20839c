/* report.h - printing measures for people (tables) and scripts (JSON
 * lines), shared by generate, eval and compare. */
#ifndef ZBSCHED_REPORT_H
#define ZBSCHED_REPORT_H

#include <stdio.h>
#include "zbsched/schedule.h"

/* Largest peak memory over ranks. */
double report_max_peak(const struct zb_schedule *s);

/* Largest peak memory over ranks as a multiple of 1F1B's activation
 * peak (zb_profile_1f1b_peak(): the unit of "Np"). */
double report_peak_vs_1f1b(const struct zb_schedule *s);

/* What memory a memory-aware row may take when no limit was given (one
 * line, newline-terminated): every microbatch in flight at worst. */
void report_no_limit(FILE *out, const char *who, const struct zb_profile *p);

/* Largest total_memory over ranks (data parallelism; else 0). */
double report_max_total_memory(const struct zb_schedule *s);

/* A number for people, as one summary prints it (the one place that
 * formats them): times in the profile's time_unit with the unit
 * ("1261345 us", "1.262 s"), memory given as sizes in GiB ("39.9 GiB"),
 * else plain numbers as %.6g. Use .s within the same expression. */
struct report_text {
    char s[48];
};
struct report_text report_time(const struct zb_profile *p, double t);
struct report_text report_memory(const struct zb_profile *p, double m);

/* The rule that makes cost, bound and gap read consistently: a bound
 * above the cost by rounding only (within 1e-9 of it: the ILP's
 * 1261345.0000000002 under a cost of 1261345) is the cost, so no summary
 * prints a bound above the cost or a gap of -0.00%. */
double report_bound_of(double cost, double bound);

/* The lower bound as printed: report_bound_of(cost, lower_bound). */
double report_bound(const struct zb_measures *m);

/* cost / report_bound() - 1 (0 when the bound is 0). */
double report_gap(const struct zb_measures *m);

/* One line: "zb-h1: cost 103, bubble_ratio 0.0680, ..., peak memory 8 =
 * 1.00x 1F1B, ..." (no newline). */
void report_summary(FILE *out, const struct zb_schedule *s);

/* The measures of one schedule, overall and per rank. */
void report_measures(FILE *out, const struct zb_schedule *s);

/* The same as a JSON object (one line, no newline). */
void report_measures_json(FILE *out, const struct zb_schedule *s);

/* {"schedule": name, "error": msg} (one line, no newline). */
void report_error_json(FILE *out, const char *name, const char *msg);

#endif
