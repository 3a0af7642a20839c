/* render_frontier.c - the frontier (frontier.h) as an SVG: cost against
 * peak activation memory in units of 1F1B's peak, every point labelled
 * with its family, placement and vpp, the Pareto front joined as a step
 * line, the lower bound dashed, the profile's limit as a vertical line. */
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "strbuf.h"
#include "zbsched/frontier.h"
#include "zbsched/units.h"
#include "zbsched/xalloc.h"

#define RIGHT 24
#define TOP 40
#define BOTTOM 56
#define TICK_FONT 11

/* Labels: font size and the box a line of n characters takes. The width
 * bounds DejaVu Sans, the first font asked for, on our labels (its
 * lowercase, digits and punctuation are 0.28 to 0.64 em; a line would
 * need to be mostly 'm' and 'w' to average more), so boxes that keep
 * apart keep their text apart. tests/cli/t_frontier.sh and
 * tests/unit/test_render.c check the same boxes. */
#define LABEL_FONT 9
#define CHAR_EM 0.62
#define LINE_H 11
#define PAD 1.5         /* space kept around a label */

/* Plot heights tried in turn until every label finds a place near its
 * point: a taller plot spreads points of close cost apart. */
static const int heights[] = { 460, 620, 820, 1100 };

/* How far from its point a label may go before a taller plot is tried
 * (pixels): further, its leader line is hard to follow. */
#define REACH 300

struct box {
    double x, y, w, h;          /* top left corner, size */
};

/* One label: the points at one (peak, cost), one line per family and
 * placement there. */
struct label {
    char *text;                 /* lines separated by '\n' */
    int lines, width;           /* line count, longest line's characters */
    double peak, cost;
    bool front;
    struct box b;               /* where it went */
    bool placed, leader;        /* leader: far enough to need a line */
};

struct plot {
    struct strbuf sb;
    int width, height, left;
    double x0, x1, y0, y1;      /* data ranges */
    double w, h;                /* plot area */
    double limit, limit_total;  /* activation limit, the total as given
                                   (INFINITY: none) */
    int limit_rank;             /* the rank whose limit is drawn, or -1
                                   when every rank has the same */
    bool gib;                   /* memory in GiB */
    const char *time_unit;      /* NULL: unitless */
};

static double px(const struct plot *pl, double x)
{
    return pl->left + (x - pl->x0) / (pl->x1 - pl->x0) * pl->w;
}

static double py(const struct plot *pl, double y)
{
    return TOP + pl->h - (y - pl->y0) / (pl->y1 - pl->y0) * pl->h;
}

/* 1, 2 or 5 times a power of ten, about n steps over span. */
static double nice_step(double span, int n)
{
    double raw = span / n, mag = pow(10, floor(log10(raw))), f = raw / mag;
    double step = (f < 1.5 ? 1 : f < 3.5 ? 2 : f < 7.5 ? 5 : 10) * mag;

    return step > 0 && isfinite(step) ? step : fmax(span, 1);
}

/* The drawn limit: the least over ranks (a point fits only where every
 * rank's peak is within its limit, and the peak drawn is the largest). */
static void find_limit(const struct zb_profile *p, struct plot *pl)
{
    int least = 0;
    bool differ = false;

    for (int r = 1; r < p->pp; r++) {
        differ |= p->mem_limit[r] != p->mem_limit[0];
        if (p->mem_limit[r] < p->mem_limit[least])
            least = r;
    }
    pl->limit = p->mem_limit[least];
    pl->limit_total = p->mem_total ? p->mem_total[least] : INFINITY;
    pl->limit_rank = differ ? least : -1;
    pl->gib = p->mem_gib;
    pl->time_unit = p->has_time_unit ? zb_time_unit_name(p->time_unit)
                                     : NULL;
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
    if (isfinite(pl->limit))
        pl->x1 = fmax(pl->x1, pl->limit / f->unit);
    pl->x1 = pl->x1 > 0 ? pl->x1 * 1.08 : 1;
    if (!isfinite(pl->y0))
        pl->y0 = 0;
    if (!(pl->y1 > pl->y0))
        pl->y1 = pl->y0 + 1;
    pl->y0 -= 0.05 * (pl->y1 - pl->y0);
    pl->y1 += 0.05 * (pl->y1 - pl->y0);
}

/* The cost ticks' longest text, which sets the left margin. */
static int left_margin(const struct plot *pl)
{
    double step = nice_step(pl->y1 - pl->y0, 5);
    int chars = 1;
    char buf[48];

    for (double y = ceil(pl->y0 / step) * step; y <= pl->y1; y += step) {
        int n = snprintf(buf, sizeof(buf), "%.10g", y);
        chars = n > chars ? n : chars;
    }
    return 34 + (int)ceil(chars * CHAR_EM * TICK_FONT);
}

static void axes(struct plot *pl, const struct zb_frontier *f)
{
    double xs = nice_step(pl->x1 - pl->x0, 8);
    double ys = nice_step(pl->y1 - pl->y0, 5);
    char size[32];

    zbi_sb_addf(&pl->sb, "<g font-size=\"%d\" fill=\"#222\">\n<rect x=\"%d\" "
            "y=\"%d\" width=\"%.1f\" height=\"%.1f\" fill=\"none\" "
            "stroke=\"#999\"/>\n", TICK_FONT, pl->left, TOP, pl->w, pl->h);
    for (int k = 0; k * xs <= pl->x1 * (1 + 1e-9); k++)
        zbi_sb_addf(&pl->sb, "<text x=\"%.1f\" y=\"%.1f\" "
                "text-anchor=\"middle\">%.10g</text>\n", px(pl, k * xs),
                TOP + pl->h + 16, k * xs);
    for (double y = ceil(pl->y0 / ys) * ys; y <= pl->y1; y += ys)
        zbi_sb_addf(&pl->sb, "<text x=\"%d\" y=\"%.1f\" text-anchor=\"end\">"
                "%.10g</text>\n<line x1=\"%d\" y1=\"%.2f\" x2=\"%.2f\" "
                "y2=\"%.2f\" stroke=\"#000\" stroke-opacity=\"0.06\"/>\n",
                pl->left - 6, py(pl, y) + 4, fabs(y) < ys * 1e-9 ? 0 : y,
                pl->left, py(pl, y), pl->left + pl->w, py(pl, y));
    zbi_sb_addf(&pl->sb, "<text x=\"%.1f\" y=\"%d\" text-anchor=\"middle\">"
            "peak activation memory (1 = 1F1B's peak", pl->left + pl->w / 2,
            TOP + (int)pl->h + BOTTOM - 14);
    if (pl->gib)
        zbi_sb_addf(&pl->sb, ", %s",
                    zb_units_format_size(f->unit * (1 << 30), size,
                                         sizeof(size)));
    zbi_sb_addf(&pl->sb, ")</text>\n<text x=\"14\" y=\"%.1f\" "
            "text-anchor=\"middle\" transform=\"rotate(-90 14 %.1f)\">cost",
            TOP + pl->h / 2, TOP + pl->h / 2);
    if (pl->time_unit)
        zbi_sb_addf(&pl->sb, " (%s)", pl->time_unit);
    zbi_sb_addf(&pl->sb, "</text>\n</g>\n");
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

/* ---- Labels ---------------------------------------------------------- */

static bool same_point(const struct zb_frontier_point *a,
                       const struct zb_frontier_point *b)
{
    return a->peak == b->peak && a->cost == b->cost;
}

static bool same_line(const struct zb_frontier_point *a,
                      const struct zb_frontier_point *b)
{
    return same_point(a, b) && a->placement == b->placement &&
           !strcmp(a->name, b->name);
}

/* One label line: point j's family and placement with the vpps of every
 * point at its place in that family and placement, each once (zb meets
 * one at several limits), in increasing order; marks them done. */
static void add_line(struct strbuf *sb, struct label *lb,
                     const struct zb_frontier *f, int j, bool *done)
{
    const struct zb_frontier_point *a = &f->pts[j];
    size_t start = sb->len;
    int last = 0;

    zbi_sb_addf(sb, "%s%s (%s, vpp ", lb->lines ? "\n" : "", a->name,
                zb_placement_name(a->placement));
    for (;;) {
        int next = -1;
        for (int k = j; k < f->n; k++)
            if (same_line(&f->pts[k], a) && f->pts[k].vpp > last &&
                (next < 0 || f->pts[k].vpp < f->pts[next].vpp))
                next = k;
        if (next < 0)
            break;
        zbi_sb_addf(sb, "%s%d", last ? "," : "", f->pts[next].vpp);
        last = f->pts[next].vpp;
    }
    zbi_sb_addf(sb, ")");
    for (int k = j; k < f->n; k++)
        if (same_line(&f->pts[k], a)) {
            done[k] = true;
            lb->front |= f->pts[k].front;
        }
    int chars = (int)(sb->len - start) - (lb->lines ? 1 : 0);
    lb->width = chars > lb->width ? chars : lb->width;
    lb->lines++;
}

/* The points at one place make one label: a line per family and
 * placement there ("zb (loop, vpp 1,2,4)"), in the frontier's order. */
static struct label *make_labels(const struct zb_frontier *f, int *out_n)
{
    struct label *l = zb_xcalloc((size_t)f->n + 1, sizeof(*l));
    bool *done = zb_xcalloc((size_t)f->n + 1, sizeof(bool));
    int n = 0;

    for (int i = 0; i < f->n; i++) {
        struct strbuf sb;
        if (done[i])
            continue;
        zbi_sb_init(&sb);
        l[n] = (struct label){ .peak = f->pts[i].peak,
                               .cost = f->pts[i].cost };
        for (int j = i; j < f->n; j++)
            if (!done[j] && same_point(&f->pts[j], &f->pts[i]))
                add_line(&sb, &l[n], f, j, done);
        l[n++].text = zbi_sb_detach(&sb);
    }
    free(done);
    *out_n = n;
    return l;
}

static bool overlap(struct box a, struct box b)
{
    return a.x < b.x + b.w + PAD && b.x < a.x + a.w + PAD &&
           a.y < b.y + b.h + PAD && b.y < a.y + a.h + PAD;
}

/* Whether the segment (x0, y0)-(x1, y1) crosses box b (Liang-Barsky). */
static bool crosses(struct box b, double x0, double y0, double x1,
                    double y1)
{
    double t0 = 0, t1 = 1, d[2] = { x1 - x0, y1 - y0 };
    double lo[2] = { b.x - x0, b.y - y0 }, hi[2] = { b.x + b.w - x0,
                                                     b.y + b.h - y0 };

    for (int k = 0; k < 2; k++) {
        if (d[k] == 0) {
            if (lo[k] > 0 || hi[k] < 0)
                return false;
            continue;
        }
        double a = lo[k] / d[k], c = hi[k] / d[k];
        if (a > c) {
            double t = a;
            a = c;
            c = t;
        }
        t0 = fmax(t0, a);
        t1 = fmin(t1, c);
        if (t0 > t1)
            return false;
    }
    return true;
}

/* The point of b nearest (x, y): where a leader line ends. */
static void nearest(struct box b, double x, double y, double *ox, double *oy)
{
    *ox = fmin(fmax(x, b.x), b.x + b.w);
    *oy = fmin(fmax(y, b.y), b.y + b.h);
}

struct layout {
    const struct plot *pl;
    struct label *l;
    int n;
    struct box *dots;           /* every point's marker */
    int ndots;
    struct box fixed;           /* the limit's label (w 0: none) */
};

/* Whether box b may hold a label: inside the plot, clear of every
 * marker, the limit's label and each label placed. */
static bool free_at(const struct layout *L, struct box b)
{
    const struct plot *pl = L->pl;

    if (b.x < pl->left + PAD || b.y < TOP + PAD ||
        b.x + b.w > pl->left + pl->w - PAD || b.y + b.h > TOP + pl->h - PAD)
        return false;
    if (L->fixed.w > 0 && overlap(b, L->fixed))
        return false;
    for (int k = 0; k < L->ndots; k++)
        if (overlap(b, L->dots[k]))
            return false;
    for (int k = 0; k < L->n; k++)
        if (L->l[k].placed && overlap(b, L->l[k].b))
            return false;
    return true;
}

/* Label i's point in pixels. */
static void anchor(const struct layout *L, const struct zb_frontier *f,
                   int i, double *x, double *y)
{
    *x = px(L->pl, L->l[i].peak / f->unit);
    *y = py(L->pl, L->l[i].cost);
}

/* Whether segments ab and cd cross (their inner points). */
static bool segments_cross(double ax, double ay, double bx, double by,
                           double cx, double cy, double dx, double dy)
{
    double d1 = (dx - cx) * (ay - cy) - (dy - cy) * (ax - cx);
    double d2 = (dx - cx) * (by - cy) - (dy - cy) * (bx - cx);
    double d3 = (bx - ax) * (cy - ay) - (by - ay) * (cx - ax);
    double d4 = (bx - ax) * (dy - ay) - (by - ay) * (dx - ax);

    return d1 * d2 < 0 && d3 * d4 < 0;
}

/* A leader from label i's point (x, y) to b crossing no placed label
 * and no other leader. */
static bool leader_clear(const struct layout *L, const struct zb_frontier *f,
                         int i, struct box b, double x, double y)
{
    double lx, ly;

    nearest(b, x, y, &lx, &ly);
    for (int k = 0; k < L->n; k++) {
        const struct label *o = &L->l[k];
        double ox, oy, ex, ey;
        if (k == i || !o->placed)
            continue;
        if (crosses(o->b, x, y, lx, ly))
            return false;
        if (!o->leader)
            continue;
        anchor(L, f, k, &ox, &oy);
        nearest(o->b, ox, oy, &ex, &ey);
        if (segments_cross(x, y, lx, ly, ox, oy, ex, ey))
            return false;
    }
    return true;
}

/* Rings of growing radius around the point (x, y), directions in order
 * of preference (right, the diagonals, left, above, below), the first
 * free place whose leader crosses nothing kept; then the nearest free
 * place of the plot on a 4 px grid within reach pixels, whose leader may
 * cross (in a crowd every way out does; labels keep a white halo). A
 * label beyond the first rings gets a leader line. */
static bool place(struct layout *L, const struct zb_frontier *f, int i,
                  double x, double y, double reach)
{
    static const double radius[] = { 3, 8, 14, 22, 32, 45, 60, 80, 105,
                                     135, 170 };
    static const double angle[] = { 0, -30, 30, 180, -150, 150, -60, 60,
                                    -120, 120, -90, 90 };
    const double pi = 3.14159265358979323846;
    const struct plot *pl = L->pl;
    struct label *lb = &L->l[i];
    double w = lb->width * CHAR_EM * LABEL_FONT, h = lb->lines * LINE_H;
    double best = INFINITY;

    for (size_t r = 0; r < sizeof(radius) / sizeof(radius[0]); r++)
        for (size_t a = 0; a < sizeof(angle) / sizeof(angle[0]); a++) {
            double c = cos(angle[a] * pi / 180), s = sin(angle[a] * pi / 180);
            double ax = x + (radius[r] + 4) * c, ay = y + (radius[r] + 4) * s;
            struct box b = { c > 0.3 ? ax : c < -0.3 ? ax - w : ax - w / 2,
                             s > 0.3 ? ay : s < -0.3 ? ay - h : ay - h / 2,
                             w, h };
            if (free_at(L, b) &&
                (radius[r] < 10 || leader_clear(L, f, i, b, x, y))) {
                lb->b = b;
                lb->leader = radius[r] >= 10;
                return lb->placed = true;
            }
        }
    for (double by = TOP + 2 * PAD; by + h <= TOP + pl->h - PAD; by += 4)
        for (double bx = pl->left + 2 * PAD;
             bx + w <= pl->left + pl->w - PAD; bx += 4) {
            struct box b = { bx, by, w, h };
            double lx, ly, d;
            nearest(b, x, y, &lx, &ly);
            d = hypot(lx - x, ly - y);
            if (d < best && d <= reach && free_at(L, b)) {
                best = d;
                lb->b = b;
            }
        }
    lb->leader = lb->placed = isfinite(best);
    return lb->placed;
}

/* Every label at the plot's present height: front labels first (they
 * are what the plot is for), then the rest in the frontier's order (by
 * memory). False when one found no place. */
static bool place_all(struct layout *L, const struct zb_frontier *f,
                      double reach)
{
    bool all = true;

    for (int i = 0; i < L->n; i++)
        L->l[i].placed = false;
    for (int k = 0; k < L->ndots; k++) {
        double x, y;
        anchor(L, f, k, &x, &y);
        L->dots[k] = (struct box){ x - 4, y - 4, 8, 8 };
    }
    for (int pass = 0; pass < 2; pass++)
        for (int i = 0; i < L->n; i++) {
            double x, y;
            if (L->l[i].front != (pass == 0))
                continue;
            anchor(L, f, i, &x, &y);
            all &= place(L, f, i, x, y, reach);
        }
    return all;
}

/* The limit's label into text, and the box it takes at the top of the
 * plot, beside the limit's line on the side with room (w 0: no limit). */
static struct box limit_label(const struct plot *pl,
                              const struct zb_frontier *f, char *text,
                              size_t size)
{
    char a[32], b[32];
    double x, w;
    int n;

    if (!isfinite(pl->limit) || !(f->unit > 0))
        return (struct box){ 0, 0, 0, 0 };
    if (isfinite(pl->limit_total))
        n = snprintf(text, size, "limit %s (activations %s)",
                     zb_units_format_size(pl->limit_total * (1 << 30), a,
                                          sizeof(a)),
                     zb_units_format_size(pl->limit * (1 << 30), b,
                                          sizeof(b)));
    else if (pl->gib)
        n = snprintf(text, size, "limit %s",
                     zb_units_format_size(pl->limit * (1 << 30), a,
                                          sizeof(a)));
    else
        n = snprintf(text, size, "limit %.6g (%.3gx 1F1B)", pl->limit,
                     pl->limit / f->unit);
    if (pl->limit_rank >= 0 && n < (int)size)
        n += snprintf(text + n, size - (size_t)n, ", rank %d's",
                      pl->limit_rank);
    n = n < (int)size ? n : (int)size - 1;
    x = px(pl, pl->limit / f->unit);
    w = n * CHAR_EM * LABEL_FONT;
    x = x + 4 + w <= pl->left + pl->w - PAD ? x + 4 : x - 4 - w;
    return (struct box){ fmax(x, pl->left + PAD), TOP + 3, w, LINE_H };
}

/* The limit: a vertical dotted line, labelled with its value. */
static void draw_limit(struct plot *pl, const struct zb_frontier *f)
{
    char text[160];
    struct box b = limit_label(pl, f, text, sizeof(text));
    double x = px(pl, pl->limit / f->unit);

    if (b.w == 0)
        return;
    zbi_sb_addf(&pl->sb, "<line class=\"limit\" x1=\"%.2f\" y1=\"%d\" "
            "x2=\"%.2f\" y2=\"%.1f\" stroke=\"#c0392b\" stroke-width=\"1.2\" "
            "stroke-dasharray=\"2 3\"/>\n<text class=\"label limit\" "
            "x=\"%.2f\" y=\"%.2f\" font-size=\"%d\" fill=\"#c0392b\">",
            x, TOP, x, TOP + pl->h, b.x, b.y + LINE_H - 2.5, LABEL_FONT);
    zbi_sb_add_xml(&pl->sb, text);
    zbi_sb_addf(&pl->sb, "</text>\n");
}

static void draw_labels(struct plot *pl, const struct zb_frontier *f,
                        const struct layout *L)
{
    /* Leaders first, so text covers them. */
    for (int i = 0; i < L->n; i++) {
        const struct label *lb = &L->l[i];
        double x, y, lx, ly;

        if (!lb->leader)
            continue;
        anchor(L, f, i, &x, &y);
        nearest(lb->b, x, y, &lx, &ly);
        zbi_sb_addf(&pl->sb, "<line class=\"leader\" x1=\"%.2f\" "
                "y1=\"%.2f\" x2=\"%.2f\" y2=\"%.2f\" stroke=\"%s\" "
                "stroke-width=\"0.6\"/>\n", x, y, lx, ly,
                lb->front ? "#2171b5" : "#999");
    }
    for (int i = 0; i < L->n; i++) {
        const struct label *lb = &L->l[i];
        const char *colour = lb->front ? "#2171b5" : "#666";
        const char *line = lb->text;

        for (int k = 0; k < lb->lines; k++) {
            size_t len = strcspn(line, "\n");
            char buf[256];
            snprintf(buf, sizeof(buf), "%.*s", (int)len, line);
            zbi_sb_addf(&pl->sb, "<text class=\"label\" x=\"%.2f\" "
                    "y=\"%.2f\" font-size=\"%d\" fill=\"%s\" stroke=\"#fff\" "
                    "stroke-width=\"2.5\" paint-order=\"stroke\">", lb->b.x,
                    lb->b.y + (k + 1) * LINE_H - 2.5, LABEL_FONT, colour);
            zbi_sb_add_xml(&pl->sb, buf);
            zbi_sb_addf(&pl->sb, "</text>\n");
            line += len + (line[len] == '\n');
        }
    }
}

static void draw_points(struct plot *pl, const struct zb_frontier *f)
{
    /* Front points last, so none hides under a point off the front. */
    for (int k = 0; k < 2 * f->n; k++) {
        const struct zb_frontier_point *pt = &f->pts[k % f->n];
        if (pt->front != (k >= f->n))
            continue;
        zbi_sb_addf(&pl->sb, "<circle class=\"point\" cx=\"%.2f\" "
                "cy=\"%.2f\" r=\"%d\" fill=\"%s\"><title>%s %s vpp %d",
                px(pl, pt->peak / f->unit), py(pl, pt->cost),
                pt->front ? 4 : 3, pt->front ? "#2171b5" : "#aaa", pt->name,
                zb_placement_name(pt->placement), pt->vpp);
        if (isfinite(pt->limit))
            zbi_sb_addf(&pl->sb, " limit %.4g", pt->limit);
        zbi_sb_addf(&pl->sb, ": peak %.4g, cost %.6g", pt->peak, pt->cost);
        if (pl->time_unit)
            zbi_sb_addf(&pl->sb, " %s", pl->time_unit);
        zbi_sb_addf(&pl->sb, "</title></circle>\n");
    }
}

char *zb_frontier_svg(const struct zb_frontier *f,
                      const struct zb_profile *p, int width)
{
    struct plot pl = { .width = width };
    struct layout L = { .pl = &pl };
    size_t nh = sizeof(heights) / sizeof(heights[0]);
    double xs[64], ys[64];
    char text[160];
    int n = 0;

    find_limit(p, &pl);
    ranges(f, &pl);
    pl.left = left_margin(&pl);
    pl.w = width - pl.left - RIGHT;
    L.l = make_labels(f, &L.n);
    /* A marker per label: the points at one place share both. */
    L.dots = zb_xcalloc((size_t)L.n + 1, sizeof(*L.dots));
    L.ndots = L.n;
    for (size_t k = 0; k < nh; k++) {
        pl.height = heights[k];
        pl.h = pl.height - TOP - BOTTOM;
        L.fixed = limit_label(&pl, f, text, sizeof(text));
        if (place_all(&L, f, k + 1 == nh ? INFINITY : REACH))
            break;
    }
    /* What found no place even then goes under the plot, one label a
     * row, each joined to its point. */
    for (int i = 0; i < L.n; i++)
        if (!L.l[i].placed) {
            L.l[i].b = (struct box){ pl.left, pl.height - 4,
                                     L.l[i].width * CHAR_EM * LABEL_FONT,
                                     L.l[i].lines * LINE_H };
            L.l[i].placed = L.l[i].leader = true;
            pl.height += L.l[i].lines * LINE_H + 4;
        }
    zbi_sb_init(&pl.sb);
    zbi_sb_addf(&pl.sb, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<svg "
            "xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" "
            "viewBox=\"0 0 %d %d\" font-family=\"DejaVu Sans, Helvetica, "
            "Arial, sans-serif\">\n<rect width=\"100%%\" height=\"100%%\" "
            "fill=\"#fff\"/>\n<text x=\"%d\" y=\"22\" font-size=\"13\">cost "
            "against peak memory: points, Pareto front (solid), lower bound "
            "(dashed)%s</text>\n", width, pl.height, width, pl.height,
            pl.left, isfinite(pl.limit) ? ", limit (red)" : "");
    axes(&pl, f);
    draw_limit(&pl, f);
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
    draw_points(&pl, f);
    draw_labels(&pl, f, &L);
    zbi_sb_addf(&pl.sb, "</svg>\n");
    for (int i = 0; i < L.n; i++)
        free(L.l[i].text);
    free(L.l);
    free(L.dots);
    return zbi_sb_detach(&pl.sb);
}
