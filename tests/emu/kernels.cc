/* kernels.cc - the cuda backend's kernels (zbexec/cuda.cu) for the
 * emulation: the same steps as host loops queued on the fake compute
 * stream, with the cpu backend's arithmetic (deterministic output). A
 * typed operand is read as floats, computed on in float and rounded once
 * when stored, as cuda.cu's kernels do: bf16 storage rounds at every
 * store, exactly where the device's does. */
#include <math.h>
#include <vector>
#include "cuda_api.h"
#include "exec.h"

/* The n entries of an operand as floats. */
static std::vector<float> load(struct cu_ten a, size_t n)
{
    std::vector<float> v(n);
    for (size_t i = 0; i < n; i++)
        v[i] = a.type == CU_BF16 ? emu_float(((const uint16_t *)a.p)[i])
                                 : ((const float *)a.p)[i];
    return v;
}

/* Store n floats into an operand, rounded to its type. */
static void store(struct cu_ten a, const std::vector<float> &v, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        if (a.type == CU_BF16)
            ((uint16_t *)a.p)[i] = emu_bf16(v[i]);
        else
            ((float *)a.p)[i] = v[i];
    }
}

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

void cu_mse(void *dev, struct cu_ten dy, float *loss, struct cu_ten y,
            struct cu_ten t, size_t n, float scale)
{
    emu_launch(cu_compute(dev), [=]() {
        std::vector<float> yv = load(y, n), tv = load(t, n), g(n);
        double s = 0;
        for (size_t i = 0; i < n; i++) {
            float d = yv[i] - tv[i];
            g[i] = scale * d;
            s += (double)d * d;
        }
        store(dy, g, n);
        *loss = (float)(0.5 * scale * s);
    });
}

void cu_convert(void *dev, struct cu_ten dst, struct cu_ten src, size_t n)
{
    emu_launch(cu_compute(dev), [=]() { store(dst, load(src, n), n); });
}

/* The transformer's steps: zbexec/tf_kernels.c's loops on the stream. */
void cu_rmsnorm(void *dev, struct cu_ten y, struct cu_ten rstd,
                struct cu_ten x, int rows, int cols)
{
    emu_launch(cu_compute(dev), [=]() {
        const size_t n = (size_t)rows * cols;
        std::vector<float> xv = load(x, n), yv(n), rv(rows);
        tfk_rmsnorm(yv.data(), rv.data(), xv.data(), rows, cols);
        store(y, yv, n);
        store(rstd, rv, rows);
    });
}

void cu_rmsnorm_grad(void *dev, struct cu_ten dx, struct cu_ten dy,
                     struct cu_ten y, struct cu_ten rstd, int rows, int cols)
{
    emu_launch(cu_compute(dev), [=]() {
        const size_t n = (size_t)rows * cols;
        std::vector<float> dxv = load(dx, n), dyv = load(dy, n);
        std::vector<float> yv = load(y, n), rv = load(rstd, rows);
        tfk_rmsnorm_grad(dxv.data(), dyv.data(), yv.data(), rv.data(), rows,
                         cols);
        store(dx, dxv, n);
    });
}

void cu_gelu(void *dev, struct cu_ten y, struct cu_ten x, size_t n)
{
    emu_launch(cu_compute(dev), [=]() {
        std::vector<float> xv = load(x, n), yv(n);
        tfk_gelu(yv.data(), xv.data(), n);
        store(y, yv, n);
    });
}

void cu_gelu_grad(void *dev, struct cu_ten dx, struct cu_ten dy,
                  struct cu_ten x, size_t n)
{
    emu_launch(cu_compute(dev), [=]() {
        std::vector<float> dyv = load(dy, n), xv = load(x, n), dxv(n);
        tfk_gelu_grad(dxv.data(), dyv.data(), xv.data(), n);
        store(dx, dxv, n);
    });
}

void cu_softmax(void *dev, struct cu_ten p, int s, int mats, float scale)
{
    emu_launch(cu_compute(dev), [=]() {
        const size_t n = (size_t)mats * s * s;
        std::vector<float> pv = load(p, n);
        tfk_softmax(pv.data(), s, mats, scale);
        store(p, pv, n);
    });
}

void cu_softmax_grad(void *dev, struct cu_ten dp, struct cu_ten p, int s,
                     int mats, float scale)
{
    emu_launch(cu_compute(dev), [=]() {
        const size_t n = (size_t)mats * s * s;
        std::vector<float> dv = load(dp, n), pv = load(p, n);
        tfk_softmax_grad(dv.data(), pv.data(), s, mats, scale);
        store(dp, dv, n);
    });
}

void cu_heads(void *dev, struct cu_ten dst, struct cu_ten src, int b, int s,
              int h, int d, int parts, bool split)
{
    emu_launch(cu_compute(dev), [=]() {
        const size_t n = (size_t)parts * b * h * s * d;
        std::vector<float> sv = load(src, n), dv(n);
        tfk_heads(dv.data(), sv.data(), b, s, h, d, parts, split);
        store(dst, dv, n);
    });
}
