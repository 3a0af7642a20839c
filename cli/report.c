/* report.c - measures as text and JSON (see report.h). */
#include <math.h>
#include "report.h"

double report_max_peak(const struct zb_schedule *s)
{
    double peak = 0;
    for (int r = 0; r < s->profile.pp; r++)
        peak = fmax(peak, s->predicted.ranks[r].peak_memory);
    return peak;
}

double report_gap(const struct zb_measures *m)
{
    return m->lower_bound > 0 ? m->cost / m->lower_bound - 1 : 0;
}

void report_summary(FILE *out, const struct zb_schedule *s)
{
    const struct zb_measures *m = &s->predicted;
    double gap = report_gap(m);

    fprintf(out, "%s: cost %.6g, bubble_ratio %.4f, makespan %.6g, peak "
            "memory %.6g, lower bound %.6g (", s->name, m->cost,
            m->bubble_ratio, m->makespan, report_max_peak(s), m->lower_bound);
    if (gap < 1e-9)
        fprintf(out, "optimal)");
    else
        fprintf(out, "gap %.2f%%)", 100 * gap);
}

void report_measures(FILE *out, const struct zb_schedule *s)
{
    const struct zb_profile *p = &s->profile;
    const struct zb_measures *m = &s->predicted;

    fprintf(out, "schedule %s: pp %d, vpp %d, %d microbatches, placement "
            "%s\n", s->name, p->pp, p->vpp, p->microbatches,
            zb_placement_name(p->placement));
    fprintf(out, "cost %.6g  makespan %.6g  bubble_ratio %.4f  "
            "sync_bubble_ratio %.4f\n", m->cost, m->makespan,
            m->bubble_ratio, m->sync_bubble_ratio);
    fprintf(out, "lower_bound %.6g  gap %.2f%%  makespan_lower_bound %.6g  "
            "fits_memory %s\n", m->lower_bound, 100 * report_gap(m),
            m->makespan_bound, m->fits_memory ? "yes" : "no");
    fprintf(out, "%4s %12s %12s %12s %12s\n", "rank", "busy", "span",
            "peak_memory", "limit");
    for (int r = 0; r < p->pp; r++)
        fprintf(out, "%4d %12.6g %12.6g %12.6g %12.6g\n", r,
                m->ranks[r].busy, m->ranks[r].span, m->ranks[r].peak_memory,
                p->mem_limit[r]);
}

void report_measures_json(FILE *out, const struct zb_schedule *s)
{
    const struct zb_measures *m = &s->predicted;

    fprintf(out, "{\"schedule\": \"%s\", \"cost\": %.17g, \"makespan\": "
            "%.17g, \"bubble_ratio\": %.17g, \"sync_bubble_ratio\": %.17g, "
            "\"lower_bound\": %.17g, \"gap\": %.17g, "
            "\"makespan_lower_bound\": %.17g, \"peak_memory\": %.17g, "
            "\"fits_memory\": %s, \"ranks\": [", s->name, m->cost,
            m->makespan, m->bubble_ratio, m->sync_bubble_ratio,
            m->lower_bound, report_gap(m), m->makespan_bound,
            report_max_peak(s), m->fits_memory ? "true" : "false");
    for (int r = 0; r < s->profile.pp; r++)
        fprintf(out, "%s{\"busy\": %.17g, \"span\": %.17g, "
                "\"peak_memory\": %.17g}", r ? ", " : "", m->ranks[r].busy,
                m->ranks[r].span, m->ranks[r].peak_memory);
    fprintf(out, "]}\n");
}
