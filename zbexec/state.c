/* state.c - what one rank holds for a run: its stages' parameters and
 * gradients, the per-microbatch activations, the transfer table, and the
 * counted allocation behind the realized peak_memory and model state. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include "exec.h"
#include "zbsched/xalloc.h"

/* Synthetic runs count the profile's M_B units at the passes instead:
 * their buffers are headers only. */
float *exec_alloc(struct exec *x, size_t n, bool act)
{
    if (!x->opt.synthetic) {
        x->live += (double)n;
        if (x->live > x->live_peak)
            x->live_peak = x->live;
        if (act)
            x->mem += (double)n;
    }
    return x->m->alloc(x->dev, n);
}

void exec_free(struct exec *x, float *p, size_t n, bool act)
{
    if (!p)
        return;
    if (!x->opt.synthetic) {
        x->live -= (double)n;
        if (act)
            x->mem -= (double)n;
    }
    x->m->release(x->dev, p);
}

float *exec_counted(struct exec *x, float *p, size_t n)
{
    if (!x->opt.synthetic) {
        x->live += (double)n;
        if (x->live > x->live_peak)
            x->live_peak = x->live;
    }
    return p;
}

float *exec_state_alloc(struct exec *x, size_t n)
{
    x->state += (double)n;
    return x->m->alloc(x->dev, n);
}

void exec_state_free(struct exec *x, float *p, size_t n)
{
    if (!p)
        return;
    x->state -= (double)n;
    x->m->release(x->dev, p);
}

/* The total adds the two in the profile's units: activations by M_B (the
 * floats of one F), model state by bytes (data_parallel.bytes_per_unit),
 * the two rules the simulator's total_memory adds. */
void exec_mem_sample(struct exec *x)
{
    double total, state = fmax(x->state, x->state_win);

    x->state_win = 0;
    if (x->mem > x->mem_peak)
        x->mem_peak = x->mem;
    if (x->opt.synthetic || x->dp < 2)    /* dp 1 reports neither */
        return;
    if (state > x->state_peak)
        x->state_peak = state;
    total = x->mem / exec_mem_unit(x) * x->p->m_b +
            state * sizeof(float) / x->p->dp.unit_bytes;
    if (total > x->total_peak)
        x->total_peak = total;
}

/* A pass on units holds its units' weights and gradients in turn: the
 * model adds the most it holds between its start and the next pass's to
 * the activations it leaves (zb_zero_state_peak()), so the end of the
 * pass takes the most noted here. */
void exec_state_sample(struct exec *x)
{
    if (x->state > x->state_win)
        x->state_win = x->state;
}

void exec_keep(struct exec *x, size_t n)
{
    if (!x->opt.synthetic)
        x->mem += (double)n;
}

/* F keeps its input (header and payload) and every layer's output; the
 * transformer's F what each block keeps, and the output (tf_pass.c). */
double exec_mem_unit(const struct exec *x)
{
    double f = (double)x->nact;

    if (!x->tf)
        return MSG_HDR_FLOATS + (double)(x->net.layers + 1) * (double)x->nact;
    for (int k = 0; k < TF_NKEEP; k++)
        f += (double)x->tf->layers * tf_keep_floats(x->tf, (enum tf_keep)k);
    return f;
}

int exec_nkeep(const struct exec *x)
{
    return x->tf ? x->tf->layers * TF_NKEEP + 1 : x->net.layers;
}

int exec_ngrad(const struct exec *x)
{
    return x->tf ? x->tf->layers * TF_NGRAD : x->net.layers;
}

void exec_init_params(const struct exec *x, int stage, float *host)
{
    if (x->tf)
        tf_init_params(x->tf, x->opt.seed, stage, host);
    else
        mlp_init_params(&x->net, x->opt.seed, stage, host);
}

int exec_global_mb(const struct exec *x, int mb)
{
    return x->replica * x->p->microbatches + mb;
}

/* In float, as the reference computes it: (float)m * batch for dp 1.
 * The transformer's is a mean over hidden too, so its gradients do not
 * grow with the width and the default --lr trains every shape. */
float exec_loss_scale(const struct exec *x)
{
    if (x->tf)
        return 1.0f / ((float)(x->dp * x->p->microbatches) * x->net.batch *
                       (float)x->tf->hidden);
    return 1.0f / ((float)(x->dp * x->p->microbatches) * x->net.batch);
}

void exec_model_name(const struct exec *x, char *buf, size_t n)
{
    const struct tf *t = x->tf;

    if (t)
        snprintf(buf, n, "transformer:layers=%d,hidden=%d,heads=%d,seq=%d,"
                 "ffn=%d,batch=%d", t->layers, t->hidden, t->heads, t->seq,
                 t->ffn, t->batch);
    else
        snprintf(buf, n, "mlp:layers=%d,hidden=%d,batch=%d", x->net.layers,
                 x->net.hidden, x->net.batch);
}

struct stage_state *exec_stage(struct exec *x, int stage)
{
    return &x->st[zb_profile_stage_chunk(x->p, stage)];
}

static void init_stage(struct exec *x, struct stage_state *st, int stage,
                       float *host)
{
    const int mbs = x->p->microbatches;

    st->stage = stage;
    st->mbs = zb_xcalloc((size_t)mbs, sizeof(*st->mbs));
    st->pending = zb_xcalloc((size_t)mbs, sizeof(*st->pending));
    if (x->opt.synthetic)
        return;
    for (int i = 0; i < mbs; i++) {
        st->mbs[i].y = zb_xcalloc((size_t)exec_nkeep(x), sizeof(float *));
        st->mbs[i].dz = zb_xcalloc((size_t)exec_ngrad(x), sizeof(float *));
    }
    st->w = exec_state_alloc(x, x->nparam);
    st->g = exec_state_alloc(x, x->nparam);
    st->saved = x->m->alloc(x->dev, x->nparam);
    st->dw = x->m->alloc(x->dev, x->nparam);
    exec_init_params(x, stage, host);
    x->m->upload(x->dev, st->w, host, x->nparam);
    if (stage == 0)
        st->input = x->m->alloc(x->dev, (size_t)mbs * x->nact);
    if (stage == x->nstages - 1)
        st->target = x->m->alloc(x->dev, (size_t)mbs * x->nact);
    if (stage == x->nstages - 1)
        st->loss = x->m->alloc(x->dev, (size_t)mbs);
}

/* Bytes of host memory this rank may still take: MemAvailable, or less
 * under an address-space limit (ulimit -v); 0 when neither is known. */
static double host_available(void)
{
    FILE *f = fopen("/proc/meminfo", "r");
    double avail = 0, kib;
    char line[128];
    struct rlimit rl;

    while (f && fgets(line, sizeof(line), f))
        if (sscanf(line, "MemAvailable: %lf kB", &kib) == 1)
            avail = kib * 1024;
    if (f)
        fclose(f);
    if (getrlimit(RLIMIT_AS, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY &&
        (avail == 0 || (double)rl.rlim_cur < avail))
        avail = (double)rl.rlim_cur;
    return avail;
}

/* What this rank's model will hold at its peak, in bytes: per chunk the
 * weights, gradients and the two working copies, the first stage's inputs
 * and the last's targets, and each microbatch in flight (the schedule's
 * predicted peak, in M_B units) keeping every layer's output and input
 * gradient. A floor, not an exact count: enough to refuse a model that
 * cannot fit before allocating any of it. */
static double model_bytes(const struct exec *x)
{
    const struct zb_profile *p = x->p;
    double floats = ((double)p->vpp * 4 + 1) * x->nparam;
    double peak = x->sched.predicted.ranks[x->rank].peak_memory;

    for (int c = 0; c < p->vpp; c++) {
        int s = zb_profile_rank_stage(p, x->rank, c);
        if (s == 0 || s == x->nstages - 1)
            floats += (double)p->microbatches * x->nact;
    }
    if (p->m_b > 0 && isfinite(peak))
        floats += ceil(peak / p->m_b - 1e-9) *
                  (x->tf ? tf_mb_floats(x->tf)
                         : 2.0 * x->net.layers * x->nact);
    return floats * sizeof(float);
}

int exec_state_init(struct exec *x, struct zb_error *err)
{
    const struct zb_profile *p = x->p;
    const int iters = x->opt.iters, n = x->ops->n;
    float *host;

    x->net = (struct mlp){ x->opt.layers, x->opt.hidden, x->opt.batch };
    x->nact = mlp_nact(&x->net);
    x->nparam = mlp_nparam(&x->net);
    if (x->opt.transformer) {
        const struct exec_opts *o = &x->opt;
        x->tf_shape = (struct tf){ o->layers, o->hidden, o->heads, o->seq,
                                   o->ffn, o->batch };
        x->tf = &x->tf_shape;
        x->net = (struct mlp){ o->layers, o->hidden, o->batch * o->seq };
        x->nact = tf_nact(x->tf);
        x->nparam = tf_nparam(x->tf);
    }
    /* The cpu backend's tensors live in host memory: refuse a model that
     * cannot fit there with the numbers, rather than abort midway. */
    if (!x->opt.synthetic && !strcmp(x->be->name, "cpu")) {
        double need = model_bytes(x), avail = host_available();
        char name[160];
        exec_model_name(x, name, sizeof(name));
        if (avail > 0 && need > avail)
            return zb_error_set(err, ZB_EINVAL, "--model %s needs at least "
                                "%.1f GiB on this rank, more than the %.1f "
                                "GiB available", name, need / (1 << 30),
                                avail / (1 << 30));
    }
    host = zb_xmalloc(x->nparam * sizeof(float));
    x->st = zb_xcalloc((size_t)p->vpp, sizeof(*x->st));
    for (int c = 0; c < p->vpp; c++)
        init_stage(x, &x->st[c], zb_profile_rank_stage(p, x->rank, c),
                   host);
    free(host);
    x->xf = zb_xcalloc((size_t)2 * x->nstages * p->microbatches,
                    sizeof(*x->xf));
    x->t = zb_xcalloc((size_t)n, sizeof(*x->t));
    x->marks = zb_xcalloc((size_t)3 * n + 1, sizeof(double));
    x->samples = zb_xcalloc((size_t)iters, sizeof(*x->samples));
    x->steps = zb_xcalloc((size_t)iters, sizeof(*x->steps));
    x->durations = zb_xcalloc((size_t)p->vpp * 3 * iters * p->microbatches,
                           sizeof(double));
    x->mem_delta = zb_xcalloc((size_t)p->vpp * 3, sizeof(double));
    for (int k = 0; k < 3 * p->vpp; k++)
        x->mem_delta[k] = NAN;
    return 0;
}

static void release_stage(struct exec *x, struct stage_state *st)
{
    const int mbs = x->p->microbatches;

    for (int i = 0; st->mbs && i < mbs; i++) {
        struct mb_state *b = &st->mbs[i];
        x->m->release(x->dev, b->x0);
        for (int l = 0; b->y && l < exec_nkeep(x); l++)
            x->m->release(x->dev, b->y[l]);
        for (int l = 0; b->dz && l < exec_ngrad(x); l++)
            x->m->release(x->dev, b->dz[l]);
        free(b->y);
        free(b->dz);
        if (st->pending)
            x->m->release(x->dev, st->pending[i]);
    }
    free(st->mbs);
    free(st->pending);
    x->m->release(x->dev, st->w);
    x->m->release(x->dev, st->g);
    x->m->release(x->dev, st->saved);
    x->m->release(x->dev, st->dw);
    x->m->release(x->dev, st->input);
    x->m->release(x->dev, st->target);
    x->m->release(x->dev, st->loss);
    x->m->release(x->dev, st->gshard);
    x->m->release(x->dev, st->wshard);
    for (int u = 0; st->uw && u < x->p->dp.units; u++) {
        x->m->release(x->dev, st->uw[u]);
        x->m->release(x->dev, st->upiece[u]);
        x->m->release(x->dev, st->ug[u]);
    }
    free(st->uw);
    free(st->ustate);
}

void exec_release(struct exec *x)
{
    if (x->m) {
        for (int c = 0; x->st && c < x->p->vpp; c++)
            release_stage(x, &x->st[c]);
        for (long i = 0; x->xf &&
                         i < 2L * x->nstages * x->p->microbatches; i++)
            x->m->release(x->dev, x->xf[i].buf);
        x->m->release(x->dev, x->seg_carry);
    }
    for (int i = 0; i < x->nsending; i++)
        free(x->sending[i]);
    free(x->sending);
    if (x->be && x->dev)
        x->be->fini(x);
    free(x->st);
    free(x->xf);
    free(x->t);
    free(x->marks);
    free(x->samples);
    free(x->steps);
    free(x->durations);
    free(x->mem_delta);
    free(x->shard_n);
    free(x->shard_off);
    free(x->coll_early);
    if (x->trace)
        fclose(x->trace);
    free(x->trace_buf);
    zb_schedule_release(&x->sched);
}
