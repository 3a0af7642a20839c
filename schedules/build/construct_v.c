/* construct_v.c - ZB-V constructed pass by pass, as the Zero Bubble
 * paper's heuristic does (its reference ZB-V heuristic), on real
 * per-stage times, comm and per-rank limits (see build.h).
 *
 * Rank r holds chunk 0 (stage r) and chunk 1 (stage 2p-1-r). Forward runs
 * chunk 0 up the ranks and chunk 1 back down; the backward has two legs:
 * chunk 1's B runs rank 0 -> p-1 ("first leg"), chunk 0's B p-1 -> 0
 * ("second leg"). Every pass is timed as it is placed by the simulator's
 * rule (timing.h), so the builder knows each rank's idle time.
 *
 * One run (construct_v_run.c) is steps 1-4: the warm-up chain and its
 * balance, rounds of one B and one F per rank with W passes filling the
 * gaps, each rank's slack; refine() re-runs it with each rank's
 * headroom. This file chooses the rules the runs follow:
 *
 * 5. Variants: fill F x fill B x warm-up rule (F ends before the input
 *    arrives, or starts while the rank is still idle), with no memory
 *    reserve in the rounds, plus two with a reserve for one chunk-1 F;
 *    each with the paper's leg rule and six of them also with the early
 *    one (step 3); ten again with one more warm-up F (step 2), two of
 *    those with the drain rule. Two threads take them in table order,
 *    each run is measured from its own times and the best that fits
 *    every limit is kept. On long profiles (from about 200 000 passes
 *    and m 8p) they run on a copy with half the microbatches or fewer,
 *    and the two that did best there run on the profile itself
 *    (build()). A variant one rule apart from one already refined is
 *    skipped when no decision of that one's runs turned on the rule
 *    (RULE_*): it would make the same runs.
 * 6. Tuning per rank: the variants give every rank the same rules, but
 *    with uneven stage times the best warm-up length and gap filling
 *    differ from rank to rank. From the winner's rules, one rank's rules
 *    change at a time (its warm-up one F longer or shorter, or one of
 *    fill F, fill B, warm-up rule, drain rule, leg rule, F before B in
 *    the rounds switched, or with CONSTRUCT_V_B_ROOM the room rule), kept
 *    when the refined run is better, sweep after sweep while one gains
 *    (bounded: TUNE_*; two moves at a time on two threads, see
 *    tune_ranks()); a move of a rule the best run's chain never turned
 *    on is skipped, as above.
 * 7. Under the paper's room rule, PyTorch's fixed ZBVZeroBubble order
 *    (fixed_rank()) is timed too and kept where it fits and is cheaper.
 *
 * Stalls: with a reserve, a chunk-0 F leaves room for the chunk-1 F of the
 * oldest microbatch in flight, so that microbatch can always advance and
 * no limit >= 2 M_B stalls. Without one a run can stall at a tight limit;
 * it is then dropped, and if every variant stalls a run that reserves room
 * for every microbatch in flight decides. */
#include <math.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include "build/build.h"
#include "build/construct_v_run.h"
#include "zbsched/sim.h"
#include "zbsched/timing.h"
#include "zbsched/xalloc.h"

/* Refinement runs per variant at most (it usually stops after 2-4). */
#define MAX_REFINE 12

/* Step 6 (tune_ranks()): a rank's warm-up may end at most this many of
 * its F passes before or after the first backward wave's arrival, and the
 * tuning's runs may place at most this many passes in all (a run places
 * 6 p m). */
#define TUNE_MAX_EXTRA 3
#define TUNE_BUDGET 8000000L
/* Sweeps over the ranks; one without a gain ends the tuning. */
#define TUNE_SWEEPS 3

/* The variants run on a copy of the profile with about this many passes
 * (at least SHORT_COPY_MIN_MB_PER_PP p microbatches) where that halves
 * its microbatches or more (build()). */
#define SHORT_COPY_PASSES 100000L
#define SHORT_COPY_MIN_MB_PER_PP 4

struct variant_log;

/* A thread's share of the variants. A run is kept as what makes it again
 * (each rank's rules and the headroom it ran with) and its measures, not
 * as an order: runs are deterministic, so zbi_construct_v() runs the winner
 * once more to record its order, and the other runs write none (at p 64,
 * m 1024 an order is 19 MB, and writing it and measuring it again took a
 * third of the construction's time). */
struct worker {
    const struct zb_profile *p;
    const double *limit;
    struct vc v;                /* every run's state */
    struct zb_measures best, scratch; /* the best run's, the last run's */
    int best_variant;           /* -1 while none */
    struct variant *best_var, *var; /* per rank: the best run's rules, the
                                       next run's */
    double *best_head;          /* per rank: the best run's headroom */
    bool best_headed;           /* whether it had one (not a first run) */
    double *head, *next_head;   /* per rank: the run's headroom, the next
                                   refinement's */
    unsigned *best_mattered;    /* per rank: RULE_* bits of the chain
                                   that made the best run */
    long runs, wins;            /* runs made; runs that became best */
    bool b_room;                /* every variant's b_room (the rules) */
    struct variant_log *log;    /* shared by both workers */
};

/* When the run measured in *ms (made under the rules `rules`, with
 * headroom `head`, NULL for none) fits and beats w's best, or w has
 * none, it becomes w's best (swapped: *ms gets the old measures). */
static bool take_if_better(struct worker *w, struct zb_measures *ms,
                           const struct variant *rules, const double *head,
                           int index)
{
    const int pp = w->p->pp;
    struct zb_measures t;

    if (!ms->fits_memory ||
        (w->best_variant >= 0 && !zb_measures_better(ms, &w->best, pp)))
        return false;
    t = w->best;
    w->best = *ms;
    *ms = t;
    w->best_variant = index;
    memcpy(w->best_var, rules, (size_t)pp * sizeof(*rules));
    w->best_headed = head != NULL;
    if (head)
        memcpy(w->best_head, head, (size_t)pp * sizeof(*head));
    w->wins++;
    return true;
}

/* w->var (each rank's rules) and its refinements: each re-run gets every
 * rank's headroom in the previous run (cost - its span) as slack, while
 * the cost falls. The chain's RULE_* bits are left in w->v.mattered (and
 * in w->best_mattered when it made the best run). Returns the lowest cost
 * of the chain's runs that fit (INFINITY: none). */
static double refine(struct worker *w, int index)
{
    const struct zb_profile *p = w->p;
    double prev = INFINITY, lowest = INFINITY;
    bool headed = false;
    long wins = w->wins;

    memset(w->v.mattered, 0, (size_t)p->pp * sizeof(unsigned));
    for (int it = 0; it < MAX_REFINE; it++) {
        struct zb_measures *ms = &w->scratch;
        double cost, *t;
        w->runs++;
        if (zbi_vc_run(&w->v, w->var, w->limit, headed ? w->head : NULL,
                     NULL) < 0)
            break;
        zbi_vc_measures(&w->v, ms);
        cost = ms->cost;
        if (ms->fits_memory && cost < lowest)
            lowest = cost;
        for (int r = 0; r < p->pp; r++)
            w->next_head[r] = cost - ms->ranks[r].span;
        take_if_better(w, ms, w->var, headed ? w->head : NULL, index);
        t = w->head;
        w->head = w->next_head;
        w->next_head = t;
        headed = true;
        if (!(cost < prev * (1 - 1e-12)))
            break;
        prev = cost;
    }
    if (w->wins > wins)
        memcpy(w->best_mattered, w->v.mattered,
               (size_t)p->pp * sizeof(unsigned));
    return lowest;
}

/* The limit each rank builds under: its own, or 2x 1F1B's if unlimited;
 * ZB_ENOMEM_LIMIT below one microbatch's two chunks. */
static int rank_limits(const struct zb_profile *p, double *limit,
                       struct zb_error *err)
{
    for (int r = 0; r < p->pp; r++) {
        limit[r] = isfinite(p->mem_limit[r]) ? p->mem_limit[r]
                                             : 4.0 * p->pp * p->m_b;
        if (!zb_timing_fits(2 * p->m_b, limit[r]))
            return zb_error_set(err, ZB_ENOMEM_LIMIT,
                                "ZB-V construction needs 2 chunk "
                                "activations (2*M_B = %g) on every rank, "
                                "rank %d has a limit of %g", 2 * p->m_b, r,
                                limit[r]);
    }
    return 0;
}

/* The variants that won on measured profiles: the reserve for one
 * chunk-1 F only with both fills; the early leg rule and one more warm-up
 * F for 1.5p and 2p profiles with uneven stage times; the drain rule's
 * and the early leg's rarely winning ones because dropping them made
 * searched results worse (docs/tuning.md, "ZB-V construction:
 * which variants"). */
static const struct variant variants[] = {
    { 0 },
    { .fill_f = true },
    { .fill_b = true },
    { .fill_f = true, .fill_b = true },
    { .warm_idle = true },
    { .fill_f = true, .warm_idle = true },
    { .fill_b = true, .warm_idle = true },
    { .fill_f = true, .fill_b = true, .warm_idle = true },
    { .fill_f = true, .fill_b = true, .reserve = RESERVE_ONE },
    { .fill_f = true, .fill_b = true, .warm_idle = true,
      .reserve = RESERVE_ONE },
    { .early_leg = true },
    { .fill_f = true, .early_leg = true },
    { .fill_b = true, .early_leg = true },
    { .fill_f = true, .fill_b = true, .early_leg = true },
    { .warm_idle = true, .early_leg = true },
    { .fill_f = true, .warm_idle = true, .early_leg = true },
    { .fill_b = true, .warm_idle = true, .early_leg = true },
    { .fill_f = true, .fill_b = true, .warm_idle = true, .early_leg = true },
    { .fill_f = true, .fill_b = true, .reserve = RESERVE_ONE,
      .early_leg = true },
    { .fill_f = true, .fill_b = true, .warm_idle = true,
      .reserve = RESERVE_ONE, .early_leg = true },
    { .warm_extra = 1 },
    { .fill_f = true, .warm_extra = 1 },
    { .fill_f = true, .fill_b = true, .warm_extra = 1 },
    { .fill_f = true, .fill_b = true, .warm_idle = true,
      .reserve = RESERVE_ONE, .warm_extra = 1 },
    { .fill_f = true, .fill_b = true, .drain_first = true, .warm_extra = 1 },
    { .fill_f = true, .fill_b = true, .warm_idle = true, .drain_first = true,
      .warm_extra = 1 },
    { .warm_extra = 1, .early_leg = true },
    { .fill_f = true, .fill_b = true, .warm_extra = 1, .early_leg = true },
    { .fill_f = true, .fill_b = true, .warm_idle = true, .warm_extra = 1,
      .early_leg = true },
    { .fill_f = true, .fill_b = true, .warm_idle = true,
      .reserve = RESERVE_ONE, .warm_extra = 1, .early_leg = true },
};
static const struct variant fallback = { .fill_f = true, .fill_b = true,
                                         .reserve = RESERVE_ALL };

/* Run variant v on every rank, under the worker's room rule, and refine
 * it; the chain's lowest cost (refine()). */
static double run_variant(struct worker *w, const struct variant *v,
                          int index)
{
    for (int r = 0; r < w->p->pp; r++) {
        w->var[r] = *v;
        w->var[r].b_room = w->b_room;
    }
    return refine(w, index);
}

#define N_VARIANTS (int)(sizeof(variants) / sizeof(variants[0]))

/* The rule (RULE_*) in which b differs from a when it differs in that one
 * tracked rule alone; 0 otherwise (none, several, or one not tracked). */
static unsigned one_rule_apart(const struct variant *a,
                               const struct variant *b)
{
    unsigned rule = 0;
    int n = 0;

#define APART(field, bit) \
    if (a->field != b->field) { \
        rule = (bit); \
        n++; \
    }
    APART(fill_f, RULE_FILL_F)
    APART(fill_b, RULE_FILL_B)
    APART(warm_idle, RULE_WARM_IDLE)
    APART(drain_first, RULE_DRAIN_FIRST)
    APART(early_leg, RULE_EARLY_LEG)
    APART(b_room, RULE_B_ROOM)
    APART(f_first, 0)
    APART(reserve, a->reserve != RESERVE_ALL && b->reserve != RESERVE_ALL
                       ? RULE_RESERVE : 0)
    APART(warm_extra, b->warm_extra == a->warm_extra + 1 ? RULE_LONGER
                      : b->warm_extra == a->warm_extra - 1 ? RULE_SHORTER
                                                           : 0)
#undef APART
    return n == 1 ? rule : 0;
}

/* Whether rules `to` make the same runs as `from` made in a chain that
 * turned on the RULE_* bits `mattered`: they differ in one rule, and no
 * decision of that chain turned on. */
static bool repeats(const struct variant *from, const struct variant *to,
                    unsigned mattered)
{
    unsigned rule = one_rule_apart(from, to);

    return rule && !(mattered & rule);
}

/* The variants' queue and what their chains turned on, shared by both
 * workers: each takes the next variant in table order, and skips one
 * that is one rule apart from a variant already refined whose chain never
 * turned on that rule (its chain would be that one's again, and an equal
 * later run never becomes the best). Which variants are skipped depends on
 * the threads' timing; the best does not. */
struct variant_log {
    bool skip;                          /* skip repeated chains (variants
                                           and tuning moves); else run
                                           them (every_chain) */
    atomic_int next;                    /* next variant to take */
    atomic_bool done[N_VARIANTS];       /* refined, mattered[] written */
    unsigned mattered[N_VARIANTS];      /* RULE_* bits, any rank */
    double cost[N_VARIANTS];            /* the chain's lowest cost
                                           (INFINITY: skipped, stalled) */
};

/* Whether variant i's chain is an earlier variant's again (above). */
static bool twin_done(struct variant_log *log, int i)
{
    for (int j = 0; j < i && log->skip; j++)
        if (atomic_load_explicit(&log->done[j], memory_order_acquire) &&
            repeats(&variants[j], &variants[i], log->mattered[j]))
            return true;
    return false;
}

static void *work(void *arg)
{
    struct worker *w = arg;
    struct variant_log *log = w->log;
    int i;

    while ((i = atomic_fetch_add(&log->next, 1)) < N_VARIANTS) {
        unsigned any = 0;
        if (twin_done(log, i))
            continue;
        log->cost[i] = run_variant(w, &variants[i], i);
        for (int r = 0; r < w->p->pp; r++)
            any |= w->v.mattered[r];
        log->mattered[i] = any;
        atomic_store_explicit(&log->done[i], true, memory_order_release);
    }
    return NULL;
}

static void worker_init(struct worker *w, const struct zb_profile *p,
                        const double *limit, bool b_room,
                        struct variant_log *log)
{
    *w = (struct worker){ .p = p, .limit = limit, .best_variant = -1,
                          .b_room = b_room, .log = log };
    zbi_vc_alloc(&w->v, p);
    w->best.ranks = zb_xcalloc((size_t)p->pp, sizeof(*w->best.ranks));
    w->scratch.ranks = zb_xcalloc((size_t)p->pp,
                                  sizeof(*w->scratch.ranks));
    w->var = zb_xcalloc((size_t)p->pp, sizeof(*w->var));
    w->best_var = zb_xcalloc((size_t)p->pp, sizeof(*w->best_var));
    w->best_head = zb_xmalloc((size_t)p->pp * sizeof(double));
    w->head = zb_xmalloc((size_t)p->pp * sizeof(double));
    w->next_head = zb_xmalloc((size_t)p->pp * sizeof(double));
    w->best_mattered = zb_xcalloc((size_t)p->pp, sizeof(unsigned));
}

static void worker_release(struct worker *w)
{
    zbi_vc_release(&w->v);
    free(w->best.ranks);
    free(w->scratch.ranks);
    free(w->var);
    free(w->best_var);
    free(w->best_head);
    free(w->head);
    free(w->next_head);
    free(w->best_mattered);
}

/* w's best run made again, its order recorded into s (replacing s's). */
static int record_best(struct worker *w, struct zb_schedule *s,
                       struct zb_error *err)
{
    for (int r = 0; r < w->p->pp; r++)
        s->ranks[r].n = 0;
    if (zbi_vc_run(&w->v, w->best_var, w->limit,
                 w->best_headed ? w->best_head : NULL, s) < 0)
        return zb_error_set(err, ZB_EILLEGAL, "ZB-V construction: the "
                            "best run did not repeat");
    zbi_vc_measures(&w->v, &s->predicted);
    return 0;
}

/* The worker of w[2] holding the better best run (on a tie the one of
 * the earlier variant), or NULL when neither has one. */
static struct worker *better_worker(struct worker w[2])
{
    if (w[1].best_variant < 0)
        return w[0].best_variant < 0 ? NULL : &w[0];
    if (w[0].best_variant < 0 ||
        zb_measures_better(&w[1].best, &w[0].best, w->p->pp))
        return &w[1];
    if (zb_measures_better(&w[0].best, &w[1].best, w->p->pp))
        return &w[0];
    return w[0].best_variant < w[1].best_variant ? &w[0] : &w[1];
}

/* Both workers' variants (the second on a thread when one starts); the
 * winner is chosen as if one thread had run them in table order. */
static struct worker *run_variants(struct worker w[2])
{
    struct side_thread helper;

    zbi_side_thread_start(&helper, work, &w[1]);
    work(&w[0]);
    zbi_side_thread_join(&helper);
    return better_worker(w);
}

/* Step 6's moves on one rank's rules: its warm-up one F pass longer or
 * shorter, or one of its rules switched. False when the move does not
 * apply (the warm-up already at its bound, or rank 0's, which step 2
 * does not extend). */
enum { MOVE_LONGER, MOVE_SHORTER, MOVE_FILL_F, MOVE_FILL_B, MOVE_WARM_IDLE,
       MOVE_DRAIN_FIRST, MOVE_EARLY_LEG, MOVE_F_FIRST, MOVE_B_ROOM,
       N_MOVES };

static bool apply_move(struct variant *v, int r, int move)
{
    switch (move) {
    case MOVE_LONGER:
    case MOVE_SHORTER: {
        int x = v->warm_extra + (move == MOVE_LONGER ? 1 : -1);
        if (r == 0 || x > TUNE_MAX_EXTRA || x < -TUNE_MAX_EXTRA)
            return false;
        v->warm_extra = x;
        return true;
    }
    case MOVE_FILL_F: v->fill_f = !v->fill_f; return true;
    case MOVE_FILL_B: v->fill_b = !v->fill_b; return true;
    case MOVE_WARM_IDLE: v->warm_idle = !v->warm_idle; return true;
    case MOVE_DRAIN_FIRST: v->drain_first = !v->drain_first; return true;
    case MOVE_EARLY_LEG: v->early_leg = !v->early_leg; return true;
    case MOVE_F_FIRST: v->f_first = !v->f_first; return true;
    default: v->b_room = !v->b_room; return true;
    }
}

/* The first move at or after *i (r * N_MOVES + move, in one sweep) that
 * applies to the rules `from` and changes a rule their chain turned on
 * (`mattered`, per rank: a move of another would make that chain again),
 * the changed rules written into w->var; false when the sweep has none
 * left. */
static bool next_move(struct worker *w, const struct variant *from,
                      const unsigned *mattered, int *i)
{
    const int pp = w->p->pp;

    for (; *i < pp * N_MOVES; (*i)++) {
        int r = *i / N_MOVES;
        /* The paper's rules stay the paper's: no rank makes room with
         * a B there (build.h). */
        if (*i % N_MOVES == MOVE_B_ROOM && !w->b_room)
            continue;
        memcpy(w->var, from, (size_t)pp * sizeof(*w->var));
        if (!apply_move(&w->var[r], r, *i % N_MOVES))
            continue;
        if (!w->log->skip || !repeats(&from[r], &w->var[r], mattered[r]))
            return true;
    }
    return false;
}

/* The move after move i once i is kept: after a longer warm-up, a
 * shorter one would only go back. */
static int after_kept(int i)
{
    return i + 1 + (i % N_MOVES == MOVE_LONGER);
}

/* w->var refined from scratch: w's best becomes that run's best. */
struct fresh_try {
    struct worker *w;
    int index;
};

static void *try_fresh(void *arg)
{
    struct fresh_try *t = arg;

    t->w->best_variant = -1;
    refine(t->w, t->index);
    return NULL;
}

/* When h's best run beats w's, it becomes w's best, with its rules. */
static bool adopt(struct worker *w, struct worker *h)
{
    if (h->best_variant < 0 ||
        !take_if_better(w, &h->best, h->best_var,
                        h->best_headed ? h->best_head : NULL,
                        w->best_variant))
        return false;
    memcpy(w->best_mattered, h->best_mattered,
           (size_t)w->p->pp * sizeof(unsigned));
    return true;
}

/* Step 6: from the winning run's rules (w's best), each rank's rules
 * changed one move at a time (apply_move()), rank by rank, a move kept
 * when its refined run becomes the best (cost, then makespan, then
 * memory), until a sweep gains nothing or the budget is spent. The
 * variants give every rank the same rules; with uneven stage times the
 * best warm-up length and gap filling differ from rank to rank. Two moves
 * are tried at once from the same rules, the second by helper h on a
 * thread; the first kept wins, and a second tried on rules the first has
 * changed is tried again, so the result is that of one move at a time
 * (where the budget binds, fewer moves: discarded tries count). */
static void tune_ranks(struct worker *w, struct worker *h)
{
    const struct zb_profile *p = w->p;
    const long budget = TUNE_BUDGET / (6L * p->pp * p->microbatches);
    const long runs0 = w->runs + h->runs;
    bool gained = true;

    for (int sweep = 0; gained && sweep < TUNE_SWEEPS; sweep++) {
        int i = 0;
        gained = false;
        while (w->runs + h->runs - runs0 < budget &&
               next_move(w, w->best_var, w->best_mattered, &i)) {
            int j = i + 1;
            long wins = w->wins;
            struct fresh_try t = { h, w->best_variant };
            bool pair = next_move(h, w->best_var, w->best_mattered, &j);
            struct side_thread helper;

            if (pair)
                zbi_side_thread_start(&helper, try_fresh, &t);
            refine(w, w->best_variant);
            if (pair)
                zbi_side_thread_join(&helper);
            if (w->wins > wins)
                i = after_kept(i);
            else if (pair && adopt(w, h))
                i = after_kept(j);
            else {
                i = j + 1;
                continue;
            }
            gained = true;
        }
    }
}

/* The two variants whose chains ran cheapest in log, at two different
 * costs (-1: fewer). A variant's twin (twin_done()) runs or is skipped
 * as the threads' timing has it, and makes the same chain at the same
 * cost: so it never takes the second place, and on equal costs the
 * earlier variant wins, which runs in either case. */
static void cheapest_two(const struct variant_log *log, int best[2])
{
    best[0] = best[1] = -1;
    for (int i = 0; i < N_VARIANTS; i++) {
        double c = log->cost[i];
        if (!isfinite(c) || (best[0] >= 0 && c == log->cost[best[0]]))
            continue;
        if (best[0] < 0 || c < log->cost[best[0]]) {
            best[1] = best[0];
            best[0] = i;
        } else if (best[1] < 0 || c < log->cost[best[1]]) {
            best[1] = i;
        }
    }
}

/* A variant's chain for a thread (variant -1: nothing). */
struct chain_job {
    struct worker *w;
    int variant;
};

static void *run_job(void *arg)
{
    struct chain_job *j = arg;

    if (j->variant >= 0)
        run_variant(j->w, &variants[j->variant], j->variant);
    return NULL;
}

/* Step 5 on workers copy[2] of a shorter copy of p, then the two
 * variants whose chains ran cheapest there refined at once on full[2],
 * p's workers: the better of full[] (NULL: both stalled). */
static struct worker *variants_shorter(struct worker copy[2],
                                       struct worker full[2])
{
    struct chain_job job[2] = { { &full[0], -1 }, { &full[1], -1 } };
    struct side_thread helper;
    int two[2];

    run_variants(copy);
    cheapest_two(copy[0].log, two);
    job[0].variant = two[0];
    job[1].variant = two[1];
    zbi_side_thread_start(&helper, run_job, &job[1]);
    run_job(&job[0]);
    zbi_side_thread_join(&helper);
    return better_worker(full);
}

/* The microbatches the variants run on for p (see build()): p itself
 * unless a copy with at most half its microbatches will do. */
static int shorter_microbatches(const struct zb_profile *p)
{
    long m = SHORT_COPY_PASSES / (6L * p->pp);

    if (m < SHORT_COPY_MIN_MB_PER_PP * (long)p->pp)
        m = SHORT_COPY_MIN_MB_PER_PP * (long)p->pp;
    return 2 * m <= p->microbatches ? (int)m : p->microbatches;
}

/* Rank r's program in PyTorch's ScheduleZBVZeroBubble order, the paper's
 * ZB-V at unit times as one fixed program (chunk c: 0 for stage r, 1 for
 * 2p-1-r): 2(p-r)-1 chunk-0 F, r pairs (chunk-1 F, chunk-0 F), p-r
 * rounds of chunk 1's F B W, rounds of chunk 0's (F) B W and chunk 1's F
 * B W until every F has run, r pairs of B (chunk 0, chunk 1), p-r of
 * chunk 0's B W, the W still owed (chunk 1's first). It is built for at
 * least 2p-1 microbatches; passes of those beyond m are left out. */
struct fixed {
    const struct zb_profile *p;
    struct zb_schedule *s;
    int r;
    int next[3][2];             /* per kind (F, B, W), chunk: microbatch */
};

static void fixed_pass(struct fixed *x, int k, int c)
{
    static const enum zb_op_kind kinds[3] = { ZB_OP_F, ZB_OP_B, ZB_OP_W };
    int mb = x->next[k][c]++;

    if (mb < x->p->microbatches)
        zb_schedule_push(x->s, x->r, kinds[k],
                         zb_profile_rank_stage(x->p, x->r, c), mb);
}

static void fixed_rank(const struct zb_profile *p, int r,
                       struct zb_schedule *s)
{
    const int pp = p->pp, m = p->microbatches;
    const int n = m > 2 * pp - 1 ? m : 2 * pp - 1;
    struct fixed x = { p, s, r, { { 0 } } };

    for (int i = 0; i < 2 * (pp - r) - 1; i++)
        fixed_pass(&x, 0, 0);
    for (int i = 0; i < r; i++) {
        fixed_pass(&x, 0, 1);
        fixed_pass(&x, 0, 0);
    }
    for (int i = 0; i < pp - r; i++) {
        fixed_pass(&x, 0, 1);
        fixed_pass(&x, 1, 1);
        fixed_pass(&x, 2, 1);
    }
    while (x.next[0][0] < n || x.next[0][1] < x.next[0][0]) {
        if (x.next[0][0] < n)
            fixed_pass(&x, 0, 0);
        fixed_pass(&x, 1, 0);
        fixed_pass(&x, 2, 0);
        fixed_pass(&x, 0, 1);
        fixed_pass(&x, 1, 1);
        fixed_pass(&x, 2, 1);
    }
    for (int i = 0; i < r; i++) {
        fixed_pass(&x, 1, 0);
        fixed_pass(&x, 1, 1);
    }
    for (int i = 0; i < pp - r; i++) {
        fixed_pass(&x, 1, 0);
        fixed_pass(&x, 2, 0);
    }
    while (x.next[2][1] < x.next[1][1])
        fixed_pass(&x, 2, 1);
    while (x.next[2][0] < x.next[1][0])
        fixed_pass(&x, 2, 0);
}

/* The fixed order above as one more candidate, kept in s when it fits and
 * beats the runs' best (or none was found; rc its error): on uneven
 * stage times the runs' deferred W passes can hold up the drain's last
 * B passes, which the rigid order runs first (docs/controllable-memory.md,
 * "`zb-v` against PyTorch's ZBVZeroBubble"). */
static int keep_fixed(const struct zb_profile *p, struct zb_schedule *s,
                      int rc)
{
    struct zb_schedule t;

    zb_schedule_init(&t, s->name, p);
    for (int r = 0; r < p->pp; r++)
        fixed_rank(p, r, &t);
    if (zb_sim_run(&t, NULL) == 0 && t.predicted.fits_memory &&
        (rc < 0 ||
         zb_measures_better(&t.predicted, &s->predicted, p->pp))) {
        zb_schedule_copy_order(s, &t);
        rc = zb_sim_run(s, NULL);
    }
    zb_schedule_release(&t);
    return rc;
}

/* The construction under the room rule b_room into s, skipping repeated
 * chains or not. On a long profile the variants (step 5) run on a copy
 * of p with fewer microbatches (shorter_microbatches()), and only the
 * two whose chains ran cheapest there run on p itself, before the tuning
 * (step 6, on p): the variants differ in the warm-up, the drain and the
 * W placement of a steady state that repeats every microbatch, all of
 * which the shorter copy has, at a fraction of a full run's cost. The
 * tuning stays on p: rank-by-rank moves that gained on the copy did not
 * on p (docs/tuning.md, "ZB-V construction: a shorter copy for long
 * profiles"). */
static int build(const struct zb_profile *p, bool b_room, bool skip,
                 struct zb_schedule *s, struct zb_error *err)
{
    struct worker w[2], copy[2];
    struct worker *win;
    struct variant_log log = { .skip = skip };
    struct zb_profile shorter;
    const int short_m = shorter_microbatches(p);
    double *limit = zb_xmalloc((size_t)p->pp * sizeof(double));
    int rc;

    if ((rc = rank_limits(p, limit, err)) < 0) {
        free(limit);
        return rc;
    }
    atomic_init(&log.next, 0);
    for (int i = 0; i < N_VARIANTS; i++) {
        atomic_init(&log.done[i], false);
        log.cost[i] = INFINITY;
    }
    worker_init(&w[0], p, limit, b_room, &log);
    worker_init(&w[1], p, limit, b_room, &log);
    if (short_m < p->microbatches) {
        zb_profile_copy(&shorter, p);
        shorter.microbatches = short_m;
        worker_init(&copy[0], &shorter, limit, b_room, &log);
        worker_init(&copy[1], &shorter, limit, b_room, &log);
        win = variants_shorter(copy, w);
        worker_release(&copy[0]);
        worker_release(&copy[1]);
        zb_profile_release(&shorter);
    } else {
        win = run_variants(w);
    }
    if (win)
        tune_ranks(win, win == &w[0] ? &w[1] : &w[0]);
    /* The deadlock-free reserve, only when every variant stalled. */
    if (!win) {
        run_variant(&w[0], &fallback, 0);
        win = w[0].best_variant < 0 ? NULL : &w[0];
    }
    if (win)
        rc = record_best(win, s, err);
    else
        rc = zb_error_set(err, ZB_ENOMEM_LIMIT,
                          "no constructed ZB-V order fits the memory "
                          "limits");
    if (!b_room)
        rc = keep_fixed(p, s, rc);
    worker_release(&w[0]);
    worker_release(&w[1]);
    free(limit);
    return rc;
}

static int check_shape(const struct zb_profile *p, struct zb_error *err)
{
    if (p->placement != ZB_PLACEMENT_V || p->vpp != 2)
        return zb_error_set(err, ZB_EUNSUPPORTED,
                            "ZB-V construction needs placement v and vpp "
                            "2, got placement %s and vpp %d",
                            zb_placement_name(p->placement), p->vpp);
    return 0;
}

int zbi_construct_v(const struct zb_profile *p, enum construct_v_rules rules,
                    struct zb_schedule *s, struct zb_error *err)
{
    int rc = check_shape(p, err);

    return rc < 0 ? rc : build(p, rules == CONSTRUCT_V_B_ROOM, true, s,
                               err);
}

int zbi_construct_v_every_chain(const struct zb_profile *p,
                                enum construct_v_rules rules,
                                struct zb_schedule *s, struct zb_error *err)
{
    int rc = check_shape(p, err);

    return rc < 0 ? rc : build(p, rules == CONSTRUCT_V_B_ROOM, false, s,
                               err);
}
