/* transformer.c - zbexec's transformer workload: pre-norm blocks of causal
 * multi-head attention and an MLP, with F, B (input gradients only) and W
 * (weight gradients only) as sequences of calls on a math table.
 *
 * As in model.c, B runs no weight-gradient GEMM: it keeps each Linear's
 * input (from F) and output gradient, and W runs the four dW = X^T dY.
 * Buffers may be typed (exec.h, alloc_act: bf16 on the cuda backend), so
 * entries inside one are addressed through the table (at()), and F and B
 * read the weights in the activation type (weights()). */
#include <math.h>
#include "exec.h"

enum { T_QKV, T_O, T_1, T_2, T_N };     /* a block's tensors, in order */
static const char *const tensor_name[T_N] = { "Wqkv", "Wo", "W1", "W2" };

static size_t tokens(const struct tf *n)
{
    return (size_t)n->batch * n->seq;
}

size_t tf_nact(const struct tf *n)
{
    return tokens(n) * n->hidden;
}

static size_t block_params(const struct tf *n)
{
    const size_t h = n->hidden, f = n->ffn;

    return 4 * h * h + 2 * h * f;
}

size_t tf_nparam(const struct tf *n)
{
    return (size_t)n->layers * block_params(n);
}

size_t tf_tensor(const struct tf *n, int l, int t, size_t *len)
{
    const size_t h = n->hidden, f = n->ffn;
    const size_t sizes[T_N] = { 3 * h * h, h * h, h * f, f * h };
    size_t off = (size_t)l * block_params(n);

    for (int k = 0; k < t; k++)
        off += sizes[k];
    *len = sizes[t];
    return off;
}

void tf_param_name(const struct tf *n, size_t i, int *layer,
                   const char **tensor, size_t *index)
{
    size_t len, off;
    int t = 0;

    *layer = (int)(i / block_params(n));
    while ((off = tf_tensor(n, *layer, t, &len)) + len <= i)
        t++;
    *tensor = tensor_name[t];
    *index = i - off;
}

size_t tf_keep_floats(const struct tf *n, enum tf_keep k)
{
    const size_t t = tokens(n), h = n->hidden, s = n->seq;

    switch (k) {
    case TF_RSTD1:
    case TF_RSTD2: return t;
    case TF_QKV: return 3 * t * h;
    case TF_P: return (size_t)n->batch * n->heads * s * s;
    case TF_U:
    case TF_G: return t * n->ffn;
    default: return t * h;      /* N1, CTX, N2 */
    }
}

size_t tf_grad_floats(const struct tf *n, enum tf_grad g)
{
    const size_t t = tokens(n), h = n->hidden;

    return g == TF_DQKV ? 3 * t * h : g == TF_DU ? t * n->ffn : t * h;
}

bool tf_keep_float(enum tf_keep k)
{
    return k == TF_RSTD1 || k == TF_RSTD2;
}

double tf_mb_bytes(const struct tf *n, size_t act)
{
    double b = (double)tf_nact(n) * act;

    for (int k = 0; k < TF_NKEEP; k++)
        b += (double)n->layers * tf_keep_floats(n, (enum tf_keep)k) *
             (tf_keep_float((enum tf_keep)k) ? sizeof(float) : act);
    return b;
}

double tf_mb_floats(const struct tf *n)
{
    double f = (double)tf_nact(n);

    for (int k = 0; k < TF_NKEEP; k++)
        f += (double)n->layers * tf_keep_floats(n, (enum tf_keep)k);
    for (int g = 0; g < TF_NGRAD; g++)
        f += (double)n->layers * tf_grad_floats(n, (enum tf_grad)g);
    return f;
}

void tf_init_params(const struct tf *n, uint64_t seed, int stage,
                    float *host)
{
    const int fan_in[T_N] = { n->hidden, n->hidden, n->hidden, n->ffn };

    for (int l = 0; l < n->layers; l++)
        for (int t = 0; t < T_N; t++) {
            /* Variance 1/fan_in, halved on the projections that feed a
             * residual (Wo, W2) so the stream grows slowly with depth. */
            double v = (t == T_O || t == T_2 ? 1.5 : 3.0) / fan_in[t];
            const float scale = (float)sqrt(v);
            uint64_t stream = ((uint64_t)stage << 16 | (uint64_t)l) << 8 |
                              (uint64_t)(4 + t);
            size_t len, off = tf_tensor(n, l, t, &len);
            for (size_t i = 0; i < len; i++)
                host[off + i] = scale * model_uniform(seed, stream, i);
        }
}

/* Entry i of the buffer at p, in its type. */
static float *at(const struct zb_math *m, void *dev, const float *p,
                 size_t i)
{
    return m->at ? m->at(dev, p, i) : (float *)p + i;
}

/* A scratch tensor of the activation type. */
static float *act(const struct zb_math *m, void *dev, size_t n)
{
    return m->alloc_act ? m->alloc_act(dev, n, 0) : m->alloc(dev, n);
}

/* The stage's weights as the GEMMs read them. */
static const float *weights(const struct zb_math *m, void *dev,
                            const struct tf *n, const float *w)
{
    return m->weights ? m->weights(dev, w, tf_nparam(n)) : w;
}

/* One GEMM of the batched entry: row-major, natural leading dimensions. */
static void lin(const struct zb_math *m, void *dev, bool ta, bool tb,
                int rows, int cols, int k, const float *a, const float *b,
                float beta, float *c)
{
    m->bgemm(dev, ta, tb, rows, cols, k, a, ta ? rows : k, 0, b,
             tb ? k : cols, 0, beta, c, cols, 0, 1);
}

/* Block l's four tensors in the stage's weights w. */
static void block_weights(const struct zb_math *m, void *dev,
                          const struct tf *n, const float *w, int l,
                          const float **out)
{
    size_t len;

    for (int t = 0; t < T_N; t++)
        out[t] = at(m, dev, w, tf_tensor(n, l, t, &len));
}

/* One block: cur (tokens x hidden) -> next, keeping k[] for B and W. */
static void block_forward(const struct zb_math *m, void *dev,
                          const struct tf *n, const float *w, int l,
                          const float *cur, float *const *k, float *next)
{
    const int T = (int)tokens(n), H = n->hidden, F = n->ffn, S = n->seq;
    const int N = n->heads, D = H / N, BN = n->batch * N;
    const size_t th = tf_nact(n), sd = (size_t)S * D, ss = (size_t)S * S;
    const float *q = k[TF_QKV], *kk = at(m, dev, q, th);
    const float *v = at(m, dev, q, 2 * th);
    float *qkv = act(m, dev, 3 * th), *ctx = act(m, dev, th);
    float *h = act(m, dev, th);
    const float *wt[T_N];

    block_weights(m, dev, n, w, l, wt);
    m->rmsnorm(dev, k[TF_N1], k[TF_RSTD1], cur, T, H);
    lin(m, dev, false, false, T, 3 * H, H, k[TF_N1], wt[T_QKV], 0, qkv);
    m->heads(dev, k[TF_QKV], qkv, n->batch, S, N, D, 3, true);
    m->bgemm(dev, false, true, S, S, D, q, D, sd, kk, D, sd, 0, k[TF_P], S,
             ss, BN);
    m->softmax(dev, k[TF_P], S, BN, 1.0f / sqrtf((float)D));
    m->bgemm(dev, false, false, S, D, S, k[TF_P], S, ss, v, D, sd, 0, ctx,
             D, sd, BN);
    m->heads(dev, k[TF_CTX], ctx, n->batch, S, N, D, 1, false);
    m->copy(dev, h, cur, th);           /* h = cur + ctx Wo */
    lin(m, dev, false, false, T, H, H, k[TF_CTX], wt[T_O], 1, h);
    m->rmsnorm(dev, k[TF_N2], k[TF_RSTD2], h, T, H);
    lin(m, dev, false, false, T, F, H, k[TF_N2], wt[T_1], 0, k[TF_U]);
    m->gelu(dev, k[TF_G], k[TF_U], (size_t)T * F);
    m->copy(dev, next, h, th);          /* next = h + g W2 */
    lin(m, dev, false, false, T, H, F, k[TF_G], wt[T_2], 1, next);
    m->release(dev, qkv);
    m->release(dev, ctx);
    m->release(dev, h);
}

void tf_forward(const struct zb_math *m, void *dev, const struct tf *n,
                const float *w, const float *x, float *const *keep,
                float *out)
{
    const size_t th = tf_nact(n);
    float *prev = NULL;

    w = weights(m, dev, n, w);
    for (int l = 0; l < n->layers; l++) {
        float *next = l == n->layers - 1 ? out : act(m, dev, th);
        block_forward(m, dev, n, w, l, prev ? prev : x,
                      keep + (size_t)l * TF_NKEEP, next);
        m->release(dev, prev);
        prev = next == out ? NULL : next;
    }
}

/* One block backward from g[TF_DOUT]: fills the block's other gradients
 * and, unless dx is NULL, the gradient of the block's input. */
static void block_backward(const struct zb_math *m, void *dev,
                           const struct tf *n, const float *w, int l,
                           const float *const *k, float *const *g,
                           float *dx)
{
    const int T = (int)tokens(n), H = n->hidden, F = n->ffn, S = n->seq;
    const int N = n->heads, D = H / N, BN = n->batch * N;
    const size_t th = tf_nact(n), sd = (size_t)S * D, ss = (size_t)S * S;
    const float *q = k[TF_QKV], *kk = at(m, dev, q, th);
    const float *v = at(m, dev, q, 2 * th);
    float *t1 = act(m, dev, th), *t2 = act(m, dev, th);
    float *dp = act(m, dev, (size_t)BN * ss), *dq = act(m, dev, 3 * th);
    const float *wt[T_N];

    block_weights(m, dev, n, w, l, wt);
    /* MLP: dU = dOut W2^T * gelu'(U), then through the second norm. */
    lin(m, dev, false, true, T, F, H, g[TF_DOUT], wt[T_2], 0, g[TF_DU]);
    m->gelu_grad(dev, g[TF_DU], g[TF_DU], k[TF_U], (size_t)T * F);
    lin(m, dev, false, true, T, H, F, g[TF_DU], wt[T_1], 0, t1);
    m->copy(dev, g[TF_DH], g[TF_DOUT], th);
    m->rmsnorm_grad(dev, g[TF_DH], t1, k[TF_N2], k[TF_RSTD2], T, H);
    /* Attention: dCtx = dH Wo^T by heads, then dP, dV, the scores'
     * gradient, dQ and dK. */
    lin(m, dev, false, true, T, H, H, g[TF_DH], wt[T_O], 0, t1);
    m->heads(dev, t2, t1, n->batch, S, N, D, 1, true);
    m->bgemm(dev, false, true, S, S, D, t2, D, sd, v, D, sd, 0, dp, S, ss,
             BN);
    m->bgemm(dev, true, false, S, D, S, k[TF_P], S, ss, t2, D, sd, 0,
             at(m, dev, dq, 2 * th), D, sd, BN);
    m->softmax_grad(dev, dp, k[TF_P], S, BN, 1.0f / sqrtf((float)D));
    m->bgemm(dev, false, false, S, D, S, dp, S, ss, kk, D, sd, 0, dq, D, sd,
             BN);
    m->bgemm(dev, true, false, S, D, S, dp, S, ss, q, D, sd, 0,
             at(m, dev, dq, th), D, sd, BN);
    m->heads(dev, g[TF_DQKV], dq, n->batch, S, N, D, 3, false);
    if (dx) {   /* dx = dH + the first norm's share of dQKV Wqkv^T */
        lin(m, dev, false, true, T, H, 3 * H, g[TF_DQKV], wt[T_QKV], 0,
            t1);
        m->copy(dev, dx, g[TF_DH], th);
        m->rmsnorm_grad(dev, dx, t1, k[TF_N1], k[TF_RSTD1], T, H);
    }
    m->release(dev, t1);
    m->release(dev, t2);
    m->release(dev, dp);
    m->release(dev, dq);
}

void tf_backward_input(const struct zb_math *m, void *dev,
                       const struct tf *n, const float *w,
                       const float *const *keep, const float *out,
                       const float *dy, float *const *grad, float *dx,
                       const float *target, float scale, float *loss)
{
    const int top = n->layers - 1;
    const size_t th = tf_nact(n);
    float *dtop = grad[(size_t)top * TF_NGRAD + TF_DOUT];

    w = weights(m, dev, n, w);
    if (!dy)
        m->mse(dev, dtop, loss, out, target, th, scale);
    else
        m->copy(dev, dtop, dy, th);
    for (int l = top; l >= 0; l--)
        block_backward(m, dev, n, w, l, keep + (size_t)l * TF_NKEEP,
                       grad + (size_t)l * TF_NGRAD,
                       l ? grad[(size_t)(l - 1) * TF_NGRAD + TF_DOUT] : dx);
}

void tf_backward_weight(const struct zb_math *m, void *dev,
                        const struct tf *n, const float *const *keep,
                        const float *const *grad, float *dw)
{
    const int T = (int)tokens(n), H = n->hidden, F = n->ffn;

    for (int l = 0; l < n->layers; l++) {
        const float *const *k = keep + (size_t)l * TF_NKEEP;
        const float *const *g = grad + (size_t)l * TF_NGRAD;
        float *d[T_N];
        size_t len;
        for (int t = 0; t < T_N; t++)
            d[t] = at(m, dev, dw, tf_tensor(n, l, t, &len));
        lin(m, dev, true, false, H, 3 * H, T, k[TF_N1], g[TF_DQKV], 0,
            d[T_QKV]);
        lin(m, dev, true, false, H, H, T, k[TF_CTX], g[TF_DH], 0, d[T_O]);
        lin(m, dev, true, false, H, F, T, k[TF_N2], g[TF_DU], 0, d[T_1]);
        lin(m, dev, true, false, F, H, T, k[TF_G], g[TF_DOUT], 0, d[T_2]);
    }
}
