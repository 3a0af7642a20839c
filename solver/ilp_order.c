/* ilp_order.c - compute orders as the solver holds them (pass ids per
 * rank), to and from struct zb_schedule, timed by the one simulator. */
#include <stdlib.h>
#include <string.h>
#include "ilp.h"
#include "zbsched/pass.h"
#include "zbsched/sim.h"
#include "zbsched/xalloc.h"
#include "zbsched/zero.h"

static const enum zb_op_kind pass_op[ZB_PASS_COUNT] = {
    [ZB_PASS_F] = ZB_OP_F, [ZB_PASS_B] = ZB_OP_B, [ZB_PASS_W] = ZB_OP_W,
};

void zbi_ilp_order_init(struct ilp_order *o, const struct ilp_inst *in)
{
    o->seq = zb_xmalloc((size_t)in->p->pp * sizeof(int *));
    for (int r = 0; r < in->p->pp; r++)
        o->seq[r] = zb_xcalloc((size_t)in->rank_n[r], sizeof(int));
}

void zbi_ilp_order_release(struct ilp_order *o, const struct ilp_inst *in)
{
    if (!o->seq)
        return;
    for (int r = 0; r < in->p->pp; r++)
        free(o->seq[r]);
    free(o->seq);
    o->seq = NULL;
}

void zbi_ilp_order_copy(struct ilp_order *dst, const struct ilp_order *src,
                        const struct ilp_inst *in)
{
    for (int r = 0; r < in->p->pp; r++)
        memcpy(dst->seq[r], src->seq[r], (size_t)in->rank_n[r] * sizeof(int));
}

void zbi_ilp_order_to_schedule(const struct ilp_order *o,
                               const struct ilp_inst *in,
                               struct zb_schedule *s)
{
    const int per_kind = in->S * in->m;

    for (int r = 0; r < in->p->pp; r++) {
        s->ranks[r].n = 0;
        for (int i = 0; i < in->rank_n[r]; i++) {
            int a = o->seq[r][i];
            zb_schedule_push(s, r, pass_op[a / per_kind],
                             a % per_kind / in->m, a % in->m);
        }
    }
}

int zbi_ilp_order_eval(const struct ilp_inst *in, const struct ilp_order *o,
                       struct ilp_eval *ev)
{
    struct zb_schedule s;
    int rc;

    zb_schedule_init(&s, "ilp", in->p);
    zbi_ilp_order_to_schedule(o, in, &s);
    /* The step: the collectives placed as every schedule gets them
     * (zero.h; a ZeRO-3 gather may delay passes, so the times too). */
    if ((rc = zb_sim_run(&s, NULL)) == 0 &&
        (!in->step || (rc = zb_zero_place(&s, NULL)) == 0)) {
        ev->cost = s.predicted.cost;
        ev->makespan = s.predicted.makespan;
        ev->obj = in->step ? s.predicted.step_time
                : in->objective == ZB_OBJECTIVE_COST ? ev->cost
                                                     : ev->makespan;
        if (!s.predicted.fits_memory)
            rc = ZB_ENOMEM_LIMIT;
        ev->ends = 0;
        for (int r = 0; r < in->p->pp; r++)
            for (int i = 0; i < s.ranks[r].n; i++)
                if (zb_op_is_compute(s.ranks[r].ops[i].kind))
                    ev->ends += s.ranks[r].ops[i].end;

        for (int r = 0; ev->t && r < in->p->pp; r++)
            for (int i = 0; i < s.ranks[r].n; i++) {
                const struct zb_op *op = &s.ranks[r].ops[i];
                if (!zb_op_is_compute(op->kind))
                    continue;
                ev->t[zb_pass_index(in->p, zb_pass_of(op->kind), op->stage,
                                    op->mb)] = op->start;
            }
    }
    zb_schedule_release(&s);
    return rc;
}

/* A start time and what it belongs to (a microbatch or a pass id). */
struct timed {
    double t;
    int id;
};

static int timed_cmp(const void *x, const void *y)
{
    const struct timed *a = x, *b = y;
    if (a->t != b->t)
        return a->t < b->t ? -1 : 1;
    return a->id - b->id;
}

void zbi_ilp_order_from_schedule(struct ilp_order *o,
                                 const struct ilp_inst *in,
                                 const struct zb_schedule *s)
{
    const struct zb_profile *p = in->p;
    int *label = zb_xmalloc((size_t)in->n * sizeof(int));
    double *t = zb_xmalloc((size_t)in->n * sizeof(double));
    struct timed *tm = zb_xmalloc((size_t)in->m * sizeof(*tm));

    for (int r = 0; r < p->pp; r++)
        for (int i = 0; i < s->ranks[r].n; i++) {
            const struct zb_op *op = &s->ranks[r].ops[i];
            if (!zb_op_is_compute(op->kind))
                continue;
            t[zb_pass_index(p, zb_pass_of(op->kind), op->stage, op->mb)] =
                op->start;
            if (op->kind == ZB_OP_BW)
                t[zb_pass_index(p, ZB_PASS_W, op->stage, op->mb)] =
                    op->start + p->stage[op->stage].b;
        }
    /* The k-th pass of a kind at a stage to start becomes microbatch k:
     * every dependency joins two such sequences, and if some matching of
     * them respects a delay, the sorted matching does too. */
    for (int k = 0; k < ZB_PASS_COUNT; k++)
        for (int st = 0; st < in->S; st++) {
            int base = (int)zb_pass_index(p, k, st, 0);
            for (int i = 0; i < in->m; i++)
                tm[i] = (struct timed){ t[base + i], i };
            qsort(tm, (size_t)in->m, sizeof(*tm), timed_cmp);
            for (int i = 0; i < in->m; i++)
                label[base + tm[i].id] = base + i;
        }
    for (int r = 0; r < p->pp; r++) {
        int n = 0;
        for (int i = 0; i < s->ranks[r].n; i++) {
            const struct zb_op *op = &s->ranks[r].ops[i];
            if (!zb_op_is_compute(op->kind))
                continue;
            o->seq[r][n++] = label[zb_pass_index(p, zb_pass_of(op->kind),
                                                 op->stage, op->mb)];
            if (op->kind == ZB_OP_BW)
                o->seq[r][n++] = label[zb_pass_index(p, ZB_PASS_W,
                                                     op->stage, op->mb)];
        }
    }
    free(label);
    free(t);
    free(tm);
}

void zbi_ilp_order_by_times(struct ilp_order *o, const struct ilp_inst *in,
                            const double *t)
{
    struct timed *tm = NULL;
    int cap = 0;

    for (int r = 0; r < in->p->pp; r++) {
        zb_xgrow((void **)&tm, &cap, in->rank_n[r], sizeof(*tm));
        for (int i = 0; i < in->rank_n[r]; i++) {
            int a = in->rank_pass[r][i];
            tm[i] = (struct timed){ t[a], a };
        }
        qsort(tm, (size_t)in->rank_n[r], sizeof(*tm), timed_cmp);
        for (int i = 0; i < in->rank_n[r]; i++)
            o->seq[r][i] = tm[i].id;
    }
    free(tm);
}

void zbi_ilp_order_serial(struct ilp_order *o, const struct ilp_inst *in)
{
    const struct zb_profile *p = in->p;
    int *n = zb_xcalloc((size_t)p->pp, sizeof(int));

    for (int i = 0; i < in->m; i++) {
        for (int s = 0; s < in->S; s++) {
            int a = (int)zb_pass_index(p, ZB_PASS_F, s, i);
            o->seq[in->rank[a]][n[in->rank[a]]++] = a;
        }
        for (int s = in->S - 1; s >= 0; s--)
            for (int k = ZB_PASS_B; k <= ZB_PASS_W; k++) {
                int a = (int)zb_pass_index(p, k, s, i);
                o->seq[in->rank[a]][n[in->rank[a]]++] = a;
            }
    }
    free(n);
}
