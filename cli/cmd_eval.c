/* cmd_eval.c - `zbsched eval FILE`: re-simulate any schedule (also one a
 * user wrote or imported) and print the measures. The file must be legal
 * apart from memory; a schedule over its limit is reported, exit 1. */
#include <stdio.h>
#include "cli.h"
#include "commands.h"
#include "report.h"
#include "zbsched/schedule.h"

int cmd_eval(int argc, char **argv)
{
    static const struct cli_opt opts[] = {
        { "json", false }, { "help", false }, { NULL, 0 },
    };
    struct zb_schedule s;
    struct cli_args a;
    int rc;

    if ((rc = cli_parse(argc, argv, "eval", opts, &a)) != CLI_OK)
        return rc;
    if (cli_has(&a, "help")) {
        cli_usage(stdout);
        return CLI_OK;
    }
    if (a.npos != 1) {
        cli_error("eval: expected one schedule file");
        return CLI_USAGE;
    }
    if ((rc = cli_load_schedule(a.pos[0], &s)) != CLI_OK)
        return rc;
    if (cli_has(&a, "json"))
        report_measures_json(stdout, &s);
    else
        report_measures(stdout, &s);
    if (!s.predicted.fits_memory) {
        cli_error("'%s': peak memory exceeds the limit", a.pos[0]);
        rc = CLI_FAIL;
    }
    zb_schedule_release(&s);
    return rc;
}
