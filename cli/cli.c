/* cli.c - option parsing, profile loading and error printing shared by the
 * subcommands (git style: "zbsched: what failed: why"). */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cli.h"
#include "zbsched/io.h"
#include "zbsched/json.h"
#include "zbsched/schedule.h"
#include "zbsched/sim.h"
#include "zbsched/validate.h"

void cli_error(const char *fmt, ...)
{
    va_list ap;
    fputs("zbsched: ", stderr);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
}

void cli_warn(const char *fmt, ...)
{
    va_list ap;
    fputs("zbsched: warning: ", stderr);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
}

int cli_fail(const struct zb_error *err)
{
    cli_error("%s", err->msg[0] ? err->msg : zb_strerror(err->code));
    return CLI_FAIL;
}

static const struct cli_opt *find_opt(const struct cli_opt *opts,
                                      const char *name)
{
    for (; opts->name; opts++)
        if (!strcmp(opts->name, name))
            return opts;
    return NULL;
}

int cli_parse(int argc, char **argv, const char *cmd,
              const struct cli_opt *opts, struct cli_args *out)
{
    memset(out, 0, sizeof(*out));
    out->cmd = cmd;
    for (int i = 1; i < argc; i++) {
        const char *arg = argv[i];
        char name[64];
        const char *value = NULL, *eq;
        const struct cli_opt *o;

        if (arg[0] != '-' || !strcmp(arg, "-")) {
            if (out->npos == CLI_MAX_ARGS)
                goto too_many;
            out->pos[out->npos++] = arg;
            continue;
        }
        /* -q, -o FILE, --name, --name=value, --name value */
        arg += arg[1] == '-' ? 2 : 1;
        eq = strchr(arg, '=');
        snprintf(name, sizeof(name), "%.*s",
                 (int)(eq ? (size_t)(eq - arg) : strlen(arg)), arg);
        o = find_opt(opts, name);
        if (!o) {
            cli_error("%s: unknown option '%s' (see 'zbsched %s --help')",
                      cmd, argv[i], cmd);
            return CLI_USAGE;
        }
        if (o->has_arg) {
            if (eq)
                value = eq + 1;
            else if (i + 1 < argc)
                value = argv[++i];
            else {
                cli_error("%s: option '%s' needs a value", cmd, argv[i]);
                return CLI_USAGE;
            }
        } else if (eq) {
            cli_error("%s: option '--%s' takes no value", cmd, name);
            return CLI_USAGE;
        }
        if (out->n == CLI_MAX_ARGS)
            goto too_many;
        out->names[out->n] = o->name;
        out->values[out->n++] = value ? value : "";
    }
    return CLI_OK;
too_many:
    cli_error("%s: too many arguments", cmd);
    return CLI_USAGE;
}

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
    char *end;

    if (!v) {
        *out = dflt;
        return CLI_OK;
    }
    *out = strtod(v, &end);
    if (!*v || *end) {
        cli_error("%s: --%s: '%s' is not a number", a->cmd, name, v);
        return CLI_USAGE;
    }
    return CLI_OK;
}

int cli_load_profile(const struct cli_args *a, struct zb_profile *out)
{
    static const char *const flags[] = {
        "pp", "vpp", "mb", "f", "b", "w", "comm", "m-b", "m-w",
        "mem-limit", "placement",
    };
    struct zb_profile_draft d;
    struct zb_error err = { 0 };
    const char *path = cli_get(a, "profile");
    int rc = 0;

    zb_profile_draft_init(&d);
    if (path) {
        char *text;
        if ((rc = zb_io_slurp(path, &text, &err)) == 0) {
            rc = zb_json_parse_profile(text, &d, &err);
            free(text);
            if (rc < 0)
                zb_error_prefix(&err, "'%s'", path);
        }
    }
    /* Flags override the file, in the order given. */
    for (int i = 0; i < a->n && rc == 0; i++)
        for (size_t k = 0; k < sizeof(flags) / sizeof(flags[0]); k++)
            if (!strcmp(a->names[i], flags[k])) {
                rc = zb_profile_draft_set(&d, flags[k], a->values[i], &err);
                break;
            }
    if (rc == 0 && d.warnings[0])
        cli_warn("%s", d.warnings);
    if (rc == 0)
        rc = zb_profile_build(&d, out, &err);
    zb_profile_draft_release(&d);
    return rc < 0 ? cli_fail(&err) : CLI_OK;
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
    if (rc < 0) {
        zb_error_prefix(&err, "'%s'", path);
        return cli_fail(&err);
    }
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
    return CLI_OK;
}

void cli_usage(FILE *out)
{
    fputs(
"usage: zbsched <command> [options]\n"
"\n"
"Pipeline-parallel schedules: generate, simulate, validate, compare.\n"
"\n"
"commands:\n"
"  generate   build a schedule for a profile (JSON on stdout or -o FILE)\n"
"  eval       simulate a schedule file and print its measures\n"
"  validate   check that a schedule file is legal\n"
"  compare    every family side by side for one profile\n"
"  list       the schedule families\n"
"  render     draw schedule files: SVG, terminal, Chrome trace (Perfetto)\n"
"  export     write a schedule file as PyTorch pipelining CSV\n"
"  import     read PyTorch pipelining CSV into a schedule file\n"
"\n"
"profile options (generate, compare, import; flags override the file):\n"
"  --profile FILE      profile JSON (docs/formats.md)\n"
"  --pp N --vpp N --mb N           ranks, chunks per rank, microbatches\n"
"  --placement loop|v              stage placement (v needs vpp 2)\n"
"  --f T --b T --w T --comm T      per-stage times (all stages)\n"
"  --m-b M --m-w M                 activation memory of F; part W frees\n"
"  --mem-limit M|Np                per-rank limit; Np = N*p*M_B\n"
"\n"
"generate: --schedule NAME (default zb, the best that fits), -o FILE,\n"
"          -q (no summary on stderr)\n"
"          ilp only: --time-limit S (60) --gap G (0) --objective cost|makespan\n"
"          --export-lp FILE (the model, CPLEX LP format); Ctrl-C stops the\n"
"          search and keeps the best schedule found\n"
"eval:     FILE [--json]\n"
"validate: FILE\n"
"compare:  [--json] [--time-limit S (10; 0: no ilp row)]\n"
"          [--mem-sweep FROM:TO:STEP]  (e.g. 1p:2p:0.25p: best cost and\n"
"          bound against the memory limit)\n"
"render:   FILE [-o OUT.svg] [--ascii] [--width N] [--trace OUT.json]\n"
"          [--realized ZBEXEC_TRACE_OR_REPORT [--iter N]] [--unit us|ms|s]\n"
"          --compare FILE FILE...  (several schedules, one time axis)\n"
"export:   FILE --to torch-csv [--format compute_only|compute_comms]\n"
"          [-o OUT]\n"
"import:   --from torch-csv FILE [profile options] [--name NAME] [-o OUT]\n"
"          [-q]  (the CSV gives pp, vpp, mb and placement)\n"
"\n"
"exit status: 0 ok, 1 failure, 2 usage error\n", out);
}
