/* warm_depth.c - the list scheduler with a warm-up depth per stage (see
 * build.h).
 *
 * Why: at tight memory (1F1B's, 1.5 times it) with unequal stage times
 * the better orders warm the middle ranks up deeper than 1F1B's "one
 * fewer per rank" (ILP optima, long searches), and a stage then runs two
 * B's before an F whose input is late. The rounds of construct.c (one F,
 * then one B, per stage) cannot express that; the list scheduler does by
 * its own rule (the pass whose input arrives first runs first), but with
 * memory as its only brake it warms every rank up as deep as the limit
 * allows. Here a depth per stage brakes it: stage s runs an F only while
 * fewer than d[s] of its microbatches wait for their B, so it warms up d[s]
 * deep and in the steady state runs a B first whenever the next F's input
 * has not arrived. The depths are chosen by the simulated cost, one step
 * at a time on one stage or on two neighbouring stages together. */
#include <math.h>
#include <stdlib.h>
#include "build/build.h"
#include "zbsched/measures.h"
#include "zbsched/timing.h"
#include "zbsched/xalloc.h"

/* Sweeps over the stages; a sweep with no gain ends the descent early. */
#define WARM_DEPTH_SWEEPS 3
/* Passes all tries together may place (each places 3 p m), so the time stays
 * bounded (docs/tuning.md, "Warm-up depths: budget and start"). */
#define WARM_DEPTH_BUDGET 3000000L

/* The list scheduler's W rules tried (greedy_policy.w_patience) at the
 * start depths: which fills best depends on the profile; the best one
 * is kept for the descent. No F waits for a B: the depth already brakes
 * the F passes. */
static const double w_patience[] = { 0, 0.5, 1 };
#define N_W_RULES (sizeof(w_patience) / sizeof(w_patience[0]))

struct descent {
    const struct zb_profile *p;
    const int *most;        /* per stage: the deepest its limit holds */
    int *d;                 /* per stage: depth being tried */
    double w;               /* W rule being tried */
    long tries_left;
    bool have;              /* best holds an order that fits */
    struct zb_schedule best, try;
};

/* Schedule with depths d and W rule w into try; true when it ran,
 * try->predicted then filled. */
static bool run_depths(const struct zb_profile *p, const int *d, double w,
                       struct zb_schedule *try)
{
    struct greedy_policy pol = { w, 0, d, 0 };

    for (int r = 0; r < p->pp; r++)
        try->ranks[r].n = 0;
    if (zbi_greedy_schedule(p, &pol, try, NULL) < 0)
        return false;
    zb_measures_from_times(p, try->ranks, &try->predicted);
    return true;
}

/* Keep try in best (swapped) when it fits and beats best (or best has
 * none yet). */
static bool keep_if_better(const struct zb_profile *p, bool *have,
                           struct zb_schedule *best, struct zb_schedule *try)
{
    struct zb_schedule tmp;

    if (!try->predicted.fits_memory ||
        (*have && !zb_measures_better(&try->predicted, &best->predicted,
                                      p->pp)))
        return false;
    tmp = *best;
    *best = *try;
    *try = tmp;
    *have = true;
    return true;
}

/* Stage r's first depth: 1F1B's (p - r, which its peak of p activations on
 * rank 0 allows) scaled by how much more the rank's limit holds than that
 * peak, within what it holds (most): the descent from there ends at or near
 * the best of the scales tried, where 1F1B's own depths end well above
 * (docs/tuning.md, "Warm-up depths: budget and start"). */
static int start_depth(const struct zb_profile *p, int r, int most)
{
    double scale = p->mem_limit[r] / (p->pp * p->m_b);
    double d = ceil((p->pp - r) * fmax(scale, 1) - 1e-9);

    return d < most ? (int)d : most;
}

/* One try of x->d under x->w, kept in x->best when it fits and beats
 * it; false when it does not (or the budget is spent). */
static bool attempt(struct descent *x)
{
    if (x->tries_left <= 0)
        return false;
    x->tries_left--;
    return run_depths(x->p, x->d, x->w, &x->try) &&
           keep_if_better(x->p, &x->have, &x->best, &x->try);
}

/* Stages r..r+n-1 one step deeper (step 1) or shallower (-1) together,
 * kept when that fits their limits and lowers the cost; whether kept. */
static bool try_step(struct descent *x, int r, int n, int step)
{
    for (int i = r; i < r + n; i++)
        if (x->d[i] + step < 1 || x->d[i] + step > x->most[i])
            return false;
    for (int i = r; i < r + n; i++)
        x->d[i] += step;
    if (attempt(x))
        return true;
    for (int i = r; i < r + n; i++)
        x->d[i] -= step;
    return false;
}

/* Move one stage's depth by one (deeper first) while that lowers the
 * cost, then two neighbouring stages' depths together (where one alone
 * only moves the wait to its neighbour); sweeps end early without a
 * gain. */
static void descend(struct descent *x)
{
    bool gained = true;

    for (int sweep = 0; gained && sweep < WARM_DEPTH_SWEEPS; sweep++) {
        gained = false;
        for (int n = 1; n <= 2; n++)
            for (int r = 0; r + n <= x->p->pp; r++)
                for (int step = 1; step >= -1; step -= 2)
                    if (try_step(x, r, n, step)) {
                        gained = true;
                        break;
                    }
    }
}

int zbi_warm_depth_loop(const struct zb_profile *p, struct zb_schedule *s,
                        struct zb_error *err)
{
    const int pp = p->pp, m = p->microbatches;
    struct descent x = { .p = p };
    int *most;
    double w = w_patience[0];
    int rc = 0;

    if (p->placement != ZB_PLACEMENT_LOOP || p->vpp != 1)
        return zb_error_set(err, ZB_EUNSUPPORTED,
                            "warm-up depths need loop placement and vpp 1, "
                            "got %s and vpp %d",
                            zb_placement_name(p->placement), p->vpp);
    most = zb_xcalloc((size_t)pp, sizeof(int));
    x.d = zb_xcalloc((size_t)pp, sizeof(int));
    for (int r = 0; r < pp; r++) {
        double n = zb_timing_fit_count(p->mem_limit[r], p->m_b);
        most[r] = n < 1 ? 1 : n < m ? (int)n : m;
        x.d[r] = start_depth(p, r, most[r]);
    }
    x.most = most;
    x.tries_left = WARM_DEPTH_BUDGET / (3L * pp * m);
    if (x.tries_left < (long)N_W_RULES)
        x.tries_left = N_W_RULES;
    zb_schedule_init(&x.best, s->name, p);
    zb_schedule_init(&x.try, s->name, p);
    for (size_t i = 0; i < N_W_RULES; i++) {
        x.w = w_patience[i];
        if (attempt(&x))
            w = x.w;
    }
    x.w = w;
    if (x.have)
        descend(&x);
    if (x.have) {
        /* s takes the best whole: its times and measures come along. */
        struct zb_schedule old = *s;

        *s = x.best;
        x.best = old;
    } else
        rc = zb_error_set(err, ZB_ENOMEM_LIMIT,
                          "the list scheduler with warm-up depths stalls "
                          "at the memory limit");
    zb_schedule_release(&x.best);
    zb_schedule_release(&x.try);
    free(x.d);
    free(most);
    return rc;
}
