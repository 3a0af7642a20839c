/* io.h - whole files in and out: writers never leave a half file
 * (zb_io_write_file() writes to a temporary file and renames it). The
 * formats themselves are json.h's. */
#ifndef ZBSCHED_IO_H
#define ZBSCHED_IO_H

#include <stddef.h>
#include "zbsched/error.h"

/* Read a whole file (or stdin for "-") into a NUL-terminated buffer the
 * caller frees. */
int zb_io_slurp(const char *path, char **out, struct zb_error *err);

/* Write len bytes to path atomically ("-" = stdout). */
int zb_io_write_file(const char *path, const char *data, size_t len,
                     struct zb_error *err);

#endif
