/* construct.c - the Zero Bubble paper's constructive heuristic for loop
 * placement with one chunk (Qi et al., ICLR 2024, section 3), written
 * from the paper's description for real per-stage times, comm and
 * per-rank memory limits.
 *
 * Shape: a warm-up of F passes sized by when each stage's first B comes
 * back, then rounds of one F (ascending stages) and one B (descending) per
 * stage, with W passes put into the idle gaps before them by their size
 * against the stage's slack, or earlier when an F needs their memory. The
 * construction times every pass by the simulator's rule (timing.h), so
 * its gap decisions see the real gaps
 * and its times rank the variants (tests check that they are the
 * simulator's); the winner is timed again by zb_sim_run().
 *
 * The reference's variants (and ours) give every stage the same rules.
 * With uneven stage times the best rules and warm-up length differ from
 * stage to stage, so the best variant is then tuned stage by stage
 * (tune()). */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "build/build.h"
#include "zbsched/measures.h"
#include "zbsched/sim.h"
#include "zbsched/timing.h"
#include "zbsched/xalloc.h"

/* tune(): a stage's warm-up count moves at most this far from the
 * variant's; at most this many sweeps over the stages and placed passes
 * in all (a build places 3 p m). */
#define TUNE_MAX_SHIFT 3
#define TUNE_SWEEPS 3
#define TUNE_BUDGET 8000000L

/* The reference's 2 x 2 x 2 variants, and one of ours; per stage. */
struct variant {
    bool idle_warmup;   /* warm-up F while the stage is still idle when its
                           first B arrives (else: only F that end by then) */
    bool prio_b;        /* skip an F that would hold up the round's B */
    bool greedy_w;      /* always put one more W into a gap shorter than W
                           (else: only when the gap exceeds the slack) */
    bool b_first;       /* ours: a B whose input is there first may go
                           before the round's F */
    int warm_shift;     /* F passes added to the stage's warm-up count
                           (taken off, if negative; tune()), within its
                           cap and above the next stage's count */
};

static struct variant variant(int i)
{
    return (struct variant){ i & 1, i & 2, i & 4, i & 8, 0 };
}

/* Construction state; stage s sits on rank s (loop placement, vpp 1). */
struct cons {
    const struct zb_profile *p;
    struct zb_schedule *out;
    struct variant *v;      /* per stage: its rules */
    int pp, m;
    double tol;             /* tolerance for comparing times */
    double *end_f, *end_b;  /* [s * m + mb]: end of F or B, once placed */
    double *cur;            /* per stage: when its rank is free */
    double *mem, *lim;      /* per stage: memory held, limit in force */
    double *idle;           /* per stage: idle since its first pass */
    double *work;           /* per stage: compute of all its passes */
    double worst;           /* max over stages of work + idle: the span
                               the schedule is heading for */
    double cutoff;          /* give up a variant whose worst exceeds it */
    int *nf, *nb, *nw;      /* per stage: passes placed, by kind */
    int *cap;               /* per stage: most F before its first B */
    int *warm;              /* per stage: F placed before its first B */
    bool *add;              /* per stage: adds an F in this round */
    bool *late;             /* per stage: its F waits for B_i's placement */
    double *est;            /* per stage: estimated end of the round's B */
};

static double duration(const struct cons *c, int s, enum zb_op_kind k)
{
    const struct zb_stage_times *t = &c->p->stage[s];
    return k == ZB_OP_F ? t->f : k == ZB_OP_B ? t->b : t->w;
}

/* When the input of F or B of microbatch mb at stage s arrives
 * (timing.h; with one chunk per rank every cross-stage edge crosses
 * ranks). A W's input is
 * its own B, done before the rank is free. */
static double arrival(const struct cons *c, int s, enum zb_op_kind k, int mb)
{
    if (k == ZB_OP_F)
        return s == 0 ? 0 : zb_timing_arrival(c->p, s - 1, s, s,
                                              c->end_f[(s - 1) * c->m + mb]);
    if (k == ZB_OP_B)
        return s == c->pp - 1 ? c->end_f[s * c->m + mb]
                              : zb_timing_arrival(c->p, s + 1, s, s,
                                                  c->end_b[(s + 1) * c->m +
                                                           mb]);
    return 0;
}

static void put(struct cons *c, int s, enum zb_op_kind k)
{
    int *n = k == ZB_OP_F ? &c->nf[s] : k == ZB_OP_B ? &c->nb[s] : &c->nw[s];
    int mb = (*n)++;
    double start = zb_timing_start(c->cur[s], arrival(c, s, k, mb));
    struct zb_op *op;

    /* Every stage opens with F_0; the wait before it is no bubble. */
    if (k != ZB_OP_F || mb > 0)
        c->idle[s] += start - c->cur[s];
    c->cur[s] = start + duration(c, s, k);
    if (k == ZB_OP_F)
        c->end_f[s * c->m + mb] = c->cur[s];
    else if (k == ZB_OP_B)
        c->end_b[s * c->m + mb] = c->cur[s];
    c->mem[s] += zb_pass_memory_delta(c->p, k, s);
    c->worst = fmax(c->worst, c->work[s] + c->idle[s]);
    zb_schedule_push(c->out, s, k, s, mb);
    op = &c->out->ranks[s].ops[c->out->ranks[s].n - 1];
    op->start = start;
    op->end = c->cur[s];
}

static bool pending_w(const struct cons *c, int s)
{
    return c->nw[s] < c->nb[s];
}

static bool f_fits(const struct cons *c, int s)
{
    return zb_timing_fits(c->mem[s] + c->p->m_b, c->lim[s]);
}

/* W passes (oldest first) until the next F's activations fit. */
static void make_room(struct cons *c, int s)
{
    while (!f_fits(c, s) && pending_w(c, s))
        put(c, s, ZB_OP_W);
}

/* Fill the idle time before a pass whose input arrives at t: whole W while
 * they fit; then one more W into the remainder if leaving it idle would
 * push this stage past the worst span (or always, greedy variant): the W
 * then delays the pass by less than its own length. */
static void fill_gap(struct cons *c, int s, double t)
{
    double w = c->p->stage[s].w, slack;

    while (pending_w(c, s) && c->cur[s] + w <= t + c->tol)
        put(c, s, ZB_OP_W);
    if (!pending_w(c, s) || t <= c->cur[s] + c->tol)
        return;
    slack = c->worst - (c->work[s] + c->idle[s]);
    if (c->v[s].greedy_w || t - c->cur[s] > slack + c->tol)
        put(c, s, ZB_OP_W);
}

static void flush_w(struct cons *c, int s)
{
    while (pending_w(c, s))
        put(c, s, ZB_OP_W);
}

static int imin(int a, int b)
{
    return a < b ? a : b;
}

/* Warm-up. Every stage's first F passes run back to back as they arrive,
 * whatever the counts (stage s never runs more than stage s-1), so their
 * times are known up front; from the last stage down, each stage then takes
 * the F that fit before its first B arrives (variant rule), moved by its
 * warm_shift, at least one more than the next stage, at most its cap.
 * Place them, then B_0. */
static void warmup(struct cons *c)
{
    const int m = c->m;
    double b_end = 0;

    for (int s = 0; s < c->pp; s++)
        for (int k = 0; k < c->cap[s]; k++)
            c->end_f[s * m + k] =
                zb_timing_start(k > 0 ? c->end_f[s * m + k - 1] : 0,
                                arrival(c, s, ZB_OP_F, k)) +
                c->p->stage[s].f;
    for (int s = c->pp - 1; s >= 0; s--) {
        double t = s == c->pp - 1 ? c->end_f[s * m]
                                  : b_end + zb_timing_comm(c->p, s + 1, s);
        int k = 1;
        while (s < c->pp - 1 && k < c->cap[s] &&
               (c->v[s].idle_warmup ? c->end_f[s * m + k - 1] < t - c->tol
                                    : c->end_f[s * m + k] <= t + c->tol))
            k++;
        if (s < c->pp - 1)
            k = k + c->v[s].warm_shift < 1 ? 1
              : imin(k + c->v[s].warm_shift, c->cap[s]);
        if (s < c->pp - 1 && k <= c->warm[s + 1])
            k = imin(c->warm[s + 1] + 1, c->cap[s]);
        c->warm[s] = k;
        b_end = zb_timing_start(c->end_f[s * m + k - 1], t) +
                c->p->stage[s].b;
    }
    for (int s = 0; s < c->pp; s++)
        for (int k = 0; k < c->warm[s]; k++)
            put(c, s, ZB_OP_F);
    for (int s = c->pp - 1; s >= 0; s--)
        put(c, s, ZB_OP_B);
}

/* When stage s's next F would end if placed now, with the W its memory
 * needs first. Its input may not be placed yet (the previous stage adds
 * its F later this round): then assume that F runs next there. */
static double f_end(const struct cons *c, int s)
{
    int k = c->nf[s];
    double t = 0, start = c->cur[s], need;

    if (s > 0)
        t = c->nf[s - 1] > k ? arrival(c, s, ZB_OP_F, k)
                             : c->cur[s - 1] + c->p->stage[s - 1].f +
                                   zb_timing_comm(c->p, s - 1, s);
    need = c->mem[s] + c->p->m_b - c->lim[s];
    if (need > 0 && c->p->m_w > 0) {
        double kw = ceil(need / c->p->m_w - 1e-9);
        kw = fmin(kw, c->nb[s] - c->nw[s]);
        start += kw * c->p->stage[s].w;
    }
    return zb_timing_start(start, t) + c->p->stage[s].f;
}

/* "Prioritise B": stage s (two F ahead of the next stage, so skipping
 * keeps it ahead) skips its F when the F would end after B_i arrives and
 * waiting for B_i instead, filling W, keeps the stage within the worst
 * span. */
static bool skip_f(const struct cons *c, int s)
{
    double t = c->est[s + 1] + zb_timing_comm(c->p, s + 1, s), gap;

    if (c->nf[s] < c->nf[s + 1] + 2 || f_end(c, s) <= t + c->tol)
        return false;
    gap = fmax(0, t - c->cur[s] - (c->nb[s] - c->nw[s]) * c->p->stage[s].w);
    return c->work[s] + c->idle[s] + gap <= c->worst + c->tol;
}

/* Which stages add an F in round i (B_i follows), last stage first. A
 * stage must when B_i needs it or the next stage's new F needs it. With
 * "prioritise B" it skips when the next stage skips (the decision stays
 * monotone along the pipeline), or when it is two F ahead of the next
 * stage and the F would end after B_i arrives. */
static void decide(struct cons *c, int i)
{
    for (int s = c->pp - 1; s >= 0; s--) {
        bool last = s == c->pp - 1;
        bool must = c->nf[s] <= i ||
                    (!last && c->add[s + 1] && c->nf[s] <= c->nf[s + 1]);
        double fe = c->cur[s], t;

        if (c->nf[s] >= c->m)
            c->add[s] = false;
        else if (must || !c->v[s].prio_b)
            c->add[s] = true;
        else if (!c->add[s + 1])
            c->add[s] = false;
        else
            c->add[s] = !skip_f(c, s);
        if (c->add[s])
            fe = f_end(c, s);
        if (last)
            t = c->nf[s] > i ? c->end_f[s * c->m + i] : fe;
        else
            t = c->est[s + 1] + zb_timing_comm(c->p, s + 1, s);
        c->est[s] = zb_timing_start(fe, t) + c->p->stage[s].b;
    }
}

static void place_f(struct cons *c, int s)
{
    make_room(c, s);
    fill_gap(c, s, arrival(c, s, ZB_OP_F, c->nf[s]));
    put(c, s, ZB_OP_F);
}

/* Round i: the chosen F passes, stages ascending (each feeds the next),
 * then B_i, stages descending. "B first" (ours): a stage whose new F
 * neither its B_i nor the next stage's new F needs holds the F back and
 * runs B_i first when B_i's input arrives no later than the F's, so B
 * passes reach stage 0 sooner; that pays off where the F passes run out
 * and stage 0 needs B passes faster. The held F's input is always placed:
 * a previous stage with no more F than this one needs its F now, so it
 * cannot hold it back. Stage 0 feeds no one backwards: once its F are
 * done, its W go right after each B. */
static void round_i(struct cons *c, int i)
{
    decide(c, i);
    for (int s = 0; s < c->pp; s++) {
        if (!c->add[s])
            continue;
        c->late[s] = c->v[s].b_first && c->nf[s] > i &&
                     !(s + 1 < c->pp && c->add[s + 1] &&
                       c->nf[s] <= c->nf[s + 1]);
        if (!c->late[s])
            place_f(c, s);
    }
    for (int s = c->pp - 1; s >= 0; s--) {
        double tb = arrival(c, s, ZB_OP_B, i);
        if (c->add[s] && c->late[s] &&
            tb > arrival(c, s, ZB_OP_F, c->nf[s]) + c->tol) {
            place_f(c, s);
            c->late[s] = false;
        }
        fill_gap(c, s, tb);
        put(c, s, ZB_OP_B);
        if (c->add[s] && c->late[s])
            place_f(c, s);
    }
    if (c->nf[0] == c->m)
        flush_w(c, 0);
}

/* Build variant v into out. Gives up (false) once the variant's cost must
 * exceed c->cutoff: a stage's span ends as its work plus its idle, so
 * c->worst only grows toward the cost. */
static bool build(struct cons *c, struct zb_schedule *out)
{
    const int pp = c->pp;

    c->out = out;
    c->worst = 0;
    for (int r = 0; r < pp; r++)
        out->ranks[r].n = 0;
    memset(c->cur, 0, (size_t)pp * sizeof(double));
    memset(c->mem, 0, (size_t)pp * sizeof(double));
    memset(c->idle, 0, (size_t)pp * sizeof(double));
    memset(c->nf, 0, (size_t)pp * sizeof(int));
    memset(c->nb, 0, (size_t)pp * sizeof(int));
    memset(c->nw, 0, (size_t)pp * sizeof(int));
    warmup(c);
    for (int i = 1; i < c->m; i++) {
        round_i(c, i);
        if (c->worst > c->cutoff)
            return false;
    }
    for (int s = 0; s < pp; s++)
        flush_w(c, s);
    return true;
}

/* Limits in force and warm-up caps: a rank holds at most lim / M_B
 * activations before its first B, and each stage fewer than the one
 * before (else it would wait on its predecessor's B after its own first
 * B), but at least one. INFINITY means room for all m. 0 or a rank that
 * cannot hold one activation: ZB_ENOMEM_LIMIT. */
static int set_caps(struct cons *c, struct zb_error *err)
{
    const struct zb_profile *p = c->p;

    for (int s = 0; s < c->pp; s++) {
        double n = zb_timing_fit_count(p->mem_limit[s], p->m_b);
        if (n < 1)
            return zb_error_set(err, ZB_ENOMEM_LIMIT,
                                "rank %d's memory limit %g cannot hold one "
                                "microbatch's activations (M_B %g)", s,
                                p->mem_limit[s], p->m_b);
        c->lim[s] = isfinite(p->mem_limit[s]) ? p->mem_limit[s]
                                                : c->m * p->m_b;
        c->cap[s] = n < c->m ? (int)n : c->m;
        if (s > 0 && c->cap[s] >= c->cap[s - 1])
            c->cap[s] = c->cap[s - 1] > 1 ? c->cap[s - 1] - 1 : 1;
        c->work[s] = c->m * (p->stage[s].f + p->stage[s].b + p->stage[s].w);
    }
    return 0;
}

static void cons_init(struct cons *c, const struct zb_profile *p)
{
    size_t pp = (size_t)p->pp, n = pp * (size_t)p->microbatches;
    double scale = 0;

    *c = (struct cons){ .p = p, .pp = p->pp, .m = p->microbatches };
    for (int s = 0; s < p->pp; s++)
        scale = fmax(scale, p->stage[s].f + p->stage[s].b + p->stage[s].w);
    c->tol = 1e-9 * fmax(scale + p->comm, 1e-300) * p->microbatches;
    c->end_f = zb_xcalloc(n, sizeof(double));
    c->end_b = zb_xcalloc(n, sizeof(double));
    c->cur = zb_xcalloc(pp, sizeof(double));
    c->mem = zb_xcalloc(pp, sizeof(double));
    c->lim = zb_xcalloc(pp, sizeof(double));
    c->idle = zb_xcalloc(pp, sizeof(double));
    c->work = zb_xcalloc(pp, sizeof(double));
    c->est = zb_xcalloc(pp, sizeof(double));
    c->nf = zb_xcalloc(pp, sizeof(int));
    c->nb = zb_xcalloc(pp, sizeof(int));
    c->nw = zb_xcalloc(pp, sizeof(int));
    c->cap = zb_xcalloc(pp, sizeof(int));
    c->warm = zb_xcalloc(pp, sizeof(int));
    c->add = zb_xcalloc(pp, sizeof(bool));
    c->late = zb_xcalloc(pp, sizeof(bool));
    c->v = zb_xcalloc(pp, sizeof(*c->v));
}

static void cons_release(struct cons *c)
{
    free(c->end_f);
    free(c->end_b);
    free(c->cur);
    free(c->mem);
    free(c->lim);
    free(c->idle);
    free(c->work);
    free(c->est);
    free(c->nf);
    free(c->nb);
    free(c->nw);
    free(c->cap);
    free(c->warm);
    free(c->add);
    free(c->late);
    free(c->v);
}

static void uniform(struct cons *c, int i)
{
    for (int s = 0; s < c->pp; s++)
        c->v[s] = variant(i);
}

/* Time cand (by its own times, or with simulate by zb_sim_run()) and, if
 * it fits and beats best (or there is none yet), swap it into best and
 * its rules into best_v. */
static bool keep_if_better(struct cons *c, bool simulate, bool *have,
                           struct zb_schedule *best, struct zb_schedule *cand,
                           struct variant *best_v)
{
    struct zb_schedule tmp;

    if (!simulate)
        zb_measures_from_times(c->p, cand->ranks, &cand->predicted);
    else if (zb_sim_run(cand, NULL) < 0)
        return false;
    if (!cand->predicted.fits_memory ||
        (*have && !zb_measures_better(&cand->predicted, &best->predicted,
                                      c->pp)))
        return false;
    tmp = *best;
    *best = *cand;
    *cand = tmp;
    *have = true;
    memcpy(best_v, c->v, (size_t)c->pp * sizeof(*c->v));
    /* Only the construction's own times bound the cost it reports. */
    if (!simulate)
        c->cutoff = best->predicted.cost * (1 + 1e-9) + c->tol;
    return true;
}

/* Build every variant into cand, keeping the best that fits in best and
 * its rules in best_v. Timed by the construction itself, which follows
 * the simulator's rules (see the top), or with simulate by zb_sim_run():
 * the construction is a third of the cost of the simulation at p 64,
 * m 1024. */
static bool pick(struct cons *c, bool simulate, struct zb_schedule *best,
                 struct zb_schedule *cand, struct variant *best_v)
{
    bool have = false;

    c->cutoff = INFINITY;
    for (int i = 0; i < CONSTRUCT_VARIANTS; i++) {
        uniform(c, i);
        if (build(c, cand))
            keep_if_better(c, simulate, &have, best, cand, best_v);
    }
    return have;
}

/* tune()'s moves on one stage's rules: its warm-up one F longer or
 * shorter, or one rule switched. False when the move does not apply
 * (the shift at its bound, or the last stage's warm-up, always one F). */
enum { MOVE_LONGER, MOVE_SHORTER, MOVE_IDLE_WARMUP, MOVE_PRIO_B,
       MOVE_GREEDY_W, MOVE_B_FIRST, N_MOVES };

static bool apply_move(struct variant *v, int s, int pp, int move)
{
    switch (move) {
    case MOVE_LONGER:
    case MOVE_SHORTER: {
        int x = v->warm_shift + (move == MOVE_LONGER ? 1 : -1);
        if (s == pp - 1 || x > TUNE_MAX_SHIFT || x < -TUNE_MAX_SHIFT)
            return false;
        v->warm_shift = x;
        return true;
    }
    case MOVE_IDLE_WARMUP: v->idle_warmup = !v->idle_warmup; return true;
    case MOVE_PRIO_B: v->prio_b = !v->prio_b; return true;
    case MOVE_GREEDY_W: v->greedy_w = !v->greedy_w; return true;
    default: v->b_first = !v->b_first; return true;
    }
}

/* From the best build's rules (best_v), one stage's rules changed one
 * move at a time, stage by stage, a move kept when its build fits and is
 * better (cost, then makespan, then memory), until a sweep gains nothing
 * or the budget is spent. Builds are timed by the construction (a build
 * that cannot beat best stops early). */
static void tune(struct cons *c, struct variant *best_v,
                 struct zb_schedule *best, struct zb_schedule *cand)
{
    const int pp = c->pp;
    long left = TUNE_BUDGET / (3L * pp * c->m);
    bool gained = true, have = true;

    for (int sweep = 0; gained && sweep < TUNE_SWEEPS; sweep++) {
        gained = false;
        for (int s = 0; s < pp; s++)
            for (int move = 0; move < N_MOVES && left > 0; move++) {
                memcpy(c->v, best_v, (size_t)pp * sizeof(*c->v));
                if (!apply_move(&c->v[s], s, pp, move))
                    continue;
                left--;
                if (build(c, cand) &&
                    keep_if_better(c, false, &have, best, cand, best_v)) {
                    gained = true;
                    /* Longer won: shorter would only go back. */
                    move += move == MOVE_LONGER;
                }
            }
    }
}

/* Whether the simulator times best's order as the construction did. */
static bool sim_agrees(struct zb_schedule *best)
{
    double cost = best->predicted.cost, span = best->predicted.makespan;

    if (zb_sim_run(best, NULL) < 0 || !best->predicted.fits_memory)
        return false;
    return fabs(best->predicted.cost - cost) <= 1e-9 * fmax(1, cost) &&
           fabs(best->predicted.makespan - span) <= 1e-9 * fmax(1, span);
}

static int check_profile(const struct zb_profile *p, struct zb_error *err)
{
    if (p->placement != ZB_PLACEMENT_LOOP || p->vpp != 1)
        return zb_error_set(err, ZB_EUNSUPPORTED,
                            "the constructive zb heuristic needs loop "
                            "placement and vpp 1, got %s and vpp %d",
                            zb_placement_name(p->placement), p->vpp);
    return 0;
}

int zbi_construct_variant(const struct zb_profile *p, int i,
                         struct zb_schedule *s, struct zb_error *err)
{
    struct cons c;
    int rc;

    if ((rc = check_profile(p, err)) < 0)
        return rc;
    if (i < 0 || i >= CONSTRUCT_VARIANTS)
        return zb_error_set(err, ZB_EINVAL, "no variant %d", i);
    cons_init(&c, p);
    c.cutoff = INFINITY;
    if ((rc = set_caps(&c, err)) == 0) {
        uniform(&c, i);
        build(&c, s);
    }
    cons_release(&c);
    return rc;
}

int zbi_construct_loop(const struct zb_profile *p, struct zb_schedule *s,
                 struct zb_error *err)
{
    struct zb_schedule best, cand;
    struct variant *best_v;
    struct cons c;
    bool have;
    int rc;

    if ((rc = check_profile(p, err)) < 0)
        return rc;
    cons_init(&c, p);
    if ((rc = set_caps(&c, err)) < 0)
        goto out_cons;
    zb_schedule_init(&best, s->name, p);
    zb_schedule_init(&cand, s->name, p);
    /* The simulator has the last word: should it ever disagree with the
     * construction's times, every variant is simulated instead. */
    best_v = zb_xcalloc((size_t)p->pp, sizeof(*best_v));
    have = pick(&c, false, &best, &cand, best_v);
    if (have)
        tune(&c, best_v, &best, &cand);
    if (have && !sim_agrees(&best))
        have = pick(&c, true, &best, &cand, best_v);
    free(best_v);
    if (have) {
        /* s takes best whole, simulated: its measures come along. */
        struct zb_schedule old = *s;
        *s = best;
        best = old;
    } else
        rc = zb_error_set(err, ZB_ENOMEM_LIMIT,
                          "no variant of the constructive zb heuristic "
                          "fits the memory limit");
    zb_schedule_release(&best);
    zb_schedule_release(&cand);
out_cons:
    cons_release(&c);
    return rc;
}
