/* cuda_coll.cu - the data-parallel collectives (coll.c) on the cuda
 * backend: over NCCL on the replicas' communicator and a stream of their
 * own, or under --transport mpi as MPI's collectives on host copies. */
#include <stdlib.h>
#include "cuda_int.h"

/* NCCL's reduce-scatter and all-gather move nranks slots of one count,
 * while the shards (x->shard_n, x->shard_off: the cpu backend's layout)
 * differ by one float when dp does not divide nparam. The shards are then
 * staged in dp slots of the largest shard (shard_n[0]) floats, the short
 * ones padded with a zero, plus a slot for this replica's own; with equal
 * shards NCCL works on the buffers themselves. */
static bool padded(const struct exec *x)
{
    return x->shard_n[x->dp - 1] != x->shard_n[0];
}

static void stage_copy(struct cuda_dev *d, float *dst, const float *src,
                       int n)
{
    CHECK_CUDA(d, cudaMemcpyAsync(dst, src, (size_t)n * sizeof(float),
                                  cudaMemcpyDeviceToDevice, d->coll));
}

/* Collective k on the collectives' stream, after the compute work queued
 * so far (the gradient's last W, the step's update, a gathered weight
 * buffer's allocation); q->done is recorded after it. The staging buffer
 * lives on that stream only: stream-ordered allocation and free. */
static int nccl_coll(struct exec *x, struct cuda_dev *d, enum coll_kind k,
                     int op, float *buf, float *shard, struct cuda_coll *q,
                     struct zb_error *err)
{
    const int dp = x->dp, me = x->replica;
    const size_t slot = (size_t)x->shard_n[0];
    float *slots = NULL, *mine = NULL;
    ncclResult_t r;

    CHECK_CUDA(d, cudaEventRecord(d->ready, d->compute));
    CHECK_CUDA(d, cudaStreamWaitEvent(d->coll, d->ready, 0));
    if (op >= 0)
        CHECK_CUDA(d, cudaEventRecord(d->cev[3 * op], d->coll));
    if (k != COLL_ALLREDUCE && padded(x)) {
        const size_t bytes = (size_t)(dp + 1) * slot * sizeof(float);
        CHECK_CUDA(d, cudaMallocAsync((void **)&slots, bytes, d->coll));
        if (!slots)
            return cu_take_error(d, err);
        mine = slots + (size_t)dp * slot;
        CHECK_CUDA(d, cudaMemsetAsync(slots, 0, bytes, d->coll));
        if (k == COLL_REDUCE_SCATTER)
            for (int i = 0; i < dp; i++)
                stage_copy(d, slots + (size_t)i * slot,
                           buf + x->shard_off[i], x->shard_n[i]);
        else
            stage_copy(d, mine, shard, x->shard_n[me]);
    }
    if (!d->error[0]) {
        CHECK_NCCL(d, ncclGroupStart());
        if (k == COLL_ALLREDUCE)
            CHECK_NCCL(d, ncclAllReduce(buf, buf, x->nparam, ncclFloat,
                                        ncclSum, d->dp_nccl, d->coll));
        else if (k == COLL_REDUCE_SCATTER)
            CHECK_NCCL(d, ncclReduceScatter(slots ? slots : buf,
                                            slots ? mine : shard, slot,
                                            ncclFloat, ncclSum, d->dp_nccl,
                                            d->coll));
        else    /* in place when shard is buf + me * slot (equal shards) */
            CHECK_NCCL(d, ncclAllGather(slots ? mine : shard,
                                        slots ? slots : buf, slot,
                                        ncclFloat, d->dp_nccl, d->coll));
        r = ncclGroupEnd();
        if (r == ncclInProgress)
            r = cu_settle(d->dp_nccl);
        if (r != ncclSuccess)
            cu_nccl_status(d, d->dp_nccl, "ncclGroupEnd (data parallelism)", r,
                           NULL);
    }
    if (slots && k == COLL_REDUCE_SCATTER)
        stage_copy(d, shard, mine, x->shard_n[me]);
    else if (slots)
        for (int i = 0; i < dp; i++)
            stage_copy(d, buf + x->shard_off[i], slots + (size_t)i * slot,
                       x->shard_n[i]);
    if (slots)
        CHECK_CUDA(d, cudaFreeAsync(slots, d->coll));
    CHECK_CUDA(d, cudaEventRecord(q->done, d->coll));
    if (op >= 0) {
        CHECK_CUDA(d, cudaEventRecord(d->cev[3 * op + 1], d->coll));
        d->crec[op] = true;
    }
    return cu_take_error(d, err);
}

/* --transport mpi: what the collective reads is copied to a pinned host
 * buffer on the compute stream (after the work queued so far), MPI's
 * collective (coll_progress.c, the cpu backend's calls) is posted once
 * that copy ran (cu_mpi_pump(), in list order on every replica), and its
 * result is uploaded on the compute stream: no host sync at the post. */
static int mpi_coll(struct exec *x, struct cuda_dev *d, enum coll_kind k,
                    float *buf, float *shard, struct cuda_coll *q,
                    struct zb_error *err)
{
    const int me = x->replica;
    const size_t np = x->nparam, ns = (size_t)x->shard_n[me],
                 off = (size_t)x->shard_off[me];

    q->kind = k;
    q->host = cu_staging_get(d, d->cstaging, &d->ncstaging,
                             (np + ns) * sizeof(float));
    if (!q->host)
        return cu_take_error(d, err);
    q->hbuf = q->host;
    q->hshard = shard == buf + off ? q->hbuf + off : q->hbuf + np;
    if (k == COLL_ALLGATHER)
        CHECK_CUDA(d, cudaMemcpyAsync(q->hshard, shard, ns * sizeof(float),
                                      cudaMemcpyDeviceToHost, d->compute));
    else
        CHECK_CUDA(d, cudaMemcpyAsync(q->hbuf, buf, np * sizeof(float),
                                      cudaMemcpyDeviceToHost, d->compute));
    CHECK_CUDA(d, cudaEventRecord(q->done, d->compute));
    q->from = k == COLL_REDUCE_SCATTER ? q->hshard : q->hbuf;
    q->to = k == COLL_REDUCE_SCATTER ? shard : buf;
    q->n = k == COLL_REDUCE_SCATTER ? ns : np;
    if (d->error[0])
        return cu_take_error(d, err);
    cu_fifo_push((void ***)&d->unposted, &d->unposted_head, &d->nunposted,
                 &d->capunposted, q);
    return 0;
}

/* Queue the result's upload once MPI is done; q->finished then. */
static int mpi_coll_advance(struct exec *x, struct cuda_dev *d,
                            struct cuda_coll *q, struct zb_error *err)
{
    int flag = 0, rc;

    if ((rc = cu_mpi_pump(x, d, err)) < 0)
        return rc;
    if (q->finished || !q->posted)
        return 0;
    rc = MPI_Test(&q->mreq, &flag, MPI_STATUS_IGNORE);
    if (rc != MPI_SUCCESS)
        return exec_mpi_error(rc, "MPI_Test", err);
    if (!flag)
        return 0;
    CHECK_CUDA(d, cudaMemcpyAsync(q->to, q->from, q->n * sizeof(float),
                                  cudaMemcpyHostToDevice, d->compute));
    CHECK_CUDA(d, cudaEventRecord(q->done, d->compute));
    q->finished = true;
    return cu_take_error(d, err);
}

static void coll_free(struct cuda_dev *d, struct cuda_coll *q)
{
    cu_event_put(d, q->done);
    if (q->host)
        cu_staging_put(&d->cstaging, &d->ncstaging, &d->capcstaging, q->host);
    free(q);
}

int cu_coll_post(struct exec *x, enum coll_kind k, int op,
                 float *buf, float *shard, void **req,
                 struct zb_error *err)
{
    struct cuda_dev *d = (struct cuda_dev *)x->dev;
    struct cuda_coll *q = (struct cuda_coll *)zb_xcalloc(1, sizeof(*q));
    int rc;

    q->done = cu_event_get(d);
    q->op = op;
    cu_written(d, buf);            /* the result lands in one of them */
    cu_written(d, shard);
    rc = d->mpi ? mpi_coll(x, d, k, buf, shard, q, err)
                : nccl_coll(x, d, k, op, buf, shard, q, err);
    if (rc < 0) {
        coll_free(d, q);
        return rc;
    }
    *req = q;
    return 0;
}

int cu_coll_test(struct exec *x, void *req, bool *done,
                 struct zb_error *err)
{
    struct cuda_dev *d = (struct cuda_dev *)x->dev;
    struct cuda_coll *q = (struct cuda_coll *)req;
    cudaError_t e;
    int rc;

    *done = false;
    if (d->mpi && ((rc = mpi_coll_advance(x, d, q, err)) < 0 ||
                   !q->finished))
        return rc;
    if ((e = cudaEventQuery(q->done)) == cudaErrorNotReady) {
        /* A failed replica shows here. */
        if (!d->mpi)
            cu_comm_check(d, d->dp_nccl, &d->have_dp,
                          "NCCL data-parallel group");
        return cu_take_error(d, err);
    }
    CHECK_CUDA(d, e);
    if ((rc = cu_take_error(d, err)) < 0)
        return rc;
    coll_free(d, q);
    *done = true;
    return 0;
}

/* The compute stream waits for the collective's event; over MPI the
 * result reaches the device through the host, so the host waits until
 * its upload is queued on the compute stream (under the watchdog, which
 * coll.c told). */
int cu_coll_consume(struct exec *x, void *req, struct zb_error *err)
{
    struct cuda_dev *d = (struct cuda_dev *)x->dev;
    struct cuda_coll *q = (struct cuda_coll *)req;
    int rc;

    if (!d->mpi) {
        cu_wait_mark(d, q->op);
        CHECK_CUDA(d, cudaStreamWaitEvent(d->compute, q->done, 0));
        return cu_take_error(d, err);
    }
    for (int spins = 0; !q->finished; spins++) {
        if ((rc = mpi_coll_advance(x, d, q, err)) < 0)
            return rc;
        if (!q->finished)
            exec_pause(spins);
    }
    return 0;
}
