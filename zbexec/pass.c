/* pass.c - the compute passes F, B, W and BW of one stage and microbatch:
 * take the input (waiting for its receive only now), run the model or, in
 * synthetic mode, sleep to the profiled deadline, hand the output on.
 *
 * W results are added to the gradient in microbatch order whatever order
 * the schedule runs them in (an out-of-order one waits in `pending`):
 * float addition is not associative, and a fixed order is what makes the
 * pipelined gradient equal the sequential one bit for bit. */
#include <math.h>
#include "exec.h"

#define HDR MSG_HDR_FLOATS

static int fail_order(struct exec *x, int i, const char *why,
                      struct zb_error *err)
{
    char desc[96];

    return zb_error_set(err, ZB_EILLEGAL, "op %d (%s) %s", i,
                        zb_op_describe(&x->ops->ops[i], desc, sizeof(desc)),
                        why);
}

/* Passes may only run in dependency order; the validator proves it, and
 * this keeps a --no-validate run from touching buffers that do not exist. */
static int check_state(struct exec *x, int i, const struct mb_state *b,
                       struct zb_error *err)
{
    switch (x->ops->ops[i].kind) {
    case ZB_OP_F:
        return b->f ? fail_order(x, i, "runs twice", err) : 0;
    case ZB_OP_B:
    case ZB_OP_BW:
        if (!b->f)
            return fail_order(x, i, "runs before its F", err);
        return b->b ? fail_order(x, i, "runs twice", err) : 0;
    default:
        if (!b->b)
            return fail_order(x, i, "runs before its B", err);
        return b->w ? fail_order(x, i, "runs twice", err) : 0;
    }
}

void pass_produce(struct exec *x, enum msg_dir dir, int stage, int mb,
                  float *buf)
{
    struct xfer *f = xfer_at(x, dir, stage, mb);

    f->buf = buf;
    f->state = XF_PRODUCED;
}

static void add_grad(struct exec *x, struct stage_state *st, const float *d)
{
    /* The first microbatch is copied, not added to zero: 0 + (-0.0) would
     * differ in sign from the sequential run's copy. */
    if (st->next_w == 0) {
        if (!st->g)     /* ZeRO-2/3 freed it after the last reduce */
            st->g = exec_state_alloc(x, x->nparam);
        x->m->copy(x->dev, st->g, d, x->nparam);
    }
    else
        x->m->axpy(x->dev, st->g, 1.0f, d, x->nparam);
    st->next_w++;
}

/* W's result st->dw joins the gradient in microbatch order. */
static void accumulate(struct exec *x, struct stage_state *st, int mb)
{
    /* Reducing per microbatch, g holds this microbatch's gradient alone
     * until the REDUCE_GRAD after the W (coll.c); the order of the sum is
     * then the reduce-scatters', and --check allows for it. */
    if (coll_per_mb(x)) {
        st->g = exec_state_alloc(x, x->nparam);
        x->m->copy(x->dev, st->g, st->dw, x->nparam);
        st->grad_mb = mb;
        return;
    }
    if (mb != st->next_w) {
        st->pending[mb] = exec_alloc(x, x->nparam, false);
        x->m->copy(x->dev, st->pending[mb], st->dw, x->nparam);
        return;
    }
    add_grad(x, st, st->dw);
    while (st->next_w < x->p->microbatches && st->pending[st->next_w]) {
        float *d = st->pending[st->next_w];
        st->pending[st->next_w] = NULL;
        add_grad(x, st, d);
        exec_free(x, d, x->nparam, false);
    }
}

/* The mlp's layers [sg->l0, sg->l1) as a network of their own. */
static struct mlp seg_net(const struct exec *x, const struct pass_seg *sg)
{
    struct mlp n = x->net;

    n.layers = sg->l1 - sg->l0;
    return n;
}

/* F, B and W run segment by segment (pass_seg): a segment's layers with
 * its unit's weights, the very calls of the whole pass in the same
 * order, so the pipeline stays bitwise equal to the sequential run. */
static void forward(struct exec *x, struct stage_state *st, int mb,
                    float *in, const struct pass_seg *sg)
{
    struct mb_state *b = &st->mbs[mb];
    const int L = x->net.layers, s = st->stage, l0 = sg->l0;
    const bool last = s == x->nstages - 1;
    const struct mlp n = seg_net(x, sg);

    if (sg->first) {
        b->x0 = in;                     /* kept for W */
        exec_keep(x, HDR + x->nact);
        for (int l = 0; l < L; l++)
            b->y[l] = exec_alloc(x, x->nact, true);
    }
    mlp_forward(x->m, x->dev, &n, sg->w, l0 ? b->y[l0 - 1] : in + HDR,
                b->y + l0, last && sg->l1 == L);
    if (sg->last && !last) {
        /* A copy: y[L-1] stays for B, the copy leaves with the send. */
        float *out = exec_alloc(x, HDR + x->nact, false);
        x->m->copy(x->dev, out + HDR, b->y[L - 1], x->nact);
        pass_produce(x, MSG_F, s, mb, out);
    }
}

static void backward_input(struct exec *x, struct stage_state *st, int mb,
                           float *dy, const struct pass_seg *sg)
{
    struct mb_state *b = &st->mbs[mb];
    const int L = x->net.layers, s = st->stage, l0 = sg->l0, l1 = sg->l1;
    const bool last = s == x->nstages - 1;
    const float scale = exec_loss_scale(x);
    const struct mlp n = seg_net(x, sg);
    float *dx = NULL, *down;

    /* B keeps every layer's dz for W and frees only the output: with two
     * or more layers it allocates more than it frees (M_W > M_B). */
    for (int l = 0; sg->first && l < L; l++)
        b->dz[l] = exec_alloc(x, x->nact, true);
    /* Below the top segment the gradient of its output is the one the
     * segment above left in dz[l1 - 1] (act_grad then runs in place). */
    if (l0 > 0) {
        down = b->dz[l0 - 1];
    } else {
        dx = s > 0 ? exec_alloc(x, HDR + x->nact, false) : NULL;
        down = dx ? dx + HDR : NULL;
    }
    mlp_backward_input(x->m, x->dev, &n, sg->w,
                       (const float *const *)b->y + l0,
                       l1 < L ? b->dz[l1 - 1] : dy ? dy + HDR : NULL,
                       b->dz + l0, down,
                       last ? st->target + (size_t)mb * x->nact : NULL, scale,
                       last ? st->loss + mb : NULL);
    if (!sg->last)
        return;
    exec_free(x, dy, HDR + x->nact, false);
    exec_free(x, b->y[L - 1], x->nact, true);   /* only B reads it */
    b->y[L - 1] = NULL;
    if (dx)
        pass_produce(x, MSG_B, s, mb, dx);
}

bool pass_weight_done(struct exec *x, struct stage_state *st, int mb,
                      const struct pass_seg *sg, float *dw)
{
    if (sg->l0 == 0)    /* its first element is the stage's */
        step_inject(x, x->m, x->dev, st->stage, exec_global_mb(x, mb),
                    x->iter, dw);
    if (sg->last && !sg->g)
        accumulate(x, st, mb);
    return sg->last;
}

static void backward_weight(struct exec *x, struct stage_state *st, int mb,
                            const struct pass_seg *sg)
{
    struct mb_state *b = &st->mbs[mb];
    const int L = x->net.layers, l0 = sg->l0;
    const struct mlp n = seg_net(x, sg);
    float *dw = sg->g ? sg->g : st->dw + mlp_param_offset(&x->net, l0);

    mlp_backward_weight(x->m, x->dev, &n, l0 ? b->y[l0 - 1] : b->x0 + HDR,
                        (const float *const *)b->y + l0,
                        (const float *const *)b->dz + l0, dw);
    if (!pass_weight_done(x, st, mb, sg, dw))
        return;
    exec_free(x, b->x0, HDR + x->nact, true);
    b->x0 = NULL;
    for (int l = 0; l < L; l++) {
        exec_free(x, b->y[l], x->nact, true);
        exec_free(x, b->dz[l], x->nact, true);
        b->y[l] = b->dz[l] = NULL;
    }
}

/* The passes of each model (struct exec's tf: the transformer's). */
static const struct {
    void (*f)(struct exec *x, struct stage_state *st, int mb, float *in,
              const struct pass_seg *sg);
    void (*b)(struct exec *x, struct stage_state *st, int mb, float *dy,
              const struct pass_seg *sg);
    void (*w)(struct exec *x, struct stage_state *st, int mb,
              const struct pass_seg *sg);
} models[] = {
    { forward, backward_input, backward_weight },
    { tf_pass_forward, tf_pass_backward_input, tf_pass_backward_weight },
};

/* Part (F, B or W) of pass i, segment by segment (coll_units.c). */
static int run_part(struct exec *x, int i, enum zb_op_kind part,
                    struct stage_state *st, float *in, struct zb_error *err)
{
    const int n = coll_segments(x, part), k = x->tf != NULL,
              mb = x->ops->ops[i].mb;
    int rc;

    for (int j = 0; j < n; j++) {
        struct pass_seg sg;
        if ((rc = coll_seg_begin(x, i, part, j, &sg, err)) < 0)
            return rc;
        if (part == ZB_OP_F)
            models[k].f(x, st, mb, in, &sg);
        else if (part == ZB_OP_B)
            models[k].b(x, st, mb, in, &sg);
        else
            models[k].w(x, st, mb, &sg);
        if ((rc = coll_seg_end(x, i, part, j, &sg, err)) < 0)
            return rc;
    }
    return 0;
}

/* A BW whose B and W both run by units (ZeRO-3 reducing per
 * microbatch): unit by unit its B, then its W, as the model's segments
 * (zero_measure.h); the unit's weights go before its gradient's
 * reduce-scatter, as the model frees them when the segment ends. Its B
 * and W are not timed nor measured apart: --profile-out sees it all as
 * its B (the mid mark is where it ends). */
static int run_bw_units(struct exec *x, int i, struct stage_state *st,
                        float *in, struct zb_error *err)
{
    const int n = coll_segments(x, ZB_OP_B), k = x->tf != NULL,
              mb = x->ops->ops[i].mb;
    int rc;

    for (int j = 0; j < n; j++) {
        struct pass_seg sb, sw;
        if ((rc = coll_seg_begin(x, i, ZB_OP_B, j, &sb, err)) < 0)
            return rc;
        models[k].b(x, st, mb, in, &sb);
        if ((rc = coll_seg_begin(x, i, ZB_OP_W, j, &sw, err)) < 0)
            return rc;
        models[k].w(x, st, mb, &sw);
        if ((rc = coll_seg_end(x, i, ZB_OP_B, j, &sb, err)) < 0 ||
            (rc = coll_seg_end(x, i, ZB_OP_W, j, &sw, err)) < 0)
            return rc;
    }
    x->be->mark(x, 3 * i + 2);
    return 0;
}

/* The input of F or B: the model's data, a same-rank stage's output or a
 * received message (then the wait happens here, outside the pass time). */
static int take_input(struct exec *x, int i, float **in,
                      struct zb_error *err)
{
    const struct zb_op *op = &x->ops->ops[i];
    struct stage_state *st = exec_stage(x, op->stage);

    *in = NULL;
    if (op->kind == ZB_OP_F && op->stage == 0) {
        *in = exec_alloc(x, xfer_floats(x), false);
        if (!x->opt.synthetic)
            x->m->copy(x->dev, *in + HDR,
                       st->input + (size_t)op->mb * x->nact, x->nact);
        return 0;
    }
    if (op->kind == ZB_OP_F)
        return xfer_take(x, i, MSG_F, op->stage - 1, op->mb, in, err);
    if (op->stage == x->nstages - 1)
        return 0;
    return xfer_take(x, i, MSG_B, op->stage + 1, op->mb, in, err);
}

static void synthetic(struct exec *x, int i, float *in)
{
    const struct zb_op *op = &x->ops->ops[i];
    const struct zb_stage_times *tm = &x->p->stage[op->stage];
    const double unit = x->opt.time_unit;
    double start = exec_now() - x->epoch, d = zb_op_duration(x->p, op);

    x->marks[3 * i + 1] = start;
    if (op->kind == ZB_OP_BW) {
        exec_sleep_until(x->epoch + start + tm->b * unit);
        x->marks[3 * i + 2] = exec_now() - x->epoch;
    }
    exec_sleep_until(x->epoch + start + d * unit);
    x->marks[3 * i + 3] = exec_now() - x->epoch;
    exec_free(x, in, xfer_floats(x), false);
    if (op->kind == ZB_OP_F && op->stage < x->nstages - 1)
        pass_produce(x, MSG_F, op->stage, op->mb,
                     exec_alloc(x, HDR, false));
    if ((op->kind == ZB_OP_B || op->kind == ZB_OP_BW) && op->stage > 0)
        pass_produce(x, MSG_B, op->stage, op->mb,
                     exec_alloc(x, HDR, false));
    x->mem += zb_op_memory_delta(x->p, op);
    exec_mem_sample(x);
}

/* The activations a pass left behind: the first F, B and W of a chunk
 * give --profile-out its M_B and M_W; the peak is taken where passes end,
 * the points the simulator's memory model knows (BW's state between its
 * halves shows in the live buffers only). */
static void note_memory(struct exec *x, int stage, int pass, double before)
{
    double *d = &x->mem_delta[3 * zb_profile_stage_chunk(x->p, stage) +
                              pass];

    if (isnan(*d))
        *d = x->mem - before;
}

int pass_run(struct exec *x, int i, struct zb_error *err)
{
    const struct zb_op *op = &x->ops->ops[i];
    struct stage_state *st = exec_stage(x, op->stage);
    struct mb_state *b = &st->mbs[op->mb];
    float *in = NULL;
    int rc;

    if ((rc = check_state(x, i, b, err)) < 0 ||
        (rc = coll_before_pass(x, i, st, err)) < 0)
        return rc;
    if (op->kind != ZB_OP_W && (rc = take_input(x, i, &in, err)) < 0)
        return rc;
    b->f |= op->kind == ZB_OP_F;
    b->b |= op->kind == ZB_OP_B || op->kind == ZB_OP_BW;
    b->w |= op->kind == ZB_OP_W || op->kind == ZB_OP_BW;
    if (x->opt.synthetic) {
        synthetic(x, i, in);
        return 0;
    }
    double before = x->mem;
    x->be->mark(x, 3 * i + 1);
    switch (op->kind) {
    case ZB_OP_F:
        rc = run_part(x, i, ZB_OP_F, st, in, err);
        note_memory(x, op->stage, 0, before);
        break;
    case ZB_OP_B:
        rc = run_part(x, i, ZB_OP_B, st, in, err);
        note_memory(x, op->stage, 1, before);
        break;
    case ZB_OP_W:
        rc = run_part(x, i, ZB_OP_W, st, NULL, err);
        note_memory(x, op->stage, 2, before);
        break;
    default:    /* BW: the two halves, timed apart for --profile-out */
        if (coll_segments(x, ZB_OP_B) > 1 &&
            coll_segments(x, ZB_OP_W) > 1) {
            rc = run_bw_units(x, i, st, in, err);
            note_memory(x, op->stage, 1, before);
            note_memory(x, op->stage, 2, x->mem);
            break;
        }
        rc = run_part(x, i, ZB_OP_B, st, in, err);
        note_memory(x, op->stage, 1, before);
        if (rc < 0)
            break;
        x->be->mark(x, 3 * i + 2);
        before = x->mem;
        rc = run_part(x, i, ZB_OP_W, st, NULL, err);
        note_memory(x, op->stage, 2, before);
        break;
    }
    if (rc < 0)
        return rc;
    x->be->mark(x, 3 * i + 3);
    exec_mem_sample(x);
    return 0;
}
