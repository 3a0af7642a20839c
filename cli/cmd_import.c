/* cmd_import.c - `zbsched import --from torch-csv FILE`: PyTorch pipelining
 * CSV to schedule JSON, for eval, validate, render and zbexec. The CSV sets
 * the shape (pp, vpp, mb, placement), the profile the times and memory. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cli.h"
#include "commands.h"
#include "report.h"
#include "zbsched/io.h"
#include "zbsched/json.h"
#include "zbsched/torch.h"

static int read_csv(const char *path, struct zb_torch_csv *c)
{
    struct zb_error err = { 0 };
    char *text;
    int rc;

    if ((rc = zb_io_slurp(path, &text, &err)) == 0) {
        rc = zb_torch_csv_parse(text, c, &err);
        free(text);
    }
    if (rc < 0)
        return cli_fail_file(path, &err);
    return CLI_OK;
}

/* The CSV's shape goes over the profile file (often written for another
 * run) and under the user's flags: a flag that contradicts it is reported
 * by zb_torch_csv_schedule(). */
static int load_profile(const struct cli_args *a,
                        const struct zb_torch_csv *c, struct zb_profile *out)
{
    const struct cli_shape shape = { c->pp, c->vpp, c->microbatches,
                                     c->placement };

    return cli_load_profile(a, &shape, NULL, out);
}

static int check_usage(const struct cli_args *a)
{
    const char *name = cli_get(a, "name");

    if (!cli_has(a, "from") || strcmp(cli_get(a, "from"), "torch-csv")) {
        cli_error("import: --from torch-csv is the one format");
        return CLI_USAGE;
    }
    if (name && (!*name || strlen(name) >= ZB_SCHEDULE_NAME_MAX)) {
        cli_error("import: --name must have 1 to %d characters",
                  ZB_SCHEDULE_NAME_MAX - 1);
        return CLI_USAGE;
    }
    return CLI_OK;
}

static int run(const struct cli_args *a)
{
    struct zb_torch_csv c = { 0 };
    struct zb_profile prof = { 0 };
    struct zb_schedule s;
    struct zb_error err = { 0 };
    const char *name;
    char *text;
    int rc;

    if ((rc = check_usage(a)) != CLI_OK ||
        (rc = read_csv(a->pos[0], &c)) != CLI_OK ||
        (rc = load_profile(a, &c, &prof)) != CLI_OK)
        goto out;
    name = cli_get(a, "name") ? cli_get(a, "name") : "torch-csv";
    if (zb_torch_csv_schedule(&c, &prof, name, &s, &err) < 0) {
        rc = cli_fail_file(a->pos[0], &err);
        goto out;
    }
    text = zb_json_format_schedule(&s);
    rc = cli_write_result(a, "schedule JSON", text, strlen(text));
    free(text);
    if (rc == CLI_OK && !s.predicted.fits_memory)
        cli_warn("'%s': peak memory %g exceeds the limit", a->pos[0],
                 report_max_peak(&s));
    if (rc == CLI_OK && !cli_has(a, "quiet")) {
        fputs("zbsched: ", stderr);
        report_summary(stderr, &s);
        fputc('\n', stderr);
    }
    zb_schedule_release(&s);
out:
    zb_profile_release(&prof);
    zb_torch_csv_release(&c);
    return rc;
}

static const struct cli_opt opts[] = {
    { "from", 0, "torch-csv", "the format (required; the one there is)" },
    { "name", 0, "NAME", "the schedule's name (torch-csv)" },
    CLI_OPT_OUTPUT("the schedule"),
    CLI_OPT_QUIET,
    { NULL, 0, NULL, NULL },
};

const struct cli_command cmd_import = {
    .name = "import", .run = run,
    .summary = "read PyTorch pipelining CSV into a schedule file",
    .args = "FILE", .min_args = 1, .max_args = 1,
    .groups = { { "options", opts },
                { "profile options", cli_profile_opts } },
    .notes = "The CSV gives pp, vpp, mb and placement (over the profile "
             "file); the profile\ngives the times and the memory.\n",
};
