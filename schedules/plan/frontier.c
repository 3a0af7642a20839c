/* frontier.c - the points of `zbsched frontier` (see frontier.h): the
 * model in every placement, every family on it, `zb` at a sweep of
 * limits, the Pareto front and the bound; and the pick among the same
 * candidates at one limit. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "plan/best.h"
#include "zbsched/bound.h"
#include "zbsched/dp.h"
#include "zbsched/frontier.h"
#include "zbsched/generator.h"
#include "zbsched/measures.h"
#include "zbsched/xalloc.h"

/* The shapes every point is built in: loop with 1 to 4 chunks, and V. */
static const struct zb_frontier_shape shapes[] = {
    { ZB_PLACEMENT_LOOP, 1 }, { ZB_PLACEMENT_LOOP, 2 },
    { ZB_PLACEMENT_LOOP, 3 }, { ZB_PLACEMENT_LOOP, 4 },
    { ZB_PLACEMENT_V, 2 },
};
#define N_SHAPES (int)(sizeof(shapes) / sizeof(shapes[0]))

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

/* opt with the frontier's default effort per point where it asks for
 * zb's default (a sweep of zb at zb's default budget takes a minute). */
static void point_options(const struct zb_options *opt,
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
    int cap = 0;

    memset(out, 0, sizeof(*out));
    point_options(opt, &po);
    out->unit = zb_profile_1f1b_peak(p);
    out->bounds = zb_xcalloc(N_SWEEP, sizeof(*out->bounds));
    for (int k = 0; k < N_SWEEP; k++)
        out->bounds[out->nb++] =
            (struct zb_frontier_bound){ sweep[k] * out->unit, INFINITY };
    for (int c = 0; c < N_SHAPES; c++) {
        struct zb_profile prof;
        if (!shape_profile(p, shapes[c], INFINITY, &prof))
            continue;
        for (int i = 0; zb_generators[i]; i++)
            if (!zb_generators[i]->memory_aware)
                try_family(out, &cap, zb_generators[i], &prof, &po,
                           INFINITY);
        zb_profile_release(&prof);
        for (int k = 0; k < N_SWEEP; k++) {
            double lim = sweep[k] * out->unit;
            shape_profile(p, shapes[c], lim, &prof);
            try_family(out, &cap, zb, &prof, &po, lim);
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

/* The fitting candidates of the pick, in the order they were built. */
struct pool {
    struct zb_schedule *s;
    int n, cap;
};

/* A candidate g timed into s, made ready to compare: only the pick's
 * winner is lowered and validated (finish()), but with data parallelism
 * the collectives re-time the step and the memory the pick compares, so
 * there every candidate is finished before it is compared. */
static int ready(const struct zb_generator *g, const struct zb_options *opt,
                 struct zb_schedule *s, struct zb_error *err)
{
    return zb_dp_active(&s->profile) ? zb_generator_finish(g, opt, s, err)
                                     : 0;
}

/* The rest of the pipeline for the pick's winner (see ready()). */
static int finish(const struct zb_options *opt, struct zb_schedule *s,
                  struct zb_error *err)
{
    if (zb_dp_active(&s->profile))
        return 0;
    return zb_generator_finish(zb_generator_find(s->name), opt, s, err);
}

/* g's order on prof, timed and ready to compare. */
static int build(const struct zb_generator *g, const struct zb_profile *prof,
                 const struct zb_options *opt, struct zb_schedule *s,
                 struct zb_error *err)
{
    int rc = zb_generator_time(g, prof, opt, s, err);

    return rc < 0 ? rc : ready(g, opt, s, err);
}

/* The pool's next slot. */
static struct zb_schedule *slot(struct pool *pl)
{
    zb_xgrow((void **)&pl->s, &pl->cap, pl->n + 1, sizeof(*pl->s));
    return &pl->s[pl->n];
}

/* The built schedule in the next slot joins the pool if it fits. */
static void keep_if_fits(struct pool *pl)
{
    if (pl->s[pl->n].predicted.fits_memory)
        pl->n++;
    else
        zb_schedule_release(&pl->s[pl->n]);
}

/* Build g's order on prof into the pool if it builds and fits. */
static void pool_try(struct pool *pl, const struct zb_generator *g,
                     const struct zb_profile *prof,
                     const struct zb_options *opt)
{
    if (zb_generator_accepts(g, prof, NULL) == 0 &&
        build(g, prof, opt, slot(pl), NULL) == 0)
        keep_if_fits(pl);
}

/* zb's order on prof from the candidates c, as build() leaves it; its
 * refusal in err. */
static void pool_zb(struct pool *pl, const struct zb_generator *zb,
                    const struct zb_profile *prof,
                    const struct zb_options *opt,
                    const struct best_candidates *c, struct zb_error *err)
{
    struct zb_schedule *s = slot(pl);

    zb_schedule_init(s, zb->name, prof);
    if (zb_from_candidates(prof, opt, c, s, err) < 0) {
        zb_schedule_release(s);
        return;
    }
    if (zb_generator_timed(zb, s, err) == 0 && ready(zb, opt, s, err) == 0)
        keep_if_fits(pl);
}

/* The fixed family g's timed order, taken out of c (left empty there),
 * into the pool: zb_generator_time() would build the same. */
static void pool_take(struct pool *pl, const struct zb_generator *g,
                      const struct zb_options *opt, struct zb_schedule *cand)
{
    struct zb_schedule *s = slot(pl);

    *s = *cand;
    memset(cand, 0, sizeof(*cand));
    if (ready(g, opt, s, NULL) == 0)
        keep_if_fits(pl);
}

/* Index of g's order among c's fixed families, or -1. */
static int collected(const struct best_candidates *c,
                     const struct zb_generator *g)
{
    for (int i = c->fixed; i < c->n; i++)
        if (!strcmp(c->s[i].name, g->name))
            return i;
    return -1;
}

/* zb and every fixed family on prof into the pool, zb first. zb chooses
 * among the candidates it collects (best.h), every fixed family among
 * them included; those enter the pool from there instead of being built
 * twice (at p 64, m 1024 under V that was 0.4 s). A family zb does not
 * take (one that overlaps passes) is built here. Where zb's collection
 * settled (a candidate met the cost and makespan bounds, so zb's order
 * does too), the families it did not reach could at best tie it and are
 * not built, nor those it left out as outclassed (they would cost more
 * than its order); an overlapping family still is (running F and B at
 * once, it is not held to those bounds). zb's refusal in err. opt is
 * never NULL. */
static void pool_shape(struct pool *pl, const struct zb_generator *zb,
                       const struct zb_profile *prof,
                       const struct zb_options *opt, struct zb_error *err)
{
    struct best_candidates c = { .extra = -1, .capped = -1,
                                 .outclassed = NULL };

    if (zb_generator_accepts(zb, prof, NULL) == 0) {
        zbi_best_candidates_collect(prof, opt, &c);
        pool_zb(pl, zb, prof, opt, &c, err);
    }
    for (int i = 0; zb_generators[i]; i++) {
        const struct zb_generator *g = zb_generators[i];
        int k;
        if (g->memory_aware)
            continue;
        if ((k = collected(&c, g)) >= 0)
            pool_take(pl, g, opt, &c.s[k]);
        else if ((!c.settled && !(c.outclassed && c.outclassed[i])) ||
                 g->overlaps)
            pool_try(pl, g, prof, opt);
    }
    zbi_best_candidates_release(&c);
}

static bool same_shape(const struct zb_schedule *a,
                       const struct zb_schedule *b)
{
    return a->profile.placement == b->profile.placement &&
           a->profile.vpp == b->profile.vpp;
}

/* Index of the best candidate of the pool that `want` accepts, or -1. */
static int best_of(const struct pool *pl, const struct zb_schedule *pick,
                   bool (*want)(const struct zb_schedule *,
                                const struct zb_schedule *))
{
    int best = -1;

    for (int i = 0; i < pl->n; i++)
        if ((!pick || want(&pl->s[i], pick)) &&
            (best < 0 || zb_measures_better(&pl->s[i].predicted,
                                            &pl->s[best].predicted,
                                            pl->s[i].profile.pp)))
            best = i;
    return best;
}

static bool other_shape(const struct zb_schedule *s,
                        const struct zb_schedule *pick)
{
    return !same_shape(s, pick);
}

static bool other_family(const struct zb_schedule *s,
                         const struct zb_schedule *pick)
{
    return same_shape(s, pick) && strcmp(s->name, pick->name);
}

/* zb again on s's profile with opt's effort; the better of the two
 * stays in s (a longer search is not always better). */
static void refine_zb(const struct zb_generator *zb,
                      const struct zb_options *opt, struct zb_schedule *s)
{
    struct zb_schedule full;

    if (build(zb, &s->profile, opt, &full, NULL) < 0)
        return;
    if (full.predicted.fits_memory &&
        zb_measures_better(&full.predicted, &s->predicted, s->profile.pp)) {
        zb_schedule_release(s);
        *s = full;
    } else {
        zb_schedule_release(&full);
    }
}

int zb_frontier_pick(const struct zb_profile *p, bool every_shape,
                     const struct zb_options *opt,
                     struct zb_frontier_pick *out, struct zb_error *err)
{
    const struct zb_generator *zb = zb_generator_find("zb");
    struct pool pl = { NULL, 0, 0 };
    struct zb_error zb_err = { 0 };
    struct zb_options po, def;
    const struct zb_options *cmp = zb_options_or_default(opt, &def);
    bool refine = false;
    int win, second, rc;

    memset(out, 0, sizeof(*out));
    /* Several shapes at zb's default effort: compared as the frontier
     * has them, the winner then searched at zb's full default. */
    if (every_shape && (!opt || opt->effort == 0)) {
        point_options(opt, &po);
        cmp = &po;
        refine = true;
    }
    for (int c = -1; c < (every_shape ? N_SHAPES : 0); c++) {
        struct zb_profile prof;
        /* c = -1: p as it is; then the other shapes, from p. */
        if (c < 0)
            zb_profile_copy(&prof, p);
        else if ((shapes[c].placement == p->placement &&
                  shapes[c].vpp == p->vpp) ||
                 zb_profile_reshape(p, shapes[c].placement, shapes[c].vpp,
                                    &prof, NULL) < 0)
            continue;
        pool_shape(&pl, zb, &prof, cmp, c < 0 ? &zb_err : NULL);
        zb_profile_release(&prof);
    }
    if ((win = best_of(&pl, NULL, NULL)) < 0) {
        free(pl.s);
        if (zb_err.code < 0)
            return zb_error_set(err, zb_err.code, "%s", zb_err.msg);
        return zb_error_set(err, ZB_ENOMEM_LIMIT,
                            "no schedule fits the memory limit");
    }
    if ((second = best_of(&pl, &pl.s[win], other_shape)) < 0)
        second = best_of(&pl, &pl.s[win], other_family);
    if (second >= 0) {
        const struct zb_schedule *r = &pl.s[second];
        out->has_runner_up = true;
        memcpy(out->runner_up, r->name, sizeof(out->runner_up));
        out->runner_shape = (struct zb_frontier_shape){
            r->profile.placement, r->profile.vpp };
        out->runner_cost = r->predicted.cost;
    }
    if (refine && !strcmp(pl.s[win].name, "zb"))
        refine_zb(zb, opt, &pl.s[win]);
    for (int i = 0; i < pl.n; i++)
        if (i != win)
            zb_schedule_release(&pl.s[i]);
    out->sched = pl.s[win];
    free(pl.s);
    if ((rc = finish(opt, &out->sched, err)) < 0)
        memset(out, 0, sizeof(*out));
    return rc;
}

void zb_frontier_release(struct zb_frontier *f)
{
    free(f->pts);
    free(f->bounds);
    memset(f, 0, sizeof(*f));
}
