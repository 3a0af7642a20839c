/* improve.c - local search on the compute order (see search.h).
 *
 * A chain is simulated annealing over single-rank moves (take one pass
 * out of its rank's list and put it back elsewhere) and compound column
 * moves (shift a pass and its counterparts along the pipeline, one per
 * rank, by the same number of positions), each checked for order,
 * same-rank dependencies and memory, then re-timed incrementally
 * (improve_eval.c). Most single moves aim at the critical path of the
 * rank that sets the cost, as in job-shop local search: where a pass
 * waits for the pass before it on its rank, swap them; where it waits
 * for an input, run the producer earlier on its rank or fill the gap with
 * a later W. The rest are random displacements, to leave plateaus. The
 * energy is the score plus a small share of the mean span, so that moves
 * on ranks that do not set the score yet still count; the best order by
 * (score, makespan) is kept apart. A move is first judged on an estimate
 * of its cost (heads and tails, improve_estimate.c) and re-timed only if
 * that passes the acceptance test: most moves lengthen the critical path
 * by far more than the temperature allows. The score is the cost, or
 * with data parallelism the step's end after the collectives
 * (improve_step.h).
 * A budget is spent in annealing runs of a fifth of the default budget,
 * each restarted from the best order so far, and the default's runs stop
 * after a run's work without a new best (STALL_CYCLES); a budget above
 * the default begins with exactly the default's runs, so more effort is
 * never worse. Only +, *, / and comparisons decide (no exp(), no clock),
 * so a seed and a budget give one result everywhere. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "search/search.h"
#include "search/improve_eval.h"
#include "search/improve_step.h"
#include "zbsched/pass.h"
#include "zbsched/sim.h"
#include "zbsched/xalloc.h"

/* Weight of the mean span in the energy. */
#define SPAN_WEIGHT 0.1
/* Share of moves aimed at the critical path. */
#define CRIT_SHARE 0.7
/* Share of compound (column) moves. */
#define COLUMN_SHARE 0.2
/* Temperatures, in units of the mean pass time, at the start and end. */
#define TEMP_START 0.05
#define TEMP_END 0.001
/* ln(TEMP_START / TEMP_END) = ln 50. */
#define LN_TEMP_RATIO 3.912023005428146
/* Work charged for proposing, checking and then committing or undoing
 * one move (about 1 us; improve_eval.h's cost model). */
#define MOVE_CHARGE 40
/* Length of one annealing run (a cycle of cooling) in default budgets:
 * within a budget, runs restarted from the best order so far
 * (anneal_all()). Five short coolings did a little better than one long
 * one (docs/tuning.md, "Search budget: work units and the default"). */
#define CYCLE_SHARE 0.2
/* Longest critical path kept. */
#define PATH_MAX_OPS 8192
/* Work without a new best, in annealing runs (CYCLE_SHARE of the default
 * budget), after which the default search stops: a restart from the best
 * that finds nothing better will not (deterministic: work, never the
 * clock); --effort above the default then spends its extra budget in
 * restarts as before (docs/tuning.md, "Search stagnation"). */
#define STALL_CYCLES 1.0

struct chain {
    const struct zb_profile *p;
    const struct zb_schedule *in;
    uint64_t rng;
    long budget;
    long base;                /* the default effort's budget (anneal_all) */
    long cyc_at, cyc_len;     /* the current annealing run's work span */
    struct improve_state st;
    struct improve_step step;   /* the score's step term (dp only) */
    int **best;
    double in_cost, in_makespan, in_score;
    double best_cost, best_makespan, energy, tau; /* best_cost: score */
    int *path;                /* critical path, last op first */
    int path_n;
    long path_at;             /* `accepted` when the path was taken */
    long evals, accepted;
    long skipped;             /* moves rejected on their estimate */
    long best_at;             /* work when the best last improved */
    long stall;               /* stop after this much work without a new
                                 best (0: never) */
    const volatile sig_atomic_t *interrupt;    /* improve_opts' */
    int rc;
    struct zb_error err;
};

/* ---- deterministic randomness ----------------------------------------- */

static uint64_t splitmix(uint64_t *x)
{
    uint64_t z = (*x += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static uint64_t next(struct chain *c)
{
    return splitmix(&c->rng);
}

static int below(struct chain *c, int n)
{
    return n > 0 ? (int)(next(c) % (uint64_t)n) : 0;
}

static double unit(struct chain *c)
{
    return (double)(next(c) >> 11) * 0x1p-53;
}

/* ---- energy and acceptance -------------------------------------------- */

/* What the search minimises: the cost, or the step with data
 * parallelism (the step ends with the last reduce, not with the cost). */
static double score(const struct chain *c)
{
    return c->step.on ? zbi_improve_step_end(&c->step, &c->st) : c->st.cost;
}

static double energy(const struct chain *c)
{
    const struct improve_state *st = &c->st;
    double sum = 0;

    for (int r = 0; r < st->pp; r++)
        sum += st->span[r];
    return score(c) + SPAN_WEIGHT * sum / st->pp;
}

/* Metropolis with the draw u in [0, 1) made beforehand (so that a move
 * can be judged on an estimate first): exp(-x) through its truncated
 * series 1 / (1 + x + x^2/2 + x^3/6), only correctly rounded
 * operations, so every machine agrees. */
static bool accept(double u, double delta, double temp)
{
    double x;

    if (delta <= 0)
        return true;
    x = delta / temp;
    if (x > 30)
        return false;
    return u * (1 + x + x * x / 2 + x * x * x / 6) < 1;
}

/* exp(-x) for 0 <= x <= 4: (1 + y + ... + y^8/8!)^-16 with y = x/16,
 * within 1e-9 relative; only +, * and /, so every machine agrees (pow()
 * and exp() need not). */
static double exp_neg(double x)
{
    double y = x / 16, term = 1, sum = 1;

    for (int i = 1; i <= 8; i++) {
        term *= y / i;
        sum += term;
    }
    for (int i = 0; i < 4; i++)
        sum *= sum;
    return 1 / sum;
}

static bool better(double cost, double mk, double best_cost, double best_mk)
{
    return cost < best_cost || (cost == best_cost && mk < best_mk);
}

/* ---- proposing moves -------------------------------------------------- */

/* The pass that y waited for: an input (*on_rank false) or the pass
 * before it on its rank; -1 when y started at 0 or in a gap it could not
 * use. Inputs win ties: they lead off the rank, toward the cause. */
static int binding(const struct improve_state *st, int y, bool *on_rank)
{
    const struct improve_op *x = &st->op[y];
    int k = st->pos[y];

    *on_rank = false;
    for (int j = 0; j < x->npred; j++)
        if (st->end[x->pred[j]] + x->lag[j] == st->start[y])
            return x->pred[j];
    *on_rank = true;
    if (k > 0 && st->end[st->order[x->rank][k - 1]] == st->start[y])
        return st->order[x->rank][k - 1];
    return -1;
}

/* The critical path ending at the last pass of the rank that sets the
 * cost (the lowest such rank), last pass first. */
static void take_path(struct chain *c)
{
    const struct improve_state *st = &c->st;
    int r = 0, y;
    bool on_rank;

    for (int q = 1; q < st->pp; q++)
        if (st->span[q] > st->span[r])
            r = q;
    c->path_n = 0;
    c->path_at = c->accepted;
    if (st->len[r] == 0)
        return;
    y = st->order[r][st->len[r] - 1];
    while (y >= 0 && c->path_n < PATH_MAX_OPS) {
        c->path[c->path_n++] = y;
        y = binding(st, y, &on_rank);
    }
    c->st.work += c->path_n / 2;    /* about 12 ns an op */
}

/* The first W after position k on rank r (at most 32 on), or -1. */
static int next_w(const struct improve_state *st, int r, int k)
{
    for (int i = k + 1; i < st->len[r] && i <= k + 32; i++)
        if (st->op[st->order[r][i]].cls == 2)
            return i;
    return -1;
}

static bool propose_crit(struct chain *c, int *r, int *from, int *to)
{
    const struct improve_state *st = &c->st;
    int y, x, k;
    bool on_rank;

    if (c->path_at != c->accepted || c->path_n == 0)
        take_path(c);
    if (c->path_n == 0)
        return false;
    /* Late passes are cheap to re-time (only what follows changes): favour
     * them, the smaller of two draws. */
    k = below(c, c->path_n);
    y = below(c, c->path_n);
    y = c->path[y < k ? y : k];
    x = binding(st, y, &on_rank);
    *r = st->op[y].rank;
    k = st->pos[y];
    if (x < 0)
        return false;
    if (on_rank) {
        /* y waits for the pass before it: run y earlier, or push that
         * pass (and what follows) later. */
        if (below(c, 2)) {
            *from = k;
            *to = k - 1 - below(c, 2);
        } else {
            *from = k - 1;
            *to = k + below(c, 3);
        }
        return true;
    }
    if (k > 0 && st->end[st->order[*r][k - 1]] < st->start[y] &&
        below(c, 2)) {
        /* A gap before y: fill it with a later W, or let the next pass
         * run first. */
        int w = next_w(st, *r, k);
        *from = w >= 0 && below(c, 3) ? w : k;
        *to = w >= 0 && *from == w ? k : k + 1;
        return true;
    }
    /* y waits for an input: run its producer earlier. */
    *r = st->op[x].rank;
    *from = st->pos[x];
    *to = *from - 1 - below(c, 2);
    return true;
}

/* y's counterpart on the next rank along its class's dependency chain:
 * for F and B the input (fwd false) or consumer (fwd true) of the same
 * class on another rank; for W the W of that counterpart of its B. -1
 * when there is none. */
static int neighbour(const struct improve_state *st, int y, bool fwd)
{
    const struct improve_op *x = &st->op[y];
    int n = fwd ? x->nsucc : x->npred;

    if (x->cls == 2) {
        int b = x->npred > 0 ? x->pred[0] : -1, nb;
        if (b < 0 || st->op[b].cls != 1 ||
            (nb = neighbour(st, b, fwd)) < 0)
            return -1;
        for (int j = 0; j < st->op[nb].nsucc; j++)
            if (st->op[st->op[nb].succ[j]].cls == 2)
                return st->op[nb].succ[j];
        return -1;
    }
    for (int j = 0; j < n; j++) {
        int z = fwd ? x->succ[j] : x->pred[j];
        if (st->op[z].cls == x->cls && st->op[z].rank != x->rank)
            return z;
    }
    return -1;
}

/* A compound move: shift a pass on the critical path and its
 * counterparts on the next ranks (neighbour()) by the same number of
 * positions, so that a gap that travels down the pipeline moves as one.
 * Stops at the first rank where the shift is illegal or already taken.
 * The number of moves. */
static int propose_column(struct chain *c, struct improve_move *mv)
{
    const struct improve_state *st = &c->st;
    int most = st->pp < IMPROVE_MAX_MOVES ? st->pp : IMPROVE_MAX_MOVES;
    int y, d = 1 + below(c, 3), k = 2 + below(c, most - 1);
    bool fwd = below(c, 2), used;
    int n = 0;

    y = c->path_n > 0 ? c->path[below(c, c->path_n)] : below(c, st->nops);
    if (below(c, 2))
        d = -d;
    while (y >= 0 && n < k) {
        int r = st->op[y].rank;
        used = false;
        for (int i = 0; i < n; i++)
            used |= mv[i].rank == r;
        if (used || !zbi_improve_check(&c->st, r, st->pos[y], st->pos[y] + d))
            break;
        mv[n].rank = r;
        mv[n].from = st->pos[y];
        mv[n].to = st->pos[y] + d;
        n++;
        y = neighbour(st, y, fwd);
    }
    return n;
}

static bool propose_random(struct chain *c, int *r, int *from, int *to)
{
    const struct improve_state *st = &c->st;
    int x = below(c, st->nops), d = 1 + below(c, 4);

    if (below(c, 4) == 0)
        d += below(c, 28);
    *r = st->op[x].rank;
    *from = st->pos[x];
    *to = below(c, 2) ? *from + d : *from - d;
    return true;
}

/* ---- one chain -------------------------------------------------------- */

static void save_best(struct chain *c)
{
    const struct improve_state *st = &c->st;

    for (int r = 0; r < st->pp; r++)
        memcpy(c->best[r], st->order[r], (size_t)st->len[r] * sizeof(int));
    c->best_cost = score(c);
    c->best_makespan = st->makespan;
    c->best_at = st->work;
}

/* Whether the search has worked `stall` units without a new best. */
static bool stalled(const struct chain *c)
{
    return c->stall > 0 && c->st.work - c->best_at >= c->stall;
}

/* Mean pass time: the scale of the temperatures. */
static double mean_pass(const struct zb_profile *p)
{
    double sum = 0;
    int n = zb_profile_stages(p);

    for (int s = 0; s < n; s++)
        sum += p->stage[s].f + p->stage[s].b + p->stage[s].w;
    return n > 0 && sum > 0 ? sum / (3.0 * n) : 1;
}

/* Whether the moves' estimated cost (zbi_improve_estimate()) fails the
 * acceptance test with draw u at temperature temp: then they are
 * rejected unre-timed. Not with data parallelism, where the score is the
 * step's end. */
static bool rejected_on_estimate(struct chain *c, int n,
                                 const struct improve_move *mv, double u,
                                 double temp)
{
    if (c->step.on ||
        accept(u, zbi_improve_estimate(&c->st, n, mv) - c->st.cost, temp))
        return false;
    c->skipped++;
    return true;
}

/* Propose a move and re-time it; false when there is none to judge.
 * A move is first judged on its estimate (rejected_on_estimate()): most
 * proposals put a pass onto the critical path and lengthen it by far
 * more than the temperature, and a re-timing costs thousands of ops
 * where the estimate costs the moved windows. */
static bool propose_try(struct chain *c, double u, double temp)
{
    struct improve_state *st = &c->st;
    struct improve_move mv[IMPROVE_MAX_MOVES];
    double pick = unit(c);
    int n;

    st->work += MOVE_CHARGE;
    if (pick < COLUMN_SHARE) {
        if (c->path_at != c->accepted)
            take_path(c);
        n = propose_column(c, mv);
        st->work += (long)n * MOVE_CHARGE;
        if (n >= 2)
            return !rejected_on_estimate(c, n, mv, u, temp) &&
                   zbi_improve_try_n(st, n, mv) == 0;
        pick = 1;
    }
    if (!(pick < COLUMN_SHARE + CRIT_SHARE
              ? propose_crit(c, &mv[0].rank, &mv[0].from, &mv[0].to)
              : propose_random(c, &mv[0].rank, &mv[0].from, &mv[0].to)) ||
        !zbi_improve_check(st, mv[0].rank, mv[0].from, mv[0].to) ||
        rejected_on_estimate(c, 1, mv, u, temp))
        return false;
    return zbi_improve_try(st, mv[0].rank, mv[0].from, mv[0].to) == 0;
}

static void step(struct chain *c)
{
    struct improve_state *st = &c->st;
    double frac = (double)(st->work - c->cyc_at) / (double)c->cyc_len, e;
    double temp = c->tau * TEMP_START *
                  exp_neg(LN_TEMP_RATIO * (frac > 1 ? 1 : frac));
    double u = unit(c);

    if (!propose_try(c, u, temp))
        return;
    c->evals++;
    e = energy(c);
    if (!accept(u, e - c->energy, temp)) {
        zbi_improve_undo(st);
        return;
    }
    zbi_improve_commit(st);
    c->accepted++;
    c->energy = e;
    if (better(score(c), st->makespan, c->best_cost, c->best_makespan))
        save_best(c);
}

static bool interrupted(const struct chain *c)
{
    return c->interrupt && *c->interrupt;
}

/* One annealing run of `len` work units from the current order, cut
 * off where the work reaches `cap`. */
static void anneal(struct chain *c, long len, long cap)
{
    c->cyc_at = c->st.work;
    c->cyc_len = len > 0 ? len : 1;
    while (c->st.work < c->cyc_at + c->cyc_len && c->st.work < cap &&
           !interrupted(c) && !stalled(c))
        step(c);
}

/* Runs restarted from the best order so far, with the full cooling,
 * until `upto` work units are spent: as many as there are default-length
 * cycles in what is left (at least one; none for a remainder up to an
 * eighth of a cycle). */
static void restarts(struct chain *c, long cycle, long upto)
{
    long rest = upto - c->st.work, k;

    if (rest <= cycle / 8)
        return;
    k = rest / cycle > 1 ? rest / cycle : 1;
    while (c->st.work < upto && !interrupted(c) && !stalled(c)) {
        zbi_improve_load(&c->st, c->best);
        c->energy = energy(c);
        c->path_at = -1;
        anneal(c, rest / k, upto);
    }
}

/* First the search the default effort runs (`base` units, this search's
 * share of the default budget: a run as long as the default cycle or
 * base if shorter, then restarts up to base), then the rest of the
 * budget in restarts. So a larger effort begins with exactly the
 * default's search and more effort is never worse, where one long run
 * could end worse because its cooling stretched with the budget. */
static void anneal_all(struct chain *c)
{
    long cycle = (long)(CYCLE_SHARE * zbi_improve_default_effort(c->p) *
                        IMPROVE_WORK_PER_SECOND);
    long base = c->base < c->budget ? c->base : c->budget;

    c->stall = (long)(STALL_CYCLES * cycle);
    c->best_at = c->st.work;
    anneal(c, base < cycle ? base : cycle, base);
    restarts(c, cycle, base);
    c->stall = 0;
    if (c->budget > base)
        restarts(c, cycle, c->st.work + (c->budget - base));
}

static void *run_chain(void *arg)
{
    struct chain *c = arg;
    struct improve_state *st = &c->st;

    c->rc = zbi_improve_state_init(st, c->p, c->in, &c->err);
    if (c->rc < 0)
        return NULL;
    zbi_improve_step_init(&c->step, st);
    c->best = zb_xcalloc((size_t)st->pp, sizeof(int *));
    for (int r = 0; r < st->pp; r++)
        c->best[r] = zb_xcalloc((size_t)st->len[r] + 1, sizeof(int));
    c->path = zb_xcalloc(PATH_MAX_OPS, sizeof(int));
    c->path_at = -1;
    c->tau = mean_pass(c->p);
    save_best(c);
    c->in_cost = st->cost;
    c->in_makespan = st->makespan;
    c->in_score = score(c);
    c->energy = energy(c);
    st->work = 0;
    anneal_all(c);
    return NULL;
}

static void chain_release(struct chain *c)
{
    for (int r = 0; c->best && r < c->st.pp; r++)
        free(c->best[r]);
    free(c->best);
    free(c->path);
    zbi_improve_step_release(&c->step);
    zbi_improve_state_release(&c->st);
}

/* ---- the entry point -------------------------------------------------- */

double zbi_improve_default_effort(const struct zb_profile *p)
{
    /* Per chunk set: V's and interleaved's chunks split the same work
     * per rank into more, shorter passes, and the budget at p 8, m 32
     * holds for every placement (docs/tuning.md, "V at 1F1B's
     * memory: full ranks making room with a B", its later note). */
    double r = (double)zb_pass_count(p) / p->vpp / 768.0, y = 1, e;

    /* Growing as r^(1/3), and at most 0.5 s, so that `zb`'s whole run (up to
     * two and a half budgets, zb.c) keeps within its time on large pipelines
     * (docs/tuning.md, "Search budget: work units and the default"). r^(1/3)
     * through Newton's cube root (no libm: the budget must be the same on
     * every machine); from 1 it converges for any r >= 0. */
    for (int i = 0; i < 60 && r > 0; i++)
        y = (2 * y + r / (y * y)) / 3;
    e = r > 0 ? 0.2 * y : 0;
    return e < 0.2 ? 0.2 : e > 0.5 ? 0.5 : e;
}

static int check_opts(const struct improve_opts *o, struct zb_error *err)
{
    if (!o || !(o->effort == o->effort) || o->effort > 1e6)
        return zb_error_set(err, ZB_EINVAL, "improve: effort must be a "
                            "number of seconds up to 1e6");
    if (o->threads != 1 && o->threads != 2)
        return zb_error_set(err, ZB_EINVAL, "improve: threads must be 1 "
                            "or 2, got %d", o->threads);
    return 0;
}

/* Run the n chains, the second on its own thread when `threads` is 2 (else,
 * or when no thread can be had, after the first: the result is the same);
 * the index of the best, -1 when none beat the input (ties: the lower
 * index), or a negative ZB_E* code below -1. */
static int run_chains(struct chain *ch, int n, int threads,
                      struct zb_error *err)
{
    struct side_thread t;
    bool side = n == 2 && threads == 2;
    int win = -1;

    if (side)
        zbi_side_thread_start(&t, run_chain, &ch[1]);
    run_chain(&ch[0]);
    if (side)
        zbi_side_thread_join(&t);
    else if (n == 2)
        run_chain(&ch[1]);
    for (int i = 0; i < n; i++)
        if (ch[i].rc < 0) {
            if (err)
                *err = ch[i].err;
            return ch[i].rc;
        }
    for (int i = 0; i < n; i++) {
        double c0 = win < 0 ? ch[0].in_score : ch[win].best_cost;
        double m0 = win < 0 ? ch[0].in_makespan : ch[win].best_makespan;
        if (better(ch[i].best_cost, ch[i].best_makespan, c0, m0))
            win = i;
    }
    return win;
}

static void fill_stats(struct improve_stats *stats, const struct chain *ch,
                       int n, int win, const struct zb_schedule *s)
{
    if (!stats)
        return;
    memset(stats, 0, sizeof(*stats));
    for (int i = 0; i < n; i++) {
        stats->evals += ch[i].evals;
        stats->accepted += ch[i].accepted;
        stats->skipped += ch[i].skipped;
        stats->work += ch[i].st.work;
    }
    stats->chain = win;
    stats->cost_in = ch[0].in_cost;
    stats->makespan_in = ch[0].in_makespan;
    stats->cost_out = s->predicted.cost;
    stats->makespan_out = s->predicted.makespan;
}

int zbi_improve_order(const struct zb_profile *p, struct zb_schedule *s,
                      const struct improve_opts *o,
                      struct improve_stats *stats, struct zb_error *err)
{
    struct chain ch[2];
    int n, win, rc;

    if ((rc = check_opts(o, err)) < 0)
        return rc;
    zb_schedule_strip_comm(s);
    /* Always two chains, whatever the threads: the order depends only on
     * the seed and the effort (so `ilp`, which may run on one thread, sees
     * the order `zb` finds). */
    n = 2;
    memset(ch, 0, sizeof(ch));
    for (int i = 0; i < n; i++) {
        uint64_t x = ((uint64_t)o->seed << 1) | (uint64_t)i;
        ch[i].p = p;
        ch[i].in = s;
        ch[i].rng = splitmix(&x);
        ch[i].interrupt = o->interrupt;
        ch[i].budget = o->effort > 0
            ? (long)(o->effort * IMPROVE_WORK_PER_SECOND) : 0;
        double base = o->base_effort > 0 ? o->base_effort
                                         : zbi_improve_default_effort(p);
        ch[i].base = (long)(base * IMPROVE_WORK_PER_SECOND);
    }
    win = run_chains(ch, n, o->threads, err);
    if (win < -1) {
        rc = win;
        goto out;
    }
    if (win >= 0) {
        zbi_improve_load(&ch[win].st, ch[win].best);
        zbi_improve_write(&ch[win].st, s);
    }
    rc = zb_sim_run(s, err);
    fill_stats(stats, ch, n, win, s);
out:
    for (int i = 0; i < n; i++)
        chain_release(&ch[i]);
    return rc;
}
