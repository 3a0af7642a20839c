/* render_frontier.c - the frontier (frontier.h) as an SVG: cost against
 * peak activation memory in units of 1F1B's peak, every point, the Pareto
 * front joined as a step line and labelled, the lower bound dashed. */
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include "strbuf.h"
#include "zbsched/frontier.h"

#define HEIGHT 460
#define LEFT 72
#define RIGHT 24
#define TOP 40
#define BOTTOM 56

struct plot {
    struct strbuf sb;
    double x0, x1, y0, y1;      /* data ranges */
    double w, h;                /* plot area */
};

static double px(const struct plot *pl, double x)
{
    return LEFT + (x - pl->x0) / (pl->x1 - pl->x0) * pl->w;
}

static double py(const struct plot *pl, double y)
{
    return TOP + pl->h - (y - pl->y0) / (pl->y1 - pl->y0) * pl->h;
}

static void ranges(const struct zb_frontier *f, struct plot *pl)
{
    pl->x0 = 0;
    pl->x1 = 0;
    pl->y0 = INFINITY;
    pl->y1 = 0;
    for (int i = 0; i < f->n; i++) {
        pl->x1 = fmax(pl->x1, f->pts[i].peak / f->unit);
        pl->y0 = fmin(pl->y0, f->pts[i].cost);
        pl->y1 = fmax(pl->y1, f->pts[i].cost);
    }
    for (int k = 0; k < f->nb; k++)
        if (isfinite(f->bounds[k].bound)) {
            pl->x1 = fmax(pl->x1, f->bounds[k].limit / f->unit);
            pl->y0 = fmin(pl->y0, f->bounds[k].bound);
        }
    pl->x1 = pl->x1 > 0 ? pl->x1 * 1.08 : 1;
    if (!(pl->y1 > pl->y0))
        pl->y1 = pl->y0 + 1;
    pl->y0 -= 0.05 * (pl->y1 - pl->y0);
    pl->y1 += 0.05 * (pl->y1 - pl->y0);
}

static void axes(struct plot *pl)
{
    zbi_sb_addf(&pl->sb, "<g font-size=\"11\" fill=\"#222\">\n<rect x=\"%d\" "
            "y=\"%d\" width=\"%.1f\" height=\"%.1f\" fill=\"none\" "
            "stroke=\"#999\"/>\n", LEFT, TOP, pl->w, pl->h);
    for (int k = 0; k <= 4; k++) {
        double x = pl->x0 + k * (pl->x1 - pl->x0) / 4;
        double y = pl->y0 + k * (pl->y1 - pl->y0) / 4;
        zbi_sb_addf(&pl->sb, "<text x=\"%.1f\" y=\"%.1f\" "
                "text-anchor=\"middle\">%.3g</text>\n", px(pl, x),
                TOP + pl->h + 16, x);
        zbi_sb_addf(&pl->sb, "<text x=\"%d\" y=\"%.1f\" text-anchor=\"end\">"
                "%.5g</text>\n", LEFT - 6, py(pl, y) + 4, y);
    }
    zbi_sb_addf(&pl->sb, "<text x=\"%.1f\" y=\"%d\" "
            "text-anchor=\"middle\">peak activation memory (1 = 1F1B's "
            "peak)</text>\n<text x=\"14\" "
            "y=\"%.1f\" text-anchor=\"middle\" transform=\"rotate(-90 14 "
            "%.1f)\">cost</text>\n</g>\n", LEFT + pl->w / 2, HEIGHT - 14,
            TOP + pl->h / 2, TOP + pl->h / 2);
}

/* A non-increasing step line through (x, y) pairs in increasing x. The
 * front holds each cost from its point to the next (what that memory
 * buys); the bound holds y[i] on (x[i-1], x[i]] only (a schedule within
 * less than x[i] fits x[i], not x[i-1]). */
static void steps(struct plot *pl, const double *x, const double *y, int n,
                  bool hold_right, const char *style)
{
    if (n == 0)
        return;
    zbi_sb_addf(&pl->sb, "<path fill=\"none\" %s d=\"M%.2f %.2f", style,
            px(pl, x[0]), py(pl, y[0]));
    for (int i = 1; i < n; i++)
        if (hold_right)
            zbi_sb_addf(&pl->sb, " H%.2f V%.2f", px(pl, x[i]), py(pl, y[i]));
        else
            zbi_sb_addf(&pl->sb, " V%.2f H%.2f", py(pl, y[i]), px(pl, x[i]));
    zbi_sb_addf(&pl->sb, " H%.2f\"/>\n", px(pl, pl->x1));
}

char *zb_frontier_svg(const struct zb_frontier *f, int width)
{
    struct plot pl = { .w = width - LEFT - RIGHT, .h = HEIGHT - TOP - BOTTOM };
    double xs[64], ys[64];
    int n = 0;

    ranges(f, &pl);
    zbi_sb_init(&pl.sb);
    zbi_sb_addf(&pl.sb, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<svg "
            "xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" "
            "viewBox=\"0 0 %d %d\" font-family=\"DejaVu Sans, Helvetica, "
            "Arial, sans-serif\">\n<rect width=\"100%%\" height=\"100%%\" "
            "fill=\"#fff\"/>\n<text x=\"%d\" y=\"22\" font-size=\"13\">cost "
            "against peak memory: points, Pareto front (solid), lower bound "
            "(dashed)</text>\n", width, HEIGHT, width, HEIGHT, LEFT);
    axes(&pl);
    for (int k = 0; k < f->nb && n < 64; k++)
        if (isfinite(f->bounds[k].bound)) {
            xs[n] = f->bounds[k].limit / f->unit;
            ys[n++] = f->bounds[k].bound;
        }
    steps(&pl, xs, ys, n, false,
          "stroke=\"#c0392b\" stroke-dasharray=\"5 4\"");
    n = 0;
    for (int i = 0; i < f->n && n < 64; i++)
        if (f->pts[i].front) {
            xs[n] = f->pts[i].peak / f->unit;
            ys[n++] = f->pts[i].cost;
        }
    steps(&pl, xs, ys, n, true, "stroke=\"#2171b5\" stroke-width=\"1.5\"");
    /* Front points last, so none hides under a point off the front. */
    for (int k = 0; k < 2 * f->n; k++) {
        const struct zb_frontier_point *pt = &f->pts[k % f->n];
        double x = px(&pl, pt->peak / f->unit), y = py(&pl, pt->cost);
        if (pt->front != (k >= f->n))
            continue;
        zbi_sb_addf(&pl.sb, "<circle cx=\"%.2f\" cy=\"%.2f\" r=\"%d\" "
                "fill=\"%s\"><title>%s %s vpp %d", x, y, pt->front ? 4 : 3,
                pt->front ? "#2171b5" : "#aaa", pt->name,
                zb_placement_name(pt->placement), pt->vpp);
        if (isfinite(pt->limit))
            zbi_sb_addf(&pl.sb, " limit %.4g", pt->limit);
        zbi_sb_addf(&pl.sb, ": peak %.4g, cost %.6g</title></circle>\n",
                pt->peak, pt->cost);
        if (pt->front)
            zbi_sb_addf(&pl.sb, "<text x=\"%.2f\" y=\"%.2f\" font-size=\"10\" "
                    "fill=\"#2171b5\">%s%s</text>\n", x + 6, y - 6, pt->name,
                    pt->placement == ZB_PLACEMENT_V ? " (v)" : "");
    }
    zbi_sb_addf(&pl.sb, "</svg>\n");
    return zbi_sb_detach(&pl.sb);
}
