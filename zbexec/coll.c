/* coll.c - the data-parallel collectives of a schedule with dp >= 2
 * (docs/zero.md): REDUCE_GRAD, UNSHARD and RESHARD on the communicator of
 * this pipeline rank's replicas, posted non-blocking through the backend
 * (coll_post) where the list puts them and completed only before their
 * consumer: the stage's next pass (UNSHARD) or STEP (REDUCE_GRAD). A
 * backend with coll_consume makes only its compute timeline wait for an
 * UNSHARD; the host then completes it later, at the latest at STEP.
 *
 * A stage's parameters split into dp contiguous shards, replica r owning
 * shard r (ZeRO-3 on units: per unit, below). ZeRO-0 all-reduces the gradient and every replica steps all of
 * it; ZeRO-1/2 reduce-scatter it, step their shard and all-gather the
 * weights after the step; ZeRO-3 keeps only the weight shard between
 * steps, all-gathers the weights in place at UNSHARD, keeps its shard
 * again at RESHARD and reduce-scatters the gradient; ZeRO-2/3 free the
 * full gradient buffer once it is reduced. Sums are MPI_SUM over the
 * replicas.
 *
 * Reducing per microbatch (ZeRO >= 2), each W writes its microbatch's
 * gradient into a full buffer g of its own, the REDUCE_GRAD after it
 * reduce-scatters that into the shard, and the buffer is freed when the
 * reduce-scatter is seen done; the stage's next W waits for that, as
 * the simulator's W waits for the buffer.
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
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include "exec.h"
#include "zbsched/xalloc.h"

static bool zero3(const struct exec *x)
{
    return x->dp > 1 && x->p->dp.zero >= 3;
}

static bool sharded_grad(const struct exec *x)
{
    return x->dp > 1 && x->p->dp.zero >= 1;
}

bool coll_per_mb(const struct exec *x)
{
    return x->dp > 1 && zb_dp_per_mb(x->p);
}

static bool units(const struct exec *x)
{
    return x->dp > 1 && zb_dp_units(x->p);
}

/* Whether each unit is sharded by itself (ZeRO-3 on units); else the
 * shards are dp contiguous ranges of the stage (shard_n, shard_off). */
static bool unit_shards(const struct exec *x)
{
    return zero3(x) && units(x);
}

enum unit_state {
    U_SHARD,        /* sharded */
    U_LISTED,       /* its UNSHARD reached, its all-gather not issued */
    U_GATHERED,
    U_FREED         /* its pass freed it, its RESHARD not reached */
};

/* The first parameter of layer l of a stage (l = L: the stage's end). */
static size_t layer_off(const struct exec *x, int l)
{
    size_t len;

    if (l >= x->net.layers)
        return x->nparam;
    return x->tf ? tf_tensor(x->tf, l, 0, &len)
                 : mlp_param_offset(&x->net, l);
}

static void unit_layers(const struct exec *x, int u, int *l0, int *l1)
{
    const int n = x->net.layers, k = x->p->dp.units;

    *l0 = u * n / k;
    *l1 = (u + 1) * n / k;
}

/* Unit u of a stage: [*a, *b) of its parameters; into cnt and dsp (dp
 * entries, NULL: skipped) each replica's part of it and where that starts
 * in the unit. */
static void unit_range(const struct exec *x, int u, size_t *a, size_t *b,
                       int *cnt, int *dsp)
{
    int l0, l1;

    unit_layers(x, u, &l0, &l1);
    *a = layer_off(x, l0);
    *b = layer_off(x, l1);
    for (int r = 0, at = 0; cnt && r < x->dp; r++) {
        size_t lo = (size_t)x->shard_off[r], hi = lo + (size_t)x->shard_n[r];
        if (unit_shards(x)) {
            const size_t n = *b - *a, d = (size_t)x->dp;
            cnt[r] = (int)(n / d + ((size_t)r < n % d));
            dsp[r] = at;
            at += cnt[r];
            continue;
        }
        lo = lo > *a ? lo : *a;
        hi = hi < *b ? hi : *b;
        cnt[r] = hi > lo ? (int)(hi - lo) : 0;
        dsp[r] = hi > lo ? (int)(lo - *a) : 0;
    }
}

/* Where replica r's part of unit u starts in its shard. */
static size_t shard_pos(const struct exec *x, int u, int r)
{
    int *cnt = zb_xmalloc(2 * (size_t)x->dp * sizeof(int)), *dsp = cnt + x->dp;
    size_t a, b, pos = 0;

    for (int v = 0; v <= u; v++) {
        unit_range(x, v, &a, &b, cnt, dsp);
        if (!unit_shards(x))
            pos = cnt[r] > 0 ? a + (size_t)dsp[r] - (size_t)x->shard_off[r]
                             : 0;
        else if (v < u)
            pos += (size_t)cnt[r];
    }
    free(cnt);
    return pos;
}

/* Floats in replica r's shard. */
static size_t shard_len(const struct exec *x, int r)
{
    const int k = x->p->dp.units;

    if (!unit_shards(x))
        return (size_t)x->shard_n[r];
    size_t a, b, n = 0, d = (size_t)x->dp;
    for (int u = 0; u < k; u++) {
        unit_range(x, u, &a, &b, NULL, NULL);
        n += (b - a) / d + ((size_t)r < (b - a) % d);
    }
    return n;
}

int coll_shard_pieces(const struct exec *x, int r, size_t *off,
                      size_t *len)
{
    int *cnt, *dsp, k = x->p->dp.units;
    size_t a, b;

    if (!sharded_grad(x)) {
        off[0] = 0;
        len[0] = x->nparam;
        return 1;
    }
    if (!unit_shards(x)) {
        off[0] = (size_t)x->shard_off[r];
        len[0] = (size_t)x->shard_n[r];
        return 1;
    }
    cnt = zb_xmalloc(2 * (size_t)x->dp * sizeof(int));
    dsp = cnt + x->dp;
    for (int u = 0; u < k; u++) {
        unit_range(x, u, &a, &b, cnt, dsp);
        off[u] = a + (size_t)dsp[r];
        len[u] = (size_t)cnt[r];
    }
    free(cnt);
    return k;
}

void coll_shard_stats(const struct exec *x, const float *g, int r,
                      double *sumsq, int *bad)
{
    const int k = x->dp > 1 ? x->p->dp.units : 1;
    size_t *off = zb_xmalloc(2 * (size_t)k * sizeof(size_t)), *len = off + k;
    int n = coll_shard_pieces(x, r, off, len);

    if (n == 1) {
        step_stats(g + off[0], len[0], sumsq, bad);
    } else {
        /* One running sum over the pieces in order, as the replica sums
         * its shard buffer. */
        float *tmp = zb_xmalloc((shard_len(x, r) + 1) * sizeof(float));
        size_t at = 0;
        for (int u = 0; u < n; u++) {
            memcpy(tmp + at, g + off[u], len[u] * sizeof(float));
            at += len[u];
        }
        step_stats(tmp, at, sumsq, bad);
        free(tmp);
    }
    free(off);
}

static int op_error(struct exec *x, int i, const char *why,
                    struct zb_error *err);

/* ZeRO-3 on units: the shard buffer into one piece per unit (split) or
 * back (join), both counted, so a gathered unit can take its piece. */
static void split_shard(struct exec *x, struct stage_state *st, bool join)
{
    const int me = x->replica, k = x->p->dp.units;
    const size_t n = shard_len(x, me);

    if (join)
        st->wshard = exec_state_alloc(x, n);
    for (int u = 0; u < k; u++) {
        size_t a, b, pos = shard_pos(x, u, me);
        int *cnt = zb_xmalloc(2 * (size_t)x->dp * sizeof(int));
        unit_range(x, u, &a, &b, cnt, cnt + x->dp);
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

    unit_range(x, u, &a, &b, cnt, dsp);
    if (gather) {
        if (st->wshard)
            split_shard(x, st, false);
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

    unit_range(x, u, &a, &b, cnt, dsp);
    mine = st->gshard + shard_pos(x, u, me);
    /* As post_reduce_mb(): the shard so far joins this replica's slot of
     * the unit's gradient, which the sum then counts once. */
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
    if (!units(x) || x->opt.synthetic)
        return 1;
    if (part == ZB_OP_W)
        return coll_per_mb(x) ? x->p->dp.units : 1;
    return zero3(x) ? x->p->dp.units : 1;
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
    unit_layers(x, u, &sg->l0, &sg->l1);
    unit_range(x, u, &a, &b, NULL, NULL);
    if (part == ZB_OP_W) {
        if (st->ug[u])
            return op_error(x, i, "comes before the REDUCE_GRAD of its "
                            "stage's previous W", err);
        sg->w = NULL;
        sg->g = exec_state_alloc(x, b - a);
        exec_state_sample(x);
        return 0;
    }
    for (int v = 0; j == 0 && v < k; v++)
        if (st->ustate[v] != U_LISTED && st->ustate[v] != U_GATHERED)
            return op_error(x, i, "runs on sharded units", err);
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

/* A unit's collective where the list puts it (see the top of the file). */
static int unit_coll(struct exec *x, int i, struct stage_state *st,
                     struct zb_error *err)
{
    const struct zb_op *op = &x->ops->ops[i];
    const int u = op->unit, f = x->p->dp.prefetch;
    float *g;

    if (u < 0 || u >= x->p->dp.units)
        return op_error(x, i, "names no unit of its stage", err);
    if (op->kind != ZB_OP_REDUCE_GRAD && !zero3(x))
        return op_error(x, i, "needs ZeRO-3", err);
    if (op->kind == ZB_OP_UNSHARD) {
        if (st->ustate[u] != U_SHARD)
            return op_error(x, i, "gathers a unit that is gathered", err);
        st->ustate[u] = U_LISTED;
        st->uop[u] = i;
        if (listed_before(x, i) < (f > 1 ? f : 1))
            return move_unit(x, st, u, true, err);
        return 0;
    }
    if (op->kind == ZB_OP_RESHARD) {
        if (st->ustate[u] == U_SHARD)
            return op_error(x, i, "frees a unit that is not gathered", err);
        if (st->ustate[u] == U_GATHERED)
            move_unit(x, st, u, false, err);
        st->ustate[u] = U_SHARD;
        x->t[i].done = exec_now() - x->epoch;
        return 0;
    }
    if (!(g = st->ug[u]) || st->grad_mb != op->mb)
        return op_error(x, i, "does not follow its microbatch's W", err);
    st->ug[u] = NULL;
    return reduce_unit(x, i, st, u, g, err);
}

/* A unit's collective that its pass ran (coll_seg_end): the list
 * reaches it. */
static void unit_early(struct exec *x, int i, struct stage_state *st)
{
    const struct zb_op *op = &x->ops->ops[i];

    x->coll_early[i] = false;
    if (op->kind == ZB_OP_RESHARD)
        st->ustate[op->unit] = U_SHARD;
}

int coll_init(struct exec *x, struct zb_error *err)
{
    const size_t per = x->nparam / (size_t)x->dp,
                 extra = x->nparam % (size_t)x->dp;

    /* MPI counts are int. */
    if (x->dp > 1 && x->nparam > INT_MAX)
        return zb_error_set(err, ZB_EUNSUPPORTED, "a stage of %zu "
                            "parameters is beyond an MPI collective's int "
                            "count", x->nparam);
    if (units(x) && x->be != &zb_executor_cpu)
        return zb_error_set(err, ZB_EUNSUPPORTED, "data_parallel.units > 1 "
                            "runs on the cpu backend only");
    x->shard_n = zb_xcalloc((size_t)x->dp, sizeof(int));
    x->shard_off = zb_xcalloc((size_t)x->dp, sizeof(int));
    for (int r = 0, off = 0; r < x->dp; r++) {
        x->shard_n[r] = (int)(per + ((size_t)r < extra));
        x->shard_off[r] = off;
        off += x->shard_n[r];
    }
    if (units(x) && !x->opt.synthetic && x->p->dp.units > x->net.layers)
        return zb_error_set(err, ZB_EINVAL, "data_parallel.units %d is "
                            "more than the model's %d layers a stage (a "
                            "unit is whole layers)", x->p->dp.units,
                            x->net.layers);
    for (int c = 0; c < x->p->vpp; c++) {
        struct stage_state *st = &x->st[c];
        const size_t k = (size_t)x->p->dp.units;
        st->reduce_req = st->unshard_req = NULL;
        st->reduce_op = st->unshard_op = -1;
        st->grad_mb = -1;
        if (!units(x))
            continue;
        st->uw = zb_xcalloc(3 * k, sizeof(float *));
        st->upiece = st->uw + k;
        st->ug = st->uw + 2 * k;
        st->ustate = zb_xcalloc(2 * k, sizeof(int));
        st->uop = st->ustate + k;
    }
    if (units(x))
        x->coll_early = zb_xcalloc((size_t)x->ops->n, sizeof(bool));
    if (x->opt.synthetic || !sharded_grad(x))
        return 0;
    for (int c = 0; c < x->p->vpp; c++) {
        struct stage_state *st = &x->st[c];
        const int me = x->replica;
        const size_t n = shard_len(x, me), off = (size_t)x->shard_off[me];
        st->gshard = exec_state_alloc(x, n);
        if (coll_per_mb(x)) {   /* each W allocates its own buffer */
            exec_state_free(x, st->g, x->nparam);
            st->g = NULL;
        }
        if (!zero3(x))
            continue;
        /* ZeRO-3 starts the run sharded: the first UNSHARD gathers. */
        st->wshard = exec_state_alloc(x, n);
        for (int u = 0; u < (unit_shards(x) ? x->p->dp.units : 0); u++) {
            int *cnt = zb_xmalloc(2 * (size_t)x->dp * sizeof(int));
            size_t a, b;
            unit_range(x, u, &a, &b, cnt, cnt + x->dp);
            x->m->copy(x->dev, st->wshard + shard_pos(x, u, me),
                       st->w + a + cnt[x->dp + me], (size_t)cnt[me]);
            free(cnt);
        }
        if (!unit_shards(x))
            x->m->copy(x->dev, st->wshard, st->w + off, n);
        exec_state_free(x, st->w, x->nparam);
        st->w = NULL;
    }
    return 0;
}

void coll_view(const struct exec *x, struct stage_state *st, float **w,
               float **g, size_t *n, size_t *off)
{
    /* ZeRO-3 on units: its shard is pieces (coll_shard_pieces). */
    *off = sharded_grad(x) && !unit_shards(x)
               ? (size_t)x->shard_off[x->replica] : 0;
    *n = sharded_grad(x) ? shard_len(x, x->replica) : x->nparam;
    *g = sharded_grad(x) ? st->gshard : st->g;
    *w = zero3(x) ? st->wshard : st->w + *off;
}

const float *coll_grad_shard(const struct exec *x, struct stage_state *st,
                            size_t *n)
{
    *n = shard_len(x, x->replica);
    return sharded_grad(x) ? st->gshard
                           : st->g + x->shard_off[x->replica];
}

static int op_error(struct exec *x, int i, const char *why,
                    struct zb_error *err)
{
    char desc[96];

    return zb_error_set(err, ZB_EILLEGAL, "op %d (%s) %s", i,
                        zb_op_describe(&x->ops->ops[i], desc, sizeof(desc)),
                        why);
}

int coll_mpi_post(const struct exec *x, enum coll_kind k, float *buf,
                  float *shard, MPI_Request *req, struct zb_error *err)
{
    const int me = x->replica;
    int rc;

    if (k == COLL_ALLREDUCE)
        rc = MPI_Iallreduce(MPI_IN_PLACE, buf, (int)x->nparam, MPI_FLOAT,
                            MPI_SUM, x->dp_comm, req);
    else if (k == COLL_REDUCE_SCATTER)
        rc = MPI_Ireduce_scatter(buf, shard, x->shard_n, MPI_FLOAT, MPI_SUM,
                                 x->dp_comm, req);
    else if (shard == buf + x->shard_off[me])
        rc = MPI_Iallgatherv(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, buf,
                             x->shard_n, x->shard_off, MPI_FLOAT, x->dp_comm,
                             req);
    else
        rc = MPI_Iallgatherv(shard, x->shard_n[me], MPI_FLOAT, buf,
                             x->shard_n, x->shard_off, MPI_FLOAT, x->dp_comm,
                             req);
    if (rc == MPI_SUCCESS)
        return 0;
    return exec_mpi_error(rc, k == COLL_ALLREDUCE ? "MPI_Iallreduce"
                              : k == COLL_REDUCE_SCATTER
                                  ? "MPI_Ireduce_scatter"
                                  : "MPI_Iallgatherv", err);
}

/* Wait on the host for *req, posted by op `op`, under the watchdog; 0
 * when done (*req is then NULL). */
static int wait_req(struct exec *x, void **req, int op, struct zb_error *err)
{
    bool done = false;
    int rc;

    if (!*req)
        return 0;
    if (op >= 0 && x->t[op].wait == 0)
        x->t[op].wait = exec_now() - x->epoch;
    if (op >= 0)
        watchdog_op(op, WD_WAIT);
    for (int spins = 0; !done; spins++) {
        if ((rc = x->be->coll_test(x, *req, &done, err)) < 0)
            return rc;
        if (!done)
            exec_pause(spins);
    }
    *req = NULL;
    if (op >= 0)
        x->t[op].done = exec_now() - x->epoch;
    return 0;
}

/* The stage's UNSHARD is complete for the compute timeline: on the
 * device where the backend can (consumed once), else on the host. */
static int await_unshard(struct exec *x, struct stage_state *st,
                         struct zb_error *err)
{
    int rc;

    if (!x->be->coll_consume)
        return wait_req(x, &st->unshard_req, st->unshard_op, err);
    if (!st->unshard_req || st->unshard_consumed)
        return 0;
    x->t[st->unshard_op].wait = exec_now() - x->epoch;
    watchdog_op(st->unshard_op, WD_WAIT);
    if ((rc = x->be->coll_consume(x, st->unshard_req, err)) < 0)
        return rc;
    st->unshard_consumed = true;
    return 0;
}

/* Reduce microbatch: the reduce-scatter of the microbatch's gradient
 * that g holds, summed into the shard. This replica first adds the shard
 * so far into its own slot of g, so the sum over the replicas that lands
 * in the shard counts it once: no receive buffer beyond the model's. */
static int post_reduce_mb(struct exec *x, int i, struct stage_state *st,
                          struct zb_error *err)
{
    const size_t n = (size_t)x->shard_n[x->replica],
                 off = (size_t)x->shard_off[x->replica];
    int rc;

    if (!st->g || st->grad_mb != x->ops->ops[i].mb)
        return op_error(x, i, "does not follow its microbatch's W", err);
    if (st->nreduced > 0)
        x->m->axpy(x->dev, st->g + off, 1.0f, st->gshard, n);
    rc = x->be->coll_post(x, COLL_REDUCE_SCATTER, i, st->g, st->gshard,
                          &st->reduce_req, err);
    if (rc < 0)
        return rc;
    st->grad_mb = -1;
    st->reduce_op = i;
    st->reduced = ++st->nreduced == x->p->microbatches;
    return 0;
}

/* A reduce-scatter is done: reducing per microbatch, its buffer goes. */
static void reduce_done(struct exec *x, struct stage_state *st)
{
    if (coll_per_mb(x) && st->grad_mb < 0) {
        exec_state_free(x, st->g, x->nparam);
        st->g = NULL;
    }
}

/* Reducing per step with ZeRO-3 on units: a reduce-scatter of each
 * unit's range of the gradient into its part of the shard. */
static int reduce_step_units(struct exec *x, int i, struct stage_state *st,
                             struct zb_error *err)
{
    const int me = x->replica;
    int *cnt = zb_xmalloc(2 * (size_t)x->dp * sizeof(int)), rc = 0;
    size_t a, b;

    for (int u = 0; u < x->p->dp.units && rc == MPI_SUCCESS; u++) {
        unit_range(x, u, &a, &b, cnt, cnt + x->dp);
        rc = MPI_Reduce_scatter(st->g + a, st->gshard + shard_pos(x, u, me),
                                cnt, MPI_FLOAT, MPI_SUM, x->dp_comm);
    }
    free(cnt);
    x->t[i].done = exec_now() - x->epoch;
    st->reduced = true;
    st->reduce_op = i;
    return rc == MPI_SUCCESS ? 0
                             : exec_mpi_error(rc, "MPI_Reduce_scatter", err);
}

static int post_reduce(struct exec *x, int i, struct stage_state *st,
                       struct zb_error *err)
{
    int rc;

    if (st->reduced)
        return op_error(x, i, "reduces the stage a second time", err);
    if (coll_per_mb(x))
        return post_reduce_mb(x, i, st, err);
    if (st->next_w != x->p->microbatches)
        return op_error(x, i, "comes before the stage's last W", err);
    if (unit_shards(x))
        return reduce_step_units(x, i, st, err);
    rc = x->be->coll_post(x, sharded_grad(x) ? COLL_REDUCE_SCATTER
                                             : COLL_ALLREDUCE,
                          i, st->g, st->gshard, &st->reduce_req, err);
    if (rc < 0)
        return rc;
    st->reduced = true;
    st->reduce_op = i;
    return 0;
}

/* ZeRO-3's weights live in one buffer at a time, as the model counts
 * them (zb_dp_gathered): the shard moves into its slot of the full
 * buffer at UNSHARD, which gathers in place, and back at RESHARD. The
 * copies are queued on the compute timeline, before the collective and
 * after the passes that read the weights. */
static void move_shard(struct exec *x, struct stage_state *st, bool in)
{
    const size_t n = (size_t)x->shard_n[x->replica],
                 off = (size_t)x->shard_off[x->replica];

    if (in) {
        st->w = exec_state_alloc(x, x->nparam);
        x->m->copy(x->dev, st->w + off, st->wshard, n);
        exec_state_free(x, st->wshard, n);
        st->wshard = NULL;
    } else {
        st->wshard = exec_state_alloc(x, n);
        x->m->copy(x->dev, st->wshard, st->w + off, n);
        exec_state_free(x, st->w, x->nparam);
        st->w = NULL;
    }
}

static int post_unshard(struct exec *x, int i, struct stage_state *st,
                        struct zb_error *err)
{
    int rc;

    if (!zero3(x))
        return op_error(x, i, "needs ZeRO-3", err);
    if (st->w)
        return op_error(x, i, "gathers weights that are gathered", err);
    /* The previous step's, consumed on the device and not yet seen done. */
    if ((rc = wait_req(x, &st->unshard_req, st->unshard_op, err)) < 0)
        return rc;
    move_shard(x, st, true);
    rc = x->be->coll_post(x, COLL_ALLGATHER, i, st->w,
                          st->w + x->shard_off[x->replica],
                          &st->unshard_req, err);
    if (rc < 0)
        return rc;
    st->unshard_op = i;
    st->unshard_consumed = false;
    return 0;
}

static int reshard(struct exec *x, int i, struct stage_state *st,
                   struct zb_error *err)
{
    int rc;

    if (!zero3(x))
        return op_error(x, i, "needs ZeRO-3", err);
    if (!st->w)
        return op_error(x, i, "frees weights that are not gathered", err);
    /* A stage with no pass between its UNSHARD and RESHARD; the release
     * is on the compute timeline, after the gather there. */
    if ((rc = await_unshard(x, st, err)) < 0)
        return rc;
    move_shard(x, st, false);
    return 0;
}

int coll_post(struct exec *x, int i, struct zb_error *err)
{
    const struct zb_op *op = &x->ops->ops[i];
    struct stage_state *st = exec_stage(x, op->stage);
    int rc;

    if (x->coll_early && x->coll_early[i]) {
        unit_early(x, i, st);
        exec_mem_sample(x);
        return 0;
    }
    x->t[i].start = exec_now() - x->epoch;
    if (x->dp < 2)
        return op_error(x, i, "needs data parallelism (dp >= 2)", err);
    if (x->opt.synthetic)
        rc = 0;     /* refused in main.c; kept safe */
    else if (units(x) && (op->kind != ZB_OP_REDUCE_GRAD || op->mb >= 0))
        rc = unit_coll(x, i, st, err);
    else if (op->kind == ZB_OP_REDUCE_GRAD)
        rc = post_reduce(x, i, st, err);
    else if (op->kind == ZB_OP_UNSHARD)
        rc = post_unshard(x, i, st, err);
    else
        rc = reshard(x, i, st, err);
    x->t[i].end = exec_now() - x->epoch;
    if (op->kind == ZB_OP_RESHARD)
        x->t[i].done = x->t[i].end;
    exec_mem_sample(x);
    return rc;
}

int coll_before_pass(struct exec *x, int i, struct stage_state *st,
                     struct zb_error *err)
{
    const enum zb_op_kind k = x->ops->ops[i].kind;
    int rc;

    if (x->dp < 2 || x->opt.synthetic)
        return 0;
    if ((k == ZB_OP_W || k == ZB_OP_BW) && st->reduced)
        return op_error(x, i, "runs after its stage's REDUCE_GRAD", err);
    /* On units the segments check what the pass needs (coll_seg_begin). */
    if (units(x))
        return 0;
    if ((k == ZB_OP_W || k == ZB_OP_BW) && coll_per_mb(x)) {
        if (st->grad_mb >= 0)
            return op_error(x, i, "comes before the REDUCE_GRAD of its "
                            "stage's previous W", err);
        if ((rc = wait_req(x, &st->reduce_req, st->reduce_op, err)) < 0)
            return rc;
        reduce_done(x, st);
    }
    if (!zero3(x))
        return 0;
    if (!st->w)
        return op_error(x, i, "runs on sharded weights (no UNSHARD before "
                        "it)", err);
    rc = await_unshard(x, st, err);
    watchdog_op(i, WD_RUN);
    return rc;
}

int coll_progress(struct exec *x, struct zb_error *err)
{
    for (int c = 0; c < x->p->vpp && x->dp > 1; c++) {
        void **reqs[2] = { &x->st[c].reduce_req, &x->st[c].unshard_req };
        const int ops[2] = { x->st[c].reduce_op, x->st[c].unshard_op };
        for (int k = 0; k < 2; k++) {
            bool done = false;
            int rc;
            if (!*reqs[k])
                continue;
            if ((rc = x->be->coll_test(x, *reqs[k], &done, err)) < 0)
                return rc;
            if (!done)
                continue;
            *reqs[k] = NULL;
            x->t[ops[k]].done = exec_now() - x->epoch;
            if (k == 0)
                reduce_done(x, &x->st[c]);
        }
    }
    return 0;
}

int coll_drain(struct exec *x, struct zb_error *err)
{
    int rc;

    if (x->dp < 2 || x->opt.synthetic)
        return 0;
    for (int c = 0; c < x->p->vpp; c++) {
        struct stage_state *st = &x->st[c];
        if (!st->reduced && coll_per_mb(x))
            return zb_error_set(err, ZB_EILLEGAL, "STEP: stage %d has %d "
                                "REDUCE_GRADs, expected one per microbatch "
                                "(%d)", st->stage, st->nreduced,
                                x->p->microbatches);
        if (!st->reduced)
            return zb_error_set(err, ZB_EILLEGAL, "STEP: stage %d has no "
                                "REDUCE_GRAD", st->stage);
        bool gathered = zero3(x) && st->w;
        for (int u = 0; units(x) && u < x->p->dp.units; u++) {
            if (st->ug[u])
                return zb_error_set(err, ZB_EILLEGAL, "STEP: stage %d unit "
                                    "%d has a gradient never reduced",
                                    st->stage, u);
            gathered |= zero3(x) && st->ustate[u] != U_SHARD;
        }
        if (gathered)
            return zb_error_set(err, ZB_EILLEGAL, "STEP: stage %d has no "
                                "RESHARD", st->stage);
        /* The optimizer updates the shard as one buffer (step.c). */
        if (unit_shards(x) && !st->wshard)
            split_shard(x, st, true);
        if ((rc = wait_req(x, &st->reduce_req, st->reduce_op, err)) < 0 ||
            (rc = wait_req(x, &st->unshard_req, st->unshard_op, err)) < 0)
            return rc;
        reduce_done(x, st);
        st->reduced = false;    /* for the next iteration */
        st->nreduced = 0;
        /* ZeRO-2/3 keep only the shard: the full buffer comes back with
         * the stage's first W of the next step (pass.c). */
        if (x->p->dp.zero >= 2) {
            exec_state_free(x, st->g, x->nparam);
            st->g = NULL;
        }
    }
    return 0;
}

int coll_gather_weights(struct exec *x, struct zb_error *err)
{
    if (x->dp < 2 || x->opt.synthetic || x->p->dp.zero < 1 || zero3(x))
        return 0;
    watchdog_phase("STEP: the all-gather of the updated weights");
    for (int c = 0; c < x->p->vpp; c++) {
        float *w = x->st[c].w;
        void *req = NULL;
        int rc = x->be->coll_post(x, COLL_ALLGATHER, -1, w,
                                  w + x->shard_off[x->replica], &req, err);
        if (rc < 0 || (rc = wait_req(x, &req, -1, err)) < 0)
            return rc;
    }
    /* The model charges this gather to REDUCE_GRAD: it ends the step. */
    x->gather_done = exec_now() - x->epoch;
    return 0;
}
