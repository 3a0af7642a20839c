/* xfer.c - boundary tensors between stages: the transfer table, posting
 * the schedule's SEND/RECV ops non-blocking at their positions, waiting
 * for a receive only when its consumer runs, checking every header.
 *
 * A transfer is (direction, producer stage, microbatch). Its buffer moves
 * by ownership: the producer pass makes it, a SEND frees it when the send
 * completes, a consumer pass takes a received (or same-rank) one. */
#include <stdlib.h>
#include "exec.h"
#include "zbsched/timing.h"
#include "zbsched/xalloc.h"

static const char *const dir_names[] = { "F", "B", "ping" };

struct xfer *xfer_at(struct exec *x, enum msg_dir dir, int stage, int mb)
{
    return &x->xf[((size_t)dir * x->nstages + stage) * x->p->microbatches +
                  mb];
}

size_t xfer_floats(const struct exec *x)
{
    return MSG_HDR_FLOATS + (x->opt.synthetic ? 0 : x->nact);
}

static double now(const struct exec *x)
{
    return exec_now() - x->epoch;
}

static const char *op_desc(const struct exec *x, int i, char *buf, int size)
{
    return zb_op_describe(&x->ops->ops[i], buf, size);
}

static void keep_in_flight(struct exec *x, struct xmsg *m)
{
    zb_xgrow((void **)&x->sending, &x->capsending, x->nsending + 1,
             sizeof(*x->sending));
    x->sending[x->nsending++] = m;
}

int xfer_post(struct exec *x, int i, struct zb_error *err)
{
    const struct zb_op *op = &x->ops->ops[i];
    const bool send = op->kind == ZB_OP_SEND_F || op->kind == ZB_OP_SEND_B;
    const enum msg_dir dir = op->kind == ZB_OP_SEND_F ||
                             op->kind == ZB_OP_RECV_F ? MSG_F : MSG_B;
    const int from = send ? op->stage
                          : dir == MSG_F ? op->stage - 1 : op->stage + 1;
    struct xfer *f = xfer_at(x, dir, from, op->mb);
    struct xmsg *m;
    char desc[96];
    int rc;

    if (send && f->state != XF_PRODUCED)
        return zb_error_set(err, ZB_EILLEGAL, "op %d (%s): %s stage %d mb "
                            "%d has %s", i, op_desc(x, i, desc, 96),
                            dir_names[dir], from, op->mb,
                            f->state == XF_EMPTY ? "not run yet"
                                                 : "been sent already");
    if (!send && f->state != XF_EMPTY)
        return zb_error_set(err, ZB_EILLEGAL, "op %d (%s): a second receive "
                            "of %s stage %d mb %d", i,
                            op_desc(x, i, desc, 96), dir_names[dir], from,
                            op->mb);
    m = zb_xcalloc(1, sizeof(*m));
    *m = (struct xmsg){ .send = send, .peer = op->peer, .op = i,
                        .n = xfer_floats(x) };
    x->t[i].start = now(x);
    m->hdr = (struct msg_header){ MSG_MAGIC, dir, from, op->mb, x->iter,
                                  (int32_t)(m->n - MSG_HDR_FLOATS),
                                  (int32_t)(x->t[i].start * 1e3), 0 };
    if (send)
        m->buf = f->buf;     /* post() writes the header */
    if ((rc = x->be->post(x, m, err)) < 0) {
        free(m);
        return rc;
    }
    if (!send)
        f->buf = exec_counted(x, m->buf, m->n);
    f->msg = m;
    f->state = send ? XF_SENDING : XF_RECEIVING;
    if (send)
        keep_in_flight(x, m);
    x->t[i].end = now(x);
    return 0;
}

/* The payload size only when it is what differs. */
static void describe_header(const struct msg_header *h, bool count,
                            char *buf, int size)
{
    if (h->magic != MSG_MAGIC || h->dir < 0 || h->dir > MSG_PING)
        snprintf(buf, (size_t)size, "a message without a zbexec header");
    else
        snprintf(buf, (size_t)size, "%s stage %d mb %d of iteration %d%s",
                 dir_names[h->dir], h->stage, h->mb, h->iter + 1,
                 count ? h->count ? " with a payload" : " without payload"
                       : "");
}

/* A completed receive carries the header it was posted for. */
static int check_header(const struct xmsg *m, struct zb_error *err)
{
    const struct msg_header *e = &m->hdr, *g = &m->got;
    char want[96], got[96];

    if (m->send || (g->magic == e->magic && g->dir == e->dir &&
                    g->stage == e->stage && g->mb == e->mb &&
                    g->iter == e->iter && g->count == e->count))
        return 0;
    describe_header(e, g->count != e->count, want, sizeof(want));
    describe_header(g, g->count != e->count, got, sizeof(got));
    return zb_error_set(err, ZB_EILLEGAL, "expected %s from rank %d, "
                        "received %s: send and receive order differ",
                        want, m->peer, got);
}

int xfer_wait(struct exec *x, struct xmsg *m, struct zb_error *err)
{
    bool done = false;
    int rc;

    if ((rc = x->be->flush(x, err)) < 0)
        return rc;
    for (int spins = 0;; spins++) {
        if ((rc = x->be->test(x, m, &done, err)) < 0)
            return rc;
        if (done)
            break;
        exec_pause(spins);
    }
    return check_header(m, err);
}

/* Synthetic mode emulates the simulator's link: a message from stage
 * `stage` in direction dir is usable its boundary's comm after its send
 * was posted, whatever the real transport took, and the transfer
 * overlaps the compute of both ends (the wait is here, in the consumer,
 * not in the producer's pass). Real messages (model mode) take what they
 * take. */
static void link_delay(const struct exec *x, const struct xmsg *m,
                       enum msg_dir dir, int stage)
{
    double comm = zb_timing_comm(x->p, stage,
                                 dir == MSG_F ? stage + 1 : stage - 1);

    if (x->opt.synthetic && comm > 0)
        exec_sleep_until(x->epoch + m->got.sent_us * 1e-3 +
                         comm * x->opt.time_unit);
}

int xfer_take(struct exec *x, int i, enum msg_dir dir, int stage, int mb,
              float **out, struct zb_error *err)
{
    struct xfer *f = xfer_at(x, dir, stage, mb);
    const int from = zb_profile_stage_rank(x->p, stage);
    char desc[96], rdesc[96];
    int rc;

    if (from == x->rank && f->state != XF_PRODUCED)
        return zb_error_set(err, ZB_EILLEGAL, "op %d (%s) needs %s stage "
                            "%d mb %d, which has not run", i,
                            op_desc(x, i, desc, 96), dir_names[dir], stage,
                            mb);
    if (from != x->rank && f->state != XF_RECEIVING)
        return zb_error_set(err, ZB_EILLEGAL, "op %d (%s) needs %s stage "
                            "%d mb %d from rank %d, but %s", i,
                            op_desc(x, i, desc, 96), dir_names[dir], stage,
                            mb, from,
                            f->state == XF_EMPTY
                                ? "no receive for it was posted before"
                                : "it was used already");
    /* Synthetic mode times the link on the host (link_delay). */
    if (from != x->rank && x->be->consume && !x->opt.synthetic) {
        /* The device waits for it; the header is checked on completion. */
        struct xmsg *m = f->msg;
        x->t[m->op].wait = now(x);
        watchdog_op(m->op, WD_WAIT);
        rc = x->be->consume(x, m, err);
        watchdog_op(i, WD_RUN);
        if (rc < 0) {
            zb_error_prefix(err, "op %d (%s)", m->op,
                            op_desc(x, m->op, rdesc, 96));
            return rc;
        }
        keep_in_flight(x, m);
        f->msg = NULL;
    } else if (from != x->rank) {
        struct xmsg *m = f->msg;
        x->t[m->op].wait = now(x);
        watchdog_op(m->op, WD_WAIT);
        if ((rc = xfer_wait(x, m, err)) < 0) {
            zb_error_prefix(err, "op %d (%s)", m->op,
                            op_desc(x, m->op, rdesc, 96));
            return rc;
        }
        link_delay(x, m, dir, stage);
        x->t[m->op].done = now(x);
        watchdog_op(i, WD_RUN);
        free(m);
        f->msg = NULL;
    }
    *out = f->buf;
    f->buf = NULL;
    f->state = XF_USED;
    return 0;
}

/* In-flight message k completed: a send frees its buffer; a receive that
 * a pass consumed on the device has its header checked now. */
static int complete(struct exec *x, int k, struct zb_error *err)
{
    struct xmsg *m = x->sending[k];
    char desc[96];
    int rc = 0;

    x->t[m->op].done = now(x);
    if (m->send) {
        struct xfer *f = xfer_at(x, (enum msg_dir)m->hdr.dir, m->hdr.stage,
                                 m->hdr.mb);
        exec_free(x, f->buf, m->n, false);
        f->buf = NULL;
        f->msg = NULL;
        f->state = XF_USED;
    } else if ((rc = check_header(m, err)) < 0) {
        zb_error_prefix(err, "op %d (%s)", m->op,
                        op_desc(x, m->op, desc, 96));
    }
    free(m);
    x->sending[k] = x->sending[--x->nsending];
    return rc;
}

int xfer_progress(struct exec *x, struct zb_error *err)
{
    for (int k = 0; k < x->nsending;) {
        bool done = false;
        int rc = x->be->test(x, x->sending[k], &done, err);
        if (rc < 0)
            return rc;
        if (!done)
            k++;
        else if ((rc = complete(x, k, err)) < 0)
            return rc;
    }
    return 0;
}

/* Every transfer must be finished at STEP: a pass whose output nobody
 * sent or used, or a receive nobody consumed, means the lists disagree. */
static int check_leftovers(struct exec *x, struct zb_error *err)
{
    for (int dir = MSG_F; dir <= MSG_B; dir++)
        for (int s = 0; s < x->nstages; s++)
            for (int mb = 0; mb < x->p->microbatches; mb++) {
                struct xfer *f = xfer_at(x, (enum msg_dir)dir, s, mb);
                int to = s + (dir == MSG_F ? 1 : -1);
                char desc[96];
                if (f->state == XF_PRODUCED)
                    return zb_error_set(
                        err, ZB_EILLEGAL, "STEP: the output of %s stage %d "
                        "mb %d was never %s", dir_names[dir], s, mb,
                        zb_profile_stage_rank(x->p, to) == x->rank
                            ? "used" : "sent");
                if (f->state == XF_RECEIVING)
                    return zb_error_set(
                        err, ZB_EILLEGAL, "STEP: op %d (%s) received data "
                        "that no pass used", f->msg->op,
                        op_desc(x, f->msg->op, desc, 96));
            }
    return 0;
}

int xfer_drain(struct exec *x, struct zb_error *err)
{
    char desc[96];
    int rc;

    if ((rc = x->be->flush(x, err)) < 0)
        return rc;
    while (x->nsending > 0) {
        struct xmsg *m = x->sending[x->nsending - 1];
        watchdog_op(m->op, WD_WAIT);
        if ((rc = xfer_wait(x, m, err)) < 0) {
            zb_error_prefix(err, "op %d (%s)", m->op,
                            op_desc(x, m->op, desc, 96));
            return rc;
        }
        complete(x, x->nsending - 1, err);
    }
    return check_leftovers(x, err);
}
