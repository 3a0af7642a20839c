/* cli.h - what every subcommand shares: option parsing, the profile flags,
 * error printing and exit codes. The only code that prints errors. */
#ifndef ZBSCHED_CLI_H
#define ZBSCHED_CLI_H

#include <stdbool.h>
#include <stdio.h>
#include "zbsched/error.h"
#include "zbsched/profile.h"

enum { CLI_OK = 0, CLI_FAIL = 1, CLI_USAGE = 2 };

/* cli_parse() after printing a usage asked for with -h or --help. */
#define CLI_HELP (-1)

/* One option of a command: the parser and the usage text read the same
 * row, so what `zbsched CMD --help` prints is what CMD accepts. */
struct cli_opt {
    const char *name;   /* long name without dashes: --name */
    char letter;        /* short form -x, or 0 */
    const char *arg;    /* value placeholder ("FILE"); NULL: a switch */
    const char *help;   /* one line for the usage text */
};

/* A titled list of options, ended by { NULL }; shared lists (profile,
 * search) are defined once in cli.c and named by several commands. */
struct cli_group {
    const char *title;                  /* "profile options" */
    const struct cli_opt *opts;
};

/* The options whose meaning is the same in every command that has them:
 * one spelling, one help line (what: "the schedule", "the table"). */
#define CLI_OPT_OUTPUT(what) \
    { "output", 'o', "FILE", "write " what " here, whole or not at all\n" \
                             "(-: stdout, the default)" }
#define CLI_OPT_JSON(what) \
    { "json", 0, NULL, what " as one JSON document" }
#define CLI_OPT_QUIET \
    { "quiet", 'q', NULL, "no summary, notes or progress on stderr\n" \
                          "(errors and warnings still)" }

/* An option that means something only beside another one (eval's
 * --samples beside --jitter): given without it, a usage error
 * (cli_not_here()). */
struct cli_dep {
    const char *opt, *needs;            /* long names */
};

#define CLI_MAX_ARGS 64
#define CLI_MAX_GROUPS 4

struct cli_args;

/* A subcommand (git's commands[], tmux's cmd_entry): main.c looks the
 * row up, parses argv against its groups, prints its usage for -h and
 * --help, checks the count of positional arguments, then calls run. */
struct cli_command {
    const char *name;
    int (*run)(const struct cli_args *a);   /* returns the exit status */
    const char *summary;                    /* one line, for --help */
    const char *args;       /* positional arguments in the synopsis
                               ("FILE", "FILE..."), NULL: none */
    int min_args, max_args;                 /* positional counts */
    struct cli_group groups[CLI_MAX_GROUPS];    /* options, by group */
    const char *notes;      /* more text after the options, or NULL */
    const struct cli_dep *deps;     /* ended by { NULL }, or NULL */
};

struct cli_args {
    const struct cli_command *cmd;
    const char *names[CLI_MAX_ARGS], *values[CLI_MAX_ARGS];
    int n;
    const char *pos[CLI_MAX_ARGS];   /* positional arguments */
    int npos;
};

/* Shared option lists: the profile flags (docs/formats.md) and the search
 * options of generate and compare. */
extern const struct cli_opt cli_profile_opts[];
extern const struct cli_opt cli_search_opts[];

/* The command table (main.c), ended by NULL. */
extern const struct cli_command *const cli_commands[];

/* Parse argv[1..] (argv[0] is the command's name) against cmd's groups.
 * -h/--help prints cmd's usage on stdout and returns CLI_HELP; an unknown
 * option, a missing value or a wrong count of positional arguments prints
 * one line and returns CLI_USAGE. */
int cli_parse(const struct cli_command *cmd, int argc, char **argv,
              struct cli_args *out);

/* One command's usage: synopsis, summary, options by group, notes. */
void cli_command_usage(const struct cli_command *cmd, FILE *out);

/* "'genrate' is not a command (did you mean 'generate'?)" on stderr. */
void cli_unknown_command(const char *name);

/* Usage text of the whole tool (`zbsched --help`): the commands. */
void cli_usage(FILE *out);

/* The manual page of the whole tool, roff (`zbsched help --man`, man.c). */
void cli_man(FILE *out);

/* The one rule for an option the command has but that does not apply to
 * this call: when opt was given, "zbsched: CMD: --OPT does not apply
 * WHY" (WHY: "without --jitter", "to --schedule 1f1b (...)") and
 * CLI_USAGE; CLI_OK when it was not given. cli_parse() applies it to the
 * command's deps, the commands to the rules that depend on values. */
int cli_not_here(const struct cli_args *a, const char *opt,
                 const char *why, ...) __attribute__((format(printf, 3, 4)));

/* Where a command's result goes: stdout, or with -o FILE (not "-") a
 * buffer written to FILE whole by cli_out_close(), so a failed command
 * leaves no file. */
struct cli_out {
    FILE *f;                /* print the result here */
    const char *path;       /* -o FILE, or NULL: f is stdout */
    char *buf;
    size_t len;
};
void cli_out_open(const struct cli_args *a, struct cli_out *o);
/* Ends o: writes the buffer to its file when rc is CLI_OK. Returns rc, or
 * CLI_FAIL when the file cannot be written (said on stderr). */
int cli_out_close(struct cli_out *o, int rc);

/* A result text that is written whole (schedule, profile, CSV, SVG): to
 * -o FILE atomically, else to stdout, but not more than
 * CLI_TERMINAL_MAX bytes to a terminal unless -o - asks for it (a
 * usage error naming -o). what names the text ("JSON"). Returns a
 * CLI_* status; errors are printed. */
#define CLI_TERMINAL_MAX (64 << 10)
int cli_write_result(const struct cli_args *a, const char *what,
                     const char *text, size_t len);

/* Value of an option (each is given at most once), or NULL. */
const char *cli_get(const struct cli_args *a, const char *name);
bool cli_has(const struct cli_args *a, const char *name);

/* A shape that goes over the profile file and under the flags (import:
 * the CSV's), or NULL. */
struct cli_shape {
    int pp, vpp, microbatches;
    enum zb_placement placement;
};

struct zb_generator;

/* --profile FILE, then shape (may be NULL), then the profile flags over
 * them in the order given, into a draft (release it with
 * zb_profile_draft_release()). Prints the error (and warnings) itself;
 * returns CLI_OK or CLI_FAIL (then *out holds nothing). */
int cli_load_draft(const struct cli_args *a, const struct cli_shape *shape,
                   struct zb_profile_draft *out);

/* Build d in family g's shape where the user gives none
 * (zb_generator_profile()), or as given when g is NULL. Prints the
 * error itself; returns CLI_OK or CLI_FAIL. */
int cli_build_profile(const struct zb_profile_draft *d,
                      const struct zb_generator *g, struct zb_profile *out);

/* Whether d is one model that may be split into any shape: a per-rank
 * profile ("per": "rank") that names no placement or vpp. Then families
 * run in their own shapes (compare) and generate's pick tries every
 * shape. */
bool cli_own_shapes(const struct zb_profile_draft *d);

/* cli_load_draft(), then cli_build_profile(). */
int cli_load_profile(const struct cli_args *a, const struct cli_shape *shape,
                     const struct zb_generator *g, struct zb_profile *out);

/* "zbsched: <msg>" on stderr. */
void cli_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void cli_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Print err->msg as an error; returns CLI_FAIL. */
int cli_fail(const struct zb_error *err);
/* The same about a file: "zbsched: 'PATH': msg". */
int cli_fail_file(const char *path, struct zb_error *err);

struct zb_schedule;
/* Read and parse a schedule file; prints the error itself. */
int cli_read_schedule(const char *path, struct zb_schedule *out);

/* Read, check every rule but memory (as `eval` does) and re-simulate, so a
 * hand-written or imported file gets the times of its own profile. Prints
 * the error itself; on failure *out holds nothing to release. */
int cli_load_schedule(const char *path, struct zb_schedule *out);

struct zb_options;

/* The generator options of generate and compare (cli_search_opts):
 * --effort, --time-limit (default default_time), --gap, --objective
 * cost|makespan, --export-lp. With search set (a row with `solver`),
 * Ctrl-C interrupts the search and a progress line goes to stderr unless
 * -q. Prints usage errors. */
int cli_generator_options(const struct cli_args *a, double default_time,
                          bool search, struct zb_options *opt);

/* After a search row: its summary line on stderr (unless -q). */
void cli_search_summary(const struct zb_options *opt,
                        const struct zb_schedule *s);

/* Parse a number option; prints the error on failure. */
int cli_number(const struct cli_args *a, const char *name, double dflt,
               double *out);

#endif
