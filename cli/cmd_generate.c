/* cmd_generate.c - `zbsched generate`: profile in, validated schedule JSON
 * out (stdout or -o FILE, written atomically), a short comparison with
 * 1F1B on stderr. A family runs in its own shape (zb-v: placement v, vpp
 * 2) unless the user gives one. With a memory limit and no --schedule,
 * the schedule is the best of the frontier's candidates at that limit
 * (zb_frontier_pick()), in every shape when the profile is per rank and
 * names none. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cli.h"
#include "commands.h"
#include "report.h"
#include "zbsched/dp.h"
#include "zbsched/frontier.h"
#include "zbsched/generator.h"
#include "zbsched/json.h"
#include "zbsched/validate.h"

/* The whole validator before anything is written (docs/design.md): a
 * fixed family that does not fit the limit is refused, naming what it
 * would need; the limit decides the choice only for `zb`. */
static int refuse_illegal(const struct zb_schedule *s)
{
    struct zb_error err = { 0 };
    int rc = zb_validate_schedule(s, &err);

    if (rc == ZB_ENOMEM_LIMIT)
        for (int r = 0; r < s->profile.pp; r++)
            if (!zb_validate_within_limit(&s->profile, r,
                                          s->predicted.ranks[r].peak_memory)) {
                cli_error("generate: %s needs %s memory on rank %d "
                          "(%.2fx 1F1B), above its limit %s (try "
                          "--schedule zb)", s->name,
                          report_memory(&s->profile,
                              s->predicted.ranks[r].peak_memory).s, r,
                          s->predicted.ranks[r].peak_memory /
                              zb_profile_1f1b_peak(&s->profile),
                          report_memory(&s->profile,
                                        s->profile.mem_limit[r]).s);
                return CLI_FAIL;
            }
    return rc < 0 ? cli_fail(&err) : CLI_OK;
}

static void print_comparison(const struct zb_generator *g,
                             const struct zb_schedule *s)
{
    struct zb_schedule base;

    fputs("zbsched: ", stderr);
    report_summary(stderr, s);
    fputc('\n', stderr);
    /* A fixed family's memory is its shape's; a search takes what helps. */
    if (g->memory_aware && !zb_profile_has_limit(&s->profile))
        report_no_limit(stderr, s->name, &s->profile);
    /* Its cost and bubble are the timed order's: no need to lower,
     * validate or bound it. */
    if (!strcmp(s->name, "1f1b") ||
        zb_generator_time(zb_generator_find("1f1b"), &s->profile, NULL,
                          &base, NULL) < 0)
        return;
    fprintf(stderr, "zbsched: vs 1f1b: cost %s, bubble_ratio %.4f "
            "(%+.1f%% cost)\n", report_time(&s->profile,
                                            base.predicted.cost).s,
            base.predicted.bubble_ratio,
            100 * (s->predicted.cost / base.predicted.cost - 1));
    zb_schedule_release(&base);
}

/* --robust's noise: --jitter CV (0.1), --samples N (1000), --seed S (1),
 * read as eval reads them. */
static int robust_options(const struct cli_args *a,
                          struct zb_frontier_robust *r)
{
    double n, seed;
    int rc;

    if ((rc = cli_number(a, "jitter", 0.1, &r->cv)) != CLI_OK ||
        (rc = cli_number(a, "samples", 1000, &n)) != CLI_OK ||
        (rc = cli_number(a, "seed", 1, &seed)) != CLI_OK)
        return rc;
    if (n != (int)n || seed < 0 || seed != (double)(unsigned long long)seed) {
        cli_error("generate: --samples and --seed must be whole numbers "
                  ">= 0");
        return CLI_USAGE;
    }
    r->samples = (int)n;
    r->seed = (uint64_t)seed;
    return CLI_OK;
}

/* --robust's line: what was picked and the runner-up, each by its p95
 * makespan under the noise and its cost without. */
static void robust_summary(const struct zb_profile *prof,
                           const struct zb_frontier_robust *r,
                           const struct zb_frontier_pick *pk)
{
    fprintf(stderr, "zbsched: robust (CV %g, %d samples, seed %llu): picked "
            "%s (%s, vpp %d): p95 makespan %s, cost %s", r->cv, r->samples,
            (unsigned long long)r->seed, pk->sched.name,
            zb_placement_name(pk->sched.profile.placement),
            pk->sched.profile.vpp, report_time(prof, pk->p95).s,
            report_time(prof, pk->sched.predicted.cost).s);
    if (pk->has_runner_up)
        fprintf(stderr, "; runner-up %s (%s, vpp %d): p95 makespan %s, "
                "cost %s\n", pk->runner_up,
                zb_placement_name(pk->runner_shape.placement),
                pk->runner_shape.vpp, report_time(prof, pk->runner_p95).s,
                report_time(prof, pk->runner_cost).s);
    else
        fprintf(stderr, "; nothing else fits\n");
}

/* The pick among the frontier's candidates (by p95 with --robust); what
 * it picked and what the runner-up would cost on stderr (unless -q). */
static int pick(const struct cli_args *a, const struct zb_profile *prof,
                bool every_shape, const struct zb_options *opt,
                struct zb_schedule *out)
{
    struct zb_frontier_pick pk;
    struct zb_frontier_robust r;
    struct zb_error err = { 0 };
    bool robust = cli_has(a, "robust");
    int rc;

    if (robust && (rc = robust_options(a, &r)) != CLI_OK)
        return rc;
    if ((robust ? zb_frontier_pick_robust(prof, every_shape, opt, &r, &pk,
                                          &err)
                : zb_frontier_pick(prof, every_shape, opt, &pk, &err)) < 0)
        return cli_fail(&err);
    if (robust && !cli_has(a, "quiet")) {
        robust_summary(prof, &r, &pk);
    } else if (!cli_has(a, "quiet")) {
        fprintf(stderr, "zbsched: picked %s (%s, vpp %d): cost %s",
                pk.sched.name, zb_placement_name(pk.sched.profile.placement),
                pk.sched.profile.vpp,
                report_time(prof, pk.sched.predicted.cost).s);
        if (pk.has_runner_up)
            fprintf(stderr, "; runner-up %s (%s, vpp %d): cost %s\n",
                    pk.runner_up,
                    zb_placement_name(pk.runner_shape.placement),
                    pk.runner_shape.vpp, report_time(prof, pk.runner_cost).s);
        else if (report_gap(&pk.sched.predicted) < 1e-9)
            fprintf(stderr, "; optimal (meets the lower bound)\n");
        else
            fprintf(stderr, "; nothing else fits\n");
    }
    *out = pk.sched;
    return CLI_OK;
}

/* The options that family g does not read (cli_not_here()): the ilp
 * options but for ilp, --effort for a fixed order (nothing searched),
 * --robust for any one family (it chooses among them). */
static int inapplicable(const struct cli_args *a,
                        const struct zb_generator *g)
{
    static const char *const ilp_only[] = { "time-limit", "gap",
                                            "objective", "export-lp" };
    int rc = CLI_OK;

    for (size_t i = 0; i < 4 && rc == CLI_OK && !g->solver; i++)
        rc = cli_not_here(a, ilp_only[i], "to --schedule %s (only to ilp)",
                          g->name);
    if (rc == CLI_OK && cli_has(a, "schedule"))
        rc = cli_not_here(a, "robust", "to --schedule %s (it chooses "
                          "among zb and the families)", g->name);
    if (rc == CLI_OK && !g->memory_aware)
        rc = cli_not_here(a, "effort", "to --schedule %s (a fixed order: "
                          "nothing is searched)", g->name);
    return rc;
}

static int run(const struct cli_args *a)
{
    const struct zb_generator *g;
    struct zb_profile_draft d;
    struct zb_profile prof = { 0 };
    struct zb_schedule s;
    struct zb_options opt;
    struct zb_error err = { 0 };
    const char *name;
    bool every_shape;
    char *text;
    int rc;

    name = cli_get(a, "schedule") ? cli_get(a, "schedule") : "zb";
    if (!(g = zb_generator_lookup(name, &err))) {
        cli_error("generate: %s", err.msg);
        return CLI_USAGE;
    }
    if ((rc = inapplicable(a, g)) != CLI_OK)
        return rc;
    /* A search reads Ctrl-C and reports progress; every row reads the
     * options it understands (--effort: zb). */
    if ((rc = cli_generator_options(a, 60, g->solver, &opt)) != CLI_OK ||
        (rc = cli_load_draft(a, NULL, &d)) != CLI_OK)
        return rc;
    every_shape = cli_own_shapes(&d);
    rc = cli_build_profile(&d, g, &prof);
    /* A family in its own shape on per-chunk times runs more chunks than
     * the times were given for: say so, where it could surprise. */
    if (rc == CLI_OK && cli_has(a, "schedule") && g->shape_vpp > 1 &&
        !d.per_rank && !d.vpp.set && !d.placement_set &&
        !cli_has(a, "quiet"))
        fprintf(stderr, "zbsched: %s runs in its own shape (%s, vpp %d): "
                "the times are per chunk, so each rank runs %d chunks of "
                "them; --per rank reads them as one GPU's, split over its "
                "chunks\n", g->name, zb_placement_name(prof.placement),
                prof.vpp, prof.vpp);
    zb_profile_draft_release(&d);
    if (rc != CLI_OK)
        return rc;
    if (zb_dp_active(&prof))
        rc = cli_not_here(a, "robust", "with data parallelism (its "
                          "collectives are not replayed)");
    if (rc == CLI_OK) {
        if (!cli_has(a, "schedule") &&
            (zb_profile_has_limit(&prof) || cli_has(a, "robust")))
            rc = pick(a, &prof, every_shape, &opt, &s);
        else if (zb_generator_run(g, &prof, &opt, &s, &err) < 0)
            rc = cli_fail(&err);
        else
            cli_search_summary(&opt, &s);
    }
    zb_profile_release(&prof);
    if (rc != CLI_OK)
        return rc;
    if ((rc = refuse_illegal(&s)) == CLI_OK) {
        text = zb_json_format_schedule(&s);
        rc = cli_write_result(a, "schedule JSON", text, strlen(text));
        free(text);
        if (rc == CLI_OK && !cli_has(a, "quiet"))
            print_comparison(g, &s);
    }
    zb_schedule_release(&s);
    return rc;
}

static const struct cli_opt opts[] = {
    { "schedule", 0, "NAME", "the family (zbsched list); default zb, or "
                             "with a\nmemory limit the best schedule that "
                             "fits it (below)" },
    CLI_OPT_OUTPUT("the schedule"),
    CLI_OPT_QUIET,
    { "robust", 0, NULL, "pick by the p95 makespan under timing noise,\n"
      "not the cost without (no --schedule; below)" },
    { "jitter", 0, "CV", "--robust: each pass's coefficient of variation\n"
      "(0.1), log-normal as in eval --jitter" },
    { "samples", 0, "N", "--robust: replays of each candidate (1000)" },
    { "seed", 0, "S", "--robust: the noise's seed (1)" },
    { "export-lp", 0, "FILE", "ilp: also write the model (CPLEX LP "
                              "format)" },
    { NULL, 0, NULL, NULL },
};

const struct cli_command cmd_generate = {
    .name = "generate", .run = run,
    .summary = "build a schedule for a profile (JSON on stdout or -o FILE)",
    .groups = { { "options", opts },
                { "search options", cli_search_opts },
                { "profile options", cli_profile_opts } },
    .deps = (const struct cli_dep[]){ { "jitter", "robust" },
                                      { "samples", "robust" },
                                      { "seed", "robust" }, { NULL, NULL } },
    .notes = "The schedule is validated in full before it is written; a "
             "family over the\nmemory limit is refused. The ilp options "
             "are for --schedule ilp; Ctrl-C\nstops its search and keeps "
             "the best schedule found. Its search prints a\nline a "
             "second on stderr (the search's time and the whole run's), "
             "and on a\nterminal also the time of its warm start.\n\n"
             "With a memory limit (--mem-limit or the profile's) and no "
             "--schedule, the\nschedule is the "
             "best that fits among zb and every family (as `frontier`\n"
             "lists them): in the profile's shape, or, for a per-rank "
             "profile (--per rank)\nthat names no placement or vpp, in "
             "loop placement with vpp 1 to 4 and in v\nwith vpp 2, the "
             "same model split over the chunks. stderr says what was\n"
             "picked and what the runner-up (the best of the other shapes, "
             "else of the other\nfamilies built: not the V families held to "
             "1F1B's memory where that\nbounds them above zb) would cost. "
             "Among several shapes they are compared at\nthe frontier's "
             "effort (0.02 s per zb) unless --effort is given, and a zb\n"
             "winner then gets zb's default search. Without a limit, zb in "
             "the profile's\nshape.\n\n"
             "--robust picks among the same candidates (with or without a "
             "limit) the one\nwhose replays under noise (eval --jitter's "
             "model, the same seed for each)\nhave the lowest p95 "
             "makespan; stderr gives the p95 and the cost of the pick\n"
             "and the runner-up.\n",
};
