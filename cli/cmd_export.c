/* cmd_export.c - `zbsched export FILE --to torch-csv`: PyTorch pipelining
 * CSV, compute_only by default (what torchtitan's
 * pipeline_parallel_schedule_csv loads) or compute_comms (our transfers). */
#include <stdlib.h>
#include <string.h>
#include "cli.h"
#include "commands.h"
#include "zbsched/io.h"
#include "zbsched/torch.h"

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

static int run(const struct cli_args *a)
{
    struct zb_schedule s;
    struct zb_error err = { 0 };
    enum zb_torch_form form;
    const char *out;
    char *text;
    int rc;

    if (!cli_has(a, "to") || strcmp(cli_get(a, "to"), "torch-csv")) {
        cli_error("export: --to torch-csv is the one format");
        return CLI_USAGE;
    }
    /* The compute_only grid follows the simulator's order: re-simulate. */
    if ((rc = parse_form(a, &form)) != CLI_OK ||
        (rc = cli_load_schedule(a->pos[0], &s)) != CLI_OK)
        return rc;
    out = cli_get(a, "output");
    text = zb_torch_csv_format(&s, form);
    if (zb_io_write_file(out ? out : "-", text, strlen(text), &err) < 0)
        rc = cli_fail(&err);
    free(text);
    zb_schedule_release(&s);
    return rc;
}

static const struct cli_opt opts[] = {
    { "to", 0, "torch-csv", "the format (required; the one there is)" },
    { "format", 0, "compute_only|compute_comms", "compute_only (default): "
      "what torchtitan loads;\ncompute_comms: with our transfers and "
      "PyTorch's FSDP\nand REDUCE_GRAD actions" },
    { "output", 'o', "OUT", "write here (stdout)" },
    { NULL, 0, NULL, NULL },
};

const struct cli_command cmd_export = {
    .name = "export", .run = run,
    .summary = "write a schedule file as PyTorch pipelining CSV",
    .args = "FILE", .min_args = 1, .max_args = 1,
    .groups = { { "options", opts } },
};
