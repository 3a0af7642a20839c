/* tf_kernels.c - the transformer's element-wise and row steps as host
 * loops: the cpu math table's (cpu.c) and, queued on the fake stream, the
 * emulated device's (tests/emu/kernels.cc). Sums run in a fixed order, so
 * the pipeline and the sequential reference agree bit for bit. */
#include <math.h>
#include "exec.h"

/* Keeps 1 / rms finite for an all-zero row. */
#define RMS_EPS 1e-6f

void tfk_rmsnorm(float *y, float *rstd, const float *x, int rows, int cols)
{
    for (int i = 0; i < rows; i++) {
        const float *xi = x + (size_t)i * cols;
        float *yi = y + (size_t)i * cols;
        double ss = 0;
        for (int j = 0; j < cols; j++)
            ss += (double)xi[j] * xi[j];
        float r = 1.0f / sqrtf((float)(ss / cols) + RMS_EPS);
        rstd[i] = r;
        for (int j = 0; j < cols; j++)
            yi[j] = xi[j] * r;
    }
}

/* y = x r with r = (mean x^2 + eps)^-1/2: dx = r (dy - y mean(dy y)). */
void tfk_rmsnorm_grad(float *dx, const float *dy, const float *y,
                      const float *rstd, int rows, int cols)
{
    for (int i = 0; i < rows; i++) {
        const float *dyi = dy + (size_t)i * cols, *yi = y + (size_t)i * cols;
        float *dxi = dx + (size_t)i * cols;
        double dot = 0;
        for (int j = 0; j < cols; j++)
            dot += (double)dyi[j] * yi[j];
        const float mean = (float)(dot / cols), r = rstd[i];
        for (int j = 0; j < cols; j++)
            dxi[j] += r * (dyi[j] - yi[j] * mean);
    }
}

/* gelu(x) = x/2 (1 + tanh(c (x + 0.044715 x^3))), c = sqrt(2 / pi). */
#define GELU_C 0.7978845608f
#define GELU_A 0.044715f

void tfk_gelu(float *y, const float *x, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        float v = x[i];
        y[i] = 0.5f * v * (1.0f + tanhf(GELU_C * (v + GELU_A * v * v * v)));
    }
}

void tfk_gelu_grad(float *dx, const float *dy, const float *x, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        float v = x[i], t = tanhf(GELU_C * (v + GELU_A * v * v * v));
        float d = 0.5f * (1.0f + t) +
                  0.5f * v * (1.0f - t * t) * GELU_C *
                      (1.0f + 3.0f * GELU_A * v * v);
        dx[i] = dy[i] * d;
    }
}

void tfk_softmax(float *p, int s, int mats, float scale)
{
    for (size_t r = 0; r < (size_t)mats * s; r++) {
        float *row = p + r * s;
        const int n = (int)(r % s) + 1;         /* causal: j <= i */
        float mx = -INFINITY, sum = 0;
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
}

void tfk_softmax_grad(float *dp, const float *p, int s, int mats,
                      float scale)
{
    for (size_t r = 0; r < (size_t)mats * s; r++) {
        float *d = dp + r * s;
        const float *pr = p + r * s;
        const int n = (int)(r % s) + 1;
        float dot = 0;
        for (int j = 0; j < n; j++)
            dot += d[j] * pr[j];
        for (int j = 0; j < n; j++)
            d[j] = scale * pr[j] * (d[j] - dot);
        for (int j = n; j < s; j++)
            d[j] = 0;
    }
}

void tfk_heads(float *dst, const float *src, int b, int s, int h, int d,
               int parts, bool split)
{
    for (int pt = 0; pt < parts; pt++)
        for (int bi = 0; bi < b; bi++)
            for (int hi = 0; hi < h; hi++)
                for (int si = 0; si < s; si++) {
                    size_t tok = (size_t)bi * s + si;
                    size_t in = (tok * parts + pt) * h * d + (size_t)hi * d;
                    size_t out = ((((size_t)pt * b + bi) * h + hi) * s + si) *
                                 d;
                    for (int k = 0; k < d; k++) {
                        if (split)
                            dst[out + k] = src[in + k];
                        else
                            dst[in + k] = src[out + k];
                    }
                }
}
