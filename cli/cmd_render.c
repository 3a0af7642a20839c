/* cmd_render.c - `zbsched render`: SVG (default; PNG with --png), terminal
 * (--ascii) and predicted Chrome trace (--trace) of schedule files;
 * --compare stacks several, --realized draws a zbexec run above the
 * prediction; a plan file (zbsched plan -o) is drawn as the plan's
 * picture (split.h). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>
#include "cli.h"
#include "zbsched/units.h"
#include "commands.h"
#include "png.h"
#include "zbsched/io.h"
#include "zbsched/render.h"
#include "zbsched/split.h"
#include "zbsched/timeline.h"
#include "zbsched/trace.h"
#include "zbsched/xalloc.h"

struct render {
    struct zb_schedule sched[CLI_MAX_ARGS];
    int n;                          /* schedules read */
    struct zb_timeline real;        /* --realized, if given */
    struct zb_measures real_m;
    struct zb_panel panels[CLI_MAX_ARGS + 1];
    int npanels;
};

static int load_realized(const char *path, const struct zb_schedule *s,
                         double us_per_unit, int iter, struct render *v)
{
    struct zb_error err = { 0 };
    char *text;
    int rc;

    v->real_m.ranks = zb_xcalloc((size_t)s->profile.pp,
                              sizeof(*v->real_m.ranks));
    if ((rc = zb_io_slurp_limit(path, ZB_IO_MAX_TRACE, &text, &err)) == 0) {
        rc = zb_timeline_parse(text, &s->profile, us_per_unit, iter,
                               &v->real, &err);
        free(text);
    }
    if (rc < 0)
        return cli_fail_file(path, &err);
    zb_measures_from_times(&s->profile, v->real.ranks, &v->real_m);
    return CLI_OK;
}

/* The profile's time unit in microseconds (trace timestamps are us):
 * its own time_unit, else --time-unit, else ms. */
static int unit_scale(const struct cli_args *a, const struct zb_profile *p,
                      double *out)
{
    const char *u = cli_get(a, "time-unit");
    enum zb_time_unit unit = ZB_TIME_MS;
    struct zb_error err = { 0 };

    if (u && zb_time_unit_parse("--time-unit", u, &unit, &err) < 0) {
        cli_error("render: %s", err.msg);
        return CLI_USAGE;
    }
    if (u && p->has_time_unit && unit != p->time_unit) {
        cli_error("render: --time-unit %s, but the schedule's profile says "
                  "time_unit %s", u, zb_time_unit_name(p->time_unit));
        return CLI_USAGE;
    }
    if (p->has_time_unit)
        unit = p->time_unit;
    *out = 1e6 * zb_time_unit_seconds(unit);
    return CLI_OK;
}

/* The largest --width or --iter. */
#define MAX_OPTION 1000000

/* An ASCII picture is a grid of ranks x columns held in memory at once:
 * at most this many cells (64 MiB), so a wide picture of a deep pipeline
 * is refused instead of exhausting memory. */
#define MAX_ASCII_CELLS (64 << 20)

static int int_option(const struct cli_args *a, const char *name, int dflt,
                      int min, int *out)
{
    double v;
    int rc = cli_number(a, name, dflt, &v);

    if (rc != CLI_OK)
        return rc;
    if (v != floor(v) || v < min || v > MAX_OPTION) {
        cli_error("render: --%s: expected an integer from %d to %d, got "
                  "'%s'", name, min, MAX_OPTION, cli_get(a, name));
        return CLI_USAGE;
    }
    *out = (int)v;
    return CLI_OK;
}

/* Columns of the terminal on stdout; 100 when it is not one. */
static int terminal_width(void)
{
    struct winsize ws;
    const char *env = getenv("COLUMNS");

    if (isatty(STDOUT_FILENO) && ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 &&
        ws.ws_col >= ZB_ASCII_MIN_WIDTH)
        return ws.ws_col;
    if (env && atoi(env) >= ZB_ASCII_MIN_WIDTH)
        return atoi(env);
    return 100;
}

static int write_text(const char *path, char *text)
{
    struct zb_error err = { 0 };
    int rc = zb_io_write_file(path, text, strlen(text), &err);

    free(text);
    return rc < 0 ? cli_fail(&err) : CLI_OK;
}

/* An SVG picture: as PNG to --png, and to -o, else stdout but a terminal
 * (cli_write_result()); --png without -o writes no SVG. */
static int write_result(const struct cli_args *a, char *text)
{
    int rc = CLI_OK;

    if (cli_has(a, "png"))
        rc = cli_png_write("render", cli_get(a, "png"), text);
    if (rc == CLI_OK && (!cli_has(a, "png") || cli_has(a, "output")))
        rc = cli_write_result(a, "SVG", text, strlen(text));
    free(text);
    return rc;
}

static int check_usage(const struct cli_args *a)
{
    int rc;

    if (cli_has(a, "ascii") &&
        (rc = cli_not_here(a, "png", "to --ascii")) != CLI_OK)
        return rc;
    if (a->npos > 1 && !cli_has(a, "compare")) {
        cli_error("render: several schedules need --compare");
        return CLI_USAGE;
    }
    if (cli_has(a, "compare") && (cli_has(a, "realized") ||
                                  cli_has(a, "trace"))) {
        cli_error("render: --compare takes neither --realized nor --trace");
        return CLI_USAGE;
    }
    return CLI_OK;
}

/* Compared panels are told apart by file name, without its folders. */
static const char *base_name(const char *path)
{
    const char *slash = strrchr(path, '/');

    return slash ? slash + 1 : path;
}

static void add_panel(struct render *v, const char *label,
                      const struct zb_schedule *s,
                      const struct zb_op_list *ranks,
                      const struct zb_measures *m)
{
    v->panels[v->npanels++] = (struct zb_panel){ label, s, ranks, m };
}

/* Pictures go to -o, else stdout; a --trace alone draws no picture. */
static int draw(const struct cli_args *a, struct render *v, int width)
{
    const char *out = cli_get(a, "output");
    bool ascii = cli_has(a, "ascii");
    struct zb_error err = { 0 };

    if (!out && cli_has(a, "trace") && !ascii && !cli_has(a, "png"))
        return CLI_OK;
    if (zb_render_check(v->panels, v->npanels, &err) < 0)
        return cli_fail(&err);
    if (ascii) {
        double rows = 0;
        for (int k = 0; k < v->npanels; k++)
            rows += v->panels[k].s->profile.pp;
        if (rows * width > MAX_ASCII_CELLS) {
            cli_error("render: --ascii --width %d over %.0f ranks is more "
                      "than %d MiB of text; at most --width %.0f here", width,
                      rows, MAX_ASCII_CELLS >> 20,
                      floor(MAX_ASCII_CELLS / rows));
            return CLI_FAIL;
        }
    }
    /* A terminal picture is for the terminal; SVG is not. */
    if (ascii)
        return write_text(out ? out : "-",
                          zb_render_ascii(v->panels, v->npanels, width));
    return write_result(a, zb_render_svg(v->panels, v->npanels, width));
}

/* A plan file: its picture to -o (else stdout), which takes no other
 * option. *done false when the file is not a plan. Only a regular file
 * is looked into: stdin or a pipe read here would be gone for the
 * schedule reader. */
static int render_plan(const struct cli_args *a, bool *done)
{
    const char *path = a->pos[0];
    struct zb_error err = { 0 };
    struct zb_plan_view view;
    struct stat st;
    char *text;
    int rc;

    *done = false;
    if (a->npos != 1 || !strcmp(path, "-") || stat(path, &st) < 0 ||
        !S_ISREG(st.st_mode) || zb_io_slurp(path, &text, &err) < 0)
        return CLI_OK;     /* cli_load_schedule() reports what is wrong */
    if (!zb_plan_json_detect(text)) {
        free(text);
        return CLI_OK;
    }
    *done = true;
    if (cli_has(a, "ascii") || cli_has(a, "trace") || cli_has(a, "realized")
        || cli_has(a, "compare") || cli_has(a, "iter") ||
        cli_has(a, "width") || cli_has(a, "time-unit")) {
        free(text);
        cli_error("render: '%s' is a plan: its picture takes only -o", path);
        return CLI_USAGE;
    }
    rc = zb_plan_view_parse(text, &view, &err);
    free(text);
    if (rc < 0)
        return cli_fail_file(path, &err);
    rc = write_result(a, zb_plan_render_svg(&view));
    zb_plan_view_release(&view);
    return rc;
}

static int run(const struct cli_args *a)
{
    struct render *v;
    double us_per_unit;
    int rc, width, iter = -1;
    bool ascii, plan;

    if ((rc = render_plan(a, &plan)) != CLI_OK || plan)
        return rc;
    v = zb_xcalloc(1, sizeof(*v));

    ascii = cli_has(a, "ascii");
    if ((rc = check_usage(a)) != CLI_OK ||
        (rc = int_option(a, "width", ascii ? terminal_width() : 1200,
                         ascii ? ZB_ASCII_MIN_WIDTH : ZB_SVG_MIN_WIDTH,
                         &width)) != CLI_OK ||
        (cli_has(a, "iter") &&
         (rc = int_option(a, "iter", 0, 0, &iter)) != CLI_OK))
        goto out;
    for (; v->n < a->npos; v->n++)
        if ((rc = cli_load_schedule(a->pos[v->n], &v->sched[v->n])) != CLI_OK)
            goto out;
    if ((rc = unit_scale(a, &v->sched[0].profile, &us_per_unit)) != CLI_OK)
        goto out;
    if (cli_has(a, "realized")) {
        if ((rc = load_realized(cli_get(a, "realized"), &v->sched[0],
                                us_per_unit, iter, v)) != CLI_OK)
            goto out;
        add_panel(v, "realized", &v->sched[0], v->real.ranks, &v->real_m);
    }
    for (int k = 0; k < v->n; k++)
        add_panel(v, cli_has(a, "realized") ? "predicted"
                     : cli_has(a, "compare") ? base_name(a->pos[k]) : NULL,
                  &v->sched[k], v->sched[k].ranks, &v->sched[k].predicted);
    if (cli_has(a, "trace") &&
        (rc = write_text(cli_get(a, "trace"),
                         zb_trace_format(&v->sched[0], us_per_unit))) !=
            CLI_OK)
        goto out;
    rc = draw(a, v, width);
out:
    for (int k = 0; k < v->n; k++)
        zb_schedule_release(&v->sched[k]);
    zb_timeline_release(&v->real);
    free(v->real_m.ranks);
    free(v);
    return rc;
}

static const struct cli_opt opts[] = {
    CLI_OPT_OUTPUT("the picture"),
    { "ascii", 0, NULL, "draw for the terminal instead of SVG" },
    { "width", 0, "N", "width in pixels (1200) or, with --ascii, "
                       "columns\n(the terminal's)" },
    CLI_OPT_PNG,
    { "trace", 0, "OUT.json", "also write the predicted Chrome trace "
                              "(Perfetto);\nalone, draws no picture" },
    { "time-unit", 0, "us|ms|s", "the profile's time unit, for traces "
                                 "(its\ntime_unit, else ms)" },
    { "compare", 0, NULL, "several schedules, one time axis" },
    { "realized", 0, "FILE", "a zbexec trace or report, drawn above the\n"
                             "prediction" },
    { "iter", 0, "N", "the iteration of --realized to draw" },
    { NULL, 0, NULL, NULL },
};

const struct cli_command cmd_render = {
    .name = "render", .run = run,
    .summary = "draw schedule files: SVG or PNG, terminal, Chrome trace "
               "(Perfetto)",
    .args = "FILE...", .min_args = 1, .max_args = CLI_MAX_ARGS,
    .groups = { { "options", opts } },
    .deps = (const struct cli_dep[]){ { "iter", "realized" },
                                      { NULL, NULL } },
    .notes = "Several FILEs need --compare, which takes neither --realized "
             "nor --trace.\nA plan file (zbsched plan -o) is drawn as the "
             "plan's picture (docs/plan.md).\n",
};
