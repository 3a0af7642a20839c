/* coll_shard.c - where the data-parallel shards lie: what a run shards
 * (its ZeRO level, its units), each replica's shard and each unit's range
 * of a stage's parameters, the buffers coll_init sets up and the views of
 * them that the optimizer and the step check take. The layout is stated
 * once here for coll.c, coll_units.c, step.c and reference.c. */
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include "coll_int.h"
#include "zbsched/xalloc.h"

bool coll_zero3(const struct exec *x)
{
    return x->dp > 1 && x->p->dp.zero >= 3;
}

bool coll_sharded_grad(const struct exec *x)
{
    return x->dp > 1 && x->p->dp.zero >= 1;
}

bool coll_per_mb(const struct exec *x)
{
    return x->dp > 1 && zb_dp_per_mb(x->p);
}

bool coll_units(const struct exec *x)
{
    return x->dp > 1 && zb_dp_units(x->p);
}

bool coll_unit_shards(const struct exec *x)
{
    return coll_zero3(x) && coll_units(x);
}

/* The first parameter of layer l of a stage (l = L: the stage's end). */
static size_t layer_off(const struct exec *x, int l)
{
    size_t len;

    if (l >= x->net.layers)
        return x->nparam;
    return x->tf ? tf_tensor(x->tf, l, 0, &len)
                 : mlp_param_offset(&x->net, l);
}

void coll_unit_layers(const struct exec *x, int u, int *l0, int *l1)
{
    const int n = x->net.layers, k = x->p->dp.units;

    *l0 = u * n / k;
    *l1 = (u + 1) * n / k;
}

void coll_unit_range(const struct exec *x, int u, size_t *a, size_t *b,
                     int *cnt, int *dsp)
{
    int l0, l1;

    coll_unit_layers(x, u, &l0, &l1);
    *a = layer_off(x, l0);
    *b = layer_off(x, l1);
    for (int r = 0, at = 0; cnt && r < x->dp; r++) {
        size_t lo = (size_t)x->shard_off[r], hi = lo + (size_t)x->shard_n[r];
        if (coll_unit_shards(x)) {
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

size_t coll_shard_pos(const struct exec *x, int u, int r)
{
    int *cnt = zb_xmalloc(2 * (size_t)x->dp * sizeof(int)), *dsp = cnt + x->dp;
    size_t a, b, pos = 0;

    for (int v = 0; v <= u; v++) {
        coll_unit_range(x, v, &a, &b, cnt, dsp);
        if (!coll_unit_shards(x))
            pos = cnt[r] > 0 ? a + (size_t)dsp[r] - (size_t)x->shard_off[r]
                             : 0;
        else if (v < u)
            pos += (size_t)cnt[r];
    }
    free(cnt);
    return pos;
}

size_t coll_shard_len(const struct exec *x, int r)
{
    const int k = x->p->dp.units;

    if (!coll_unit_shards(x))
        return (size_t)x->shard_n[r];
    size_t a, b, n = 0, d = (size_t)x->dp;
    for (int u = 0; u < k; u++) {
        coll_unit_range(x, u, &a, &b, NULL, NULL);
        n += (b - a) / d + ((size_t)r < (b - a) % d);
    }
    return n;
}

int coll_shard_pieces(const struct exec *x, int r, size_t *off,
                      size_t *len)
{
    int *cnt, *dsp, k = x->p->dp.units;
    size_t a, b;

    if (!coll_sharded_grad(x)) {
        off[0] = 0;
        len[0] = x->nparam;
        return 1;
    }
    if (!coll_unit_shards(x)) {
        off[0] = (size_t)x->shard_off[r];
        len[0] = (size_t)x->shard_n[r];
        return 1;
    }
    cnt = zb_xmalloc(2 * (size_t)x->dp * sizeof(int));
    dsp = cnt + x->dp;
    for (int u = 0; u < k; u++) {
        coll_unit_range(x, u, &a, &b, cnt, dsp);
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
        float *tmp = zb_xmalloc((coll_shard_len(x, r) + 1) * sizeof(float));
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

int coll_init(struct exec *x, struct zb_error *err)
{
    const size_t per = x->nparam / (size_t)x->dp,
                 extra = x->nparam % (size_t)x->dp;

    /* MPI counts are int. */
    if (x->dp > 1 && x->nparam > INT_MAX)
        return zb_error_set(err, ZB_EUNSUPPORTED, "a stage of %zu "
                            "parameters is beyond an MPI collective's int "
                            "count", x->nparam);
    if (coll_units(x) && x->be != &zb_executor_cpu)
        return zb_error_set(err, ZB_EUNSUPPORTED, "data_parallel.units > 1 "
                            "runs on the cpu backend only");
    x->shard_n = zb_xcalloc((size_t)x->dp, sizeof(int));
    x->shard_off = zb_xcalloc((size_t)x->dp, sizeof(int));
    for (int r = 0, off = 0; r < x->dp; r++) {
        x->shard_n[r] = (int)(per + ((size_t)r < extra));
        x->shard_off[r] = off;
        off += x->shard_n[r];
    }
    if (coll_units(x) && !x->opt.synthetic && x->p->dp.units > x->net.layers)
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
        if (!coll_units(x))
            continue;
        st->uw = zb_xcalloc(3 * k, sizeof(float *));
        st->upiece = st->uw + k;
        st->ug = st->uw + 2 * k;
        st->ustate = zb_xcalloc(2 * k, sizeof(int));
        st->uop = st->ustate + k;
    }
    if (coll_units(x))
        x->coll_early = zb_xcalloc((size_t)x->ops->n, sizeof(bool));
    if (x->opt.synthetic || !coll_sharded_grad(x))
        return 0;
    for (int c = 0; c < x->p->vpp; c++) {
        struct stage_state *st = &x->st[c];
        const int me = x->replica;
        const size_t n = coll_shard_len(x, me), off = (size_t)x->shard_off[me];
        st->gshard = exec_state_alloc(x, n);
        if (coll_per_mb(x)) {   /* each W allocates its own buffer */
            exec_state_free(x, st->g, x->nparam);
            st->g = NULL;
        }
        if (!coll_zero3(x))
            continue;
        /* ZeRO-3 starts the run sharded: the first UNSHARD gathers. */
        st->wshard = exec_state_alloc(x, n);
        for (int u = 0; u < (coll_unit_shards(x) ? x->p->dp.units : 0); u++) {
            int *cnt = zb_xmalloc(2 * (size_t)x->dp * sizeof(int));
            size_t a, b;
            coll_unit_range(x, u, &a, &b, cnt, cnt + x->dp);
            x->m->copy(x->dev, st->wshard + coll_shard_pos(x, u, me),
                       st->w + a + cnt[x->dp + me], (size_t)cnt[me]);
            free(cnt);
        }
        if (!coll_unit_shards(x))
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
    *off = coll_sharded_grad(x) && !coll_unit_shards(x)
               ? (size_t)x->shard_off[x->replica] : 0;
    *n = coll_sharded_grad(x) ? coll_shard_len(x, x->replica) : x->nparam;
    *g = coll_sharded_grad(x) ? st->gshard : st->g;
    *w = coll_zero3(x) ? st->wshard : st->w + *off;
}

const float *coll_grad_shard(const struct exec *x, struct stage_state *st,
                            size_t *n)
{
    *n = coll_shard_len(x, x->replica);
    return coll_sharded_grad(x) ? st->gshard
                                : st->g + x->shard_off[x->replica];
}
