/* cmd_compare.c - `zbsched compare`: every family that serves the profile,
 * one row each: bubble_ratio, sync_bubble_ratio, cost, makespan, max
 * peak memory, gap to the lower bound, and whether it fits the limit.
 * --json prints one object per line for scripts and CI. */
#include <stdio.h>
#include "cli.h"
#include "commands.h"
#include "report.h"
#include "zbsched/generator.h"

int cmd_compare(int argc, char **argv)
{
    static const struct cli_opt opts[] = {
        { "json", false }, { "help", false }, CLI_PROFILE_OPTS, { NULL, 0 },
    };
    struct zb_profile prof = { 0 };
    struct cli_args a;
    bool json;
    int rc, rows = 0;

    if ((rc = cli_parse(argc, argv, "compare", opts, &a)) != CLI_OK)
        return rc;
    if (cli_has(&a, "help")) {
        cli_usage(stdout);
        return CLI_OK;
    }
    if ((rc = cli_load_profile(&a, &prof)) != CLI_OK)
        return rc;
    json = cli_has(&a, "json");
    if (!json)
        printf("%-15s %8s %8s %12s %12s %10s %8s %5s\n", "schedule",
               "bubble", "sync_bub", "cost", "makespan", "peak_mem", "gap",
               "fits");
    for (int i = 0; zb_generators[i]; i++) {
        const struct zb_generator *g = zb_generators[i];
        struct zb_schedule s;
        struct zb_error err = { 0 };

        if (zb_generator_accepts(g, &prof, NULL) < 0)
            continue;
        if (zb_generate(g, &prof, &s, &err) < 0) {
            /* `zb` finds nothing under an impossible limit: say so in the
             * table and go on with the other families. */
            if (!json)
                printf("%-15s %s\n", g->name, err.msg);
            else
                printf("{\"schedule\": \"%s\", \"error\": \"%s\"}\n",
                       g->name, err.msg);
            continue;
        }
        const struct zb_measures *m = &s.predicted;
        if (json)
            report_measures_json(stdout, &s);
        else
            printf("%-15s %8.4f %8.4f %12.6g %12.6g %10.6g %7.2f%% %5s\n",
                   g->name, m->bubble_ratio, m->sync_bubble_ratio, m->cost,
                   m->makespan, report_max_peak(&s), 100 * report_gap(m),
                   m->fits_memory ? "yes" : "no");
        rows++;
        zb_schedule_release(&s);
    }
    zb_profile_release(&prof);
    if (!rows) {
        cli_error("compare: no family serves this profile");
        return CLI_FAIL;
    }
    return CLI_OK;
}
