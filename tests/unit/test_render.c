/* test_render.c - SVG and terminal pictures drawn to real durations (axes
 * in the profile's time unit), the frontier plot's labels and limit, the
 * predicted trace read back as a timeline (DP collectives drawn), and
 * zbexec traces and reports. (tests/cli/t_render.sh and t_frontier.sh
 * check the SVGs with xmllint and rsvg-convert.) */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "helpers.h"
#include "zbsched/frontier.h"
#include "zbsched/render.h"
#include "zbsched/timeline.h"
#include "zbsched/trace.h"

static int count(const char *text, const char *needle)
{
    int n = 0;

    for (const char *p = strstr(text, needle); p;
         p = strstr(p + 1, needle))
        n++;
    return n;
}

static int compute_ops(const struct zb_schedule *s)
{
    int n = 0;

    for (int r = 0; r < s->profile.pp; r++)
        for (int i = 0; i < s->ranks[r].n; i++)
            n += zb_op_is_compute(s->ranks[r].ops[i].kind);
    return n;
}

static struct zb_panel panel_of(const struct zb_schedule *s)
{
    return (struct zb_panel){ NULL, s, s->ranks, &s->predicted };
}

/* One schedule's SVG, width pixels wide (the caller frees it). */
static char *svg_of(const struct zb_schedule *s, int width)
{
    struct zb_panel pn = panel_of(s);

    return zb_render_svg(&pn, 1, width);
}

static void generate(const char *name, const struct shape *sh,
                     struct zb_schedule *s)
{
    struct zb_profile p;

    make_profile(sh, &p);
    gen(name, &p, s);
    zb_profile_release(&p);
}

Test(render, svg_draws_one_box_per_compute_op)
{
    struct shape sh = unit_shape(4, 8);
    struct zb_schedule s;
    char *svg;

    generate("zb-h1", &sh, &s);
    svg = svg_of(&s, 1200);
    cr_assert_eq(count(svg, "<rect class=\"op\""), compute_ops(&s));
    cr_assert_eq(count(svg, "<g class=\"rank\">"), 4);
    cr_assert_not_null(strstr(svg, "</svg>"));
    free(svg);
    zb_schedule_release(&s);
}

/* Boxes are as wide as their pass is long: width / duration is one scale
 * for F, B and W alike, with unequal pass times. */
Test(render, svg_box_widths_follow_durations)
{
    struct shape sh = unit_shape(2, 3);
    struct zb_schedule s;
    double scale = 0;
    int boxes = 0;
    char *svg;

    sh.f = 1.5;
    sh.b = 3;
    sh.w = 0.5;
    generate("zb-h1", &sh, &s);
    svg = svg_of(&s, 1000);
    for (const char *p = strstr(svg, "<rect class=\"op\""); p;
         p = strstr(p + 1, "<rect class=\"op\"")) {
        double x, y, w, start, end;
        const char *title = strstr(p, "<title>");
        cr_assert_eq(sscanf(p, "<rect class=\"op\" x=\"%lf\" y=\"%lf\" "
                            "width=\"%lf\"", &x, &y, &w), 3);
        cr_assert_eq(sscanf(strchr(title, ':'), ": %lf to %lf", &start,
                            &end), 2);
        if (scale == 0)
            scale = w / (end - start);
        cr_assert(fabs(w - scale * (end - start)) < 0.02, "box %d", boxes);
        boxes++;
    }
    cr_assert_eq(boxes, compute_ops(&s));
    free(svg);
    zb_schedule_release(&s);
}

Test(render, svg_draws_the_limit_only_where_there_is_one)
{
    struct shape sh = unit_shape(4, 8);
    struct zb_schedule s;
    char *svg;

    generate("1f1b", &sh, &s);
    svg = svg_of(&s, 800);
    cr_assert_eq(count(svg, "class=\"limit\""), 0);
    cr_assert_eq(count(svg, "class=\"memory\""), 4);
    free(svg);
    zb_schedule_release(&s);

    sh.limit = 4;
    generate("1f1b", &sh, &s);
    svg = svg_of(&s, 800);
    cr_assert_eq(count(svg, "class=\"limit\""), 4);
    cr_assert_not_null(strstr(svg, "peak 4 / limit 4"));
    free(svg);
    zb_schedule_release(&s);
}

/* The axis, header and hover text say the profile's time unit, and only
 * where every panel names the same one. */
Test(render, svg_axis_in_the_profiles_time_unit)
{
    struct shape sh = unit_shape(4, 8);
    struct zb_schedule s, t;
    struct zb_panel pn[2];
    char *svg;

    generate("zb-h1", &sh, &s);
    svg = svg_of(&s, 800);
    cr_assert_not_null(strstr(svg, ">time (profile units)</text>"));
    free(svg);
    generate("1f1b", &sh, &t);
    s.profile.has_time_unit = true;
    s.profile.time_unit = ZB_TIME_US;
    svg = svg_of(&s, 800);
    cr_assert_not_null(strstr(svg, ">time (us)</text>"));
    cr_assert_not_null(strstr(svg, "cost 27 us, bubble_ratio"));
    cr_assert_not_null(strstr(svg, ": 0 to 1 us</title>"));
    free(svg);
    pn[0] = panel_of(&s);
    pn[1] = panel_of(&t);
    svg = zb_render_svg(pn, 2, 800);
    cr_assert_not_null(strstr(svg, ">time (profile units)</text>"),
                       "one panel names no unit");
    free(svg);
    zb_schedule_release(&s);
    zb_schedule_release(&t);
}

/* A label line's box as render_frontier.c sizes it: 0.62 em a character,
 * 11 px high, the baseline 8.5 px below the top. */
struct label_box {
    double x0, y0, x1, y1;
    char text[96];
};

static int label_boxes(const char *svg, struct label_box *out, int max)
{
    int n = 0;

    for (const char *p = strstr(svg, "<text class=\"label"); p && n < max;
         p = strstr(p + 1, "<text class=\"label")) {
        double x, y, size;
        const char *gt = strchr(p, '>'), *lt = strchr(gt, '<');
        struct label_box *b = &out[n++];
        cr_assert_eq(sscanf(strstr(p, " x=\""), " x=\"%lf\" y=\"%lf\" "
                            "font-size=\"%lf\"", &x, &y, &size), 3);
        snprintf(b->text, sizeof(b->text), "%.*s", (int)(lt - gt - 1),
                 gt + 1);
        b->x0 = x;
        b->x1 = x + 0.62 * size * (double)strlen(b->text);
        b->y0 = y - 8.5;
        b->y1 = y + 2.5;
    }
    return n;
}

/* A crowd of 36 points within a few pixels (and two far away): every
 * point still gets its own label, inside the picture and clear of every
 * other, and the limit is a labelled vertical line. */
Test(render, frontier_labels_every_point_apart_and_inside)
{
    static const char *const names[] = { "zb", "zb-h1", "interleaved-zb",
                                         "v-half" };
    struct zb_frontier_point pts[38];
    struct zb_frontier f = { .pts = pts, .n = 38, .unit = 4 };
    struct shape sh = unit_shape(4, 8);
    struct label_box box[64];
    struct zb_profile p;
    double w, h;
    char *svg, want[96];
    int n;

    for (int i = 0; i < 36; i++) {
        pts[i] = (struct zb_frontier_point){
            .placement = i % 2 ? ZB_PLACEMENT_V : ZB_PLACEMENT_LOOP,
            .vpp = 1 + i % 3, .limit = INFINITY, .peak = 4 + 0.02 * (i % 6),
            .cost = 30 + 0.1 * (i / 6), .front = i % 7 == 0 };
        snprintf(pts[i].name, sizeof(pts[i].name), "%s", names[i % 4]);
    }
    pts[36] = (struct zb_frontier_point){ "zb", ZB_PLACEMENT_LOOP, 1,
                                          1.5, 1.5, 60, 0.5, true };
    pts[37] = (struct zb_frontier_point){ "gpipe", ZB_PLACEMENT_LOOP, 1,
                                          INFINITY, 32, 31, 0.2, false };
    sh.limit = 6;
    make_profile(&sh, &p);
    svg = zb_frontier_svg(&f, &p, 900);
    cr_assert_eq(sscanf(strstr(svg, "viewBox=\""), "viewBox=\"0 0 %lf %lf\"",
                        &w, &h), 2);
    n = label_boxes(svg, box, 64);
    cr_assert_eq(n, 38 + 1, "a line per point and the limit's, got %d", n);
    for (int i = 0; i < n; i++) {
        cr_assert(box[i].x0 >= 0 && box[i].y0 >= 0 && box[i].x1 <= w &&
                  box[i].y1 <= h, "'%s' outside the picture", box[i].text);
        for (int j = 0; j < i; j++)
            cr_assert(box[i].x1 <= box[j].x0 || box[j].x1 <= box[i].x0 ||
                      box[i].y1 <= box[j].y0 || box[j].y1 <= box[i].y0,
                      "'%s' overlaps '%s'", box[i].text, box[j].text);
    }
    for (int i = 0; i < 38; i++) {
        snprintf(want, sizeof(want), ">%.40s (%s, vpp %d)</text>", pts[i].name,
                 zb_placement_name(pts[i].placement), pts[i].vpp);
        cr_assert_not_null(strstr(svg, want), "no label %s", want);
    }
    cr_assert_eq(count(svg, "<line class=\"limit\""), 1);
    cr_assert_not_null(strstr(svg, ">limit 6 (1.5x 1F1B)</text>"));
    free(svg);
    zb_profile_release(&p);
}

/* Points at one place share a label, each vpp once and in order. */
Test(render, frontier_merges_points_at_one_place)
{
    struct zb_frontier_point pts[4] = {
        { "zb", ZB_PLACEMENT_LOOP, 4, 8, 8, 96, 0, true },
        { "zb", ZB_PLACEMENT_LOOP, 2, 8, 8, 96, 0, false },
        { "zb", ZB_PLACEMENT_LOOP, 2, 12, 8, 96, 0, false },
        { "zb-v", ZB_PLACEMENT_V, 2, INFINITY, 8, 96, 0, false },
    };
    struct zb_frontier f = { .pts = pts, .n = 4, .unit = 8 };
    struct shape sh = unit_shape(4, 8);
    struct zb_profile p;
    char *svg;

    make_profile(&sh, &p);
    svg = zb_frontier_svg(&f, &p, 900);
    cr_assert_eq(count(svg, "<text class=\"label\""), 2);
    cr_assert_not_null(strstr(svg, ">zb (loop, vpp 2,4)</text>"));
    cr_assert_not_null(strstr(svg, ">zb-v (v, vpp 2)</text>"));
    cr_assert_eq(count(svg, "class=\"limit\""), 0, "no limit, no line");
    cr_assert_not_null(strstr(svg, ">cost</text>"));
    p.has_time_unit = true;
    p.time_unit = ZB_TIME_MS;
    free(svg);
    svg = zb_frontier_svg(&f, &p, 900);
    cr_assert_not_null(strstr(svg, ">cost (ms)</text>"));
    free(svg);
    zb_profile_release(&p);
}

Test(render, svg_escapes_names_from_files)
{
    struct shape sh = unit_shape(2, 2);
    struct zb_schedule s;
    char *svg;

    generate("1f1b", &sh, &s);
    snprintf(s.name, sizeof(s.name), "a<b&\"c\"");
    svg = svg_of(&s, 800);
    cr_assert_not_null(strstr(svg, "a&lt;b&amp;&quot;c&quot;"));
    cr_assert_null(strstr(svg, "a<b"));
    free(svg);
    zb_schedule_release(&s);
}

Test(render, svg_stacks_compared_schedules_on_one_axis)
{
    struct shape sh = unit_shape(4, 8);
    struct zb_schedule s[2];
    struct zb_panel pn[2];
    char *svg;

    generate("1f1b", &sh, &s[0]);
    generate("zb-h2", &sh, &s[1]);
    pn[0] = panel_of(&s[0]);
    pn[1] = panel_of(&s[1]);
    svg = zb_render_svg(pn, 2, 1200);
    cr_assert_eq(count(svg, "<g class=\"panel\">"), 2);
    cr_assert_eq(count(svg, "<g class=\"axis\""), 1);
    cr_assert_eq(count(svg, "<rect class=\"op\""),
                 compute_ops(&s[0]) + compute_ops(&s[1]));
    free(svg);
    zb_schedule_release(&s[0]);
    zb_schedule_release(&s[1]);
}

/* GPipe, p 2, m 2, unit times: 9 time units on 18 columns. */
Test(render, ascii_draws_the_timeline_to_scale)
{
    struct shape sh = unit_shape(2, 2);
    struct zb_schedule s;
    struct zb_panel pn;
    char *text;

    generate("gpipe", &sh, &s);
    pn = panel_of(&s);
    text = zb_render_ascii(&pn, 1, 18 + 32);
    cr_assert_not_null(strstr(text, "r0 |F0F1......X0XXX1XX| busy 66.7%"),
                       "%s", text);
    cr_assert_not_null(strstr(text, "r1 |..F0F1X0XXX1XX....| busy 66.7%"),
                       "%s", text);
    free(text);
    zb_schedule_release(&s);
}

Test(render, ascii_lines_fit_the_width)
{
    static const int widths[] = { ZB_ASCII_MIN_WIDTH, 80, 123, 300 };
    struct shape sh = unit_shape(8, 16);
    struct zb_schedule s;
    struct zb_panel pn;

    sh.vpp = 2;
    generate("interleaved", &sh, &s);
    pn = panel_of(&s);
    for (size_t k = 0; k < sizeof(widths) / sizeof(widths[0]); k++) {
        char *text = zb_render_ascii(&pn, 1, widths[k]);
        int lines = 0;
        for (char *line = text; *line; lines++) {
            char *nl = strchr(line, '\n');
            cr_assert_not_null(nl);
            cr_assert_leq(nl - line, widths[k], "width %d: %.*s",
                          widths[k], (int)(nl - line), line);
            line = nl + 1;
        }
        /* Title, 8 ranks, the axis, then the legend, wrapped whole. */
        cr_assert_geq(lines, 1 + 8 + 2);
        for (char *c = text; *c; c++)
            if (*c == '\n')
                *c = ' ';
        cr_assert_not_null(strstr(text, "(of the F in O), . idle; 1 column "
                                        "= "), "width %d", widths[k]);
        free(text);
    }
    zb_schedule_release(&s);
}

static void assert_same_times(const struct zb_schedule *s,
                              const struct zb_timeline *t)
{
    for (int r = 0; r < s->profile.pp; r++) {
        int k = 0;
        for (int i = 0; i < s->ranks[r].n; i++) {
            const struct zb_op *a = &s->ranks[r].ops[i];
            if (!zb_op_is_compute(a->kind))
                continue;
            cr_assert_lt(k, t->ranks[r].n, "rank %d", r);
            const struct zb_op *b = &t->ranks[r].ops[k++];
            cr_assert(a->kind == b->kind && a->stage == b->stage &&
                      a->mb == b->mb, "rank %d op %d", r, k - 1);
            assert_near(a->start, b->start, "rank %d op %d", r, k - 1);
            assert_near(a->end, b->end, "rank %d op %d", r, k - 1);
        }
        cr_assert_eq(k, t->ranks[r].n, "rank %d", r);
    }
}

/* The predicted trace, read back as if zbexec had written it, gives the
 * simulator's timeline: the two agree on the track layout. */
Test(render, predicted_trace_reads_back_as_the_timeline)
{
    static const char *const names[] = { "zb-h1", "zb-v", "interleaved" };
    struct zb_error err = { 0 };

    for (int k = 0; k < 3; k++) {
        struct shape sh = unit_shape(4, 8);
        struct zb_schedule s;
        struct zb_timeline t = { 0 };
        char *json;

        sh.comm = 0.25;
        sh.f = 1.5;
        if (k > 0) {
            sh.vpp = 2;
            sh.placement = k == 1 ? ZB_PLACEMENT_V : ZB_PLACEMENT_LOOP;
        }
        generate(names[k], &sh, &s);
        json = zb_trace_format(&s, 1000);
        cr_assert_eq(zb_timeline_parse(json, &s.profile, 1000, -1, &t,
                                       &err), 0, "%s: %s", names[k],
                     err.msg);
        assert_same_times(&s, &t);
        free(json);
        zb_timeline_release(&t);
        zb_schedule_release(&s);
    }
}

/* With data parallelism every collective is a slice at its simulated
 * times on a "collectives" thread, which the timeline reader skips. */
Test(render, predicted_trace_draws_the_collectives)
{
    struct shape sh = unit_shape(4, 8);
    struct zb_error err = { 0 };
    struct zb_timeline t = { 0 };
    struct zb_profile p;
    struct zb_schedule s;
    char *json, want[160];
    int n = 0;

    make_profile(&sh, &p);
    set_test_dp(&p, 3);
    gen("zb-h1", &p, &s);
    json = zb_trace_format(&s, 1000);
    for (int r = 0; r < p.pp; r++)
        for (int i = 0; i < s.ranks[r].n; i++) {
            const struct zb_op *op = &s.ranks[r].ops[i];
            if (!zb_op_is_collective(op->kind))
                continue;
            snprintf(want, sizeof(want), "\"name\": \"%s s%d\", \"cat\": "
                     "\"collective\", \"pid\": %d, \"tid\": 2, \"ts\": "
                     "%lld, \"dur\": %lld", zb_op_kind_name(op->kind),
                     op->stage, r, llround(op->start * 1000),
                     llround(op->end * 1000) - llround(op->start * 1000));
            cr_assert_not_null(strstr(json, want), "%s", want);
            n++;
        }
    cr_assert_geq(n, 3 * p.pp, "UNSHARD, REDUCE_GRAD, RESHARD per rank");
    cr_assert_eq(count(json, "\"cat\": \"collective\""), n);
    cr_assert_eq(count(json, "\"name\": \"collectives\""), p.pp);
    cr_assert_eq(zb_timeline_parse(json, &s.profile, 1000, -1, &t, &err), 0,
                 "%s", err.msg);
    for (int r = 0; r < p.pp; r++) {
        int compute = 0;
        for (int i = 0; i < s.ranks[r].n; i++)
            compute += zb_op_is_compute(s.ranks[r].ops[i].kind);
        cr_assert_eq(t.ranks[r].n, compute, "rank %d: compute only", r);
    }
    free(json);
    zb_timeline_release(&t);
    zb_schedule_release(&s);
    zb_profile_release(&p);
}

/* Transfers longer than the passes overlap; a thread's slices must nest,
 * so the overlapping ones move to a second communication thread. */
Test(render, trace_moves_overlapping_transfers_to_more_threads)
{
    struct shape sh = unit_shape(4, 4);
    struct zb_schedule s;
    char *json;

    generate("1f1b", &sh, &s);
    json = zb_trace_format(&s, 1);
    cr_assert_eq(count(json, "\"name\": \"comm (overlapping)\""), 0);
    cr_assert_eq(count(json, "\"ph\": \"s\""), count(json, "\"ph\": \"f\""));
    cr_assert_eq(count(json, "\"ph\": \"s\""), 2 * 3 * 4);
    free(json);
    zb_schedule_release(&s);

    sh.comm = 2.5;
    generate("1f1b", &sh, &s);
    json = zb_trace_format(&s, 1);
    cr_assert_gt(count(json, "\"name\": \"comm (overlapping)\""), 0);
    free(json);
    zb_schedule_release(&s);
}

Test(render, timeline_measure_agrees_with_the_simulator)
{
    static const char *const names[] = { "1f1b", "zb-h1", "zb-h2", "zb" };

    for (int k = 0; k < 4; k++) {
        struct shape sh = unit_shape(4, 8);
        struct zb_schedule s;
        struct zb_measures m;

        sh.b = 2;
        sh.comm = 0.1;
        generate(names[k], &sh, &s);
        m.ranks = calloc(4, sizeof(*m.ranks));
        zb_measures_from_times(&s.profile, s.ranks, &m);
        assert_near(m.cost, s.predicted.cost, "%s", names[k]);
        assert_near(m.makespan, s.predicted.makespan, "%s", names[k]);
        assert_near(m.bubble_ratio, s.predicted.bubble_ratio, "%s",
                    names[k]);
        for (int r = 0; r < 4; r++)
            assert_near(m.ranks[r].peak_memory,
                        s.predicted.ranks[r].peak_memory, "%s", names[k]);
        free(m.ranks);
        zb_schedule_release(&s);
    }
}

/* A report in microseconds, shifted: times come out in the profile's unit
 * from 0, sorted by start, and non-compute ops are ignored. */
Test(render, timeline_reads_a_report)
{
    static const char report[] =
        "{\"format\": \"zbexec-report\", \"ranks\": ["
        "{\"rank\": 0, \"ops\": ["
        "{\"op\": \"BW\", \"stage\": 0, \"mb\": 0, \"start\": 5000, "
        "\"end\": 7000},"
        "{\"op\": \"F\", \"stage\": 0, \"mb\": 0, \"start\": 1000, "
        "\"end\": 2000},"
        "{\"op\": \"SEND_F\", \"stage\": 0, \"mb\": 0, \"peer\": 1}]},"
        "{\"rank\": 1, \"ops\": ["
        "{\"op\": \"F\", \"stage\": 1, \"mb\": 0, \"start\": 2000, "
        "\"end\": 3000},"
        "{\"op\": \"BW\", \"stage\": 1, \"mb\": 0, \"start\": 3000, "
        "\"end\": 5000}]}]}";
    struct shape sh = unit_shape(2, 1);
    struct zb_profile p;
    struct zb_timeline t = { 0 };
    struct zb_measures m;
    struct zb_error err = { 0 };

    make_profile(&sh, &p);
    cr_assert_eq(zb_timeline_parse(report, &p, 1000, -1, &t, &err), 0, "%s",
                 err.msg);
    cr_assert_eq(t.ranks[0].n, 2);
    cr_assert_eq(t.ranks[0].ops[0].kind, ZB_OP_F);
    assert_near(t.ranks[0].ops[0].start, 0, "shifted to 0");
    assert_near(t.ranks[0].ops[1].end, 6, "in ms");
    m.ranks = calloc(2, sizeof(*m.ranks));
    zb_measures_from_times(&p, t.ranks, &m);
    assert_near(m.cost, 6, "cost");
    assert_near(m.bubble_ratio, 1 - 6.0 / 12, "bubble_ratio");
    free(m.ranks);
    zb_timeline_release(&t);
    zb_profile_release(&p);
}

/* zbexec runs several iterations: the last one is drawn unless --iter. */
Test(render, timeline_keeps_one_iteration)
{
    static const char trace[] =
        "[{\"ph\": \"X\", \"pid\": 0, \"tid\": 0, \"ts\": 10, \"dur\": 1,"
        " \"args\": {\"op\": \"F\", \"stage\": 0, \"mb\": 0, \"iter\": 0}},"
        " {\"ph\": \"X\", \"pid\": 0, \"tid\": 0, \"ts\": 50, \"dur\": 4,"
        " \"args\": {\"op\": \"F\", \"stage\": 0, \"mb\": 0, \"iter\": 1}},"
        " {\"ph\": \"X\", \"pid\": 0, \"tid\": 1, \"ts\": 51, \"dur\": 4,"
        " \"args\": {\"op\": \"SEND_F\", \"stage\": 0, \"mb\": 0}},"
        " {\"ph\": \"M\", \"pid\": 0, \"name\": \"process_name\"}]";
    struct shape sh = unit_shape(1, 1);
    struct zb_profile p;
    struct zb_timeline t = { 0 };
    struct zb_error err = { 0 };

    make_profile(&sh, &p);
    cr_assert_eq(zb_timeline_parse(trace, &p, 1, -1, &t, &err), 0, "%s",
                 err.msg);
    cr_assert_eq(t.ranks[0].n, 1);
    assert_near(t.ranks[0].ops[0].end, 4, "iteration 1");
    zb_timeline_release(&t);
    cr_assert_eq(zb_timeline_parse(trace, &p, 1, 0, &t, &err), 0);
    assert_near(t.ranks[0].ops[0].end, 1, "iteration 0");
    zb_timeline_release(&t);
    cr_assert_lt(zb_timeline_parse(trace, &p, 1, 7, &t, &err), 0);
    cr_assert_str_eq(err.msg, "no ops of iteration 7");
    zb_timeline_release(&t);
    zb_profile_release(&p);
}

Test(render, timeline_rejects_what_the_schedule_cannot_have)
{
    static const struct {
        const char *json, *msg;
    } cases[] = {
        { "[{\"ph\": \"X\", \"pid\": 1, \"tid\": 0, \"ts\": 0, \"dur\": 1,"
          " \"args\": {\"op\": \"F\", \"stage\": 0, \"mb\": 0}}]",
          "event 0: F stage 0 mb 0 does not run on rank 1 of this "
          "schedule" },
        { "[{\"ph\": \"X\", \"pid\": 7, \"tid\": 0, \"ts\": 0, \"dur\": 1,"
          " \"args\": {\"op\": \"W\", \"stage\": 0, \"mb\": 0}}]",
          "event 0: rank 7 is not a rank of this schedule (pp 2)" },
        { "{\"traceEvents\": [{\"ph\": \"X\", \"pid\": 0, \"tid\": 0,"
          " \"ts\": 0, \"args\": {\"op\": \"F\", \"stage\": 0, \"mb\": 0}}]}",
          "event 0: a complete event needs integer \"pid\" and numbers "
          "\"ts\" and \"dur\"" },
        { "{\"ranks\": [{\"rank\": 0, \"ops\": [{\"op\": \"B\", \"stage\": "
          "0, \"mb\": 0}]}]}",
          "rank 0 op 0: needs a start and an end not before it" },
        { "{\"traceEvents\": []}", "no compute ops (F, B, W, BW) found" },
        { "{\"schedule\": 1}", "neither a trace (\"traceEvents\") nor a "
          "report (\"ranks\")" },
        { "[{", "malformed JSON at line 1, column 3" },
        { "[{\"ts\": 1, \"ts\": 2}]", "key '[0].ts' appears twice in one "
          "object" },
        { "[{\"ph\": \"X\", \"pid\": 0, \"tid\": 0, \"ts\": 1e308,"
          " \"dur\": 1e308, \"args\": {\"op\": \"F\", \"stage\": 0,"
          " \"mb\": 0}}]", "event 0: its end is not a finite number" },
        { "[{\"ph\": \"X\", \"pid\": 0, \"tid\": 0, \"ts\": 0, \"dur\": 1,"
          " \"args\": {\"op\": \"F\", \"stage\": 0, \"mb\": 0}},"
          " {\"ph\": \"X\", \"pid\": 0, \"tid\": 0, \"ts\": 5, \"dur\": 1,"
          " \"args\": {\"op\": \"F\", \"stage\": 0, \"mb\": 0}}]",
          "rank 0: F stage 0 mb 0 ran twice in iteration 0" },
        { "[{\"ph\": \"X\", \"pid\": 0, \"tid\": 0, \"ts\": 0, \"dur\": 2,"
          " \"args\": {\"op\": \"F\", \"stage\": 0, \"mb\": 0}},"
          " {\"ph\": \"X\", \"pid\": 0, \"tid\": 0, \"ts\": 1, \"dur\": 1,"
          " \"args\": {\"op\": \"B\", \"stage\": 0, \"mb\": 0}}]",
          "rank 0: B stage 0 mb 0 starts at 1, before F stage 0 mb 0 ends "
          "(2)" },
    };
    struct shape sh = unit_shape(2, 1);
    struct zb_profile p;

    make_profile(&sh, &p);
    for (size_t k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
        struct zb_timeline t = { 0 };
        struct zb_error err = { 0 };
        cr_assert_lt(zb_timeline_parse(cases[k].json, &p, 1, -1, &t, &err),
                     0, "case %zu", k);
        cr_assert_str_eq(err.msg, cases[k].msg, "case %zu", k);
        zb_timeline_release(&t);
    }
    zb_profile_release(&p);
}
