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

/* ---- Units (data_parallel.units K > 1) -----------------------------
 * ZeRO-3: every unit is gathered by an UNSHARD and freed by a RESHARD,
 * alternately, and each pass that needs weights (all but W, which
 * computes dW from its inputs) runs with every unit of its stage
 * gathered; none is left gathered at the list's end. Reducing per
 * microbatch: after each W (or BW), before the stage's next W, one
 * REDUCE_GRAD of its microbatch per unit. */
struct unit_scan {
    int k;
    int *gathered;      /* stage x unit: the UNSHARD holding it, or -1 */
    int *open_w;        /* stage: the W whose reduces are due, or -1 */
    int *left;          /* stage: how many of them are still due */
    unsigned char *done; /* stage x unit: reduced for open_w */
};

/* Pass i (not a W) needs every unit of stage st gathered. */
static int need_units(const struct zb_op_list *l, int r, int i, int st,
                      const struct unit_scan *u, struct zb_error *err)
{
    char desc[96];

    for (int j = 0; j < u->k; j++)
        if (u->gathered[st * u->k + j] < 0)
            return zb_error_set(err, ZB_EILLEGAL, "rank %d op %d (%s) runs "
                                "on a sharded unit: unit %d of stage %d is "
                                "not gathered", r, i, DESC(&l->ops[i]), j,
                                st);
    return 0;
}

static int unit_compute(const struct zb_schedule *s, int r, int i,
                        struct unit_scan *u, struct where *w,
                        struct zb_error *err)
{
    const struct zb_op_list *l = &s->ranks[r];
    struct zb_op part[2];
    int np = zb_op_split(&l->ops[i], part), rc;
    char desc[96], prev[96];

    for (int h = 0; h < np; h++) {
        const struct zb_op *x = &part[h];
        bool is_w = x->kind == ZB_OP_W || x->kind == ZB_OP_BW;
        if (s->profile.dp.zero >= 3 && x->kind != ZB_OP_W &&
            (rc = need_units(l, r, i, x->stage, u, err)) < 0)
            return rc;
        if (!is_w || !zb_dp_per_mb(&s->profile))
            continue;
        if (u->open_w[x->stage] >= 0)
            return zb_error_set(err, ZB_EILLEGAL, "rank %d op %d (%s) comes "
                                "before the REDUCE_GRADs of op %d (%s)", r, i,
                                DESC(&l->ops[i]), u->open_w[x->stage],
                                zb_op_describe(&l->ops[u->open_w[x->stage]],
                                               prev, sizeof(prev)));
        u->open_w[x->stage] = i;
        u->left[x->stage] = u->k;
        for (int j = 0; j < u->k; j++)
            u->done[x->stage * u->k + j] = 0;
        w[x->stage].open_w = i;
    }
    return 0;
}

static int unit_coll(const struct zb_schedule *s, int r, int i,
                     struct unit_scan *u, struct where *w,
                     struct zb_error *err)
{
    const struct zb_op_list *l = &s->ranks[r];
    const struct zb_op *op = &l->ops[i];
    int st = op->stage, idx = st * u->k + op->unit;
    char desc[96];

    if (op->unit < 0 || op->unit >= u->k)
        return zb_error_set(err, ZB_EILLEGAL, "rank %d op %d (%s): unit %d "
                            "is not one of the stage's %d", r, i, DESC(op),
                            op->unit, u->k);
    if (op->kind == ZB_OP_UNSHARD) {
        if (u->gathered[idx] >= 0)
            return zb_error_set(err, ZB_EILLEGAL, "rank %d op %d (%s) "
                                "gathers a unit op %d gathered", r, i,
                                DESC(op), u->gathered[idx]);
        u->gathered[idx] = i;
        return 0;
    }
    if (op->kind == ZB_OP_RESHARD) {
        if (u->gathered[idx] < 0)
            return zb_error_set(err, ZB_EILLEGAL, "rank %d op %d (%s) frees "
                                "a unit that is not gathered", r, i,
                                DESC(op));
        u->gathered[idx] = -1;
        return 0;
    }
    /* A REDUCE_GRAD per microbatch, on one unit. */
    if (op->mb < 0)
        return zb_error_set(err, ZB_EILLEGAL, "rank %d op %d (%s) names no "
                            "microbatch, but reduce is microbatch", r, i,
                            DESC(op));
    if (u->open_w[st] < 0 || l->ops[u->open_w[st]].mb != op->mb ||
        u->done[idx])
        return zb_error_set(err, ZB_EILLEGAL, "rank %d op %d (%s) does not "
                            "follow its microbatch's W, or repeats", r, i,
                            DESC(op));
    u->done[idx] = 1;
    w[st].reduce = i;
    if (--u->left[st] == 0) {
        u->open_w[st] = -1;
        w[st].open_w = -1;
    }
    return 0;
}

/* Rank r's list with units; also fills w as scan_rank() does. */
static int scan_units(const struct zb_schedule *s, int r, struct where *w,
                      struct zb_error *err)
{
    const struct zb_profile *p = &s->profile;
    const struct zb_op_list *l = &s->ranks[r];
    int nst = zb_profile_stages(p), k = p->dp.units, rc = 0;
    struct unit_scan u = { .k = k };
    char desc[96];

    u.gathered = zb_xmalloc((size_t)nst * (size_t)k * sizeof(int));
    u.open_w = zb_xmalloc((size_t)nst * 2 * sizeof(int));
    u.left = u.open_w + nst;
    u.done = zb_xcalloc((size_t)nst * (size_t)k, 1);
    for (int j = 0; j < nst * k; j++)
        u.gathered[j] = -1;
    for (int j = 0; j < nst; j++)
        u.open_w[j] = -1;
    for (int i = 0; i < l->n && !rc; i++) {
        const struct zb_op *op = &l->ops[i];
        struct where *x = &w[op->stage];
        if (zb_op_is_compute(op->kind)) {
            if (x->first < 0)
                x->first = i;
            x->last = i;
            if (op->kind == ZB_OP_W || op->kind == ZB_OP_BW)
                x->last_w = i;
            rc = unit_compute(s, r, i, &u, w, err);
        } else if (!zb_op_is_collective(op->kind)) {
            continue;
        } else if (op->kind != ZB_OP_REDUCE_GRAD && p->dp.zero < 3) {
            rc = zb_error_set(err, ZB_EILLEGAL, "rank %d op %d (%s): only "
                              "ZeRO-3 shards weights, this is zero %d", r, i,
                              DESC(op), p->dp.zero);
        } else if (op->kind == ZB_OP_REDUCE_GRAD && !zb_dp_per_mb(p)) {
            rc = op->mb >= 0 || op->unit != 0
                     ? zb_error_set(err, ZB_EILLEGAL, "rank %d op %d (%s): "
                                    "reducing per step, a REDUCE_GRAD names "
                                    "its stage alone", r, i, DESC(op))
                     : once(l, r, i, &x->reduce, err);
        } else if (op->mb >= 0 && op->kind != ZB_OP_REDUCE_GRAD) {
            rc = zb_error_set(err, ZB_EILLEGAL, "rank %d op %d (%s): only a "
                              "REDUCE_GRAD names a microbatch", r, i,
                              DESC(op));
        } else {
            rc = unit_coll(s, r, i, &u, w, err);
        }
    }
    for (int j = 0; j < nst * k && !rc; j++)
        if (u.gathered[j] >= 0)
            rc = zb_error_set(err, ZB_EILLEGAL, "rank %d op %d (%s) is "
                              "never freed (no RESHARD after it)", r,
                              u.gathered[j], DESC(&l->ops[u.gathered[j]]));
    free(u.gathered);
    free(u.open_w);
    free(u.done);
    return rc;
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
        if (op->unit != 0)
            return zb_error_set(err, ZB_EILLEGAL, "rank %d op %d (%s) names "
                                "unit %d, but data_parallel.units is 1", r,
                                i, DESC(op), op->unit);
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
    if (s->profile.dp.zero < 3 || zb_dp_units(&s->profile))
        return 0;           /* units: checked by scan_units() */
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
        rc = zb_dp_units(p) ? scan_units(s, r, w, err)
                            : scan_rank(s, r, w, err);
        if (rc < 0)
            continue;
        for (int c = 0; c < p->vpp && !rc; c++) {
            int st = zb_profile_rank_stage(p, r, c);
            rc = check_stage(s, r, st, &w[st], err);
        }
    }
    free(w);
    return rc;
}
