/* greedy.c - the memory-aware list scheduler behind `zb`, `zb-h2` and
 * `zb-v` (see build.h for the contract).
 *
 * Time is simulated exactly as sim.c does (timing.h). Each rank has at
 * most three candidates per chunk: its next F, B and W (same-kind passes
 * in microbatch order, as in the Zero Bubble reference code). A
 * candidate's ready time is when its rank is free and its inputs have
 * arrived. Each step commits the rank whose chosen pass starts first (the
 * top of a heap of ranks); only the ranks of the committed stage and its
 * neighbours can change their choice, so a step costs O(log p). */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "build/build.h"
#include "zbsched/pass.h"
#include "zbsched/timing.h"
#include "zbsched/xalloc.h"

struct choice {
    bool valid;
    double t;               /* start time */
    enum zb_op_kind kind;
    int stage;
};

struct greedy {
    const struct zb_profile *p;
    const struct greedy_policy *pol;
    int nstages;
    int *next[ZB_PASS_COUNT]; /* per stage: next microbatch of each kind */
    double *end;              /* per pass; NAN until committed */
    double *clock, *mem;      /* per rank */
    struct choice *choice;    /* per rank, cached */
    int *stale, nstale;       /* ranks whose choice must be recomputed */
    bool *is_stale;
    int *heap, *where;        /* ranks by (choice time, rank); where[r] =
                                 r's index in heap */
};

/* When the input of the next pass of kind k (F or B) at stage s on rank r
 * arrives, or NAN while its producer has not run. A B's own F has always
 * run (B passes trail F passes on a stage), so only the gradient from the
 * next stage counts; on the last stage that F is the input. */
static double input_ready(const struct greedy *g, enum zb_pass k, int s,
                          int r)
{
    const struct zb_profile *p = g->p;
    int mb = g->next[k][s], from;
    double e;

    if (k == ZB_PASS_F) {
        if (s == 0)
            return 0;
        from = s - 1;
        e = g->end[zb_pass_index(p, ZB_PASS_F, from, mb)];
    } else if (s == g->nstages - 1) {
        return g->end[zb_pass_index(p, ZB_PASS_F, s, mb)];
    } else {
        from = s + 1;
        e = g->end[zb_pass_index(p, ZB_PASS_B, from, mb)];
    }
    return zb_timing_arrival(p, from, s, r, e);
}

static int kind_rank(enum zb_op_kind k)
{
    return k == ZB_OP_B ? 0 : k == ZB_OP_F ? 1 : 2;
}

/* Among passes ready at the same time: B, then F, then the later stage
 * (its microbatch is closer to the turn or to the end, so the pipeline
 * drains sooner and frees memory first). */
static bool better_tie(const struct choice *x, const struct choice *best)
{
    int kx = kind_rank(x->kind), kb = kind_rank(best->kind);
    return kx < kb || (kx == kb && x->stage > best->stage);
}

static void choose(struct greedy *g, int r)
{
    const struct zb_profile *p = g->p;
    const int m = p->microbatches;
    struct choice best = { 0 }, best_w = { 0 }, best_b = { 0 }, best_f = { 0 };
    double soonest_bf = INFINITY;

    for (int c = 0; c < p->vpp; c++) {
        int s = zb_profile_rank_stage(p, r, c);
        struct choice cand[3];
        int n = 0;
        /* F: keep room for this microbatch's F on the rank's later
         * chunks, or a rank full of early-chunk activations could never
         * reach a B that frees them. */
        if (g->next[ZB_PASS_F][s] < m &&
            (!g->pol->in_flight ||
             g->next[ZB_PASS_F][s] - g->next[ZB_PASS_B][s] <
                 g->pol->in_flight[s]) &&
            zb_timing_fits(g->mem[r] + (p->vpp - c) * p->m_b,
                           p->mem_limit[r]))
            cand[n++] = (struct choice){ true,
                                         input_ready(g, ZB_PASS_F, s, r),
                                         ZB_OP_F, s };
        if (g->next[ZB_PASS_B][s] < g->next[ZB_PASS_F][s])
            cand[n++] = (struct choice){ true,
                                         input_ready(g, ZB_PASS_B, s, r),
                                         ZB_OP_B, s };
        if (g->next[ZB_PASS_W][s] < g->next[ZB_PASS_B][s])
            cand[n++] = (struct choice){ true, g->clock[r], ZB_OP_W, s };
        for (int i = 0; i < n; i++) {
            struct choice *x = &cand[i];
            if (isnan(x->t))
                continue;
            x->t = zb_timing_start(g->clock[r], x->t);
            if (x->kind == ZB_OP_W) {
                if (!best_w.valid || x->t < best_w.t)
                    best_w = *x;
                continue;
            }
            soonest_bf = fmin(soonest_bf, x->t);
            if (x->kind == ZB_OP_B && (!best_b.valid || x->t < best_b.t))
                best_b = *x;
            if (x->kind == ZB_OP_F && (!best_f.valid || x->t < best_f.t))
                best_f = *x;
            if (!best.valid || x->t < best.t ||
                (x->t == best.t && better_tie(x, &best)))
                best = *x;
        }
    }
    /* A B that is ready first yields to an F due within the policy's
     * b_patience (forwards first). */
    if (best.valid && best.kind == ZB_OP_B && best_f.valid &&
        best_f.t < best.t + g->pol->b_patience * p->stage[best.stage].b)
        best = best_f;
    /* An F that is ready first yields to a B due within the policy's
     * patience: B passes are the critical path back to rank 0. */
    if (best.valid && best.kind == ZB_OP_F && best_b.valid &&
        best_b.t < best.t + g->pol->f_patience * p->stage[best.stage].f)
        best = best_b;
    /* A W goes first only if it does not hold up a B or F by more than
     * the policy's patience allows. */
    if (best_w.valid) {
        double tw = p->stage[best_w.stage].w;
        if (!best.valid || best_w.t + g->pol->w_patience * tw < soonest_bf)
            best = best_w;
    }
    g->choice[r] = best;
}

static void mark_rank(struct greedy *g, int r)
{
    if (!g->is_stale[r]) {
        g->is_stale[r] = true;
        g->stale[g->nstale++] = r;
    }
}

static void mark_stale(struct greedy *g, int stage)
{
    mark_rank(g, zb_profile_stage_rank(g->p, stage));
    if (stage + 1 < g->nstages)
        mark_rank(g, zb_profile_stage_rank(g->p, stage + 1));
    if (stage > 0)
        mark_rank(g, zb_profile_stage_rank(g->p, stage - 1));
}

/* ---- ranks in an indexed min-heap: the next commit is at the top ---- */

static bool heap_less(const struct greedy *g, int a, int b)
{
    double ta = g->choice[a].valid ? g->choice[a].t : INFINITY;
    double tb = g->choice[b].valid ? g->choice[b].t : INFINITY;
    return ta < tb || (ta == tb && a < b);
}

static void heap_swap(struct greedy *g, int i, int j)
{
    int t = g->heap[i];
    g->heap[i] = g->heap[j];
    g->heap[j] = t;
    g->where[g->heap[i]] = i;
    g->where[g->heap[j]] = j;
}

/* Restore the heap after rank r's choice changed. */
static void heap_fix(struct greedy *g, int r)
{
    int i = g->where[r], n = g->p->pp;

    while (i > 0 && heap_less(g, g->heap[i], g->heap[(i - 1) / 2])) {
        heap_swap(g, i, (i - 1) / 2);
        i = (i - 1) / 2;
    }
    for (;;) {
        int l = 2 * i + 1, min = i;
        if (l < n && heap_less(g, g->heap[l], g->heap[min]))
            min = l;
        if (l + 1 < n && heap_less(g, g->heap[l + 1], g->heap[min]))
            min = l + 1;
        if (min == i)
            break;
        heap_swap(g, i, min);
        i = min;
    }
}

int zbi_greedy_schedule(const struct zb_profile *p,
                        const struct greedy_policy *pol, struct zb_schedule *s,
                        struct zb_error *err)
{
    struct greedy g = { .p = p, .pol = pol, .nstages = zb_profile_stages(p) };
    long npass = zb_pass_count(p), left = npass;
    int rc = 0;

    for (int k = 0; k < ZB_PASS_COUNT; k++)
        g.next[k] = zb_xcalloc((size_t)g.nstages, sizeof(int));
    g.end = zb_xmalloc((size_t)npass * sizeof(double));
    for (long i = 0; i < npass; i++)
        g.end[i] = NAN;
    g.clock = zb_xcalloc((size_t)p->pp, sizeof(double));
    g.mem = zb_xcalloc((size_t)p->pp, sizeof(double));
    g.choice = zb_xcalloc((size_t)p->pp, sizeof(*g.choice));
    g.stale = zb_xmalloc((size_t)p->pp * sizeof(int));
    g.is_stale = zb_xcalloc((size_t)p->pp, sizeof(bool));
    g.heap = zb_xmalloc((size_t)p->pp * sizeof(int));
    g.where = zb_xmalloc((size_t)p->pp * sizeof(int));
    for (int r = 0; r < p->pp; r++) {
        g.heap[r] = g.where[r] = r;
        mark_rank(&g, r);
        /* Every pass of the rank's chunks, at once: growing the lists op
         * by op copied them over and over on large pipelines while the
         * other policies' thread faulted in pages too. */
        zb_xgrow((void **)&s->ranks[r].ops, &s->ranks[r].cap,
                 s->ranks[r].n + ZB_PASS_COUNT * p->vpp * p->microbatches,
                 sizeof(struct zb_op));
    }

    while (left > 0) {
        while (g.nstale > 0) {
            int r = g.stale[--g.nstale];
            g.is_stale[r] = false;
            choose(&g, r);
            heap_fix(&g, r);
        }
        int r_best = g.heap[0];
        if (!g.choice[r_best].valid) {
            rc = zb_error_set(err, ZB_ENOMEM_LIMIT,
                              "the memory limit stalls the schedule with "
                              "%ld of %ld passes placed", npass - left,
                              npass);
            goto out;
        }
        struct choice c = g.choice[r_best];
        enum zb_pass k = zb_pass_of(c.kind);
        int mb = g.next[k][c.stage]++;
        double d = c.kind == ZB_OP_F ? p->stage[c.stage].f
                 : c.kind == ZB_OP_B ? p->stage[c.stage].b
                                     : p->stage[c.stage].w;
        g.end[zb_pass_index(p, k, c.stage, mb)] = c.t + d;
        g.clock[r_best] = c.t + d;
        g.mem[r_best] += zb_pass_memory_delta(p, c.kind, c.stage);
        zb_schedule_push(s, r_best, c.kind, c.stage, mb);
        /* The simulator would time this order exactly so: same rules. */
        s->ranks[r_best].ops[s->ranks[r_best].n - 1].start = c.t;
        s->ranks[r_best].ops[s->ranks[r_best].n - 1].end = c.t + d;
        mark_stale(&g, c.stage);
        left--;
    }
out:
    for (int k = 0; k < ZB_PASS_COUNT; k++)
        free(g.next[k]);
    free(g.end);
    free(g.clock);
    free(g.mem);
    free(g.choice);
    free(g.stale);
    free(g.is_stale);
    free(g.heap);
    free(g.where);
    return rc;
}

/* The first six reach the best patience values found on loop profiles;
 * V placement runs the first four (a W patience of 1 never won there);
 * the last two run forwards first, for interleaved placement
 * (docs/tuning.md, "List scheduler: the eight policies" and "List
 * scheduler: forwards first"). */
const struct greedy_policy zbi_greedy_policies[GREEDY_POLICIES] = {
    { 0, 0, NULL, 0 }, { 0.5, 0, NULL, 0 }, { 0, 0.5, NULL, 0 },
    { 0.5, 0.5, NULL, 0 }, { 1, 0, NULL, 0 }, { 1, 0.5, NULL, 0 },
    { 0, 0, NULL, 1 }, { 0.5, 0, NULL, 1 },
};

struct policy_run {
    const struct zb_profile *p;
    const struct greedy_policy *pol;
    const char *name;
    struct zb_schedule sched;   /* timed order, valid when rc == 0 */
    int rc;
    struct zb_error err;
};

static void run_policy(struct policy_run *run)
{
    zb_schedule_init(&run->sched, run->name, run->p);
    run->rc = zbi_greedy_schedule(run->p, run->pol, &run->sched, &run->err);
    /* zbi_greedy_schedule() timed the order as the simulator does:
     * measures from those times (no bounds needed to compare policies). */
    if (run->rc == 0)
        zb_measures_from_times(run->p, run->sched.ranks,
                               &run->sched.predicted);
    if (run->rc < 0)
        zb_schedule_release(&run->sched);
}

/* The second core takes every other policy. */
static void *run_odd_policies(void *arg)
{
    struct policy_run *runs = arg;
    for (size_t i = 1; runs[i].p; i += 2)
        run_policy(&runs[i]);
    return NULL;
}

int zbi_greedy_best(const struct zb_profile *p, struct zb_schedule *s,
                    struct zb_error *err)
{
    const size_t n = p->placement == ZB_PLACEMENT_V ? GREEDY_V_POLICIES
                                                    : GREEDY_POLICIES;
    struct policy_run runs[GREEDY_POLICIES + 2];
    struct policy_run *best = NULL;
    struct side_thread helper;

    /* Zeroed tail: runs[n].p and runs[n + 1].p are NULL, ending the
     * helper's walk over the odd entries. */
    memset(runs, 0, sizeof(runs));
    for (size_t i = 0; i < n; i++)
        runs[i] = (struct policy_run){ .p = p, .pol = &zbi_greedy_policies[i],
                                       .name = s->name };
    zbi_side_thread_start(&helper, run_odd_policies, runs);
    for (size_t i = 0; i < n; i += 2)
        run_policy(&runs[i]);
    zbi_side_thread_join(&helper);

    /* In policy order, so the choice does not depend on thread timing. */
    for (size_t i = 0; i < n; i++) {
        if (runs[i].rc < 0)
            continue;
        if (!best || zb_measures_better(&runs[i].sched.predicted,
                                        &best->sched.predicted, p->pp))
            best = &runs[i];
    }
    if (best)
        zb_schedule_copy_order(s, &best->sched);
    else if (err)
        *err = runs[n - 1].err;     /* every policy stalled: say why */
    for (size_t i = 0; i < n; i++)
        if (runs[i].rc == 0)
            zb_schedule_release(&runs[i].sched);
    return best ? 0 : runs[n - 1].rc;
}

int zbi_greedy_best_1f1b(const struct zb_profile *p, struct zb_schedule *s,
                         struct zb_error *err)
{
    const double peak = zb_profile_1f1b_peak(p);
    struct zb_profile lean;
    struct zb_schedule t;
    bool above = false;
    int rc;

    for (int r = 0; r < p->pp; r++)
        above = above || p->mem_limit[r] > peak;
    if (!above)
        return zb_error_set(err, ZB_EUNSUPPORTED, "list scheduler at 1F1B's "
                            "memory: no rank has more");
    zb_profile_copy(&lean, p);
    for (int r = 0; r < p->pp; r++)
        lean.mem_limit[r] = fmin(lean.mem_limit[r], peak);
    zb_schedule_init(&t, s->name, &lean);
    if ((rc = zbi_greedy_best(&lean, &t, err)) == 0)
        zb_schedule_copy_order(s, &t);
    zb_schedule_release(&t);
    zb_profile_release(&lean);
    return rc;
}
