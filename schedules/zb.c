/* zb.c - `zb`: the memory-aware heuristic. It reads the real per-stage
 * times, comm and per-rank limits and picks the best schedule that fits the
 * limit (cost, then makespan, then memory: best.c) among the paper's
 * constructions (construct.c, construct_v.c), the list scheduler
 * (greedy.c) and every fixed family that serves the profile; then a local
 * search (improve.c) works on that order for the effort budget. So `zb` is
 * never worse than any of its candidates, and equals ZB-H1 at 1F1B's
 * memory. With data parallelism the step ends with the last collective,
 * which cost does not see: the local search then minimises the step, and
 * the searched order and every fitting candidate are scored by their step
 * time (collectives placed, the W post-pass applied where it helps) and
 * the shortest step is kept. */
#include <stdio.h>
#include "best.h"
#include "improve.h"
#include "zbsched/dp.h"
#include "zbsched/generator.h"
#include "zbsched/measures.h"
#include "zbsched/zero.h"

/* Run the local search on s (the chosen order, from candidate `from`) and
 * say in s->origin where the result came from. */
static void search(const struct zb_profile *p, const struct zb_options *opt,
                   struct zb_schedule *s, const char *from)
{
    struct improve_opts io = {
        .effort = opt->effort != 0 ? opt->effort : improve_default_effort(p),
        .seed = (unsigned)opt->seed, .threads = opt->threads,
    };
    struct improve_stats st = { .chain = -1 };

    /* The chosen order is legal and fits (best.c checked it), so a
     * failure here would be a bug in the search: the chosen order stays,
     * and the pipeline validates whatever s holds. */
    if (io.effort > 0 && improve_order(p, s, &io, &st, NULL) < 0)
        st.chain = -1;
    snprintf(s->origin, sizeof(s->origin), "%s%s", from,
             st.chain >= 0 ? "+search" : "");
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

static int gen_zb(const struct zb_profile *p, const struct zb_options *opt,
                  struct zb_schedule *s, struct zb_error *err)
{
    struct best_candidates c;
    struct best b;
    int rc;

    best_candidates_collect(p, opt, &c);
    best_init(&b);
    for (int i = 0; i < c.n; i++)
        best_consider(&b, &c.s[i]);
    if ((rc = best_result(&b, p, err)) == 0) {
        zb_schedule_copy_order(s, b.sched);
        search(p, opt, s, b.sched->name);
        if (zb_dp_active(p))
            rc = pick_by_step(&c, s, err);
    }
    best_candidates_release(&c);
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
