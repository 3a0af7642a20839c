/* compare_dp.c - the PP x ZeRO table of `zbsched compare` (compare_dp.h):
 * for each family that serves the profile and each ZeRO stage asked for,
 * the schedule with its collectives placed (zero.h), its step time, the
 * step time after the post-pass that groups each rank's trailing W by
 * stage, and the largest per-rank memory with model state. The ilp row is
 * left out: one time-limited search per ZeRO stage (generate runs it). */
#include <math.h>
#include <stdio.h>
#include "cli.h"
#include "compare_dp.h"
#include "report.h"
#include "zbsched/generator.h"
#include "zbsched/json.h"
#include "zbsched/zero.h"

struct dp_row {
    double cost, step, step_grouped, memory, act_peak;
    bool fits;
};

/* Generate g under prof and measure it, as placed and W-grouped. */
static int measure(const struct zb_generator *g, const struct zb_profile *prof,
                   const struct zb_options *opt, struct dp_row *row,
                   struct zb_error *err)
{
    struct zb_schedule s;
    int rc;

    if ((rc = zb_generator_run(g, prof, opt, &s, err)) < 0)
        return rc;
    row->cost = s.predicted.cost;
    row->step = s.predicted.step_time;
    row->act_peak = report_max_peak(&s);
    row->fits = s.predicted.fits_memory;
    if ((rc = zb_zero_group_tail_w(&s, err)) == 0) {
        row->step_grouped = s.predicted.step_time;
        /* Grouping frees gradient buffers in another order: the memory
         * reported is the schedule's as grouped, what a user would run. */
        row->memory = report_max_total_memory(&s);
    }
    zb_schedule_release(&s);
    return rc;
}

static void print_row(const char *name, int zero, const struct dp_row *row,
                      bool json)
{
    if (!json) {
        printf("%-15s %4d %12.6g %12.6g %12.6g %12.6g %10.6g %5s\n", name,
               zero, row->cost, row->step, row->step_grouped, row->memory,
               row->act_peak, row->fits ? "yes" : "no");
        return;
    }
    fputs("{\"schedule\": ", stdout);
    zb_json_fput_str(stdout, name);
    printf(", \"zero\": %d, \"cost\": ", zero);
    zb_json_fput_num(stdout, row->cost);
    fputs(", \"step_time\": ", stdout);
    zb_json_fput_num(stdout, row->step);
    fputs(", \"step_time_grouped_w\": ", stdout);
    zb_json_fput_num(stdout, row->step_grouped);
    fputs(", \"memory\": ", stdout);
    zb_json_fput_num(stdout, row->memory);
    fputs(", \"peak_memory\": ", stdout);
    zb_json_fput_num(stdout, row->act_peak);
    printf(", \"fits_memory\": %s}\n", row->fits ? "true" : "false");
}

int compare_dp(const struct zb_profile *prof, const struct zb_options *opt,
               bool all_zero, bool json)
{
    struct zb_profile p;
    const char *best_name = NULL;
    struct dp_row best = { 0 };
    int best_zero = 0, rows_ok = 0;

    zb_profile_copy(&p, prof);
    if (!json)
        printf("%-15s %4s %12s %12s %12s %12s %10s %5s\n", "schedule",
               "zero", "cost", "step", "step_wgroup", "memory", "act_peak",
               "fits");
    for (int z = all_zero ? 0 : prof->dp.zero;
         z <= (all_zero ? 3 : prof->dp.zero); z++) {
        p.dp.zero = z;
        for (int i = 0; zb_generators[i]; i++) {
            const struct zb_generator *g = zb_generators[i];
            struct zb_error err = { 0 };
            struct dp_row row = { 0 };

            if (g->solver || zb_generator_accepts(g, &p, NULL) < 0)
                continue;
            if (measure(g, &p, opt, &row, &err) < 0) {
                if (json)
                    report_error_json(stdout, g->name, err.msg);
                else
                    printf("%-15s %4d %s\n", g->name, z, err.msg);
                continue;
            }
            print_row(g->name, z, &row, json);
            rows_ok++;
            double step = fmin(row.step, row.step_grouped);
            double best_step = fmin(best.step, best.step_grouped);
            if (row.fits && (!best_name || step < best_step * (1 - 1e-9) ||
                             (step <= best_step * (1 + 1e-9) &&
                              row.memory < best.memory))) {
                best = row;
                best_name = g->name;
                best_zero = z;
            }
        }
    }
    zb_profile_release(&p);
    if (!json && best_name)
        printf("fastest that fits: %s with zero %d, step %.6g, memory "
               "%.6g\n", best_name, best_zero, fmin(best.step,
                                                    best.step_grouped),
               best.memory);
    if (!rows_ok) {
        cli_error("compare: no family serves this profile");
        return CLI_FAIL;
    }
    return CLI_OK;
}
