/* cmd_frontier.c - `zbsched frontier`: cost against peak activation
 * memory for one model: every family, placement and vpp (1 to 4) that
 * serves it and `zb` at a sweep of limits, the Pareto front marked and the
 * lower bound at each limit (schedules/plan/frontier.c). A table, --json, and
 * --svg or --png for the plot. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "cli.h"
#include "commands.h"
#include "png.h"
#include "zbsched/frontier.h"
#include "zbsched/io.h"

static void print_table(FILE *f, const struct zb_frontier *fr)
{
    fprintf(f, "%-15s %-9s %3s %10s %10s %12s %8s %5s\n", "schedule",
           "placement", "vpp", "limit", "peak", "cost", "bubble", "front");
    for (int i = 0; i < fr->n; i++) {
        const struct zb_frontier_point *pt = &fr->pts[i];
        char lim[32] = "-";
        if (isfinite(pt->limit))
            snprintf(lim, sizeof(lim), "%.6g", pt->limit);
        fprintf(f, "%-15s %-9s %3d %10s %10.6g %12.6g %8.4f %5s\n",
                pt->name, zb_placement_name(pt->placement), pt->vpp, lim,
                pt->peak, pt->cost, pt->bubble, pt->front ? "*" : "");
    }
    fprintf(f, "lower bound by limit (1F1B's peak %.6g):", fr->unit);
    for (int k = 0; k < fr->nb; k++) {
        if (isfinite(fr->bounds[k].bound))
            fprintf(f, " %.6g: %.6g", fr->bounds[k].limit,
                    fr->bounds[k].bound);
        else
            fprintf(f, " %.6g: -", fr->bounds[k].limit);
        fputs(k + 1 < fr->nb ? ";" : "\n", f);
    }
}

static void print_json(FILE *f, const struct zb_frontier *fr)
{
    fprintf(f, "{\"unit\": %.17g, \"points\": [", fr->unit);
    for (int i = 0; i < fr->n; i++) {
        const struct zb_frontier_point *pt = &fr->pts[i];
        fprintf(f, "%s\n  {\"schedule\": \"%s\", \"placement\": \"%s\", "
               "\"vpp\": %d, ", i ? "," : "", pt->name,
               zb_placement_name(pt->placement), pt->vpp);
        if (isfinite(pt->limit))
            fprintf(f, "\"limit\": %.17g, ", pt->limit);
        else
            fprintf(f, "\"limit\": null, ");
        fprintf(f, "\"peak\": %.17g, \"cost\": %.17g, \"bubble_ratio\": "
                "%.17g, \"front\": %s}", pt->peak, pt->cost, pt->bubble,
                pt->front ? "true" : "false");
    }
    fprintf(f, "\n], \"bounds\": [");
    for (int k = 0; k < fr->nb; k++) {
        fprintf(f, "%s\n  {\"limit\": %.17g, \"bound\": ", k ? "," : "",
               fr->bounds[k].limit);
        if (isfinite(fr->bounds[k].bound))
            fprintf(f, "%.17g}", fr->bounds[k].bound);
        else
            fprintf(f, "null}");
    }
    fprintf(f, "\n]}\n");
}

/* On a terminal only (pipes and tests see nothing): one line, redrawn,
 * ended before the table. */
static void print_progress(const struct zb_progress *pr, void *ctx)
{
    bool *shown = ctx;

    fprintf(stderr, "\rzbsched: frontier: %d of %d points, %.0f s",
            pr->done, pr->total, pr->wall);
    *shown = true;
}

static int run(const struct cli_args *a)
{
    struct zb_profile prof = { 0 };
    struct zb_options opt;
    struct zb_frontier f;
    struct zb_error err = { 0 };
    const char *svg = cli_get(a, "svg"), *png = cli_get(a, "png");
    struct cli_out out;
    bool shown = false;
    int rc;

    zb_options_init(&opt);
    if ((rc = cli_number(a, "effort", 0, &opt.effort)) != CLI_OK ||
        (rc = cli_load_profile(a, NULL, NULL, &prof)) != CLI_OK)
        return rc;
    if (isatty(STDERR_FILENO) && !cli_has(a, "quiet")) {
        opt.progress = print_progress;
        opt.progress_ctx = &shown;
    }
    rc = zb_frontier_build(&prof, &opt, &f, &err);
    if (shown)
        fputc('\n', stderr);
    if (rc < 0) {
        zb_profile_release(&prof);
        return cli_fail(&err);
    }
    if (svg || png) {
        char *text = zb_frontier_svg(&f, &prof, 900);
        rc = CLI_OK;
        if (png)
            rc = cli_png_write("frontier", png, text);
        if (rc == CLI_OK && svg &&
            zb_io_write_file(svg, text, strlen(text), &err) < 0)
            rc = cli_fail_file(svg, &err);
        free(text);
        if (rc != CLI_OK) {
            zb_frontier_release(&f);
            zb_profile_release(&prof);
            return rc;
        }
    }
    zb_profile_release(&prof);
    cli_out_open(a, &out);
    if (cli_has(a, "json"))
        print_json(out.f, &f);
    else
        print_table(out.f, &f);
    zb_frontier_release(&f);
    return cli_out_close(&out, CLI_OK);
}

static const struct cli_opt opts[] = {
    CLI_OPT_OUTPUT("the table"),
    CLI_OPT_JSON("the table"),
    CLI_OPT_QUIET,
    { "svg", 0, "FILE", "also draw cost against peak memory here" },
    CLI_OPT_PNG,
    { "effort", 0, "SECONDS", "zb's local search per point (0: 0.02; "
      "-1: none)" },
    { NULL, 0, NULL, NULL },
};

const struct cli_command cmd_frontier = {
    .name = "frontier", .run = run,
    .summary = "cost against peak memory: every family, placement and vpp",
    .groups = { { "options", opts },
                { "profile options", cli_profile_opts } },
    .notes = "The profile is one model, built in each shape the way a "
             "per-rank profile is:\neach rank's F, B, W and activations "
             "split evenly over its chunks, for loop\nplacement with vpp "
             "1 to 4 and v placement with vpp 2 (the profile's own shape\n"
             "keeps its per-stage times). zb runs at 1/3, 1/2, 2/3, 1, 1.5 "
             "and 2 times\n1F1B's peak, with a short search per point "
             "(--effort, default 0.02 s; a\nlarger effort finds cheaper "
             "points, slower); the profile's own limit is not\nused. "
             "front: no point has less memory and less cost.\nOn a "
             "terminal, a progress line on stderr once a second.\n",
};
