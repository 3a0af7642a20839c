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

/* A tensor of the activation type (exec.h, alloc_act; the first hdr of
 * its n entries floats); act_alloc counts it as exec_alloc counts. */
static float *act_new(struct exec *x, size_t n, size_t hdr)
{
    const struct zb_math *m = x->m;

    return m->alloc_act ? m->alloc_act(x->dev, n, hdr) : m->alloc(x->dev, n);
}

static float *act_alloc(struct exec *x, size_t n, size_t hdr, bool keep)
{
    if (keep)
        exec_keep(x, n);
    return exec_counted(x, act_new(x, n, hdr), n);
}

/* The blocks [sg->l0, sg->l1) as a transformer of their own: a segment
 * (pass_seg) runs the whole pass's calls on them, so the result is the
 * whole pass's bit for bit. Between two segments the boundary tensor
 * (the block's output in F, its input gradient in B) waits in
 * x->seg_carry, a working buffer as the blocks' own temporaries are. */
static struct tf seg_tf(const struct exec *x, const struct pass_seg *sg)
{
    struct tf n = *x->tf;

    n.layers = sg->l1 - sg->l0;
    return n;
}

/* y[L * TF_NKEEP] is the stage's output, kept on every stage (as the
 * mlp keeps its last layer's), so one F adds the same on every stage. */
void tf_pass_forward(struct exec *x, struct stage_state *st, int mb,
                     float *in, const struct pass_seg *sg)
{
    struct mb_state *b = &st->mbs[mb];
    const struct tf *n = x->tf, sub = seg_tf(x, sg);
    const int L = n->layers, s = st->stage;
    float *out, *from = x->seg_carry;

    for (int l = 0; sg->first && l < L; l++)
        for (int k = 0; k < TF_NKEEP; k++) {
            size_t len = tf_keep_floats(n, (enum tf_keep)k);
            b->y[l * TF_NKEEP + k] = tf_keep_float((enum tf_keep)k)
                                         ? exec_alloc(x, len, true)
                                         : act_alloc(x, len, 0, true);
        }
    if (sg->first)
        b->y[L * TF_NKEEP] = act_alloc(x, x->nact, 0, true);
    out = sg->last ? b->y[L * TF_NKEEP] : act_new(x, x->nact, 0);
    tf_forward(x->m, x->dev, &sub, sg->w, sg->first ? in + HDR : from,
               b->y + (size_t)sg->l0 * TF_NKEEP, out);
    x->m->release(x->dev, sg->first ? NULL : from);
    x->seg_carry = sg->last ? NULL : out;
    if (!sg->last)
        return;
    /* Unlike the mlp's, the input is not needed after F: the first norm
     * keeps its output. */
    exec_free(x, in, HDR + x->nact, false);
    if (s < x->nstages - 1) {
        float *msg = act_alloc(x, HDR + x->nact, HDR, false);
        x->m->copy(x->dev, msg + HDR, out, x->nact);
        pass_produce(x, MSG_F, s, mb, msg);
    }
}

void tf_pass_backward_input(struct exec *x, struct stage_state *st, int mb,
                            float *dy, const struct pass_seg *sg)
{
    struct mb_state *b = &st->mbs[mb];
    const struct tf *n = x->tf, sub = seg_tf(x, sg);
    const int L = n->layers, s = st->stage, l0 = sg->l0;
    const bool last = s == x->nstages - 1;
    float *from = x->seg_carry, *dx = NULL, *down;

    for (int l = 0; sg->first && l < L; l++)
        for (int g = 0; g < TF_NGRAD; g++)
            b->dz[l * TF_NGRAD + g] =
                act_alloc(x, tf_grad_floats(n, (enum tf_grad)g), 0, true);
    if (l0 > 0) {
        down = act_new(x, x->nact, 0);
    } else {
        dx = s > 0 ? act_alloc(x, HDR + x->nact, HDR, false) : NULL;
        down = dx ? dx + HDR : NULL;
    }
    tf_backward_input(x->m, x->dev, &sub, sg->w,
                      (const float *const *)b->y + (size_t)l0 * TF_NKEEP,
                      b->y[L * TF_NKEEP],
                      !sg->first ? from : dy ? dy + HDR : NULL,
                      b->dz + (size_t)l0 * TF_NGRAD, down,
                      last ? st->target + (size_t)mb * x->nact : NULL,
                      exec_loss_scale(x), last ? st->loss + mb : NULL);
    x->m->release(x->dev, sg->first ? NULL : from);
    x->seg_carry = l0 > 0 ? down : NULL;
    if (!sg->last)
        return;
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

void tf_pass_backward_weight(struct exec *x, struct stage_state *st, int mb,
                             const struct pass_seg *sg)
{
    struct mb_state *b = &st->mbs[mb];
    const struct tf *n = x->tf, sub = seg_tf(x, sg);
    const int L = n->layers, l0 = sg->l0;
    size_t len;
    float *dw = sg->g ? sg->g : st->dw + tf_tensor(n, l0, 0, &len);

    tf_backward_weight(x->m, x->dev, &sub,
                       (const float *const *)b->y + (size_t)l0 * TF_NKEEP,
                       (const float *const *)b->dz + (size_t)l0 * TF_NGRAD,
                       dw);
    if (!pass_weight_done(x, st, mb, sg, dw))
        return;
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
