/* cmd_export.c - `zbsched export FILE --to torch-csv`: PyTorch pipelining
 * CSV, compute_only by default (what torchtitan's
 * pipeline_parallel_schedule_csv loads) or compute_comms (our transfers). */
#include <stdlib.h>
#include <string.h>
#include "cli.h"
#include "commands.h"
#include "zbsched/io.h"
#include "zbsched/torch.h"

static const struct cli_opt opts[] = {
    { "to", true }, { "format", true }, { "o", true }, { "output", true },
    { "help", false }, { NULL, 0 },
};

static int parse_form(const struct cli_args *a, enum zb_torch_form *out)
{
    const char *f = cli_get(a, "format");

    if (!f || !strcmp(f, "compute_only"))
        *out = ZB_TORCH_COMPUTE_ONLY;
    else if (!strcmp(f, "compute_comms"))
        *out = ZB_TORCH_COMPUTE_COMMS;
    else {
        cli_error("export: --format: '%s' is not compute_only or "
                  "compute_comms", f);
        return CLI_USAGE;
    }
    return CLI_OK;
}

int cmd_export(int argc, char **argv)
{
    struct zb_schedule s;
    struct zb_error err = { 0 };
    enum zb_torch_form form;
    struct cli_args a;
    const char *out;
    char *text;
    int rc;

    if ((rc = cli_parse(argc, argv, "export", opts, &a)) != CLI_OK)
        return rc;
    if (cli_has(&a, "help")) {
        cli_usage(stdout);
        return CLI_OK;
    }
    if (a.npos != 1) {
        cli_error("export: expected one schedule file");
        return CLI_USAGE;
    }
    if (!cli_has(&a, "to") || strcmp(cli_get(&a, "to"), "torch-csv")) {
        cli_error("export: --to torch-csv is the one format");
        return CLI_USAGE;
    }
    /* The compute_only grid follows the simulator's order: re-simulate. */
    if ((rc = parse_form(&a, &form)) != CLI_OK ||
        (rc = cli_load_schedule(a.pos[0], &s)) != CLI_OK)
        return rc;
    out = cli_get(&a, "o") ? cli_get(&a, "o") : cli_get(&a, "output");
    text = zb_torch_csv_format(&s, form);
    if (zb_io_write_file(out ? out : "-", text, strlen(text), &err) < 0)
        rc = cli_fail(&err);
    free(text);
    zb_schedule_release(&s);
    return rc;
}
