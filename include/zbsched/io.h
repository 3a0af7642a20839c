/* io.h - reading and writing the profile and schedule JSON formats of
 * docs/formats.md (src/json.c is the only file that sees cJSON).
 *
 * Parse errors carry line and column; writers never leave a half file:
 * zb_io_write_file() writes to a temporary file and renames it. */
#ifndef ZBSCHED_IO_H
#define ZBSCHED_IO_H

#include <stdio.h>
#include "zbsched/error.h"
#include "zbsched/profile.h"
#include "zbsched/schedule.h"

/* Read a whole file (or stdin for "-") into a NUL-terminated buffer the
 * caller frees. */
int zb_io_slurp(const char *path, char **out, struct zb_error *err);

/* Write len bytes to path atomically ("-" = stdout). */
int zb_io_write_file(const char *path, const char *data, size_t len,
                     struct zb_error *err);

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

#endif
