/* cli.c - what the subcommands share: the parser and the usage text, both
 * read from a command's option rows (cli.h: struct cli_command), the
 * option lists several commands name, the one rule for an option that
 * does not apply, where results go (-o), profile and schedule loading,
 * and error printing (git style: "zbsched: what failed: why"). */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "cli.h"
#include "zbsched/bound.h"
#include "zbsched/generator.h"
#include "zbsched/io.h"
#include "zbsched/json.h"
#include "zbsched/schedule.h"
#include "zbsched/sim.h"
#include "zbsched/suggest.h"
#include "zbsched/units.h"
#include "zbsched/validate.h"

/* One line on stderr: "zbsched: " prefix message. Messages quote file
 * contents and names: control characters are shown as \xNN, so that
 * none reaches the terminal. */
static void say(const char *prefix, const char *fmt, va_list ap)
{
    char msg[2 * ZB_ERROR_MSG_MAX];

    vsnprintf(msg, sizeof(msg), fmt, ap);
    fprintf(stderr, "zbsched: %s", prefix);
    for (const unsigned char *c = (const unsigned char *)msg; *c; c++)
        if (*c < 0x20 || *c == 0x7f)
            fprintf(stderr, "\\x%02x", *c);
        else
            fputc(*c, stderr);
    fputc('\n', stderr);
}

void cli_error(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    say("", fmt, ap);
    va_end(ap);
}

void cli_warn(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    say("warning: ", fmt, ap);
    va_end(ap);
}

int cli_fail(const struct zb_error *err)
{
    cli_error("%s", err->msg[0] ? err->msg : zb_strerror(err->code));
    return CLI_FAIL;
}

int cli_fail_file(const char *path, struct zb_error *err)
{
    char quoted[ZB_ERROR_MSG_MAX];

    /* The file is named once: io.h's messages already name it. */
    snprintf(quoted, sizeof(quoted), "'%s'", path);
    if (!strstr(err->msg, quoted))
        zb_error_prefix(err, "%s", quoted);
    return cli_fail(err);
}

/* ---- option tables -------------------------------------------------- */

const struct cli_opt cli_profile_opts[] = {
    { "profile", 0, "FILE", "profile JSON (docs/formats.md); the flags below\n"
                            "override it, in the order given" },
    { "pp", 0, "N", "ranks" },
    { "vpp", 0, "N", "chunks per rank (1; 2 under v; zb-v, interleaved\n"
                     "and interleaved-zb set their own unless given)" },
    { "mb", 0, "N", "microbatches" },
    { "placement", 0, "loop|v", "stage placement (loop; the same families "
                                "set\ntheir own unless given)" },
    { "per", 0, "rank|chunk", "whether times and M_B, M_W (flags and file) "
                              "are\nper rank, split evenly over its chunks, "
                              "or per\nchunk (the default)" },
    { "f", 0, "T", "forward time of every stage" },
    { "b", 0, "T", "backward time, input gradient (B)" },
    { "w", 0, "T", "backward time, weight gradient (W)" },
    { "fb", 0, "T", "an overlapped F+B op (dualpipev's FB); default\n"
                    "its F plus its B" },
    { "comm", 0, "T", "transfer time between ranks" },
    { "time-unit", 0, "us|ms|s", "the unit of every time (none: unitless);"
                                 "\nsummaries print times in it" },
    { "m-b", 0, "M", "activation memory of one F: a number, or a\n"
                     "size (1.9GiB; then every memory is one)" },
    { "m-w", 0, "M", "the part of it that W frees (default M_B)" },
    { "mem-limit", 0, "M|Np", "per-rank memory limit in M_B's unit (80GiB"
                              "\nwith sizes), or Np: N times 1F1B's "
                              "activation\npeak (p times a rank's M_B)" },
    { "dp", 0, "D", "data-parallel replicas of each rank (1: none;\n"
                    "docs/zero.md)" },
    { "zero", 0, "0-3", "ZeRO stage with dp >= 2 (0)" },
    { "params", 0, "N", "parameters of every stage: model state with"
                        "\ndp >= 2, or in a size --mem-limit at dp 1" },
    { "bandwidth", 0, "BYTES/T", "collective link bandwidth (unlimited);"
                                 "\n50GB/s with --time-unit" },
    { "latency", 0, "T", "collective latency per ring step (0)" },
    { "prefetch", 0, "N", "ZeRO-3: UNSHARD N passes ahead (1; 0: none)" },
    { "fsdp-units", 0, "K", "FSDP units per stage (1): ZeRO-3 gathers each"
                            "\nper pass, per microbatch reduces each" },
    { "reduce", 0, "step|microbatch", "reduce the gradients once per stage "
                                      "after its\nlast W (step), or after "
                                      "every W (microbatch;\nzero >= 2)" },
    { NULL, 0, NULL, NULL },
};

const struct cli_opt cli_search_opts[] = {
    { "effort", 0, "SECONDS", "how long zb (and ilp's warm start) searches,\n"
      "counted in work, not time: the same input gives the\n"
      "same schedule on any machine; 0: the default (0.2 s at\n"
      "p 8, m 32, at most 0.5 s), < 0: no search" },
    { "time-limit", 0, "S",
      "ilp: seconds of search (generate 60, compare 10)" },
    { "gap", 0, "G", "ilp: stop once cost/bound - 1 <= G (0)" },
    { "objective", 0, "cost|makespan",
      "ilp: what to minimise (cost; the step with dp >= 2)" },
    { NULL, 0, NULL, NULL },
};

/* ---- parsing -------------------------------------------------------- */

static const struct cli_opt *find_opt(const struct cli_command *cmd,
                                      const char *name, char letter)
{
    for (int g = 0; g < CLI_MAX_GROUPS && cmd->groups[g].opts; g++)
        for (const struct cli_opt *o = cmd->groups[g].opts; o->name; o++)
            if (letter ? o->letter == letter : !strcmp(o->name, name))
                return o;
    return NULL;
}

/* The long option of cmd closest to a mistyped name, or NULL. */
static const char *near_option(const struct cli_command *cmd,
                               const char *name)
{
    const char *names[CLI_MAX_GROUPS * 40 + 1];
    size_t n = 0;

    names[n++] = "help";
    for (int g = 0; g < CLI_MAX_GROUPS && cmd->groups[g].opts; g++)
        for (const struct cli_opt *o = cmd->groups[g].opts;
             o->name && n < sizeof(names) / sizeof(names[0]); o++)
            names[n++] = o->name;
    return zb_suggest(name, names, n);
}

void cli_unknown_command(const char *name)
{
    const char *names[32];
    const char *near;
    size_t n = 0;

    for (int i = 0; cli_commands[i] && n < 32; i++)
        names[n++] = cli_commands[i]->name;
    if ((near = zb_suggest(name, names, n)))
        cli_error("'%s' is not a command (did you mean '%s'?)", name, near);
    else
        cli_error("'%s' is not a command (see 'zbsched --help')", name);
}

/* The count of positional arguments against the row's range. */
static int check_count(const struct cli_command *cmd,
                       const struct cli_args *a)
{
    if (a->npos >= cmd->min_args && a->npos <= cmd->max_args)
        return CLI_OK;
    if (cmd->max_args == 0)
        cli_error("%s: unexpected argument '%s' (see 'zbsched %s --help')",
                  cmd->name, a->pos[0], cmd->name);
    else
        cli_error("%s: %s, expected %s (see 'zbsched %s --help')", cmd->name,
                  a->npos < cmd->min_args ? "missing arguments"
                                          : "too many arguments",
                  cmd->args, cmd->name);
    return CLI_USAGE;
}

/* The first command other than the one parsing whose rows have the
 * option --name (or -letter), or NULL: a known option in the wrong
 * command is told apart from a typo. */
static const char *elsewhere(const char *name, char letter)
{
    for (int i = 0; cli_commands[i]; i++)
        if (find_opt(cli_commands[i], name, letter))
            return cli_commands[i]->name;
    return NULL;
}

/* One option at argv[*i]: --name, --name=value, --name value, -x,
 * -x value. */
static int parse_opt(const struct cli_command *cmd, int argc, char **argv,
                     int *i, struct cli_args *out)
{
    const char *arg = argv[*i], *value = NULL, *eq = NULL;
    const struct cli_opt *o;
    char name[64];
    bool is_long = arg[1] == '-';

    if (is_long) {
        eq = strchr(arg + 2, '=');
        snprintf(name, sizeof(name), "%.*s",
                 (int)(eq ? (size_t)(eq - arg - 2) : strlen(arg + 2)),
                 arg + 2);
        o = find_opt(cmd, name, 0);
    } else {
        o = arg[2] ? NULL : find_opt(cmd, NULL, arg[1]);
    }
    if (!o) {
        const char *near = is_long ? near_option(cmd, name) : NULL;
        const char *other = is_long ? elsewhere(name, 0)
                            : arg[2] ? NULL : elsewhere(NULL, arg[1]);
        if (other)
            cli_error("%s: option '%s' does not apply to %s (an option of "
                      "%s; see 'zbsched %s --help')", cmd->name, arg,
                      cmd->name, other, cmd->name);
        else if (near)
            cli_error("%s: unknown option '%s' (did you mean '--%s'?)",
                      cmd->name, arg, near);
        else
            cli_error("%s: unknown option '%s' (see 'zbsched %s --help')",
                      cmd->name, arg, cmd->name);
        return CLI_USAGE;
    }
    if (o->arg) {
        if (eq)
            value = eq + 1;
        else if (*i + 1 < argc)
            value = argv[++*i];
        else {
            cli_error("%s: option '%s' needs a value (%s)", cmd->name, arg,
                      o->arg);
            return CLI_USAGE;
        }
    } else if (eq) {
        cli_error("%s: option '--%s' takes no value", cmd->name, o->name);
        return CLI_USAGE;
    }
    if (out->n == CLI_MAX_ARGS) {
        cli_error("%s: too many arguments", cmd->name);
        return CLI_USAGE;
    }
    /* Twice is a mistake (which -o did the user mean?), not an override. */
    for (int k = 0; k < out->n; k++)
        if (out->names[k] == o->name) {
            cli_error("%s: option '--%s' given twice", cmd->name, o->name);
            return CLI_USAGE;
        }
    out->names[out->n] = o->name;
    out->values[out->n++] = value ? value : "";
    return CLI_OK;
}

int cli_parse(const struct cli_command *cmd, int argc, char **argv,
              struct cli_args *out)
{
    int rc;

    memset(out, 0, sizeof(*out));
    out->cmd = cmd;
    for (int i = 1; i < argc; i++) {
        const char *arg = argv[i];

        if (!strcmp(arg, "-h") || !strcmp(arg, "--help")) {
            cli_command_usage(cmd, stdout);
            return CLI_HELP;
        }
        if (arg[0] == '-' && arg[1]) {
            if ((rc = parse_opt(cmd, argc, argv, &i, out)) != CLI_OK)
                return rc;
        } else if (out->npos == CLI_MAX_ARGS) {
            cli_error("%s: too many arguments", cmd->name);
            return CLI_USAGE;
        } else {
            out->pos[out->npos++] = arg;
        }
    }
    for (const struct cli_dep *d = cmd->deps; d && d->opt; d++)
        if (!cli_has(out, d->needs) &&
            (rc = cli_not_here(out, d->opt, "without --%s", d->needs)) !=
                CLI_OK)
            return rc;
    return check_count(cmd, out);
}

int cli_not_here(const struct cli_args *a, const char *opt,
                 const char *why, ...)
{
    char msg[ZB_ERROR_MSG_MAX];
    va_list ap;

    if (!cli_has(a, opt))
        return CLI_OK;
    va_start(ap, why);
    vsnprintf(msg, sizeof(msg), why, ap);
    va_end(ap);
    cli_error("%s: --%s does not apply %s", a->cmd->name, opt, msg);
    return CLI_USAGE;
}

void cli_out_open(const struct cli_args *a, struct cli_out *o)
{
    const char *path = cli_get(a, "output");

    memset(o, 0, sizeof(*o));
    o->f = stdout;
    if (path && strcmp(path, "-")) {
        o->path = path;
        if (!(o->f = open_memstream(&o->buf, &o->len))) {
            fputs("zbsched: out of memory\n", stderr);
            abort();
        }
    }
}

int cli_write_result(const struct cli_args *a, const char *what,
                     const char *text, size_t len)
{
    const char *path = cli_get(a, "output");
    struct zb_error err = { 0 };

    /* A screenful of machine text scrolls the command away: the user
     * most likely forgot -o. */
    if (!path && len > CLI_TERMINAL_MAX && isatty(STDOUT_FILENO)) {
        cli_error("%s: %zu KiB of %s is not written to a terminal: give "
                  "-o FILE (or -o - to insist)", a->cmd->name, len >> 10,
                  what);
        return CLI_USAGE;
    }
    if (zb_io_write_file(path ? path : "-", text, len, &err) < 0)
        return cli_fail(&err);
    return CLI_OK;
}

int cli_out_close(struct cli_out *o, int rc)
{
    struct zb_error err = { 0 };

    if (!o->path)
        return rc;
    if (fclose(o->f) != 0) {
        fputs("zbsched: out of memory\n", stderr);
        abort();
    }
    if (rc == CLI_OK && zb_io_write_file(o->path, o->buf, o->len, &err) < 0)
        rc = cli_fail_file(o->path, &err);
    free(o->buf);
    o->buf = NULL;
    return rc;
}

/* ---- usage ---------------------------------------------------------- */

/* "  -o, --output FILE   help", the help's own lines aligned under it. */
static void print_opt(FILE *out, const struct cli_opt *o)
{
    enum { COL = 26 };
    char left[64], letter[8] = "    ";
    int n;

    if (o->letter)
        snprintf(letter, sizeof(letter), "-%c, ", o->letter);
    n = snprintf(left, sizeof(left), "  %s--%s%s%s", letter, o->name,
                 o->arg ? " " : "", o->arg ? o->arg : "");
    fputs(left, out);
    if (n >= COL - 1) {
        fputc('\n', out);
        n = 0;
    }
    fprintf(out, "%*s", COL - n, "");
    for (const char *h = o->help; *h; h++) {
        fputc(*h, out);
        if (*h == '\n')
            fprintf(out, "%*s", COL, "");
    }
    fputc('\n', out);
}

void cli_command_usage(const struct cli_command *cmd, FILE *out)
{
    static const struct cli_opt help = { "help", 'h', NULL, "this text" };

    fprintf(out, "usage: zbsched %s [options]%s%s\n\n%s\n", cmd->name,
            cmd->args ? " " : "", cmd->args ? cmd->args : "", cmd->summary);
    for (int g = 0; g < CLI_MAX_GROUPS && cmd->groups[g].opts; g++) {
        fprintf(out, "\n%s:\n", cmd->groups[g].title);
        for (const struct cli_opt *o = cmd->groups[g].opts; o->name; o++)
            print_opt(out, o);
        if (g == 0)
            print_opt(out, &help);
    }
    if (!cmd->groups[0].opts) {
        fputs("\noptions:\n", out);
        print_opt(out, &help);
    }
    if (cmd->notes)
        fprintf(out, "\n%s", cmd->notes);
}

void cli_usage(FILE *out)
{
    int w = 0;

    fputs("usage: zbsched <command> [options]\n\n"
          "Pipeline-parallel schedules: generate, simulate, validate, "
          "compare.\n\ncommands:\n", out);
    for (int i = 0; cli_commands[i]; i++)
        if ((int)strlen(cli_commands[i]->name) > w)
            w = (int)strlen(cli_commands[i]->name);
    for (int i = 0; cli_commands[i]; i++)
        fprintf(out, "  %-*s  %s\n", w, cli_commands[i]->name,
                cli_commands[i]->summary);
    fputs("\n'zbsched <command> --help' (or -h) prints a command's options,"
          "\n'zbsched help --man' the manual page (roff).\n"
          "exit status: 0 ok, 1 failure, 2 usage error\n", out);
}

/* ---- values --------------------------------------------------------- */

const char *cli_get(const struct cli_args *a, const char *name)
{
    for (int i = a->n - 1; i >= 0; i--)
        if (!strcmp(a->names[i], name))
            return a->values[i];
    return NULL;
}

bool cli_has(const struct cli_args *a, const char *name)
{
    return cli_get(a, name) != NULL;
}

int cli_number(const struct cli_args *a, const char *name, double dflt,
               double *out)
{
    const char *v = cli_get(a, name);

    if (!v) {
        *out = dflt;
        return CLI_OK;
    }
    if (zb_units_parse_number(v, out) < 0) {
        cli_error("%s: --%s: '%s' is not a number", a->cmd->name, name, v);
        return CLI_USAGE;
    }
    return CLI_OK;
}

/* A profile flag: a row of cli_profile_opts other than --profile. */
static bool is_profile_flag(const char *name)
{
    for (const struct cli_opt *o = cli_profile_opts; o->name; o++)
        if (!strcmp(o->name, name))
            return strcmp(name, "profile") != 0;
    return false;
}

int cli_load_draft(const struct cli_args *a, const struct cli_shape *shape,
                   struct zb_profile_draft *out)
{
    struct zb_error err = { 0 };
    const char *path = cli_get(a, "profile");
    int rc = 0;

    zb_profile_draft_init(out);
    if (path) {
        char *text;
        if ((rc = zb_io_slurp(path, &text, &err)) == 0) {
            rc = zb_json_parse_profile(text, out, &err);
            free(text);
            if (rc < 0)
                zb_error_prefix(&err, "'%s'", path);
        }
    }
    if (rc == 0 && shape)
        zb_profile_draft_set_shape(out, shape->pp, shape->vpp,
                                   shape->microbatches, shape->placement);
    /* Flags override the file, in the order given, but --time-unit first:
     * the times with a unit ("--f 14.4ms") are read into it. A flag's text
     * that is not a value of its kind is a usage error (exit 2), as
     * cli_number's. */
    for (int pass = 0; pass < 2 && rc == 0; pass++)
        for (int i = 0; i < a->n; i++) {
            const char *name = a->names[i];
            if (!is_profile_flag(name) ||
                (pass == 0) != !strcmp(name, "time-unit"))
                continue;
            if (zb_profile_draft_set(out, name, a->values[i], &err) < 0) {
                zb_profile_draft_release(out);
                cli_fail(&err);
                return CLI_USAGE;
            }
        }
    if (rc < 0) {
        zb_profile_draft_release(out);
        return cli_fail(&err);
    }
    if (out->warnings[0])
        cli_warn("%s", out->warnings);
    return CLI_OK;
}

int cli_build_profile(const struct zb_profile_draft *d,
                      const struct zb_generator *g, struct zb_profile *out)
{
    struct zb_error err = { 0 };
    int rc = g ? zb_generator_profile(g, d, out, &err)
               : zb_profile_build(d, out, &err);

    return rc < 0 ? cli_fail(&err) : CLI_OK;
}

bool cli_own_shapes(const struct zb_profile_draft *d)
{
    return d->per_rank && !d->placement_set && !d->vpp.set;
}

int cli_load_profile(const struct cli_args *a, const struct cli_shape *shape,
                     const struct zb_generator *g, struct zb_profile *out)
{
    struct zb_profile_draft d;
    int rc;

    if ((rc = cli_load_draft(a, shape, &d)) != CLI_OK)
        return rc;
    rc = cli_build_profile(&d, g, out);
    zb_profile_draft_release(&d);
    return rc;
}

int cli_read_schedule(const char *path, struct zb_schedule *out)
{
    struct zb_error err = { 0 };
    char *text;
    int rc;

    if ((rc = zb_io_slurp(path, &text, &err)) == 0) {
        rc = zb_json_parse_schedule(text, out, &err);
        free(text);
    }
    if (rc < 0)
        return cli_fail_file(path, &err);
    return CLI_OK;
}

int cli_load_schedule(const char *path, struct zb_schedule *out)
{
    struct zb_error err = { 0 };
    int rc;

    if ((rc = cli_read_schedule(path, out)) != CLI_OK)
        return rc;
    if (zb_validate_order(out, &err) < 0 ||
        zb_sim_run(out, &err) < 0) {
        zb_error_prefix(&err, "'%s'", path);
        zb_schedule_release(out);
        return cli_fail(&err);
    }
    zb_bound_set(out);
    return CLI_OK;
}
