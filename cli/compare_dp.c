/* compare_dp.c - the PP x ZeRO table of `zbsched compare` (compare_dp.h):
 * for each family that serves the profile and each ZeRO stage asked for,
 * the schedule with its collectives placed (zero.h), its step time, the
 * step time after the post-pass that groups each rank's trailing W by
 * stage, and the largest per-rank memory with model state. ZeRO-2 that
 * reduces per microbatch is a row of its own, zero "2mb". The ilp row is
 * left out: one time-limited search per ZeRO stage (generate runs it). */
#include <math.h>
#include <stdio.h>
#include <string.h>
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

/* A row's ZeRO setting: the stage, and whether it reduces per microbatch. */
struct dp_variant {
    int zero;
    enum zb_dp_reduce reduce;
    int units;              /* FSDP units per stage */
};

/* "2", "2mb" reducing per microbatch, "3u4" with 4 units a stage. */
static const char *variant_label(const struct dp_variant *v, char *buf,
                                 size_t size)
{
    snprintf(buf, size, "%d%s", v->zero,
             v->reduce == ZB_DP_REDUCE_MICROBATCH ? "mb" : "");
    if (v->units > 1)
        snprintf(buf + strlen(buf), size - strlen(buf), "u%d", v->units);
    return buf;
}

/* A row of the table, or its JSON object (no newline). */
static void print_row(FILE *f, const char *name, const struct dp_variant *v,
                      const struct dp_row *row, bool json)
{
    char label[16];

    if (!json) {
        fprintf(f, "%-15s %4s %12.6g %12.6g %12.6g %12.6g %10.6g %5s\n", name,
               variant_label(v, label, sizeof(label)), row->cost, row->step,
               row->step_grouped, row->memory, row->act_peak,
               row->fits ? "yes" : "no");
        return;
    }
    fputs("{\"schedule\": ", f);
    zb_json_fput_str(f, name);
    fprintf(f, ", \"zero\": %d, ", v->zero);
    if (v->reduce != ZB_DP_REDUCE_STEP)
        fprintf(f, "\"reduce\": \"%s\", ", zb_dp_reduce_name(v->reduce));
    if (v->units > 1)
        fprintf(f, "\"units\": %d, ", v->units);
    fputs("\"cost\": ", f);
    zb_json_fput_num(f, row->cost);
    fputs(", \"step_time\": ", f);
    zb_json_fput_num(f, row->step);
    fputs(", \"step_time_grouped_w\": ", f);
    zb_json_fput_num(f, row->step_grouped);
    fputs(", \"memory\": ", f);
    zb_json_fput_num(f, row->memory);
    fputs(", \"peak_memory\": ", f);
    zb_json_fput_num(f, row->act_peak);
    fprintf(f, ", \"fits_memory\": %s}", row->fits ? "true" : "false");
}

/* Before a JSON row: the separator; rows counts the rows so far. */
static void next_row(FILE *f, bool json, int *rows)
{
    if (json)
        fputs((*rows)++ ? ",\n  " : "\n  ", f);
}

int compare_dp(FILE *f, const struct zb_profile *prof,
               const struct zb_options *opt, bool all_zero, bool json)
{
    /* --zero-all: every stage, and ZeRO-2 both ways; else the profile's. */
    static const struct dp_variant all[] = {
        { 0, ZB_DP_REDUCE_STEP, 1 }, { 1, ZB_DP_REDUCE_STEP, 1 },
        { 2, ZB_DP_REDUCE_STEP, 1 }, { 2, ZB_DP_REDUCE_MICROBATCH, 1 },
        { 3, ZB_DP_REDUCE_STEP, 1 },
        /* FSDP units inside a stage (docs/zero.md, "Units"). */
        { 3, ZB_DP_REDUCE_STEP, 2 }, { 3, ZB_DP_REDUCE_STEP, 4 },
        { 3, ZB_DP_REDUCE_MICROBATCH, 2 }, { 3, ZB_DP_REDUCE_MICROBATCH, 4 },
    };
    const struct dp_variant own = { prof->dp.zero, prof->dp.reduce,
                                    prof->dp.units };
    const struct dp_variant *vs = all_zero ? all : &own;
    const int nv = all_zero ? (int)(sizeof(all) / sizeof(all[0])) : 1;
    struct zb_profile p;
    const char *best_name = NULL;
    struct dp_row best = { 0 };
    struct dp_variant best_v = own;
    int rows_ok = 0, rows = 0;
    char label[16];

    zb_profile_copy(&p, prof);
    if (json)
        fputs("{\"rows\": [", f);
    else
        fprintf(f, "%-15s %4s %12s %12s %12s %12s %10s %5s\n", "schedule",
               "zero", "cost", "step", "step_wgroup", "memory", "act_peak",
               "fits");
    for (int v = 0; v < nv; v++) {
        p.dp.zero = vs[v].zero;
        p.dp.reduce = vs[v].reduce;
        p.dp.units = vs[v].units;
        struct zb_error serr = { 0 };
        /* Each stage's own model state leaves its own activation budget
         * under a total limit (profile.h, mem_total). */
        if (zb_profile_count_state(&p, &serr) < 0) {
            next_row(f, json, &rows);
            if (json)
                report_error_json(f, "*", serr.msg);
            else
                fprintf(f, "%-15s %4s %s\n", "*",
                       variant_label(&vs[v], label, sizeof(label)),
                       serr.msg);
            continue;
        }
        for (int i = 0; zb_generators[i]; i++) {
            const struct zb_generator *g = zb_generators[i];
            struct zb_error err = { 0 };
            struct dp_row row = { 0 };

            if (g->solver || zb_generator_accepts(g, &p, NULL) < 0)
                continue;
            next_row(f, json, &rows);
            if (measure(g, &p, opt, &row, &err) < 0) {
                if (json)
                    report_error_json(f, g->name, err.msg);
                else
                    fprintf(f, "%-15s %4s %s\n", g->name,
                           variant_label(&vs[v], label, sizeof(label)),
                           err.msg);
                continue;
            }
            print_row(f, g->name, &vs[v], &row, json);
            rows_ok++;
            double step = fmin(row.step, row.step_grouped);
            double best_step = fmin(best.step, best.step_grouped);
            if (row.fits && (!best_name || step < best_step * (1 - 1e-9) ||
                             (step <= best_step * (1 + 1e-9) &&
                              row.memory < best.memory))) {
                best = row;
                best_name = g->name;
                best_v = vs[v];
            }
        }
    }
    zb_profile_release(&p);
    if (json) {
        fputs("\n], \"fastest_that_fits\": ", f);
        if (best_name) {
            fputs("{\"schedule\": ", f);
            zb_json_fput_str(f, best_name);
            fprintf(f, ", \"zero\": \"%s\", \"step_time\": ",
                    variant_label(&best_v, label, sizeof(label)));
            zb_json_fput_num(f, fmin(best.step, best.step_grouped));
            fputs(", \"memory\": ", f);
            zb_json_fput_num(f, best.memory);
            fputs("}}\n", f);
        } else {
            fputs("null}\n", f);
        }
    } else if (best_name) {
        fprintf(f, "fastest that fits: %s with zero %s, step %s, memory "
                "%s\n", best_name,
                variant_label(&best_v, label, sizeof(label)),
                report_time(prof, fmin(best.step, best.step_grouped)).s,
                report_memory(prof, best.memory).s);
    }
    if (!rows_ok) {
        cli_error("compare: no family serves this profile");
        return CLI_FAIL;
    }
    return CLI_OK;
}
