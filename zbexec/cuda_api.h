/* cuda_api.h - the cuda backend's internal header: the CUDA runtime,
 * cuBLAS and NCCL it calls (the real ones under nvcc; with ZB_CUDA_EMU the
 * host-only fake of tests/emu/, which runs the same host side in CI
 * without a GPU), and what the host side (cuda_host.cu and the files
 * cuda_int.h lists: setup, transport, timeline) and the kernels
 * (cuda.cu, or tests/emu/kernels.cc) share. */
#ifndef ZBEXEC_CUDA_API_H
#define ZBEXEC_CUDA_API_H

#ifdef ZB_CUDA_EMU
#include "fake_cuda.h"
#else
#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <nccl.h>
#endif
#include <stddef.h>

/* A failing call records file:line and the first message in the backend
 * state dev (sticky, CUDA's own model); the next sync point returns it. */
void cu_sticky(void *dev, const char *file, int line, const char *what);
/* The compute stream of the backend state dev. */
cudaStream_t cu_compute(void *dev);

#define CHECK_CUDA(d, call)                                                \
    do {                                                                   \
        cudaError_t e_ = (call);                                           \
        if (e_ != cudaSuccess)                                             \
            cu_sticky(d, __FILE__, __LINE__, cudaGetErrorString(e_));      \
    } while (0)
#define CHECK_BLAS(d, call)                                                \
    do {                                                                   \
        cublasStatus_t s_ = (call);                                        \
        if (s_ != CUBLAS_STATUS_SUCCESS)                                   \
            cu_sticky(d, __FILE__, __LINE__, cublasGetStatusString(s_));   \
    } while (0)
#define CHECK_NCCL(d, call)                                                \
    do {                                                                   \
        ncclResult_t r_ = (call);                                          \
        if (r_ != ncclSuccess)                                             \
            cu_sticky(d, __FILE__, __LINE__, ncclGetErrorString(r_));      \
    } while (0)

/* A buffer's element type: the backend records one per allocation
 * (cuda_math.cu); the kernels load and store each operand in its own
 * type and compute in float. */
enum cu_type { CU_F32, CU_BF16 };

/* A kernel's operand: its address and the type it is stored in. */
struct cu_ten {
    void *p;
    enum cu_type type;
};

/* The math table's kernels (exec.h, struct zb_math), queued on the
 * compute stream. The mlp's and the optimizer's take float buffers. */
void cu_bias_act(void *dev, float *z, const float *bias, int rows,
                 int cols, bool tanh_act);
void cu_act_grad(void *dev, float *dz, const float *dy, const float *y,
                 size_t n);
void cu_colsum(void *dev, float *out, const float *x, int rows, int cols);
void cu_axpy(void *dev, float *y, float a, const float *x, size_t n);
void cu_mse(void *dev, struct cu_ten dy, float *loss, struct cu_ten y,
            struct cu_ten t, size_t n, float scale);
/* dst = src, n entries, converted between their types. */
void cu_convert(void *dev, struct cu_ten dst, struct cu_ten src, size_t n);
/* The transformer's steps (exec.h, after mse). */
void cu_rmsnorm(void *dev, struct cu_ten y, struct cu_ten rstd,
                struct cu_ten x, int rows, int cols);
void cu_rmsnorm_grad(void *dev, struct cu_ten dx, struct cu_ten dy,
                     struct cu_ten y, struct cu_ten rstd, int rows,
                     int cols);
void cu_gelu(void *dev, struct cu_ten y, struct cu_ten x, size_t n);
void cu_gelu_grad(void *dev, struct cu_ten dx, struct cu_ten dy,
                  struct cu_ten x, size_t n);
void cu_softmax(void *dev, struct cu_ten p, int s, int mats, float scale);
void cu_softmax_grad(void *dev, struct cu_ten dp, struct cu_ten p, int s,
                     int mats, float scale);
void cu_heads(void *dev, struct cu_ten dst, struct cu_ten src, int b, int s,
              int h, int d, int parts, bool split);

#endif
