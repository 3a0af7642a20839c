/* cmd_compare.c - `zbsched compare`: every family that serves the profile,
 * one row each: bubble_ratio, sync_bubble_ratio, cost, makespan, max peak
 * memory (also over 1F1B's), gap to the best proven lower bound, and
 * whether it fits the limit; the `ilp` row is the solver under
 * --time-limit (default 10 s, 0 leaves it out). A per-rank profile that
 * names no shape runs zb-v and the interleaved families in their own.
 * --json prints the same as one JSON document, verdict included; -o FILE
 * writes either there. --mem-sweep
 * A:B:STEP prints the frontier of best cost and bound against the memory
 * limit instead. A profile with data parallelism (dp >= 2) gets the PP x
 * ZeRO table of compare_dp.c. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cli.h"
#include "commands.h"
#include "compare_dp.h"
#include "report.h"
#include "zbsched/dp.h"
#include "zbsched/generator.h"
#include "zbsched/json.h"
#include "zbsched/units.h"
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

/* One row of the table, or its JSON object (no newline): the measures
 * with the gap against bound, as the table's column has it. */
static void print_row(FILE *f, struct row *row, double bound, bool json)
{
    struct zb_measures *m = &row->s.predicted;
    double b = report_bound_of(m->cost, bound);
    double gap = b > 0 ? m->cost / b - 1 : 0;

    if (!row->ok) {
        if (json)
            report_error_json(f, row->g->name, row->error);
        else
            fprintf(f, "%-15s %s\n", row->g->name, row->error);
        return;
    }
    if (json) {
        m->lower_bound = b;
        report_measures_json(f, &row->s);
        return;
    }
    fprintf(f, "%-15s %8.4f %8.4f %12s %12s %10s %6.2fx ", row->g->name,
           m->bubble_ratio, m->sync_bubble_ratio,
           report_time(&row->s.profile, m->cost).s,
           report_time(&row->s.profile, m->makespan).s,
           report_memory(&row->s.profile, report_max_peak(&row->s)).s,
           report_peak_vs_1f1b(&row->s));
    /* The bound holds within the limit: no gap for a schedule over it. */
    if (m->fits_memory)
        fprintf(f, "%7.2f%%   yes", 100 * gap);
    else
        fprintf(f, "%8s    no", "-");
    if (row->s.solver.present)
        fprintf(f, "  %s", row->s.solver.status);
    fprintf(f, "\n");
}

/* Rows a and b were made in the same placement and vpp: only then is a
 * bound of one a bound of the other (V's half stages can beat a loop's
 * bound). */
static bool same_shape(const struct row *a, const struct row *b)
{
    return a->s.profile.placement == b->s.profile.placement &&
           a->s.profile.vpp == b->s.profile.vpp;
}

/* The best proven bound among the rows in row i's shape: the closed
 * form, or the solver's. */
static double shape_bound(const struct row *rows, int n, int i)
{
    double bound = 0;

    for (int j = 0; j < n; j++) {
        if (!rows[j].ok || !same_shape(&rows[i], &rows[j]))
            continue;
        bound = fmax(bound, rows[j].s.predicted.lower_bound);
        if (rows[j].s.solver.present)
            bound = fmax(bound, rows[j].s.solver.bound);
    }
    return bound;
}

/* The row that fits with the least cost (then the least peak memory, then
 * the earlier), or -1. */
static int fastest(const struct row *rows, int n)
{
    int best = -1;

    for (int i = 0; i < n; i++) {
        const struct zb_measures *m = &rows[i].s.predicted;
        if (!rows[i].ok || !m->fits_memory)
            continue;
        if (best < 0 || m->cost < rows[best].s.predicted.cost * (1 - 1e-9) ||
            (m->cost <= rows[best].s.predicted.cost * (1 + 1e-9) &&
             report_max_peak(&rows[i].s) < report_max_peak(&rows[best].s)))
            best = i;
    }
    return best;
}

static void print_verdict(FILE *f, const struct row *rows, int best,
                          bool json)
{
    const struct zb_schedule *s = best >= 0 ? &rows[best].s : NULL;

    if (json) {
        fputs(", \"fastest_that_fits\": ", f);
        if (!s) {
            fputs("null", f);
            return;
        }
        fputs("{\"schedule\": ", f);
        zb_json_fput_str(f, s->name);
        fprintf(f, ", \"placement\": \"%s\", \"vpp\": %d, \"cost\": ",
                zb_placement_name(s->profile.placement), s->profile.vpp);
        zb_json_fput_num(f, s->predicted.cost);
        fputc('}', f);
    } else if (s) {
        fprintf(f, "fastest that fits: %s (%s, vpp %d), cost %s\n", s->name,
                zb_placement_name(s->profile.placement), s->profile.vpp,
                report_time(&s->profile, s->predicted.cost).s);
    } else {
        fprintf(f, "fastest that fits: none\n");
    }
}

static void print_footer(FILE *f, const struct row *rows, int n,
                         const struct zb_profile *prof, bool mixed)
{
    if (!mixed) {
        for (int i = 0; i < n; i++)
            if (rows[i].ok) {
                double b = shape_bound(rows, n, i);
                /* As the rows print it: never above a cost that fits. */
                for (int k = 0; k < n; k++)
                    if (rows[k].ok && rows[k].s.predicted.fits_memory)
                        b = report_bound_of(rows[k].s.predicted.cost, b);
                fprintf(f, "gap: cost over the best proven lower bound, "
                       "%s\n", report_time(prof, b).s);
                break;
            }
    } else {
        const char *sep = "";
        fprintf(f, "gap: cost over the best proven lower bound of the rows in "
               "the same shape\nshape: per-rank profile, each family in "
               "its own: ");
        for (int i = 0; i < n; i++)
            if (rows[i].ok && (rows[i].s.profile.vpp != prof->vpp ||
                               rows[i].s.profile.placement !=
                                   prof->placement)) {
                fprintf(f, "%s%s %s %d", sep, rows[i].g->name,
                       zb_placement_name(rows[i].s.profile.placement),
                       rows[i].s.profile.vpp);
                sep = ", ";
            }
        fprintf(f, "; the rest %s %d\n", zb_placement_name(prof->placement),
               prof->vpp);
    }
    fprintf(f, "x1f1b: peak memory over 1F1B's activation peak (1p = %s)\n",
           report_memory(prof, zb_profile_1f1b_peak(prof)).s);
}

/* The families the profile's shape leaves out, by name: where times are
 * per chunk, a family in another shape would run another model (twice
 * the work a rank at vpp 2), so it is named, with why, not dropped
 * unsaid. JSON: "not_in_this_shape": [{"schedule", "why"}]. */
static void print_left_out(FILE *f, const struct zb_generator **out,
                           char (*why)[ZB_ERROR_MSG_MAX], int n,
                           const struct zb_profile_draft *d,
                           const struct zb_profile *prof, bool json,
                           bool quiet)
{
    if (json) {
        fputs(", \"not_in_this_shape\": [", f);
        for (int i = 0; i < n; i++) {
            fprintf(f, "%s{\"schedule\": ", i ? ", " : "");
            zb_json_fput_str(f, out[i]->name);
            fputs(", \"why\": ", f);
            zb_json_fput_str(f, why[i]);
            fputc('}', f);
        }
        fputc(']', f);
        return;
    }
    if (n == 0 || quiet)
        return;
    fprintf(stderr, "zbsched: not in this shape (%s, vpp %d):",
            zb_placement_name(prof->placement), prof->vpp);
    for (int i = 0; i < n; i++)
        fprintf(stderr, "%s %s", i ? "," : "", out[i]->name);
    /* A shape given is the user's to change; else --per rank reads the
     * times as a GPU's, the same model in every family's shape. */
    fprintf(stderr, d->placement_set || d->vpp.set
                        ? "; the profile sets the shape\n"
                        : "; --per rank (times per GPU) runs every family in "
                          "its own shape on the same model\n");
}

static int compare(FILE *f, const struct zb_profile_draft *d,
                   const struct zb_profile *prof,
                   const struct zb_options *opt, bool json, bool quiet)
{
    int n = 0, rows_ok = 0, nout = 0;
    struct row *rows = zb_xcalloc(32, sizeof(*rows));
    const struct zb_generator *out[32];
    char (*why)[ZB_ERROR_MSG_MAX] = zb_xcalloc(32, sizeof(*why));
    bool mixed = false;

    for (int i = 0; zb_generators[i] && n < 32; i++) {
        const struct zb_generator *g = zb_generators[i];
        struct zb_profile shaped = { 0 };
        const struct zb_profile *p = prof;

        if (g->solver && opt->time_limit <= 0)
            continue;
        /* cli_own_shapes(): the same model split over g's chunks;
         * otherwise every row shares the profile as given. */
        if (cli_own_shapes(d) && g->shape_vpp) {
            struct zb_error err = { 0 };
            if (zb_generator_profile(g, d, &shaped, &err) < 0) {
                rows[n].g = g;      /* an error row, as a failed family */
                snprintf(rows[n++].error, ZB_ERROR_MSG_MAX, "%s", err.msg);
                continue;
            }
            p = &shaped;
            mixed = true;
        }
        struct zb_error err = { 0 };
        if (zb_generator_accepts(g, p, &err) == 0) {
            make_row(&rows[n], g, p, opt);
            rows_ok += rows[n].ok;
            n++;
        } else if (nout < 32) {
            out[nout] = g;
            snprintf(why[nout++], ZB_ERROR_MSG_MAX, "%s", err.msg);
        }
        zb_profile_release(&shaped);
    }
    if (json)
        fputs("{\"rows\": [", f);
    else
        fprintf(f, "%-15s %8s %8s %12s %12s %10s %7s %8s %5s\n",
                "schedule", "bubble", "sync_bub", "cost", "makespan",
                "peak_mem", "x1f1b", "gap", "fits");
    for (int i = 0; i < n; i++) {
        if (json)
            fputs(i ? ",\n  " : "\n  ", f);
        print_row(f, &rows[i], rows[i].ok ? shape_bound(rows, n, i) : 0,
                  json);
    }
    if (json) {
        fputs("\n]", f);
        print_verdict(f, rows, fastest(rows, n), true);
        print_left_out(f, out, why, nout, d, prof, true, quiet);
        fputs("}\n", f);
    } else {
        print_verdict(f, rows, fastest(rows, n), false);
        print_footer(f, rows, n, prof, mixed);
        print_left_out(f, out, why, nout, d, prof, false, quiet);
    }
    /* On stderr: the table on stdout stays one row per family. */
    if (!zb_profile_has_limit(prof) && !quiet)
        report_no_limit(stderr, "zb", prof);
    for (int i = 0; i < n; i++)
        if (rows[i].ok)
            zb_schedule_release(&rows[i].s);
    free(rows);
    free(why);
    if (!rows_ok) {
        cli_error("compare: no family serves this profile");
        return CLI_FAIL;
    }
    return CLI_OK;
}

/* Each point of a sweep runs zb (and the solver): more than this is a
 * typo (1e17:2e17:1 would never end). */
#define MAX_SWEEP_POINTS 1000

/* "1p:2p:0.25p": from, to, step; a trailing p means times 1F1B's
 * activation peak, as in --mem-limit; with sizes ("60GiB:80GiB:10GiB",
 * GiB for a profile in sizes) each limit is, as a sized --mem-limit
 * is, the GPU's whole memory where the stages hold model state (*total;
 * profile.h, mem_total). Sets *points, the count of limits from FROM to
 * TO. */
static int parse_sweep(const char *spec, const struct zb_profile *p,
                       double v[3], int *points, bool *total)
{
    char *copy = zb_xstrdup(spec), *tok, *save = NULL;
    int n = 0, sized = 0;
    double state = 0;

    for (int r = 0; r < p->pp; r++)
        state = fmax(state, zb_profile_model_state(p, r));
    for (tok = strtok_r(copy, ":", &save); tok && n < 3;
         tok = strtok_r(NULL, ":", &save)) {
        size_t len = strlen(tok);
        double scale = 1;
        if (len > 1 && tok[len - 1] == 'p') {
            tok[len - 1] = '\0';
            scale = zb_profile_1f1b_peak(p);
        }
        if (zb_units_parse_number(tok, &v[n]) < 0) {
            /* A size: in GiB, the unit of a profile in sizes. */
            if (scale != 1 || !p->mem_gib ||
                zb_units_parse_size("--mem-sweep", tok, &v[n], NULL) < 0)
                break;
            scale = 1.0 / 1073741824.0;
            sized++;
        }
        v[n++] *= scale;
    }
    free(copy);
    *total = sized > 0 && state > 0;
    if (sized % 3) {
        cli_error("compare: --mem-sweep '%s': give all three as sizes or "
                  "none", spec);
        return CLI_USAGE;
    }
    if (n != 3 || tok || !(v[0] > 0) || !(v[2] > 0) || v[1] < v[0] ||
        !isfinite(v[1])) {
        cli_error("compare: --mem-sweep wants FROM:TO:STEP with FROM <= TO "
                  "and STEP > 0 (e.g. 1p:2p:0.25p), got '%s'", spec);
        return CLI_USAGE;
    }
    double count = floor((v[1] - v[0]) / v[2] + 1e-9) + 1;
    if (count > MAX_SWEEP_POINTS) {
        cli_error("compare: --mem-sweep '%s' has %.0f points (at most %d)",
                  spec, count, MAX_SWEEP_POINTS);
        return CLI_USAGE;
    }
    *points = (int)count;
    return CLI_OK;
}

/* One point of the sweep: a row of the table, or a JSON object (zb, ilp
 * and bound NAN where there is none: null). */
static void sweep_point(FILE *f, bool json, bool first, double lim,
                        double zb, double ilp, double bound,
                        const char *status)
{
    double best = fmin(zb, isnan(ilp) ? zb : ilp);
    double gap = isnan(zb) ? NAN : 100 * (best / bound - 1);
    const double v[4] = { zb, ilp, bound, gap };
    static const char *const keys[4] = { "zb", "ilp", "bound", "gap" };

    if (json) {
        fprintf(f, "%s{\"limit\": ", first ? "\n  " : ",\n  ");
        zb_json_fput_num(f, lim);
        for (int k = 0; k < 4; k++) {
            fprintf(f, ", \"%s\": ", keys[k]);
            if (isnan(v[k]))
                fputs("null", f);
            else
                zb_json_fput_num(f, k == 3 ? v[k] / 100 : v[k]);
        }
        fputs(", \"status\": ", f);
        zb_json_fput_str(f, status);
        fputc('}', f);
        return;
    }
    fprintf(f, "%10.6g", lim);
    for (int k = 0; k < 3; k++)
        if (isnan(v[k]))
            fprintf(f, " %12s", "-");
        else
            fprintf(f, " %12.6g", v[k]);
    if (isnan(gap))
        fprintf(f, " %8s  %s\n", "-", status);
    else
        fprintf(f, " %7.2f%%  %s\n", gap, status);
}

/* Best cost and proven bound for each limit of the sweep: zb, and the
 * solver when its time limit is above 0. */
static int mem_sweep(FILE *f, struct zb_profile *prof, const char *spec,
                     const struct zb_options *opt, bool json)
{
    double v[3];
    int rc, points;
    bool total;

    if ((rc = parse_sweep(spec, prof, v, &points, &total)) != CLI_OK)
        return rc;
    /* Each limit counts as generate counts --mem-limit: a total bounds
     * model state plus activations (zb_profile_count_state()). */
    if (total && !prof->mem_total)
        prof->mem_total = zb_xcalloc((size_t)prof->pp, sizeof(double));
    if (!total) {
        free(prof->mem_total);
        prof->mem_total = NULL;
    }
    if (json)
        fputs("{\"points\": [", f);
    else
        fprintf(f, "%10s %12s %12s %12s %8s  %s\n", "limit", "zb", "ilp",
                "bound", "gap", "status");
    for (int k = 0; k < points; k++) {
        struct zb_schedule zb, ilp;
        struct zb_error err = { 0 };
        double bound, lim = v[0] + k * v[2];

        for (int r = 0; r < prof->pp; r++)
            prof->mem_limit[r] = total ? (prof->mem_total[r] = lim) : lim;
        if (zb_profile_count_state(prof, &err) < 0 ||
            (!total && lim < prof->vpp * prof->m_b) ||
            zb_generator_run(zb_generator_find("zb"), prof, opt, &zb,
                             &err) < 0) {
            sweep_point(f, json, k == 0, lim, NAN, NAN, NAN,
                        err.msg[0] ? err.msg : "below one microbatch");
            continue;
        }
        bound = zb.predicted.lower_bound;
        if (opt->time_limit > 0 &&
            zb_generator_run(zb_generator_find("ilp"), prof, opt, &ilp,
                             &err) == 0) {
            /* With data parallelism ilp bounds the step, not the cost. */
            if (!zb_dp_active(prof))
                bound = fmax(bound, ilp.solver.bound);
            sweep_point(f, json, k == 0, lim, zb.predicted.cost,
                        ilp.predicted.cost, bound, ilp.solver.status);
            zb_schedule_release(&ilp);
        } else {
            sweep_point(f, json, k == 0, lim, zb.predicted.cost, NAN, bound,
                        zb.predicted.cost <= bound * (1 + 1e-9)
                            ? "optimal" : "heuristic");
        }
        zb_schedule_release(&zb);
    }
    if (json)
        fputs("\n]}\n", f);
    return CLI_OK;
}

/* The table the options ask for: a memory sweep, PP x ZeRO rows with
 * data parallelism, else every family side by side. A sweep sets prof's
 * limits. */
static int dispatch(const struct cli_args *a, FILE *f,
                    const struct zb_profile_draft *d,
                    struct zb_profile *prof, const struct zb_options *opt)
{
    bool dp = zb_dp_active(prof), json = cli_has(a, "json");
    int rc;

    if (!dp && (rc = cli_not_here(a, "zero-all", "without data "
                                  "parallelism (--dp >= 2)")) != CLI_OK)
        return rc;
    if (cli_has(a, "mem-sweep")) {
        if ((rc = cli_not_here(a, "zero-all", "to --mem-sweep (it sweeps "
                               "the profile's own ZeRO stage)")) != CLI_OK)
            return rc;
        return mem_sweep(f, prof, cli_get(a, "mem-sweep"), opt, json);
    }
    if (dp)
        return compare_dp(f, prof, opt, cli_has(a, "zero-all"), json);
    return compare(f, d, prof, opt, json, cli_has(a, "quiet"));
}

static int run(const struct cli_args *a)
{
    struct zb_profile_draft d;
    struct zb_profile prof = { 0 };
    struct zb_options opt;
    struct cli_out out;
    int rc;

    /* The table's progress lines would interleave with it: quiet. */
    if ((rc = cli_generator_options(a, 10, true, &opt)) != CLI_OK ||
        (rc = cli_load_draft(a, NULL, &d)) != CLI_OK)
        return rc;
    opt.progress = NULL;
    if ((rc = cli_build_profile(&d, NULL, &prof)) == CLI_OK) {
        cli_out_open(a, &out);
        rc = cli_out_close(&out, dispatch(a, out.f, &d, &prof, &opt));
    }
    zb_profile_release(&prof);
    zb_profile_draft_release(&d);
    return rc;
}

static const struct cli_opt opts[] = {
    CLI_OPT_OUTPUT("the table"),
    CLI_OPT_JSON("the table"),
    { "mem-sweep", 0, "FROM:TO:STEP", "best cost and bound against the "
      "memory limit\ninstead (e.g. 1p:2p:0.25p; at most 1000 points); "
      "in\nsizes (60GiB:80GiB:5GiB) with --params, the GPU's\nmemory, "
      "model state counted as --mem-limit counts it" },
    CLI_OPT_QUIET,
    { "zero-all", 0, NULL, "with --dp >= 2: rows for ZeRO 0, 1, 2, 2mb "
                          "(ZeRO-2\nreducing per microbatch), 3 and 3u2, 3u4, "
                          "3mbu2,\n3mbu4 (FSDP units)" },
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
             "rows in the same shape.\nWith --per rank (or \"per\": "
             "\"rank\") and no --placement or --vpp, zb-v,\ninterleaved "
             "and interleaved-zb run in their own shape on the same "
             "model.\nx1f1b: peak memory over 1F1B's activation peak "
             "(1p).\n"
             "With --dp >= 2: one row per family and ZeRO stage "
             "(step time,\nthe same after grouping each rank's "
             "trailing W by stage, memory\nwith model state; no ilp "
             "row; docs/zero.md).\n",
};
