/* tf_pass.c - the transformer's F, B and W on one stage and microbatch:
 * its buffers allocated and counted (the activations behind the realized
 * memory and --profile-out's M_B and M_W), the output handed on. */
#include "exec.h"

#define HDR MSG_HDR_FLOATS

/* What B alone reads: W needs only each Linear's input (N1, CTX, N2, G). */
static bool b_only(enum tf_keep k)
{
    return k == TF_RSTD1 || k == TF_QKV || k == TF_P || k == TF_RSTD2 ||
           k == TF_U;
}

/* y[L * TF_NKEEP] is the stage's output, kept on every stage (as the
 * mlp keeps its last layer's), so one F adds the same on every stage. */
void tf_pass_forward(struct exec *x, struct stage_state *st, int mb,
                     float *in)
{
    struct mb_state *b = &st->mbs[mb];
    const struct tf *n = x->tf;
    const int L = n->layers, s = st->stage;
    float *out;

    for (int l = 0; l < L; l++)
        for (int k = 0; k < TF_NKEEP; k++)
            b->y[l * TF_NKEEP + k] =
                exec_alloc(x, tf_keep_floats(n, (enum tf_keep)k), true);
    out = b->y[L * TF_NKEEP] = exec_alloc(x, x->nact, true);
    tf_forward(x->m, x->dev, n, st->w, in + HDR, b->y, out);
    /* Unlike the mlp's, the input is not needed after F: the first norm
     * keeps its output. */
    exec_free(x, in, HDR + x->nact, false);
    if (s < x->nstages - 1) {
        float *msg = exec_alloc(x, HDR + x->nact, false);
        x->m->copy(x->dev, msg + HDR, out, x->nact);
        pass_produce(x, MSG_F, s, mb, msg);
    }
}

void tf_pass_backward_input(struct exec *x, struct stage_state *st, int mb,
                            float *dy)
{
    struct mb_state *b = &st->mbs[mb];
    const struct tf *n = x->tf;
    const int L = n->layers, s = st->stage;
    const bool last = s == x->nstages - 1;
    float *dx = s > 0 ? exec_alloc(x, HDR + x->nact, false) : NULL;

    for (int l = 0; l < L; l++)
        for (int g = 0; g < TF_NGRAD; g++)
            b->dz[l * TF_NGRAD + g] =
                exec_alloc(x, tf_grad_floats(n, (enum tf_grad)g), true);
    tf_backward_input(x->m, x->dev, n, st->w, (const float *const *)b->y,
                      b->y[L * TF_NKEEP], dy ? dy + HDR : NULL, b->dz,
                      dx ? dx + HDR : NULL,
                      last ? st->target + (size_t)mb * x->nact : NULL,
                      exec_loss_scale(x), last ? st->loss + mb : NULL);
    exec_free(x, dy, HDR + x->nact, false);
    for (int l = 0; l < L; l++)
        for (int k = 0; k < TF_NKEEP; k++) {
            float **p = &b->y[l * TF_NKEEP + k];
            if (!b_only((enum tf_keep)k))
                continue;
            exec_free(x, *p, tf_keep_floats(n, (enum tf_keep)k), true);
            *p = NULL;
        }
    exec_free(x, b->y[L * TF_NKEEP], x->nact, true);
    b->y[L * TF_NKEEP] = NULL;
    if (dx)
        pass_produce(x, MSG_B, s, mb, dx);
}

void tf_pass_backward_weight(struct exec *x, struct stage_state *st, int mb)
{
    struct mb_state *b = &st->mbs[mb];
    const struct tf *n = x->tf;
    const int L = n->layers;

    tf_backward_weight(x->m, x->dev, n, (const float *const *)b->y,
                       (const float *const *)b->dz, st->dw);
    step_inject(x, x->m, x->dev, st->stage, exec_global_mb(x, mb), x->iter,
                st->dw);
    pass_accumulate(x, st, mb);
    for (int l = 0; l < L; l++) {
        for (int k = 0; k < TF_NKEEP; k++) {
            float **p = &b->y[l * TF_NKEEP + k];
            exec_free(x, *p, tf_keep_floats(n, (enum tf_keep)k), true);
            *p = NULL;
        }
        for (int g = 0; g < TF_NGRAD; g++) {
            float **p = &b->dz[l * TF_NGRAD + g];
            exec_free(x, *p, tf_grad_floats(n, (enum tf_grad)g), true);
            *p = NULL;
        }
    }
}
