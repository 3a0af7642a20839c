/* render_svg.c - a schedule as an SVG Gantt chart drawn to real durations:
 * per rank a row of passes and a memory curve under its limit, panels
 * stacked on one time axis (docs/guide.md, "Reading the chart"). */
#include <math.h>
#include <stdio.h>
#include <string.h>
#include "strbuf.h"
#include "zbsched/render.h"
#include "zbsched/units.h"

/* Layout in pixels. */
#define LEFT 64         /* rank labels */
#define RIGHT 128       /* per-rank figures */
#define LEGEND_H 30
#define HEADER_H 40     /* panel title and measures */
#define BAR_H 22        /* a rank's passes */
#define MEM_H 16        /* its memory curve */
#define RANK_GAP 8
#define PANEL_GAP 14
#define AXIS_H 42
#define RANK_H (BAR_H + MEM_H + RANK_GAP)

struct rgb {
    double r, g, b;
};

/* Colour-blind-safe hues, one per compute kind. */
static struct rgb kind_colour(enum zb_op_kind k)
{
    switch (k) {
    case ZB_OP_F: return (struct rgb){ 0x3b, 0x6e, 0xb4 };
    case ZB_OP_B: return (struct rgb){ 0x2a, 0x9d, 0x5c };
    case ZB_OP_W: return (struct rgb){ 0xe8, 0x9a, 0x2c };
    case ZB_OP_FB: return (struct rgb){ 0x5f, 0x5f, 0x5f };
    default: return (struct rgb){ 0x8e, 0x5e, 0xa2 };   /* BW */
    }
}

/* Later chunks of a rank are lighter shades of the same hue, so kind and
 * chunk read at once (the Zero Bubble paper's figures do the same). */
static struct rgb shade(struct rgb c, int chunk, int vpp)
{
    double t = vpp > 1 ? 0.6 * chunk / (vpp - 1) : 0;

    return (struct rgb){ c.r + (255 - c.r) * t, c.g + (255 - c.g) * t,
                         c.b + (255 - c.b) * t };
}

static void add_colour(struct strbuf *sb, struct rgb c)
{
    zbi_sb_addf(sb, "#%02x%02x%02x", (int)lround(c.r), (int)lround(c.g),
            (int)lround(c.b));
}

static bool is_light(struct rgb c)
{
    return 0.299 * c.r + 0.587 * c.g + 0.114 * c.b > 150;
}

struct chart {
    struct strbuf sb;
    double tmax;        /* right end of the time axis */
    double plot_w;      /* pixels between the margins */
    const char *unit;   /* the panels' time unit, NULL when they name
                           none or differ */
};

static double xpos(const struct chart *c, double t)
{
    return LEFT + t / c->tmax * c->plot_w;
}

/* 1, 2 or 5 times a power of ten, giving about ten ticks. */
static double tick_step(double tmax)
{
    double raw = tmax / 10, mag = pow(10, floor(log10(raw))), f = raw / mag;
    double step = (f < 1.5 ? 1 : f < 3.5 ? 2 : f < 7.5 ? 5 : 10) * mag;

    /* One tick rather than an endless loop on an axis zb_render_check()
     * refuses. */
    return step > 0 && isfinite(step) ? step : fmax(tmax, 1);
}

static void draw_grid(struct chart *c, double y0, double y1)
{
    double step = tick_step(c->tmax);

    for (int k = 0; k * step <= c->tmax * (1 + 1e-9); k++)
        zbi_sb_addf(&c->sb, "<line x1=\"%.2f\" y1=\"%.1f\" x2=\"%.2f\" "
                "y2=\"%.1f\" stroke=\"#000\" stroke-opacity=\"0.08\"/>\n",
                xpos(c, k * step), y0, xpos(c, k * step), y1);
}

static void draw_axis(struct chart *c, double y)
{
    double step = tick_step(c->tmax);

    zbi_sb_addf(&c->sb, "<g class=\"axis\" font-size=\"11\" fill=\"#333\">\n"
            "<line x1=\"%d\" y1=\"%.1f\" x2=\"%.2f\" y2=\"%.1f\" "
            "stroke=\"#333\"/>\n", LEFT, y, xpos(c, c->tmax), y);
    for (int k = 0; k * step <= c->tmax * (1 + 1e-9); k++) {
        double x = xpos(c, k * step);
        zbi_sb_addf(&c->sb, "<line x1=\"%.2f\" y1=\"%.1f\" x2=\"%.2f\" "
                "y2=\"%.1f\" stroke=\"#333\"/><text x=\"%.2f\" y=\"%.1f\" "
                "text-anchor=\"middle\">%.10g</text>\n", x, y, x, y + 4, x,
                y + 16, k * step);
    }
    zbi_sb_addf(&c->sb, "<text class=\"unit\" x=\"%.2f\" y=\"%.1f\" "
            "text-anchor=\"end\">time (%s)</text>\n</g>\n",
            xpos(c, c->tmax), y + 30, c->unit ? c->unit : "profile units");
}

static void legend_item(struct chart *c, double *x, struct rgb fill,
                        const char *text)
{
    zbi_sb_addf(&c->sb, "<rect x=\"%.1f\" y=\"8\" width=\"14\" height=\"14\" "
            "fill=\"", *x);
    add_colour(&c->sb, fill);
    zbi_sb_addf(&c->sb, "\"/><text x=\"%.1f\" y=\"19\">%s</text>\n", *x + 18,
            text);
    *x += 26 + 6.5 * (double)strlen(text);
}

static void draw_legend(struct chart *c, int max_vpp, bool overlap)
{
    double x = LEFT;

    zbi_sb_addf(&c->sb, "<g class=\"legend\" font-size=\"12\" "
                "fill=\"#222\">\n");
    legend_item(c, &x, kind_colour(ZB_OP_F), "F forward");
    legend_item(c, &x, kind_colour(ZB_OP_B), "B input grad");
    legend_item(c, &x, kind_colour(ZB_OP_W), "W weight grad");
    legend_item(c, &x, kind_colour(ZB_OP_BW), "BW fused");
    if (overlap)
        legend_item(c, &x, kind_colour(ZB_OP_FB), "FB overlapped F+B");
    if (max_vpp > 1)
        legend_item(c, &x, shade(kind_colour(ZB_OP_F), 1, 2),
                    "lighter: later chunk");
    legend_item(c, &x, (struct rgb){ 0xe6, 0xe6, 0xe6 }, "idle");
    zbi_sb_addf(&c->sb, "<line x1=\"%.1f\" y1=\"15\" x2=\"%.1f\" y2=\"15\" "
            "stroke=\"#c0392b\" stroke-dasharray=\"4 3\"/><text x=\"%.1f\" "
            "y=\"19\">memory limit</text>\n</g>\n", x, x + 16, x + 20);
}

static void draw_header(struct chart *c, const struct zb_panel *pn, double y)
{
    const struct zb_profile *p = &pn->s->profile;
    const struct zb_measures *m = pn->m;
    double peak = 0;

    for (int r = 0; r < p->pp; r++)
        peak = fmax(peak, m->ranks[r].peak_memory);
    zbi_sb_addf(&c->sb, "<text x=\"%d\" y=\"%.1f\" font-size=\"14\" "
            "font-weight=\"bold\">", 8, y + 16);
    zbi_sb_add_xml(&c->sb, pn->s->name);
    if (pn->label) {
        zbi_sb_addf(&c->sb, " (");
        zbi_sb_add_xml(&c->sb, pn->label);
        zbi_sb_addf(&c->sb, ")");
    }
    zbi_sb_addf(&c->sb, "</text>\n<text x=\"%d\" y=\"%.1f\" font-size=\"12\" "
            "fill=\"#333\">p %d, vpp %d, m %d, placement %s | cost %.6g%s%s, "
            "bubble_ratio %.4f, makespan %.6g%s%s, peak memory %.6g</text>\n",
            8, y + 33, p->pp, p->vpp, p->microbatches,
            zb_placement_name(p->placement), m->cost, c->unit ? " " : "",
            c->unit ? c->unit : "", m->bubble_ratio, m->makespan,
            c->unit ? " " : "", c->unit ? c->unit : "", peak);
}

static void draw_op(struct chart *c, const struct zb_profile *p,
                    const struct zb_op *op, double y)
{
    struct rgb fill = shade(kind_colour(op->kind),
                            zb_profile_stage_chunk(p, op->stage), p->vpp);
    double x0 = xpos(c, op->start), w = xpos(c, op->end) - x0;
    char label[16], desc[64];

    snprintf(label, sizeof(label), "%d", op->mb);
    zbi_sb_addf(&c->sb, "<rect class=\"op\" x=\"%.2f\" y=\"%.1f\" "
            "width=\"%.2f\" height=\"%d\" fill=\"", x0, y, w, BAR_H);
    add_colour(&c->sb, fill);
    zbi_sb_addf(&c->sb, "\" stroke=\"#fff\" stroke-width=\"0.5\"><title>%s: "
            "%.6g to %.6g%s%s</title></rect>\n",
            zb_op_describe(op, desc, sizeof(desc)), op->start, op->end,
            c->unit ? " " : "", c->unit ? c->unit : "");
    /* The microbatch number only where it fits (about 6.5 px a digit). */
    if (w >= 6.5 * (double)strlen(label) + 3)
        zbi_sb_addf(&c->sb, "<text x=\"%.2f\" y=\"%.1f\" font-size=\"10\" "
                "text-anchor=\"middle\" fill=\"%s\">%s</text>\n",
                x0 + w / 2, y + BAR_H / 2.0 + 3.5,
                is_light(fill) ? "#1a1a1a" : "#fff", label);
}

/* Running memory as a step curve: F allocates when it starts, B and W
 * release when they end (an FB's halves each), so the peak equals the
 * simulator's running sum. */
static void draw_memory(struct chart *c, const struct zb_profile *p, int r,
                        const struct zb_op_list *l, double ymax, double y)
{
    double mem = 0, base = y + MEM_H, scale = (MEM_H - 2) / ymax;
    double limit = p->mem_limit[r];

    zbi_sb_addf(&c->sb, "<rect x=\"%d\" y=\"%.1f\" width=\"%.2f\" "
            "height=\"%d\" fill=\"#fff\" stroke=\"#ccc\" "
            "stroke-width=\"0.5\"/>\n"
            "<path class=\"memory\" fill=\"#9ecae1\" stroke=\"#2171b5\" "
            "stroke-width=\"0.8\" d=\"M%.2f %.2f", LEFT, y, c->plot_w,
            MEM_H, xpos(c, 0), base);
    for (int i = 0; i < l->n; i++) {
        struct zb_op part[2];
        int np;
        if (!zb_op_is_compute(l->ops[i].kind))
            continue;
        np = zb_op_split(&l->ops[i], part);
        for (int h = 0; h < np; h++) {
            const struct zb_op *op = &part[h];
            double d = zb_op_memory_delta(p, op);
            mem += d;
            zbi_sb_addf(&c->sb, " H%.2f V%.2f",
                    xpos(c, d > 0 ? op->start : op->end), base - mem * scale);
        }
    }
    zbi_sb_addf(&c->sb, " H%.2f V%.2f Z\"/>\n", xpos(c, c->tmax), base);
    if (isfinite(limit))
        zbi_sb_addf(&c->sb, "<line class=\"limit\" x1=\"%d\" y1=\"%.2f\" "
                "x2=\"%.2f\" y2=\"%.2f\" stroke=\"#c0392b\" "
                "stroke-dasharray=\"4 3\"/>\n", LEFT, base - limit * scale,
                xpos(c, c->tmax), base - limit * scale);
}

static double panel_height(const struct zb_panel *pn)
{
    return HEADER_H + pn->s->profile.pp * RANK_H;
}

static void draw_panel(struct chart *c, const struct zb_panel *pn, double y)
{
    const struct zb_profile *p = &pn->s->profile;
    double ymax = 1e-12;

    draw_header(c, pn, y);
    y += HEADER_H;
    for (int r = 0; r < p->pp; r++) {
        ymax = fmax(ymax, pn->m->ranks[r].peak_memory);
        if (isfinite(p->mem_limit[r]))
            ymax = fmax(ymax, p->mem_limit[r]);
    }
    for (int r = 0; r < p->pp; r++) {
        const struct zb_rank_measures *rm = &pn->m->ranks[r];
        double yr = y + r * RANK_H;

        zbi_sb_addf(&c->sb, "<g class=\"rank\">\n<text x=\"%d\" y=\"%.1f\" "
                "font-size=\"12\" text-anchor=\"end\">rank %d</text>\n"
                "<text x=\"%d\" y=\"%.1f\" font-size=\"9\" fill=\"#555\" "
                "text-anchor=\"end\">memory</text>\n<rect x=\"%d\" "
                "y=\"%.1f\" width=\"%.2f\" height=\"%d\" fill=\"#e6e6e6\"/>\n",
                LEFT - 6, yr + 15, r, LEFT - 6, yr + BAR_H + 11, LEFT, yr,
                c->plot_w, BAR_H);
        draw_grid(c, yr, yr + BAR_H);
        for (int i = 0; i < pn->ranks[r].n; i++)
            if (zb_op_is_compute(pn->ranks[r].ops[i].kind))
                draw_op(c, p, &pn->ranks[r].ops[i], yr);
        draw_memory(c, p, r, &pn->ranks[r], ymax, yr + BAR_H + 1);
        zbi_sb_addf(&c->sb, "<text x=\"%.2f\" y=\"%.1f\" "
                "font-size=\"11\">busy %.1f%%</text>\n<text x=\"%.2f\" "
                "y=\"%.1f\" font-size=\"10\" "
                "fill=\"#555\">peak %.6g", xpos(c, c->tmax) + 8, yr + 15,
                pn->m->cost > 0 ? 100 * rm->busy / pn->m->cost : 0,
                xpos(c, c->tmax) + 8, yr + BAR_H + 12, rm->peak_memory);
        if (isfinite(p->mem_limit[r]))
            zbi_sb_addf(&c->sb, " / limit %.6g", p->mem_limit[r]);
        zbi_sb_addf(&c->sb, "</text>\n</g>\n");
    }
}

/* The unit every panel's profile names (time_unit), so that one axis
 * can say it; NULL when one names none or they differ. */
static const char *time_unit(const struct zb_panel *panels, int n)
{
    for (int k = 0; k < n; k++) {
        const struct zb_profile *p = &panels[k].s->profile;
        if (!p->has_time_unit ||
            p->time_unit != panels[0].s->profile.time_unit)
            return NULL;
    }
    return n > 0 ? zb_time_unit_name(panels[0].s->profile.time_unit) : NULL;
}

char *zb_render_svg(const struct zb_panel *panels, int n, int width)
{
    struct chart c = { .tmax = 0 };
    double height = LEGEND_H + AXIS_H, y = LEGEND_H;
    int max_vpp = 1;
    bool overlap = false;

    for (int k = 0; k < n; k++) {
        const struct zb_panel *pn = &panels[k];
        for (int r = 0; r < pn->s->profile.pp; r++)
            for (int i = 0; i < pn->ranks[r].n; i++) {
                const struct zb_op *op = &pn->ranks[r].ops[i];
                if (zb_op_is_compute(op->kind))
                    c.tmax = fmax(c.tmax, op->end);
                overlap |= op->kind == ZB_OP_FB;
            }
        height += panel_height(pn) + (k ? PANEL_GAP : 0);
        if (pn->s->profile.vpp > max_vpp)
            max_vpp = pn->s->profile.vpp;
    }
    if (c.tmax <= 0)
        c.tmax = 1;
    c.unit = time_unit(panels, n);
    c.plot_w = width - LEFT - RIGHT;
    zbi_sb_init(&c.sb);
    zbi_sb_addf(&c.sb, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
            "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" "
            "height=\"%.0f\" viewBox=\"0 0 %d %.0f\" "
            "font-family=\"DejaVu Sans, Helvetica, Arial, sans-serif\">\n"
            "<rect width=\"100%%\" height=\"100%%\" fill=\"#fff\"/>\n",
            width, height, width, height);
    draw_legend(&c, max_vpp, overlap);
    for (int k = 0; k < n; k++) {
        zbi_sb_addf(&c.sb, "<g class=\"panel\">\n");
        draw_panel(&c, &panels[k], y);
        zbi_sb_addf(&c.sb, "</g>\n");
        y += panel_height(&panels[k]) + PANEL_GAP;
    }
    draw_axis(&c, y - PANEL_GAP + 4);
    zbi_sb_addf(&c.sb, "</svg>\n");
    return zbi_sb_detach(&c.sb);
}
