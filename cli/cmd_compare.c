/* cmd_compare.c - `zbsched compare`: every family that serves the profile,
 * one row each: bubble_ratio, sync_bubble_ratio, cost, makespan, max peak
 * memory, gap to the best proven lower bound, and whether it fits the
 * limit; the `ilp` row is the solver under --time-limit (default 10 s, 0
 * leaves it out). --json prints one object per line for scripts and CI.
 * --mem-sweep A:B:STEP prints the frontier of best cost and bound against
 * the memory limit instead. A profile with data parallelism (dp >= 2)
 * gets the PP x ZeRO table of compare_dp.c. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cli.h"
#include "commands.h"
#include "compare_dp.h"
#include "report.h"
#include "zbsched/generator.h"
#include "zbsched/xalloc.h"

struct row {
    const struct zb_generator *g;
    struct zb_schedule s;
    bool ok;
    char error[ZB_ERROR_MSG_MAX];
};

/* Generate one family's row with the command's options. */
static void make_row(struct row *row, const struct zb_generator *g,
                     const struct zb_profile *prof,
                     const struct zb_options *opt)
{
    struct zb_error err = { 0 };

    row->g = g;
    row->ok = zb_generator_run(g, prof, opt, &row->s, &err) == 0;
    snprintf(row->error, sizeof(row->error), "%s", err.msg);
}

static void print_row(const struct row *row, double bound, bool json)
{
    const struct zb_measures *m = &row->s.predicted;
    double gap = bound > 0 ? m->cost / bound - 1 : 0;

    if (!row->ok) {
        if (json)
            report_error_json(stdout, row->g->name, row->error);
        else
            printf("%-15s %s\n", row->g->name, row->error);
        return;
    }
    if (json) {
        report_measures_json(stdout, &row->s);
        return;
    }
    printf("%-15s %8.4f %8.4f %12.6g %12.6g %10.6g ", row->g->name,
           m->bubble_ratio, m->sync_bubble_ratio, m->cost, m->makespan,
           report_max_peak(&row->s));
    /* The bound holds within the limit: no gap for a schedule over it. */
    if (m->fits_memory)
        printf("%7.2f%%   yes", 100 * gap);
    else
        printf("%8s    no", "-");
    if (row->s.solver.present)
        printf("  %s", row->s.solver.status);
    printf("\n");
}

static int compare(const struct zb_profile *prof,
                   const struct zb_options *opt, bool json)
{
    int n = 0, rows_ok = 0;
    struct row *rows = zb_xcalloc(32, sizeof(*rows));
    double bound = 0;

    for (int i = 0; zb_generators[i] && n < 32; i++) {
        const struct zb_generator *g = zb_generators[i];
        if (zb_generator_accepts(g, prof, NULL) < 0 ||
            (g->solver && opt->time_limit <= 0))
            continue;
        make_row(&rows[n], g, prof, opt);
        if (rows[n].ok) {
            /* The best proven bound: the closed form, or the solver's. */
            bound = fmax(bound, rows[n].s.predicted.lower_bound);
            if (rows[n].s.solver.present)
                bound = fmax(bound, rows[n].s.solver.bound);
            rows_ok++;
        }
        n++;
    }
    if (!json)
        printf("%-15s %8s %8s %12s %12s %10s %8s %5s\n", "schedule",
               "bubble", "sync_bub", "cost", "makespan", "peak_mem", "gap",
               "fits");
    for (int i = 0; i < n; i++) {
        print_row(&rows[i], bound, json);
        if (rows[i].ok)
            zb_schedule_release(&rows[i].s);
    }
    if (!json)
        printf("gap: cost over the best proven lower bound, %.6g\n", bound);
    free(rows);
    if (!rows_ok) {
        cli_error("compare: no family serves this profile");
        return CLI_FAIL;
    }
    return CLI_OK;
}

/* "1p:2p:0.25p": from, to, step; a trailing p multiplies by p * M_B. */
static int parse_sweep(const char *spec, const struct zb_profile *p,
                       double v[3])
{
    char *copy = zb_xstrdup(spec), *tok, *save = NULL;
    int n = 0;

    for (tok = strtok_r(copy, ":", &save); tok && n < 3;
         tok = strtok_r(NULL, ":", &save)) {
        size_t len = strlen(tok);
        double scale = 1;
        char *end;
        if (len > 1 && tok[len - 1] == 'p') {
            tok[len - 1] = '\0';
            scale = p->pp * p->m_b;
        }
        v[n] = strtod(tok, &end) * scale;
        if (*end || end == tok)
            break;
        n++;
    }
    free(copy);
    if (n != 3 || tok || !(v[0] > 0) || !(v[2] > 0) || v[1] < v[0]) {
        cli_error("compare: --mem-sweep wants FROM:TO:STEP with FROM <= TO "
                  "and STEP > 0 (e.g. 1p:2p:0.25p), got '%s'", spec);
        return CLI_USAGE;
    }
    return CLI_OK;
}

/* Best cost and proven bound for each limit of the sweep: zb, and the
 * solver when its time limit is above 0. */
static int mem_sweep(struct zb_profile *prof, const char *spec,
                     const struct zb_options *opt)
{
    double v[3];
    int rc;

    if ((rc = parse_sweep(spec, prof, v)) != CLI_OK)
        return rc;
    printf("%10s %12s %12s %12s %8s  %s\n", "limit", "zb", "ilp", "bound",
           "gap", "status");
    for (double lim = v[0]; lim <= v[1] * (1 + 1e-9); lim += v[2]) {
        struct zb_schedule zb, ilp;
        struct zb_error err = { 0 };
        double best, bound;

        for (int r = 0; r < prof->pp; r++)
            prof->mem_limit[r] = lim;
        if (lim < prof->vpp * prof->m_b ||
            zb_generator_run(zb_generator_find("zb"), prof, opt, &zb,
                             &err) < 0) {
            printf("%10.6g %12s %12s %12s %8s  %s\n", lim, "-", "-", "-",
                   "-", lim < prof->vpp * prof->m_b ? "below one microbatch"
                                                   : err.msg);
            continue;
        }
        best = zb.predicted.cost;
        bound = zb.predicted.lower_bound;
        if (opt->time_limit > 0 &&
            zb_generator_run(zb_generator_find("ilp"), prof, opt, &ilp,
                             &err) == 0) {
            best = fmin(best, ilp.predicted.cost);
            bound = fmax(bound, ilp.solver.bound);
            printf("%10.6g %12.6g %12.6g %12.6g %7.2f%%  %s\n", lim,
                   zb.predicted.cost, ilp.predicted.cost, bound,
                   100 * (best / bound - 1), ilp.solver.status);
            zb_schedule_release(&ilp);
        } else {
            printf("%10.6g %12.6g %12s %12.6g %7.2f%%  %s\n", lim,
                   zb.predicted.cost, "-", bound, 100 * (best / bound - 1),
                   best <= bound * (1 + 1e-9) ? "optimal" : "heuristic");
        }
        zb_schedule_release(&zb);
    }
    return CLI_OK;
}

static int run(const struct cli_args *a)
{
    struct zb_profile prof = { 0 };
    struct zb_options opt;
    int rc;

    /* The table's progress lines would interleave with it: quiet. */
    if ((rc = cli_generator_options(a, 10, true, &opt)) != CLI_OK ||
        (rc = cli_load_profile(a, NULL, &prof)) != CLI_OK)
        return rc;
    opt.progress = NULL;
    if (cli_has(a, "zero-all") && !zb_dp_active(&prof)) {
        cli_error("compare: --zero-all needs data parallelism (--dp >= 2)");
        rc = CLI_USAGE;
    } else if (cli_has(a, "mem-sweep"))
        rc = mem_sweep(&prof, cli_get(a, "mem-sweep"), &opt);
    else if (zb_dp_active(&prof))
        rc = compare_dp(&prof, &opt, cli_has(a, "zero-all"),
                        cli_has(a, "json"));
    else
        rc = compare(&prof, &opt, cli_has(a, "json"));
    zb_profile_release(&prof);
    return rc;
}

static const struct cli_opt opts[] = {
    { "json", 0, NULL, "one JSON object per row instead of the table" },
    { "mem-sweep", 0, "FROM:TO:STEP", "best cost and bound against the "
      "memory limit\ninstead (e.g. 1p:2p:0.25p)" },
    { "quiet", 'q', NULL, "no progress lines (compare prints none "
                          "anyway)" },
    { "zero-all", 0, NULL, "with --dp >= 2: rows for ZeRO 0, 1, 2 and 3" },
    { NULL, 0, NULL, NULL },
};

const struct cli_command cmd_compare = {
    .name = "compare", .run = run,
    .summary = "every family side by side for one profile",
    .groups = { { "options", opts },
                { "search options", cli_search_opts },
                { "profile options", cli_profile_opts } },
    .notes = "The ilp row runs under --time-limit (10 s here; 0 leaves it "
             "out).\ngap: cost over the best proven lower bound of all "
             "rows.\nWith --dp >= 2: one row per family and ZeRO stage "
             "(step time,\nthe same after grouping each rank's "
             "trailing W by stage, memory\nwith model state; no ilp "
             "row; docs/zero.md).\n",
};
