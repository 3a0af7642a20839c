/* greedy_caps.c - the list scheduler under V placement below 1F1B's
 * memory and under interleaved placement, with its warm-up depths
 * searched (see build.h).
 *
 * Why: between V-Min's and 1F1B's memory neither the ZB-V construction (its
 * warm-up keeps the reserve that 1F1B's memory needs) nor the list scheduler
 * (memory alone limits its forwards) does well. Both fill a rank with early
 * chunk-0 forwards, whose activations live for the whole round trip; the
 * chunk-1 forwards, which turn into a B after a short trip, then wait for a W
 * to free room and the pipeline stalls in lockstep (docs/tuning.md, "Capped
 * list scheduler: the stall"). Capping the microbatches each stage holds
 * between its F and its B (greedy_policy.in_flight) keeps room for those short
 * trips. A stage's share follows its round trip, which runs through every
 * later stage and back: stage s of n holds at most
 * ceil(a (n - s) / n) + b - 1, which starts closer to the bound than one
 * cap per chunk. The best a and b depend on the times and the limit, and
 * cost is far from convex in them, so they are searched: a coarse grid,
 * then a pattern search (steps halving; at each point the other V
 * policies too) while the work budget lasts; then all that once more
 * with forwards first. Each batch of runs is split over two threads and
 * decided in a fixed order, so the result does not depend on the
 * threads. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "build/build.h"
#include "zbsched/measures.h"
#include "zbsched/pass.h"
#include "zbsched/xalloc.h"

/* Points per axis of the coarse grid. */
#define CAPS_GRID 6
/* Passes all the runs of one search may place (a run places 6 p m;
 * docs/tuning.md, "Capped list scheduler: caps and their searches"). */
#define CAPS_BUDGET 4000000L
/* Largest cap tried: the (a, b) grid's memory is quadratic in it, and a
 * stage holding more is left to the uncapped runs. */
#define CAPS_TOP_MAX 512
/* Most points in one batch: the coarse grid and the uncapped runs, or a
 * step's neighbours. */
#define CAPS_BATCH (CAPS_GRID * CAPS_GRID + GREEDY_V_POLICIES)

/* Stage s of n holds at most ceil(a (n - s) / n) + b - 1 microbatches
 * between its F and its B, under policy q; at a = b = top, no cap. */
struct caps_point {
    int a, b;
    int q;          /* zbi_greedy_policies[] index */
};

/* One thread's share of a batch: points from, from + 2, ...; the best
 * run among them (the earliest of equals) in best. */
struct caps_worker {
    const struct zb_profile *p;
    const struct caps_point *pt;
    int n, from, top;
    double b_patience;          /* every run's: the search's mode */
    struct zb_schedule best, scratch;
    int best_i;                 /* index into pt, -1: none ran */
};

/* Exchange two schedules (their buffers go with them). */
static void swap_schedules(struct zb_schedule *a, struct zb_schedule *b)
{
    struct zb_schedule x = *a;

    *a = *b;
    *b = x;
}

static void run_point(struct caps_worker *w, int i, int *caps)
{
    const struct zb_profile *p = w->p;
    struct greedy_policy pol = zbi_greedy_policies[w->pt[i].q];
    struct zb_schedule *t = &w->scratch;
    int n = zb_profile_stages(p);

    for (int s = 0; s < n; s++)
        caps[s] = (w->pt[i].a * (n - s) + n - 1) / n + w->pt[i].b - 1;
    pol.in_flight = w->pt[i].a == w->top && w->pt[i].b == w->top ? NULL
                                                                 : caps;
    pol.b_patience = w->b_patience;
    for (int r = 0; r < p->pp; r++)
        t->ranks[r].n = 0;
    if (zbi_greedy_schedule(p, &pol, t, NULL) < 0)
        return;
    zb_measures_from_times(p, t->ranks, &t->predicted);
    if (w->best_i < 0 ||
        zb_measures_better(&t->predicted, &w->best.predicted, p->pp)) {
        swap_schedules(&w->best, t);
        w->best_i = i;
    }
}

static void *run_share(void *arg)
{
    struct caps_worker *w = arg;
    int *caps = zb_xcalloc((size_t)zb_profile_stages(w->p), sizeof(int));

    w->best_i = -1;
    for (int i = w->from; i < w->n; i += 2)
        run_point(w, i, caps);
    free(caps);
    return NULL;
}

/* Run the n points on two threads; the best run (then the earliest
 * point) in the winning worker's best. Returns that worker, or NULL when
 * every run stalled. */
static struct caps_worker *run_batch(struct caps_worker w[2],
                                     const struct caps_point *pt, int n)
{
    struct side_thread helper;

    for (int k = 0; k < 2; k++) {
        w[k].pt = pt;
        w[k].n = n;
    }
    zbi_side_thread_start(&helper, run_share, &w[1]);
    run_share(&w[0]);
    zbi_side_thread_join(&helper);
    if (w[0].best_i < 0)
        return w[1].best_i < 0 ? NULL : &w[1];
    if (w[1].best_i < 0)
        return &w[0];
    if (zb_measures_better(&w[1].best.predicted, &w[0].best.predicted,
                           w[0].p->pp))
        return &w[1];
    if (zb_measures_better(&w[0].best.predicted, &w[1].best.predicted,
                           w[0].p->pp))
        return &w[0];
    return w[1].best_i < w[0].best_i ? &w[1] : &w[0];
}

/* The search's state: the best run so far (its point and order), the
 * points already run, the runs the budget has left. */
struct caps_search {
    const struct zb_profile *p;
    int top;                    /* largest cap tried */
    bool *seen;                 /* per (a, b, q); search_mode() clears it */
    long runs_left;
    bool found;
    struct caps_point at;
    struct zb_schedule best;
    struct caps_worker w[2];
};

/* Entries of c->seen: one per (q, a, b). */
static size_t seen_count(const struct caps_search *c)
{
    return (size_t)GREEDY_V_POLICIES * (size_t)(c->top + 1) *
           (size_t)(c->top + 1);
}

/* Make the timed order *x the best so far where it beats it (or none was
 * found yet); *x then holds the old best. True when it did. */
static bool take_if_better(struct caps_search *c, struct zb_schedule *x)
{
    if (c->found && !zb_measures_better(&x->predicted, &c->best.predicted,
                                        c->p->pp))
        return false;
    swap_schedules(&c->best, x);
    c->found = true;
    return true;
}

static bool *seen_at(struct caps_search *c, struct caps_point x)
{
    return &c->seen[((size_t)x.q * (size_t)(c->top + 1) + (size_t)x.a) *
                        (size_t)(c->top + 1) + (size_t)x.b];
}

/* Add x to the batch unless it is out of range, already run or over the
 * budget. */
static void offer(struct caps_search *c, struct caps_point *pt, int *n,
                  struct caps_point x)
{
    if (x.a < 1 || x.b < 1 || x.a > c->top || x.b > c->top ||
        *seen_at(c, x) || *n >= CAPS_BATCH || *n >= c->runs_left)
        return;
    *seen_at(c, x) = true;
    pt[(*n)++] = x;
}

/* Run the batch; true when its best beats the best so far (which it then
 * becomes). */
static bool improve_with(struct caps_search *c, const struct caps_point *pt,
                         int n)
{
    struct caps_worker *win;

    c->runs_left -= n;
    win = n > 0 ? run_batch(c->w, pt, n) : NULL;
    if (!win || !take_if_better(c, &win->best))
        return false;
    c->at = pt[win->best_i];
    return true;
}

static void search(struct caps_search *c)
{
    struct caps_point pt[CAPS_BATCH];
    int n = 0, step = c->top / CAPS_GRID > 1 ? c->top / CAPS_GRID : 1;

    for (int i = 1; i <= CAPS_GRID; i++)
        for (int j = 1; j <= CAPS_GRID; j++)
            offer(c, pt, &n, (struct caps_point){
                      (c->top * i + CAPS_GRID - 1) / CAPS_GRID,
                      (c->top * j + CAPS_GRID - 1) / CAPS_GRID, 0 });
    /* The plain list scheduler's runs (no cap at a = b = top), so this
     * is never worse. */
    for (int q = 1; q < GREEDY_V_POLICIES; q++)
        offer(c, pt, &n, (struct caps_point){ c->top, c->top, q });
    improve_with(c, pt, n);
    while (c->found && c->runs_left > 0) {
        struct caps_point x = c->at;
        n = 0;
        offer(c, pt, &n, (struct caps_point){ x.a - step, x.b, x.q });
        offer(c, pt, &n, (struct caps_point){ x.a + step, x.b, x.q });
        offer(c, pt, &n, (struct caps_point){ x.a, x.b - step, x.q });
        offer(c, pt, &n, (struct caps_point){ x.a, x.b + step, x.q });
        for (int q = 0; q < GREEDY_V_POLICIES; q++)
            offer(c, pt, &n, (struct caps_point){ x.a, x.b, q });
        if (!improve_with(c, pt, n)) {
            if (step == 1)
                break;
            step /= 2;
        }
    }
}

/* Where some rank has more than 1F1B's memory, the list scheduler held
 * to it (zbi_greedy_best_1f1b()) when it beats every capped run: memory,
 * unlike the caps, also counts the W's a stage defers, and some
 * interleaved profiles run cheaper so than at their own larger limit
 * (docs/tuning.md, "Capped list scheduler: caps and their
 * searches"). */
static void offer_1f1b_memory(struct caps_search *c)
{
    struct zb_schedule t;

    zb_schedule_init(&t, c->best.name, c->p);
    if (zbi_greedy_best_1f1b(c->p, &t, NULL) == 0) {
        zb_measures_from_times(c->p, t.ranks, &t.predicted);
        take_if_better(c, &t);
    }
    zb_schedule_release(&t);
}

/* A fresh search over every point in the given mode (the policies'
 * b_patience), from the best so far: the grid, then the pattern search
 * from whichever point is best. The second search runs forwards first
 * (b_patience 1; greedy.c): it lowers `zb`'s gaps under interleaved
 * placement and V below 1F1B's memory, and is kept apart from the
 * ready-first search because mixing the two did worse (docs/tuning.md,
 * "Capped list scheduler: caps and their searches"). */
static void search_mode(struct caps_search *c, double b_patience)
{
    memset(c->seen, 0, seen_count(c) * sizeof(bool));
    c->runs_left = CAPS_BUDGET / zb_pass_count(c->p);
    c->w[0].b_patience = c->w[1].b_patience = b_patience;
    search(c);
}

/* Whether the caps are searched for p: the budget buys the coarse grid,
 * and either V with two chunks and some rank below 1F1B's peak, or
 * interleaved loop placement (vpp >= 2) at any limit, none included (a
 * rank holds at most its m vpp activations, so the caps stop at m).
 * Interleaved has the V's trouble at every limit: the list scheduler
 * fills the memory with chunk-0 forwards and the last microbatches'
 * round trips end late; without a limit it does no better
 * (docs/tuning.md, "Capped list scheduler: caps and their
 * searches"). */
static bool searched(const struct zb_profile *p)
{
    bool below = false;

    if (CAPS_BUDGET / zb_pass_count(p) < CAPS_BATCH)
        return false;
    for (int r = 0; r < p->pp; r++)
        below = below || p->mem_limit[r] < zb_profile_1f1b_peak(p);
    if (p->placement == ZB_PLACEMENT_LOOP)
        return p->vpp >= 2;
    return p->vpp == 2 && below;
}

int zbi_greedy_capped(const struct zb_profile *p, struct zb_schedule *s,
                      struct zb_error *err)
{
    struct caps_search c = { .p = p };
    double most = 0;

    if (!searched(p))
        return zb_error_set(err, ZB_EUNSUPPORTED, "capped list scheduler: "
                            "interleaved or V below 1F1B's memory only, up "
                            "to %ld passes",
                            CAPS_BUDGET / CAPS_BATCH);
    for (int r = 0; r < p->pp; r++)
        most = fmax(most, p->mem_limit[r]);
    c.top = (int)fmin(fmin(p->microbatches, ceil(most / p->m_b)),
                      CAPS_TOP_MAX);
    c.top = c.top > 1 ? c.top : 1;
    c.seen = zb_xmalloc(seen_count(&c) * sizeof(bool));
    zb_schedule_init(&c.best, s->name, p);
    for (int k = 0; k < 2; k++) {
        c.w[k].p = p;
        c.w[k].from = k;
        c.w[k].top = c.top;
        zb_schedule_init(&c.w[k].best, s->name, p);
        zb_schedule_init(&c.w[k].scratch, s->name, p);
    }
    search_mode(&c, 0);
    search_mode(&c, 1);
    offer_1f1b_memory(&c);
    if (c.found)
        zb_schedule_copy_order(s, &c.best);
    for (int k = 0; k < 2; k++) {
        zb_schedule_release(&c.w[k].best);
        zb_schedule_release(&c.w[k].scratch);
    }
    zb_schedule_release(&c.best);
    free(c.seen);
    return c.found ? 0 : zb_error_set(err, ZB_ENOMEM_LIMIT, "capped list "
                                      "scheduler: the limit stalls every "
                                      "run");
}
