/* cuda_mpi.cu - messages over MPI (--transport mpi, for ranks that share
 * a GPU) through pinned host buffers, copied on the compute stream and
 * handed to MPI in post order once their copy ran; the pinned buffers
 * and the FIFOs the collectives (cuda_coll.cu) use too. */
#include <string.h>
#include "cuda_int.h"

static MPI_Datatype msg_mpi(const struct cuda_dev *d)
{
    return d->act == CU_BF16 ? MPI_UINT16_T : MPI_FLOAT;
}

/* A free pinned buffer of `bytes` from list (all of one list's buffers
 * have one size: every message's, every collective's). */
float *cu_staging_get(struct cuda_dev *d, float **list, int *nlist,
                      size_t bytes)
{
    float *p = NULL;

    if (*nlist > 0)
        return list[--*nlist];
    CHECK_CUDA(d, cudaMallocHost((void **)&p, bytes));
    return p;
}

void cu_staging_put(float ***list, int *nlist, int *cap, float *p)
{
    zb_xgrow((void **)list, cap, *nlist + 1, sizeof(**list));
    (*list)[(*nlist)++] = p;
}

/* Append p to a FIFO of pointers (head: the oldest not yet taken). */
void cu_fifo_push(void ***items, int *head, int *n, int *cap, void *p)
{
    if (*head > 0 && *head == *n)
        *head = *n = 0;
    zb_xgrow((void **)items, cap, *n + 1, sizeof(**items));
    (*items)[(*n)++] = p;
}

/* Hand MPI every send and collective whose download is done, in post
 * order (a later one never overtakes an earlier one: pairs match in
 * order, and replicas must call collectives in one order). */
int cu_mpi_pump(struct exec *x, struct cuda_dev *d, struct zb_error *err)
{
    cudaError_t e;
    int rc;

    while (d->unsent_head < d->nunsent) {
        struct xmsg *m = d->unsent[d->unsent_head];
        struct cuda_req *q = (struct cuda_req *)m->priv;
        if ((e = cudaEventQuery(q->done)) == cudaErrorNotReady)
            break;
        CHECK_CUDA(d, e);
        rc = MPI_Isend(q->host, (int)cu_msg_count(d, m->n), msg_mpi(d),
                       m->peer, 0, x->comm, &q->mreq);
        if (rc != MPI_SUCCESS)
            return exec_mpi_error(rc, "MPI_Isend", err);
        q->issued = true;
        d->unsent_head++;
    }
    while (d->unposted_head < d->nunposted) {
        struct cuda_coll *q = d->unposted[d->unposted_head];
        if ((e = cudaEventQuery(q->done)) == cudaErrorNotReady)
            break;
        CHECK_CUDA(d, e);
        if ((rc = coll_mpi_post(x, q->kind, q->hbuf, q->hshard, &q->mreq,
                                err)) < 0)
            return rc;
        q->posted = true;
        d->unposted_head++;
    }
    return cu_take_error(d, err);
}

/* A send copies to the host on the compute stream (after the pass that
 * made it) and joins the FIFO that cu_mpi_pump() hands to MPI; a receive
 * lands in a pinned buffer and is copied to the device on the compute
 * stream. */
int cu_mpi_post(struct exec *x, struct cuda_dev *d, struct xmsg *m,
                struct cuda_req *q, struct zb_error *err)
{
    int rc;

    q->host = cu_staging_get(d, d->staging, &d->nstaging,
                             cu_msg_bytes(d, m->n));
    if (m->send) {
        CHECK_CUDA(d, cudaMemcpyAsync(q->host, m->buf, cu_msg_bytes(d, m->n),
                                      cudaMemcpyDeviceToHost, d->compute));
        CHECK_CUDA(d, cudaEventRecord(q->done, d->compute));
        cu_fifo_push((void ***)&d->unsent, &d->unsent_head, &d->nunsent,
                     &d->capunsent, m);
        return cu_take_error(d, err);
    }
    m->buf = cu_alloc_act(d, m->n, MSG_HDR_FLOATS);
    rc = MPI_Irecv(q->host, (int)cu_msg_count(d, m->n), msg_mpi(d), m->peer, 0,
                   x->comm, &q->mreq);
    if (rc != MPI_SUCCESS)
        return exec_mpi_error(rc, "MPI_Irecv", err);
    q->issued = true;
    return cu_take_error(d, err);
}

/* Move m one step on (host side), and every unissued send with it;
 * *done once nothing is left. */
int cu_mpi_advance(struct exec *x, struct cuda_dev *d, struct xmsg *m,
                   bool *done, struct zb_error *err)
{
    struct cuda_req *q = (struct cuda_req *)m->priv;
    int flag = 0, rc;
    cudaError_t e;

    if ((rc = cu_mpi_pump(x, d, err)) < 0)
        return rc;
    if (m->send && !q->issued)
        return 0;
    if (m->send || !q->copied) {
        rc = MPI_Test(&q->mreq, &flag, MPI_STATUS_IGNORE);
        if (rc != MPI_SUCCESS)
            return exec_mpi_error(rc, "MPI_Test", err);
        if (!flag)
            return cu_take_error(d, err);
        if (m->send) {
            *done = true;
            return cu_take_error(d, err);
        }
        memcpy(&m->got, q->host, sizeof(m->got));
        CHECK_CUDA(d, cudaMemcpyAsync(m->buf, q->host, cu_msg_bytes(d, m->n),
                                      cudaMemcpyHostToDevice, d->compute));
        CHECK_CUDA(d, cudaEventRecord(q->done, d->compute));
        q->copied = true;
    }
    /* The staging buffer is free again once the copy ran. */
    if ((e = cudaEventQuery(q->done)) == cudaErrorNotReady)
        return cu_take_error(d, err);
    CHECK_CUDA(d, e);
    *done = true;
    return cu_take_error(d, err);
}
