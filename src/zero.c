/* zero.c - the data-parallel collectives in a lowered schedule: where they
 * go and the post-pass that groups the trailing W ops by stage (zero.h,
 * docs/zero.md). A pass above the simulator; what the collectives lead
 * to is measured below it (zero_measure.c). */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "zbsched/dp.h"
#include "zbsched/lower.h"
#include "zbsched/sim.h"
#include "zbsched/xalloc.h"
#include "zbsched/zero.h"

/* Chunk permutations tried by the W post-pass: vpp! of them, so only for
 * the vpp that real pipelines use. */
#define GROUP_MAX_VPP 4

void zb_zero_strip(struct zb_schedule *s)
{
    for (int r = 0; r < s->profile.pp; r++) {
        struct zb_op_list *l = &s->ranks[r];
        int k = 0;
        for (int i = 0; i < l->n; i++)
            if (!zb_op_is_collective(l->ops[i].kind))
                l->ops[k++] = l->ops[i];
        l->n = k;
    }
}

static void push_coll(struct zb_op_list *l, enum zb_op_kind kind, int stage,
                      int mb)
{
    struct zb_op op = { .kind = kind, .stage = stage, .mb = mb, .peer = -1,
                        .seq = -1 };
    zb_op_list_push(l, &op);
}

/* With units: the collectives of compute op op on its units, in the order
 * of its segments (zero_measure.h): before it (kind UNSHARD) its gathers,
 * after it its RESHARDs (kind RESHARD) or its reduces (REDUCE_GRAD). */
static void push_units(const struct zb_profile *p, struct zb_op_list *l,
                       const struct zb_op *op, enum zb_op_kind kind)
{
    struct zb_op part[2];
    int np = zb_op_split(op, part), k = p->dp.units;

    for (int h = 0; h < np; h++) {
        const struct zb_op *x = &part[h];
        bool is_w = x->kind == ZB_OP_W || x->kind == ZB_OP_BW;
        /* An FB on one stage: its B uses the units its F gathered. */
        bool again = h > 0 && x->stage == part[0].stage;
        if (kind == ZB_OP_REDUCE_GRAD ? !(zb_dp_per_mb(p) && is_w)
                                      : p->dp.zero < 3 ||
                                            x->kind == ZB_OP_W || again)
            continue;
        for (int j = 0; j < k; j++) {
            struct zb_op c = {
                .kind = kind, .stage = x->stage,
                .mb = kind == ZB_OP_REDUCE_GRAD ? x->mb : -1, .peer = -1,
                .seq = -1, .unit = x->kind == ZB_OP_F ? j : k - 1 - j };
            zb_op_list_push(l, &c);
        }
    }
}

/* Rank r's list with the collectives of units (K > 1): each pass's
 * gathers before it, its RESHARDs and then its reduces after it; the
 * stage's one REDUCE_GRAD after its last W when reducing per step. */
static void place_rank_units(struct zb_schedule *s, int r)
{
    const struct zb_profile *p = &s->profile;
    struct zb_op_list *l = &s->ranks[r], out = { 0 };
    int *last_w = zb_xmalloc((size_t)zb_profile_stages(p) * sizeof(int));

    for (int i = 0; i < l->n; i++)
        if (l->ops[i].kind == ZB_OP_W || l->ops[i].kind == ZB_OP_BW)
            last_w[l->ops[i].stage] = i;
    for (int i = 0; i < l->n; i++) {
        const struct zb_op *op = &l->ops[i];
        if (zb_op_is_compute(op->kind))
            push_units(p, &out, op, ZB_OP_UNSHARD);
        zb_op_list_push(&out, op);
        if (!zb_op_is_compute(op->kind))
            continue;
        push_units(p, &out, op, ZB_OP_RESHARD);
        push_units(p, &out, op, ZB_OP_REDUCE_GRAD);
        if (!zb_dp_per_mb(p) && (op->kind == ZB_OP_W || op->kind == ZB_OP_BW)
            && last_w[op->stage] == i)
            push_coll(&out, ZB_OP_REDUCE_GRAD, op->stage, -1);
    }
    free(l->ops);
    *l = out;
    free(last_w);
}

/* Rebuild rank r's list with its collectives (none there before). */
static void place_rank(struct zb_schedule *s, int r)
{
    const struct zb_profile *p = &s->profile;
    struct zb_op_list *l = &s->ranks[r], out = { 0 };
    int nst = zb_profile_stages(p);
    /* Per stage: list index of the op that the UNSHARD precedes, and of
     * the last W and last pass that REDUCE_GRAD and RESHARD follow. */
    int *pre = zb_xmalloc((size_t)nst * 3 * sizeof(int));
    int *last_w = pre + nst, *last = pre + 2 * nst;
    int *compute = zb_xmalloc((size_t)(l->n ? l->n : 1) * sizeof(int));
    int nc = 0;
    bool zero3 = p->dp.zero >= 3, per_mb = zb_dp_per_mb(p);

    for (int st = 0; st < 3 * nst; st++)
        pre[st] = -1;
    for (int i = 0; i < l->n; i++) {
        const struct zb_op *op = &l->ops[i];
        if (!zb_op_is_compute(op->kind))
            continue;
        /* Prefetch: issue the gather when the rank reaches the pass
         * `prefetch` passes before the stage's first (or the list's
         * start); prefetch 0, when it reaches the stage's first pass. */
        if (pre[op->stage] < 0)
            pre[op->stage] = p->dp.prefetch == 0 ? i
                             : nc >= p->dp.prefetch
                                 ? compute[nc - p->dp.prefetch] : 0;
        compute[nc++] = i;
        last[op->stage] = i;
        if (op->kind == ZB_OP_W || op->kind == ZB_OP_BW)
            last_w[op->stage] = i;
    }
    for (int i = 0; i < l->n; i++) {
        const struct zb_op *op = &l->ops[i];
        for (int c = 0; c < p->vpp && zero3; c++) {
            int st = zb_profile_rank_stage(p, r, c);
            if (pre[st] == i)
                push_coll(&out, ZB_OP_UNSHARD, st, -1);
        }
        zb_op_list_push(&out, op);
        if (!zb_op_is_compute(op->kind))
            continue;
        if (per_mb && (op->kind == ZB_OP_W || op->kind == ZB_OP_BW))
            push_coll(&out, ZB_OP_REDUCE_GRAD, op->stage, op->mb);
        else if (last_w[op->stage] == i)
            push_coll(&out, ZB_OP_REDUCE_GRAD, op->stage, -1);
        if (zero3 && last[op->stage] == i)
            push_coll(&out, ZB_OP_RESHARD, op->stage, -1);
    }
    free(l->ops);
    *l = out;
    free(pre);
    free(compute);
}

int zb_zero_place(struct zb_schedule *s, struct zb_error *err)
{
    if (!zb_dp_active(&s->profile))
        return 0;
    zb_zero_strip(s);
    for (int r = 0; r < s->profile.pp; r++) {
        if (zb_dp_units(&s->profile))
            place_rank_units(s, r);
        else
            place_rank(s, r);
    }
    return zb_sim_run(s, err);
}

/* ---- The W post-pass -------------------------------------------------- */

/* Index where rank r's trailing W ops begin (STEP is last). */
static int tail_start(const struct zb_op_list *l)
{
    int i = l->n - 1;       /* the STEP */

    while (i > 0 && l->ops[i - 1].kind == ZB_OP_W)
        i--;
    return i;
}

/* Lay out orig's tail (n ops) at dst by chunk in the order perm. */
static void group_tail(const struct zb_profile *p, const struct zb_op *orig,
                       int n, const int *perm, struct zb_op *dst)
{
    int k = 0;

    for (int c = 0; c < p->vpp; c++)
        for (int i = 0; i < n; i++)
            if (zb_profile_stage_chunk(p, orig[i].stage) == perm[c])
                dst[k++] = orig[i];
}

/* Next permutation in lexicographic order; false after the last. */
static bool next_perm(int *a, int n)
{
    int i = n - 2, j = n - 1;

    while (i >= 0 && a[i] >= a[i + 1])
        i--;
    if (i < 0)
        return false;
    while (a[j] <= a[i])
        j--;
    int t = a[i];
    a[i] = a[j];
    a[j] = t;
    for (int x = i + 1, y = n - 1; x < y; x++, y--) {
        t = a[x];
        a[x] = a[y];
        a[y] = t;
    }
    return true;
}

int zb_zero_group_tail_w(struct zb_schedule *s, struct zb_error *err)
{
    const struct zb_profile *p = &s->profile;
    int perm[GROUP_MAX_VPP];
    struct zb_op **orig;
    int *start, *len, *best;
    double *best_end;
    int rc;

    if (!zb_dp_active(p) || p->vpp < 2 || p->vpp > GROUP_MAX_VPP)
        return zb_zero_place(s, err);
    zb_zero_strip(s);
    orig = zb_xcalloc((size_t)p->pp, sizeof(*orig));
    start = zb_xmalloc((size_t)p->pp * 2 * sizeof(int));
    len = start + p->pp;
    best_end = zb_xmalloc((size_t)p->pp * sizeof(double));
    best = zb_xmalloc((size_t)p->pp * GROUP_MAX_VPP * sizeof(int));
    for (int r = 0; r < p->pp; r++) {
        const struct zb_op_list *l = &s->ranks[r];
        start[r] = tail_start(l);
        len[r] = l->n - 1 - start[r];
        orig[r] = zb_xmalloc((size_t)(len[r] ? len[r] : 1) * sizeof(**orig));
        memcpy(orig[r], l->ops + start[r], (size_t)len[r] * sizeof(**orig));
        best_end[r] = INFINITY;
    }
    /* The tail as generated first (-1), then each grouping: ranks do not
     * interact through their tails (a W feeds no other rank), so one
     * simulation per candidate scores every rank at once. */
    for (int c = 0; c < p->vpp; c++)
        perm[c] = c;
    for (int cand = -1;; cand++) {
        zb_zero_strip(s);
        for (int r = 0; r < p->pp; r++) {
            struct zb_op_list *l = &s->ranks[r];
            if (cand < 0)
                memcpy(l->ops + start[r], orig[r],
                       (size_t)len[r] * sizeof(**orig));
            else
                group_tail(p, orig[r], len[r], perm, l->ops + start[r]);
        }
        if ((rc = zb_zero_place(s, err)) < 0)
            goto out;
        for (int r = 0; r < p->pp; r++) {
            double e = zb_zero_rank_end(&s->ranks[r], NULL);
            /* Keep the order as generated unless grouping helps. */
            if (e < best_end[r] - 1e-9 * fmax(1, e)) {
                best_end[r] = e;
                for (int c = 0; c < p->vpp; c++)
                    best[r * GROUP_MAX_VPP + c] = cand < 0 ? -1 : perm[c];
            }
        }
        if (cand >= 0 && !next_perm(perm, p->vpp))
            break;
    }
    zb_zero_strip(s);
    for (int r = 0; r < p->pp; r++) {
        struct zb_op *tail = s->ranks[r].ops + start[r];
        if (best[r * GROUP_MAX_VPP] < 0)
            memcpy(tail, orig[r], (size_t)len[r] * sizeof(**orig));
        else
            group_tail(p, orig[r], len[r], best + r * GROUP_MAX_VPP, tail);
    }
    rc = zb_zero_place(s, err);
out:
    for (int r = 0; r < p->pp; r++)
        free(orig[r]);
    free(orig);
    free(start);
    free(best_end);
    free(best);
    return rc;
}

/* order's compute order in out, simulated and lowered (no collectives). */
static int lowered_copy(const struct zb_schedule *order,
                        struct zb_schedule *out, struct zb_error *err)
{
    int rc;

    zb_schedule_init(out, order->name, &order->profile);
    zb_schedule_copy_order(out, order);
    if ((rc = zb_sim_run(out, err)) < 0 || (rc = zb_lower_run(out, err)) < 0)
        zb_schedule_release(out);
    return rc;
}

int zb_zero_best_step(const struct zb_schedule *order, struct zb_schedule *out,
                      bool *grouped, struct zb_error *err)
{
    struct zb_schedule g;
    int rc;

    *grouped = false;
    if ((rc = lowered_copy(order, out, err)) < 0)
        return rc;
    if ((rc = zb_zero_place(out, err)) < 0)
        goto fail;
    if ((rc = lowered_copy(order, &g, err)) < 0)
        goto fail;
    if ((rc = zb_zero_group_tail_w(&g, err)) < 0) {
        zb_schedule_release(&g);
        goto fail;
    }
    /* Only a shorter step is worth another order: the post-pass may
     * reorder a rank whose end does not set the step. */
    if (g.predicted.step_time <
        out->predicted.step_time * (1 - 1e-9)) {
        zb_schedule_release(out);
        *out = g;
        *grouped = true;
    } else {
        zb_schedule_release(&g);
    }
    return 0;
fail:
    zb_schedule_release(out);
    return rc;
}
