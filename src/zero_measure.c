/* zero_measure.c - the step time and per-rank memory that data
 * parallelism leads to, measured after a simulation (zero_measure.h,
 * docs/zero.md). Below the simulator, which calls it; placing the
 * collectives is zero.c's, above it. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "zbsched/dp.h"
#include "zbsched/xalloc.h"
#include "zbsched/zero_measure.h"

double zb_zero_rank_end(const struct zb_op_list *l, double *begin)
{
    double end = 0, first = INFINITY;

    for (int i = 0; i < l->n; i++)
        if (zb_op_is_compute(l->ops[i].kind) ||
            zb_op_is_collective(l->ops[i].kind)) {
            end = fmax(end, l->ops[i].end);
            first = fmin(first, l->ops[i].start);
        }
    if (begin)
        *begin = first;
    return end;
}

/* ---- Units --------------------------------------------------------- */

/* One segment of a pass on units: the unit it uses, whether it waits for
 * the unit's gather and whether its gradient is reduced after it. */
struct seg {
    int stage, unit, mb;
    bool gather, reduce;
    double len;
};

bool zb_zero_unit_op(const struct zb_profile *p, const struct zb_op *op)
{
    return zb_dp_units(p) &&
           (op->kind == ZB_OP_UNSHARD || op->kind == ZB_OP_RESHARD ||
            (op->kind == ZB_OP_REDUCE_GRAD && zb_dp_per_mb(p)));
}

bool zb_zero_unit_pass(const struct zb_profile *p, const struct zb_op *op)
{
    bool is_w = op->kind == ZB_OP_W || op->kind == ZB_OP_BW;

    return zb_dp_units(p) && zb_op_is_compute(op->kind) &&
           ((p->dp.zero >= 3 && op->kind != ZB_OP_W) ||
            (zb_dp_per_mb(p) && is_w));
}

/* The segments of compute op op in the order it runs them (at most 2K);
 * returns their count. */
static int plan(const struct zb_profile *p, const struct zb_op *op,
                struct seg *out)
{
    const int k = p->dp.units;
    struct zb_op part[2];
    int np = zb_op_split(op, part), n = 0;
    double sum = 0, total = zb_op_duration(p, op);

    for (int h = 0; h < np; h++) {
        const struct zb_op *x = &part[h];
        double d = zb_op_duration(p, x);
        bool rd = zb_dp_per_mb(p) &&
                  (x->kind == ZB_OP_W || x->kind == ZB_OP_BW);
        sum += d;
        for (int j = 0; j < k; j++)
            out[n++] = (struct seg){
                x->stage, x->kind == ZB_OP_F ? j : k - 1 - j, x->mb,
                p->dp.zero >= 3 && x->kind != ZB_OP_W &&
                    !(h > 0 && x->stage == part[0].stage),
                rd, d / k };
    }
    /* FB may take its own time (`fb`): its segments share it. An FB on
     * one stage gathers once, for its F (zero.c). */
    for (int j = 0; j < n && sum > 0; j++)
        out[j].len *= total / sum;
    return n;
}

/* The collective of kind for segment x among the non-compute ops next to
 * compute op i (before it: dir -1; after: +1), or -1. */
static int find_coll(const struct zb_op_list *l, int i, int dir,
                     enum zb_op_kind kind, const struct seg *x)
{
    for (int j = i + dir; j >= 0 && j < l->n; j += dir) {
        const struct zb_op *o = &l->ops[j];
        if (zb_op_is_compute(o->kind))
            break;
        if (o->kind == kind && o->stage == x->stage && o->unit == x->unit &&
            (kind != ZB_OP_REDUCE_GRAD || o->mb == x->mb))
            return j;
    }
    return -1;
}

struct zb_zero_units {
    const struct zb_profile *p;
    double *buf_free;   /* per stage x unit: end of its last REDUCE_GRAD */
    int *reduced;       /* per stage x unit: REDUCE_GRADs timed so far */
    struct seg *seg;    /* 2K */
    double *start;      /* 2K: segment starts */
    int *last, *nlast;  /* per rank: its last pass timed by segments (list
                           index, or -1) and their count */
    double *last_start; /* per rank: 2K starts of them */
};

struct zb_zero_units *zb_zero_units_new(const struct zb_profile *p)
{
    struct zb_zero_units *u = zb_xcalloc(1, sizeof(*u));
    size_t n = (size_t)zb_profile_stages(p) * (size_t)p->dp.units;

    u->p = p;
    u->buf_free = zb_xcalloc(n, sizeof(double));
    u->reduced = zb_xcalloc(n, sizeof(int));
    u->seg = zb_xmalloc(2 * (size_t)p->dp.units * sizeof(*u->seg));
    u->start = zb_xmalloc(2 * (size_t)p->dp.units * sizeof(double));
    u->last = zb_xmalloc(2 * (size_t)p->pp * sizeof(int));
    u->nlast = u->last + p->pp;
    for (int r = 0; r < p->pp; r++)
        u->last[r] = -1;
    u->last_start = zb_xmalloc(2 * (size_t)p->dp.units * (size_t)p->pp *
                               sizeof(double));
    return u;
}

void zb_zero_units_free(struct zb_zero_units *u)
{
    if (!u)
        return;
    free(u->buf_free);
    free(u->reduced);
    free(u->seg);
    free(u->start);
    free(u->last);
    free(u->last_start);
    free(u);
}

/* The compute op before op i in l, or -1. */
static int prev_compute(const struct zb_op_list *l, int i)
{
    while (--i >= 0 && !zb_op_is_compute(l->ops[i].kind))
        ;
    return i;
}

/* When rank r issues the gather of segment j of pass i, the segment
 * before it having ended at t. Prefetch f > 0: when segment j - f
 * starts, for j < f counting back into the compute op before i when
 * that op ran by segments, else when it starts (0 for the first).
 * Prefetch 0: when the segment is reached, t, or for the first when the
 * compute op before i ends, where the rank reaches the pass (0 for the
 * first), as any collective. */
static double gather_issue(const struct zb_zero_units *u,
                           const struct zb_op_list *l, int r, int i, int j,
                           double t)
{
    const int f = u->p->dp.prefetch;
    int q, at;

    if (f == 0 && j > 0)
        return t;
    if (f > 0 && j >= f)
        return u->start[j - f];
    if ((q = prev_compute(l, i)) < 0)
        return 0;
    if (f == 0)
        return l->ops[q].end;
    at = u->nlast[r] - f + j;
    if (u->last[r] == q && at >= 0)
        return u->last_start[(size_t)r * 2 * (size_t)u->p->dp.units +
                             (size_t)at];
    return l->ops[q].start;
}

/* Segment j's start from the end t of the one before: its gather's end
 * (g, or -1) and its unit's buffer (reduce). */
static double seg_start(const struct zb_op_list *l, const struct seg *x,
                        int g, double t, const double *buf_free, int k)
{
    if (g >= 0)
        t = fmax(t, l->ops[g].end);
    if (x->reduce)
        t = fmax(t, buf_free[x->stage * k + x->unit]);
    return t;
}

double zb_zero_units_time(struct zb_zero_units *u, struct zb_op_list *l,
                          int r, int i, double ready, double *coll_free)
{
    const struct zb_profile *p = u->p;
    const int k = p->dp.units;
    struct zb_op *op = &l->ops[i];
    int n = plan(p, op, u->seg);
    double t = ready;

    for (int j = 0; j < n; j++) {
        const struct seg *x = &u->seg[j];
        int g = x->gather ? find_coll(l, i, -1, ZB_OP_UNSHARD, x) : -1;
        if (g >= 0) {
            struct zb_op *c = &l->ops[g];
            c->start = fmax(gather_issue(u, l, r, i, j, t), *coll_free);
            c->end = c->start + zb_dp_unit_time(p, ZB_OP_UNSHARD, x->stage,
                                                false);
            *coll_free = c->end;
        }
        u->start[j] = seg_start(l, x, g, t, u->buf_free, k);
        t = u->start[j] + x->len;
        int rs = x->gather ? find_coll(l, i, +1, ZB_OP_RESHARD, x) : -1;
        if (rs >= 0)
            l->ops[rs].start = l->ops[rs].end = t;
    }
    op->end = t;
    u->last[r] = i;
    u->nlast[r] = n;
    memcpy(u->last_start + (size_t)r * 2 * (size_t)k, u->start,
           (size_t)n * sizeof(double));
    /* The reduce-scatters queue behind the gathers, as in the list. */
    for (int j = 0; j < n; j++) {
        const struct seg *x = &u->seg[j];
        int c = x->reduce ? find_coll(l, i, +1, ZB_OP_REDUCE_GRAD, x) : -1;
        if (c < 0)
            continue;
        int idx = x->stage * k + x->unit;
        bool last = ++u->reduced[idx] >= p->microbatches;
        struct zb_op *rg = &l->ops[c];
        rg->start = fmax(u->start[j] + x->len, *coll_free);
        rg->end = rg->start +
                  zb_dp_unit_time(p, ZB_OP_REDUCE_GRAD, x->stage, last);
        *coll_free = u->buf_free[idx] = rg->end;
    }
    return u->start[0];
}

/* A unit's gathered weights or gradient buffer, held from start to end. */
struct held {
    double start, end, units;
};

static int held_cmp(const void *a, const void *b)
{
    double x = ((const struct held *)a)->start;
    double y = ((const struct held *)b)->start;

    return (x > y) - (x < y);
}

/* Rank r's unit memory over time, sorted by start (*n of them): a
 * gathered unit from its UNSHARD's start to its RESHARD, a unit's
 * gradient buffer from its segment's start to its REDUCE_GRAD's end. */
static struct held *unit_held(const struct zb_schedule *s, int r, int *n)
{
    const struct zb_profile *p = &s->profile;
    const struct zb_op_list *l = &s->ranks[r];
    const int k = p->dp.units;
    size_t nu = (size_t)zb_profile_stages(p) * (size_t)k;
    double *open = zb_xmalloc(nu * sizeof(double));
    double *buf_free = zb_xcalloc(nu, sizeof(double));
    struct seg *seg = zb_xmalloc(2 * (size_t)k * sizeof(*seg));
    struct held *h = zb_xmalloc((size_t)(l->n ? l->n : 1) * sizeof(*h));
    int nh = 0;

    for (size_t j = 0; j < nu; j++)
        open[j] = NAN;
    for (int i = 0; i < l->n; i++) {
        const struct zb_op *op = &l->ops[i];
        int idx = op->stage * k + op->unit;
        if (zb_zero_unit_op(p, op) && (op->unit < 0 || op->unit >= k))
            continue;       /* the validator names it */
        if (op->kind == ZB_OP_UNSHARD && zb_zero_unit_op(p, op)) {
            open[idx] = op->start;
        } else if (op->kind == ZB_OP_RESHARD && zb_zero_unit_op(p, op)) {
            if (!isnan(open[idx]))
                h[nh++] = (struct held){ open[idx], op->end,
                                         zb_dp_gathered(p, op->stage) / k };
            open[idx] = NAN;
        } else if (zb_zero_unit_pass(p, op) && zb_dp_per_mb(p)) {
            /* The segment starts as the simulator timed them. */
            int ns = plan(p, op, seg);
            double t = op->start;
            for (int j = 0; j < ns; j++) {
                const struct seg *x = &seg[j];
                int g = x->gather ? find_coll(l, i, -1, ZB_OP_UNSHARD, x)
                                  : -1;
                double st = seg_start(l, x, g, t, buf_free, k);
                int c = x->reduce
                            ? find_coll(l, i, +1, ZB_OP_REDUCE_GRAD, x) : -1;
                t = st + x->len;
                if (c < 0)
                    continue;
                buf_free[x->stage * k + x->unit] = l->ops[c].end;
                h[nh++] = (struct held){ st, l->ops[c].end,
                                         zb_dp_grad_buffer(p, x->stage) / k };
            }
        }
    }
    qsort(h, (size_t)nh, sizeof(*h), held_cmp);
    free(open);
    free(buf_free);
    free(seg);
    *n = nh;
    return h;
}

/* The most unit memory held at once in [a, b), given the held intervals
 * h (sorted by start) and a window *lo .. of those that may still be
 * held: windows come in increasing order. */
static double held_peak(const struct held *h, int n, int *lo, double a,
                        double b)
{
    double peak = 0;

    while (*lo < n && h[*lo].end <= a)
        ++*lo;
    for (int c = *lo; c < n && h[c].start < b; c++) {
        double t = fmax(a, h[c].start), sum = 0;
        for (int j = *lo; j < n && h[j].start <= t; j++)
            if (h[j].end > t)
                sum += h[j].units;
        peak = fmax(peak, sum);
    }
    return peak;
}

/* Reducing per microbatch: a gradient buffer until its reduce-scatter
 * ends. */
struct pending {
    double end, units;
};

/* Free the buffers of pend whose reduce-scatter has ended by t; returns
 * their units. */
static double free_ended(struct pending *pend, int *n, double t)
{
    double freed = 0;

    for (int k = 0; k < *n;)
        if (pend[k].end <= t) {
            freed += pend[k].units;
            pend[k] = pend[--*n];
        } else {
            k++;
        }
    return freed;
}

/* Peak over rank r's list of its model state plus, with act, its
 * activations. Reducing per step, a stage's full gradient buffer lives
 * from its first W to its REDUCE_GRAD, then its shard. Reducing per
 * microbatch, each W takes a full buffer that its reduce-scatter frees
 * when it ends, a time the list does not show: the buffer counts for
 * every compute op that starts before that end. The simulator makes a
 * stage's next W wait for it, so a stage holds one buffer at a time. Its
 * accumulated shard lives from its first W on. With units (K > 1) the
 * gathered units and the units' gradient buffers are held over time
 * (unit_held()): each compute op adds the most of them held at once
 * between its start and the next compute op's. */
static double rank_memory(const struct zb_schedule *s, int r, bool *seen_w,
                          bool act)
{
    const struct zb_profile *p = &s->profile;
    const struct zb_op_list *l = &s->ranks[r];
    const bool per_mb = zb_dp_per_mb(p);
    struct pending *pend = per_mb ? zb_xmalloc((size_t)(l->n ? l->n : 1) *
                                               sizeof(*pend))
                                  : NULL;
    const bool units = zb_dp_units(p);
    double mem = 0, peak, next = INFINITY;
    int npend = 0, nh = 0, lo = 0;
    struct held *h = units ? unit_held(s, r, &nh) : NULL;

    for (int c = 0; c < p->vpp; c++)
        mem += zb_dp_state_memory(p, zb_profile_rank_stage(p, r, c));
    for (int i = 0; i < l->n && units; i++)
        if (zb_op_is_compute(l->ops[i].kind)) {
            next = l->ops[i].start;
            break;
        }
    peak = mem + (units ? held_peak(h, nh, &lo, -INFINITY, next) : 0);
    for (int i = 0; i < l->n; i++) {
        const struct zb_op *op = &l->ops[i];
        if (zb_op_is_compute(op->kind))
            mem -= free_ended(pend, &npend, op->start);
        if (zb_zero_unit_op(p, op))
            continue;       /* held over time, in h */
        switch (op->kind) {
        case ZB_OP_W:
        case ZB_OP_BW:
            if (!seen_w[op->stage])
                mem += per_mb ? zb_dp_grad_shard(p, op->stage)
                              : zb_dp_grad_buffer(p, op->stage);
            if (per_mb && !units)
                mem += zb_dp_grad_buffer(p, op->stage);
            seen_w[op->stage] = true;
            break;
        case ZB_OP_REDUCE_GRAD:
            if (per_mb) {
                pend[npend++] = (struct pending){
                    op->end, zb_dp_grad_buffer(p, op->stage) };
            } else {
                mem += zb_dp_grad_shard(p, op->stage) -
                       zb_dp_grad_buffer(p, op->stage);
            }
            break;
        case ZB_OP_UNSHARD:
            mem += zb_dp_gathered(p, op->stage);
            break;
        case ZB_OP_RESHARD:
            mem -= zb_dp_gathered(p, op->stage);
            break;
        default:
            break;
        }
        if (act)
            mem += zb_op_memory_delta(p, op);
        peak = fmax(peak, mem);
        if (units && zb_op_is_compute(op->kind)) {
            next = INFINITY;
            for (int j = i + 1; j < l->n; j++)
                if (zb_op_is_compute(l->ops[j].kind)) {
                    next = fmax(l->ops[j].start, op->start);
                    break;
                }
            peak = fmax(peak, mem + held_peak(h, nh, &lo, op->start, next));
        }
    }
    free(pend);
    free(h);
    return peak;
}

void zb_zero_measure(struct zb_schedule *s)
{
    const struct zb_profile *p = &s->profile;
    struct zb_measures *m = &s->predicted;
    bool *seen_w = zb_xmalloc((size_t)zb_profile_stages(p) * sizeof(bool));
    double first = INFINITY, last = 0;

    for (int r = 0; r < p->pp; r++) {
        memset(seen_w, 0, (size_t)zb_profile_stages(p) * sizeof(bool));
        double begin;
        m->ranks[r].total_memory = rank_memory(s, r, seen_w, true);
        last = fmax(last, zb_zero_rank_end(&s->ranks[r], &begin));
        first = fmin(first, begin);
    }
    m->step_time = last > first ? last - first : 0;
    free(seen_w);
}

double zb_zero_state_peak(const struct zb_schedule *s, int rank)
{
    bool *seen_w;
    double peak;

    if (!zb_dp_active(&s->profile))
        return 0;
    seen_w = zb_xcalloc((size_t)zb_profile_stages(&s->profile),
                        sizeof(bool));
    peak = rank_memory(s, rank, seen_w, false);
    free(seen_w);
    return peak;
}
