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

static const struct cli_opt opts[] = {
    { "from", true }, { "name", true }, { "o", true }, { "output", true },
    { "q", false }, { "help", false }, CLI_PROFILE_OPTS, { NULL, 0 },
};

static int read_csv(const char *path, struct zb_torch_csv *c)
{
    struct zb_error err = { 0 };
    char *text;
    int rc;

    if ((rc = zb_io_slurp(path, &text, &err)) == 0) {
        rc = zb_torch_csv_parse(text, c, &err);
        free(text);
    }
    if (rc < 0) {
        zb_error_prefix(&err, "'%s'", path);
        return cli_fail(&err);
    }
    return CLI_OK;
}

/* The CSV's shape goes in as flags ahead of the user's: it overrides the
 * profile file (often written for another run), and a flag the user gave
 * that contradicts it is reported by zb_torch_csv_schedule(). */
static int load_profile(const struct cli_args *a,
                        const struct zb_torch_csv *c, struct zb_profile *out)
{
    char num[3][16];
    struct cli_args b = *a;

    if (a->n + 4 > CLI_MAX_ARGS) {
        cli_error("import: too many arguments");
        return CLI_USAGE;
    }
    snprintf(num[0], sizeof(num[0]), "%d", c->pp);
    snprintf(num[1], sizeof(num[1]), "%d", c->vpp);
    snprintf(num[2], sizeof(num[2]), "%d", c->microbatches);
    b.names[0] = "pp";
    b.values[0] = num[0];
    b.names[1] = "vpp";
    b.values[1] = num[1];
    b.names[2] = "mb";
    b.values[2] = num[2];
    b.names[3] = "placement";
    b.values[3] = zb_placement_name(c->placement);
    memcpy(&b.names[4], a->names, (size_t)a->n * sizeof(a->names[0]));
    memcpy(&b.values[4], a->values, (size_t)a->n * sizeof(a->values[0]));
    b.n = a->n + 4;
    return cli_load_profile(&b, out);
}

static int check_usage(const struct cli_args *a)
{
    const char *name = cli_get(a, "name");

    if (a->npos != 1) {
        cli_error("import: expected one CSV file");
        return CLI_USAGE;
    }
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

int cmd_import(int argc, char **argv)
{
    struct zb_torch_csv c = { 0 };
    struct zb_profile prof = { 0 };
    struct zb_schedule s;
    struct zb_error err = { 0 };
    struct cli_args a;
    const char *out, *name;
    char *text;
    int rc;

    if ((rc = cli_parse(argc, argv, "import", opts, &a)) != CLI_OK)
        return rc;
    if (cli_has(&a, "help")) {
        cli_usage(stdout);
        return CLI_OK;
    }
    if ((rc = check_usage(&a)) != CLI_OK ||
        (rc = read_csv(a.pos[0], &c)) != CLI_OK ||
        (rc = load_profile(&a, &c, &prof)) != CLI_OK)
        goto out;
    name = cli_get(&a, "name") ? cli_get(&a, "name") : "torch-csv";
    if (zb_torch_csv_schedule(&c, &prof, name, &s, &err) < 0) {
        zb_error_prefix(&err, "'%s'", a.pos[0]);
        rc = cli_fail(&err);
        goto out;
    }
    out = cli_get(&a, "o") ? cli_get(&a, "o") : cli_get(&a, "output");
    text = zb_json_format_schedule(&s);
    if (zb_io_write_file(out ? out : "-", text, strlen(text), &err) < 0)
        rc = cli_fail(&err);
    free(text);
    if (rc == CLI_OK && !s.predicted.fits_memory)
        cli_warn("'%s': peak memory %g exceeds the limit", a.pos[0],
                 report_max_peak(&s));
    if (rc == CLI_OK && !cli_has(&a, "q")) {
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
