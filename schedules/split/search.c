/* search.c - zb_plan_run(): the layer-split search of `zbsched plan`.
 *
 * Per shape (placement, vpp) the candidates are torchtitan's even split,
 * the min-max compute split filled from either end, and (one chunk a
 * rank) the min-max split under a memory constraint per stage that lets
 * rank r keep f (p - r) microbatches in flight. Each is screened by zb
 * without its local search. A hill climb then moves one stage boundary
 * by one layer at a time (first improvement, moves in order of their
 * busiest rank, skipping a move whose busiest rank alone, m times its
 * work, cannot beat the best) for SEARCH_EVALS zb runs a shape and
 * SEARCH_EVALS_ALL in all, in the shapes within CLIMB_MARGIN of the
 * best. The FINALISTS best of every shape
 * within FINAL_MARGIN, and the two baselines, are scheduled again at the
 * requested effort; the best that fits is the plan (better()). The bound
 * is over every split of every searched shape (bound()). Auto vpp also
 * tries loop vpp 3 to MAX_AUTO_VPP, whose candidates are screened only
 * where their busiest rank alone could beat the best so far. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "split/split_int.h"
#include "zbsched/xalloc.h"

/* zb's effort while screening candidates: its constructions and
 * families, no local search (options.h: < 0). */
#define SCREEN_EFFORT (-1.0)
/* zb runs of the hill climb in one shape, and in all shapes together
 * (docs/tuning.md, "Plan finalists"). */
#define SEARCH_EVALS 32
#define SEARCH_EVALS_ALL 64
/* Best screened splits per shape scheduled again at the final effort. */
#define FINALISTS 2
/* A shape is climbed only when its best screened split is within this
 * share of the best of all shapes (docs/tuning.md, "Plan finalists"). */
#define CLIMB_MARGIN 0.5
/* A shape's screened splits go to the final effort only within this
 * share of the best screened split of all shapes: zb's local search
 * shortens a screened order by less (docs/tuning.md, "Plan finalists"). */
#define FINAL_MARGIN 0.06
/* The memory limit "binds" when lifting it shortens the step by more
 * than this share. */
#define BINDING_SHARE 1e-3

/* Auto vpp tries loop vpp 1 to this (as the layers allow) and V
 * (docs/tuning.md, "Plan auto vpp"). */
#define MAX_AUTO_VPP 8
#define MAX_SHAPES (MAX_AUTO_VPP + 1)

struct shape {
    enum zb_placement pl;
    int vpp;
    bool pruned;    /* a candidate is screened only where its busiest
                       rank alone (busy_bound()) is below the best so far,
                       and none once the best meets the bound */
};

/* Every split a shape evaluated, screened or final. */
struct pool {
    struct zb_plan_split *s;
    int n, cap;
};

static void pool_release(struct pool *p)
{
    for (int i = 0; i < p->n; i++)
        zbi_plan_split_release(&p->s[i]);
    free(p->s);
}

static int pool_find(const struct pool *p, const int *counts, int n)
{
    for (int i = 0; i < p->n; i++)
        if (p->s[i].nstages == n &&
            !memcmp(p->s[i].counts, counts, (size_t)n * sizeof(int)))
            return i;
    return -1;
}

/* Screen counts unless seen; returns its index in the pool. */
static int screen(struct zbi_plan_ctx *c, struct pool *p,
                  const struct shape *sh, const int *counts,
                  struct zb_error *err)
{
    int n = c->rq->pp * sh->vpp, i = pool_find(p, counts, n), rc;

    if (i >= 0)
        return i;
    zb_xgrow((void **)&p->s, &p->cap, p->n + 1, sizeof(*p->s));
    rc = zbi_plan_evaluate(c, sh->pl, sh->vpp, counts, SCREEN_EFFORT, true,
                           &p->s[p->n], err);
    if (rc < 0) {
        zbi_plan_split_release(&p->s[p->n]);
        return rc;
    }
    return p->n++;
}

/* m times the work of the busiest rank: no order of this split costs
 * less. */
static double busy_bound(const struct zbi_plan_ctx *c, const struct shape *sh,
                         const int *counts)
{
    struct zb_profile prof;
    int n = c->rq->pp * sh->vpp;
    double *work = zb_xmalloc((size_t)n * sizeof(double));
    double *rank = zb_xcalloc((size_t)c->rq->pp, sizeof(double)), max = 0;

    zbi_plan_shape(c, sh->pl, sh->vpp, &prof, NULL);
    zbi_split_work(c->m, counts, n, work);
    for (int s = 0; s < n; s++)
        rank[zb_profile_stage_rank(&prof, s)] += work[s];
    for (int r = 0; r < c->rq->pp; r++)
        max = fmax(max, rank[r]);
    free(work);
    free(rank);
    return max * c->rq->microbatches;
}

/* The in-flight factors of the memory-aware candidates: rank r keeps
 * factor x (p - r) microbatches (1: as 1F1B; 2: about ZB-H2's 2(p - r)
 * - 1; below 1: what zb keeps under a tight limit, at more bubble). */
static const double inflight_factors[] = { 0.25, 0.5, 1, 2 };

/* In-flight microbatches per stage for a factor: from 1 to m. */
static void inflight(const struct zbi_plan_ctx *c, double factor,
                     double *k, double *budget)
{
    int p = c->rq->pp;

    for (int s = 0; s < p; s++) {
        k[s] = fmax(1, fmin(c->rq->microbatches, ceil(factor * (p - s))));
        budget[s] = c->rq->gpu_mem;
    }
}

struct move {
    int *counts;
    double est;
};

static int cmp_move(const void *a, const void *b)
{
    const struct move *x = a, *y = b;

    return (x->est > y->est) - (x->est < y->est);
}

/* The hill climb from pool entry `from` (see the file comment). */
static int climb(struct zbi_plan_ctx *c, struct pool *p,
                 const struct shape *sh, int from, double *global,
                 int *left, struct zb_error *err)
{
    int n = c->rq->pp * sh->vpp, budget = *left < SEARCH_EVALS
                                              ? *left : SEARCH_EVALS;
    int cur = from, start = budget;
    struct move *mv = zb_xcalloc((size_t)2 * n, sizeof(*mv));
    int rc = 0;

    while (budget > 0) {
        double best = zbi_plan_score(&p->s[cur]);
        int nm = 0, next = -1, cut;

        for (int b = 0; b + 1 < n; b++)
            for (int dir = -1; dir <= 1; dir += 2) {
                int *k = zb_xmalloc((size_t)n * sizeof(int));
                memcpy(k, p->s[cur].counts, (size_t)n * sizeof(int));
                k[b] += dir;
                k[b + 1] -= dir;
                cut = 0;
                for (int q = 0; q <= b; q++)
                    cut += k[q];
                if (k[b] < 1 || k[b + 1] < 1 || !zbi_split_cut_ok(c->m, cut) ||
                    pool_find(p, k, n) >= 0) {
                    free(k);
                    continue;
                }
                mv[nm].counts = k;
                mv[nm].est = busy_bound(c, sh, k);
                if (mv[nm].est >= *global)
                    free(k);
                else
                    nm++;
            }
        qsort(mv, (size_t)nm, sizeof(*mv), cmp_move);
        for (int i = 0; i < nm && budget > 0 && next < 0; i++) {
            int j = screen(c, p, sh, mv[i].counts, err);
            if (j < 0) {
                rc = j;
                break;
            }
            budget--;
            if (zbi_plan_score(&p->s[j]) < best)
                next = j;
            *global = fmin(*global, zbi_plan_score(&p->s[j]));
        }
        for (int i = 0; i < nm; i++)
            free(mv[i].counts);
        if (rc < 0 || next < 0)
            break;
        cur = next;
    }
    *left -= start - budget;
    free(mv);
    return rc;
}

/* Screen counts, unless the shape is pruned and counts cannot beat the
 * best so far (*global) or that meets the bound lb. */
static int screen_cand(struct zbi_plan_ctx *c, struct pool *p,
                       const struct shape *sh, const int *counts,
                       double lb, const double *global, struct zb_error *err)
{
    if (sh->pruned && (*global <= lb * (1 + 1e-9) ||
                       busy_bound(c, sh, counts) >= *global))
        return 0;
    return screen(c, p, sh, counts, err);
}

/* Screen a shape's candidates. */
static int screen_shape(struct zbi_plan_ctx *c, struct pool *p,
                        const struct shape *sh, double lb, double *global,
                        struct zb_error *err)
{
    const struct zb_plan_request *rq = c->rq;
    int n = rq->pp * sh->vpp, start = p->n, best = -1, rc = 0;
    int *k = zb_xmalloc((size_t)n * sizeof(int));
    double *kin = zb_xmalloc((size_t)n * sizeof(double));
    double *bud = zb_xmalloc((size_t)n * sizeof(double));

    if (rq->split == ZB_SPLIT_GIVEN) {
        rc = screen(c, p, sh, rq->counts, err);
        goto out;
    }
    if (zbi_split_even(c->m, n, k) == 0 &&
        (rc = screen_cand(c, p, sh, k, lb, global, err)) < 0)
        goto out;
    if (rq->split == ZB_SPLIT_EVEN)
        goto out;
    for (int side = 0; side < 2; side++)
        if (zbi_split_minmax(c->m, n, NULL, side, k) == 0 &&
            (rc = screen_cand(c, p, sh, k, lb, global, err)) < 0)
            goto out;
    if (sh->vpp == 1)
        for (size_t f = 0; f < sizeof(inflight_factors) /
                                   sizeof(inflight_factors[0]); f++) {
            struct zbi_split_memory mem = { kin, bud, c->state_per_param };
            inflight(c, inflight_factors[f], kin, bud);
            for (int side = 0; side < 2; side++)
                if (zbi_split_minmax(c->m, n, &mem, side, k) == 0 &&
                    (rc = screen(c, p, sh, k, err)) < 0)
                    goto out;
        }
    for (int i = start; i < p->n; i++) {
        if (best < 0 || zbi_plan_score(&p->s[i]) <
                            zbi_plan_score(&p->s[best]))
            best = i;
        *global = fmin(*global, zbi_plan_score(&p->s[i]));
    }
out:
    free(k);
    free(kin);
    free(bud);
    return rc < 0 ? rc : 0;
}

/* The best screened split of a pool (-1: none fits). */
static int pool_best(const struct pool *p)
{
    int best = -1;

    for (int i = 0; i < p->n; i++)
        if (isfinite(zbi_plan_score(&p->s[i])) &&
            (best < 0 || zbi_plan_score(&p->s[i]) <
                             zbi_plan_score(&p->s[best])))
            best = i;
    return best;
}

/* Climb in the shapes by their best screened split, best first, for
 * SEARCH_EVALS_ALL runs in all; a shape starting beyond CLIMB_MARGIN of
 * the best so far is left, and none once a split meets the bound. */
static int climbs(struct zbi_plan_ctx *c, struct pool *pools,
                  const struct shape *sh, int nsh, double lb,
                  double *global, struct zb_error *err)
{
    bool done[MAX_SHAPES] = { false };
    int left = SEARCH_EVALS_ALL;

    for (int round = 0; round < nsh; round++) {
        int pick = -1, b, rc;
        for (int i = 0; i < nsh; i++)
            if (!done[i] && pool_best(&pools[i]) >= 0 &&
                (pick < 0 || zbi_plan_score(&pools[i].s[pool_best(
                                 &pools[i])]) <
                                 zbi_plan_score(&pools[pick].s[pool_best(
                                     &pools[pick])])))
                pick = i;
        if (pick < 0)
            return 0;
        done[pick] = true;
        b = pool_best(&pools[pick]);
        if (*global <= lb * (1 + 1e-9) ||
            zbi_plan_score(&pools[pick].s[b]) > *global * (1 + CLIMB_MARGIN))
            return 0;
        if (left <= 0)
            return 0;
        if ((rc = climb(c, &pools[pick], &sh[pick], b, global, &left,
                        err)) < 0)
            return rc;
    }
    return 0;
}

/* ---- Checks that need no search ---------------------------------- */

static int check_request(const struct zb_model *m,
                         const struct zb_plan_request *rq, double spp,
                         struct zb_error *err)
{
    char a[32], b[32];

    if (rq->pp < 1 || rq->microbatches < 1)
        return zb_error_set(err, ZB_EINVAL, "pp and microbatches must be "
                            ">= 1");
    if (!(rq->gpu_mem > 0))
        return zb_error_set(err, ZB_EINVAL, "--gpu-mem must be > 0");
    if (rq->dp < 1 || rq->zero < 0 || rq->zero > 3)
        return zb_error_set(err, ZB_EINVAL, "--dp must be >= 1 and --zero "
                            "0 to 3");
    if (rq->zero > 0 && rq->dp < 2)
        return zb_error_set(err, ZB_EINVAL, "--zero %d needs --dp >= 2, got "
                            "%d", rq->zero, rq->dp);
    if (rq->dp >= 2 && (rq->dpx.bandwidth <= 0 || rq->dpx.latency < 0 ||
                        rq->dpx.units < 1 || rq->dpx.prefetch < 0))
        return zb_error_set(err, ZB_EINVAL, "--dp-bw must be > 0, "
                            "--dp-latency >= 0, --fsdp-units >= 1 and "
                            "--prefetch >= 0");
    /* The profile's rules (dp.h), said with the plan's flags. */
    if (rq->dp >= 2 && rq->dpx.reduce == ZB_DP_REDUCE_MICROBATCH &&
        rq->zero < 2)
        return zb_error_set(err, ZB_EINVAL, "--reduce microbatch needs "
                            "--zero >= 2 (sharded gradients), got %d",
                            rq->zero);
    if (rq->dp >= 2 && rq->dpx.units > 1 && rq->zero < 3 &&
        rq->dpx.reduce != ZB_DP_REDUCE_MICROBATCH)
        return zb_error_set(err, ZB_EINVAL, "--fsdp-units %d needs --zero 3 "
                            "or --reduce microbatch", rq->dpx.units);
    for (int i = 0; i < m->n; i++) {
        struct zb_stage_bytes st;
        double need;
        zb_memory_stage_bytes(m, i, 1, &st);
        need = st.params * spp + st.act + 2 * (st.in_bytes + st.out_bytes);
        if (need > rq->gpu_mem)
            return zb_error_set(err, ZB_EINVAL, "layer '%s' alone needs "
                                "%s GiB (model state %s, one microbatch of "
                                "activations and buffers), over --gpu-mem "
                                "%s GiB", m->layers[i].name,
                                zb_units_gib(need, a, sizeof(a)),
                                zb_units_gib(st.params * spp, b, sizeof(b)),
                                zb_units_gib(rq->gpu_mem, a + 16, 16));
    }
    return 0;
}

static int given_shape(const struct zb_model *m,
                       const struct zb_plan_request *rq, struct shape *sh,
                       struct zb_error *err)
{
    int sum = 0;

    if (rq->n_counts % rq->pp)
        return zb_error_set(err, ZB_EINVAL, "--split has %d entries, not a "
                            "multiple of --pp %d (one per stage)",
                            rq->n_counts, rq->pp);
    sh->vpp = rq->n_counts / rq->pp;
    sh->pruned = false;
    if (rq->vpp > 0 && rq->vpp != sh->vpp)
        return zb_error_set(err, ZB_EINVAL, "--split has %d entries, but "
                            "--pp %d x --vpp %d is %d stages", rq->n_counts,
                            rq->pp, rq->vpp, rq->pp * rq->vpp);
    for (int s = 0; s < rq->n_counts; s++) {
        if (rq->counts[s] < 1)
            return zb_error_set(err, ZB_EINVAL, "--split: stage %d has %d "
                                "layers (every stage needs one)", s,
                                rq->counts[s]);
        sum += rq->counts[s];
    }
    if (sum != m->n)
        return zb_error_set(err, ZB_EINVAL, "--split adds up to %d layers, "
                            "the model has %d", sum, m->n);
    sh->pl = rq->placement == ZB_PLACEMENT_V ? ZB_PLACEMENT_V
                                             : ZB_PLACEMENT_LOOP;
    if (sh->pl == ZB_PLACEMENT_V && sh->vpp != 2)
        return zb_error_set(err, ZB_EINVAL, "placement v needs 2 stages a "
                            "rank, --split gives %d", sh->vpp);
    return 1;
}

/* The shapes to search: auto vpp is 1 to MAX_AUTO_VPP (from 3 on
 * pruned), auto placement loop and (at vpp 2) v; shapes with more stages
 * than layers (the head group, which the search never cuts, counted as
 * one) are left out. */
static int shapes(const struct zb_model *m, const struct zb_plan_request *rq,
                  struct shape *out, struct zb_error *err)
{
    int n = 0, v0 = rq->vpp > 0 ? rq->vpp : 1;
    int v1 = rq->vpp > 0 ? rq->vpp : MAX_AUTO_VPP;
    int units = 0;     /* layers, the head group counted once */

    if (rq->split == ZB_SPLIT_GIVEN)
        return given_shape(m, rq, out, err);
    if (rq->placement == ZB_PLACEMENT_V && rq->vpp > 0 && rq->vpp != 2)
        return zb_error_set(err, ZB_EINVAL, "placement v needs --vpp 2, got "
                            "%d", rq->vpp);
    for (int i = 0; i < m->n; i++)
        units += zbi_split_cut_ok(m, i);
    for (int v = v0; v <= v1; v++) {
        if (rq->pp * v > units)
            continue;
        if (rq->placement != ZB_PLACEMENT_V)
            out[n++] = (struct shape){ ZB_PLACEMENT_LOOP, v,
                                       rq->vpp <= 0 && v > 2 };
        if (v == 2 && rq->placement != ZB_PLACEMENT_LOOP)
            out[n++] = (struct shape){ ZB_PLACEMENT_V, 2, false };
    }
    if (rq->placement == ZB_PLACEMENT_V && rq->vpp <= 0 && n == 0 &&
        rq->pp * 2 <= units)
        out[n++] = (struct shape){ ZB_PLACEMENT_V, 2, false };
    if (n == 0)
        return zb_error_set(err, ZB_EINVAL, "pp %d x vpp %d = %d stages "
                            "need at least as many layers; the model has %d "
                            "(its head group counted as one)", rq->pp, v0,
                            rq->pp * v0, units);
    return n;
}

/* ---- The bound ---------------------------------------------------- */

static int cmp_desc(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;

    return (x < y) - (x > y);
}

/* A rank runs its passes one at a time, so some rank's busy time is at
 * least the total over p; and however layers go to ranks, among the
 * k p + 1 heaviest some rank holds k + 1, so at least the k + 1 lightest
 * of them. With one chunk a rank (contiguous stages) also the least
 * maximum stage of any split. The least over the searched shapes, times
 * m: no plan's step is shorter. */
static double bound(const struct zbi_plan_ctx *c, const struct shape *sh,
                    int nsh)
{
    int L = c->m->n, p = c->rq->pp;
    double *w = zb_xmalloc((size_t)L * sizeof(double));
    double total = 0, any = 0, lb = INFINITY;

    for (int i = 0; i < L; i++)
        total += w[i] = zb_model_work(c->m, i);
    qsort(w, (size_t)L, sizeof(double), cmp_desc);
    any = total / p;
    for (int k = 0; (long)k * p + 1 <= L; k++) {
        double sum = 0;
        for (int j = k * p - k; j <= k * p; j++)
            sum += w[j];
        any = fmax(any, sum);
    }
    for (int i = 0; i < nsh; i++) {
        int n = p * sh[i].vpp;
        double per = any;
        if (sh[i].vpp == 1) {
            int *k = zb_xmalloc((size_t)n * sizeof(int));
            double *sw = zb_xmalloc((size_t)n * sizeof(double));
            if (zbi_split_minmax(c->m, n, NULL, false, k) == 0) {
                zbi_split_work(c->m, k, n, sw);
                for (int s = 0; s < n; s++)
                    per = fmax(per, sw[s]);
            }
            free(k);
            free(sw);
        }
        lb = fmin(lb, per);
    }
    free(w);
    return lb * c->rq->microbatches;
}

/* ---- The plan ----------------------------------------------------- */

/* Move src into dst (dst released first). */
static void take(struct zb_plan_split *dst, struct zb_plan_split *src)
{
    zbi_plan_split_release(dst);
    *dst = *src;
    memset(src, 0, sizeof(*src));
}

/* src's measures into dst, without its schedule (sched.ranks NULL). */
static void summary_copy(struct zb_plan_split *dst,
                         const struct zb_plan_split *src)
{
    int pp = src->nstages / src->vpp;

    *dst = *src;
    memset(&dst->sched, 0, sizeof(dst->sched));
    dst->counts = zb_xmalloc((size_t)src->nstages * sizeof(int));
    memcpy(dst->counts, src->counts, (size_t)src->nstages * sizeof(int));
    dst->ranks = zb_xmalloc((size_t)pp * sizeof(*dst->ranks));
    memcpy(dst->ranks, src->ranks, (size_t)pp * sizeof(*dst->ranks));
}

/* Whether the memory limit costs the answer time: its split again with
 * no limit; where that is shorter by more than BINDING_SHARE, the rank
 * nearest its budget binds. */
static int binding(struct zbi_plan_ctx *c, struct zb_plan *out,
                   struct zb_error *err)
{
    struct zb_plan_split *b = &out->best, un;
    int rc = zbi_plan_evaluate(c, b->placement, b->vpp, b->counts,
                               c->rq->effort, false, &un, err);
    double worst = -1;

    if (rc < 0)
        return rc;
    out->unlimited_cost = un.scheduled ? un.step : b->step;
    zbi_plan_split_release(&un);
    if (out->unlimited_cost >= b->step * (1 - BINDING_SHARE))
        return 0;
    for (int r = 0; r < c->rq->pp; r++)
        if (b->ranks[r].total > worst) {
            worst = b->ranks[r].total;
            out->binding_rank = r;
        }
    return 0;
}

/* The split in shape (pl, vpp) with these counts at the final effort:
 * from the pool of finals, or evaluated now. */
static int final_eval(struct zbi_plan_ctx *c, struct pool *fin,
                      enum zb_placement pl, int vpp, const int *counts,
                      struct zb_error *err)
{
    int n = c->rq->pp * vpp, i, rc;

    for (i = 0; i < fin->n; i++)
        if (fin->s[i].placement == pl && fin->s[i].vpp == vpp &&
            !memcmp(fin->s[i].counts, counts, (size_t)n * sizeof(int)))
            return i;
    zb_xgrow((void **)&fin->s, &fin->cap, fin->n + 1, sizeof(*fin->s));
    rc = zbi_plan_evaluate(c, pl, vpp, counts, c->rq->effort, true,
                           &fin->s[fin->n], err);
    if (rc < 0) {
        zbi_plan_split_release(&fin->s[fin->n]);
        return rc;
    }
    return fin->n++;
}

/* The one comparison of two final splits: the lower score (within a
 * relative 1e-9: a tie), then one Megatron can run, then the earlier. */
static bool better(const struct zb_model *m, const struct zb_plan_split *a,
                   const struct zb_plan_split *b)
{
    double x = zbi_plan_score(a), y = zbi_plan_score(b);
    char *la, *lb;
    bool win;

    if (!(fabs(x - y) <= 1e-9 * fmax(fabs(x), fabs(y))) || !isfinite(x))
        return x < y;
    la = zb_plan_megatron_layout(m, a);
    lb = zb_plan_megatron_layout(m, b);
    win = la && !lb;
    free(la);
    free(lb);
    return win;
}

/* How far over the budget a split is (for the answer when none fits). */
static double overshoot(const struct zb_plan_split *s, int pp)
{
    double worst = 0;

    for (int r = 0; r < pp; r++)
        worst = fmax(worst, s->ranks[r].total);
    return worst;
}

void zb_plan_request_init(struct zb_plan_request *rq)
{
    memset(rq, 0, sizeof(*rq));
    rq->placement = -1;
    rq->link.bandwidth = rq->link.inter_bandwidth = INFINITY;
    rq->dp = 1;
    rq->dpx = (struct zb_plan_dp){ .bandwidth = NAN, .latency = NAN,
                                   .units = 1, .prefetch = 1,
                                   .reduce = ZB_DP_REDUCE_STEP };
}

int zb_plan_run(const struct zb_model *m, const struct zb_plan_request *rq,
                struct zb_plan *out, struct zb_error *err)
{
    struct zbi_plan_ctx c = { .m = m, .rq = rq };
    struct shape sh[MAX_SHAPES];
    struct pool pools[MAX_SHAPES] = { { 0 } }, fin = { 0 };
    int nsh, rc = 0, best = -1, *k = NULL;
    double global = INFINITY;

    memset(out, 0, sizeof(*out));
    out->binding_rank = -1;
    c.state_per_param = zb_memory_state_per_param(m, rq->dp, rq->zero);
    if ((rc = check_request(m, rq, c.state_per_param, err)) < 0 ||
        (rc = nsh = shapes(m, rq, sh, err)) < 0)
        return rc;
    out->lower_bound = bound(&c, sh, nsh);
    for (int i = 0; i < nsh; i++)
        if ((rc = screen_shape(&c, &pools[i], &sh[i], out->lower_bound,
                               &global, err)) < 0)
            goto out;
    if (rq->split == ZB_SPLIT_AUTO && (rc = climbs(&c, pools, sh, nsh,
                                                   out->lower_bound,
                                                   &global, err)) < 0)
        goto out;
    /* Finalists: the FINALISTS best of each shape by screened score, or
     * where none fits the least over the budget. */
    for (int i = 0; i < nsh; i++) {
        struct pool *p = &pools[i];
        bool *used = zb_xcalloc((size_t)p->n + 1, sizeof(bool));
        for (int f = 0; f < FINALISTS; f++) {
            int pick = -1;
            for (int j = 0; j < p->n; j++) {
                if (used[j])
                    continue;
                if (pick < 0 || zbi_plan_score(&p->s[j]) <
                                    zbi_plan_score(&p->s[pick]) ||
                    (!isfinite(zbi_plan_score(&p->s[pick])) &&
                     !isfinite(zbi_plan_score(&p->s[j])) &&
                     overshoot(&p->s[j], rq->pp) <
                         overshoot(&p->s[pick], rq->pp)))
                    pick = j;
            }
            if (pick < 0)
                break;
            used[pick] = true;
            /* Beyond the margin, or past a split that meets the bound,
             * the final search cannot make it the answer. */
            if (isfinite(global) && zbi_plan_score(&p->s[pick]) >
                    fmin(global * (1 + FINAL_MARGIN),
                         global > out->lower_bound * (1 + 1e-9)
                             ? INFINITY : global))
                break;
            if ((rc = final_eval(&c, &fin, sh[i].pl, sh[i].vpp,
                                 p->s[pick].counts, err)) < 0) {
                free(used);
                goto out;
            }
        }
        free(used);
    }
    for (int j = 0; j < fin.n; j++)
        if (best < 0 || better(m, &fin.s[j], &fin.s[best]) ||
            (!isfinite(zbi_plan_score(&fin.s[best])) &&
             !isfinite(zbi_plan_score(&fin.s[j])) &&
             overshoot(&fin.s[j], rq->pp) < overshoot(&fin.s[best], rq->pp)))
            best = j;
    if (best < 0) {
        rc = rq->split == ZB_SPLIT_EVEN
                 ? zb_error_set(err, ZB_EINVAL, "torchtitan's even split "
                                "leaves a stage without layers here (or "
                                "the model has no blocks)")
                 : zb_error_set(err, ZB_EINVAL, "no split of the model "
                                "into %d stages or more", rq->pp);
        goto out;
    }
    {
        enum zb_placement pl = fin.s[best].placement;
        int vpp = fin.s[best].vpp, n = rq->pp * vpp, ie = -1, im = -1;

        k = zb_xmalloc((size_t)n * sizeof(int));
        /* The baselines in the answer's shape, at the same effort: the
         * answer is the best of a set that holds them, so it is never
         * worse than either where they fit. */
        if (zbi_split_even(m, n, k) == 0 &&
            (rc = ie = final_eval(&c, &fin, pl, vpp, k, err)) < 0)
            goto out;
        if (zbi_split_minmax(m, n, NULL, false, k) == 0 &&
            (rc = im = final_eval(&c, &fin, pl, vpp, k, err)) < 0)
            goto out;
        rc = 0;
        /* A given or even split is the answer whatever the baselines
         * cost; they are shown beside it. */
        if (rq->split == ZB_SPLIT_AUTO && ie >= 0 &&
            better(m, &fin.s[ie], &fin.s[best]))
            best = ie;
        if (rq->split == ZB_SPLIT_AUTO && im >= 0 &&
            better(m, &fin.s[im], &fin.s[best]))
            best = im;
        if (ie >= 0)
            summary_copy(&out->even, &fin.s[ie]);
        if (im >= 0)
            summary_copy(&out->minmax, &fin.s[im]);
        take(&out->best, &fin.s[best]);
        /* The bound and the cost add the same times in another order: a
         * bound above the cost by rounding is the cost. */
        if (out->best.scheduled && out->lower_bound > out->best.cost &&
            out->lower_bound <= out->best.cost * (1 + 1e-9))
            out->lower_bound = out->best.cost;
        if (out->best.fits && (rc = binding(&c, out, err)) < 0)
            goto out;
    }
out:
    out->evaluations = c.evaluations;
    free(k);
    for (int i = 0; i < nsh && i < MAX_SHAPES; i++)
        pool_release(&pools[i]);
    pool_release(&fin);
    if (rc < 0)
        zb_plan_release(out);
    return rc < 0 ? rc : 0;
}

void zb_plan_release(struct zb_plan *p)
{
    if (!p)
        return;
    zbi_plan_split_release(&p->best);
    zbi_plan_split_release(&p->even);
    zbi_plan_split_release(&p->minmax);
}
