/* cuda_xfer.cu - the executor table's message entries (post, flush,
 * test, consume) over NCCL (cuda_nccl.cu) or MPI (cuda_mpi.cu), and what
 * both transports share: a message's size, its header slot and the pool
 * of completion events. */
#include <stdlib.h>
#include "cuda_int.h"

int cu_header_slot(const struct cuda_dev *d, const struct xmsg *m)
{
    return m->op >= 0 ? m->op : d->nheaders - 1;
}

/* A message of n entries as it travels: the header's floats, then the
 * payload in the activation type (bf16 for the transformer: half the
 * bytes of float), counted in entries of that type (the header is a
 * whole number of them). */
size_t cu_msg_bytes(const struct cuda_dev *d, size_t n)
{
    return MSG_HDR_FLOATS * sizeof(float) +
           (n - MSG_HDR_FLOATS) * cu_type_bytes(d->act);
}

size_t cu_msg_count(const struct cuda_dev *d, size_t n)
{
    return cu_msg_bytes(d, n) / cu_type_bytes(d->act);
}

/* A message's or collective's completion event, from a pool: one is in
 * use per message in flight, and creating one per message costs a
 * driver call on the hot path. Reused only once completed. */
cudaEvent_t cu_event_get(struct cuda_dev *d)
{
    cudaEvent_t e = NULL;

    if (d->nevents > 0)
        return d->events[--d->nevents];
    CHECK_CUDA(d, cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
    return e;
}

void cu_event_put(struct cuda_dev *d, cudaEvent_t e)
{
    if (!e)
        return;
    zb_xgrow((void **)&d->events, &d->capevents, d->nevents + 1,
             sizeof(*d->events));
    d->events[d->nevents++] = e;
}

int cu_post(struct exec *x, struct xmsg *m, struct zb_error *err)
{
    struct cuda_dev *d = (struct cuda_dev *)x->dev;
    struct cuda_req *q = (struct cuda_req *)zb_xcalloc(1, sizeof(*q));
    int rc;

    q->done = cu_event_get(d);
    m->priv = q;
    if (m->send) {      /* after the payload's pass, on compute */
        struct msg_header *h = &d->sendhdr[cu_header_slot(d, m)];
        *h = m->hdr;
        CHECK_CUDA(d, cudaMemcpyAsync(m->buf, h, sizeof(*h),
                                      cudaMemcpyHostToDevice, d->compute));
    }
    rc = d->mpi ? cu_mpi_post(x, d, m, q, err) : cu_nccl_post(x, d, m, q, err);
    if (rc < 0) {
        cu_event_put(d, q->done);
        free(q);
        m->priv = NULL;
    }
    return rc;
}

int cu_flush(struct exec *x, struct zb_error *err)
{
    struct cuda_dev *d = (struct cuda_dev *)x->dev;

    return d->mpi ? cu_mpi_pump(x, d, err) : cu_nccl_flush(x, d, err);
}

int cu_test(struct exec *x, struct xmsg *m, bool *done,
            struct zb_error *err)
{
    struct cuda_dev *d = (struct cuda_dev *)x->dev;
    struct cuda_req *q = (struct cuda_req *)m->priv;
    int rc;

    *done = false;
    rc = d->mpi ? cu_mpi_advance(x, d, m, done, err)
                : cu_nccl_test(d, m, done, err);
    if (rc < 0 || !*done)
        return rc;
    if (q->host)
        cu_staging_put(&d->staging, &d->nstaging, &d->capstaging, q->host);
    cu_event_put(d, q->done);
    free(q);
    m->priv = NULL;
    return 0;
}

/* Where the compute stream starts waiting for comm op `op` (none: -1). */
void cu_wait_mark(struct cuda_dev *d, int op)
{
    if (op < 0)
        return;
    CHECK_CUDA(d, cudaEventRecord(d->cev[3 * op + 2], d->compute));
    d->cwait[op] = true;
}

/* The pass that consumes m waits on the device: its stream waits for the
 * receive's event. Over MPI the data reaches the device only through the
 * host, so the host waits until the copy is queued (under the watchdog,
 * which the engine told). */
int cu_consume(struct exec *x, struct xmsg *m, struct zb_error *err)
{
    struct cuda_dev *d = (struct cuda_dev *)x->dev;
    struct cuda_req *q = (struct cuda_req *)m->priv;
    bool done = false;
    int rc;

    if (d->mpi) {
        for (int spins = 0; !q->copied && !done; spins++) {
            if ((rc = cu_mpi_advance(x, d, m, &done, err)) < 0)
                return rc;
            if (!q->copied && !done)
                exec_pause(spins);
        }
        return cu_take_error(d, err);      /* the copy is on compute */
    }
    if (!q->issued && (rc = cu_nccl_flush(x, d, err)) < 0)
        return rc;
    cu_wait_mark(d, m->op);
    CHECK_CUDA(d, cudaStreamWaitEvent(d->compute, q->done, 0));
    return cu_take_error(d, err);
}
