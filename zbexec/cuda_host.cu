/* cuda_host.cu - the cuda backend's host side (zbexec-cuda, and the
 * emulation of tests/emu/): setup, memory and cuBLAS calls on a compute
 * stream; messages over NCCL, one two-rank communicator and one stream
 * per link (sender, receiver, direction), or over MPI through pinned host
 * buffers (--transport mpi, for ranks that share a GPU); completion on
 * the device: a pass waits for its receive with a stream wait on the
 * receive's event, not on the host. With data parallelism the
 * collectives (coll.c) run over NCCL on one communicator of the replicas
 * and a stream of their own, or under --transport mpi as MPI's
 * collectives on host copies. The kernels are in cuda.cu.
 *
 * Buffers are typed (exec.h, alloc_act): the transformer's activations,
 * their gradients and the messages between stages are bf16, its weights
 * float with a bf16 copy for the GEMMs, gradients and the optimizer's
 * state float; every allocation is recorded with its type, and each step
 * of the math table looks its operands up.
 *
 * It calls CUDA only through cuda_api.h, so the same source runs against
 * the fake of tests/emu/ in CI (make test-emu). Errors are sticky: the
 * next sync point (flush, test, marks) returns the first as ZB_EDEVICE.
 *
 * This file holds the executor table, init and fini and the sticky
 * error; cuda_int.h lists the files that hold the rest. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cuda_int.h"

void cu_sticky(void *dev, const char *file, int line, const char *what)
{
    struct cuda_dev *d = (struct cuda_dev *)dev;

    if (!d->error[0])
        snprintf(d->error, sizeof(d->error), "%s:%d: %s", file, line, what);
}

cudaStream_t cu_compute(void *dev)
{
    return ((struct cuda_dev *)dev)->compute;
}

int cu_take_error(struct cuda_dev *d, struct zb_error *err)
{
    if (!d->error[0])
        return 0;
    return zb_error_set(err, ZB_EDEVICE, "%s", d->error);
}

static int cu_init(struct exec *x, struct zb_error *err)
{
    struct cuda_dev *d;
    int rc, ok;

    d = (struct cuda_dev *)zb_xcalloc(1, sizeof(*d));
    x->dev = d;
    d->bufs = new std::map<uintptr_t, struct dbuf>();
    d->act = x->opt.transformer ? CU_BF16 : CU_F32;
    d->mpi = x->opt.transport && !strcmp(x->opt.transport, "mpi");
    /* A rank's NCCL kernels run on up to 2 + 8 streams at once (compute,
     * collectives, a link per neighbour, direction and chunk pair), and
     * CUDA runs streams concurrently only on separate hardware queues,
     * CUDA_DEVICE_MAX_CONNECTIONS of them (8 by default; read when the
     * context is made, below): ask for the most, 32, unless the user
     * chose (docs/zbexec.md, "Backends"). */
    setenv("CUDA_DEVICE_MAX_CONNECTIONS", "32", 0);
    rc = cu_pick_device(x, d, err);
    if (!rc)
        rc = cu_setup(x, d, err);
    /* NCCL's setup waits for the peers: only go on if every rank got
     * here. A rank that did returns 0 when another failed; the caller's
     * agreement then fails every rank with the failing rank's message. */
    ok = rc == 0;
    MPI_Allreduce(MPI_IN_PLACE, &ok, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    if (ok && !d->mpi) {
        watchdog_phase("NCCL init");
        if ((rc = cu_nccl_connect(x, d, err)) == 0 && x->dp > 1) {
            watchdog_phase("NCCL init of the data-parallel group");
            rc = cu_dp_connect(x, d, err);
        }
    }
    if (ok && !rc) {
        const int streams = 1 + d->nlinks + (d->coll != NULL);
        const char *env = getenv("CUDA_DEVICE_MAX_CONNECTIONS");
        if (env && atoi(env) < streams)
            exec_warn(x->world, "CUDA_DEVICE_MAX_CONNECTIONS=%s is below "
                      "this rank's %d streams: CUDA may serialise NCCL "
                      "kernels that must run together", env, streams);
        d->used_start = cu_mem_used(d);
    }
    return rc;
}

/* After a failure a communicator may have work that never ends: abort
 * it; else let its work finish and free it. */
static void comm_close(struct cuda_dev *d, ncclComm_t c, bool have)
{
    if (have && d->error[0]) {
        ncclCommAbort(c);
    } else if (have) {
        ncclCommFinalize(c);
        cu_settle(c);
        ncclCommDestroy(c);
    }
}

static void cu_fini(struct exec *x)
{
    struct cuda_dev *d = (struct cuda_dev *)x->dev;

    for (int k = 0; k < d->nlinks; k++) {
        struct link *l = &d->links[k];
        comm_close(d, l->nccl, l->have_nccl);
        if (l->stream)
            cudaStreamDestroy(l->stream);
        free(l->queue);
    }
    comm_close(d, d->dp_nccl, d->have_dp);
    if (d->coll)
        cudaStreamDestroy(d->coll);
    for (int i = 0; i < d->nstaging; i++)
        cudaFreeHost(d->staging[i]);
    for (int i = 0; i < d->ncstaging; i++)
        cudaFreeHost(d->cstaging[i]);
    for (int i = 0; d->marks && i < d->nmarks; i++)
        cudaEventDestroy(d->marks[i]);
    if (d->blas)
        cublasDestroy(d->blas);
    if (d->headers)
        cudaFreeHost(d->headers);
    if (d->sendhdr)
        cudaFreeHost(d->sendhdr);
    for (int i = 0; d->cev && i < 3 * x->ops->n; i++)
        cudaEventDestroy(d->cev[i]);
    for (int i = 0; i < d->nevents; i++)
        cudaEventDestroy(d->events[i]);
    free(d->events);
    free(d->cev);
    free(d->crec);
    free(d->cwait);
    if (d->ready)
        cudaEventDestroy(d->ready);
    if (d->compute)
        cudaStreamDestroy(d->compute);
    free(d->links);
    free(d->staging);
    free(d->cstaging);
    free(d->unsent);
    free(d->unposted);
    free(d->marks);
    free(d->recorded);
    delete d->bufs;
    free(d);
    x->dev = NULL;
}

extern "C" const struct zb_executor zb_executor_cuda = {
    "cuda", &cu_math, cu_init, cu_fini, cu_post, cu_flush, cu_test,
    cu_consume, cu_coll_post, cu_coll_test, cu_coll_consume, cu_mark,
    cu_marks, cu_comm_times, cu_memory,
};
