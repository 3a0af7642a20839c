/* construct_v_run.c - one run of the ZB-V construction (see
 * construct_v_run.h): the pass-by-pass build of the Zero Bubble paper's
 * reference ZB-V heuristic, on real per-stage times, comm and per-rank
 * limits.
 *
 * Rank r holds chunk 0 (stage r) and chunk 1 (stage 2p-1-r). Forward runs
 * chunk 0 up the ranks and chunk 1 back down; the backward has two legs:
 * chunk 1's B runs rank 0 -> p-1 ("first leg"), chunk 0's B p-1 -> 0
 * ("second leg"). Every pass is timed as it is placed (start = when the
 * rank is free and its inputs have arrived, comm on cross-rank edges: the
 * simulator's rule, timing.h), so the builder knows each rank's idle
 * time.
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
 *    extra slack while the cost keeps shrinking (construct_v.c,
 *    refine()). */
#include <assert.h>
#include <math.h>
#include <stdlib.h>
#include "build/construct_v_run.h"
#include "zbsched/pass.h"
#include "zbsched/timing.h"
#include "zbsched/xalloc.h"

/* early_leg: how much sooner (in B passes of the first leg) the first
 * leg's input must arrive to be taken before the second leg's. */
#define EARLY_LEG_MARGIN 0.25

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

/* When the output of pass (k, from, mb) reaches stage `to` on rank r
 * (timing.h); NAN if unplaced. */
static double arrival(const struct vc *v, enum zb_pass k, int from, int to,
                      int mb, int r)
{
    return zb_timing_arrival(v->p, from, to, r, *end_of(v, k, from, mb));
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
                          : arrival(v, ZB_PASS_F, stage - 1, stage, mb, r);
    if (stage == 2 * v->pp - 1)
        return *end_of(v, ZB_PASS_F, stage, mb);
    /* NAN while either is unplaced: a comparison with a NAN is false. */
    double g = arrival(v, ZB_PASS_B, stage + 1, stage, mb, r);
    double f = *end_of(v, ZB_PASS_F, stage, mb);
    return isnan(g) || g > f ? g : f;
}

/* The hot path of a construction (NAN cannot reach here: the assert). */
static void put(struct vc *v, int r, enum zb_op_kind k, int c)
{
    int stage = stage_of(v, r, c);
    double in = next_input(v, k, r, c);
    int mb = (*next_of(v, k, r, c))++;
    double start = zb_timing_start(v->clock[r], in);
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
    return zb_timing_fits(v->tally[r].mem + need, v->limit[r]);
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
        start = zb_timing_start(v->clock[j],
                                j > 0 ? zb_timing_arrival(v->p, j - 1, j, j,
                                                          e)
                                      : -INFINITY);
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
                    zb_timing_comm(v->p, stage_of(v, r - 1, 1),
                                   stage_of(v, r, 1));
    while (more) {
        more = false;
        for (int r = v->pp - 1; r >= 1; r--) {
            int c = choose_f(v, r);
            if (c < 0 || !fits(v, r, f_need(v, r, c)))
                continue;
            const struct variant *x = &v->var[r];
            double start = zb_timing_start(v->clock[r],
                                           next_input(v, ZB_OP_F, r, c));
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

    if (isnan(in) || !make_room(v, r, zb_pass_memory_delta(v->p, ZB_OP_B,
                                                         stage_of(v, r, c))))
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
 * first runs one B whose input is there (build.h), then W's as
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
 * round, before every rank's B (step 6 sets it on some ranks, mostly at
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

/* ---- one run --------------------------------------------------------- */

void zbi_vc_alloc(struct vc *v, const struct zb_profile *p)
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
    /* Builders see one M_B for every stage (generate.c). */
    for (int k = 0; k < 3; k++)
        v->delta[k] = zb_pass_memory_delta(p, k == 0 ? ZB_OP_F : k == 1
                                                   ? ZB_OP_B : ZB_OP_W, 0);
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

void zbi_vc_release(struct vc *v)
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

int zbi_vc_run(struct vc *v, const struct variant *var, const double *limit,
               const double *headroom, struct zb_schedule *s)
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

void zbi_vc_measures(const struct vc *v, struct zb_measures *ms)
{
    ms->fits_memory = true;
    for (int r = 0; r < v->pp; r++)
        zb_measures_set_rank(v->p, r, &v->tally[r], ms);
    zb_measures_finish(ms, v->pp);
}
