/* kernels.cc - the cuda backend's kernels (zbexec/cuda.cu) for the
 * emulation: the same steps as host loops queued on the fake compute
 * stream, with the cpu backend's arithmetic (deterministic output). */
#include <math.h>
#include "cuda_api.h"

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
