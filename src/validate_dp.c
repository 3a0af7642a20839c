/* validate_dp.c - the validator's rules for the data-parallel collectives
 * REDUCE_GRAD, UNSHARD and RESHARD (validate_dp.h).
 *
 * The dp replicas of a pipeline rank run the same op list, so they issue
 * the same collectives in the same order by construction; what can go
 * wrong is the per-stage sequence on one list, which is checked here. A
 * collective involves only the replicas of one pipeline rank, so it adds
 * no wait between pipeline ranks and cannot create a deadlock that the
 * rendezvous run of the point-to-point ops (validate.c) would miss.
 * Reducing per microbatch changes how many REDUCE_GRADs a stage has, not
 * that argument: the replicas still issue them in the same order. */
#include <stdlib.h>
#include "validate_dp.h"
#include "zbsched/dp.h"
#include "zbsched/xalloc.h"

#define DESC(op) zb_op_describe((op), desc, sizeof(desc))

/* Where things happen for one stage in its rank's list (-1: nowhere). */
struct where {
    int first, last;        /* first and last compute op */
    int last_w;             /* last W or BW */
    int reduce, unshard, reshard;
    int open_w;             /* reduce microbatch: the W (op index) whose
                               REDUCE_GRAD has not come yet */
};

/* Record collective i of kind k in *slot; a second one is an error. */
static int once(const struct zb_op_list *l, int r, int i, int *slot,
                struct zb_error *err)
{
    char desc[96];

    if (*slot >= 0)
        return zb_error_set(err, ZB_EILLEGAL, "rank %d op %d (%s) repeats "
                            "op %d", r, i, DESC(&l->ops[i]), *slot);
    *slot = i;
    return 0;
}

/* Reduce microbatch: each W (or BW) of a stage is followed by the
 * REDUCE_GRAD of its microbatch before the stage's next W, since one
 * gradient buffer holds one microbatch's gradient (docs/zero.md). So
 * every microbatch is reduced exactly once, after its W. */
static int per_mb(const struct zb_op_list *l, int r, int i, struct where *x,
                  struct zb_error *err)
{
    const struct zb_op *op = &l->ops[i];
    char desc[96], prev[96];

    if (op->kind != ZB_OP_REDUCE_GRAD) {
        if (x->open_w >= 0)
            return zb_error_set(err, ZB_EILLEGAL, "rank %d op %d (%s) comes "
                                "before the REDUCE_GRAD of op %d (%s)", r, i,
                                DESC(op), x->open_w,
                                zb_op_describe(&l->ops[x->open_w], prev,
                                               sizeof(prev)));
        x->open_w = i;
        return 0;
    }
    if (op->mb < 0)
        return zb_error_set(err, ZB_EILLEGAL, "rank %d op %d (%s) names no "
                            "microbatch, but reduce is microbatch", r, i,
                            DESC(op));
    if (x->open_w < 0 || l->ops[x->open_w].mb != op->mb)
        return zb_error_set(err, ZB_EILLEGAL, "rank %d op %d (%s) does not "
                            "follow its microbatch's W", r, i, DESC(op));
    x->reduce = i;
    x->open_w = -1;
    return 0;
}

static int scan_rank(const struct zb_schedule *s, int r, struct where *w,
                     struct zb_error *err)
{
    const struct zb_op_list *l = &s->ranks[r];
    const bool mb_mode = zb_dp_per_mb(&s->profile);
    char desc[96];
    int rc;

    for (int i = 0; i < l->n; i++) {
        const struct zb_op *op = &l->ops[i];
        struct where *x = &w[op->stage];
        const bool is_w = op->kind == ZB_OP_W || op->kind == ZB_OP_BW;

        if (zb_op_is_compute(op->kind)) {
            if (x->first < 0)
                x->first = i;
            x->last = i;
            if (is_w)
                x->last_w = i;
            if (is_w && mb_mode && (rc = per_mb(l, r, i, x, err)) < 0)
                return rc;
            continue;
        }
        if (!zb_op_is_collective(op->kind))
            continue;
        if (op->mb >= 0 && (op->kind != ZB_OP_REDUCE_GRAD || !mb_mode))
            return zb_error_set(err, ZB_EILLEGAL, "rank %d op %d (%s): only "
                                "a REDUCE_GRAD under reduce microbatch "
                                "names a microbatch", r, i, DESC(op));
        if (op->kind != ZB_OP_REDUCE_GRAD && s->profile.dp.zero < 3)
            return zb_error_set(err, ZB_EILLEGAL, "rank %d op %d (%s): only "
                                "ZeRO-3 shards weights, this is zero %d", r,
                                i, DESC(op), s->profile.dp.zero);
        if (op->kind == ZB_OP_REDUCE_GRAD && mb_mode) {
            if ((rc = per_mb(l, r, i, x, err)) < 0)
                return rc;
            continue;
        }
        rc = once(l, r, i, op->kind == ZB_OP_REDUCE_GRAD ? &x->reduce
                           : op->kind == ZB_OP_UNSHARD ? &x->unshard
                                                       : &x->reshard, err);
        if (rc < 0)
            return rc;
    }
    return 0;
}

static int check_stage(const struct zb_schedule *s, int r, int st,
                       const struct where *x, struct zb_error *err)
{
    const struct zb_op *ops = s->ranks[r].ops;
    char desc[96];

    if (x->open_w >= 0)
        return zb_error_set(err, ZB_EILLEGAL, "rank %d op %d (%s) has no "
                            "REDUCE_GRAD after it", r, x->open_w,
                            DESC(&ops[x->open_w]));
    if (x->reduce < 0)
        return zb_error_set(err, ZB_EILLEGAL, "rank %d: stage %d has no "
                            "REDUCE_GRAD", r, st);
    if (x->reduce < x->last_w)
        return zb_error_set(err, ZB_EILLEGAL, "rank %d op %d (%s) comes "
                            "before the stage's last W (op %d)", r,
                            x->reduce, DESC(&ops[x->reduce]), x->last_w);
    if (s->profile.dp.zero < 3)
        return 0;
    if (x->unshard < 0 || x->unshard > x->first)
        return zb_error_set(err, ZB_EILLEGAL, "rank %d op %d (%s) runs on a "
                            "sharded stage: %s", r, x->first,
                            DESC(&ops[x->first]), x->unshard < 0
                                ? "no UNSHARD" : "UNSHARD comes after it");
    if (x->reshard < 0 || x->reshard < x->last)
        return zb_error_set(err, ZB_EILLEGAL, "rank %d op %d (%s) runs on a "
                            "sharded stage: %s", r, x->last,
                            DESC(&ops[x->last]), x->reshard < 0
                                ? "no RESHARD after it"
                                : "RESHARD comes before it");
    return 0;
}

int zb_validate_collectives(const struct zb_schedule *s,
                            struct zb_error *err)
{
    const struct zb_profile *p = &s->profile;
    int nstages = zb_profile_stages(p);
    struct where *w;
    int rc = 0;

    if (!zb_dp_active(p))   /* check_shape() rejects any collective */
        return 0;
    w = zb_xmalloc((size_t)nstages * sizeof(*w));
    for (int r = 0; r < p->pp && !rc; r++) {
        for (int st = 0; st < nstages; st++)
            w[st] = (struct where){ -1, -1, -1, -1, -1, -1, -1 };
        if ((rc = scan_rank(s, r, w, err)) < 0)
            continue;
        for (int c = 0; c < p->vpp && !rc; c++) {
            int st = zb_profile_rank_stage(p, r, c);
            rc = check_stage(s, r, st, &w[st], err);
        }
    }
    free(w);
    return rc;
}
