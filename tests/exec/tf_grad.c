/* tf_grad.c - the transformer's B and W (zbexec/transformer.c) against
 * central finite differences of its loss, on the cpu math table: every
 * weight tensor of a two-block stage and the input gradient. Prints one
 * line per tensor; exit status 1 when one is off (t_transformer.sh). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include "exec.h"

#define EPS 1e-2f       /* step: float loss, truncation O(EPS^2) */
#define REL 1e-2        /* allowed: of the tensor's largest gradient */

struct run {
    const struct tf *n;
    float *w, *x, *t, **keep, **grad, *out;
    int nkeep, ngrad;
};

static float loss_of(struct run *r)
{
    const struct zb_math *m = &zb_math_cpu;
    float loss = 0;

    tf_forward(m, NULL, r->n, r->w, r->x, r->keep, r->out);
    tf_backward_input(m, NULL, r->n, r->w, (const float *const *)r->keep,
                      r->out, NULL, r->grad, NULL, r->t, 1.0f, &loss);
    return loss;
}

/* The largest |finite difference - analytic| over every stride-th entry
 * of v[0..len-1], relative to the largest |analytic| there. */
static double worst(struct run *r, float *v, const float *an, size_t len,
                    size_t stride)
{
    double err = 0, mx = 1e-12;

    for (size_t i = 0; i < len; i += stride) {
        float keep = v[i];
        v[i] = keep + EPS;
        double up = loss_of(r);
        v[i] = keep - EPS;
        double down = loss_of(r);
        v[i] = keep;
        double fd = (up - down) / (2.0 * EPS);
        err = fmax(err, fabs(fd - an[i]));
        mx = fmax(mx, fabs(an[i]));
    }
    return err / mx;
}

int main(void)
{
    const struct tf n = { 2, 8, 2, 4, 16, 2 };
    const char *names[] = { "Wqkv", "Wo", "W1", "W2" };
    const struct zb_math *m = &zb_math_cpu;
    const size_t na = tf_nact(&n), np = tf_nparam(&n);
    struct run r = { &n, 0, 0, 0, 0, 0, 0, n.layers * TF_NKEEP,
                     n.layers * TF_NGRAD };
    float *dw = calloc(np, sizeof(float)), *dx = calloc(na, sizeof(float));
    float loss = 0;
    int bad = 0;

    r.w = calloc(np, sizeof(float));
    r.x = calloc(na, sizeof(float));
    r.t = calloc(na, sizeof(float));
    r.out = calloc(na, sizeof(float));
    r.keep = calloc((size_t)r.nkeep, sizeof(float *));
    r.grad = calloc((size_t)r.ngrad, sizeof(float *));
    for (int k = 0; k < r.nkeep; k++)
        r.keep[k] = calloc(tf_keep_floats(&n, (enum tf_keep)(k % TF_NKEEP)),
                           sizeof(float));
    for (int g = 0; g < r.ngrad; g++)
        r.grad[g] = calloc(tf_grad_floats(&n, (enum tf_grad)(g % TF_NGRAD)),
                           sizeof(float));
    tf_init_params(&n, 7, 0, r.w);
    for (size_t i = 0; i < na; i++) {
        r.x[i] = model_uniform(7, 100, i);
        r.t[i] = 0.5f * model_uniform(7, 101, i);
    }
    tf_forward(m, NULL, &n, r.w, r.x, r.keep, r.out);
    tf_backward_input(m, NULL, &n, r.w, (const float *const *)r.keep, r.out,
                      NULL, r.grad, dx, r.t, 1.0f, &loss);
    tf_backward_weight(m, NULL, &n, (const float *const *)r.keep,
                       (const float *const *)r.grad, dw);
    for (int l = 0; l < n.layers; l++)
        for (int t = 0; t < 4; t++) {
            size_t len, off = tf_tensor(&n, l, t, &len);
            double e = worst(&r, r.w + off, dw + off, len, 3);
            printf("block %d %-4s relative error %.2e\n", l, names[t], e);
            bad |= !(e < REL);
        }
    double e = worst(&r, r.x, dx, na, 1);
    printf("input    relative error %.2e\n", e);
    bad |= !(e < REL);
    for (int k = 0; k < r.nkeep; k++)
        free(r.keep[k]);
    for (int g = 0; g < r.ngrad; g++)
        free(r.grad[g]);
    free(r.keep);
    free(r.grad);
    free(r.w);
    free(r.x);
    free(r.t);
    free(r.out);
    free(dw);
    free(dx);
    return bad;
}
