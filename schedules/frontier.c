/* frontier.c - the points of `zbsched frontier` (see frontier.h): the
 * model in every placement, every family on it, `zb` at a sweep of
 * limits, the Pareto front and the bound. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "zbsched/bound.h"
#include "zbsched/frontier.h"
#include "zbsched/generator.h"
#include "zbsched/measures.h"
#include "zbsched/xalloc.h"

#define MAX_VPP 4

/* The limits of zb's sweep, in 1F1B's peak: from below v-min's to twice
 * 1F1B's. */
static const double sweep[] = { 1.0 / 3, 0.5, 2.0 / 3, 1, 1.5, 2 };
#define N_SWEEP (int)(sizeof(sweep) / sizeof(sweep[0]))

struct config {
    enum zb_placement placement;
    int vpp;
};

/* Per-rank times and memory of the model. */
struct model {
    struct zb_stage_times rank;
    double m_b, m_w;
};

static void model_of(const struct zb_profile *p, struct model *md)
{
    const int n = zb_profile_stages(p);

    md->rank = (struct zb_stage_times){ 0, 0, 0 };
    for (int s = 0; s < n; s++) {
        md->rank.f += p->stage[s].f * p->vpp / n;
        md->rank.b += p->stage[s].b * p->vpp / n;
        md->rank.w += p->stage[s].w * p->vpp / n;
    }
    md->m_b = p->m_b * p->vpp;
    md->m_w = p->m_w * p->vpp;
}

/* The model in one placement, every rank limited to `limit`. */
static void config_profile(const struct zb_profile *p, const struct model *md,
                           struct config c, double limit,
                           struct zb_profile *out)
{
    const int n = p->pp * c.vpp;

    *out = *p;
    out->vpp = c.vpp;
    out->placement = c.placement;
    out->m_b = md->m_b / c.vpp;
    out->m_w = md->m_w / c.vpp;
    out->fb = p->fb > 0 ? p->fb * p->vpp / c.vpp : 0;
    out->stage = zb_xmalloc((size_t)n * sizeof(*out->stage));
    for (int s = 0; s < n; s++)
        out->stage[s] = (struct zb_stage_times){ md->rank.f / c.vpp,
                                                 md->rank.b / c.vpp,
                                                 md->rank.w / c.vpp };
    out->mem_limit = zb_xmalloc((size_t)p->pp * sizeof(double));
    for (int r = 0; r < p->pp; r++)
        out->mem_limit[r] = limit;
}

/* The bound at prof's limit. With time.FB below F + B an overlapped
 * schedule does less work than the passes' times say, so the bound is
 * taken with F and B scaled down by that ratio (as the simulator does). */
static double bound_at(struct zb_profile *prof)
{
    const struct zb_stage_times *t = &prof->stage[0];
    double k = prof->fb > 0 ? fmin(1, prof->fb / (t->f + t->b)) : 1;

    for (int s = 0; s < zb_profile_stages(prof); s++) {
        prof->stage[s].f *= k;
        prof->stage[s].b *= k;
    }
    return zb_bound_cost(prof);
}

static void add_point(struct zb_frontier *f, int *cap,
                      const struct zb_schedule *s, struct config c,
                      double limit)
{
    struct zb_frontier_point *pt;

    zb_xgrow((void **)&f->pts, cap, f->n + 1, sizeof(*f->pts));
    pt = &f->pts[f->n++];
    memset(pt, 0, sizeof(*pt));
    memcpy(pt->name, s->name, sizeof(pt->name));
    pt->placement = c.placement;
    pt->vpp = c.vpp;
    pt->limit = limit;
    pt->peak = zb_measures_max_peak(&s->predicted, s->profile.pp);
    pt->cost = s->predicted.cost;
    pt->bubble = s->predicted.bubble_ratio;
}

/* Run g on prof; a point if it builds (a refusal is no point). */
static void try_family(struct zb_frontier *f, int *cap,
                       const struct zb_generator *g,
                       const struct zb_profile *prof,
                       const struct zb_options *opt, struct config c,
                       double limit)
{
    struct zb_schedule s;

    if (zb_generator_accepts(g, prof, NULL) < 0 ||
        zb_generator_run(g, prof, opt, &s, NULL) < 0)
        return;
    add_point(f, cap, &s, c, limit);
    zb_schedule_release(&s);
}

static int by_peak_then_cost(const void *a, const void *b)
{
    const struct zb_frontier_point *x = a, *y = b;

    if (x->peak != y->peak)
        return x->peak < y->peak ? -1 : 1;
    return (x->cost > y->cost) - (x->cost < y->cost);
}

/* In order of peak: a point is on the front when it costs less than
 * every point before it. */
static void mark_front(struct zb_frontier *f)
{
    double best = INFINITY;

    qsort(f->pts, (size_t)f->n, sizeof(*f->pts), by_peak_then_cost);
    for (int i = 0; i < f->n; i++)
        if (f->pts[i].cost < best * (1 - 1e-12)) {
            f->pts[i].front = true;
            best = f->pts[i].cost;
        }
}

int zb_frontier_build(const struct zb_profile *p,
                      const struct zb_options *opt, struct zb_frontier *out,
                      struct zb_error *err)
{
    const struct zb_generator *zb = zb_generator_find("zb");
    struct config cs[MAX_VPP + 1];
    struct model md;
    int nc = 0, cap = 0;

    memset(out, 0, sizeof(*out));
    model_of(p, &md);
    out->unit = p->pp * md.m_b;
    for (int v = 1; v <= MAX_VPP; v++)
        cs[nc++] = (struct config){ ZB_PLACEMENT_LOOP, v };
    cs[nc++] = (struct config){ ZB_PLACEMENT_V, 2 };
    out->bounds = zb_xcalloc(N_SWEEP, sizeof(*out->bounds));
    for (int k = 0; k < N_SWEEP; k++)
        out->bounds[out->nb++] =
            (struct zb_frontier_bound){ sweep[k] * out->unit, INFINITY };
    for (int c = 0; c < nc; c++) {
        struct zb_profile prof;
        config_profile(p, &md, cs[c], INFINITY, &prof);
        for (int i = 0; zb_generators[i]; i++)
            if (!zb_generators[i]->memory_aware)
                try_family(out, &cap, zb_generators[i], &prof, opt, cs[c],
                           INFINITY);
        zb_profile_release(&prof);
        for (int k = 0; k < N_SWEEP; k++) {
            double lim = sweep[k] * out->unit;
            config_profile(p, &md, cs[c], lim, &prof);
            try_family(out, &cap, zb, &prof, opt, cs[c], lim);
            out->bounds[k].bound =
                fmin(out->bounds[k].bound, bound_at(&prof));
            zb_profile_release(&prof);
        }
    }
    if (out->n == 0) {
        zb_frontier_release(out);
        return zb_error_set(err, ZB_EUNSUPPORTED,
                            "no family serves this model");
    }
    mark_front(out);
    return 0;
}

void zb_frontier_release(struct zb_frontier *f)
{
    free(f->pts);
    free(f->bounds);
    memset(f, 0, sizeof(*f));
}
