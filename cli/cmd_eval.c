/* cmd_eval.c - `zbsched eval FILE`: re-simulate any schedule (also one a
 * user wrote or imported) and print the measures, or with --jitter their
 * distribution under timing noise. The file must be legal apart from
 * memory; a schedule over its limit is reported, exit 1. */
#include <stdio.h>
#include <stdlib.h>
#include "cli.h"
#include "commands.h"
#include "report.h"
#include "zbsched/io.h"
#include "zbsched/json.h"
#include "zbsched/profile_import.h"
#include "zbsched/schedule.h"
#include "zbsched/units.h"

static void jitter_table(FILE *f, const struct zb_jitter_result *j)
{
    const struct zb_jitter_stat *st[3] = { &j->cost, &j->makespan,
                                           &j->bubble_ratio };
    const double exact[3] = { j->exact.cost, j->exact.makespan,
                              j->exact.bubble_ratio };
    static const char *const names[3] = { "cost", "makespan",
                                          "bubble_ratio" };

    if (j->cv < 0)
        fprintf(f, "jitter: CV per stage from the measured spread, ");
    else
        fprintf(f, "jitter: CV %g, ", j->cv);
    fprintf(f, "%d samples, seed %llu (each pass log-normal around its "
            "profile time, re-timed in the schedule's order)\n", j->samples,
            (unsigned long long)j->seed);
    fprintf(f, "%-14s %12s %12s %12s %12s\n", "measure", "no noise", "mean",
            "p50", "p95");
    for (int k = 0; k < 3; k++)
        fprintf(f, "%-14s %12.6g %12.6g %12.6g %12.6g\n", names[k], exact[k],
                st[k]->mean, st[k]->p50, st[k]->p95);
}

static void jitter_json(FILE *f, const struct zb_jitter_result *j)
{
    const struct zb_jitter_stat *st[3] = { &j->cost, &j->makespan,
                                           &j->bubble_ratio };
    const double exact[3] = { j->exact.cost, j->exact.makespan,
                              j->exact.bubble_ratio };
    static const char *const names[3] = { "cost", "makespan",
                                          "bubble_ratio" };

    fprintf(f, "{\"jitter\": {\"cv\": ");
    if (j->cv < 0)
        fprintf(f, "\"measured\"");
    else
        zb_json_fput_num(f, j->cv);
    fprintf(f, ", \"samples\": %d, \"seed\": %llu}", j->samples,
            (unsigned long long)j->seed);
    for (int k = 0; k < 3; k++) {
        fprintf(f, ",\n \"%s\": {\"no_noise\": ", names[k]);
        zb_json_fput_num(f, exact[k]);
        fprintf(f, ", \"mean\": ");
        zb_json_fput_num(f, st[k]->mean);
        fprintf(f, ", \"p50\": ");
        zb_json_fput_num(f, st[k]->p50);
        fprintf(f, ", \"p95\": ");
        zb_json_fput_num(f, st[k]->p95);
        fprintf(f, "}");
    }
    fprintf(f, "}\n");
}

/* The coefficients of variation of a measured profile's spread. */
static int spread_cvs(const char *path, const struct zb_schedule *s,
                      double **cvs)
{
    struct zb_measured m;
    struct zb_error err = { 0 };
    char *text = NULL;
    int rc = CLI_OK;

    zb_measured_init(&m);
    *cvs = calloc((size_t)3 * zb_profile_stages(&s->profile), sizeof(double));
    if (!*cvs) {
        cli_error("out of memory");
        return CLI_FAIL;
    }
    if (zb_io_slurp(path, &text, &err) < 0 ||
        zb_json_parse_measured(text, &m, &err) < 0 ||
        zb_jitter_cvs(&m, &s->profile, *cvs, &err) < 0)
        rc = cli_fail_file(path, &err);
    free(text);
    zb_measured_release(&m);
    return rc;
}

/* --jitter CV|FILE [--samples N] [--seed S]. */
static int jitter(const struct cli_args *a, const struct zb_schedule *s,
                  FILE *out)
{
    struct zb_jitter_result j;
    struct zb_error err = { 0 };
    const char *v = cli_get(a, "jitter");
    double cv = 0, n, seed, *cvs = NULL;
    int rc;

    if ((rc = cli_number(a, "samples", 1000, &n)) != CLI_OK ||
        (rc = cli_number(a, "seed", 1, &seed)) != CLI_OK)
        return rc;
    if (n != (int)n || seed < 0 || seed != (double)(unsigned long long)seed) {
        cli_error("eval: --samples and --seed must be whole numbers >= 0");
        return CLI_USAGE;
    }
    if (zb_units_parse_number(v, &cv) < 0 &&
        (rc = spread_cvs(v, s, &cvs)) != CLI_OK) {
        free(cvs);
        return rc;
    }
    rc = zb_jitter_run(s, cv, cvs, (int)n, (uint64_t)seed, &j, &err);
    free(cvs);
    if (rc < 0)
        return cli_fail(&err);
    if (cli_has(a, "json"))
        jitter_json(out, &j);
    else
        jitter_table(out, &j);
    return CLI_OK;
}

static int run(const struct cli_args *a)
{
    struct zb_schedule s;
    struct cli_out out;
    int rc;

    if ((rc = cli_load_schedule(a->pos[0], &s)) != CLI_OK)
        return rc;
    cli_out_open(a, &out);
    if (cli_has(a, "jitter"))
        rc = jitter(a, &s, out.f);
    else if (cli_has(a, "json")) {
        report_measures_json(out.f, &s);
        fputc('\n', out.f);
    } else
        report_measures(out.f, &s);
    /* The measures are written either way: they say by how much. */
    rc = cli_out_close(&out, rc);
    if (rc == CLI_OK && !s.predicted.fits_memory) {
        cli_error("'%s': peak memory exceeds the limit", a->pos[0]);
        rc = CLI_FAIL;
    }
    zb_schedule_release(&s);
    return rc;
}

static const struct cli_opt opts[] = {
    CLI_OPT_OUTPUT("the measures"),
    CLI_OPT_JSON("the measures"),
    { "jitter", 0, "CV|FILE", "replay under noise: this CV, or FILE's "
      "measured spread" },
    { "samples", 0, "N", "--jitter: replays (default 1000)" },
    { "seed", 0, "S", "--jitter: the noise's seed (default 1)" },
    { NULL, 0, NULL, NULL },
};

const struct cli_command cmd_eval = {
    .name = "eval", .run = run,
    .summary = "simulate a schedule file and print its measures",
    .args = "FILE", .min_args = 1, .max_args = 1,
    .groups = { { "options", opts } },
    .deps = (const struct cli_dep[]){ { "samples", "jitter" },
                                      { "seed", "jitter" }, { NULL, NULL } },
    .notes = "FILE must be legal apart from memory; a schedule over its "
             "limit is reported\nand the exit status is 1. --jitter reports "
             "the cost's, makespan's and bubble\nratio's mean, p50 and p95 "
             "over the replays (docs/profiles.md).\n",
};
