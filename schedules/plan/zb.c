/* zb.c - `zb`: the memory-aware heuristic. It reads the real per-stage
 * times, comm and per-rank limits and picks the best schedule that fits the
 * limit (cost, then makespan, then memory: best.c) among the paper's
 * constructions (construct.c, construct_v.c), the list scheduler
 * (greedy.c) and every fixed family that serves the profile; then a local
 * search (improve.c) works on that order for the effort budget, on the
 * runner-up for half of it (search_from_two()), and on the extra start
 * (the warm-up-depth order, warm_depth.c, for loop; ZB-V with full ranks
 * making room with a B, construct_v.h, for V) where it starts better
 * (search_extra(); under V it then runs instead of the runner-up's, and
 * the chosen order's keeps a quarter), and under V below 1F1B's memory
 * and interleaved placement on the list scheduler with searched in-flight
 * caps where it starts better (a search of its own beside the others,
 * which then also takes the runner-up's budget and all but a quarter
 * of the chosen order's: capped_first()).
 * So `zb` is never worse than any of its candidates, and equals ZB-H1 at
 * 1F1B's memory. With data parallelism the step ends with the last
 * collective, which cost does not see: the local
 * search then minimises the step, and the searched order and every
 * fitting candidate are scored by their step time (collectives placed,
 * the W post-pass applied where it helps) and the shortest step is
 * kept. */
#include <stdio.h>
#include "plan/best.h"
#include "search/improve.h"
#include "zbsched/dp.h"
#include "zbsched/generator.h"
#include "zbsched/measures.h"
#include "zbsched/sim.h"
#include "zbsched/zero.h"

/* Share of the budget the runner-up's search gets (search_from_two()). */
#define RUNNER_UP_SHARE 0.5
/* The runner-up is searched only if it starts at most this many times
 * the best's distance to the lower bound above the best. */
#define RUNNER_UP_ROOM 2
/* Share of the budget the extra start's search gets (search_extra()). */
#define EXTRA_SHARE 1
/* Share the chosen order's search keeps where the ZB-V room start or
 * the capped list is searched too (room_searched(), capped_first()). */
#define BESIDE_ROOM_SHARE 0.25
/* Share the capped list's search gets where it goes first
 * (capped_first()): its own, and what the chosen order's search (1) and
 * the runner-up's give up, so the total stays the same. */
#define CAPPED_FIRST_SHARE \
    (EXTRA_SHARE + 1 + RUNNER_UP_SHARE - BESIDE_ROOM_SHARE)

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

    /* The chosen order is legal and fits (best.c checked it), so a
     * failure here would be a bug in the search: the chosen order stays,
     * and the pipeline validates whatever s holds. */
    if (ran && zbi_improve_order(p, s, &io, &st, NULL) < 0) {
        st.chain = -1;
        ran = false;
    }
    snprintf(s->origin, sizeof(s->origin), "%s%s", from,
             st.chain >= 0 ? "+search" : "");
    return ran;
}

/* Whether a and b (same profile) run the same passes in the same order
 * on every rank. */
static bool same_order(const struct zb_schedule *a,
                       const struct zb_schedule *b)
{
    for (int r = 0; r < a->profile.pp; r++) {
        const struct zb_op_list *x = &a->ranks[r], *y = &b->ranks[r];
        if (x->n != y->n)
            return false;
        for (int i = 0; i < x->n; i++)
            if (x->ops[i].kind != y->ops[i].kind ||
                x->ops[i].stage != y->ops[i].stage ||
                x->ops[i].mb != y->ops[i].mb)
                return false;
    }
    return true;
}

/* The fitting candidate after `best` (cost, makespan, memory) whose order
 * differs from best's, or NULL. A copy of best's order would be a second
 * search from the same start: at 1F1B's limit under V the `zb-v` family
 * is the better of the ZB-V construction and the list scheduler, both
 * candidates already. */
static const struct zb_schedule *runner_up(const struct best_candidates *c,
                                           const struct zb_schedule *best)
{
    const struct zb_schedule *r = NULL;

    for (int i = 0; i < c->n; i++) {
        const struct zb_schedule *x = &c->s[i];

        if (x == best || i == c->extra || i == c->capped ||
            !x->predicted.fits_memory ||
            same_order(x, best))
            continue;
        if (!r || zb_measures_better(&x->predicted, &r->predicted,
                                     x->profile.pp))
            r = x;
    }
    return r;
}

/* Candidate i (c->extra or c->capped: best.h) where it gets a search of
 * its own: it fits and starts better than the chosen best; without data
 * parallelism only (with it pick_by_step() weighs every candidate). NULL
 * otherwise. */
static const struct zb_schedule *own_start(const struct zb_profile *p,
                                           const struct best_candidates *c,
                                           int i,
                                           const struct zb_schedule *best)
{
    const struct zb_schedule *x = i >= 0 ? &c->s[i] : NULL;

    if (!x || zb_dp_active(p) || !x->predicted.fits_memory ||
        !zb_measures_better(&x->predicted, &best->predicted, p->pp))
        return NULL;
    return x;
}

/* Whether the extra start x that gets a search (own_start(); NULL: none)
 * is ZB-V's room start (V placement): its search then runs instead of
 * the runner-up's, and the best's keeps a quarter. Where it starts better,
 * its basin is the one that wins: on the five seeded grids of
 * bench_quality (20240117, 7, 3, 11, 5) the best's search at half its
 * budget and no runner-up changed none of the 240 V instances' gaps; with
 * no search from the best, one (0.43 -> 0.84 %). A quarter keeps that
 * one and takes the p 8, m 32 example of uneven V stages
 * (docs/examples/uneven-v-p8.json) to 0.2 s whole process (the issue's
 * 0.3 s): against a half, 4 of the 240 changed, 3 higher (0.43 -> 0.84,
 * 0.97 -> 1.00, 2.37 -> 2.38 %), 1 lower; against a half with the room
 * start's search cut to three quarters instead, 15 lower, 5 higher
 * (docs/model.md). Under loop the warm-up-depth order keeps the full
 * searches beside it: there the same cut lost 0.04-0.16 % on 5 loop
 * instances, and loop at p 8, m 32 takes 0.2 s with all three. */
static bool room_searched(const struct zb_profile *p,
                          const struct zb_schedule *x)
{
    return p->placement == ZB_PLACEMENT_V && x;
}

/* Whether the capped list's start y (own_start(); NULL: none: it is
 * built under V below 1F1B's memory and under interleaved placement)
 * takes the chosen order's budget but a quarter, and the runner-up's,
 * on top of its own: where it starts better, the chosen order (under V
 * V-Min, V-Half or the plain list scheduler) rarely ends below it. On
 * 118 profiles (the V draws at 1p of bench_quality's seeds 101-106, m
 * >= 2p, with the limit cut to 0.5p and 0.75p) the mean gap 9.65 ->
 * 9.40 % at 0.5p (51 lower, 2 higher) and 3.88 -> 3.74 % at 0.75p (37
 * lower, 5 higher), the same budget in all (the chosen order's search
 * cut to a quarter alone, the capped list's left at one budget: 9.69
 * and 3.89 %, 3 higher, none lower); on those seeds' 202 loop draws
 * split into two chunks per rank (interleaved, their own limit) 2.307
 * -> 2.275 % (62 lower, 15 higher; lower at 1p, 1.5p and 2p alike). Not
 * with the ZB-V room start also searched (`room`: it already took that
 * budget). */
static bool capped_first(bool room, const struct zb_schedule *y)
{
    return y && !room;
}

/* Search from the best candidate and, with half its budget more, from the
 * runner-up (with beside_room, room_searched() or capped_first(), only a
 * quarter of the budget from the best); keep the better result in s. The
 * search is local: from the best start it can settle in a basin that a
 * different start (another family's shape of warm-up and drain) avoids;
 * at p 8, m 32, V, a limit of 0.75 1F1B's, the best start (list
 * scheduler, 212) stays at 212 while the runner-up (V-Half, 215)
 * reaches 205. But a runner-up that starts further above the best than
 * twice the best's room (its distance to the lower bound) has not been
 * seen to win in half the budget: on bench_quality's grids of seeds
 * 20240117 and 7, 10 of 184 runner-up searches won, each from within
 * 0.31 % of the best start; the furthest winners seen started 0.9 and
 * 1.1 times the best's room above it (a seed-11 grid instance, a p 6
 * copy of a grid instance). Then the best's search gets that half
 * instead. Its first run is the default's, so this never ends worse
 * than the best's search alone did (but can where a far runner-up's
 * search would have won). Without data parallelism a best start that
 * meets the lower bound is already optimal: no search. With it the
 * search minimises the step, which pick_by_step() then weighs against
 * every candidate: one search. */
static void search_from_two(const struct zb_profile *p,
                            const struct zb_options *opt,
                            const struct best_candidates *c,
                            const struct zb_schedule *best,
                            bool beside_room, struct zb_schedule *s)
{
    const struct zb_measures *m = &best->predicted;
    const struct zb_schedule *r;
    struct zb_schedule t;

    zb_schedule_copy_order(s, best);
    snprintf(s->origin, sizeof(s->origin), "%s", best->name);
    if (zb_dp_active(p)) {
        search(p, opt, s, best->name, 1);
        return;
    }
    if (zbi_best_meets_bound(best))
        return;
    if (beside_room) {
        search(p, opt, s, best->name, BESIDE_ROOM_SHARE);
        return;
    }
    r = runner_up(c, best);
    if (r && r->predicted.cost - m->cost >
                 RUNNER_UP_ROOM * (m->cost - m->lower_bound))
        r = NULL;
    if (!search(p, opt, s, best->name, r ? 1 : 1 + RUNNER_UP_SHARE) || !r)
        return;
    if (zb_schedule_init(&t, best->name, p) < 0)
        return;
    zb_schedule_copy_order(&t, r);
    if (search(p, opt, &t, r->name, RUNNER_UP_SHARE) &&
        zb_measures_better(&t.predicted, &s->predicted, p->pp)) {
        zb_schedule_copy_order(s, &t);
        snprintf(s->origin, sizeof(s->origin), "%s", t.origin);
    }
    zb_schedule_release(&t);
}

/* A start of its own x (own_start(); NULL: none), searched by itself:
 * its search (`share` of the budget) replaces s when it ends better.
 * It is kept out of the choice because a search settles in its start's
 * basin: as a candidate it took the usual start's budget or split it
 * with the runner-up, and where the usual search ended lower that lost:
 * the warm-up-depth order (loop, tight memory) on bench_quality's
 * default grid 0.004 and 0.007 % on two instances, the ZB-V room rule up
 * to 0.11 % on 27 of the five seeded grids' 240 V instances (as the
 * extra start: none worse, 25 better, by up to 1.2 %). */
static void search_extra(const struct zb_profile *p,
                         const struct zb_options *opt,
                         const struct zb_schedule *x, double share,
                         struct zb_schedule *s)
{
    struct zb_schedule t;

    /* s's times: the order it holds (searched or not) simulated. */
    if (!x || zb_sim_run(s, NULL) < 0 || zb_schedule_init(&t, x->name, p) < 0)
        return;
    zb_schedule_copy_order(&t, x);
    if (search(p, opt, &t, x->name, share) &&
        zb_measures_better(&t.predicted, &s->predicted, p->pp)) {
        zb_schedule_copy_order(s, &t);
        snprintf(s->origin, sizeof(s->origin), "%s", t.origin);
    }
    zb_schedule_release(&t);
}

/* Whether x ends its step sooner than y, or as soon (within 1e-9) and is
 * better by cost, makespan, then memory: the search minimises the step,
 * whose optimum is flat, so another order often ties it more cheaply. */
static bool shorter(const struct zb_schedule *x, const struct zb_schedule *y)
{
    double a = x->predicted.step_time, b = y->predicted.step_time;

    return a < b * (1 - 1e-9) ||
           (a <= b * (1 + 1e-9) &&
            zb_measures_better(&x->predicted, &y->predicted,
                               x->profile.pp));
}

/* With data parallelism: replace s (the searched order) by the order, among
 * s and the fitting candidates, whose step with collectives is shortest;
 * s stays unless another is shorter or ties it and is better (shorter()),
 * then the first of equals.
 * The local search already minimises its own reckoning of the step
 * (improve_step.h), which leaves out ZeRO-3's gathers and the W
 * post-pass; so its result still competes here, placed and grouped. */
static int pick_by_step(const struct best_candidates *c, struct zb_schedule *s,
                        struct zb_error *err)
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
        if (shorter(&x, &best)) {
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

int zb_from_candidates(const struct zb_profile *p,
                       const struct zb_options *opt,
                       const struct best_candidates *c, struct zb_schedule *s,
                       struct zb_error *err)
{
    struct best b;
    int rc;

    zbi_best_init(&b);
    for (int i = 0; i < c->n; i++)
        if (i != c->extra && i != c->capped)
            zbi_best_consider(&b, &c->s[i]);
    /* The starts of their own are chosen where nothing else fits, or
     * where no search runs (--effort < 0: no basins to weigh), so zb
     * stays never worse than any of its candidates. */
    for (int k = 0; k < 2; k++) {
        int i = k == 0 ? c->extra : c->capped;
        if (i >= 0 && (!b.sched || opt->effort < 0))
            zbi_best_consider(&b, &c->s[i]);
    }
    if ((rc = zbi_best_result(&b, p, err)) == 0) {
        const struct zb_schedule *x = own_start(p, c, c->extra, b.sched);
        const struct zb_schedule *y = own_start(p, c, c->capped, b.sched);
        bool room = room_searched(p, x);
        bool capped = capped_first(room, y);
        search_from_two(p, opt, c, b.sched, room || capped, s);
        search_extra(p, opt, x, EXTRA_SHARE, s);
        /* Searched beside the usual starts, not instead of them: from
         * the capped list alone the search ended lower on 8 of 20 V grid
         * profiles at a 0.75p limit but higher on 6 (up to 1.0 -> 3.8 %
         * above the bound). */
        search_extra(p, opt, y, capped ? CAPPED_FIRST_SHARE : EXTRA_SHARE,
                     s);
        if (zb_dp_active(p))
            rc = pick_by_step(c, s, err);
    }
    return rc;
}

static int gen_zb(const struct zb_profile *p, const struct zb_options *opt,
                  struct zb_schedule *s, struct zb_error *err)
{
    struct best_candidates c;
    int rc;

    zbi_best_candidates_collect(p, opt, &c);
    rc = zb_from_candidates(p, opt, &c, s, err);
    zbi_best_candidates_release(&c);
    return rc;
}

const struct zb_generator zb_gen_zb = {
    .name = "zb",
    .summary = "memory-aware heuristic: real times, comm and limits; best "
               "of the paper's constructions, list scheduling and every "
               "fitting family, then local search (--effort)",
    .placements = ZB_PLACES_LOOP | ZB_PLACES_V, .min_vpp = 1, .max_vpp = 64,
    .memory_aware = true,
    .generate = gen_zb,
};
