/* render_plan.c - the picture of a plan (split.h): the plan's split beside
 * the even split, per stage a bar of F, B and W per microbatch, per rank
 * a stacked bar of its memory under the GPU's (docs/plan.md, "The
 * picture"); and the view it draws, made from a plan in memory. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "strbuf.h"
#include "zbsched/split.h"
#include "zbsched/xalloc.h"

/* Layout in pixels. */
#define MARGIN 16
#define AXIS_W 64       /* y-axis labels left of each chart */
#define TITLE_H 52      /* title and legend */
#define HEAD_H 56       /* a column's header: split, step, layers */
#define CHART_H 180     /* bar area of one chart */
#define LABEL_H 34      /* x labels and chart caption under it */
#define CHART_GAP 28
#define COL_GAP 36
#define MIN_PLOT_W 300
#define MAX_PLOT_W 640
#define BAR_STEP 22     /* pixels a bar takes, gap included, when room */

static const char *const fill_f = "#3b6eb4", *const fill_b = "#2a9d5c",
                         *const fill_w = "#e89a2c";
static const char *const fill_state = "#7f7f7f", *const fill_act = "#8e5ea2",
                         *const fill_buf = "#c9b3d6";
static const char *const limit_colour = "#c0392b";

#define GIB (1024.0 * 1024.0 * 1024.0)

/* A tick step of 1, 2 or 5 x 10^k giving at most about 5 ticks to max. */
static double tick_step(double max)
{
    double raw = max / 5, mag;

    if (!(raw > 0) || !isfinite(raw))
        return 1;
    mag = pow(10, floor(log10(raw)));
    if (raw <= mag)
        return mag;
    if (raw <= 2 * mag)
        return 2 * mag;
    if (raw <= 5 * mag)
        return 5 * mag;
    return 10 * mag;
}

/* One chart's frame: its plot area and y scale. */
struct frame {
    double x, y, w, h;  /* plot area, y the top */
    double ymax;        /* value at the top */
};

static double ypos(const struct frame *f, double v)
{
    return f->y + f->h - f->h * fmin(v, f->ymax) / f->ymax;
}

static void rect(struct strbuf *sb, double x, double y, double w, double h,
                 const char *fill, const char *tip)
{
    if (!(h > 0))
        return;
    zbi_sb_addf(sb, "<rect x=\"%.2f\" y=\"%.2f\" width=\"%.2f\" "
                "height=\"%.2f\" fill=\"%s\">", x, y, w, h, fill);
    if (tip) {
        zbi_sb_add(sb, "<title>");
        zbi_sb_add_xml(sb, tip);
        zbi_sb_add(sb, "</title>");
    }
    zbi_sb_add(sb, "</rect>\n");
}

/* Axis, grid lines and their labels; `unit` follows each label. */
static void draw_frame(struct strbuf *sb, const struct frame *f,
                       double step, const char *unit, const char *caption)
{
    zbi_sb_addf(sb, "<g font-size=\"10\" fill=\"#444\">\n");
    for (int k = 0; k * step <= f->ymax * (1 + 1e-9); k++) {
        double y = ypos(f, k * step);
        zbi_sb_addf(sb, "<line x1=\"%.2f\" y1=\"%.2f\" x2=\"%.2f\" "
                    "y2=\"%.2f\" stroke=\"#ddd\"/>\n", f->x, y, f->x + f->w,
                    y);
        zbi_sb_addf(sb, "<text x=\"%.2f\" y=\"%.2f\" text-anchor=\"end\">"
                    "%g %s</text>\n", f->x - 4, y + 3, k * step, unit);
    }
    zbi_sb_addf(sb, "<line x1=\"%.2f\" y1=\"%.2f\" x2=\"%.2f\" y2=\"%.2f\" "
                "stroke=\"#888\"/>\n", f->x, f->y + f->h, f->x + f->w,
                f->y + f->h);
    zbi_sb_addf(sb, "<text x=\"%.2f\" y=\"%.2f\" text-anchor=\"middle\" "
                "font-size=\"11\">", f->x + f->w / 2, f->y + f->h + 28);
    zbi_sb_add_xml(sb, caption);
    zbi_sb_add(sb, "</text>\n</g>\n");
}

/* Labels under n bars: all of them when they fit, else every k-th. */
static int label_every(int n, double plot_w)
{
    int k = 1;

    while (n / k * 24.0 > plot_w)
        k++;
    return k;
}

static void bar_label(struct strbuf *sb, const struct frame *f, double xc,
                      const char *text)
{
    zbi_sb_addf(sb, "<text x=\"%.2f\" y=\"%.2f\" text-anchor=\"middle\" "
                "font-size=\"10\" fill=\"#444\">%s</text>\n", xc,
                f->y + f->h + 13, text);
}

/* Per stage a stacked bar F, B, W, its layer count above it. */
static void draw_work(struct strbuf *sb, const struct zb_plan_view *v,
                      const struct zb_plan_view_split *s, struct frame f)
{
    double step = tick_step(f.ymax), bw = f.w / s->nstages;
    const char *unit = zb_time_unit_name(v->time_unit);
    int every = label_every(s->nstages, f.w);
    char tip[160], lab[16];

    draw_frame(sb, &f, step, unit, "work per microbatch of each stage "
               "(F, B, W; layers above)");
    for (int i = 0; i < s->nstages; i++) {
        double x = f.x + i * bw + bw * 0.15, w = bw * 0.7, sum = 0;
        double part[3] = { s->f[i], s->b[i], s->w[i] };
        const char *fill[3] = { fill_f, fill_b, fill_w }, *name = "FBW";
        for (int k = 0; k < 3; k++) {
            double y0 = ypos(&f, sum), y1 = ypos(&f, sum + part[k]);
            snprintf(tip, sizeof(tip), "stage %d (rank %d, %d layers): %c "
                     "%.4g %s", i, s->rank[i], s->counts[i], name[k],
                     part[k], unit);
            rect(sb, x, y1, w, y0 - y1, fill[k], tip);
            sum += part[k];
        }
        zbi_sb_addf(sb, "<text x=\"%.2f\" y=\"%.2f\" text-anchor=\"middle\" "
                    "font-size=\"9\" fill=\"#222\">%d</text>\n", x + w / 2,
                    ypos(&f, sum) - 3, s->counts[i]);
        if (i % every == 0) {
            snprintf(lab, sizeof(lab), "s%d", i);
            bar_label(sb, &f, x + w / 2, lab);
        }
    }
}

/* Per rank a stacked bar: model state, activation peak, buffers; the
 * GPU's memory as a dashed line. */
static void draw_memory(struct strbuf *sb, const struct zb_plan_view *v,
                        const struct zb_plan_view_split *s, struct frame f)
{
    double step = tick_step(f.ymax), bw = f.w / v->pp, y;
    int every = label_every(v->pp, f.w);
    char tip[160], lab[16];

    draw_frame(sb, &f, step, "GiB", "memory of each rank (model state, "
               "activation peak, buffers)");
    for (int r = 0; r < v->pp; r++) {
        const struct zb_memory_rank *k = &s->ranks[r];
        double x = f.x + r * bw + bw * 0.15, w = bw * 0.7, sum = 0;
        double part[3] = { k->model_state / GIB, k->activations / GIB,
                           k->buffers / GIB };
        const char *fill[3] = { fill_state, fill_act, fill_buf };
        const char *name[3] = { "model state", "activation peak",
                                "buffers" };
        for (int j = 0; j < 3; j++) {
            double y0 = ypos(&f, sum), y1 = ypos(&f, sum + part[j]);
            snprintf(tip, sizeof(tip), "rank %d: %s %.2f GiB (total %.2f "
                     "GiB)", r, name[j], part[j], k->total / GIB);
            rect(sb, x, y1, w, y0 - y1, fill[j], tip);
            sum += part[j];
        }
        if (r % every == 0) {
            snprintf(lab, sizeof(lab), "r%d", r);
            bar_label(sb, &f, x + w / 2, lab);
        }
    }
    y = ypos(&f, v->gpu_mem / GIB);
    zbi_sb_addf(sb, "<line x1=\"%.2f\" y1=\"%.2f\" x2=\"%.2f\" y2=\"%.2f\" "
                "stroke=\"%s\" stroke-width=\"1.5\" stroke-dasharray=\"6 3\""
                "/>\n<text x=\"%.2f\" y=\"%.2f\" text-anchor=\"end\" "
                "font-size=\"10\" fill=\"%s\">--gpu-mem %.1f GiB</text>\n",
                f.x, y, f.x + f.w, y, limit_colour, f.x + f.w, y - 3,
                limit_colour, v->gpu_mem / GIB);
}

/* A column's header: which split, its step against the plan's, and its
 * layers per stage (cut with "..." past `width` pixels). */
static void draw_head(struct strbuf *sb, const struct zb_plan_view *v,
                      const struct zb_plan_view_split *s, bool is_plan,
                      double x, double y, double width)
{
    const char *unit = zb_time_unit_name(v->time_unit);
    struct strbuf lay;

    zbi_sb_addf(sb, "<text x=\"%.2f\" y=\"%.2f\" font-size=\"13\" "
                "font-weight=\"bold\">%s</text>\n", x, y + 14,
                is_plan ? "the plan's split" : "even split (torchtitan's "
                                               "default)");
    zbi_sb_addf(sb, "<text x=\"%.2f\" y=\"%.2f\" font-size=\"11\" "
                "fill=\"#333\">", x, y + 30);
    if (!s->exists) {
        zbi_sb_add(sb, "none in this shape</text>\n");
        return;
    }
    if (s->scheduled)
        zbi_sb_addf(sb, "step %.4g %s", s->step, unit);
    else
        zbi_sb_add(sb, "no schedule");
    if (!is_plan && s->scheduled && v->plan.scheduled && v->plan.step > 0)
        zbi_sb_addf(sb, " (%+.1f%%)", 100 * (s->step / v->plan.step - 1));
    zbi_sb_addf(sb, ", %s</text>\n", s->fits ? "fits" : "does not fit");
    zbi_sb_init(&lay);
    zbi_sb_add(&lay, "layers per stage:");
    for (int i = 0; i < s->nstages; i++) {
        if ((lay.len + 8) * 6.2 > width) {
            zbi_sb_add(&lay, " ...");
            break;
        }
        zbi_sb_addf(&lay, " %d", s->counts[i]);
    }
    zbi_sb_addf(sb, "<text x=\"%.2f\" y=\"%.2f\" font-size=\"11\" "
                "fill=\"#333\">%s</text>\n", x, y + 46, lay.buf);
    zbi_sb_release(&lay);
}

static void legend(struct strbuf *sb, double x, double y)
{
    const char *fill[] = { fill_f, fill_b, fill_w, fill_state, fill_act,
                           fill_buf };
    const char *name[] = { "F", "B", "W", "model state", "activation peak",
                           "buffers" };

    for (int i = 0; i < 6; i++) {
        zbi_sb_addf(sb, "<rect x=\"%.2f\" y=\"%.2f\" width=\"12\" "
                    "height=\"12\" fill=\"%s\"/><text x=\"%.2f\" y=\"%.2f\" "
                    "font-size=\"11\">%s</text>\n", x, y, fill[i], x + 16,
                    y + 10, name[i]);
        x += 28 + 7.0 * strlen(name[i]);
    }
    zbi_sb_addf(sb, "<line x1=\"%.2f\" y1=\"%.2f\" x2=\"%.2f\" y2=\"%.2f\" "
                "stroke=\"%s\" stroke-width=\"1.5\" stroke-dasharray=\"6 3\""
                "/><text x=\"%.2f\" y=\"%.2f\" font-size=\"11\">GPU memory"
                "</text>\n", x, y + 6, x + 20, y + 6, limit_colour, x + 24,
                y + 10);
}

/* The largest stage work and rank total of either split: both columns
 * share their scales, so bars compare across them. */
static void scales(const struct zb_plan_view *v, double *work, double *mem)
{
    const struct zb_plan_view_split *sp[2] = { &v->plan, &v->even };

    *work = 0;
    *mem = v->gpu_mem / GIB;
    for (int k = 0; k < 2; k++) {
        if (!sp[k]->exists)
            continue;
        for (int i = 0; i < sp[k]->nstages; i++)
            *work = fmax(*work, sp[k]->f[i] + sp[k]->b[i] + sp[k]->w[i]);
        for (int r = 0; r < v->pp; r++)
            *mem = fmax(*mem, sp[k]->ranks[r].total / GIB);
    }
    if (!(*work > 0))
        *work = 1;
    *work *= 1.1;
    *mem *= 1.08;
}

char *zb_plan_render_svg(const struct zb_plan_view *v)
{
    struct strbuf sb;
    int n = v->pp * v->vpp;
    double plot_w = fmin(MAX_PLOT_W, fmax(MIN_PLOT_W, n * BAR_STEP));
    double col_w = AXIS_W + plot_w, wmax, mmax;
    double width = 2 * MARGIN + 2 * col_w + COL_GAP;
    double height = MARGIN + TITLE_H + HEAD_H + 2 * (CHART_H + LABEL_H) +
                    CHART_GAP + MARGIN;
    const struct zb_plan_view_split *sp[2] = { &v->plan, &v->even };

    scales(v, &wmax, &mmax);
    zbi_sb_init(&sb);
    zbi_sb_addf(&sb, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
                "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" "
                "height=\"%.0f\" viewBox=\"0 0 %.0f %.0f\" "
                "font-family=\"sans-serif\">\n<rect width=\"100%%\" "
                "height=\"100%%\" fill=\"white\"/>\n", width, height, width,
                height);
    zbi_sb_addf(&sb, "<text x=\"%d\" y=\"%d\" font-size=\"15\" "
                "font-weight=\"bold\">plan for '", MARGIN, MARGIN + 14);
    zbi_sb_add_xml(&sb, v->model);
    zbi_sb_addf(&sb, "': pp %d, %s vpp %d, %d microbatches, %.1f GiB a GPU"
                "</text>\n", v->pp, zb_placement_name(v->placement), v->vpp,
                v->microbatches, v->gpu_mem / GIB);
    legend(&sb, MARGIN, MARGIN + 28);
    for (int c = 0; c < 2; c++) {
        double x = MARGIN + c * (col_w + COL_GAP), y = MARGIN + TITLE_H;
        struct frame fw = { x + AXIS_W, y + HEAD_H, plot_w, CHART_H, wmax };
        struct frame fm = { x + AXIS_W, fw.y + CHART_H + LABEL_H +
                                            CHART_GAP, plot_w, CHART_H,
                            mmax };
        draw_head(&sb, v, sp[c], c == 0, x + AXIS_W, y, plot_w);
        if (!sp[c]->exists)
            continue;
        draw_work(&sb, v, sp[c], fw);
        draw_memory(&sb, v, sp[c], fm);
    }
    zbi_sb_add(&sb, "</svg>\n");
    return zbi_sb_detach(&sb);
}

/* ---- The view of a plan in memory ---------------------------------- */

static void view_split(const struct zb_model *m,
                       const struct zb_plan_request *rq,
                       const struct zb_plan_split *s,
                       struct zb_plan_view_split *out)
{
    struct zb_profile sh = { .pp = rq->pp, .vpp = s->vpp,
                             .placement = s->placement };
    int n = s->nstages, at = 0;

    memset(out, 0, sizeof(*out));
    if (!s->exists)
        return;
    out->exists = true;
    out->scheduled = s->scheduled;
    out->fits = s->fits;
    out->step = s->step;
    out->nstages = n;
    out->counts = zb_xmalloc((size_t)n * sizeof(int));
    memcpy(out->counts, s->counts, (size_t)n * sizeof(int));
    out->rank = zb_xcalloc((size_t)n, sizeof(int));
    out->f = zb_xcalloc((size_t)n, sizeof(double));
    out->b = zb_xcalloc((size_t)n, sizeof(double));
    out->w = zb_xcalloc((size_t)n, sizeof(double));
    for (int i = 0; i < n; i++) {
        out->rank[i] = zb_profile_stage_rank(&sh, i);
        for (int k = 0; k < s->counts[i]; k++, at++) {
            out->f[i] += m->layers[at].f;
            out->b[i] += m->layers[at].b;
            out->w[i] += m->layers[at].w;
        }
    }
    out->ranks = zb_xmalloc((size_t)rq->pp * sizeof(*out->ranks));
    memcpy(out->ranks, s->ranks, (size_t)rq->pp * sizeof(*out->ranks));
}

void zb_plan_view_make(const struct zb_model *m,
                       const struct zb_plan_request *rq,
                       const struct zb_plan *p, struct zb_plan_view *out)
{
    memset(out, 0, sizeof(*out));
    out->model = zb_xstrdup(m->name);
    out->time_unit = m->time_unit;
    out->pp = rq->pp;
    out->vpp = p->best.vpp;
    out->placement = p->best.placement;
    out->microbatches = rq->microbatches;
    out->gpu_mem = rq->gpu_mem;
    view_split(m, rq, &p->best, &out->plan);
    view_split(m, rq, &p->even, &out->even);
}

static void view_split_release(struct zb_plan_view_split *s)
{
    free(s->counts);
    free(s->rank);
    free(s->f);
    free(s->b);
    free(s->w);
    free(s->ranks);
    memset(s, 0, sizeof(*s));
}

void zb_plan_view_release(struct zb_plan_view *v)
{
    if (!v)
        return;
    free(v->model);
    view_split_release(&v->plan);
    view_split_release(&v->even);
    v->model = NULL;
}
