/* sim.c - the simulator: times any schedule's compute ops and derives the
 * measures of docs/design.md ("Measures").
 *
 * Event-driven list simulation: every rank runs its compute ops in list
 * order, one at a time; an op starts when its rank is free and its inputs
 * have arrived (producer end, plus comm when the producer sits on another
 * rank: timing.h, the rule every engine shares). A min-heap of ranks
 * keyed by the ready time of their next op pops ops in nondecreasing
 * start time, so the pop count (`seq`) is a topological order of the
 * whole schedule that follows time; lowering uses it. Communication is
 * assumed to overlap compute and not to contend.
 *
 * Data-parallel collectives (dp.h) run on one collective stream per rank:
 * in list order, each starts when the rank has reached it (the end of the
 * compute op before it) and the stream is free; a pass of a ZeRO-3 stage
 * waits for its UNSHARD. Reducing per microbatch, a W (or BW) waits for
 * the end of its stage's previous REDUCE_GRAD, which frees the one
 * gradient buffer the W writes. The collectives do not contend with the
 * pipeline's own transfers either (docs/zero.md). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "zbsched/pass.h"
#include "zbsched/sim.h"
#include "zbsched/timing.h"
#include "zbsched/validate.h"
#include "zbsched/xalloc.h"
#include "zbsched/zero_measure.h"

struct heap_item {
    double t;
    int rank;
};

struct sim {
    struct zb_schedule *s;
    const struct zb_profile *p;
    double *end;              /* per pass (end_of()); NAN until it ran */
    int *pos;                 /* per rank: index of its next op */
    double *clock;            /* per rank: when it is free */
    bool *queued;
    double *coll_free;        /* per rank: when its collective stream is */
    double *unsharded;        /* per stage: end of its UNSHARD (or 0) */
    double *grad_free;        /* per stage: end of its last REDUCE_GRAD */
    int *reduced;             /* per stage: REDUCE_GRADs timed so far */
    struct zb_zero_units *units; /* FSDP units > 1 (zero_measure.h): their
                                    passes and collectives; else NULL */
    struct heap_item *heap;
    int heap_n;
};

/* A pass's end. Microbatch-major, unlike zb_pass_index(): an op's
 * inputs share its microbatch and sit next to its own slot, where
 * stage-major slots lie a page apart at m 1024 (the lookup dominated the
 * simulation's time). */
static double *end_of(const struct sim *m, enum zb_pass k, int stage, int mb)
{
    return &m->end[((long)mb * zb_profile_stages(m->p) + stage) *
                   ZB_PASS_COUNT + k];
}

static bool item_less(const struct heap_item *a, const struct heap_item *b)
{
    return a->t < b->t || (a->t == b->t && a->rank < b->rank);
}

static void heap_push(struct sim *m, double t, int rank)
{
    int i = m->heap_n++;

    m->heap[i] = (struct heap_item){ t, rank };
    while (i > 0 && item_less(&m->heap[i], &m->heap[(i - 1) / 2])) {
        struct heap_item tmp = m->heap[i];
        m->heap[i] = m->heap[(i - 1) / 2];
        m->heap[(i - 1) / 2] = tmp;
        i = (i - 1) / 2;
    }
}

static struct heap_item heap_pop(struct sim *m)
{
    struct heap_item top = m->heap[0];
    int i = 0;

    m->heap[0] = m->heap[--m->heap_n];
    for (;;) {
        int l = 2 * i + 1, r = l + 1, min = i;
        if (l < m->heap_n && item_less(&m->heap[l], &m->heap[min]))
            min = l;
        if (r < m->heap_n && item_less(&m->heap[r], &m->heap[min]))
            min = r;
        if (min == i)
            break;
        struct heap_item tmp = m->heap[i];
        m->heap[i] = m->heap[min];
        m->heap[min] = tmp;
        i = min;
    }
    return top;
}

/* The inputs of an op: both halves' for an FB (it starts when all have
 * arrived), with the stage of the half that takes each (to, may be NULL).
 * Returns the count. */
static int op_deps(const struct zb_profile *p, const struct zb_op *op,
                   struct zb_dep deps[4], int to[4])
{
    struct zb_op part[2];
    int np = zb_op_split(op, part), n = 0;

    for (int h = 0; h < np; h++) {
        int k = zb_pass_deps(p, part[h].kind, part[h].stage, part[h].mb,
                             deps + n);
        for (int i = 0; to && i < k; i++)
            to[n + i] = part[h].stage;
        n += k;
    }
    return n;
}

/* Time a collective that rank r has just reached. */
static void run_collective(struct sim *m, int r, struct zb_op *op)
{
    double t;

    if (op->kind == ZB_OP_REDUCE_GRAD) {
        /* Per step there is one; per microbatch the m-th is the last. */
        bool last = ++m->reduced[op->stage] >= m->p->microbatches;
        t = zb_dp_reduce_time(m->p, op->stage, last);
    } else {
        t = zb_dp_op_time(m->p, op->kind, op->stage);
    }
    op->start = fmax(m->clock[r], m->coll_free[r]);
    op->end = op->start + t;
    m->coll_free[r] = op->end;
    if (op->kind == ZB_OP_UNSHARD)
        m->unsharded[op->stage] = op->end;
    if (op->kind == ZB_OP_REDUCE_GRAD)
        m->grad_free[op->stage] = op->end;
}

/* Skip non-compute ops (timing collectives on the way); queue the rank if
 * its next compute op can start. */
static void try_queue(struct sim *m, int r)
{
    const struct zb_op_list *l = &m->s->ranks[r];
    struct zb_dep deps[4];
    double ready;
    int n, to[4];

    if (m->queued[r])
        return;
    while (m->pos[r] < l->n && !zb_op_is_compute(l->ops[m->pos[r]].kind)) {
        if (zb_op_is_collective(l->ops[m->pos[r]].kind) &&
            !(m->units && zb_zero_unit_op(m->p, &l->ops[m->pos[r]])))
            run_collective(m, r, &l->ops[m->pos[r]]);
        m->pos[r]++;
    }
    if (m->pos[r] == l->n)
        return;
    const struct zb_op *op = &l->ops[m->pos[r]];
    ready = fmax(m->clock[r], m->unsharded[op->stage]);
    if (op->kind == ZB_OP_FB)
        ready = fmax(ready, m->unsharded[op->b_stage]);
    if (zb_dp_per_mb(m->p) && (op->kind == ZB_OP_W || op->kind == ZB_OP_BW))
        ready = fmax(ready, m->grad_free[op->stage]);
    n = op_deps(m->p, op, deps, to);
    for (int i = 0; i < n; i++) {
        double e = *end_of(m, deps[i].pass, deps[i].stage, deps[i].mb);
        if (isnan(e))
            return;
        ready = zb_timing_start(ready, zb_timing_arrival(m->p, deps[i].stage,
                                                         to[i], r, e));
    }
    if (m->units && zb_zero_unit_pass(m->p, op))
        ready = zb_zero_units_time(m->units, &m->s->ranks[r], r,
                                   m->pos[r], ready, &m->coll_free[r]);
    m->queued[r] = true;
    heap_push(m, ready, r);
}

static int report_stuck(struct sim *m, struct zb_error *err)
{
    char buf[96];

    for (int r = 0; r < m->p->pp; r++) {
        const struct zb_op_list *l = &m->s->ranks[r];
        if (m->pos[r] == l->n)
            continue;
        const struct zb_op *op = &l->ops[m->pos[r]];
        struct zb_dep deps[4];
        int n = op_deps(m->p, op, deps, NULL);
        for (int i = 0; i < n; i++)
            if (isnan(*end_of(m, deps[i].pass, deps[i].stage, deps[i].mb)))
                return zb_error_set(err, ZB_EILLEGAL,
                                    "rank %d op %d (%s) waits forever for "
                                    "%s stage %d mb %d", r, m->pos[r],
                                    zb_op_describe(op, buf, sizeof(buf)),
                                    deps[i].pass == ZB_PASS_F ? "F" : "B",
                                    deps[i].stage, deps[i].mb);
    }
    return zb_error_set(err, ZB_EILLEGAL, "simulation stalled");
}

int zb_sim_run(struct zb_schedule *s, struct zb_error *err)
{
    const struct zb_profile *p = &s->profile;
    struct sim m = { .s = s, .p = p };
    long npass = zb_pass_count(p);
    int rc = 0, seq = 0;

    if ((rc = zb_validate_ranges(s, err)) < 0)
        return rc;
    m.end = zb_xmalloc((size_t)npass * sizeof(double));
    for (long i = 0; i < npass; i++)
        m.end[i] = NAN;
    m.pos = zb_xcalloc((size_t)p->pp, sizeof(int));
    m.clock = zb_xcalloc((size_t)p->pp, sizeof(double));
    m.queued = zb_xcalloc((size_t)p->pp, sizeof(bool));
    m.heap = zb_xmalloc((size_t)p->pp * sizeof(*m.heap));
    m.coll_free = zb_xcalloc((size_t)p->pp, sizeof(double));
    m.unsharded = zb_xcalloc((size_t)zb_profile_stages(p), sizeof(double));
    m.grad_free = zb_xcalloc((size_t)zb_profile_stages(p), sizeof(double));
    m.reduced = zb_xcalloc((size_t)zb_profile_stages(p), sizeof(int));
    m.units = zb_dp_units(p) ? zb_zero_units_new(p) : NULL;

    for (int r = 0; r < p->pp; r++)
        try_queue(&m, r);
    while (m.heap_n > 0) {
        struct heap_item it = heap_pop(&m);
        int r = it.rank;
        struct zb_op *op = &s->ranks[r].ops[m.pos[r]];
        double d = zb_op_duration(p, op);
        struct zb_op part[2];
        int np;

        m.queued[r] = false;
        op->start = it.t;
        if (!(m.units && zb_zero_unit_pass(p, op)))  /* else timed so */
            op->end = it.t + d;
        op->seq = seq++;
        m.clock[r] = op->end;
        m.pos[r]++;
        /* Both halves of an FB end with it. */
        np = zb_op_split(op, part);
        for (int h = 0; h < np; h++) {
            const struct zb_op *x = &part[h];
            *end_of(&m, zb_pass_of(x->kind), x->stage, x->mb) = op->end;
            if (x->kind == ZB_OP_BW)
                *end_of(&m, ZB_PASS_W, x->stage, x->mb) = op->end;
        }
        /* Only this rank and the ranks of the neighbouring stages can have
         * been waiting for these passes. */
        try_queue(&m, r);
        for (int h = 0; h < np; h++) {
            const struct zb_op *x = &part[h];
            if (x->stage + 1 < zb_profile_stages(p))
                try_queue(&m, zb_profile_stage_rank(p, x->stage + 1));
            if (x->stage > 0)
                try_queue(&m, zb_profile_stage_rank(p, x->stage - 1));
        }
    }
    for (int r = 0; r < p->pp; r++)
        if (m.pos[r] < s->ranks[r].n) {
            rc = report_stuck(&m, err);
            goto out;
        }
    zb_measures_from_times(p, s->ranks, &s->predicted);
    if (zb_dp_active(p))
        zb_zero_measure(s);
out:
    free(m.end);
    free(m.pos);
    free(m.clock);
    free(m.queued);
    free(m.heap);
    free(m.coll_free);
    free(m.unsharded);
    free(m.grad_free);
    free(m.reduced);
    zb_zero_units_free(m.units);
    return rc;
}

int zb_sim_measure(struct zb_schedule *s, struct zb_error *err)
{
    if (zb_dp_active(&s->profile))
        return zb_sim_run(s, err);
    zb_measures_from_times(&s->profile, s->ranks, &s->predicted);
    return 0;
}
