/* cuda.cu - the cuda backend's kernels (zbexec-cuda only): the math
 * table's element-wise and reduction steps on the compute stream; the
 * rest of the backend is cuda_host.cu, whose emulation runs these steps
 * as host loops instead (tests/emu/kernels.cc). */
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

/* One block: a fixed reduction tree, so the loss is reproducible. */
__global__ void k_mse(float *dy, float *loss, const float *y, const float *t,
                      size_t n, float scale)
{
    __shared__ double part[256];
    double s = 0;
    for (size_t i = threadIdx.x; i < n; i += blockDim.x) {
        float d = y[i] - t[i];
        dy[i] = scale * d;
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

void cu_mse(void *dev, float *dy, float *loss, const float *y,
            const float *t, size_t n, float scale)
{
    cudaStream_t s = cu_compute(dev);

    k_mse<<<1, THREADS, 0, s>>>(dy, loss, y, t, n, scale);
    CHECK_CUDA(dev, cudaGetLastError());
}
/* ---- The transformer's steps (tf_kernels.c is their host version) ---- */

/* One thread per row, columns in order: deterministic. */
__global__ void k_rmsnorm(float *y, float *rstd, const float *x, int rows,
                          int cols)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= rows)
        return;
    const float *xi = x + (size_t)i * cols;
    double ss = 0;
    for (int j = 0; j < cols; j++)
        ss += (double)xi[j] * xi[j];
    float r = rsqrtf((float)(ss / cols) + 1e-6f);
    rstd[i] = r;
    for (int j = 0; j < cols; j++)
        y[(size_t)i * cols + j] = xi[j] * r;
}

__global__ void k_rmsnorm_grad(float *dx, const float *dy, const float *y,
                               const float *rstd, int rows, int cols)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= rows)
        return;
    const size_t o = (size_t)i * cols;
    double dot = 0;
    for (int j = 0; j < cols; j++)
        dot += (double)dy[o + j] * y[o + j];
    const float mean = (float)(dot / cols), r = rstd[i];
    for (int j = 0; j < cols; j++)
        dx[o + j] += r * (dy[o + j] - y[o + j] * mean);
}

#define GELU_C 0.7978845608f
#define GELU_A 0.044715f

__global__ void k_gelu(float *y, const float *x, size_t n)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x) {
        float v = x[i];
        y[i] = 0.5f * v * (1.0f + tanhf(GELU_C * (v + GELU_A * v * v * v)));
    }
}

__global__ void k_gelu_grad(float *dx, const float *dy, const float *x,
                            size_t n)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x) {
        float v = x[i], t = tanhf(GELU_C * (v + GELU_A * v * v * v));
        dx[i] = dy[i] * (0.5f * (1.0f + t) +
                         0.5f * v * (1.0f - t * t) * GELU_C *
                             (1.0f + 3.0f * GELU_A * v * v));
    }
}

/* One thread per row of a score matrix (row r is query r mod s). */
__global__ void k_softmax(float *p, int s, size_t rows, float scale)
{
    size_t r = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
    if (r >= rows)
        return;
    float *row = p + r * s, mx = -INFINITY, sum = 0;
    const int n = (int)(r % s) + 1;
    for (int j = 0; j < n; j++)
        mx = fmaxf(mx, scale * row[j]);
    for (int j = 0; j < n; j++) {
        row[j] = expf(scale * row[j] - mx);
        sum += row[j];
    }
    for (int j = 0; j < n; j++)
        row[j] /= sum;
    for (int j = n; j < s; j++)
        row[j] = 0;
}

__global__ void k_softmax_grad(float *dp, const float *p, int s,
                               size_t rows, float scale)
{
    size_t r = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
    if (r >= rows)
        return;
    float *d = dp + r * s, dot = 0;
    const float *pr = p + r * s;
    const int n = (int)(r % s) + 1;
    for (int j = 0; j < n; j++)
        dot += d[j] * pr[j];
    for (int j = 0; j < n; j++)
        d[j] = scale * pr[j] * (d[j] - dot);
    for (int j = n; j < s; j++)
        d[j] = 0;
}

/* One thread per element of the head-major side [parts][b][h][s][d]. */
__global__ void k_heads(float *dst, const float *src, int b, int s, int h,
                        int d, int parts, bool split)
{
    const size_t n = (size_t)parts * b * h * s * d;
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x) {
        size_t k = i % d, si = i / d % s, hi = i / d / s % h;
        size_t bi = i / d / s / h % b, pt = i / d / s / h / b;
        size_t tok = bi * s + si;
        size_t in = (tok * parts + pt) * h * d + hi * d + k;
        if (split)
            dst[i] = src[in];
        else
            dst[in] = src[i];
    }
}

static int row_blocks(size_t rows)
{
    return (int)((rows + THREADS - 1) / THREADS);
}

void cu_rmsnorm(void *dev, float *y, float *rstd, const float *x, int rows,
                int cols)
{
    k_rmsnorm<<<row_blocks(rows), THREADS, 0, cu_compute(dev)>>>(
        y, rstd, x, rows, cols);
    CHECK_CUDA(dev, cudaGetLastError());
}

void cu_rmsnorm_grad(void *dev, float *dx, const float *dy, const float *y,
                     const float *rstd, int rows, int cols)
{
    k_rmsnorm_grad<<<row_blocks(rows), THREADS, 0, cu_compute(dev)>>>(
        dx, dy, y, rstd, rows, cols);
    CHECK_CUDA(dev, cudaGetLastError());
}

void cu_gelu(void *dev, float *y, const float *x, size_t n)
{
    k_gelu<<<blocks(n), THREADS, 0, cu_compute(dev)>>>(y, x, n);
    CHECK_CUDA(dev, cudaGetLastError());
}

void cu_gelu_grad(void *dev, float *dx, const float *dy, const float *x,
                  size_t n)
{
    k_gelu_grad<<<blocks(n), THREADS, 0, cu_compute(dev)>>>(dx, dy, x, n);
    CHECK_CUDA(dev, cudaGetLastError());
}

void cu_softmax(void *dev, float *p, int s, int mats, float scale)
{
    const size_t rows = (size_t)mats * s;

    k_softmax<<<row_blocks(rows), THREADS, 0, cu_compute(dev)>>>(
        p, s, rows, scale);
    CHECK_CUDA(dev, cudaGetLastError());
}

void cu_softmax_grad(void *dev, float *dp, const float *p, int s, int mats,
                     float scale)
{
    const size_t rows = (size_t)mats * s;

    k_softmax_grad<<<row_blocks(rows), THREADS, 0, cu_compute(dev)>>>(
        dp, p, s, rows, scale);
    CHECK_CUDA(dev, cudaGetLastError());
}

void cu_heads(void *dev, float *dst, const float *src, int b, int s, int h,
              int d, int parts, bool split)
{
    k_heads<<<blocks((size_t)parts * b * h * s * d), THREADS, 0,
              cu_compute(dev)>>>(dst, src, b, s, h, d, parts, split);
    CHECK_CUDA(dev, cudaGetLastError());
}
