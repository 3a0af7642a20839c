/* cli.h - what every subcommand shares: option parsing, the profile flags,
 * error printing and exit codes. The only code that prints errors. */
#ifndef ZBSCHED_CLI_H
#define ZBSCHED_CLI_H

#include <stdbool.h>
#include <stdio.h>
#include "zbsched/error.h"
#include "zbsched/profile.h"

enum { CLI_OK = 0, CLI_FAIL = 1, CLI_USAGE = 2 };

struct cli_opt {
    const char *name;   /* long name without dashes; "q" for -q */
    bool has_arg;
};

#define CLI_MAX_ARGS 64

struct cli_args {
    const char *cmd;
    const char *names[CLI_MAX_ARGS], *values[CLI_MAX_ARGS];
    int n;
    const char *pos[CLI_MAX_ARGS];   /* positional arguments */
    int npos;
};

/* The profile flags (DESIGN.md): end a command's option table with
 * CLI_PROFILE_OPTS, { NULL }. */
#define CLI_PROFILE_OPTS                                                   \
    { "profile", true }, { "pp", true }, { "vpp", true }, { "mb", true },  \
    { "f", true }, { "b", true }, { "w", true }, { "comm", true },          \
    { "m-b", true }, { "m-w", true }, { "mem-limit", true },               \
    { "placement", true }

/* Parse argv[1..] against opts; prints the usage error and returns
 * CLI_USAGE on an unknown option or a missing value. */
int cli_parse(int argc, char **argv, const char *cmd,
              const struct cli_opt *opts, struct cli_args *out);

/* Value of an option (last one wins), or NULL. */
const char *cli_get(const struct cli_args *a, const char *name);
bool cli_has(const struct cli_args *a, const char *name);

/* --profile FILE, then the flags over it, then zb_profile_build().
 * Prints the error (and warnings) itself; returns CLI_OK or CLI_FAIL. */
int cli_load_profile(const struct cli_args *a, struct zb_profile *out);

/* "zbsched: <msg>" on stderr. */
void cli_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void cli_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Print err->msg as an error; returns CLI_FAIL. */
int cli_fail(const struct zb_error *err);

struct zb_schedule;
/* Read and parse a schedule file; prints the error itself. */
int cli_read_schedule(const char *path, struct zb_schedule *out);

/* Read, check every rule but memory (as `eval` does) and re-simulate, so a
 * hand-written or imported file gets the times of its own profile. Prints
 * the error itself; on failure *out holds nothing to release. */
int cli_load_schedule(const char *path, struct zb_schedule *out);

struct zb_options;

/* The search options of generate and compare (for rows with `solver`
 * set): --time-limit (default default_time), --gap, --objective
 * cost|makespan, --export-lp; Ctrl-C interrupts the search; a progress
 * line on stderr unless -q. Prints usage errors. */
int cli_generator_options(const struct cli_args *a, double default_time,
                          struct zb_options *opt);

/* After a search row: its summary line on stderr (unless -q). */
void cli_search_summary(const struct zb_options *opt,
                        const struct zb_schedule *s);

/* Solver flags, for option tables. */
#define CLI_SOLVER_OPTS                                                    \
    { "time-limit", true }, { "gap", true }, { "objective", true }

/* Usage text of the whole tool (also `zbsched --help`). */
void cli_usage(FILE *out);

/* Parse a number option; prints the error on failure. */
int cli_number(const struct cli_args *a, const char *name, double dflt,
               double *out);

#endif
