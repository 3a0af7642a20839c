/* io.h - whole files in and out: writers never leave a half file
 * (zb_io_write_file() writes to a temporary file and renames it). The
 * formats themselves are json.h's. */
#ifndef ZBSCHED_IO_H
#define ZBSCHED_IO_H

#include <stddef.h>
#include "zbsched/error.h"

/* The most any reader takes in (schedules, profiles, CSVs, traces): about
 * twice the largest schedule a profile may ask for (profile.h,
 * ZB_MAX_PASSES: some 150 MB). */
#define ZB_IO_MAX_INPUT (256 << 20)

/* The most a trace reader takes in (realized traces, profiler traces): a
 * Chrome trace spends about 540 bytes a pass against a schedule's 150,
 * so the trace of the largest schedule a profile may ask for is some
 * 540 MB; a profiler's trace of one training step is of that order too. */
#define ZB_IO_MAX_TRACE ((size_t)1 << 30)

/* Read a whole file (or stdin for "-") into a NUL-terminated buffer the
 * caller frees; more than ZB_IO_MAX_INPUT bytes is an error. */
int zb_io_slurp(const char *path, char **out, struct zb_error *err);

/* The same with another limit (ZB_IO_MAX_TRACE for traces). */
int zb_io_slurp_limit(const char *path, size_t limit, char **out,
                      struct zb_error *err);

/* Write len bytes to path atomically ("-" = stdout): into a new file
 * beside it (O_EXCL, unpredictable name, removed on SIGINT, SIGTERM and
 * SIGHUP), then renamed over it. A device or FIFO is written in place.
 * One write at a time: the signal handler knows a single temporary file. */
int zb_io_write_file(const char *path, const char *data, size_t len,
                     struct zb_error *err);

/* The same for a writer that wants a path (a library that opens the file
 * itself): write(tmp, ctx, err) fills the temporary file, which is renamed
 * over path when it returns 0 and removed otherwise. */
int zb_io_write_with(const char *path,
                     int (*write)(const char *tmp, void *ctx,
                                  struct zb_error *err),
                     void *ctx, struct zb_error *err);

#endif
