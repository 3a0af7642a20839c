/* reference.c - --check: the same model and data run sequentially in one
 * process on the CPU math table, compared with what the pipeline holds.
 *
 * Compared: the loss of every iteration, the last iteration's gradients
 * and the final weights of this rank's stages (with ZeRO >= 1 the shard
 * this rank holds). With data parallelism the reference runs the whole
 * global batch, each replica's microbatches into a gradient of its own,
 * then adds those in replica order. With the cpu backend the comparison
 * is exact (same kernels, same inputs, same accumulation order; for two
 * replicas MPI's sum is a + b either way round); with cuda, more than
 * two replicas, whose MPI reduction order is the library's, or reducing
 * per microbatch, which sums over the replicas before the microbatches,
 * it allows 1e-3 of the stage's largest magnitude (the mlp) or the bf16
 * bound below of each tensor's (the transformer). */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "exec.h"
#include "zbsched/xalloc.h"

#define TOLERANCE 1e-3
/* The transformer on the cuda backend stores its tensors in bf16 (8-bit
 * significand: unit roundoff u = 2^-8, every store rounds) and each
 * block on the path from the loss to a weight adds its roundings: 4u per
 * block of the model, plus 4u, of the tensor's largest magnitude
 * (docs/zbexec.md, "The transformer", has the errors measured). */
#define TF_U (1.0 / 256)

static double tf_tolerance(const struct exec *x)
{
    return 4 * TF_U * (1 + x->nstages * x->tf->layers);
}

struct ref {
    int nstages, layers;
    int nkeep, ngrad;           /* y and dz entries per stage */
    float **w, **g;             /* per stage: weights, global gradient */
    float **part;               /* per stage: one replica's gradient */
    float *dw, *x, *t, *dy, *dx;
    float **y, **dz;            /* per stage, nkeep and ngrad each */
    double *loss;               /* per iteration */
};

/* Floats of y[i] and dz[i] of a stage: the mlp's all nact. */
static size_t y_floats(const struct exec *x, int i)
{
    if (!x->tf || i == x->tf->layers * TF_NKEEP)
        return x->nact;
    return tf_keep_floats(x->tf, (enum tf_keep)(i % TF_NKEEP));
}

static size_t dz_floats(const struct exec *x, int i)
{
    return x->tf ? tf_grad_floats(x->tf, (enum tf_grad)(i % TF_NGRAD))
                 : x->nact;
}

static void ref_init(struct ref *r, const struct exec *x)
{
    const size_t na = x->nact, np = x->nparam;
    const int S = x->nstages, NY = exec_nkeep(x), NZ = exec_ngrad(x);

    r->nstages = S;
    r->layers = x->net.layers;
    r->nkeep = NY;
    r->ngrad = NZ;
    r->w = zb_xcalloc((size_t)S, sizeof(float *));
    r->g = zb_xcalloc((size_t)S, sizeof(float *));
    r->part = zb_xcalloc((size_t)S, sizeof(float *));
    r->y = zb_xcalloc((size_t)S * NY, sizeof(float *));
    r->dz = zb_xcalloc((size_t)S * NZ, sizeof(float *));
    for (int s = 0; s < S; s++) {
        r->w[s] = zb_xmalloc(np * sizeof(float));
        r->g[s] = zb_xcalloc(np, sizeof(float));
        r->part[s] = zb_xcalloc(np, sizeof(float));
        exec_init_params(x, s, r->w[s]);
        for (int l = 0; l < NY; l++)
            r->y[s * NY + l] = zb_xcalloc(y_floats(x, l), sizeof(float));
        for (int l = 0; l < NZ; l++)
            r->dz[s * NZ + l] = zb_xcalloc(dz_floats(x, l), sizeof(float));
    }
    r->dw = zb_xcalloc(np, sizeof(float));
    r->x = zb_xcalloc(na, sizeof(float));
    r->t = zb_xcalloc(na, sizeof(float));
    r->dy = zb_xcalloc(na, sizeof(float));
    r->dx = zb_xcalloc(na, sizeof(float));
    r->loss = zb_xcalloc((size_t)x->opt.iters, sizeof(double));
}

static void ref_release(struct ref *r)
{
    for (int s = 0; s < r->nstages; s++) {
        free(r->w[s]);
        free(r->g[s]);
        free(r->part[s]);
    }
    for (int k = 0; k < r->nstages * r->nkeep; k++)
        free(r->y[k]);
    for (int k = 0; k < r->nstages * r->ngrad; k++)
        free(r->dz[k]);
    free(r->w);
    free(r->g);
    free(r->part);
    free(r->y);
    free(r->dz);
    free(r->dw);
    free(r->x);
    free(r->t);
    free(r->dy);
    free(r->dx);
    free(r->loss);
}

/* A stage's weight gradient r->dw joins its replica's sum. */
static void ref_add(struct ref *r, const struct exec *x, int s, bool first)
{
    if (first)
        memcpy(r->part[s], r->dw, x->nparam * sizeof(float));
    else
        zb_math_cpu.axpy(NULL, r->part[s], 1.0f, r->dw, x->nparam);
}

/* ref_microbatch for the transformer, its data already in r->x, r->t;
 * y[L * TF_NKEEP] of each stage is its output, as in tf_pass.c. */
static double ref_transformer(struct ref *r, const struct exec *x, int it,
                              int mb, bool first)
{
    const struct zb_math *m = &zb_math_cpu;
    const int S = r->nstages, NY = r->nkeep, NZ = r->ngrad;
    float loss = 0;

    for (int s = 0; s < S; s++)
        tf_forward(m, NULL, x->tf, r->w[s],
                   s ? r->y[(s - 1) * NY + NY - 1] : r->x, &r->y[s * NY],
                   r->y[s * NY + NY - 1]);
    for (int s = S - 1; s >= 0; s--) {
        tf_backward_input(m, NULL, x->tf, r->w[s],
                          (const float *const *)&r->y[s * NY],
                          r->y[s * NY + NY - 1], s == S - 1 ? NULL : r->dy,
                          &r->dz[s * NZ], s ? r->dx : NULL, r->t,
                          exec_loss_scale(x), &loss);
        tf_backward_weight(m, NULL, x->tf,
                           (const float *const *)&r->y[s * NY],
                           (const float *const *)&r->dz[s * NZ], r->dw);
        step_inject(x, m, NULL, s, mb, it, r->dw);
        ref_add(r, x, s, first);
        if (s)
            memcpy(r->dy, r->dx, x->nact * sizeof(float));
    }
    return loss;
}

/* One microbatch through every stage and back: F of all stages, then B
 * and W from the last stage down (W order per stage is microbatch order,
 * as the pipeline's accumulation enforces). mb is global; first is true
 * for its replica's first. */
static double ref_microbatch(struct ref *r, const struct exec *x, int it,
                             int mb, bool first)
{
    const struct zb_math *m = &zb_math_cpu;
    const int S = r->nstages, L = r->layers;
    const size_t na = x->nact;
    const float scale = exec_loss_scale(x);
    float loss = 0;

    mlp_data(&x->net, x->opt.seed, false, it, mb, r->x);
    mlp_data(&x->net, x->opt.seed, true, it, mb, r->t);
    if (x->tf)
        return ref_transformer(r, x, it, mb, first);
    for (int s = 0; s < S; s++)
        mlp_forward(m, NULL, &x->net, r->w[s],
                    s ? r->y[(s - 1) * L + L - 1] : r->x, &r->y[s * L],
                    s == S - 1);
    for (int s = S - 1; s >= 0; s--) {
        const float *in = s ? r->y[(s - 1) * L + L - 1] : r->x;
        mlp_backward_input(m, NULL, &x->net, r->w[s],
                           (const float *const *)&r->y[s * L],
                           s == S - 1 ? NULL : r->dy, &r->dz[s * L],
                           s ? r->dx : NULL, r->t, scale, &loss);
        mlp_backward_weight(m, NULL, &x->net, in,
                            (const float *const *)&r->y[s * L],
                            (const float *const *)&r->dz[s * L], r->dw);
        step_inject(x, m, NULL, s, mb, it, r->dw);
        ref_add(r, x, s, first);
        if (s)
            memcpy(r->dy, r->dx, na * sizeof(float));
    }
    return loss;
}

static void ref_run(struct ref *r, const struct exec *x)
{
    double *sums = zb_xcalloc((size_t)r->nstages, sizeof(double));
    int *bad = zb_xcalloc((size_t)r->nstages, sizeof(int));

    for (int it = 0; it < x->opt.iters; it++) {
        struct step_info info = { 0 };
        float factor;
        const int mbs = x->p->microbatches;
        r->loss[it] = 0;
        for (int rep = 0; rep < x->dp; rep++) {
            double loss = 0;
            for (int mb = 0; mb < mbs; mb++)
                loss += ref_microbatch(r, x, it, rep * mbs + mb, mb == 0);
            r->loss[it] += loss;
            for (int s = 0; s < r->nstages; s++)
                if (rep == 0)
                    memcpy(r->g[s], r->part[s], x->nparam * sizeof(float));
                else
                    zb_math_cpu.axpy(NULL, r->g[s], 1.0f, r->part[s],
                                     x->nparam);
        }
        for (int s = 0; s < r->nstages; s++)
            step_stage_stats(x, r->g[s], &sums[s], &bad[s]);
        step_decide(x, sums, bad, &info, &factor);
        if (!info.nonfinite)
            for (int s = 0; s < r->nstages; s++)
                zb_math_cpu.axpy(NULL, r->w[s], factor, r->g[s], x->nparam);
    }
    free(sums);
    free(bad);
}

static bool same(double a, double b, double tol)
{
    if (isnan(a) || isnan(b))
        return isnan(a) && isnan(b);
    return tol == 0 ? a == b : fabs(a - b) <= tol;
}

/* rel (0: exact) of the largest finite magnitude of ref[0..n-1]. */
static double bound(const float *ref, size_t n, double rel)
{
    double mx = 0;

    if (rel == 0)
        return 0;
    for (size_t i = 0; i < n; i++)
        if (isfinite(ref[i]) && fabs(ref[i]) > mx)
            mx = fabs(ref[i]);
    return rel * (mx > 0 ? mx : 1);
}

/* The transformer's tensor that holds parameter i: offset and length. */
static size_t tf_span(const struct exec *x, size_t i, size_t *len)
{
    int layer;
    const char *name;
    size_t k, off = 0;

    tf_param_name(x->tf, i, &layer, &name, &k);
    for (int t = 0; t < 4; t++)
        if (i < (off = tf_tensor(x->tf, layer, t, len)) + *len)
            break;
    return off;
}

/* got holds parameters off .. off+n-1 of the stage, want all of them.
 * The mlp's bound is one for the stage, the transformer's one per tensor
 * (docs/zbexec.md, "The transformer"). */
static int compare(const struct exec *x, int stage, const char *what,
                   const float *got, size_t n, size_t off, const float *want,
                   bool exact, struct zb_error *err)
{
    const size_t per = mlp_param_offset(&x->net, 1);
    const size_t hh = (size_t)x->net.hidden * x->net.hidden;
    double tol = bound(want, x->nparam, exact ? 0 : TOLERANCE);
    size_t end = 0;

    for (size_t i = off; i < off + n; i++) {
        if (x->tf && i >= end) {
            size_t len, start = tf_span(x, i, &len);
            end = start + len;
            tol = bound(want + start, len, exact ? 0 : tf_tolerance(x));
        }
        if (same(got[i - off], want[i], tol))
            continue;
        if (x->tf) {
            int layer;
            const char *name;
            size_t k;
            tf_param_name(x->tf, i, &layer, &name, &k);
            return zb_error_set(err, ZB_EILLEGAL, "check failed: stage %d "
                                "block %d %s %s[%zu]: pipeline %.9g, "
                                "sequential %.9g (tolerance %.3g)", stage,
                                layer, what, name, k, (double)got[i - off],
                                (double)want[i], tol);
        }
        size_t l = i / per, k = i % per;
        return zb_error_set(err, ZB_EILLEGAL, "check failed: stage %d "
                            "layer %zu %s %s[%zu]: pipeline %.9g, "
                            "sequential %.9g", stage, l, what,
                            k < hh ? "W" : "b", k < hh ? k : k - hh,
                            (double)got[i - off], (double)want[i]);
    }
    return 0;
}

/* got holds this replica's shard: its pieces in order (coll_shard.c). */
static int compare_shard(const struct exec *x, int stage, const char *what,
                         const float *got, const float *want, bool exact,
                         struct zb_error *err)
{
    const int k = x->dp > 1 ? x->p->dp.units : 1;
    size_t *off = zb_xmalloc(2 * (size_t)k * sizeof(size_t)), *len = off + k;
    int n = coll_shard_pieces(x, x->replica, off, len), rc = 0;

    for (int u = 0; u < n && !rc; got += len[u], u++)
        rc = compare(x, stage, what, got, len[u], off[u], want, exact, err);
    free(off);
    return rc;
}

int reference_check(struct exec *x, bool *exact, struct zb_error *err)
{
    struct ref r;
    float *host = zb_xmalloc(x->nparam * sizeof(float));
    int rc = 0;

    *exact = x->be == &zb_executor_cpu && x->dp <= 2 && !coll_per_mb(x);
    watchdog_phase("--check: the sequential reference run");
    ref_init(&r, x);
    ref_run(&r, x);
    for (int it = 0; it < x->opt.iters && !rc; it++) {
        double tol = *exact ? 0 : (x->tf ? tf_tolerance(x) : TOLERANCE) *
                                      fabs(r.loss[it]);
        if (!same(x->steps[it].loss, r.loss[it], tol))
            rc = zb_error_set(err, ZB_EILLEGAL, "check failed: iteration "
                              "%d loss: pipeline %.17g, sequential %.17g",
                              it + 1, x->steps[it].loss, r.loss[it]);
    }
    for (int c = 0; c < x->p->vpp && !rc; c++) {
        struct stage_state *st = &x->st[c];
        float *w, *g;
        size_t n, off;
        /* What the step updated: the whole stage or this rank's shard;
         * ZeRO-1/2 hold the whole of w again after their all-gather. */
        coll_view(x, st, &w, &g, &n, &off);
        x->m->download(x->dev, host, g, n);
        rc = compare_shard(x, st->stage, "gradient", host, r.g[st->stage],
                           *exact, err);
        if (rc)
            break;
        x->m->download(x->dev, host, st->w ? st->w : w,
                       st->w ? x->nparam : n);
        rc = st->w ? compare(x, st->stage, "weight", host, x->nparam, 0,
                             r.w[st->stage], *exact, err)
                   : compare_shard(x, st->stage, "weight", host,
                                   r.w[st->stage], *exact, err);
    }
    ref_release(&r);
    free(host);
    return rc;
}
