/* render_ascii.c - a schedule as text: one line per rank, time scaled to
 * the given width, a letter per pass kind (docs/guide.md shows one). */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "strbuf.h"
#include "zbsched/render.h"
#include "zbsched/units.h"
#include "zbsched/xalloc.h"

/* Even chunks upper case, odd chunks lower case, so that neighbouring
 * chunks of an interleaved or V schedule tell apart. */
static char op_letter(const struct zb_profile *p, const struct zb_op *op)
{
    static const char letters[] = { [ZB_OP_F] = 'F', [ZB_OP_B] = 'B',
                                    [ZB_OP_W] = 'W', [ZB_OP_BW] = 'X',
                                    [ZB_OP_FB] = 'O' };
    char c = letters[op->kind];

    return zb_profile_stage_chunk(p, op->stage) % 2 ? (char)(c - 'A' + 'a')
                                                    : c;
}

/* Append at most `room` bytes of a formatted line, then a newline. */
static void add_line(struct strbuf *sb, int room, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void add_line(struct strbuf *sb, int room, const char *fmt, ...)
{
    va_list ap;
    char *text;
    int len;

    va_start(ap, fmt);
    len = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    text = zb_xmalloc((size_t)len + 1);
    va_start(ap, fmt);
    vsnprintf(text, (size_t)len + 1, fmt, ap);
    va_end(ap);
    zbi_sb_addf(sb, "%.*s\n", room, text);
    free(text);
}

/* text as lines of at most room columns, broken at spaces (a word longer
 * than room is cut): the legend must stay whole at any width. */
static void add_wrapped(struct strbuf *sb, int room, const char *text)
{
    while (*text) {
        int len = (int)strlen(text), cut = len;
        if (len > room) {
            cut = room;
            while (cut > 0 && text[cut] != ' ')
                cut--;
            if (cut == 0)
                cut = room;
        }
        zbi_sb_addf(sb, "%.*s\n", cut, text);
        text += cut;
        while (*text == ' ')
            text++;
    }
}

struct cell {
    double busy;    /* time covered by any op */
    double best;    /* largest cover by one op */
    int op;         /* that op's index, -1 if none */
};

/* Each column shows the op covering most of it, or '.' when idle time
 * covers more than that op does: short passes stay visible, gaps too. */
static void fill_cells(const struct zb_op_list *l, double dt, int cols,
                       struct cell *cells)
{
    for (int c = 0; c < cols; c++)
        cells[c] = (struct cell){ 0, 0, -1 };
    for (int i = 0; i < l->n; i++) {
        const struct zb_op *op = &l->ops[i];
        int c0, c1;
        if (!zb_op_is_compute(op->kind) || op->end <= op->start)
            continue;
        c0 = (int)floor(op->start / dt);
        c1 = (int)ceil(op->end / dt) - 1;
        for (int c = c0 < 0 ? 0 : c0; c <= c1 && c < cols; c++) {
            double ov = fmin(op->end, (c + 1) * dt) - fmax(op->start, c * dt);
            cells[c].busy += ov;
            if (ov > cells[c].best) {
                cells[c].best = ov;
                cells[c].op = i;
            }
        }
    }
}

static void draw_row(const struct zb_profile *p, const struct zb_op_list *l,
                     const struct cell *cells, int cols, double dt,
                     char *line)
{
    for (int c = 0; c < cols;) {
        int i = cells[c].op, run = 1;
        char digits[16];
        int nd;

        if (i < 0 || cells[c].best < dt - cells[c].busy) {
            line[c++] = '.';
            continue;
        }
        while (c + run < cols && cells[c + run].op == i &&
               cells[c + run].best >= dt - cells[c + run].busy)
            run++;
        /* The microbatch number after the letter where the run has room. */
        nd = snprintf(digits, sizeof(digits), "%d", l->ops[i].mb);
        for (int k = 0; k < run; k++)
            line[c + k] = k >= 1 && k <= nd && run > nd ? digits[k - 1]
                                                        : op_letter(p,
                                                              &l->ops[i]);
        c += run;
    }
    line[cols] = '\0';
}

static double panel_end(const struct zb_panel *pn)
{
    double end = 0;

    for (int r = 0; r < pn->s->profile.pp; r++)
        for (int i = 0; i < pn->ranks[r].n; i++)
            if (zb_op_is_compute(pn->ranks[r].ops[i].kind))
                end = fmax(end, pn->ranks[r].ops[i].end);
    return end;
}

char *zb_render_ascii(const struct zb_panel *panels, int n, int width)
{
    struct strbuf sb;
    double tmax = 0, dt;
    int label_w = 1, cols;
    const char *unit = NULL;
    char *line;
    struct cell *cells;

    /* "r12 |" before and "| busy 100.0% peak 1.234e+06" after a row. */
    for (int k = 0; k < n; k++) {
        int digits = snprintf(NULL, 0, "%d", panels[k].s->profile.pp - 1);
        tmax = fmax(tmax, panel_end(&panels[k]));
        if (digits > label_w)
            label_w = digits;
    }
    if (tmax <= 0)
        tmax = 1;
    /* The time unit every panel names, else none said. */
    for (int k = 0; k < n; k++) {
        const struct zb_profile *p = &panels[k].s->profile;
        if (!p->has_time_unit ||
            p->time_unit != panels[0].s->profile.time_unit) {
            unit = NULL;
            break;
        }
        unit = zb_time_unit_name(p->time_unit);
    }
    cols = width - (label_w + 3) - 28;
    if (cols < 8)
        cols = 8;
    dt = tmax / cols;
    cells = zb_xmalloc((size_t)cols * sizeof(*cells));
    line = zb_xmalloc((size_t)cols + 1);
    zbi_sb_init(&sb);
    for (int k = 0; k < n; k++) {
        const struct zb_panel *pn = &panels[k];
        const struct zb_profile *p = &pn->s->profile;
        double peak = 0;
        struct strbuf label;    /* a file name: control characters seen */

        zbi_sb_init(&label);
        if (pn->label)
            zbi_sb_add_visible(&label, pn->label);
        for (int r = 0; r < p->pp; r++)
            peak = fmax(peak, pn->m->ranks[r].peak_memory);
        add_line(&sb, width, "%s%s%s%s: p %d, vpp %d, m %d, cost %.6g, "
                 "bubble_ratio %.4f, peak memory %.6g", pn->s->name,
                 pn->label ? " (" : "", label.buf, pn->label ? ")" : "",
                 p->pp, p->vpp, p->microbatches, pn->m->cost,
                 pn->m->bubble_ratio, peak);
        zbi_sb_release(&label);
        for (int r = 0; r < p->pp; r++) {
            const struct zb_rank_measures *rm = &pn->m->ranks[r];
            fill_cells(&pn->ranks[r], dt, cols, cells);
            draw_row(p, &pn->ranks[r], cells, cols, dt, line);
            add_line(&sb, width, "r%-*d |%s| busy %.1f%% peak %.4g",
                     label_w, r, line,
                     pn->m->cost > 0 ? 100 * rm->busy / pn->m->cost : 0,
                     rm->peak_memory);
        }
    }
    add_line(&sb, width, "%*s0%*.6g%s%s", label_w + 3, "", cols - 1, tmax,
             unit ? " " : "", unit ? unit : "");
    char legend[256];
    snprintf(legend, sizeof(legend), "F forward, B input grad, W weight "
             "grad, X fused B+W, O overlapped F+B, lower case: odd chunk (of "
             "the F in O), . idle; 1 column = %.4g%s%s", dt,
             unit ? " " : "", unit ? unit : "");
    add_wrapped(&sb, width, legend);
    free(cells);
    free(line);
    return zbi_sb_detach(&sb);
}
