/* kernels.cc - the cuda backend's kernels (zbexec/cuda.cu) for the
 * emulation: the same steps as host loops queued on the fake compute
 * stream, with the cpu backend's arithmetic (deterministic output). */
#include <math.h>
#include "cuda_api.h"
#include "exec.h"

void cu_bias_act(void *dev, float *z, const float *bias, int rows,
                 int cols, bool tanh_act)
{
    emu_launch(cu_compute(dev), [=]() {
        for (size_t i = 0; i < (size_t)rows * cols; i++) {
            float v = z[i] + bias[i % cols];
            z[i] = tanh_act ? tanhf(v) : v;
        }
    });
}

void cu_act_grad(void *dev, float *dz, const float *dy, const float *y,
                 size_t n)
{
    emu_launch(cu_compute(dev), [=]() {
        for (size_t i = 0; i < n; i++)
            dz[i] = dy[i] * (1.0f - y[i] * y[i]);
    });
}

void cu_colsum(void *dev, float *out, const float *x, int rows, int cols)
{
    emu_launch(cu_compute(dev), [=]() {
        for (int j = 0; j < cols; j++) {
            float s = 0;
            for (int i = 0; i < rows; i++)
                s += x[(size_t)i * cols + j];
            out[j] = s;
        }
    });
}

void cu_axpy(void *dev, float *y, float a, const float *x, size_t n)
{
    emu_launch(cu_compute(dev), [=]() {
        for (size_t i = 0; i < n; i++)
            y[i] += a * x[i];
    });
}

void cu_mse(void *dev, float *dy, float *loss, const float *y,
            const float *t, size_t n, float scale)
{
    emu_launch(cu_compute(dev), [=]() {
        double s = 0;
        for (size_t i = 0; i < n; i++) {
            float d = y[i] - t[i];
            dy[i] = scale * d;
            s += (double)d * d;
        }
        *loss = (float)(0.5 * scale * s);
    });
}

/* The transformer's steps: zbexec/tf_kernels.c's loops on the stream. */
void cu_rmsnorm(void *dev, float *y, float *rstd, const float *x, int rows,
                int cols)
{
    emu_launch(cu_compute(dev),
               [=]() { tfk_rmsnorm(y, rstd, x, rows, cols); });
}

void cu_rmsnorm_grad(void *dev, float *dx, const float *dy, const float *y,
                     const float *rstd, int rows, int cols)
{
    emu_launch(cu_compute(dev),
               [=]() { tfk_rmsnorm_grad(dx, dy, y, rstd, rows, cols); });
}

void cu_gelu(void *dev, float *y, const float *x, size_t n)
{
    emu_launch(cu_compute(dev), [=]() { tfk_gelu(y, x, n); });
}

void cu_gelu_grad(void *dev, float *dx, const float *dy, const float *x,
                  size_t n)
{
    emu_launch(cu_compute(dev), [=]() { tfk_gelu_grad(dx, dy, x, n); });
}

void cu_softmax(void *dev, float *p, int s, int mats, float scale)
{
    emu_launch(cu_compute(dev), [=]() { tfk_softmax(p, s, mats, scale); });
}

void cu_softmax_grad(void *dev, float *dp, const float *p, int s, int mats,
                     float scale)
{
    emu_launch(cu_compute(dev),
               [=]() { tfk_softmax_grad(dp, p, s, mats, scale); });
}

void cu_heads(void *dev, float *dst, const float *src, int b, int s, int h,
              int d, int parts, bool split)
{
    emu_launch(cu_compute(dev),
               [=]() { tfk_heads(dst, src, b, s, h, d, parts, split); });
}
