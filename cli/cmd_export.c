/* cmd_export.c - `zbsched export FILE [--to FORMAT] [-o OUT]`: a schedule
 * file as PyTorch pipelining CSV (compute_only by default, what
 * torchtitan's pipeline_parallel_schedule_csv loads, or compute_comms with
 * our transfers) or as schedule JSON re-simulated in its own profile. The
 * format is --to, else the one -o's extension names. */
#include <stdlib.h>
#include <string.h>
#include "cli.h"
#include "commands.h"
#include "zbsched/json.h"
#include "zbsched/torch.h"

/* The formats, each with the extension that names it in -o FILE. */
static const struct target {
    const char *name, *ext;
} targets[] = {
    { "torch-csv", ".csv" },
    { "json", ".json" },
    { NULL, NULL },
};

static const char names[] = "torch-csv (.csv) or json (.json)";

static bool ends_with(const char *s, const char *tail)
{
    size_t n = strlen(s), k = strlen(tail);

    return n > k && !strcmp(s + n - k, tail);
}

/* --to, else the format -o's extension names; a usage error naming the
 * formats otherwise. */
static int pick_target(const struct cli_args *a, const struct target **out)
{
    const char *to = cli_get(a, "to"), *path = cli_get(a, "output");

    for (const struct target *t = targets; t->name; t++)
        if (to ? !strcmp(to, t->name)
               : path && ends_with(path, t->ext)) {
            *out = t;
            return CLI_OK;
        }
    if (to)
        cli_error("export: --to '%s' is not a format: %s", to, names);
    else
        cli_error("export: which format? give --to %s, or -o FILE with "
                  "one of those extensions", names);
    return CLI_USAGE;
}

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
    const struct target *t;
    struct zb_schedule s;
    enum zb_torch_form form = ZB_TORCH_COMPUTE_ONLY;
    char *text;
    int rc;

    if ((rc = pick_target(a, &t)) != CLI_OK)
        return rc;
    if (strcmp(t->name, "torch-csv") &&
        (rc = cli_not_here(a, "format", "to %s (only to torch-csv)",
                           t->name)) != CLI_OK)
        return rc;
    /* The compute_only grid follows the simulator's order: re-simulate. */
    if ((rc = parse_form(a, &form)) != CLI_OK ||
        (rc = cli_load_schedule(a->pos[0], &s)) != CLI_OK)
        return rc;
    text = !strcmp(t->name, "json") ? zb_json_format_schedule(&s)
                                    : zb_torch_csv_format(&s, form);
    rc = cli_write_result(a, t->name, text, strlen(text));
    free(text);
    zb_schedule_release(&s);
    return rc;
}

static const struct cli_opt opts[] = {
    { "to", 0, "torch-csv|json", "the format (default: the one -o's "
      "extension\nnames, .csv or .json)" },
    { "format", 0, "compute_only|compute_comms", "torch-csv: compute_only "
      "(default), what\ntorchtitan loads; compute_comms: with our "
      "transfers\nand PyTorch's FSDP and REDUCE_GRAD actions" },
    CLI_OPT_OUTPUT("the export"),
    { NULL, 0, NULL, NULL },
};

const struct cli_command cmd_export = {
    .name = "export", .run = run,
    .summary = "write a schedule file as PyTorch pipelining CSV or "
               "schedule JSON",
    .args = "FILE", .min_args = 1, .max_args = 1,
    .groups = { { "options", opts } },
    .notes = "json: the schedule re-simulated in its own profile, as "
             "generate writes one.\nAn ILP model is written by generate "
             "--schedule ilp --export-lp FILE.\n",
};
