/* coll_units.c - FSDP units (data_parallel.units K > 1): a pass's
 * segments and each unit's all-gather, release and reduce-scatter, kept
 * apart from coll.c's whole-stage collectives because a unit runs its own
 * state machine (enum unit_state) with the pass, on the cpu backend only.
 *
 * With FSDP units (data_parallel.units K > 1, docs/zero.md "Units") unit
 * u of a stage is its layers [u L / K, (u + 1) L / K) (L layers a stage;
 * K <= L): equal units, as the model's, when K divides L. A pass runs
 * unit by unit (F: 0 .. K-1; B, W: K-1 .. 0), so its weights and
 * gradients live per unit. ZeRO-3 shards each unit by itself, as FSDP
 * shards each unit's flat parameter: replica r owns part r of every unit,
 * its shard their concatenation (coll_shard_pieces); ZeRO-2 keeps the
 * contiguous shards, which a unit's gradient meets in ranges. A unit's
 * UNSHARD marks it listed; its all-gather (blocking, into a buffer of the
 * unit, into which this replica's part moves) is issued when segment j -
 * prefetch starts (prefetch 0: when segment j is reached), as the
 * simulator issues it, but at the UNSHARD for the pass's first
 * max(prefetch, 1) units, which the simulator issues during the pass
 * before; so a pass holds prefetch + 1 units at once. The RESHARD after
 * the pass frees its unit when the segment ends (the part moves back),
 * and reducing per microbatch each W segment's gradient buffer (one unit)
 * is reduce-scattered into the shard as the segment ends, before the
 * list's REDUCE_GRAD that names it (coll_early). Between STEP and the
 * stage's first gather the parts are joined in one shard buffer, which
 * the optimizer (step.c) updates; splitting and joining copy it, the one
 * moment the executor holds it twice. Reducing per step, the stage's one
 * REDUCE_GRAD is a reduce-scatter per unit. The collectives run blocking
 * on the host (cpu backend): the replay checks the numbers and the
 * memory of the units, not their overlap with compute. */
#include <stdlib.h>
#include "coll_int.h"
#include "zbsched/xalloc.h"

void coll_split_shard(struct exec *x, struct stage_state *st, bool join)
{
    const int me = x->replica, k = x->p->dp.units;
    const size_t n = coll_shard_len(x, me);

    if (join)
        st->wshard = exec_state_alloc(x, n);
    for (int u = 0; u < k; u++) {
        size_t a, b, pos = coll_shard_pos(x, u, me);
        int *cnt = zb_xmalloc(2 * (size_t)x->dp * sizeof(int));
        coll_unit_range(x, u, &a, &b, cnt, cnt + x->dp);
        if (join) {
            x->m->copy(x->dev, st->wshard + pos, st->upiece[u],
                       (size_t)cnt[me]);
            exec_state_free(x, st->upiece[u], (size_t)cnt[me]);
            st->upiece[u] = NULL;
        } else {
            st->upiece[u] = exec_state_alloc(x, (size_t)cnt[me]);
            x->m->copy(x->dev, st->upiece[u], st->wshard + pos,
                       (size_t)cnt[me]);
        }
        free(cnt);
    }
    if (!join) {
        exec_state_free(x, st->wshard, n);
        st->wshard = NULL;
    }
}

/* The all-gather of unit u (listed), or its release back to the piece. */
static int move_unit(struct exec *x, struct stage_state *st, int u,
                     bool gather, struct zb_error *err)
{
    const int me = x->replica;
    int *cnt = zb_xmalloc(2 * (size_t)x->dp * sizeof(int)), *dsp = cnt + x->dp;
    size_t a, b;
    int rc = MPI_SUCCESS;

    coll_unit_range(x, u, &a, &b, cnt, dsp);
    if (gather) {
        if (st->wshard)
            coll_split_shard(x, st, false);
        st->uw[u] = exec_state_alloc(x, b - a);
        x->m->copy(x->dev, st->uw[u] + dsp[me], st->upiece[u],
                   (size_t)cnt[me]);
        exec_state_free(x, st->upiece[u], (size_t)cnt[me]);
        st->upiece[u] = NULL;
        exec_state_sample(x);
        rc = MPI_Allgatherv(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, st->uw[u],
                            cnt, dsp, MPI_FLOAT, x->dp_comm);
        st->ustate[u] = U_GATHERED;
        x->t[st->uop[u]].done = exec_now() - x->epoch;
    } else {
        st->upiece[u] = exec_state_alloc(x, (size_t)cnt[me]);
        x->m->copy(x->dev, st->upiece[u], st->uw[u] + dsp[me],
                   (size_t)cnt[me]);
        exec_state_free(x, st->uw[u], b - a);
        st->uw[u] = NULL;
    }
    free(cnt);
    return rc == MPI_SUCCESS ? 0 : exec_mpi_error(rc, "MPI_Allgatherv", err);
}

/* Unit u's gradient g (one microbatch's, the unit's floats) into the
 * shard, for REDUCE_GRAD op i; frees g. */
static int reduce_unit(struct exec *x, int i, struct stage_state *st,
                       int u, float *g, struct zb_error *err)
{
    const int me = x->replica;
    int *cnt = zb_xmalloc(2 * (size_t)x->dp * sizeof(int)), *dsp = cnt + x->dp;
    size_t a, b;
    float *mine;
    int rc;

    coll_unit_range(x, u, &a, &b, cnt, dsp);
    mine = st->gshard + coll_shard_pos(x, u, me);
    /* As post_reduce_mb() (coll.c): the shard so far joins this
     * replica's slot of the unit's gradient, which the sum then counts
     * once. */
    if (st->nreduced > 0 && cnt[me] > 0)
        x->m->axpy(x->dev, g + dsp[me], 1.0f, mine, (size_t)cnt[me]);
    rc = MPI_Reduce_scatter(g, mine, cnt, MPI_FLOAT, MPI_SUM, x->dp_comm);
    free(cnt);
    exec_state_free(x, g, b - a);
    x->t[i].done = exec_now() - x->epoch;
    /* A W reduces its units K-1 .. 0 (zero_measure.h): 0 ends it. */
    if (u == 0) {
        st->grad_mb = -1;
        st->reduce_op = i;
        st->reduced = ++st->nreduced == x->p->microbatches;
    }
    return rc == MPI_SUCCESS ? 0
                             : exec_mpi_error(rc, "MPI_Reduce_scatter", err);
}

/* The collective of kind on (stage, unit, mb) among the non-compute ops
 * right after compute op i, or -1. */
static int next_coll(const struct exec *x, int i, enum zb_op_kind kind,
                     int unit, int mb)
{
    const struct zb_op *p = &x->ops->ops[i];

    for (int j = i + 1; j < x->ops->n; j++) {
        const struct zb_op *o = &x->ops->ops[j];
        if (zb_op_is_compute(o->kind) || o->kind == ZB_OP_STEP)
            break;
        if (o->kind == kind && o->stage == p->stage && o->unit == unit &&
            (kind != ZB_OP_REDUCE_GRAD || o->mb == mb))
            return j;
    }
    return -1;
}

/* UNSHARDs of op i's stage between the compute op before i and i. */
static int listed_before(const struct exec *x, int i)
{
    int n = 0;

    for (int j = i - 1; j >= 0; j--) {
        const struct zb_op *o = &x->ops->ops[j];
        if (zb_op_is_compute(o->kind))
            break;
        n += o->kind == ZB_OP_UNSHARD && o->stage == x->ops->ops[i].stage;
    }
    return n;
}

int coll_segments(const struct exec *x, enum zb_op_kind part)
{
    if (!coll_units(x) || x->opt.synthetic)
        return 1;
    if (part == ZB_OP_W)
        return coll_per_mb(x) ? x->p->dp.units : 1;
    return coll_zero3(x) ? x->p->dp.units : 1;
}

static int seg_unit(const struct exec *x, enum zb_op_kind part, int j)
{
    return part == ZB_OP_F ? j : x->p->dp.units - 1 - j;
}

int coll_seg_begin(struct exec *x, int i, enum zb_op_kind part, int j,
                   struct pass_seg *sg, struct zb_error *err)
{
    const struct zb_op *op = &x->ops->ops[i];
    struct stage_state *st = exec_stage(x, op->stage);
    const int n = coll_segments(x, part), k = x->p->dp.units,
              f = x->p->dp.prefetch, u = seg_unit(x, part, j);
    size_t a, b;
    int rc;

    *sg = (struct pass_seg){ 0, x->net.layers, st->w, NULL, j == 0,
                             j == n - 1 };
    if (n == 1)
        return 0;
    coll_unit_layers(x, u, &sg->l0, &sg->l1);
    coll_unit_range(x, u, &a, &b, NULL, NULL);
    if (part == ZB_OP_W) {
        if (st->ug[u])
            return coll_op_error(x, i, "comes before the REDUCE_GRAD of its "
                                 "stage's previous W", err);
        sg->w = NULL;
        sg->g = exec_state_alloc(x, b - a);
        exec_state_sample(x);
        return 0;
    }
    for (int v = 0; j == 0 && v < k; v++)
        if (st->ustate[v] != U_LISTED && st->ustate[v] != U_GATHERED)
            return coll_op_error(x, i, "runs on sharded units", err);
    /* This segment's gather, then those prefetch segments ahead. */
    for (int t = j; t < n && t <= j + f; t++) {
        int v = seg_unit(x, part, t);
        if (st->ustate[v] == U_LISTED &&
            (rc = move_unit(x, st, v, true, err)) < 0)
            return rc;
    }
    sg->w = st->uw[u];
    exec_state_sample(x);
    watchdog_op(i, WD_RUN);
    return 0;
}

int coll_seg_end(struct exec *x, int i, enum zb_op_kind part, int j,
                 const struct pass_seg *sg, struct zb_error *err)
{
    const struct zb_op *op = &x->ops->ops[i];
    struct stage_state *st = exec_stage(x, op->stage);
    const int u = seg_unit(x, part, j);
    int c, rc;

    if (coll_segments(x, part) == 1)
        return 0;
    if (part == ZB_OP_W) {
        if ((c = next_coll(x, i, ZB_OP_REDUCE_GRAD, u, op->mb)) < 0) {
            st->ug[u] = sg->g;  /* for the list's REDUCE_GRAD, later */
            st->grad_mb = op->mb;
            return 0;
        }
        x->t[c].start = exec_now() - x->epoch;
        x->coll_early[c] = true;
        rc = reduce_unit(x, c, st, u, sg->g, err);
        x->t[c].end = x->t[c].done;
        return rc;
    }
    if ((c = next_coll(x, i, ZB_OP_RESHARD, u, -1)) < 0 ||
        st->ustate[u] != U_GATHERED)
        return 0;
    x->t[c].start = exec_now() - x->epoch;
    move_unit(x, st, u, false, err);
    st->ustate[u] = U_FREED;
    x->coll_early[c] = true;
    x->t[c].end = x->t[c].done = exec_now() - x->epoch;
    return 0;
}

int coll_post_unit(struct exec *x, int i, struct stage_state *st,
                   struct zb_error *err)
{
    const struct zb_op *op = &x->ops->ops[i];
    const int u = op->unit, f = x->p->dp.prefetch;
    float *g;

    if (u < 0 || u >= x->p->dp.units)
        return coll_op_error(x, i, "names no unit of its stage", err);
    if (op->kind != ZB_OP_REDUCE_GRAD && !coll_zero3(x))
        return coll_op_error(x, i, "needs ZeRO-3", err);
    if (op->kind == ZB_OP_UNSHARD) {
        if (st->ustate[u] != U_SHARD)
            return coll_op_error(x, i, "gathers a unit that is gathered", err);
        st->ustate[u] = U_LISTED;
        st->uop[u] = i;
        if (listed_before(x, i) < (f > 1 ? f : 1))
            return move_unit(x, st, u, true, err);
        return 0;
    }
    if (op->kind == ZB_OP_RESHARD) {
        if (st->ustate[u] == U_SHARD)
            return coll_op_error(x, i, "frees a unit that is not gathered",
                                 err);
        if (st->ustate[u] == U_GATHERED)
            move_unit(x, st, u, false, err);
        st->ustate[u] = U_SHARD;
        x->t[i].done = exec_now() - x->epoch;
        return 0;
    }
    if (!(g = st->ug[u]) || st->grad_mb != op->mb)
        return coll_op_error(x, i, "does not follow its microbatch's W", err);
    st->ug[u] = NULL;
    return reduce_unit(x, i, st, u, g, err);
}

void coll_unit_early(struct exec *x, int i, struct stage_state *st)
{
    const struct zb_op *op = &x->ops->ops[i];

    x->coll_early[i] = false;
    if (op->kind == ZB_OP_RESHARD)
        st->ustate[op->unit] = U_SHARD;
}

int coll_reduce_step_units(struct exec *x, int i, struct stage_state *st,
                           struct zb_error *err)
{
    const int me = x->replica;
    int *cnt = zb_xmalloc(2 * (size_t)x->dp * sizeof(int)), rc = 0;
    size_t a, b;

    for (int u = 0; u < x->p->dp.units && rc == MPI_SUCCESS; u++) {
        coll_unit_range(x, u, &a, &b, cnt, cnt + x->dp);
        rc = MPI_Reduce_scatter(st->g + a,
                                st->gshard + coll_shard_pos(x, u, me),
                                cnt, MPI_FLOAT, MPI_SUM, x->dp_comm);
    }
    free(cnt);
    x->t[i].done = exec_now() - x->epoch;
    st->reduced = true;
    st->reduce_op = i;
    return rc == MPI_SUCCESS ? 0
                             : exec_mpi_error(rc, "MPI_Reduce_scatter", err);
}
