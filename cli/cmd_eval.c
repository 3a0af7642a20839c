/* cmd_eval.c - `zbsched eval FILE`: re-simulate any schedule (also one a
 * user wrote or imported) and print the measures. The file must be legal
 * apart from memory; a schedule over its limit is reported, exit 1. */
#include <stdio.h>
#include "cli.h"
#include "commands.h"
#include "report.h"
#include "zbsched/schedule.h"

static int run(const struct cli_args *a)
{
    struct zb_schedule s;
    int rc;

    if ((rc = cli_load_schedule(a->pos[0], &s)) != CLI_OK)
        return rc;
    if (cli_has(a, "json"))
        report_measures_json(stdout, &s);
    else
        report_measures(stdout, &s);
    if (!s.predicted.fits_memory) {
        cli_error("'%s': peak memory exceeds the limit", a->pos[0]);
        rc = CLI_FAIL;
    }
    zb_schedule_release(&s);
    return rc;
}

static const struct cli_opt opts[] = {
    { "json", 0, NULL, "one JSON object instead of the table" },
    { NULL, 0, NULL, NULL },
};

const struct cli_command cmd_eval = {
    .name = "eval", .run = run,
    .summary = "simulate a schedule file and print its measures",
    .args = "FILE", .min_args = 1, .max_args = 1,
    .groups = { { "options", opts } },
    .notes = "FILE must be legal apart from memory; a schedule over its "
             "limit is reported\nand the exit status is 1.\n",
};
