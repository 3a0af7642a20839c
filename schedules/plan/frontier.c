/* frontier.c - the points of `zbsched frontier` (see frontier.h): the
 * model in every shape, every family on it, `zb` at a sweep of limits, the
 * Pareto front and the bound. Generate's pick among the same candidates
 * at one limit is choose.c's. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "plan/plan.h"
#include "zbsched/bound.h"
#include "zbsched/clock.h"
#include "zbsched/frontier.h"
#include "zbsched/generator.h"
#include "zbsched/measures.h"
#include "zbsched/xalloc.h"

/* The shapes every point is built in. */
const struct zb_frontier_shape zbi_plan_shapes[PLAN_SHAPES] = {
    { ZB_PLACEMENT_LOOP, 1 }, { ZB_PLACEMENT_LOOP, 2 },
    { ZB_PLACEMENT_LOOP, 3 }, { ZB_PLACEMENT_LOOP, 4 },
    { ZB_PLACEMENT_V, 2 },
};

/* The limits of zb's sweep, in 1F1B's peak: from below v-min's to twice
 * 1F1B's. */
static const double sweep[] = { 1.0 / 3, 0.5, 2.0 / 3, 1, 1.5, 2 };
#define N_SWEEP (int)(sizeof(sweep) / sizeof(sweep[0]))

/* The model in shape c with every rank limited to `limit` (profile.h:
 * zb_profile_reshape()); false for a shape too large to build. */
static bool shape_profile(const struct zb_profile *p,
                          struct zb_frontier_shape c, double limit,
                          struct zb_profile *out)
{
    if (zb_profile_reshape(p, c.placement, c.vpp, out, NULL) < 0)
        return false;
    for (int r = 0; r < p->pp; r++)
        out->mem_limit[r] = limit;
    return true;
}

static void add_point(struct zb_frontier *f, int *cap,
                      const struct zb_schedule *s, double limit)
{
    struct zb_frontier_point *pt;

    zb_xgrow((void **)&f->pts, cap, f->n + 1, sizeof(*f->pts));
    pt = &f->pts[f->n++];
    memset(pt, 0, sizeof(*pt));
    memcpy(pt->name, s->name, sizeof(pt->name));
    pt->placement = s->profile.placement;
    pt->vpp = s->profile.vpp;
    pt->limit = limit;
    pt->peak = zb_measures_max_peak(&s->predicted, s->profile.pp);
    pt->cost = s->predicted.cost;
    pt->bubble = s->predicted.bubble_ratio;
}

/* The sweep's steps done of total for opt's progress callback, reported
 * at most once a second and never in the first second. */
struct sweep_clock {
    const struct zb_options *opt;
    double t0, last;
    int done, total;
};

static void step_done(struct sweep_clock *sc, int steps)
{
    double now = zb_clock_now();

    sc->done += steps;
    if (!sc->opt || !sc->opt->progress || now - sc->last < 1.0)
        return;
    sc->last = now;
    sc->opt->progress(&(struct zb_progress){
                          .phase = ZB_PROGRESS_SWEEP,
                          .elapsed = now - sc->t0, .wall = now - sc->t0,
                          .done = sc->done, .total = sc->total },
                      sc->opt->progress_ctx);
}

/* Run g on prof; a point if it builds (a refusal is no point). */
static void try_family(struct zb_frontier *f, int *cap,
                       const struct zb_generator *g,
                       const struct zb_profile *prof,
                       const struct zb_options *opt, double limit)
{
    struct zb_schedule s;

    if (zb_generator_accepts(g, prof, NULL) < 0 ||
        zb_generator_run(g, prof, opt, &s, NULL) < 0)
        return;
    add_point(f, cap, &s, limit);
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

/* A sweep of zb at zb's default budget would take a minute. */
void zbi_plan_point_options(const struct zb_options *opt,
                            struct zb_options *out)
{
    if (opt)
        *out = *opt;
    else
        zb_options_init(out);
    if (out->effort == 0)
        out->effort = ZB_FRONTIER_EFFORT;
}

int zb_frontier_build(const struct zb_profile *p,
                      const struct zb_options *opt, struct zb_frontier *out,
                      struct zb_error *err)
{
    const struct zb_generator *zb = zb_generator_find("zb");
    struct zb_options po;
    struct sweep_clock sc = { opt, zb_clock_now(), 0, 0, 0 };
    int cap = 0, fixed = 0;

    memset(out, 0, sizeof(*out));
    sc.last = sc.t0;
    zbi_plan_point_options(opt, &po);
    po.progress = NULL;     /* the sweep reports, not its points */
    for (int i = 0; zb_generators[i]; i++)
        fixed += !zb_generators[i]->memory_aware;
    sc.total = PLAN_SHAPES * (fixed + N_SWEEP);
    out->unit = zb_profile_1f1b_peak(p);
    out->bounds = zb_xcalloc(N_SWEEP, sizeof(*out->bounds));
    for (int k = 0; k < N_SWEEP; k++)
        out->bounds[out->nb++] =
            (struct zb_frontier_bound){ sweep[k] * out->unit, INFINITY };
    for (int c = 0; c < PLAN_SHAPES; c++) {
        struct zb_profile prof;
        if (!shape_profile(p, zbi_plan_shapes[c], INFINITY, &prof)) {
            step_done(&sc, fixed + N_SWEEP);
            continue;
        }
        for (int i = 0; zb_generators[i]; i++)
            if (!zb_generators[i]->memory_aware) {
                try_family(out, &cap, zb_generators[i], &prof, &po,
                           INFINITY);
                step_done(&sc, 1);
            }
        zb_profile_release(&prof);
        for (int k = 0; k < N_SWEEP; k++) {
            double lim = sweep[k] * out->unit;
            shape_profile(p, zbi_plan_shapes[c], lim, &prof);
            try_family(out, &cap, zb, &prof, &po, lim);
            out->bounds[k].bound =
                fmin(out->bounds[k].bound, zb_bound_cost_any(&prof));
            zb_profile_release(&prof);
            step_done(&sc, 1);
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
