/* choose.c - generate's pick (zb_frontier_pick(), frontier.h): the best
 * schedule at a profile's own limits among `zb` and every fixed family,
 * in the profile's shape or in every shape of the frontier, each family
 * built once: zb's collection (plan.h) holds the fixed families that it
 * weighs, and the pick takes them from there. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "plan/plan.h"
#include "zbsched/dp.h"
#include "zbsched/frontier.h"
#include "zbsched/generator.h"
#include "zbsched/profile_import.h"
#include "zbsched/sim.h"
#include "zbsched/xalloc.h"

/* The fitting candidates of the pick, in the order they were built; and
 * the collection of the shape whose zb is the best so far, kept while a
 * zb winner may get a longer search on it. */
struct pool {
    struct zb_schedule *s;
    int n, cap;
    bool keep;                  /* keep a collection (refine) */
    struct plan_candidates c;   /* kept: its zb is pool entry `zb` */
    int zb;                     /* -1: none kept */
    const struct zb_frontier_robust *robust;    /* or NULL */
    double *p95;                /* robust: each entry's p95 makespan */
};

/* The p95 makespan of s's replays under the pool's noise. */
static int p95_of(const struct pool *pl, const struct zb_schedule *s,
                  double *out, struct zb_error *err)
{
    const struct zb_frontier_robust *r = pl->robust;
    struct zb_jitter_result j;
    int rc = zb_jitter_run(s, r->cv, NULL, r->samples, r->seed, &j, err);

    *out = rc < 0 ? 0 : j.makespan.p95;
    return rc;
}

/* Pool entry i against j: by p95 when robust (within rounding, equal),
 * then by the one comparison of timed schedules. */
static bool better(const struct pool *pl, int i, int j)
{
    if (pl->p95 && fabs(pl->p95[i] - pl->p95[j]) > 1e-9 * pl->p95[j])
        return pl->p95[i] < pl->p95[j];
    return zbi_pick_better(&pl->s[i], &pl->s[j]);
}

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

/* s, ordered on a normalised profile (zbi_plan_normalise()), timed on
 * prof: every order the pick weighs is built in the unit-free profile,
 * so the same model in any unit picks alike, and compared as it runs. */
static int on_profile(struct zb_schedule *s, const struct zb_profile *prof)
{
    zb_schedule_set_profile(s, prof);
    return zb_sim_run(s, NULL);
}

/* g's order on prof, built on q (prof normalised), timed and ready to
 * compare. */
static int build(const struct zb_generator *g, const struct zb_profile *prof,
                 const struct zb_profile *q, const struct zb_options *opt,
                 struct zb_schedule *s, struct zb_error *err)
{
    int rc = zb_generator_time(g, q, opt, s, err);

    if (rc == 0 && (rc = on_profile(s, prof)) < 0)
        zb_schedule_release(s);
    return rc < 0 ? rc : ready(g, opt, s, err);
}

/* zb's order on prof from the collection c made on q (prof normalised)
 * into s and ready to compare, as build() leaves it; its refusal in
 * err. */
static int build_zb(const struct zb_generator *zb,
                    const struct zb_profile *prof,
                    const struct zb_profile *q,
                    const struct zb_options *opt,
                    const struct plan_candidates *c, struct zb_schedule *s,
                    struct zb_error *err)
{
    int rc;

    zb_schedule_init(s, zb->name, prof);
    if ((rc = zbi_plan_zb_on(q, opt, c, s, err)) < 0) {
        zb_schedule_release(s);
        return rc;
    }
    return ready(zb, opt, s, err);
}

/* The pool's next slot. */
static struct zb_schedule *slot(struct pool *pl)
{
    zb_xgrow((void **)&pl->s, &pl->cap, pl->n + 1, sizeof(*pl->s));
    return &pl->s[pl->n];
}

/* The built schedule in the next slot joins the pool if it fits. */
static bool keep_if_fits(struct pool *pl)
{
    if (pl->s[pl->n].predicted.fits_memory) {
        pl->n++;
        return true;
    }
    zb_schedule_release(&pl->s[pl->n]);
    return false;
}

/* Build g's order on prof (from q) into the pool if it builds and fits. */
static void pool_try(struct pool *pl, const struct zb_generator *g,
                     const struct zb_profile *prof,
                     const struct zb_profile *q,
                     const struct zb_options *opt)
{
    if (zb_generator_accepts(g, prof, NULL) == 0 &&
        build(g, prof, q, opt, slot(pl), NULL) == 0)
        keep_if_fits(pl);
}

/* The fixed family g's order cand, from a collection made on prof
 * normalised, into the pool timed on prof: zb_generator_time() would
 * build the same. Taken (cand left empty) unless the collection is
 * kept, then copied. */
static void pool_take(struct pool *pl, const struct zb_generator *g,
                      const struct zb_profile *prof,
                      const struct zb_options *opt, struct zb_schedule *cand,
                      bool copy)
{
    struct zb_schedule *s = slot(pl);

    if (copy) {
        zb_schedule_init(s, cand->name, prof);
        zb_schedule_copy_order(s, cand);
    } else {
        *s = *cand;
        memset(cand, 0, sizeof(*cand));
    }
    if (on_profile(s, prof) < 0) {
        zb_schedule_release(s);
        return;
    }
    if (ready(g, opt, s, NULL) == 0)
        keep_if_fits(pl);
}

/* Whether pool entry i (zb in its shape) is better than the kept one:
 * then its collection is kept instead. */
static bool zb_leads(const struct pool *pl, int i)
{
    return pl->zb < 0 || zbi_pick_better(&pl->s[i], &pl->s[pl->zb]);
}

/* zb and every fixed family on prof into the pool, zb first. zb chooses
 * among the candidates it collects, every fixed family among them; those
 * enter the pool from there instead of being built twice. A family zb
 * does not take (one that overlaps passes) is built here. Where zb's
 * collection settled, the families it did not reach could at best tie
 * it and are not built, nor those it left out as outclassed (they would
 * cost more than its order); an overlapping family still is (running F
 * and B at once, it is not held to those bounds). zb's refusal in err.
 * opt is never NULL. */
static void pool_shape(struct pool *pl, const struct zb_generator *zb,
                       const struct zb_profile *prof,
                       const struct zb_options *opt, struct zb_error *err)
{
    struct plan_candidates c = { .outclassed = NULL };
    struct zb_profile q;
    bool kept = false;
    int at = pl->n;

    zbi_plan_normalise(prof, &q);
    if (zb_generator_accepts(zb, prof, NULL) == 0) {
        zbi_plan_collect(&q, opt, &c);
        if (build_zb(zb, prof, &q, opt, &c, slot(pl), err) == 0 &&
            keep_if_fits(pl) && pl->keep && zb_leads(pl, at)) {
            if (pl->zb >= 0)
                zbi_plan_release(&pl->c);
            pl->zb = at;
            kept = true;
        }
    }
    for (int i = 0; zb_generators[i]; i++) {
        const struct zb_generator *g = zb_generators[i];
        int k;
        if (g->memory_aware)
            continue;
        if ((k = zbi_plan_find(&c, g->name, PLAN_FIXED)) >= 0)
            pool_take(pl, g, prof, opt, &c.s[k], kept);
        else if ((!c.settled && !(c.outclassed && c.outclassed[i])) ||
                 g->overlaps)
            pool_try(pl, g, prof, &q, opt);
    }
    if (kept)
        pl->c = c;
    else
        zbi_plan_release(&c);
    zb_profile_release(&q);
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
            (best < 0 || better(pl, i, best)))
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

/* zb again on pool entry `win`'s profile with opt's effort, from the
 * collection of its shape where that is kept (the same candidates a new
 * run would build); the better of the two stays (a longer search is not
 * always better). */
static void refine_zb(const struct zb_generator *zb,
                      const struct zb_options *opt, struct pool *pl, int win)
{
    struct zb_schedule *s = &pl->s[win], full;
    struct zb_options def;
    struct zb_profile q;
    double p95 = 0;
    int rc;

    /* The normalised profile its collection was made on. */
    zbi_plan_normalise(&s->profile, &q);
    rc = win == pl->zb ? build_zb(zb, &s->profile, &q,
                                  zb_options_or_default(opt, &def), &pl->c,
                                  &full, NULL)
                       : build(zb, &s->profile, &q, opt, &full, NULL);
    zb_profile_release(&q);
    if (rc < 0)
        return;
    /* Robust: the longer search stays only where it replays faster. */
    if (full.predicted.fits_memory &&
        (pl->robust ? p95_of(pl, &full, &p95, NULL) == 0 &&
                          p95 < pl->p95[win]
                    : zbi_pick_better(&full, s))) {
        zb_schedule_release(s);
        *s = full;
        if (pl->robust)
            pl->p95[win] = p95;
    } else {
        zb_schedule_release(&full);
    }
}

static int pick(const struct zb_profile *p, bool every_shape,
                const struct zb_options *opt,
                const struct zb_frontier_robust *robust,
                struct zb_frontier_pick *out, struct zb_error *err)
{
    const struct zb_generator *zb = zb_generator_find("zb");
    struct pool pl = { .zb = -1, .robust = robust };
    struct zb_error zb_err = { 0 };
    struct zb_options po, def;
    const struct zb_options *cmp = zb_options_or_default(opt, &def);
    int win, second, rc;

    memset(out, 0, sizeof(*out));
    /* Several shapes at zb's default effort: compared as the frontier
     * has them, the winner then searched at zb's full default. */
    if (every_shape && (!opt || opt->effort == 0)) {
        zbi_plan_point_options(opt, &po);
        cmp = &po;
        pl.keep = true;
    }
    for (int c = -1; c < (every_shape ? PLAN_SHAPES : 0); c++) {
        const struct zb_frontier_shape *sh = &zbi_plan_shapes[c < 0 ? 0 : c];
        struct zb_profile prof;
        /* c = -1: p as it is; then the other shapes, from p. */
        if (c < 0)
            zb_profile_copy(&prof, p);
        else if ((sh->placement == p->placement && sh->vpp == p->vpp) ||
                 zb_profile_reshape(p, sh->placement, sh->vpp, &prof,
                                    NULL) < 0)
            continue;
        pool_shape(&pl, zb, &prof, cmp, c < 0 ? &zb_err : NULL);
        zb_profile_release(&prof);
    }
    if (robust) {
        pl.p95 = zb_xcalloc((size_t)pl.n + 1, sizeof(*pl.p95));
        /* A replay that fails fails them all (data parallelism, a bad
         * cv): reported as zb's error, nothing picked. */
        for (int i = 0; i < pl.n; i++)
            if (p95_of(&pl, &pl.s[i], &pl.p95[i], &zb_err) < 0) {
                for (int k = 0; k < pl.n; k++)
                    zb_schedule_release(&pl.s[k]);
                pl.n = 0;
                break;
            }
    }
    if ((win = best_of(&pl, NULL, NULL)) < 0) {
        free(pl.p95);
        free(pl.s);
        if (pl.zb >= 0)
            zbi_plan_release(&pl.c);
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
        out->runner_p95 = robust ? pl.p95[second] : 0;
    }
    if (pl.keep && !strcmp(pl.s[win].name, "zb"))
        refine_zb(zb, opt, &pl, win);
    if (pl.zb >= 0)
        zbi_plan_release(&pl.c);
    for (int i = 0; i < pl.n; i++)
        if (i != win)
            zb_schedule_release(&pl.s[i]);
    out->sched = pl.s[win];
    out->p95 = robust ? pl.p95[win] : 0;
    free(pl.s);
    free(pl.p95);
    if ((rc = finish(opt, &out->sched, err)) < 0)
        memset(out, 0, sizeof(*out));
    return rc;
}

int zb_frontier_pick(const struct zb_profile *p, bool every_shape,
                     const struct zb_options *opt,
                     struct zb_frontier_pick *out, struct zb_error *err)
{
    return pick(p, every_shape, opt, NULL, out, err);
}

int zb_frontier_pick_robust(const struct zb_profile *p, bool every_shape,
                            const struct zb_options *opt,
                            const struct zb_frontier_robust *r,
                            struct zb_frontier_pick *out,
                            struct zb_error *err)
{
    return pick(p, every_shape, opt, r, out, err);
}
