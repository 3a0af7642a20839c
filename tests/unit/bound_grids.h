/* bound_grids.h - the closed-form lower bound against exhaustive search:
 * every legal compute order of a tiny instance simulated, none may beat
 * the bound. The unit suite (test_bound.c) runs a slice of each grid and
 * `make bench` (tools/bench_solver_check.c) runs them whole: the same
 * checks, one copy. No test framework here: a check returns its verdict. */
#ifndef ZBSCHED_TEST_BOUND_GRIDS_H
#define ZBSCHED_TEST_BOUND_GRIDS_H

#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include "shapes.h"
#include "zbsched/bound.h"
#include "zbsched/error.h"
#include "zbsched/schedule.h"
#include "zbsched/sim.h"

#define ORDERS_MAX_SEQ 1024  /* 908 orders per rank for 2 chunks, m 2 */
#define ORDERS_MAX_LEN 12    /* 3 passes x m x v <= 12 */
#define ORDERS_MAX_PP 4

/* Every order of one rank's passes: kind, chunk (0 = its lower stage)
 * and microbatch. */
struct seqs {
    unsigned char kind[ORDERS_MAX_SEQ][ORDERS_MAX_LEN];
    unsigned char chunk[ORDERS_MAX_SEQ][ORDERS_MAX_LEN];
    unsigned char mb[ORDERS_MAX_SEQ][ORDERS_MAX_LEN];
    int n, len;
};

struct orders_walk {
    int m, v, depth;
    int nf[2], nb[2], nw[2];
    unsigned char kind[ORDERS_MAX_LEN], chunk[ORDERS_MAX_LEN];
    unsigned char mb[ORDERS_MAX_LEN];
};

static inline void orders_push(struct orders_walk *w, enum zb_op_kind k,
                               int c, int i)
{
    w->kind[w->depth] = (unsigned char)k;
    w->chunk[w->depth] = (unsigned char)c;
    w->mb[w->depth] = (unsigned char)i;
    w->depth++;
}

/* Every order of one rank's passes that keeps each (chunk, kind) in
 * microbatch order (which loses nothing, see src/bound.c), F before B
 * before W, and the dependencies between the rank's own chunks (F climbs
 * the stages, B comes back down). False when out has no room. */
static inline bool orders_enumerate(struct seqs *out, struct orders_walk *w)
{
    bool ok = true;

    if (w->depth == out->len) {
        if (out->n >= ORDERS_MAX_SEQ)
            return false;
        memcpy(out->kind[out->n], w->kind, (size_t)out->len);
        memcpy(out->chunk[out->n], w->chunk, (size_t)out->len);
        memcpy(out->mb[out->n], w->mb, (size_t)out->len);
        out->n++;
        return true;
    }
    for (int c = 0; ok && c < w->v; c++) {
        if (w->nf[c] < w->m && (c == 0 || w->nf[c] < w->nf[c - 1])) {
            orders_push(w, ZB_OP_F, c, w->nf[c]++);
            ok = orders_enumerate(out, w);
            w->nf[c]--, w->depth--;
        }
        if (ok && w->nb[c] < w->nf[c] &&
            (c == w->v - 1 || w->nb[c] < w->nb[c + 1])) {
            orders_push(w, ZB_OP_B, c, w->nb[c]++);
            ok = orders_enumerate(out, w);
            w->nb[c]--, w->depth--;
        }
        if (ok && w->nw[c] < w->nb[c]) {
            orders_push(w, ZB_OP_W, c, w->nw[c]++);
            ok = orders_enumerate(out, w);
            w->nw[c]--, w->depth--;
        }
    }
    return ok;
}

/* Every order of m microbatches over v chunks into q. False when q has
 * no room for them (ORDERS_MAX_*). */
static inline bool all_orders(struct seqs *q, int m, int v)
{
    struct orders_walk w = { .m = m, .v = v };

    q->n = 0;
    q->len = 3 * m * v;
    return q->len <= ORDERS_MAX_LEN && v <= 2 && orders_enumerate(q, &w);
}

/* Whether order j keeps a rank within limit (memory counts passes). */
static inline bool order_fits(const struct zb_profile *p,
                              const struct seqs *q, int j, double limit)
{
    double mem = 0;

    for (int i = 0; i < q->len; i++) {
        mem += zb_pass_memory_delta(p, q->kind[j][i], 0);
        if (mem > limit * (1 + 1e-9))
            return false;
    }
    return true;
}

/* The least simulated cost over every combination of per-rank orders
 * (INFINITY: none fits; NAN: more ranks than ORDERS_MAX_PP). */
static inline double best_order_cost(const struct zb_profile *p,
                                     const struct seqs *q)
{
    static int ok[ORDERS_MAX_PP][ORDERS_MAX_SEQ];
    int n[ORDERS_MAX_PP], idx[ORDERS_MAX_PP] = { 0 };
    double best = INFINITY;
    struct zb_schedule s;

    if (p->pp > ORDERS_MAX_PP)
        return NAN;
    for (int r = 0; r < p->pp; r++) {
        n[r] = 0;
        for (int j = 0; j < q->n; j++)
            if (order_fits(p, q, j, p->mem_limit[r]))
                ok[r][n[r]++] = j;
        if (n[r] == 0)
            return INFINITY;
    }
    zb_schedule_init(&s, "exhaustive", p);
    for (;;) {
        int r = 0;
        for (int k = 0; k < p->pp; k++) {
            int j = ok[k][idx[k]];
            s.ranks[k].n = 0;
            for (int i = 0; i < q->len; i++)
                zb_schedule_push(&s, k, q->kind[j][i],
                                 zb_profile_rank_stage(p, k, q->chunk[j][i]),
                                 q->mb[j][i]);
        }
        if (zb_sim_run(&s, NULL) == 0)
            best = fmin(best, s.predicted.cost);
        while (r < p->pp && ++idx[r] == n[r])
            idx[r++] = 0;
        if (r == p->pp)
            break;
    }
    zb_schedule_release(&s);
    return best;
}

/* ---- the grids: random instances of a few families -------------------- */

struct family {
    int pp, vpp, mb, trials;
    enum zb_placement placement;
    int low;    /* limits only up to vpp + low - 1 (0: the whole range) */
};

/* Random times per stage (unequal), comm, M_W and a limit from one
 * microbatch's activations (v M_B) to 2pv M_B or none. */
static inline void family_case(unsigned *seed, const struct family *f,
                               struct zb_profile *prof)
{
    struct shape sh = unit_shape(f->pp, f->mb);
    int steps = 2 * f->pp * f->vpp;

    sh.vpp = f->vpp;
    sh.placement = f->placement;
    sh.comm = (rand_r(seed) % 4) * 0.1;
    sh.m_w = (rand_r(seed) % 4) * 0.5;     /* 1.5: B allocates */
    if (f->low > 0)
        sh.limit = f->vpp + rand_r(seed) % f->low;
    else
        sh.limit = rand_r(seed) % (steps + 1) == 0
                       ? INFINITY : f->vpp + rand_r(seed) % steps;
    /* One microbatch per chunk, one of them between its B and W. */
    sh.limit = fmax(sh.limit, f->vpp - 1 + sh.m_w);
    make_profile(&sh, prof);
    for (int s = 0; s < f->pp * f->vpp; s++)
        prof->stage[s] = (struct zb_stage_times){
            0.5 + (rand_r(seed) % 4) * 0.5, 0.5 + (rand_r(seed) % 4) * 0.5,
            (rand_r(seed) % 4) * 0.5 };
}

/* One grid: its families and the seed of its random instances. */
struct order_grid {
    const char *name;
    const struct family *fam;
    int n;
    unsigned seed;
};

/* Loop placement, one chunk: 5, 42 and 462 orders per rank for m = 2,
 * 3, 4. */
static const struct family grid_tiny[] = {
    { 2, 1, 1, 10, ZB_PLACEMENT_LOOP, 0 },
    { 3, 1, 1, 10, ZB_PLACEMENT_LOOP, 0 },
    { 4, 1, 2, 20, ZB_PLACEMENT_LOOP, 0 },
    { 2, 1, 2, 30, ZB_PLACEMENT_LOOP, 0 },
    { 3, 1, 2, 30, ZB_PLACEMENT_LOOP, 0 },
    { 4, 1, 3, 2, ZB_PLACEMENT_LOOP, 0 },
    { 2, 1, 3, 30, ZB_PLACEMENT_LOOP, 0 },
    { 3, 1, 3, 6, ZB_PLACEMENT_LOOP, 0 },
    { 2, 1, 4, 3, ZB_PLACEMENT_LOOP, 0 },
};

/* Two chunks, V and loop: 3 and 908 orders per rank for m = 1, 2. */
static const struct family grid_two_chunks[] = {
    { 2, 2, 1, 20, ZB_PLACEMENT_V, 0 }, { 3, 2, 1, 20, ZB_PLACEMENT_V, 0 },
    { 4, 2, 1, 20, ZB_PLACEMENT_V, 0 },
    { 2, 2, 1, 20, ZB_PLACEMENT_LOOP, 0 },
    { 3, 2, 1, 20, ZB_PLACEMENT_LOOP, 0 },
    { 2, 2, 2, 3, ZB_PLACEMENT_V, 0 },
    { 2, 2, 2, 2, ZB_PLACEMENT_LOOP, 0 },
};

/* Limits of one to three microbatches: the memory chain of round trips
 * (src/bound.c section 4) and the memory-forced W's bind. */
static const struct family grid_low_limits[] = {
    { 2, 1, 3, 30, ZB_PLACEMENT_LOOP, 3 },
    { 3, 1, 3, 10, ZB_PLACEMENT_LOOP, 2 },
    { 2, 1, 4, 6, ZB_PLACEMENT_LOOP, 2 },
    { 3, 2, 1, 20, ZB_PLACEMENT_V, 2 },
    { 2, 2, 2, 4, ZB_PLACEMENT_V, 3 },
    { 2, 2, 2, 3, ZB_PLACEMENT_LOOP, 3 },
};

#define ORDER_GRID(name, fam, seed) \
    { name, fam, (int)(sizeof(fam) / sizeof(fam[0])), seed }
static const struct order_grid order_grids[] = {
    ORDER_GRID("tiny", grid_tiny, 7),
    ORDER_GRID("two-chunks", grid_two_chunks, 11),
    ORDER_GRID("low-limits", grid_low_limits, 13),
};
#define ORDER_GRIDS (int)(sizeof(order_grids) / sizeof(order_grids[0]))

/* What a grid run found. */
struct order_tally {
    int cases, tight;
    char violation[ZB_ERROR_MSG_MAX + 96];  /* "" when every check held */
};

/* Grid g's instances, every stride-th trial of each family (1: all; the
 * others are drawn and skipped, so a slice is a subset of the whole):
 * no order beats the bound, and the bound is tight in more than a
 * quarter of them (not a requirement of a bound, but one never tight is
 * useless). Returns false with t->violation set otherwise. */
static inline bool order_grid_check(const struct order_grid *g, int stride,
                                    struct order_tally *t)
{
    static struct seqs q;
    unsigned seed = g->seed;

    memset(t, 0, sizeof(*t));
    for (int c = 0; c < g->n && !t->violation[0]; c++) {
        const struct family *f = &g->fam[c];
        if (!all_orders(&q, f->mb, f->vpp)) {
            snprintf(t->violation, sizeof(t->violation),
                     "p %d v %d m %d: too many orders", f->pp, f->vpp,
                     f->mb);
            break;
        }
        for (int trial = 0; trial < f->trials; trial++) {
            struct zb_profile prof;
            double lb, opt;
            family_case(&seed, f, &prof);
            if (trial % stride) {
                zb_profile_release(&prof);
                continue;
            }
            lb = zb_bound_cost(&prof);
            opt = best_order_cost(&prof, &q);
            if (!isfinite(opt))
                snprintf(t->violation, sizeof(t->violation),
                         "%s p %d v %d m %d trial %d: no order fits",
                         zb_placement_name(f->placement), f->pp, f->vpp,
                         f->mb, trial);
            else if (lb > opt + 1e-9)
                snprintf(t->violation, sizeof(t->violation),
                         "%s p %d v %d m %d trial %d: bound %g above the "
                         "best order %g", zb_placement_name(f->placement),
                         f->pp, f->vpp, f->mb, trial, lb, opt);
            t->tight += fabs(lb - opt) < 1e-9;
            t->cases++;
            zb_profile_release(&prof);
            if (t->violation[0])
                break;
        }
    }
    if (!t->violation[0] && t->tight <= t->cases / 4)
        snprintf(t->violation, sizeof(t->violation),
                 "the bound is tight in %d of %d cases only", t->tight,
                 t->cases);
    return !t->violation[0];
}

#endif
