/* cuda_setup.cu - the cuda backend's setup, called by cu_init: this
 * process's GPU, its pool, streams, events and pinned headers, then
 * NCCL's communicators, one per link and one of the data-parallel
 * replicas, all connected before the first iteration. */
#include <stdlib.h>
#include <string.h>
#include "cuda_int.h"

/* This process's device: its rank on the node modulo the GPUs it sees
 * (one each under CUDA_VISIBLE_DEVICES or SLURM --gpus-per-task, all of
 * them otherwise). NCCL refuses two ranks of one communicator on one
 * GPU, so ranks that share one (same PCI bus id) need --transport mpi. */
int cu_pick_device(struct exec *x, struct cuda_dev *d,
                   struct zb_error *err)
{
    enum { BUS_ID = 32 };
    MPI_Comm node;
    int local = 0, nlocal = 1, count = 0, dev, rc = 0;
    char *ids;
    cudaError_t e;

    /* The collectives run on every rank, a failing one included. */
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, x->rank,
                        MPI_INFO_NULL, &node);
    MPI_Comm_rank(node, &local);
    MPI_Comm_size(node, &nlocal);
    ids = (char *)zb_xcalloc((size_t)nlocal, BUS_ID);
    e = cudaGetDeviceCount(&count);
    dev = count > 0 ? local % count : 0;
    if (e != cudaSuccess || count == 0)
        rc = zb_error_set(err, ZB_EDEVICE, "no CUDA device for the cuda "
                          "backend: %s", e != cudaSuccess
                              ? cudaGetErrorString(e) : "none found");
    else if ((e = cudaSetDevice(dev)) != cudaSuccess)
        rc = zb_error_set(err, ZB_EDEVICE, "cudaSetDevice(%d): %s", dev,
                          cudaGetErrorString(e));
    else if ((e = cudaDeviceGetPCIBusId(ids + (size_t)local * BUS_ID,
                                        BUS_ID, dev)) != cudaSuccess)
        rc = zb_error_set(err, ZB_EDEVICE, "cudaDeviceGetPCIBusId(%d): %s",
                          dev, cudaGetErrorString(e));
    MPI_Allgather(MPI_IN_PLACE, BUS_ID, MPI_CHAR, ids, BUS_ID, MPI_CHAR,
                  node);
    MPI_Comm_free(&node);
    for (int r = 0; !rc && !d->mpi && r < nlocal; r++)
        if (r != local && ids[(size_t)r * BUS_ID] &&
            !strcmp(ids + (size_t)r * BUS_ID, ids + (size_t)local * BUS_ID))
            rc = zb_error_set(err, ZB_EDEVICE, "GPU %s is shared with "
                              "another rank on this node (%d ranks, %d "
                              "GPU%s visible): NCCL needs a GPU per rank; "
                              "use --transport mpi", ids + (size_t)local *
                              BUS_ID, nlocal, count, count == 1 ? "" : "s");
    free(ids);
    return rc;
}

int cu_setup(struct exec *x, struct cuda_dev *d, struct zb_error *err)
{
    cudaMemPool_t pool;
    uint64_t keep = UINT64_MAX;
    int dev = 0;

    /* The default pool returns freed memory to the driver at every sync
     * unless told to keep it: every allocation would then be a real one. */
    CHECK_CUDA(d, cudaGetDevice(&dev));
    CHECK_CUDA(d, cudaDeviceGetDefaultMemPool(&pool, dev));
    CHECK_CUDA(d, cudaMemPoolSetAttribute(
                      pool, cudaMemPoolAttrReleaseThreshold, &keep));
    CHECK_CUDA(d, cudaStreamCreateWithFlags(&d->compute,
                                            cudaStreamNonBlocking));
    CHECK_CUDA(d, cudaEventCreateWithFlags(&d->ready,
                                           cudaEventDisableTiming));
    d->nheaders = x->ops->n + 1;
    CHECK_CUDA(d, cudaMallocHost((void **)&d->headers,
                                 (size_t)d->nheaders * sizeof(*d->headers)));
    CHECK_CUDA(d, cudaMallocHost((void **)&d->sendhdr,
                                 (size_t)d->nheaders * sizeof(*d->sendhdr)));
    CHECK_BLAS(d, cublasCreate(&d->blas));
    CHECK_BLAS(d, cublasSetStream(d->blas, d->compute));
    d->nmarks = 3 * x->ops->n + 1;
    d->marks = (cudaEvent_t *)zb_xcalloc((size_t)d->nmarks,
                                         sizeof(cudaEvent_t));
    d->recorded = (bool *)zb_xcalloc((size_t)d->nmarks, sizeof(bool));
    for (int i = 0; i < d->nmarks; i++)
        CHECK_CUDA(d, cudaEventCreate(&d->marks[i]));
    d->cev = (cudaEvent_t *)zb_xcalloc(3 * (size_t)x->ops->n,
                                       sizeof(cudaEvent_t));
    d->crec = (bool *)zb_xcalloc((size_t)x->ops->n, sizeof(bool));
    d->cwait = (bool *)zb_xcalloc((size_t)x->ops->n, sizeof(bool));
    for (int i = 0; i < 3 * x->ops->n; i++)
        CHECK_CUDA(d, cudaEventCreate(&d->cev[i]));
    d->pool = pool;
    return cu_take_error(d, err);
}

/* Does some stage boundary carry dir traffic from src to dst? */
static bool is_link(const struct zb_profile *p, int src, int dst, int dir)
{
    for (int s = 0; s + 1 < zb_profile_stages(p); s++) {
        int a = zb_profile_stage_rank(p, s);
        int b = zb_profile_stage_rank(p, s + 1);
        if (dir == MSG_F ? a == src && b == dst : b == src && a == dst)
            return true;
    }
    return false;
}

/* Connect every link at init with one tiny message each, in the links'
 * global order (src, dst, dir), which both ends of a link share. NCCL
 * connects a link at its first use, and that first group waits for the
 * peer's side: in an order both ends agree on, the first unconnected link
 * always has both ends at it, so no wait is in a cycle, and no connection
 * is made in the measured iterations. */
static int preconnect(struct exec *x, struct cuda_dev *d,
                      struct zb_error *err)
{
    float *probe = NULL;

    CHECK_CUDA(d, cudaMallocAsync((void **)&probe, sizeof(float),
                                  d->compute));
    CHECK_CUDA(d, cudaMemsetAsync(probe, 0, sizeof(float), d->compute));
    CHECK_CUDA(d, cudaStreamSynchronize(d->compute));
    for (int k = 0; k < d->nlinks && !d->error[0]; k++) {
        struct link *l = &d->links[k];
        ncclResult_t r;
        CHECK_NCCL(d, ncclGroupStart());
        if (l->src == x->rank)
            CHECK_NCCL(d, ncclSend(probe, 1, ncclFloat, 1, l->nccl,
                                   l->stream));
        else
            CHECK_NCCL(d, ncclRecv(probe, 1, ncclFloat, 0, l->nccl,
                                   l->stream));
        r = ncclGroupEnd();
        if (r == ncclInProgress)
            r = cu_settle(l->nccl);
        if (r != ncclSuccess)
            cu_nccl_status(d, l->nccl, "connecting a link", r, NULL);
        CHECK_CUDA(d, cudaStreamSynchronize(l->stream));
    }
    CHECK_CUDA(d, cudaFreeAsync(probe, d->compute));
    return cu_take_error(d, err);
}

/* One two-rank communicator per link, made in the links' global order
 * (src, dst, dir): the sender makes the id and MPI carries it, so no
 * rank waits on one that waits on it. Every init is started before any
 * is waited for (non-blocking communicators), and a failure aborts the
 * communicator and the job at once: the peers would wait in vain. */
int cu_nccl_connect(struct exec *x, struct cuda_dev *d,
                    struct zb_error *err)
{
    const struct zb_profile *p = x->p;
    int rc = 0;

    d->links = (struct link *)zb_xcalloc((size_t)4 * p->pp,
                                         sizeof(*d->links));
    for (int src = 0; src < p->pp; src++)
        for (int dst = 0; dst < p->pp; dst++)
            for (int dir = MSG_F; dir <= MSG_B; dir++) {
                if (src == dst || (src != x->rank && dst != x->rank) ||
                    !is_link(p, src, dst, dir))
                    continue;
                struct link *l = &d->links[d->nlinks++];
                ncclConfig_t cfg = NCCL_CONFIG_INITIALIZER;
                ncclUniqueId id;
                ncclResult_t r = ncclSuccess;
                memset(l, 0, sizeof(*l));
                l->src = src;
                l->dst = dst;
                l->dir = dir;
                memset(&id, 0, sizeof(id));
                if (src == x->rank) {
                    r = ncclGetUniqueId(&id);
                    if (r != ncclSuccess)
                        memset(&id, 0xff, sizeof(id));  /* tells dst */
                    MPI_Send(&id, sizeof(id), MPI_BYTE, dst, dir, x->comm);
                } else {
                    ncclUniqueId failed;
                    memset(&failed, 0xff, sizeof(failed));
                    MPI_Recv(&id, sizeof(id), MPI_BYTE, src, dir, x->comm,
                             MPI_STATUS_IGNORE);
                    if (!memcmp(&id, &failed, sizeof(id)))
                        r = ncclInternalError;      /* the sender's */
                }
                if (r != ncclSuccess)
                    rc = cu_nccl_status(d, NULL, src == x->rank
                                        ? "ncclGetUniqueId"
                                        : "the link's sender, ncclGetUniqueId",
                                        r, err);
                CHECK_CUDA(d, cudaStreamCreateWithFlags(
                                  &l->stream, cudaStreamNonBlocking));
                if (rc < 0)     /* the job is aborted below */
                    continue;
                cfg.blocking = 0;
                r = ncclCommInitRankConfig(&l->nccl, 2, id,
                                           src == x->rank ? 0 : 1, &cfg);
                if (r != ncclSuccess && r != ncclInProgress && !rc)
                    rc = cu_nccl_status(d, NULL, "ncclCommInitRankConfig", r,
                                        err);
                l->have_nccl = r == ncclSuccess || r == ncclInProgress;
            }
    for (int k = 0; k < d->nlinks && !rc; k++)
        rc = cu_nccl_status(d, d->links[k].nccl, "NCCL init",
                            cu_settle(d->links[k].nccl), err);
    if (!rc)
        rc = cu_take_error(d, err);
    if (!rc)
        rc = preconnect(x, d, err);
    if (rc < 0) {
        for (int k = 0; k < d->nlinks; k++)
            if (d->links[k].have_nccl) {
                ncclCommAbort(d->links[k].nccl);
                d->links[k].have_nccl = false;
            }
        exec_abort(x, err);
    }
    return 0;
}

/* The replicas of this pipeline rank: one communicator over x->dp_comm
 * (ncclCommSplit would need a communicator of the whole world, which the
 * links do not make), its id made by replica 0 and broadcast by MPI.
 * Called after every link is up, in the same place on every rank: no
 * init waits on one that waits on it. A failure aborts the communicator
 * and the job at once, as the links' does: the replicas would wait in
 * their init, or later in a collective, in vain. */
int cu_dp_connect(struct exec *x, struct cuda_dev *d,
                  struct zb_error *err)
{
    ncclConfig_t cfg = NCCL_CONFIG_INITIALIZER;
    ncclUniqueId id;
    ncclResult_t r;

    CHECK_CUDA(d, cudaStreamCreateWithFlags(&d->coll,
                                            cudaStreamNonBlocking));
    memset(&id, 0, sizeof(id));
    if (x->replica == 0 && (r = ncclGetUniqueId(&id)) != ncclSuccess)
        cu_nccl_status(d, NULL, "ncclGetUniqueId (data parallelism)", r, NULL);
    MPI_Bcast(&id, sizeof(id), MPI_BYTE, 0, x->dp_comm);
    if (!d->error[0]) {
        cfg.blocking = 0;
        r = ncclCommInitRankConfig(&d->dp_nccl, x->dp, id, x->replica,
                                   &cfg);
        d->have_dp = r == ncclSuccess || r == ncclInProgress;
        if (!d->have_dp)
            cu_nccl_status(d, NULL, "ncclCommInitRankConfig (data "
                           "parallelism)", r, NULL);
        else
            cu_nccl_status(d, d->dp_nccl, "NCCL init (data parallelism)",
                           cu_settle(d->dp_nccl), NULL);
    }
    if (cu_take_error(d, err) < 0) {
        if (d->have_dp)
            ncclCommAbort(d->dp_nccl);
        d->have_dp = false;
        exec_abort(x, err);
    }
    return 0;
}
