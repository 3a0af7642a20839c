/* model.c - the MLP that zbexec trains: a deterministic network split into
 * stages, with F, B (input gradient only) and W (weight gradient only) as
 * separate sequences of calls on a backend's math table.
 *
 * Keeping B free of weight-gradient GEMMs matters: a B that secretly did
 * W's work would make W look free and every B/W-split schedule too good. */
#include <math.h>
#include "exec.h"

size_t mlp_nact(const struct mlp *n)
{
    return (size_t)n->batch * (size_t)n->hidden;
}

size_t mlp_nparam(const struct mlp *n)
{
    return (size_t)n->layers * ((size_t)n->hidden * n->hidden + n->hidden);
}

size_t mlp_param_offset(const struct mlp *n, int layer)
{
    return (size_t)layer * ((size_t)n->hidden * n->hidden + n->hidden);
}

/* splitmix64: a counter-based generator, so any rank can produce any
 * value without replaying a sequence. */
static uint64_t mix(uint64_t z)
{
    z += 0x9e3779b97f4a7c15ULL;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

float model_uniform(uint64_t seed, uint64_t stream, uint64_t i)
{
    uint64_t z = mix(mix(seed ^ mix(stream)) + i);
    return (float)((double)(z >> 40) / (double)(1ULL << 23) - 1.0);
}

void mlp_init_params(const struct mlp *n, uint64_t seed, int stage,
                     float *host)
{
    /* Variance 1/hidden keeps activations of a deep tanh stack alive. */
    const float scale = (float)sqrt(3.0 / n->hidden);
    const size_t hh = (size_t)n->hidden * n->hidden;

    for (int l = 0; l < n->layers; l++) {
        uint64_t stream = ((uint64_t)stage << 16 | (uint64_t)l) << 8 | 1;
        float *w = host + mlp_param_offset(n, l);
        for (size_t i = 0; i < hh; i++)
            w[i] = scale * model_uniform(seed, stream, i);
        for (int j = 0; j < n->hidden; j++)
            w[hh + j] = 0.1f * model_uniform(seed, stream, hh + j);
    }
}

void mlp_data(const struct mlp *n, uint64_t seed, bool target, int iter,
              int mb, float *host)
{
    uint64_t stream = ((uint64_t)iter << 24 | (uint64_t)mb) << 8 |
                      (target ? 3 : 2);
    const float scale = target ? 0.5f : 1.0f;

    for (size_t i = 0; i < mlp_nact(n); i++)
        host[i] = scale * model_uniform(seed, stream, i);
}

static const float *weight(const struct mlp *n, const float *w, int l)
{
    return w + mlp_param_offset(n, l);
}

static const float *bias(const struct mlp *n, const float *w, int l)
{
    return w + mlp_param_offset(n, l) + (size_t)n->hidden * n->hidden;
}

void mlp_forward(const struct zb_math *m, void *dev, const struct mlp *n,
                 const float *w, const float *x, float *const *y, bool last)
{
    const int b = n->batch, h = n->hidden;

    for (int l = 0; l < n->layers; l++) {
        const float *in = l ? y[l - 1] : x;
        m->gemm(dev, false, false, b, h, h, in, weight(n, w, l), 0, y[l]);
        /* The network's output layer is linear: the loss sees it raw. */
        m->bias_act(dev, y[l], bias(n, w, l), b, h,
                    !(last && l == n->layers - 1));
    }
}

void mlp_backward_input(const struct zb_math *m, void *dev,
                        const struct mlp *n, const float *w,
                        const float *const *y, const float *dy,
                        float *const *dz, float *dx, const float *target,
                        float scale, float *loss)
{
    const int b = n->batch, h = n->hidden, top = n->layers - 1;
    const size_t na = mlp_nact(n);

    if (!dy)
        m->mse(dev, dz[top], loss, y[top], target, na, scale);
    else
        m->act_grad(dev, dz[top], dy, y[top], na);
    for (int l = top; l >= 1; l--) {
        /* dz[l-1] first holds the gradient w.r.t. y[l-1], then in place
         * the gradient w.r.t. the pre-activation. */
        m->gemm(dev, false, true, b, h, h, dz[l], weight(n, w, l), 0,
                dz[l - 1]);
        m->act_grad(dev, dz[l - 1], dz[l - 1], y[l - 1], na);
    }
    if (dx)
        m->gemm(dev, false, true, b, h, h, dz[0], weight(n, w, 0), 0, dx);
}

void mlp_backward_weight(const struct zb_math *m, void *dev,
                         const struct mlp *n, const float *x,
                         const float *const *y, const float *const *dz,
                         float *dw)
{
    const int b = n->batch, h = n->hidden;

    for (int l = 0; l < n->layers; l++) {
        float *gw = dw + mlp_param_offset(n, l);
        m->gemm(dev, true, false, h, h, b, l ? y[l - 1] : x, dz[l], 0, gw);
        m->colsum(dev, gw + (size_t)h * h, dz[l], b, h);
    }
}
