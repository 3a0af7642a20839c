/* json.h - the JSON formats of docs/formats.md (profile and schedule, both
 * ways) and the one spelling of JSON values that every writer uses:
 * strings quoted and escaped, numbers in their shortest exact text, null
 * for NaN and infinity. src/json.c and src/json_trace.c are the only files
 * that see cJSON; cJSON trees never leave them.
 *
 * Parse errors carry line and column. Ownership: returned strings are the
 * caller's; const pointer arguments are borrowed, never kept. */
#ifndef ZBSCHED_JSON_H
#define ZBSCHED_JSON_H

#include <stdio.h>
#include "zbsched/error.h"
#include "zbsched/profile.h"
#include "zbsched/schedule.h"

/* ---- Formats ---------------------------------------------------------- */

/* Parse profile JSON text into a draft (fields it sets are marked set;
 * unknown keys become warnings in d->warnings). */
int zb_json_parse_profile(const char *text, struct zb_profile_draft *d,
                          struct zb_error *err);

/* Schedule JSON <-> struct. The reader checks the format tag, version,
 * that every op is known, and rebuilds the embedded profile. */
int zb_json_parse_schedule(const char *text, struct zb_schedule *out,
                           struct zb_error *err);
/* Returns a malloc'ed NUL-terminated string (formatted, ends in newline). */
char *zb_json_format_schedule(const struct zb_schedule *s);

/* Profile alone, in the input format (round-trips through the parser). */
char *zb_json_format_profile(const struct zb_profile *p);

/* ---- Values ----------------------------------------------------------- */

/* s as a JSON string: quoted, with ", \ and control characters escaped. */
void zb_json_fput_str(FILE *f, const char *s);

/* The shortest "%.15g"/"%.17g" text that reads back as v ("null" for NaN
 * and infinity, which JSON cannot hold). */
void zb_json_fput_num(FILE *f, double v);

#endif
