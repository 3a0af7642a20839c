/* cuda.cu - the cuda backend's kernels (zbexec-cuda only): the math
 * table's element-wise and reduction steps on the compute stream; the
 * rest of the backend is its host side (cuda_host.cu, cuda_int.h), whose
 * emulation runs these steps as host loops instead (tests/emu/kernels.cc).
 * Typed operands (struct cu_ten) are loaded to float, computed on in
 * float and rounded once, when stored (bf16: to nearest even). */
#include <cuda_bf16.h>
#include "cuda_api.h"
#include "exec.h"

static const int THREADS = 256;

static int blocks(size_t n)
{
    size_t b = (n + THREADS - 1) / THREADS;
    return b < 1 ? 1 : b > 4096 ? 4096 : (int)b;
}

__global__ void k_bias_act(float *z, const float *bias, int rows, int cols,
                           bool tanh_act)
{
    size_t n = (size_t)rows * cols;
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x) {
        float v = z[i] + bias[i % cols];
        z[i] = tanh_act ? tanhf(v) : v;
    }
}

__global__ void k_act_grad(float *dz, const float *dy, const float *y,
                           size_t n)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x)
        dz[i] = dy[i] * (1.0f - y[i] * y[i]);
}

/* One thread per column, rows in order: deterministic, like the CPU. */
__global__ void k_colsum(float *out, const float *x, int rows, int cols)
{
    int j = blockIdx.x * blockDim.x + threadIdx.x;
    if (j >= cols)
        return;
    float s = 0;
    for (int i = 0; i < rows; i++)
        s += x[(size_t)i * cols + j];
    out[j] = s;
}

__global__ void k_axpy(float *y, float a, const float *x, size_t n)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x)
        y[i] += a * x[i];
}

/* Entry i of a typed operand as a float, and stored from one. */
static __device__ __forceinline__ float ld(struct cu_ten a, size_t i)
{
    return a.type == CU_BF16
               ? __bfloat162float(((const __nv_bfloat16 *)a.p)[i])
               : ((const float *)a.p)[i];
}

static __device__ __forceinline__ void st(struct cu_ten a, size_t i,
                                           float v)
{
    if (a.type == CU_BF16)
        ((__nv_bfloat16 *)a.p)[i] = __float2bfloat16_rn(v);
    else
        ((float *)a.p)[i] = v;
}

/* One block: a fixed reduction tree, so the loss is reproducible. */
__global__ void k_mse(struct cu_ten dy, float *loss, struct cu_ten y,
                      struct cu_ten t, size_t n, float scale)
{
    __shared__ double part[256];
    double s = 0;
    for (size_t i = threadIdx.x; i < n; i += blockDim.x) {
        float d = ld(y, i) - ld(t, i);
        st(dy, i, scale * d);
        s += (double)d * d;
    }
    part[threadIdx.x] = s;
    __syncthreads();
    for (int w = blockDim.x / 2; w > 0; w /= 2) {
        if ((int)threadIdx.x < w)
            part[threadIdx.x] += part[threadIdx.x + w];
        __syncthreads();
    }
    if (threadIdx.x == 0)
        *loss = (float)(0.5 * scale * part[0]);
}

void cu_bias_act(void *dev, float *z, const float *bias, int rows,
                 int cols, bool tanh_act)
{
    cudaStream_t s = cu_compute(dev);

    k_bias_act<<<blocks((size_t)rows * cols), THREADS, 0, s>>>(
        z, bias, rows, cols, tanh_act);
    CHECK_CUDA(dev, cudaGetLastError());
}

void cu_act_grad(void *dev, float *dz, const float *dy, const float *y,
                 size_t n)
{
    cudaStream_t s = cu_compute(dev);

    k_act_grad<<<blocks(n), THREADS, 0, s>>>(dz, dy, y, n);
    CHECK_CUDA(dev, cudaGetLastError());
}

void cu_colsum(void *dev, float *out, const float *x, int rows, int cols)
{
    cudaStream_t s = cu_compute(dev);

    k_colsum<<<blocks((size_t)cols), THREADS, 0, s>>>(out, x, rows, cols);
    CHECK_CUDA(dev, cudaGetLastError());
}

void cu_axpy(void *dev, float *y, float a, const float *x, size_t n)
{
    cudaStream_t s = cu_compute(dev);

    k_axpy<<<blocks(n), THREADS, 0, s>>>(y, a, x, n);
    CHECK_CUDA(dev, cudaGetLastError());
}

void cu_mse(void *dev, struct cu_ten dy, float *loss, struct cu_ten y,
            struct cu_ten t, size_t n, float scale)
{
    cudaStream_t s = cu_compute(dev);

    k_mse<<<1, THREADS, 0, s>>>(dy, loss, y, t, n, scale);
    CHECK_CUDA(dev, cudaGetLastError());
}
/* ---- The transformer's steps (tf_kernels.c is their host version) ---- */

__global__ void k_convert(struct cu_ten dst, struct cu_ten src, size_t n)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x)
        st(dst, i, ld(src, i));
}

/* One thread per row, columns in order: deterministic. */
__global__ void k_rmsnorm(struct cu_ten y, struct cu_ten rstd,
                          struct cu_ten x, int rows, int cols)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= rows)
        return;
    const size_t o = (size_t)i * cols;
    double ss = 0;
    for (int j = 0; j < cols; j++) {
        float v = ld(x, o + j);
        ss += (double)v * v;
    }
    float r = rsqrtf((float)(ss / cols) + 1e-6f);
    st(rstd, i, r);
    for (int j = 0; j < cols; j++)
        st(y, o + j, ld(x, o + j) * r);
}

__global__ void k_rmsnorm_grad(struct cu_ten dx, struct cu_ten dy,
                               struct cu_ten y, struct cu_ten rstd,
                               int rows, int cols)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= rows)
        return;
    const size_t o = (size_t)i * cols;
    double dot = 0;
    for (int j = 0; j < cols; j++)
        dot += (double)ld(dy, o + j) * ld(y, o + j);
    const float mean = (float)(dot / cols), r = ld(rstd, i);
    for (int j = 0; j < cols; j++)
        st(dx, o + j,
           ld(dx, o + j) + r * (ld(dy, o + j) - ld(y, o + j) * mean));
}

#define GELU_C 0.7978845608f
#define GELU_A 0.044715f

__global__ void k_gelu(struct cu_ten y, struct cu_ten x, size_t n)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x) {
        float v = ld(x, i);
        st(y, i,
           0.5f * v * (1.0f + tanhf(GELU_C * (v + GELU_A * v * v * v))));
    }
}

__global__ void k_gelu_grad(struct cu_ten dx, struct cu_ten dy,
                            struct cu_ten x, size_t n)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x) {
        float v = ld(x, i), t = tanhf(GELU_C * (v + GELU_A * v * v * v));
        st(dx, i, ld(dy, i) * (0.5f * (1.0f + t) +
                               0.5f * v * (1.0f - t * t) * GELU_C *
                                   (1.0f + 3.0f * GELU_A * v * v)));
    }
}

/* One thread per row of a score matrix (row r is query r mod s). Each
 * probability is recomputed when stored, so the row is rounded once. */
__global__ void k_softmax(struct cu_ten p, int s, size_t rows, float scale)
{
    size_t r = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
    if (r >= rows)
        return;
    const size_t o = r * s;
    const int n = (int)(r % s) + 1;
    float mx = -INFINITY, sum = 0;
    for (int j = 0; j < n; j++)
        mx = fmaxf(mx, scale * ld(p, o + j));
    for (int j = 0; j < n; j++)
        sum += expf(scale * ld(p, o + j) - mx);
    for (int j = 0; j < n; j++)
        st(p, o + j, expf(scale * ld(p, o + j) - mx) / sum);
    for (int j = n; j < s; j++)
        st(p, o + j, 0);
}

__global__ void k_softmax_grad(struct cu_ten dp, struct cu_ten p, int s,
                               size_t rows, float scale)
{
    size_t r = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
    if (r >= rows)
        return;
    const size_t o = r * s;
    const int n = (int)(r % s) + 1;
    float dot = 0;
    for (int j = 0; j < n; j++)
        dot += ld(dp, o + j) * ld(p, o + j);
    for (int j = 0; j < n; j++)
        st(dp, o + j, scale * ld(p, o + j) * (ld(dp, o + j) - dot));
    for (int j = n; j < s; j++)
        st(dp, o + j, 0);
}

/* One thread per element of the head-major side [parts][b][h][s][d]. */
__global__ void k_heads(struct cu_ten dst, struct cu_ten src, int b, int s,
                        int h, int d, int parts, bool split)
{
    const size_t n = (size_t)parts * b * h * s * d;
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x) {
        size_t k = i % d, si = i / d % s, hi = i / d / s % h;
        size_t bi = i / d / s / h % b, pt = i / d / s / h / b;
        size_t tok = bi * s + si;
        size_t in = (tok * parts + pt) * h * d + hi * d + k;
        if (split)
            st(dst, i, ld(src, in));
        else
            st(dst, in, ld(src, i));
    }
}

static int row_blocks(size_t rows)
{
    return (int)((rows + THREADS - 1) / THREADS);
}

void cu_convert(void *dev, struct cu_ten dst, struct cu_ten src, size_t n)
{
    k_convert<<<blocks(n), THREADS, 0, cu_compute(dev)>>>(dst, src, n);
    CHECK_CUDA(dev, cudaGetLastError());
}

void cu_rmsnorm(void *dev, struct cu_ten y, struct cu_ten rstd,
                struct cu_ten x, int rows, int cols)
{
    k_rmsnorm<<<row_blocks(rows), THREADS, 0, cu_compute(dev)>>>(
        y, rstd, x, rows, cols);
    CHECK_CUDA(dev, cudaGetLastError());
}

void cu_rmsnorm_grad(void *dev, struct cu_ten dx, struct cu_ten dy,
                     struct cu_ten y, struct cu_ten rstd, int rows, int cols)
{
    k_rmsnorm_grad<<<row_blocks(rows), THREADS, 0, cu_compute(dev)>>>(
        dx, dy, y, rstd, rows, cols);
    CHECK_CUDA(dev, cudaGetLastError());
}

void cu_gelu(void *dev, struct cu_ten y, struct cu_ten x, size_t n)
{
    k_gelu<<<blocks(n), THREADS, 0, cu_compute(dev)>>>(y, x, n);
    CHECK_CUDA(dev, cudaGetLastError());
}

void cu_gelu_grad(void *dev, struct cu_ten dx, struct cu_ten dy,
                  struct cu_ten x, size_t n)
{
    k_gelu_grad<<<blocks(n), THREADS, 0, cu_compute(dev)>>>(dx, dy, x, n);
    CHECK_CUDA(dev, cudaGetLastError());
}

void cu_softmax(void *dev, struct cu_ten p, int s, int mats, float scale)
{
    const size_t rows = (size_t)mats * s;

    k_softmax<<<row_blocks(rows), THREADS, 0, cu_compute(dev)>>>(
        p, s, rows, scale);
    CHECK_CUDA(dev, cudaGetLastError());
}

void cu_softmax_grad(void *dev, struct cu_ten dp, struct cu_ten p, int s,
                     int mats, float scale)
{
    const size_t rows = (size_t)mats * s;

    k_softmax_grad<<<row_blocks(rows), THREADS, 0, cu_compute(dev)>>>(
        dp, p, s, rows, scale);
    CHECK_CUDA(dev, cudaGetLastError());
}

void cu_heads(void *dev, struct cu_ten dst, struct cu_ten src, int b, int s,
              int h, int d, int parts, bool split)
{
    k_heads<<<blocks((size_t)parts * b * h * s * d), THREADS, 0,
              cu_compute(dev)>>>(dst, src, b, s, h, d, parts, split);
    CHECK_CUDA(dev, cudaGetLastError());
}
