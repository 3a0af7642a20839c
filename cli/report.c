/* report.c - measures as text and JSON (see report.h). */
#include <math.h>
#include "cli.h"
#include "report.h"
#include "zbsched/json.h"
#include "zbsched/units.h"

struct report_text report_time(const struct zb_profile *p, double t)
{
    struct report_text r;

    if (p->has_time_unit && isfinite(t))
        zb_units_format_time(t, p->time_unit, r.s, sizeof(r.s));
    else
        snprintf(r.s, sizeof(r.s), "%.6g", t);
    return r;
}

struct report_text report_memory(const struct zb_profile *p, double m)
{
    struct report_text r;

    if (p->mem_gib && isfinite(m))
        zb_units_format_size(m * 1073741824.0, r.s, sizeof(r.s));
    else
        snprintf(r.s, sizeof(r.s), "%.6g", m);
    return r;
}

double report_bound_of(double cost, double bound)
{
    return bound > cost && bound - cost <= 1e-9 * cost ? cost : bound;
}

double report_bound(const struct zb_measures *m)
{
    return report_bound_of(m->cost, m->lower_bound);
}

double report_max_peak(const struct zb_schedule *s)
{
    return zb_measures_max_peak(&s->predicted, s->profile.pp);
}

double report_peak_vs_1f1b(const struct zb_schedule *s)
{
    return report_max_peak(s) / zb_profile_1f1b_peak(&s->profile);
}

/* Each F allocates M_B and a B at most M_W - M_B more, nothing twice, so
 * no schedule holds more than all m microbatches' activations: m/p times
 * 1F1B's, times M_W/M_B where that is above 1. */
void report_no_limit(FILE *out, const char *who, const struct zb_profile *p)
{
    double most = (double)p->microbatches / p->pp * fmax(1, p->m_w / p->m_b);

    fprintf(out, "zbsched: no --mem-limit: %s may use up to %.3gx 1F1B's "
            "memory (all %d microbatches in flight); --mem-limit 1p keeps "
            "it to 1F1B's\n", who, most, p->microbatches);
}

double report_max_total_memory(const struct zb_schedule *s)
{
    return zb_measures_max_total(&s->predicted, s->profile.pp);
}

double report_gap(const struct zb_measures *m)
{
    double b = report_bound(m);

    return b > 0 ? m->cost / b - 1 : 0;
}

/* " reduce microbatch" after "zero Z" when the gradients are reduced per
 * microbatch; nothing for the step's one reduce, written as before. */
static const char *reduce_note(const struct zb_profile *p)
{
    return zb_dp_per_mb(p) ? " reduce microbatch" : "";
}

/* "memory per rank 71.2 GiB of 80 GiB (model state 40.0, activations
 * 31.2), " for the rank fullest against its total limit (profile.h,
 * mem_total; sizes, so GiB). */
static void total_note(FILE *out, const struct zb_schedule *s)
{
    const struct zb_profile *p = &s->profile;
    int q = 0;
    double best = -INFINITY;

    for (int r = 0; r < p->pp; r++) {
        double used = zb_profile_model_state(p, r) +
                      s->predicted.ranks[r].peak_memory;
        if (used / p->mem_total[r] > best) {
            best = used / p->mem_total[r];
            q = r;
        }
    }
    double state = zb_profile_model_state(p, q);
    double act = s->predicted.ranks[q].peak_memory;
    fprintf(out, "memory per rank %s of %s (model state %.1f, activations "
            "%.1f), ", report_memory(p, state + act).s,
            report_memory(p, p->mem_total[q]).s, state, act);
}

void report_summary(FILE *out, const struct zb_schedule *s)
{
    const struct zb_profile *p = &s->profile;
    const struct zb_measures *m = &s->predicted;
    double gap = report_gap(m);

    fprintf(out, "%s: cost %s, bubble_ratio %.4f, makespan %s, peak "
            "memory %s = %.2fx 1F1B, ", s->name, report_time(p, m->cost).s,
            m->bubble_ratio, report_time(p, m->makespan).s,
            report_memory(p, report_max_peak(s)).s, report_peak_vs_1f1b(s));
    if (p->mem_total)
        total_note(out, s);
    if (zb_dp_active(p))
        fprintf(out, "step time %s and memory %s with dp %d zero %d%s, ",
                report_time(p, m->step_time).s,
                report_memory(p, report_max_total_memory(s)).s,
                p->dp.degree, p->dp.zero, reduce_note(p));
    fprintf(out, "lower bound %s (", report_time(p, report_bound(m)).s);
    if (gap < 1e-9)
        fprintf(out, "optimal)");
    else
        fprintf(out, "gap %.2f%%)", 100 * gap);
}

void report_measures(FILE *out, const struct zb_schedule *s)
{
    const struct zb_profile *p = &s->profile;
    const struct zb_measures *m = &s->predicted;
    bool dp = zb_dp_active(p);

    fprintf(out, "schedule %s: pp %d, vpp %d, %d microbatches, placement "
            "%s\n", s->name, p->pp, p->vpp, p->microbatches,
            zb_placement_name(p->placement));
    fprintf(out, "cost %s  makespan %s  bubble_ratio %.4f  "
            "sync_bubble_ratio %.4f\n", report_time(p, m->cost).s,
            report_time(p, m->makespan).s, m->bubble_ratio,
            m->sync_bubble_ratio);
    fprintf(out, "lower_bound %s  gap %.2f%%  makespan_lower_bound %s  "
            "fits_memory %s\n", report_time(p, report_bound(m)).s,
            100 * report_gap(m),
            report_time(p, report_bound_of(m->makespan, m->makespan_bound)).s,
            m->fits_memory ? "yes" : "no");
    if (dp)
        fprintf(out, "step_time %s  dp %d  zero %d%s (collectives "
                "included; total_memory adds model state)\n",
                report_time(p, m->step_time).s, p->dp.degree, p->dp.zero,
                reduce_note(p));
    fprintf(out, "%4s %12s %12s %12s %12s%s\n", "rank", "busy", "span",
            "peak_memory", "limit", dp ? "  total_memory" : "");
    for (int r = 0; r < p->pp; r++) {
        fprintf(out, "%4d %12s %12s %12s %12s", r,
                report_time(p, m->ranks[r].busy).s,
                report_time(p, m->ranks[r].span).s,
                report_memory(p, m->ranks[r].peak_memory).s,
                report_memory(p, p->mem_limit[r]).s);
        if (dp)
            fprintf(out, " %13s",
                    report_memory(p, m->ranks[r].total_memory).s);
        fputc('\n', out);
    }
}

/* Numbers put_num() wrote as null since the last report: JSON has no
 * infinity or NaN, and a script should hear that a value is missing. */
static int nonfinite;

/* "key": number, through the one JSON spelling (json.h). */
static void put_num(FILE *out, const char *sep, const char *key, double v)
{
    fprintf(out, "%s\"%s\": ", sep, key);
    zb_json_fput_num(out, v);
    nonfinite += !isfinite(v);
}

void report_measures_json(FILE *out, const struct zb_schedule *s)
{
    const struct zb_measures *m = &s->predicted;
    bool dp = zb_dp_active(&s->profile);

    fputs("{\"schedule\": ", out);
    zb_json_fput_str(out, s->name);
    fprintf(out, ", \"placement\": \"%s\", \"vpp\": %d",
            zb_placement_name(s->profile.placement), s->profile.vpp);
    put_num(out, ", ", "cost", m->cost);
    put_num(out, ", ", "makespan", m->makespan);
    put_num(out, ", ", "bubble_ratio", m->bubble_ratio);
    put_num(out, ", ", "sync_bubble_ratio", m->sync_bubble_ratio);
    put_num(out, ", ", "lower_bound", m->lower_bound);
    put_num(out, ", ", "gap", report_gap(m));
    put_num(out, ", ", "makespan_lower_bound", m->makespan_bound);
    put_num(out, ", ", "peak_memory", report_max_peak(s));
    put_num(out, ", ", "peak_vs_1f1b", report_peak_vs_1f1b(s));
    fprintf(out, ", \"fits_memory\": %s", m->fits_memory ? "true" : "false");
    if (dp)
        put_num(out, ", ", "step_time", m->step_time);
    fputs(", \"ranks\": [", out);
    for (int r = 0; r < s->profile.pp; r++) {
        put_num(out, r ? ", {" : "{", "busy", m->ranks[r].busy);
        put_num(out, ", ", "span", m->ranks[r].span);
        put_num(out, ", ", "peak_memory", m->ranks[r].peak_memory);
        if (dp)
            put_num(out, ", ", "total_memory", m->ranks[r].total_memory);
        fputc('}', out);
    }
    fprintf(out, "]}");
    if (nonfinite)
        cli_warn("%s: %d measures are not finite numbers, written as null",
                 s->name, nonfinite);
    nonfinite = 0;
}

/* {"schedule": name, "error": msg}: a row that could not be made. */
void report_error_json(FILE *out, const char *name, const char *msg)
{
    fputs("{\"schedule\": ", out);
    zb_json_fput_str(out, name);
    fputs(", \"error\": ", out);
    zb_json_fput_str(out, msg);
    fputc('}', out);
}
