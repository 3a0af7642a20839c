/* cmd_plan.c - `zbsched plan MODEL --pp P --mb M --gpu-mem 80GiB`: the
 * layer split, shape and zb schedule for a per-layer model on GPUs of
 * that memory (split.h), written as Plan JSON (docs/formats.md, "Plan"),
 * with the schedule, torchtitan's CSV and the plan's picture (SVG, PNG)
 * on request and a one-screen summary on stderr. */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "cli.h"
#include "commands.h"
#include "png.h"
#include "zbsched/io.h"
#include "zbsched/json.h"
#include "zbsched/model.h"
#include "zbsched/split.h"
#include "zbsched/torch.h"
#include "zbsched/units.h"
#include "zbsched/xalloc.h"

#define MAX_SPLIT 4096

/* A whole number from lo to hi for --name; prints the error. */
static int int_flag(const struct cli_args *a, const char *name, int lo,
                    int hi, int dflt, int *out)
{
    const char *v = cli_get(a, name);
    char *end;
    long x;

    *out = dflt;
    if (!v)
        return CLI_OK;
    errno = 0;
    x = strtol(v, &end, 10);
    if (!*v || *end || errno || x < lo || x > hi) {
        cli_error("plan: --%s must be a whole number from %d to %d, got "
                  "'%s'", name, lo, hi, v);
        return CLI_USAGE;
    }
    *out = (int)x;
    return CLI_OK;
}

/* --split auto|even|N,N,... */
static int split_flag(const struct cli_args *a, struct zb_plan_request *rq,
                      int *counts)
{
    const char *v = cli_get(a, "split");
    const char *p;

    rq->split = ZB_SPLIT_AUTO;
    if (!v || !strcmp(v, "auto"))
        return CLI_OK;
    if (!strcmp(v, "even")) {
        rq->split = ZB_SPLIT_EVEN;
        return CLI_OK;
    }
    rq->split = ZB_SPLIT_GIVEN;
    rq->counts = counts;
    rq->n_counts = 0;
    for (p = v;;) {
        char *end;
        long x;
        errno = 0;
        x = strtol(p, &end, 10);
        if (end == p || errno || x < 0 || x > INT_MAX ||
            rq->n_counts == MAX_SPLIT || (*end && *end != ',')) {
            cli_error("plan: --split must be auto, even or layers per stage "
                      "(5,4,4,...), got '%s'", v);
            return CLI_USAGE;
        }
        counts[rq->n_counts++] = (int)x;
        if (!*end)
            break;
        p = end + 1;
    }
    return CLI_OK;
}

static int size_flag(const struct cli_args *a, const char *name,
                     double *out, bool required)
{
    struct zb_error err = { 0 };
    char what[32];
    const char *v = cli_get(a, name);

    snprintf(what, sizeof(what), "--%s", name);
    if (!v) {
        if (!required)
            return CLI_OK;
        cli_error("plan: %s is required (a GPU's memory: 80GiB)", what);
        return CLI_USAGE;
    }
    if (zb_units_parse_size(what, v, out, &err) < 0) {
        cli_error("plan: %s", err.msg);
        return CLI_USAGE;
    }
    return CLI_OK;
}

static int bw_flag(const struct cli_args *a, const char *name, double *out)
{
    struct zb_error err = { 0 };
    char what[32];
    const char *v = cli_get(a, name);

    snprintf(what, sizeof(what), "--%s", name);
    if (v && zb_units_parse_bandwidth(what, v, out, &err) < 0) {
        cli_error("plan: %s", err.msg);
        return CLI_USAGE;
    }
    return CLI_OK;
}

/* The data-parallel collectives' flags (split.h, zb_plan_dp): only with
 * --dp >= 2, --prefetch only at --zero 3. */
static int dp_flags(const struct cli_args *a, const struct zb_model *m,
                    struct zb_plan_request *rq)
{
    static const char *const only_dp[] = { "dp-bw", "dp-latency",
                                           "fsdp-units", "prefetch",
                                           "reduce" };
    struct zb_error err = { 0 };
    const char *v;
    int rc;

    for (size_t i = 0; rq->dp < 2 && i < sizeof(only_dp) / sizeof(*only_dp);
         i++)
        if ((rc = cli_not_here(a, only_dp[i], "without --dp >= 2")))
            return rc;
    if (rq->zero < 3 && (rc = cli_not_here(a, "prefetch", "below --zero 3")))
        return rc;
    if ((rc = bw_flag(a, "dp-bw", &rq->dpx.bandwidth)) ||
        (rc = int_flag(a, "fsdp-units", 1, 1024, 1, &rq->dpx.units)) ||
        (rc = int_flag(a, "prefetch", 0, 1 << 20, 1, &rq->dpx.prefetch)))
        return rc;
    if ((v = cli_get(a, "dp-latency")) &&
        zb_units_parse_time("--dp-latency", v, m->time_unit,
                            &rq->dpx.latency, &err) < 0) {
        cli_error("plan: %s", err.msg);
        return CLI_USAGE;
    }
    if ((v = cli_get(a, "reduce")) &&
        zb_dp_reduce_parse(v, "--reduce", &rq->dpx.reduce, &err) < 0) {
        cli_error("plan: %s", err.msg);
        return CLI_USAGE;
    }
    return CLI_OK;
}

/* Every flag into rq (the model is read first: plain times are in its
 * unit). */
static int request(const struct cli_args *a, const struct zb_model *m,
                   struct zb_plan_request *rq, int *counts)
{
    struct zb_error err = { 0 };
    const char *v;
    int rc;

    zb_plan_request_init(rq);
    if (!cli_has(a, "pp") || !cli_has(a, "mb")) {
        cli_error("plan: --pp and --mb are required");
        return CLI_USAGE;
    }
    if ((rc = int_flag(a, "pp", 1, 4096, 0, &rq->pp)) ||
        (rc = int_flag(a, "mb", 1, 100000, 0, &rq->microbatches)) ||
        (rc = int_flag(a, "dp", 1, 1 << 20, 1, &rq->dp)) ||
        (rc = int_flag(a, "zero", 0, 3, 0, &rq->zero)) ||
        (rc = int_flag(a, "gpus-per-node", 1, 4096, 0,
                       &rq->link.gpus_per_node)) ||
        (rc = size_flag(a, "gpu-mem", &rq->gpu_mem, true)) ||
        (rc = bw_flag(a, "link-bw", &rq->link.bandwidth)) ||
        (rc = split_flag(a, rq, counts)) ||
        (rc = cli_number(a, "effort", 0, &rq->effort)))
        return rc;
    rq->link.inter_bandwidth = rq->link.bandwidth;
    if ((rc = bw_flag(a, "inter-bw", &rq->link.inter_bandwidth)))
        return rc;
    if (cli_has(a, "inter-bw") && !cli_has(a, "gpus-per-node")) {
        cli_error("plan: --inter-bw needs --gpus-per-node");
        return CLI_USAGE;
    }
    if ((v = cli_get(a, "link-latency")) &&
        zb_units_parse_time("--link-latency", v, m->time_unit,
                            &rq->link.latency, &err) < 0) {
        cli_error("plan: %s", err.msg);
        return CLI_USAGE;
    }
    if ((rc = dp_flags(a, m, rq)))
        return rc;
    if ((v = cli_get(a, "vpp")) && strcmp(v, "auto") &&
        (rc = int_flag(a, "vpp", 1, 64, 0, &rq->vpp)))
        return rc;
    v = cli_get(a, "placement");
    if (v && strcmp(v, "auto")) {
        enum zb_placement pl;
        if (zb_placement_parse(v, &pl) < 0) {
            cli_error("plan: --placement must be auto, loop or v, got '%s'",
                      v);
            return CLI_USAGE;
        }
        rq->placement = (int)pl;
    }
    return CLI_OK;
}

/* ---- The summary ------------------------------------------------------ */

static void print_counts(const struct zb_plan_split *s)
{
    for (int i = 0; i < s->nstages; i++)
        fprintf(stderr, "%s%d", i ? " " : "", s->counts[i]);
}

/* The rank whose total is largest. */
static int peak_rank(const struct zb_plan_split *s, int pp)
{
    int best = 0;

    for (int r = 1; r < pp; r++)
        if (s->ranks[r].total > s->ranks[best].total)
            best = r;
    return best;
}

static void print_baseline(const char *what, const struct zb_plan_split *s,
                           const struct zb_plan *p, const struct zb_model *m,
                           const struct zb_plan_request *rq)
{
    char t[48], g[16], g2[16];
    int r;

    if (!s->exists) {
        fprintf(stderr, "  %s: none in this shape\n", what);
        return;
    }
    r = peak_rank(s, rq->pp);
    fprintf(stderr, "  %s: ", what);
    print_counts(s);
    if (s->fits)
        fprintf(stderr, ": step %s (%+.1f%%), fits, peak %s GiB on rank "
                "%d\n", zb_units_format_time(s->step, m->time_unit, t,
                                             sizeof(t)),
                100 * (s->step / p->best.step - 1),
                zb_units_gib(s->ranks[r].total, g, sizeof(g)), r);
    else
        fprintf(stderr, ": does not fit (rank %d needs %s GiB of %s%s)\n",
                r, zb_units_gib(s->ranks[r].total, g, sizeof(g)),
                zb_units_gib(rq->gpu_mem, g2, sizeof(g2)),
                s->scheduled ? "" : " even with one microbatch in flight");
}

/* With dp: the ring, and the step with what its collectives add to the
 * compute (step_time - makespan: the reduce after the last W, and at
 * ZeRO-3 the gather before the first pass). */
static void step_dp(const struct zb_model *m,
                    const struct zb_plan_request *rq,
                    const struct zb_plan_split *b)
{
    char t[4][48];
    double bw, lat;

    zb_plan_dp_link(rq, &bw, &lat);
    if (isinf(bw))
        snprintf(t[0], sizeof(t[0]), "free");
    else
        snprintf(t[0], sizeof(t[0]), "%.4g GB/s", bw / 1e9);
    fprintf(stderr, "  data parallel: dp %d, ZeRO-%d, reduce %s, ring %s, "
            "latency %s\n", rq->dp, rq->zero,
            zb_dp_reduce_name((enum zb_dp_reduce)rq->dpx.reduce), t[0],
            zb_units_format_time(lat / zb_time_unit_seconds(m->time_unit),
                                 m->time_unit, t[1], sizeof(t[1])));
    fprintf(stderr, "  step %s incl. DP %s %s (step_time; cost %s, "
            "makespan %s, bubble %.1f%%)\n",
            zb_units_format_time(b->step, m->time_unit, t[0], sizeof(t[0])),
            rq->zero >= 3 ? "gathers and reduce" : "reduce",
            zb_units_format_time(b->step - b->makespan, m->time_unit, t[1],
                                 sizeof(t[1])),
            zb_units_format_time(b->cost, m->time_unit, t[2], sizeof(t[2])),
            zb_units_format_time(b->makespan, m->time_unit, t[3],
                                 sizeof(t[3])),
            100 * b->bubble_ratio);
}

static void summary(const struct zb_model *m,
                    const struct zb_plan_request *rq,
                    const struct zb_plan *p)
{
    const struct zb_plan_split *b = &p->best;
    char t[48], t2[48], g[5][16];
    char *layout = zb_plan_megatron_layout(m, b);

    fprintf(stderr, "zbsched: plan for '%s' on pp %d, %d microbatches, %s "
            "GiB a GPU: zb, %s, vpp %d\n", m->name, rq->pp,
            rq->microbatches, zb_units_gib(rq->gpu_mem, g[0], 16),
            zb_placement_name(b->placement), b->vpp);
    fprintf(stderr, "  split (layers per stage): ");
    print_counts(b);
    fprintf(stderr, "\n  megatron layout: %s\n", layout ? layout :
            "none (Megatron cannot express this placement or split)");
    free(layout);
    if (rq->dp >= 2)
        step_dp(m, rq, b);
    else
        fprintf(stderr, "  step %s (cost; makespan %s, bubble %.1f%%)\n",
                zb_units_format_time(b->cost, m->time_unit, t, sizeof(t)),
                zb_units_format_time(b->makespan, m->time_unit, t2,
                                     sizeof(t2)),
                100 * b->bubble_ratio);
    fprintf(stderr, "  lower bound %s over every split (gap %.1f%%); bound "
            "by ", zb_units_format_time(p->lower_bound, m->time_unit, t,
                                        sizeof(t)),
            100 * fmax(0, b->step / p->lower_bound - 1));
    if (p->binding_rank < 0)
        fprintf(stderr, "time (no memory limit would not shorten it)\n");
    else
        fprintf(stderr, "memory of rank %d (with no limit: %s)\n",
                p->binding_rank, zb_units_format_time(p->unlimited_cost,
                                                      m->time_unit, t,
                                                      sizeof(t)));
    for (int r = 0; r < rq->pp; r++) {
        const struct zb_memory_rank *k = &b->ranks[r];
        fprintf(stderr, "  rank %d: %s GiB of %s GiB (model state %s, "
                "activations %s, buffers %s)\n", r,
                zb_units_gib(k->total, g[0], 16),
                zb_units_gib(rq->gpu_mem, g[1], 16),
                zb_units_gib(k->model_state, g[2], 16),
                zb_units_gib(k->activations, g[3], 16),
                zb_units_gib(k->buffers, g[4], 16));
    }
    print_baseline("even split (torchtitan's default)", &p->even, p, m, rq);
    print_baseline("min-max compute split", &p->minmax, p, m, rq);
    fprintf(stderr, "  searched: %d zb runs\n", p->evaluations);
}

/* Nothing fits: one line with what the least demanding split needs. */
static int refuse(const struct zb_plan *p, const struct zb_plan_request *rq)
{
    const struct zb_plan_split *b = &p->best;
    int r = peak_rank(b, rq->pp);
    char g[5][16];

    cli_error("plan: %s fits --gpu-mem %s GiB: %s needs %s GiB on rank %d "
              "(model state %s, activations %s, buffers %s)%s",
              rq->split == ZB_SPLIT_AUTO ? "no split" : "the split never",
              zb_units_gib(rq->gpu_mem, g[0], 16),
              rq->split == ZB_SPLIT_AUTO ? "the best" : "it",
              zb_units_gib(b->ranks[r].total, g[1], 16), r,
              zb_units_gib(b->ranks[r].model_state, g[2], 16),
              zb_units_gib(b->ranks[r].activations, g[3], 16),
              zb_units_gib(b->ranks[r].buffers, g[4], 16),
              b->scheduled ? "" : " even with one microbatch in flight");
    return CLI_FAIL;
}

static int write_text(const char *path, char *text)
{
    struct zb_error err = { 0 };
    int rc = CLI_OK;

    if (zb_io_write_file(path, text, strlen(text), &err) < 0)
        rc = cli_fail_file(path, &err);
    free(text);
    return rc;
}

/* --svg and --png: the plan's picture (split.h). */
static int pictures(const struct cli_args *a, const struct zb_model *m,
                    const struct zb_plan_request *rq,
                    const struct zb_plan *p)
{
    struct zb_plan_view v;
    char *svg;
    int rc = CLI_OK;

    if (!cli_has(a, "svg") && !cli_has(a, "png"))
        return CLI_OK;
    zb_plan_view_make(m, rq, p, &v);
    svg = zb_plan_render_svg(&v);
    zb_plan_view_release(&v);
    if (cli_has(a, "png"))
        rc = cli_png_write("plan", cli_get(a, "png"), svg);
    if (rc == CLI_OK && cli_has(a, "svg"))
        return write_text(cli_get(a, "svg"), svg);
    free(svg);
    return rc;
}

static int run(const struct cli_args *a)
{
    const char *path = a->npos ? a->pos[0] : cli_get(a, "model");
    struct zb_model m;
    struct zb_plan_request rq;
    struct zb_plan plan;
    struct zb_error err = { 0 };
    int *counts = zb_xmalloc(MAX_SPLIT * sizeof(int));
    char *text = NULL;
    int rc;

    if (!path || (a->npos && cli_has(a, "model"))) {
        cli_error("plan: give the model once, as FILE or --model FILE");
        free(counts);
        return CLI_USAGE;
    }
    if (zb_io_slurp(path, &text, &err) < 0 ||
        zb_model_parse(text, &m, &err) < 0) {
        free(text);
        free(counts);
        return cli_fail_file(path, &err);
    }
    free(text);
    if ((rc = request(a, &m, &rq, counts)) != CLI_OK)
        goto out_model;
    if (zb_plan_run(&m, &rq, &plan, &err) < 0) {
        cli_error("plan: %s", err.msg);
        rc = CLI_FAIL;
        goto out_model;
    }
    if (!plan.best.fits) {
        rc = refuse(&plan, &rq);
        goto out;
    }
    if (!cli_has(a, "quiet"))
        summary(&m, &rq, &plan);
    rc = write_text(cli_get(a, "output") ? cli_get(a, "output") : "-",
                    zb_plan_format_json(&m, &rq, &plan));
    if (rc == CLI_OK && cli_has(a, "schedule-out"))
        rc = write_text(cli_get(a, "schedule-out"),
                        zb_json_format_schedule(&plan.best.sched));
    if (rc == CLI_OK && cli_has(a, "csv"))
        rc = write_text(cli_get(a, "csv"),
                        zb_torch_csv_format(&plan.best.sched,
                                            ZB_TORCH_COMPUTE_ONLY));
    if (rc == CLI_OK)
        rc = pictures(a, &m, &rq, &plan);
out:
    zb_plan_release(&plan);
out_model:
    zb_model_release(&m);
    free(counts);
    return rc;
}

static const struct cli_opt opts[] = {
    { "model", 0, "FILE", "the model JSON (or give it as FILE)" },
    { "gpu-mem", 0, "SIZE", "what one GPU may hold: 80GiB (required)" },
    { "pp", 0, "N", "pipeline ranks (required)" },
    { "mb", 0, "N", "microbatches (required)" },
    { "vpp", 0, "auto|N", "chunks per rank (auto: 1 to 8)" },
    { "placement", 0, "auto|loop|v", "stage placement (auto: both)" },
    { "split", 0, "auto|even|N,...", "search (auto), torchtitan's even "
      "split, or\nlayers per stage (pp x vpp entries)" },
    { "link-bw", 0, "BW", "point-to-point bandwidth: 50GB/s (free)" },
    { "link-latency", 0, "TIME", "per transfer: 5us (plain: the model's "
      "unit; 0)" },
    { "gpus-per-node", 0, "G", "ranks per node, laid out consecutively" },
    { "inter-bw", 0, "BW", "bandwidth between nodes (--link-bw)" },
    { "dp", 0, "N", "data-parallel replicas of each rank (1)" },
    { "zero", 0, "0-3", "ZeRO stage over them (0; docs/zero.md)" },
    { "dp-bw", 0, "BW", "their ring's bandwidth per rank (--inter-bw\n"
      "where the ring crosses nodes, else --link-bw)" },
    { "dp-latency", 0, "TIME", "per ring step (--link-latency)" },
    { "reduce", 0, "step|microbatch", "reduce gradients once a step or "
      "after\nevery W (--zero >= 2)" },
    { "fsdp-units", 0, "K", "FSDP units per stage (1; --zero 3 or\n"
      "--reduce microbatch)" },
    { "prefetch", 0, "N", "ZeRO-3 gathers N passes ahead (1; 0: none)" },
    { "effort", 0, "SECONDS", "zb's search on the finalists (0: zb's "
      "default)" },
    CLI_OPT_OUTPUT("the plan JSON"),
    { "schedule-out", 0, "FILE", "also write the schedule JSON" },
    { "csv", 0, "FILE", "also write the PyTorch CSV (torchtitan's\n"
      "pipeline_parallel_schedule_csv)" },
    { "svg", 0, "FILE", "also draw the plan: stage work and rank memory,\n"
      "beside the even split" },
    CLI_OPT_PNG,
    CLI_OPT_QUIET,
    { NULL, 0, NULL, NULL },
};

const struct cli_command cmd_plan = {
    .name = "plan", .run = run,
    .summary = "choose the layer split, shape and schedule for a model",
    .args = "[FILE]", .min_args = 0, .max_args = 1,
    .groups = { { "options", opts } },
    .deps = (const struct cli_dep[]){ { "dp-bw", "dp" },
                                      { "dp-latency", "dp" },
                                      { "reduce", "dp" },
                                      { "fsdp-units", "dp" },
                                      { "prefetch", "dp" }, { NULL, NULL } },
    .notes = "Sizes take B, KB, MB, GB, TB, KiB, MiB, GiB, TiB; bandwidths "
             "a size per second.\nExit 1 when no split fits --gpu-mem "
             "(the message says what it needs).\nSee docs/plan.md.\n",
};
