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