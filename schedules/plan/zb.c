/* zb.c - `zb`: the memory-aware planner's row (see plan.h). It reads the
 * real per-stage times, comm and per-rank limits, collects its candidates,
 * picks the best that fits, runs the local search (search/) from the
 * starts its search plan names, and keeps the best result; with data
 * parallelism the step ends with the last collective, which cost does not
 * see, so the searched order and every fitting candidate are scored by
 * their step (collectives placed, the W post-pass applied where it helps)
 * and the shortest is kept. Never worse than any of its candidates, and
 * equal to ZB-H1 at 1F1B's memory. Every decision is made on the profile
 * normalised once (its mean pass time 1, each time rounded to PLAN_BITS
 * significant bits), so the same model in any time unit gets the same
 * order, its cost scaled by the unit. */
#include <math.h>
#include <stdio.h>
#include "plan/plan.h"
#include "search/search.h"
#include "zbsched/clock.h"
#include "zbsched/dp.h"
#include "zbsched/generator.h"
#include "zbsched/measures.h"
#include "zbsched/sim.h"
#include "zbsched/zero.h"

/* Run the local search on s (the order of candidate `from`) for `share`
 * of the budget and say in s->origin where the result came from. True
 * when the search ran: s is then timed (s->predicted). */
static bool search(const struct zb_profile *p, const struct zb_options *opt,
                   struct zb_schedule *s, const char *from, double share)
{
    struct improve_opts io = {
        .effort = share * (opt->effort != 0 ? opt->effort
                                             : zbi_improve_default_effort(p)),
        .seed = (unsigned)opt->seed, .threads = opt->threads,
        .base_effort = share * zbi_improve_default_effort(p),
        .interrupt = opt->interrupt,
    };
    struct improve_stats st = { .chain = -1 };
    bool ran = io.effort > 0;

    /* The start is legal and fits (the pick checked it), so a failure
     * here would be a bug in the search: the start stays, and the
     * pipeline validates whatever s holds. */
    if (ran && zbi_improve_order(p, s, &io, &st, NULL) < 0) {
        st.chain = -1;
        ran = false;
    }
    snprintf(s->origin, sizeof(s->origin), "%s%s", from,
             st.chain >= 0 ? "+search" : "");
    return ran;
}

/* Search from each start (plan.h) and keep in s the best result: the
 * choice's, replaced by a later start's that ends better. A search
 * simulates its result, and an unsearched choice that came simulated
 * brings its times, so s is simulated here only where neither holds and
 * a later result must be weighed against it. Whether s is left simulated
 * (as zb_sim_run() leaves it). */
static bool search_starts(const struct zb_profile *p,
                          const struct zb_options *opt,
                          const struct plan_candidates *c,
                          const struct plan_start *starts, int n,
                          struct zb_schedule *s)
{
    const struct zb_schedule *choice = starts[0].from;
    struct zb_schedule t;
    bool timed;

    zb_schedule_copy_order(s, choice);
    snprintf(s->origin, sizeof(s->origin), "%s", choice->name);
    if (starts[0].share > 0) {
        timed = search(p, opt, s, choice->name, starts[0].share);
    } else if ((timed = c->simulated[choice - c->s])) {
        zb_measures_copy(&s->predicted, &choice->predicted, p->pp);
    }
    for (int i = 1; i < n; i++) {
        const struct zb_schedule *x = starts[i].from;
        if (zb_schedule_init(&t, x->name, p) < 0)
            break;
        zb_schedule_copy_order(&t, x);
        if (search(p, opt, &t, x->name, starts[i].share) &&
            (timed || (timed = zb_sim_run(s, NULL) == 0)) &&
            zbi_pick_better(&t, s)) {
            zb_schedule_copy_order(s, &t);
            zb_measures_copy(&s->predicted, &t.predicted, p->pp);
            snprintf(s->origin, sizeof(s->origin), "%s", t.origin);
        }
        zb_schedule_release(&t);
    }
    return timed;
}

/* With data parallelism: replace s (the searched order) by the order,
 * among s and the fitting candidates, whose step with collectives is
 * shortest (zbi_pick_shorter()); s stays unless another beats it, then
 * the first of equals. The local search minimises its own reckoning of
 * the step, which leaves out ZeRO-3's gathers and the W post-pass, so its
 * result still competes here, placed and grouped. */
static int pick_by_step(const struct plan_candidates *c,
                        struct zb_schedule *s, struct zb_error *err)
{
    struct zb_schedule best, x;
    char origin[sizeof(s->origin)];
    bool grouped, best_grouped;
    int rc;

    if ((rc = zb_zero_best_step(s, &best, &best_grouped, err)) < 0)
        return rc;
    snprintf(origin, sizeof(origin), "%s", s->origin);
    for (int i = 0; i < c->n; i++) {
        if (!c->s[i].predicted.fits_memory)
            continue;
        if ((rc = zb_zero_best_step(&c->s[i], &x, &grouped, err)) < 0)
            goto out;
        if (zbi_pick_shorter(&x, &best)) {
            zb_schedule_release(&best);
            best = x;
            best_grouped = grouped;
            snprintf(origin, sizeof(origin), "%s", c->s[i].name);
        } else {
            zb_schedule_release(&x);
        }
    }
    /* The generator hands back a compute order; the pipeline lowers and
     * places it again, to the same schedule (the grouped tail W ops feed
     * nothing, so lowering puts no transfer among them). */
    zb_schedule_copy_order(s, &best);
    snprintf(s->origin, sizeof(s->origin), "%.*s%s",
             (int)sizeof(origin) - 8, origin, best_grouped ? "+wgroup" : "");
out:
    zb_schedule_release(&best);
    return rc;
}

int zbi_plan_zb(const struct zb_profile *p, const struct zb_options *opt,
                const struct plan_candidates *c, struct zb_schedule *s,
                struct zb_error *err)
{
    struct plan_start starts[PLAN_MAX_STARTS];
    const struct zb_schedule *choice;
    double t0 = zb_clock_now();
    bool timed;
    int n, rc;

    if ((rc = zbi_pick_choice(c, p, opt, &choice, err)) < 0)   /* pick */
        return rc;
    n = zbi_plan_searches(p, opt, c, choice, starts);       /* plan searches */
    timed = search_starts(p, opt, c, starts, n, s);     /* search */
    if (zb_dp_active(p)) {                              /* pick by step */
        if ((rc = pick_by_step(c, s, err)) < 0)
            return rc;
        timed = false;
    }
    /* Timed once: by its search, or here (zb_gen_zb.simulated). */
    if (!timed && (rc = zb_sim_run(s, err)) < 0)
        return rc;
    zbi_plan_report(opt, "search", n, s->predicted.cost, t0);
    return 0;
}

/* Significant bits a normalised time keeps: the same model scaled by any
 * factor rounds to the same values (a tie at the last bit is about 1e-8
 * likely per value), far below any difference a schedule can tell. */
#define PLAN_BITS 24

/* x rounded to PLAN_BITS significant bits (0, infinities and NAN as
 * they are). */
static double snap(double x)
{
    double m;
    int e;

    if (x == 0 || !isfinite(x))
        return x;
    m = frexp(x, &e);   /* sets e before it is read below */
    return ldexp(nearbyint(ldexp(m, PLAN_BITS)), e - PLAN_BITS);
}

void zbi_plan_normalise(const struct zb_profile *p, struct zb_profile *q)
{
    double sum = 0, u;
    int n = zb_profile_stages(p);

    zb_profile_copy(q, p);
    for (int i = 0; i < n; i++)
        sum += p->stage[i].f + p->stage[i].b + p->stage[i].w;
    u = sum > 0 ? sum / (3.0 * n) : p->comm > 0 ? p->comm : 1;
    for (int i = 0; i < n; i++) {
        q->stage[i].f = snap(p->stage[i].f / u);
        q->stage[i].b = snap(p->stage[i].b / u);
        q->stage[i].w = snap(p->stage[i].w / u);
    }
    q->comm = snap(p->comm / u);
    for (int i = 0; p->stage_comm && i < n; i++)
        q->stage_comm[i] = snap(p->stage_comm[i] / u);
    q->fb = snap(p->fb / u);
    q->dp.bandwidth = snap(p->dp.bandwidth * u);
    q->dp.latency = snap(p->dp.latency / u);
    q->dp.all_reduce = snap(p->dp.all_reduce / u);
    q->dp.reduce_scatter = snap(p->dp.reduce_scatter / u);
    q->dp.all_gather = snap(p->dp.all_gather / u);
}

int zbi_plan_zb_on(const struct zb_profile *q, const struct zb_options *opt,
                   const struct plan_candidates *c, struct zb_schedule *s,
                   struct zb_error *err)
{
    struct zb_schedule t;
    int rc;

    if ((rc = zb_schedule_init(&t, s->name, q)) < 0)
        return rc;
    rc = zbi_plan_zb(q, opt, c, &t, err);
    if (rc == 0) {
        zb_schedule_copy_order(s, &t);
        snprintf(s->origin, sizeof(s->origin), "%s", t.origin);
        rc = zb_sim_run(s, err);
    }
    zb_schedule_release(&t);
    return rc;
}

/* zb on p, planned on p normalised; the order is then timed on p. */
static int gen_zb(const struct zb_profile *p, const struct zb_options *opt,
                  struct zb_schedule *s, struct zb_error *err)
{
    struct plan_candidates c;
    struct zb_profile q;
    int rc;

    zbi_plan_normalise(p, &q);
    zbi_plan_collect(&q, opt, &c);                      /* collect */
    rc = zbi_plan_zb_on(&q, opt, &c, s, err);
    zbi_plan_release(&c);
    zb_profile_release(&q);
    return rc;
}

const struct zb_generator zb_gen_zb = {
    .name = "zb",
    .summary = "memory-aware heuristic: real times, comm and limits; best "
               "of the paper's constructions, list scheduling and every "
               "fitting family, then local search (--effort)",
    .placements = ZB_PLACES_LOOP | ZB_PLACES_V, .min_vpp = 1, .max_vpp = 64,
    .memory_aware = true, .simulated = true, .stage_memory = true,
    .generate = gen_zb,
};
