/* improve.c - local search on the compute order (see improve.h).
 *
 * A chain is simulated annealing over single-rank moves (take one pass
 * out of its rank's list and put it back elsewhere), each checked for
 * order, same-rank dependencies and memory, then re-timed incrementally
 * (improve_eval.c). Most moves aim at the critical path of the rank that
 * sets the cost, as in job-shop local search: where a pass waits for the
 * pass before it on its rank, swap them; where it waits for an input,
 * run the producer earlier on its rank or fill the gap with a later W.
 * The rest are random displacements, to leave plateaus. The energy is the
 * cost plus a small share of the mean span, so that moves on ranks that
 * do not set the cost yet still count; the best order by (cost, makespan)
 * is kept apart. Only +, *, / and comparisons decide (no exp(), no clock),
 * so a seed and a budget give one result everywhere. */
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "improve.h"
#include "improve_eval.h"
#include "zbsched/pass.h"
#include "zbsched/sim.h"
#include "zbsched/xalloc.h"

/* Weight of the mean span in the energy. */
#define SPAN_WEIGHT 0.1
/* Share of moves aimed at the critical path. */
#define CRIT_SHARE 0.7
/* Temperatures, in units of the mean pass time, at the start and end. */
#define TEMP_START 0.05
#define TEMP_END 0.001
/* Work charged for proposing and checking one move. */
#define MOVE_CHARGE 16
/* Longest critical path kept. */
#define PATH_MAX_OPS 8192

struct chain {
    const struct zb_profile *p;
    const struct zb_schedule *in;
    uint64_t rng;
    long budget;
    struct improve_state st;
    int **best;
    double in_cost, in_makespan;
    double best_cost, best_makespan, energy, tau;
    int *path;                /* critical path, last op first */
    int path_n;
    long path_at;             /* `accepted` when the path was taken */
    long evals, accepted;
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

static double energy(const struct improve_state *st)
{
    double sum = 0;

    for (int r = 0; r < st->pp; r++)
        sum += st->span[r];
    return st->cost + SPAN_WEIGHT * sum / st->pp;
}

/* exp(-x) through its truncated series 1 / (1 + x + x^2/2 + x^3/6): only
 * correctly rounded operations, so every machine agrees. */
static bool accept(struct chain *c, double delta, double temp)
{
    double x;

    if (delta <= 0)
        return true;
    x = delta / temp;
    if (x > 30)
        return false;
    return unit(c) * (1 + x + x * x / 2 + x * x * x / 6) < 1;
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
    c->best_cost = st->cost;
    c->best_makespan = st->makespan;
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

static void step(struct chain *c)
{
    struct improve_state *st = &c->st;
    double frac = (double)st->work / (double)c->budget, e;
    double temp = c->tau * TEMP_START *
                  pow(TEMP_END / TEMP_START, frac > 1 ? 1 : frac);
    int r, from, to;
    bool ok;

    st->work += MOVE_CHARGE;
    ok = unit(c) < CRIT_SHARE ? propose_crit(c, &r, &from, &to)
                              : propose_random(c, &r, &from, &to);
    if (!ok || !improve_check(st, r, from, to))
        return;
    if (improve_try(st, r, from, to) < 0)
        return;
    c->evals++;
    e = energy(st);
    if (!accept(c, e - c->energy, temp)) {
        improve_undo(st);
        return;
    }
    improve_commit(st);
    c->accepted++;
    c->energy = e;
    if (better(st->cost, st->makespan, c->best_cost, c->best_makespan))
        save_best(c);
}

static void *run_chain(void *arg)
{
    struct chain *c = arg;
    struct improve_state *st = &c->st;

    c->rc = improve_state_init(st, c->p, c->in, &c->err);
    if (c->rc < 0)
        return NULL;
    c->best = zb_xcalloc((size_t)st->pp, sizeof(int *));
    for (int r = 0; r < st->pp; r++)
        c->best[r] = zb_xcalloc((size_t)st->len[r] + 1, sizeof(int));
    c->path = zb_xcalloc(PATH_MAX_OPS, sizeof(int));
    c->path_at = -1;
    c->tau = mean_pass(c->p);
    save_best(c);
    c->in_cost = st->cost;
    c->in_makespan = st->makespan;
    c->energy = energy(st);
    st->work = 0;
    while (st->work < c->budget)
        step(c);
    return NULL;
}

static void chain_release(struct chain *c)
{
    for (int r = 0; c->best && r < c->st.pp; r++)
        free(c->best[r]);
    free(c->best);
    free(c->path);
    improve_state_release(&c->st);
}

/* ---- the entry point -------------------------------------------------- */

double improve_default_effort(const struct zb_profile *p)
{
    double n = (double)zb_pass_count(p);
    double e = 0.2 * pow(n / 768.0, 2.0 / 3.0);

    /* At most 1.2 s: at p 64, m 1024 the candidates, lowering and the
     * JSON take another 1.3 s, and the whole run should stay within 3 s. */
    return e < 0.2 ? 0.2 : e > 1.2 ? 1.2 : e;
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

/* Run the chains; the index of the best, -1 when none beat the input
 * (ties: the lower index), or a negative ZB_E* code below -1. */
static int run_chains(struct chain *ch, int n, struct zb_error *err)
{
    pthread_t t;
    bool threaded = n == 2 &&
                    pthread_create(&t, NULL, run_chain, &ch[1]) == 0;
    int win = -1;

    run_chain(&ch[0]);
    if (threaded)
        pthread_join(t, NULL);
    else if (n == 2)
        run_chain(&ch[1]);
    for (int i = 0; i < n; i++)
        if (ch[i].rc < 0) {
            if (err)
                *err = ch[i].err;
            return ch[i].rc;
        }
    for (int i = 0; i < n; i++) {
        double c0 = win < 0 ? ch[0].in_cost : ch[win].best_cost;
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
        stats->work += ch[i].st.work;
    }
    stats->chain = win;
    stats->cost_in = ch[0].in_cost;
    stats->makespan_in = ch[0].in_makespan;
    stats->cost_out = s->predicted.cost;
    stats->makespan_out = s->predicted.makespan;
}

int improve_order(const struct zb_profile *p, struct zb_schedule *s,
                  const struct improve_opts *o,
                  struct improve_stats *stats, struct zb_error *err)
{
    struct chain ch[2];
    int n, win, rc;

    if ((rc = check_opts(o, err)) < 0)
        return rc;
    zb_schedule_strip_comm(s);
    n = o->threads;
    memset(ch, 0, sizeof(ch));
    for (int i = 0; i < n; i++) {
        uint64_t x = ((uint64_t)o->seed << 1) | (uint64_t)i;
        ch[i].p = p;
        ch[i].in = s;
        ch[i].rng = splitmix(&x);
        ch[i].budget = o->effort > 0
            ? (long)(o->effort * IMPROVE_WORK_PER_SECOND) : 0;
    }
    win = run_chains(ch, n, err);
    if (win < -1) {
        rc = win;
        goto out;
    }
    if (win >= 0) {
        improve_load(&ch[win].st, ch[win].best);
        improve_write(&ch[win].st, s);
    }
    rc = zb_sim_run(s, err);
    fill_stats(stats, ch, n, win, s);
out:
    for (int i = 0; i < n; i++)
        chain_release(&ch[i]);
    return rc;
}
