/* construct_v.c - ZB-V constructed pass by pass, as the Zero Bubble
 * paper's heuristic does (notes/zb-heuristics.md, "The reference ZB-V
 * heuristic"), on real per-stage times, comm and per-rank limits.
 *
 * Rank r holds chunk 0 (stage r) and chunk 1 (stage 2p-1-r). Forward runs
 * chunk 0 up the ranks and chunk 1 back down; the backward has two legs:
 * chunk 1's B runs rank 0 -> p-1 ("first leg"), chunk 0's B p-1 -> 0
 * ("second leg"). Every pass is timed as it is placed (start = when the
 * rank is free and its inputs have arrived, comm on cross-rank edges: the
 * simulator's rule), so the builder knows each rank's idle time.
 *
 * 1. Warm-up, chain: chunk-0 F of microbatch 0 on every rank; then from
 *    rank p-1 down, rank i's chunk-1 F of microbatch 0, preceded by as many
 *    extra chunk-0 F on ranks 0..i as fit before its input arrives, while
 *    each rank j keeps a reserve of 2 + 2j chunk activations (what it will
 *    still take on before its first B at 1F1B memory).
 * 2. Warm-up, balance: every rank but 0 adds F passes (chunk 1 when its
 *    input is there) that end before the first backward wave reaches it
 *    (per variant, or at most one F after).
 * 3. Rounds: per rank one B (second leg when its first leg ran here and its
 *    input is placed, else first leg; per variant, first leg first once
 *    the rank's F are done, or the leg whose input arrives first),
 *    second-leg ranks descending, then first-leg ranks ascending (both
 *    follow their dependencies); then one F
 *    per rank, ascending (chunk 1 when its input is placed). Before each B
 *    or F: W passes (oldest first) to make room in memory (with
 *    CONSTRUCT_V_B_ROOM, before an F first a B whose input is there),
 *    whole W passes in the idle gap before the pass's input arrives, and
 *    one more W if the remaining gap exceeds the rank's slack (always
 *    before a second-leg B; before a first-leg B or an F per variant).
 *    Then the remaining W.
 * 4. Slack: how much more idle a rank may take without becoming the worst
 *    (the largest work + idle so far, minus its own). Refinement re-runs
 *    with each rank's headroom from the previous run (cost - its span) as
 *    extra slack while the cost keeps shrinking.
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
 *
 * Stalls: with a reserve, a chunk-0 F leaves room for the chunk-1 F of the
 * oldest microbatch in flight, so that microbatch can always advance and
 * no limit >= 2 M_B stalls. Without one a run can stall at a tight limit;
 * it is then dropped, and if every variant stalls a run that reserves room
 * for every microbatch in flight decides. */
#include <assert.h>
#include <math.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include "families.h"
#include "construct_v.h"
#include "memo.h"
#include "side_thread.h"
#include "zbsched/pass.h"
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

/* early_leg: how much sooner (in B passes of the first leg) the first
 * leg's input must arrive to be taken before the second leg's. */
#define EARLY_LEG_MARGIN 0.25

struct variant {
    bool fill_f;    /* a gap over the slack before an F gets one more W */
    bool fill_b;    /* likewise before a first-leg B (second leg: always) */
    bool warm_idle; /* warm-up F while the rank is still idle when the
                       input arrives, else only if it ends by then */
    int reserve;    /* room a chunk-0 F leaves for chunk-1 F passes:
                       RESERVE_* */
    bool drain_first; /* once a rank has run all its F: first-leg B
                       before second-leg B (see choose_leg()) */
    int warm_extra;   /* warm-up F passes a rank may run past the first
                       backward wave's arrival (see warm_balance()): the
                       extra microbatch in flight absorbs uneven times;
                       negative: it stops that many F passes earlier */
    bool early_leg;   /* the B leg whose input arrives first (see
                         choose_leg()) */
    bool f_first;     /* in each round, the rank's F before its B (see
                         rounds()): one more microbatch in flight where
                         memory allows (no variant; step 6 sets it) */
    bool b_room;      /* an F that does not fit runs a B whose input is
                         there first (place_f(); construct_v.h): set by
                         the caller's rules for every variant, switched
                         per rank by step 6 */
};

enum {
    RESERVE_NONE,   /* none: fastest, may stall at tight limits */
    RESERVE_ONE,    /* one, for the oldest microbatch in flight */
    RESERVE_ALL     /* one per microbatch in flight: never stalls */
};

/* The rules a run's decisions turned on (struct vc.mattered, per rank, a
 * bit per rule): set when a decision on that rank would have gone the
 * other way under the rank's rules with that one rule changed (warm_extra
 * one longer or shorter; the reserve between none and one). Rules under
 * which every run of a refinement chain made the same decisions make the
 * same chain: twin_done() and next_move() skip such chains (at p 64, m
 * 1024 on unit times 28 of a construction's 80 runs). f_first is not
 * tracked: its moves always run. */
enum {
    RULE_FILL_F = 1 << 0,
    RULE_FILL_B = 1 << 1,
    RULE_WARM_IDLE = 1 << 2,
    RULE_LONGER = 1 << 3,       /* warm_extra + 1 */
    RULE_SHORTER = 1 << 4,      /* warm_extra - 1 */
    RULE_RESERVE = 1 << 5,
    RULE_DRAIN_FIRST = 1 << 6,
    RULE_EARLY_LEG = 1 << 7,
    RULE_B_ROOM = 1 << 8
};

/* One run's state. The arrays are allocated once per worker (vc_alloc())
 * and reset for each of its runs (vc_reset()): a construction makes
 * dozens of runs, over a thousand at p 23, m 49 (TUNE_BUDGET). */
struct vc {
    const struct zb_profile *p;
    const struct variant *var;  /* per rank: its rules */
    struct zb_schedule *s;      /* the order being built, with times; NULL:
                                   not recorded (see refine()) */
    int pp, m;
    double eps;                 /* time tolerance */
    double *end;                /* per pass; NAN until placed */
    double *clock, *bubble;     /* per rank: free at, idle */
    struct zb_rank_tally *tally; /* per rank: busy, span, memory (with the
                                   running sum fits() reads) */
    double *work;               /* per rank: total busy time */
    const double *limit;        /* per rank: memory it may use */
    const double *headroom;     /* per rank: refinement slack, or NULL */
    double worst;               /* max over ranks of work + bubble */
    double delta[3];            /* memory change of an F, B, W */
    int (*nf)[2], (*nb)[2], (*nw)[2]; /* per rank, chunk: next microbatch */
    int *wq, *wq_head, *wq_tail; /* per rank: FIFO of pending W chunks */
    int *leg;                   /* per rank: B chunk chosen this round */
    long fb_left;               /* F and B passes still to place */
    unsigned *mattered;         /* per rank: RULE_* bits the runs since
                                   refine() cleared them turned on */
};

static int stage_of(const struct vc *v, int r, int c)
{
    return zb_profile_rank_stage(v->p, r, c);
}

static double pass_dur(const struct vc *v, enum zb_op_kind k, int stage)
{
    const struct zb_stage_times *t = &v->p->stage[stage];
    return k == ZB_OP_F ? t->f : k == ZB_OP_B ? t->b : t->w;
}

static int *next_of(const struct vc *v, enum zb_op_kind k, int r, int c)
{
    return k == ZB_OP_F ? &v->nf[r][c]
         : k == ZB_OP_B ? &v->nb[r][c] : &v->nw[r][c];
}

/* A decision on rank r would have gone the other way under `rule`
 * changed (RULE_*). */
static void note(struct vc *v, int r, unsigned rule)
{
    v->mattered[r] |= rule;
}

/* End of a pass (NAN until placed). Microbatch-major, unlike
 * zb_pass_index(): a pass and its inputs share a microbatch, so they sit
 * close together (this lookup dominates the run time). */
static double *end_of(const struct vc *v, enum zb_pass k, int stage, int mb)
{
    return &v->end[((long)mb * 2 * v->pp + stage) * ZB_PASS_COUNT + k];
}

/* When the output of pass (k, stage, mb) reaches rank r; NAN if unplaced. */
static double arrival(const struct vc *v, enum zb_pass k, int stage, int mb,
                      int r)
{
    double e = *end_of(v, k, stage, mb);
    return zb_profile_stage_rank(v->p, stage) == r ? e : e + v->p->comm;
}

/* When every input of the next pass of kind k on chunk c of rank r has
 * arrived (-INFINITY: it has none); NAN while one is not placed. The
 * dependencies of passes.h: F(s) after F(s-1); B(s) after F(s) and
 * B(s+1); W(s) after B(s). */
static double next_input(const struct vc *v, enum zb_op_kind k, int r, int c)
{
    int stage = stage_of(v, r, c), mb = *next_of(v, k, r, c);

    if (k == ZB_OP_W)
        return *end_of(v, ZB_PASS_B, stage, mb);
    if (k == ZB_OP_F)
        return stage == 0 ? -INFINITY
                          : arrival(v, ZB_PASS_F, stage - 1, mb, r);
    if (stage == 2 * v->pp - 1)
        return *end_of(v, ZB_PASS_F, stage, mb);
    /* NAN while either is unplaced: a comparison with a NAN is false. */
    double g = arrival(v, ZB_PASS_B, stage + 1, mb, r);
    double f = *end_of(v, ZB_PASS_F, stage, mb);
    return isnan(g) || g > f ? g : f;
}

/* The hot path of a construction: comparisons rather than fmax(),
 * which is a libm call at -O2 (NAN cannot reach here: the assert). */
static void put(struct vc *v, int r, enum zb_op_kind k, int c)
{
    int stage = stage_of(v, r, c);
    double in = next_input(v, k, r, c);
    int mb = (*next_of(v, k, r, c))++;
    double start = in > v->clock[r] ? in : v->clock[r];
    double end = start + pass_dur(v, k, stage);
    struct zb_rank_tally *t = &v->tally[r];

    assert(mb < v->m && !isnan(in));
    if (t->last_end > -INFINITY)        /* not r's first pass */
        v->bubble[r] += start - v->clock[r];
    if (v->work[r] + v->bubble[r] > v->worst)
        v->worst = v->work[r] + v->bubble[r];
    v->clock[r] = end;
    *end_of(v, zb_pass_of(k), stage, mb) = end;
    zb_tally_pass(t, start, end);
    zb_tally_memory(t, v->delta[k == ZB_OP_F ? 0 : k == ZB_OP_B ? 1 : 2]);
    /* zb_schedule_push() with the times, into room vc_reset() made. */
    if (v->s) {
        struct zb_op_list *l = &v->s->ranks[r];
        l->ops[l->n++] = (struct zb_op){ .kind = k, .stage = stage,
                                         .mb = mb, .peer = -1, .seq = -1,
                                         .start = start, .end = end };
    }
    if (k == ZB_OP_B)
        v->wq[r * 2 * v->m + v->wq_tail[r]++] = c;
    if (k != ZB_OP_W)
        v->fb_left--;
}

static int pending_w(const struct vc *v, int r)
{
    return v->wq_tail[r] - v->wq_head[r];
}

static double front_w(const struct vc *v, int r)
{
    int c = v->wq[r * 2 * v->m + v->wq_head[r]];
    return pass_dur(v, ZB_OP_W, stage_of(v, r, c));
}

static void put_w(struct vc *v, int r)
{
    put(v, r, ZB_OP_W, v->wq[r * 2 * v->m + v->wq_head[r]++]);
}

/* How much more idle rank r may take: up to the worst rank's work + idle,
 * or its headroom from the previous run, whichever is larger. */
static double slack(const struct vc *v, int r)
{
    double own = v->work[r] + v->bubble[r], s = v->worst - own;

    if (v->headroom)
        s = fmax(s, v->headroom[r] - v->bubble[r]);
    return s;
}

/* Before a pass whose inputs arrive at t_in: whole pending W passes into
 * the idle gap, then, when `extra`, one more if the gap left is larger
 * than the rank may idle (it delays the pass by less than a W); `rule` is
 * the rule that set `extra` (0: none, it always holds). */
static void fill_gap(struct vc *v, int r, double t_in, bool extra,
                     unsigned rule)
{
    while (pending_w(v, r) > 0 && v->clock[r] + front_w(v, r) <=
                                      t_in + v->eps)
        put_w(v, r);
    if (pending_w(v, r) > 0 && t_in - v->clock[r] > slack(v, r) + v->eps) {
        note(v, r, rule);
        if (extra)
            put_w(v, r);
    }
}

static bool fits(const struct vc *v, int r, double need)
{
    return v->tally[r].mem + need <= v->limit[r] * (1 + 1e-9) + 1e-12;
}

/* Run W passes until `need` more memory fits; whether it does. Runs none
 * when all of them would not make room: a W placed for nothing can only
 * delay the rank. */
static bool make_room(struct vc *v, int r, double need)
{
    double freeable = pending_w(v, r) * v->p->m_w;

    if (!fits(v, r, need - freeable))
        return false;
    while (!fits(v, r, need) && pending_w(v, r) > 0)
        put_w(v, r);
    return fits(v, r, need);
}

/* Memory a chunk-c F on rank r must find free: its own activation and,
 * for chunk 0, room for the chunk-1 F passes it leaves pending. Where r
 * has no room for two activations (a chunk-0 F's need under RESERVE_ONE,
 * one more than under RESERVE_NONE), the reserve may decide: noted. */
static double f_need(struct vc *v, int r, int c)
{
    int later = v->nf[r][0] + 1 - v->nf[r][1];

    if (c == 0 && !fits(v, r, 2 * v->p->m_b))
        note(v, r, RULE_RESERVE);
    if (c == 1 || v->var[r].reserve == RESERVE_NONE)
        return v->p->m_b;
    return v->p->m_b * (1 + (v->var[r].reserve == RESERVE_ALL ? later : 1));
}

/* The F rank r should run next: chunk 1 when its input is placed, else
 * chunk 0 when its input is; -1 for none. */
static int choose_f(const struct vc *v, int r)
{
    if (v->nf[r][1] < v->nf[r][0] && !isnan(next_input(v, ZB_OP_F, r, 1)))
        return 1;
    if (v->nf[r][0] < v->m && !isnan(next_input(v, ZB_OP_F, r, 0)))
        return 0;
    return -1;
}

/* ---- warm-up --------------------------------------------------------- */

/* Whether a warm-up F of d from `start` is in time for t moved by
 * `extra` F's: it ends by then, or, `idle`, starts before (the rank is
 * still idle when t comes). */
static bool in_time(const struct vc *v, double start, double d, double t,
                    bool idle, int extra)
{
    t += extra * d;
    return idle ? start < t - v->eps : start + d <= t + v->eps;
}

/* Whether one more chunk-0 F on each of ranks 0..i fits the reserve of
 * rank j (2 + 2j activations, or the strict need) and, on rank i, time:
 * it ends before t (or starts before t, warm_idle). */
static bool chain_fits(struct vc *v, int i, double t)
{
    double e = -INFINITY, start = 0, d = 0;
    bool go;

    for (int j = 0; j <= i; j++) {
        double reserve = fmax(2 + 2 * j, v->var[j].reserve == RESERVE_ALL
                              ? v->nf[j][0] + 2 - v->nf[j][1] : 0);
        if (v->nf[j][0] >= v->m || !fits(v, j, reserve * v->p->m_b))
            return false;
        start = fmax(v->clock[j], j > 0 ? e + v->p->comm : -INFINITY);
        d = v->p->stage[stage_of(v, j, 0)].f;
        e = start + d;
    }
    go = in_time(v, start, d, t, v->var[i].warm_idle, 0);
    if (in_time(v, start, d, t, !v->var[i].warm_idle, 0) != go)
        note(v, i, RULE_WARM_IDLE);
    return go;
}

static void warm_chain(struct vc *v)
{
    for (int r = 0; r < v->pp; r++)
        put(v, r, ZB_OP_F, 0);
    for (int i = v->pp - 1; i >= 0; i--) {
        if (i < v->pp - 1) {
            double t = next_input(v, ZB_OP_F, i, 1);
            while (chain_fits(v, i, t))
                for (int j = 0; j <= i; j++)
                    put(v, j, ZB_OP_F, 0);
        }
        if (fits(v, i, v->p->m_b))
            put(v, i, ZB_OP_F, 1);
    }
}

/* F passes on ranks 1..p-1 that end (start, warm_idle) before the first
 * backward wave arrives, or warm_extra F durations after it (before, if
 * negative); ranks descending, so a chunk-1 F finds its input from the
 * rank above placed in the same sweep. */
static void warm_balance(struct vc *v, double *arrive)
{
    bool more = true;

    if (v->nf[0][1] == 0)
        return;
    arrive[0] = v->clock[0];
    for (int r = 1; r < v->pp; r++)
        arrive[r] = arrive[r - 1] + v->p->stage[stage_of(v, r - 1, 1)].b +
                    v->p->comm;
    while (more) {
        more = false;
        for (int r = v->pp - 1; r >= 1; r--) {
            int c = choose_f(v, r);
            if (c < 0 || !fits(v, r, f_need(v, r, c)))
                continue;
            const struct variant *x = &v->var[r];
            double start = fmax(v->clock[r], next_input(v, ZB_OP_F, r, c));
            double d = v->p->stage[stage_of(v, r, c)].f;
            bool go = in_time(v, start, d, arrive[r], x->warm_idle,
                              x->warm_extra);
            if (in_time(v, start, d, arrive[r], !x->warm_idle,
                        x->warm_extra) != go)
                note(v, r, RULE_WARM_IDLE);
            if (in_time(v, start, d, arrive[r], x->warm_idle,
                        x->warm_extra + 1) != go)
                note(v, r, RULE_LONGER);
            if (in_time(v, start, d, arrive[r], x->warm_idle,
                        x->warm_extra - 1) != go)
                note(v, r, RULE_SHORTER);
            if (go) {
                put(v, r, ZB_OP_F, c);
                more = true;
            }
        }
    }
}

/* ---- steady rounds --------------------------------------------------- */

/* The B chunk rank r runs this round: the second leg (chunk 0) when its
 * first leg ran here and its input is placed (always on the last rank,
 * where the input is the rank's own), else the first leg; -1 for none.
 * With drain_first, a rank that has run all its F takes a first-leg B
 * whose input is placed first: in the drain the ranks otherwise trade
 * one B of each leg in lockstep and the last ranks wait for first-leg
 * B's; running that leg ahead keeps them fed. With early_leg, a rank
 * whose first-leg input is placed and arrives sooner than the second
 * leg's (by EARLY_LEG_MARGIN of a B, or that one is not placed yet) takes
 * the first leg: the paper's rule makes the rank wait for the second
 * leg's input, which comes back from the turn and, with uneven stage
 * times, late, while the first leg's B is there to run (on the 1.5p
 * instances of the quality grid the heaviest rank's idle went mostly to
 * such waits). */
static int choose_leg(struct vc *v, int r)
{
    const struct variant *x = &v->var[r];
    bool can2 = v->nb[r][0] < v->nb[r][1];
    bool can1 = v->nb[r][1] < v->nf[r][1];
    bool drain = can1 && v->nf[r][1] >= v->m &&
                 !isnan(next_input(v, ZB_OP_B, r, 1));
    bool early = false;
    int paper, leg;

    if (can1 && can2) {
        double in0 = next_input(v, ZB_OP_B, r, 0);
        double in1 = next_input(v, ZB_OP_B, r, 1);
        early = !isnan(in1) && !(in1 >= in0 - EARLY_LEG_MARGIN *
                                 v->p->stage[stage_of(v, r, 1)].b);
    }
    paper = can2 && (!can1 || !isnan(next_input(v, ZB_OP_B, r, 0))) ? 0
          : can1 ? 1 : -1;
    leg = x->early_leg && early ? 1 : paper;
    if (drain && leg != 1)
        note(v, r, RULE_DRAIN_FIRST);
    if (drain && x->drain_first)
        return 1;
    if (early && paper != 1)
        note(v, r, RULE_EARLY_LEG);
    return leg;
}

static void place_b(struct vc *v, int r, int c)
{
    double in = next_input(v, ZB_OP_B, r, c);

    if (isnan(in) || !make_room(v, r, zb_op_memory_delta(v->p, ZB_OP_B)))
        return;
    if (c == 0)
        fill_gap(v, r, in, true, 0);
    else
        fill_gap(v, r, in, v->var[r].fill_b, RULE_FILL_B);
    put(v, r, ZB_OP_B, c);
}

/* A B of rank r whose input has already arrived (-1: none); the second
 * leg first, as choose_leg() prefers it. */
static int ready_b(const struct vc *v, int r)
{
    for (int c = 0; c < 2; c++) {
        bool can = c == 0 ? v->nb[r][0] < v->nb[r][1]
                          : v->nb[r][1] < v->nf[r][1];
        double in = can ? next_input(v, ZB_OP_B, r, c) : NAN;
        if (!isnan(in) && in <= v->clock[r] + v->eps)
            return c;
    }
    return -1;
}

/* Rank r's next F, after making room for it: with b_room, a full rank
 * first runs one B whose input is there (construct_v.h), then W's as
 * needed. */
static void place_f(struct vc *v, int r)
{
    int c = choose_f(v, r), b;
    double need;

    if (c < 0)
        return;
    need = f_need(v, r, c);
    if (!fits(v, r, need) && (b = ready_b(v, r)) >= 0) {
        note(v, r, RULE_B_ROOM);
        if (v->var[r].b_room)
            put(v, r, ZB_OP_B, b);
    }
    if (!make_room(v, r, need))
        return;
    fill_gap(v, r, next_input(v, ZB_OP_F, r, c), v->var[r].fill_f,
             RULE_FILL_F);
    put(v, r, ZB_OP_F, c);
}

/* Step 3's rounds; a rank with f_first places its F at the start of the
 * round, before every rank's B (step 6 sets it on some rank in about one
 * construction in five on the quality grid's V instances, mostly at
 * 1F1B's memory). */
static int rounds(struct vc *v)
{
    while (v->fb_left > 0) {
        long before = v->fb_left;
        for (int r = 0; r < v->pp; r++)
            if (v->var[r].f_first)
                place_f(v, r);
        for (int r = 0; r < v->pp; r++)
            v->leg[r] = choose_leg(v, r);
        for (int r = v->pp - 1; r >= 0; r--)
            if (v->leg[r] == 0)
                place_b(v, r, 0);
        for (int r = 0; r < v->pp; r++)
            if (v->leg[r] == 1)
                place_b(v, r, 1);
        for (int r = 0; r < v->pp; r++)
            if (!v->var[r].f_first)
                place_f(v, r);
        if (v->fb_left == before)
            return ZB_ENOMEM_LIMIT;     /* stalled: see the top */
    }
    for (int r = 0; r < v->pp; r++)
        while (pending_w(v, r) > 0)
            put_w(v, r);
    return 0;
}

/* ---- one run, refinement, variants ----------------------------------- */

static void vc_alloc(struct vc *v, const struct zb_profile *p)
{
    const int pp = p->pp, m = p->microbatches;
    double scale = p->comm;

    *v = (struct vc){ .p = p, .pp = pp, .m = m };
    v->end = zb_xmalloc((size_t)zb_pass_count(p) * sizeof(double));
    v->clock = zb_xmalloc((size_t)pp * sizeof(double));
    v->bubble = zb_xmalloc((size_t)pp * sizeof(double));
    v->tally = zb_xmalloc((size_t)pp * sizeof(*v->tally));
    v->work = zb_xcalloc((size_t)pp, sizeof(double));
    v->nf = zb_xmalloc((size_t)pp * sizeof(*v->nf));
    v->nb = zb_xmalloc((size_t)pp * sizeof(*v->nb));
    v->nw = zb_xmalloc((size_t)pp * sizeof(*v->nw));
    v->wq = zb_xmalloc((size_t)pp * 2 * (size_t)m * sizeof(int));
    v->wq_head = zb_xmalloc((size_t)pp * sizeof(int));
    v->wq_tail = zb_xmalloc((size_t)pp * sizeof(int));
    v->leg = zb_xmalloc((size_t)pp * sizeof(int));
    v->mattered = zb_xcalloc((size_t)pp, sizeof(unsigned));
    for (int k = 0; k < 3; k++)
        v->delta[k] = zb_op_memory_delta(p, k == 0 ? ZB_OP_F : k == 1
                                                 ? ZB_OP_B : ZB_OP_W);
    for (int r = 0; r < pp; r++) {
        for (int c = 0; c < 2; c++) {
            const struct zb_stage_times *t = &p->stage[stage_of(v, r, c)];
            v->work[r] += m * (t->f + t->b + t->w);
            scale = fmax(scale, t->f + t->b + t->w);
        }
    }
    v->eps = 1e-9 * scale;
}

/* Ready v for a run under var (per rank), with headroom (NULL: none),
 * recording into s (its lists empty) unless s is NULL. */
static void vc_reset(struct vc *v, const struct variant *var,
                     const double *limit, const double *headroom,
                     struct zb_schedule *s)
{
    const int pp = v->pp;
    const long npass = zb_pass_count(v->p);

    v->var = var;
    v->limit = limit;
    v->headroom = headroom;
    v->s = s;
    v->fb_left = 4L * pp * v->m;
    v->worst = 0;
    for (long i = 0; i < npass; i++)
        v->end[i] = NAN;
    for (int r = 0; r < pp; r++) {
        v->clock[r] = v->bubble[r] = 0;
        zb_tally_start(&v->tally[r]);
        v->nf[r][0] = v->nf[r][1] = v->nb[r][0] = v->nb[r][1] = 0;
        v->nw[r][0] = v->nw[r][1] = 0;
        v->wq_head[r] = v->wq_tail[r] = v->leg[r] = 0;
        v->worst = fmax(v->worst, v->work[r]);
        if (s)
            zb_xgrow((void **)&s->ranks[r].ops, &s->ranks[r].cap,
                     s->ranks[r].n + 6 * v->m, sizeof(struct zb_op));
    }
}

static void vc_release(struct vc *v)
{
    free(v->end);
    free(v->clock);
    free(v->bubble);
    free(v->tally);
    free(v->work);
    free(v->nf);
    free(v->nb);
    free(v->nw);
    free(v->wq);
    free(v->wq_head);
    free(v->wq_tail);
    free(v->leg);
    free(v->mattered);
}

/* One construction in v, rank r under var[r]; headroom may be NULL; the
 * order is recorded into s (empty lists) unless s is NULL. */
static int run_once(struct vc *v, const struct variant *var,
                    const double *limit, const double *headroom,
                    struct zb_schedule *s)
{
    double *arrive = zb_xmalloc((size_t)v->pp * sizeof(double));
    int rc;

    vc_reset(v, var, limit, headroom, s);
    warm_chain(v);
    warm_balance(v, arrive);
    rc = rounds(v);
    free(arrive);
    return rc;
}

/* The measures of v's last run, from the times its passes got, which
 * follow the simulator's rule exactly (tests check that they agree). */
static void vc_measures(const struct vc *v, struct zb_measures *ms)
{
    ms->fits_memory = true;
    for (int r = 0; r < v->pp; r++)
        zb_measures_set_rank(v->p, r, &v->tally[r], ms);
    zb_measures_finish(ms, v->pp);
}

struct variant_log;

/* A thread's share of the variants. A run is kept as what makes it again
 * (each rank's rules and the headroom it ran with) and its measures, not
 * as an order: runs are deterministic, so construct_v() runs the winner
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
        if (run_once(&w->v, w->var, w->limit, headed ? w->head : NULL,
                     NULL) < 0)
            break;
        vc_measures(&w->v, ms);
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
        if (limit[r] < 2 * p->m_b * (1 - 1e-9))
            return zb_error_set(err, ZB_ENOMEM_LIMIT,
                                "ZB-V construction needs 2 chunk "
                                "activations (2*M_B = %g) on every rank, "
                                "rank %d has a limit of %g", 2 * p->m_b, r,
                                limit[r]);
    }
    return 0;
}

/* Measured on 58 profiles (paper settings, unit times, random): the
 * reserve for one chunk-1 F wins only with both fills; a last-rank "turn"
 * (second-leg B right after the first) and the full reserve never won.
 * The early leg rule and one more warm-up F (the 10 of 40 that won at
 * least twice on the 96 V instances of two seeds of the quality grid)
 * lower the constructed cost on 1.5p and 2p profiles with uneven stage
 * times (docs/model.md, "How tight the bound is"). The drain rule
 * (drain_first) ran with every variant of the first 40 until step 6
 * could set it rank by rank: since then those 20 won 2 of 336
 * constructions on three seeds' grids, and without them 4 of the 480
 * grid instances of five seeds change after the search (3 better, 1
 * worse). The four early-leg variants that never won there are still
 * needed: without them 5 more change, all worse (by up to 0.5 %). */
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
                                           them (construct_v_every_chain()) */
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
    vc_alloc(&w->v, p);
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
    vc_release(&w->v);
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
    if (run_once(&w->v, w->best_var, w->limit,
                 w->best_headed ? w->best_head : NULL, s) < 0)
        return zb_error_set(err, ZB_EILLEGAL, "ZB-V construction: the "
                            "best run did not repeat");
    vc_measures(&w->v, &s->predicted);
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

    side_thread_start(&helper, work, &w[1]);
    work(&w[0]);
    side_thread_join(&helper);
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
         * a B there (construct_v.h). */
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
                side_thread_start(&helper, try_fresh, &t);
            refine(w, w->best_variant);
            if (pair)
                side_thread_join(&helper);
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
    side_thread_start(&helper, run_job, &job[1]);
    run_job(&job[0]);
    side_thread_join(&helper);
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

/* The construction under the room rule b_room into s, skipping repeated
 * chains or not. On a long profile the variants (step 5) run on a copy
 * of p with fewer microbatches (shorter_microbatches()), and only the
 * two whose chains ran cheapest there run on p itself, before the tuning
 * (step 6, on p): the variants differ in the warm-up, the drain and the
 * W placement of a steady state that repeats every microbatch, all of
 * which the shorter copy has, at a fraction of a full run's cost. The
 * tuning stays on p: rank-by-rank moves that gained on the copy did not
 * on p (3 of 26 V profiles at p 48-64, m 384-1024 lost 0.01-0.27 %). */
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

int construct_v(const struct zb_profile *p, enum construct_v_rules rules,
                struct zb_schedule *s, struct zb_error *err)
{
    const bool b_room = rules == CONSTRUCT_V_B_ROOM;
    const enum memo_kind memo = b_room ? MEMO_CONSTRUCT_V_B_ROOM
                                       : MEMO_CONSTRUCT_V;
    int rc;

    if ((rc = check_shape(p, err)) < 0)
        return rc;
    if (memo_fetch(memo, p, s))
        return 0;
    if ((rc = build(p, b_room, true, s, err)) == 0)
        memo_store(memo, p, s);
    return rc;
}

int construct_v_every_chain(const struct zb_profile *p,
                            enum construct_v_rules rules,
                            struct zb_schedule *s, struct zb_error *err)
{
    int rc = check_shape(p, err);

    return rc < 0 ? rc : build(p, rules == CONSTRUCT_V_B_ROOM, false, s,
                               err);
}
