/* cuda_math.cu - the cuda backend's math table (exec.h, struct zb_math):
 * typed device buffers from the stream-ordered pool, copies between host
 * and device, the GEMMs on cuBLAS, and the kernels (cuda.cu) called with
 * their operands' types looked up. */
#include <math.h>
#include "cuda_int.h"

size_t cu_type_bytes(enum cu_type t)
{
    return t == CU_BF16 ? 2 : sizeof(float);
}

/* The buffer that holds p (its address in *base), NULL if none. */
static struct dbuf *find(struct cuda_dev *d, const void *p, uintptr_t *base)
{
    auto it = d->bufs->upper_bound((uintptr_t)p);

    if (it == d->bufs->begin())
        return NULL;
    --it;
    if ((uintptr_t)p >= it->first + it->second.bytes)
        return NULL;
    *base = it->first;
    return &it->second;
}

/* The operand at p for a kernel: the type of the part of its buffer it
 * points into. A pointer into no buffer is the caller's bug: recorded. */
static struct cu_ten ten(struct cuda_dev *d, const void *p)
{
    struct cu_ten t = { (void *)p, CU_F32 };
    uintptr_t base = 0;
    struct dbuf *b = find(d, p, &base);

    if (!b)
        cu_sticky(d, __FILE__, __LINE__, "an operand outside every buffer "
                  "of the cuda backend");
    else if ((uintptr_t)p >= base + b->hdr)
        t.type = b->type;
    return t;
}

/* hdr floats, then n - hdr entries of type t, on stream s: stream-ordered,
 * from the device's default pool, which keeps what it holds (release
 * threshold set at init): no device-wide sync and no trip to the driver
 * per buffer. Not zeroed: callers write first. */
void *cu_dev_alloc(struct cuda_dev *d, size_t n, size_t hdr,
                   enum cu_type t, cudaStream_t s)
{
    size_t bytes = hdr * sizeof(float) + (n - hdr) * cu_type_bytes(t);
    void *p = NULL;

    bytes = bytes ? bytes : 1;
    CHECK_CUDA(d, cudaMallocAsync(&p, bytes, s));
    if (p)
        (*d->bufs)[(uintptr_t)p] = { bytes, hdr * sizeof(float), t, NULL,
                                     false };
    return p;
}

static float *cu_alloc(void *dev, size_t n)
{
    struct cuda_dev *d = (struct cuda_dev *)dev;

    return (float *)cu_dev_alloc(d, n, 0, CU_F32, d->compute);
}

float *cu_alloc_act(void *dev, size_t n, size_t hdr)
{
    struct cuda_dev *d = (struct cuda_dev *)dev;

    return (float *)cu_dev_alloc(d, n, hdr, d->act, d->compute);
}

static void cu_release(void *dev, float *p)
{
    struct cuda_dev *d = (struct cuda_dev *)dev;

    if (!p)
        return;
    auto it = d->bufs->find((uintptr_t)p);
    if (it != d->bufs->end()) {
        char *copy = it->second.copy;
        d->bufs->erase(it);
        if (copy) {
            auto c = d->bufs->find((uintptr_t)copy);
            d->copies -= (double)c->second.bytes;
            d->bufs->erase(c);
            CHECK_CUDA(d, cudaFreeAsync(copy, d->compute));
        }
    }
    CHECK_CUDA(d, cudaFreeAsync(p, d->compute));
}

/* The buffer holding p is written: its weight copy is out of date. The
 * float buffers are written only through upload, copy, axpy and the
 * collectives, which call this. */
void cu_written(struct cuda_dev *d, const void *p)
{
    uintptr_t base;
    struct dbuf *b = find(d, p, &base);

    if (b)
        b->stale = true;
}

/* Host buffers are float: so must the device side be. */
static bool host_float(struct cuda_dev *d, const void *p)
{
    if (ten(d, p).type == CU_F32)
        return true;
    cu_sticky(d, __FILE__, __LINE__, "a copy between host floats and a "
              "bf16 buffer");
    return false;
}

static void cu_upload(void *dev, float *dst, const float *host, size_t n)
{
    struct cuda_dev *d = (struct cuda_dev *)dev;

    if (!host_float(d, dst))
        return;
    cu_written(d, dst);
    /* Pageable source: staged before the call returns, so callers may
     * reuse host memory at once. */
    CHECK_CUDA(d, cudaMemcpyAsync(dst, host, n * sizeof(float),
                                  cudaMemcpyHostToDevice, d->compute));
}

static void cu_download(void *dev, float *host, const float *src, size_t n)
{
    struct cuda_dev *d = (struct cuda_dev *)dev;

    if (!host_float(d, src))
        return;
    CHECK_CUDA(d, cudaMemcpyAsync(host, src, n * sizeof(float),
                                  cudaMemcpyDeviceToHost, d->compute));
    CHECK_CUDA(d, cudaStreamSynchronize(d->compute));
}

/* Between buffers of one type a copy, else a conversion. */
static void cu_copy(void *dev, float *dst, const float *src, size_t n)
{
    struct cuda_dev *d = (struct cuda_dev *)dev;
    struct cu_ten to = ten(d, dst), from = ten(d, src);

    cu_written(d, dst);
    if (to.type != from.type)
        cu_convert(d, to, from, n);
    else
        CHECK_CUDA(d, cudaMemcpyAsync(dst, src, n * cu_type_bytes(to.type),
                                      cudaMemcpyDeviceToDevice, d->compute));
}

static float *cu_at(void *dev, const float *p, size_t i)
{
    struct cuda_dev *d = (struct cuda_dev *)dev;

    return (float *)((char *)p + i * cu_type_bytes(ten(d, p).type));
}

/* The weights at w in the activation type: a copy of w's whole buffer,
 * made at the first use and again at the first use after a write (the
 * step, a rollback, an all-gather), on the compute stream, where the
 * writers' work is ordered before it. It lives as long as the buffer. */
static const float *cu_weights(void *dev, const float *w, size_t n)
{
    struct cuda_dev *d = (struct cuda_dev *)dev;
    uintptr_t base = 0;
    struct dbuf *b = find(d, w, &base);
    size_t off = (uintptr_t)w - base;

    if (d->act == CU_F32)
        return w;
    if (!b || b->type != CU_F32 || b->hdr || off + n * sizeof(float) >
                                                 b->bytes) {
        cu_sticky(d, __FILE__, __LINE__, "weights outside a float buffer");
        return w;
    }
    if (!b->copy) {
        const size_t count = b->bytes / sizeof(float);
        b->copy = (char *)cu_dev_alloc(d, count, 0, d->act, d->compute);
        b->stale = true;
        d->copies += (double)count * cu_type_bytes(d->act);
        d->copies_high = fmax(d->copies_high, d->copies);
    }
    if (b->stale && b->copy) {
        struct cu_ten to = { b->copy, d->act }, from = { (void *)base,
                                                         CU_F32 };
        cu_convert(d, to, from, b->bytes / sizeof(float));
        b->stale = false;
    }
    return (const float *)(b->copy + off / sizeof(float) *
                                         cu_type_bytes(d->act));
}

/* Row-major C = op(A) op(B) is column-major C^T = op(B)^T op(A)^T. */
static void cu_gemm(void *dev, bool ta, bool tb, int m, int n, int k,
                    const float *a, const float *b, float beta, float *c)
{
    struct cuda_dev *d = (struct cuda_dev *)dev;
    const float one = 1.0f;

    CHECK_BLAS(d, cublasSgemm(d->blas, tb ? CUBLAS_OP_T : CUBLAS_OP_N,
                              ta ? CUBLAS_OP_T : CUBLAS_OP_N, n, m, k, &one,
                              b, tb ? k : n, a, ta ? m : k, &beta, c, n));
}

static cudaDataType blas_type(enum cu_type t)
{
    return t == CU_BF16 ? CUDA_R_16BF : CUDA_R_32F;
}

/* The transformer's GEMMs on the operands' own types (A and B alike:
 * bf16 activations and weight copies; C bf16, or float for a weight
 * gradient) with float accumulation (CUBLAS_COMPUTE_32F: bf16 products
 * on the tensor cores, rounded once into a bf16 C), the row-major to
 * column-major swap as in cu_gemm. */
static void cu_bgemm(void *dev, bool ta, bool tb, int m, int n, int k,
                     const float *a, int lda, size_t sa, const float *b,
                     int ldb, size_t sb, float beta, float *c, int ldc,
                     size_t sc, int count)
{
    struct cuda_dev *d = (struct cuda_dev *)dev;
    struct cu_ten A = ten(d, a), B = ten(d, b), C = ten(d, c);
    const float one = 1.0f;

    if (A.type != B.type) {
        cu_sticky(d, __FILE__, __LINE__, "a GEMM of bf16 and float");
        return;
    }
    CHECK_BLAS(d, cublasGemmStridedBatchedEx(
                      d->blas, tb ? CUBLAS_OP_T : CUBLAS_OP_N,
                      ta ? CUBLAS_OP_T : CUBLAS_OP_N, n, m, k, &one, b,
                      blas_type(B.type), ldb, (long long)sb, a,
                      blas_type(A.type), lda, (long long)sa, &beta, c,
                      blas_type(C.type), ldc, (long long)sc, count,
                      CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
}

/* The steps with typed operands, looked up (cuda_api.h). */
static void cu_axpy_f(void *dev, float *y, float a, const float *x,
                      size_t n)
{
    cu_written((struct cuda_dev *)dev, y);
    cu_axpy(dev, y, a, x, n);
}

static void t_mse(void *dev, float *dy, float *loss, const float *y,
                  const float *t, size_t n, float scale)
{
    struct cuda_dev *d = (struct cuda_dev *)dev;

    cu_mse(d, ten(d, dy), loss, ten(d, y), ten(d, t), n, scale);
}

static void t_rmsnorm(void *dev, float *y, float *rstd, const float *x,
                      int rows, int cols)
{
    struct cuda_dev *d = (struct cuda_dev *)dev;

    cu_rmsnorm(d, ten(d, y), ten(d, rstd), ten(d, x), rows, cols);
}

static void t_rmsnorm_grad(void *dev, float *dx, const float *dy,
                           const float *y, const float *rstd, int rows,
                           int cols)
{
    struct cuda_dev *d = (struct cuda_dev *)dev;

    cu_rmsnorm_grad(d, ten(d, dx), ten(d, dy), ten(d, y), ten(d, rstd),
                    rows, cols);
}

static void t_gelu(void *dev, float *y, const float *x, size_t n)
{
    struct cuda_dev *d = (struct cuda_dev *)dev;

    cu_gelu(d, ten(d, y), ten(d, x), n);
}

static void t_gelu_grad(void *dev, float *dx, const float *dy,
                        const float *x, size_t n)
{
    struct cuda_dev *d = (struct cuda_dev *)dev;

    cu_gelu_grad(d, ten(d, dx), ten(d, dy), ten(d, x), n);
}

static void t_softmax(void *dev, float *p, int s, int mats, float scale)
{
    struct cuda_dev *d = (struct cuda_dev *)dev;

    cu_softmax(d, ten(d, p), s, mats, scale);
}

static void t_softmax_grad(void *dev, float *dp, const float *p, int s,
                           int mats, float scale)
{
    struct cuda_dev *d = (struct cuda_dev *)dev;

    cu_softmax_grad(d, ten(d, dp), ten(d, p), s, mats, scale);
}

static void t_heads(void *dev, float *dst, const float *src, int b, int s,
                    int h, int dh, int parts, bool split)
{
    struct cuda_dev *d = (struct cuda_dev *)dev;

    cu_heads(d, ten(d, dst), ten(d, src), b, s, h, dh, parts, split);
}

const struct zb_math cu_math = {
    cu_alloc, cu_release, cu_upload, cu_download, cu_copy, cu_gemm,
    cu_bias_act, cu_act_grad, cu_colsum, cu_axpy_f, t_mse,
    cu_bgemm, t_rmsnorm, t_rmsnorm_grad, t_gelu, t_gelu_grad,
    t_softmax, t_softmax_grad, t_heads, cu_alloc_act, cu_at, cu_weights,
};
