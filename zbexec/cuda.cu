/* cuda.cu - the cuda backend: cuBLAS and a few kernels on a compute
 * stream, NCCL send/recv on a communication stream, the two joined by
 * events, CUDA events for the timeline.
 *
 * Built where nvcc exists; no GPU runs it in CI, so it stays small and is
 * meant to be read. Errors are sticky (CUDA's own model): a failing call
 * records file:line and the first message, and the next sync point
 * (flush, test, marks) returns it as ZB_EDEVICE. */
#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <nccl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "exec.h"
extern "C" {
#include "zbsched/xalloc.h"
}

struct cuda_dev {
    cudaStream_t compute, comm, header;
    cublasHandle_t blas;
    ncclComm_t nccl;
    bool have_nccl, group_open;
    struct xmsg **group;        /* posted since the last flush */
    int ngroup, capgroup;
    cudaEvent_t ready;          /* compute work a group must see */
    cudaEvent_t *marks;         /* timeline slots */
    bool *recorded;
    int nmarks;
    double base;                /* host ms of slot 0 */
    struct msg_header *pinned;  /* header bounce buffer */
    char error[256];            /* first failure, "" if none */
};

struct cuda_req {
    cudaEvent_t done;           /* recorded on comm after the group */
    bool recorded;
};

static void sticky(struct cuda_dev *d, const char *file, int line,
                   const char *what)
{
    if (!d->error[0])
        snprintf(d->error, sizeof(d->error), "%s:%d: %s", file, line, what);
}

#define CHECK_CUDA(d, call)                                                \
    do {                                                                   \
        cudaError_t e_ = (call);                                           \
        if (e_ != cudaSuccess)                                             \
            sticky(d, __FILE__, __LINE__, cudaGetErrorString(e_));         \
    } while (0)
#define CHECK_BLAS(d, call)                                                \
    do {                                                                   \
        cublasStatus_t s_ = (call);                                        \
        if (s_ != CUBLAS_STATUS_SUCCESS)                                   \
            sticky(d, __FILE__, __LINE__, cublasGetStatusString(s_));      \
    } while (0)
#define CHECK_NCCL(d, call)                                                \
    do {                                                                   \
        ncclResult_t r_ = (call);                                          \
        if (r_ != ncclSuccess)                                             \
            sticky(d, __FILE__, __LINE__, ncclGetErrorString(r_));         \
    } while (0)

static int take_error(struct cuda_dev *d, struct zb_error *err)
{
    if (!d->error[0])
        return 0;
    return zb_error_set(err, ZB_EDEVICE, "%s", d->error);
}

/* ---- Math ------------------------------------------------------------- */

static const int THREADS = 256;

static int blocks(size_t n)
{
    size_t b = (n + THREADS - 1) / THREADS;
    return b < 1 ? 1 : b > 4096 ? 4096 : (int)b;
}

__global__ void k_bias_act(float *z, const float *bias, int rows, int cols,
                           bool tanh_act)
{
    size_t n = (size_t)rows * cols;
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x) {
        float v = z[i] + bias[i % cols];
        z[i] = tanh_act ? tanhf(v) : v;
    }
}

__global__ void k_act_grad(float *dz, const float *dy, const float *y,
                           size_t n)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x)
        dz[i] = dy[i] * (1.0f - y[i] * y[i]);
}

/* One thread per column, rows in order: deterministic, like the CPU. */
__global__ void k_colsum(float *out, const float *x, int rows, int cols)
{
    int j = blockIdx.x * blockDim.x + threadIdx.x;
    if (j >= cols)
        return;
    float s = 0;
    for (int i = 0; i < rows; i++)
        s += x[(size_t)i * cols + j];
    out[j] = s;
}

__global__ void k_axpy(float *y, float a, const float *x, size_t n)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x)
        y[i] += a * x[i];
}

/* One block: a fixed reduction tree, so the loss is reproducible. */
__global__ void k_mse(float *dy, float *loss, const float *y, const float *t,
                      size_t n, float scale)
{
    __shared__ double part[256];
    double s = 0;
    for (size_t i = threadIdx.x; i < n; i += blockDim.x) {
        float d = y[i] - t[i];
        dy[i] = scale * d;
        s += (double)d * d;
    }
    part[threadIdx.x] = s;
    __syncthreads();
    for (int w = blockDim.x / 2; w > 0; w /= 2) {
        if ((int)threadIdx.x < w)
            part[threadIdx.x] += part[threadIdx.x + w];
        __syncthreads();
    }
    if (threadIdx.x == 0)
        *loss = (float)(0.5 * scale * part[0]);
}

static float *cu_alloc(void *dev, size_t n)
{
    struct cuda_dev *d = (struct cuda_dev *)dev;
    void *p = NULL;

    n = n ? n : 1;
    /* Stream-ordered: no device-wide synchronisation per buffer. */
    CHECK_CUDA(d, cudaMallocAsync(&p, n * sizeof(float), d->compute));
    CHECK_CUDA(d, cudaMemsetAsync(p, 0, n * sizeof(float), d->compute));
    return (float *)p;
}

static void cu_release(void *dev, float *p)
{
    struct cuda_dev *d = (struct cuda_dev *)dev;

    if (p)
        CHECK_CUDA(d, cudaFreeAsync(p, d->compute));
}

static void cu_upload(void *dev, float *dst, const float *host, size_t n)
{
    struct cuda_dev *d = (struct cuda_dev *)dev;

    /* Pageable source: staged before the call returns, so callers may
     * reuse host memory at once. */
    CHECK_CUDA(d, cudaMemcpyAsync(dst, host, n * sizeof(float),
                                  cudaMemcpyHostToDevice, d->compute));
}

static void cu_download(void *dev, float *host, const float *src, size_t n)
{
    struct cuda_dev *d = (struct cuda_dev *)dev;

    CHECK_CUDA(d, cudaMemcpyAsync(host, src, n * sizeof(float),
                                  cudaMemcpyDeviceToHost, d->compute));
    CHECK_CUDA(d, cudaStreamSynchronize(d->compute));
}

static void cu_copy(void *dev, float *dst, const float *src, size_t n)
{
    struct cuda_dev *d = (struct cuda_dev *)dev;

    CHECK_CUDA(d, cudaMemcpyAsync(dst, src, n * sizeof(float),
                                  cudaMemcpyDeviceToDevice, d->compute));
}

/* Row-major C = op(A) op(B) is column-major C^T = op(B)^T op(A)^T. */
static void cu_gemm(void *dev, bool ta, bool tb, int m, int n, int k,
                    const float *a, const float *b, float beta, float *c)
{
    struct cuda_dev *d = (struct cuda_dev *)dev;
    const float one = 1.0f;

    CHECK_BLAS(d, cublasSgemm(d->blas, tb ? CUBLAS_OP_T : CUBLAS_OP_N,
                              ta ? CUBLAS_OP_T : CUBLAS_OP_N, n, m, k, &one,
                              b, tb ? k : n, a, ta ? m : k, &beta, c, n));
}

static void cu_bias_act(void *dev, float *z, const float *bias, int rows,
                        int cols, bool tanh_act)
{
    struct cuda_dev *d = (struct cuda_dev *)dev;

    k_bias_act<<<blocks((size_t)rows * cols), THREADS, 0, d->compute>>>(
        z, bias, rows, cols, tanh_act);
    CHECK_CUDA(d, cudaGetLastError());
}

static void cu_act_grad(void *dev, float *dz, const float *dy,
                        const float *y, size_t n)
{
    struct cuda_dev *d = (struct cuda_dev *)dev;

    k_act_grad<<<blocks(n), THREADS, 0, d->compute>>>(dz, dy, y, n);
    CHECK_CUDA(d, cudaGetLastError());
}

static void cu_colsum(void *dev, float *out, const float *x, int rows,
                      int cols)
{
    struct cuda_dev *d = (struct cuda_dev *)dev;

    k_colsum<<<blocks((size_t)cols), THREADS, 0, d->compute>>>(out, x, rows,
                                                                cols);
    CHECK_CUDA(d, cudaGetLastError());
}

static void cu_axpy(void *dev, float *y, float a, const float *x, size_t n)
{
    struct cuda_dev *d = (struct cuda_dev *)dev;

    k_axpy<<<blocks(n), THREADS, 0, d->compute>>>(y, a, x, n);
    CHECK_CUDA(d, cudaGetLastError());
}

static void cu_mse(void *dev, float *dy, float *loss, const float *y,
                   const float *t, size_t n, float scale)
{
    struct cuda_dev *d = (struct cuda_dev *)dev;

    k_mse<<<1, THREADS, 0, d->compute>>>(dy, loss, y, t, n, scale);
    CHECK_CUDA(d, cudaGetLastError());
}

static const struct zb_math cuda_math = {
    cu_alloc, cu_release, cu_upload, cu_download, cu_copy, cu_gemm,
    cu_bias_act, cu_act_grad, cu_colsum, cu_axpy, cu_mse,
};

/* ---- Setup ---------------------------------------------------------- */

/* The device of this process: its rank among the processes of its node. */
static int pick_device(int rank, struct zb_error *err)
{
    MPI_Comm node;
    int local = 0, nlocal = 1, count = 0;
    cudaError_t e;

    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank,
                        MPI_INFO_NULL, &node);
    MPI_Comm_rank(node, &local);
    MPI_Comm_size(node, &nlocal);
    MPI_Comm_free(&node);
    e = cudaGetDeviceCount(&count);
    if (e != cudaSuccess || count == 0)
        return zb_error_set(err, ZB_EDEVICE, "no CUDA device for the cuda "
                            "backend: %s", e != cudaSuccess
                                ? cudaGetErrorString(e) : "none found");
    /* NCCL refuses two ranks of one communicator on one GPU. */
    if (nlocal > count)
        return zb_error_set(err, ZB_EDEVICE, "%d ranks on this node but %d "
                            "GPU%s: the cuda backend needs a GPU per rank",
                            nlocal, count, count == 1 ? "" : "s");
    if ((e = cudaSetDevice(local)) != cudaSuccess)
        return zb_error_set(err, ZB_EDEVICE, "cudaSetDevice(%d): %s", local,
                            cudaGetErrorString(e));
    return 0;
}

static int setup(struct exec *x, struct cuda_dev *d, struct zb_error *err)
{
    CHECK_CUDA(d, cudaStreamCreateWithFlags(&d->compute,
                                            cudaStreamNonBlocking));
    CHECK_CUDA(d, cudaStreamCreateWithFlags(&d->comm,
                                            cudaStreamNonBlocking));
    CHECK_CUDA(d, cudaStreamCreateWithFlags(&d->header,
                                            cudaStreamNonBlocking));
    CHECK_CUDA(d, cudaEventCreateWithFlags(&d->ready,
                                           cudaEventDisableTiming));
    CHECK_CUDA(d, cudaMallocHost((void **)&d->pinned, sizeof(*d->pinned)));
    CHECK_BLAS(d, cublasCreate(&d->blas));
    CHECK_BLAS(d, cublasSetStream(d->blas, d->compute));
    d->nmarks = 3 * x->ops->n + 1;
    d->marks = (cudaEvent_t *)zb_xcalloc((size_t)d->nmarks,
                                      sizeof(cudaEvent_t));
    d->recorded = (bool *)zb_xcalloc((size_t)d->nmarks, sizeof(bool));
    for (int i = 0; i < d->nmarks; i++)
        CHECK_CUDA(d, cudaEventCreate(&d->marks[i]));
    return take_error(d, err);
}

static int nccl_connect(struct exec *x, struct cuda_dev *d,
                        struct zb_error *err)
{
    ncclUniqueId id;
    ncclResult_t r = ncclSuccess;
    int status;

    /* As nccl-tests does: rank 0 makes the id, MPI carries it (with
     * rank 0's status, so a failure there stops every rank, not hangs). */
    memset(&id, 0, sizeof(id));
    if (x->rank == 0)
        r = ncclGetUniqueId(&id);
    status = (int)r;
    MPI_Bcast(&status, 1, MPI_INT, 0, MPI_COMM_WORLD);
    if (status != ncclSuccess)
        return zb_error_set(err, ZB_EDEVICE, "ncclGetUniqueId on rank 0: %s",
                            ncclGetErrorString((ncclResult_t)status));
    MPI_Bcast(&id, sizeof(id), MPI_BYTE, 0, MPI_COMM_WORLD);
    r = ncclCommInitRank(&d->nccl, x->nranks, id, x->rank);
    if (r != ncclSuccess)
        return zb_error_set(err, ZB_EDEVICE, "ncclCommInitRank: %s",
                            ncclGetErrorString(r));
    d->have_nccl = true;
    return 0;
}

static int cu_init(struct exec *x, struct zb_error *err)
{
    struct cuda_dev *d = (struct cuda_dev *)zb_xcalloc(1, sizeof(*d));
    int rc, ok;

    x->dev = d;
    rc = pick_device(x->rank, err);
    if (!rc)
        rc = setup(x, d, err);
    /* NCCL's setup is collective: only go on if every rank got here. A
     * rank that did returns 0 when another failed; the caller's agreement
     * then fails every rank with the failing rank's message. */
    ok = rc == 0;
    MPI_Allreduce(MPI_IN_PLACE, &ok, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    if (!ok)
        return rc;
    return nccl_connect(x, d, err);
}

static void cu_fini(struct exec *x)
{
    struct cuda_dev *d = (struct cuda_dev *)x->dev;

    if (d->have_nccl)
        ncclCommDestroy(d->nccl);
    for (int i = 0; d->marks && i < d->nmarks; i++)
        cudaEventDestroy(d->marks[i]);
    if (d->blas)
        cublasDestroy(d->blas);
    if (d->pinned)
        cudaFreeHost(d->pinned);
    if (d->ready)
        cudaEventDestroy(d->ready);
    if (d->compute)
        cudaStreamDestroy(d->compute);
    if (d->comm)
        cudaStreamDestroy(d->comm);
    if (d->header)
        cudaStreamDestroy(d->header);
    free(d->marks);
    free(d->recorded);
    free(d->group);
    free(d);
    x->dev = NULL;
}

/* ---- Transport -------------------------------------------------------- */

/* Consecutive comm ops of the list form one NCCL group, issued by flush()
 * before the next compute op. A group only lets its ops progress together,
 * a subset of the ordering the validator proved deadlock-free with each op
 * blocking in list order, so grouping cannot introduce a deadlock. */
static int cu_post(struct exec *x, struct xmsg *m, struct zb_error *err)
{
    struct cuda_dev *d = (struct cuda_dev *)x->dev;
    struct cuda_req *q = (struct cuda_req *)zb_xcalloc(1, sizeof(*q));

    CHECK_CUDA(d, cudaEventCreateWithFlags(&q->done,
                                           cudaEventDisableTiming));
    if (!d->group_open) {
        CHECK_NCCL(d, ncclGroupStart());
        d->group_open = true;
    }
    if (m->send)
        CHECK_NCCL(d, ncclSend(m->buf, m->n, ncclFloat, m->peer, d->nccl,
                               d->comm));
    else
        CHECK_NCCL(d, ncclRecv(m->buf, m->n, ncclFloat, m->peer, d->nccl,
                               d->comm));
    zb_xgrow((void **)&d->group, &d->capgroup, d->ngroup + 1,
          sizeof(*d->group));
    d->group[d->ngroup++] = m;
    m->priv = q;
    return take_error(d, err);
}

static int cu_flush(struct exec *x, struct zb_error *err)
{
    struct cuda_dev *d = (struct cuda_dev *)x->dev;

    if (d->group_open) {
        /* The comm stream waits for the compute work queued so far: the
         * buffers' allocation, the payload copies, the headers. */
        CHECK_CUDA(d, cudaEventRecord(d->ready, d->compute));
        CHECK_CUDA(d, cudaStreamWaitEvent(d->comm, d->ready, 0));
        CHECK_NCCL(d, ncclGroupEnd());
        for (int i = 0; i < d->ngroup; i++) {
            struct cuda_req *q = (struct cuda_req *)d->group[i]->priv;
            CHECK_CUDA(d, cudaEventRecord(q->done, d->comm));
            q->recorded = true;
        }
        d->ngroup = 0;
        d->group_open = false;
    }
    return take_error(d, err);
}

static int cu_test(struct exec *x, struct xmsg *m, bool *done,
                   struct zb_error *err)
{
    struct cuda_dev *d = (struct cuda_dev *)x->dev;
    struct cuda_req *q = (struct cuda_req *)m->priv;
    ncclResult_t async;
    cudaError_t e;
    int rc;

    *done = false;
    if (!q->recorded && (rc = cu_flush(x, err)) < 0)
        return rc;
    e = cudaEventQuery(q->done);
    if (e == cudaErrorNotReady) {
        /* A failed peer shows up here, not as an event error. */
        CHECK_NCCL(d, ncclCommGetAsyncError(d->nccl, &async));
        if (async != ncclSuccess && async != ncclInProgress)
            sticky(d, __FILE__, __LINE__, ncclGetErrorString(async));
        return take_error(d, err);
    }
    CHECK_CUDA(d, e);
    if ((rc = take_error(d, err)) < 0)
        return rc;
    *done = true;
    cudaEventDestroy(q->done);
    free(q);
    m->priv = NULL;
    if (m->send)
        return 0;
    /* Its own stream: the comm stream may hold later ops that wait on a
     * peer, and synchronising it could block on them. */
    CHECK_CUDA(d, cudaMemcpyAsync(d->pinned, m->buf, sizeof(*d->pinned),
                                  cudaMemcpyDeviceToHost, d->header));
    CHECK_CUDA(d, cudaStreamSynchronize(d->header));
    m->got = *d->pinned;
    return take_error(d, err);
}

static void cu_mark(struct exec *x, int slot)
{
    struct cuda_dev *d = (struct cuda_dev *)x->dev;

    if (slot == 0) {
        /* Slot 0 ties the device timeline to the host clock. */
        CHECK_CUDA(d, cudaStreamSynchronize(d->compute));
        d->base = exec_now() - x->epoch;
        memset(d->recorded, 0, (size_t)d->nmarks * sizeof(bool));
    }
    CHECK_CUDA(d, cudaEventRecord(d->marks[slot], d->compute));
    d->recorded[slot] = true;
}

static int cu_marks(struct exec *x, int n, double *ms, struct zb_error *err)
{
    struct cuda_dev *d = (struct cuda_dev *)x->dev;
    float f;

    CHECK_CUDA(d, cudaStreamSynchronize(d->compute));
    for (int i = 0; i < n; i++) {
        ms[i] = 0;
        if (!d->recorded[i])
            continue;
        CHECK_CUDA(d, cudaEventElapsedTime(&f, d->marks[0], d->marks[i]));
        ms[i] = d->base + f;
    }
    return take_error(d, err);
}

extern "C" const struct zb_executor zb_executor_cuda = {
    "cuda", &cuda_math, cu_init, cu_fini, cu_post, cu_flush, cu_test,
    cu_mark, cu_marks,
};
