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
 * next sync point (flush, test, marks) returns the first as ZB_EDEVICE. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <map>
#include "cuda_api.h"
#include "exec.h"
extern "C" {
#include "zbsched/xalloc.h"
}

/* A link carries one direction of one stage boundary's traffic between
 * two ranks: F (activations) or B (gradients), src sends, dst receives.
 * Its own communicator and stream on each end, so a send never queues
 * behind a receive from another peer, nor F traffic behind B traffic. */
struct link {
    int src, dst, dir;
    ncclComm_t nccl;
    bool have_nccl;
    cudaStream_t stream;
    struct xmsg **queue;        /* posted since the last flush, in order */
    int nqueue, capqueue;
};

/* A device allocation: a float header of hdr bytes (a message's), then
 * entries of one type. A float buffer the GEMMs read as weights
 * (weights()) has a copy in the activation type, made again once the
 * buffer was written since (stale). */
struct dbuf {
    size_t bytes, hdr;
    enum cu_type type;
    char *copy;                 /* NULL: none */
    bool stale;
};

struct cuda_dev {
    cudaStream_t compute;
    cublasHandle_t blas;
    /* Every live allocation by address; the activation type (bf16 for
     * the transformer, else float) and the weight copies' bytes, now and
     * their high-water mark this iteration. */
    std::map<uintptr_t, struct dbuf> *bufs;
    enum cu_type act;
    double copies, copies_high;
    bool mpi;                   /* --transport mpi: host-staged */
    struct link *links;         /* this rank's ends, NCCL transport */
    int nlinks;
    cudaEvent_t ready;          /* compute work a send group must see */
    cudaEvent_t *marks;         /* timeline slots */
    bool *recorded;
    int nmarks;
    double base;                /* host ms of slot 0 */
    /* Pinned, slot = op index (the last one for pings, which wait one
     * at a time): a receive's header lands in headers, copied on the
     * link's stream before its event; a send's is uploaded from
     * sendhdr (a pageable source may make the copy synchronous), which
     * the same op reuses only an iteration later, after a sync. */
    struct msg_header *headers, *sendhdr;
    int nheaders;
    /* The device's memory: the default pool, cudaMemGetInfo's in use
     * once set up. */
    cudaMemPool_t pool;
    double used_start;
    /* NCCL: device times of comm op i, on its stream, before
     * (cev[3 i]) and after (cev[3 i + 1]) it, crec[i] once recorded this
     * iteration; on the compute stream where it starts to wait for it
     * (cev[3 i + 2]), cwait[i] once recorded. */
    cudaEvent_t *cev;
    bool *crec, *cwait;
    cudaEvent_t *events;        /* free completion events (event_get) */
    int nevents, capevents;
    float **staging;            /* --transport mpi: free pinned buffers */
    int nstaging, capstaging;
    float **cstaging;           /* the same for collectives */
    int ncstaging, capcstaging;
    /* --transport mpi: sends and collectives whose device-to-host copy is
     * queued but which MPI has not been handed yet, in post order;
     * mpi_pump() issues them from every wait loop (a wait that issued
     * only its own message would leave a peer waiting on this rank). */
    struct xmsg **unsent;
    int unsent_head, nunsent, capunsent;
    struct cuda_coll **unposted;
    int unposted_head, nunposted, capunposted;
    /* Data parallelism, transport nccl: the replicas of this pipeline
     * rank (x->dp_comm, NCCL rank = replica) and the collectives' own
     * stream. */
    ncclComm_t dp_nccl;
    bool have_dp;
    cudaStream_t coll;
    char error[512];            /* first failure, "" if none */
};

struct cuda_req {
    cudaEvent_t done;           /* see `issued` */
    bool issued;                /* nccl: its group was issued and `done`
                                   recorded after it; mpi: the MPI call
                                   was posted */
    struct link *link;          /* nccl */
    float *host;                /* mpi: pinned staging buffer */
    MPI_Request mreq;           /* mpi */
    bool copied;                /* mpi receive: H2D copy queued, `done`
                                   recorded after it */
};

struct cuda_coll {              /* a data-parallel collective in flight */
    cudaEvent_t done;           /* nccl: on the collectives' stream, after
                                   it and its unstaging copies; mpi: on
                                   the compute stream, after the download,
                                   then after the upload */
    enum coll_kind kind;        /* mpi */
    int op;                     /* the posting op, -1: none */
    float *host;                /* mpi: pinned; the buffer's host copy,
                                   then the shard's */
    float *hbuf, *hshard;       /* mpi: MPI's buffers in host */
    float *from, *to;           /* mpi: the result, host and device */
    size_t n;                   /* mpi: its floats */
    MPI_Request mreq;           /* mpi */
    bool posted;                /* mpi: handed to MPI */
    bool finished;              /* mpi: result upload queued (consume);
                                   coll_test releases it once it ran */
};

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

static int take_error(struct cuda_dev *d, struct zb_error *err)
{
    if (!d->error[0])
        return 0;
    return zb_error_set(err, ZB_EDEVICE, "%s", d->error);
}

/* ---- Math: typed buffers, copies, GEMM (the kernels: cuda.cu) ---------- */

static size_t type_bytes(enum cu_type t)
{
    return t == CU_BF16 ? 2 : sizeof(float);
}

/* The buffer that holds p (its address in *base), NULL if none. */
static struct dbuf *find(struct cuda_dev *d, const void *p, uintptr_t *base)
{
    auto it = d->bufs->upper_bound((uintptr_t)p);

    if (it == d->bufs->begin())
        return NULL;
    --it;
    if ((uintptr_t)p >= it->first + it->second.bytes)
        return NULL;
    *base = it->first;
    return &it->second;
}

/* The operand at p for a kernel: the type of the part of its buffer it
 * points into. A pointer into no buffer is the caller's bug: recorded. */
static struct cu_ten ten(struct cuda_dev *d, const void *p)
{
    struct cu_ten t = { (void *)p, CU_F32 };
    uintptr_t base = 0;
    struct dbuf *b = find(d, p, &base);

    if (!b)
        cu_sticky(d, __FILE__, __LINE__, "an operand outside every buffer "
                  "of the cuda backend");
    else if ((uintptr_t)p >= base + b->hdr)
        t.type = b->type;
    return t;
}

/* hdr floats, then n - hdr entries of type t, on stream s: stream-ordered,
 * from the device's default pool, which keeps what it holds (release
 * threshold set at init): no device-wide sync and no trip to the driver
 * per buffer. Not zeroed: callers write first. */
static void *dev_alloc(struct cuda_dev *d, size_t n, size_t hdr,
                       enum cu_type t, cudaStream_t s)
{
    size_t bytes = hdr * sizeof(float) + (n - hdr) * type_bytes(t);
    void *p = NULL;

    bytes = bytes ? bytes : 1;
    CHECK_CUDA(d, cudaMallocAsync(&p, bytes, s));
    if (p)
        (*d->bufs)[(uintptr_t)p] = { bytes, hdr * sizeof(float), t, NULL,
                                     false };
    return p;
}

static float *cu_alloc(void *dev, size_t n)
{
    struct cuda_dev *d = (struct cuda_dev *)dev;

    return (float *)dev_alloc(d, n, 0, CU_F32, d->compute);
}

static float *cu_alloc_act(void *dev, size_t n, size_t hdr)
{
    struct cuda_dev *d = (struct cuda_dev *)dev;

    return (float *)dev_alloc(d, n, hdr, d->act, d->compute);
}

static void cu_release(void *dev, float *p)
{
    struct cuda_dev *d = (struct cuda_dev *)dev;

    if (!p)
        return;
    auto it = d->bufs->find((uintptr_t)p);
    if (it != d->bufs->end()) {
        char *copy = it->second.copy;
        d->bufs->erase(it);
        if (copy) {
            auto c = d->bufs->find((uintptr_t)copy);
            d->copies -= (double)c->second.bytes;
            d->bufs->erase(c);
            CHECK_CUDA(d, cudaFreeAsync(copy, d->compute));
        }
    }
    CHECK_CUDA(d, cudaFreeAsync(p, d->compute));
}

/* The buffer holding p is written: its weight copy is out of date. The
 * float buffers are written only through upload, copy, axpy and the
 * collectives, which call this. */
static void written(struct cuda_dev *d, const void *p)
{
    uintptr_t base;
    struct dbuf *b = find(d, p, &base);

    if (b)
        b->stale = true;
}

/* Host buffers are float: so must the device side be. */
static bool host_float(struct cuda_dev *d, const void *p)
{
    if (ten(d, p).type == CU_F32)
        return true;
    cu_sticky(d, __FILE__, __LINE__, "a copy between host floats and a "
              "bf16 buffer");
    return false;
}

static void cu_upload(void *dev, float *dst, const float *host, size_t n)
{
    struct cuda_dev *d = (struct cuda_dev *)dev;

    if (!host_float(d, dst))
        return;
    written(d, dst);
    /* Pageable source: staged before the call returns, so callers may
     * reuse host memory at once. */
    CHECK_CUDA(d, cudaMemcpyAsync(dst, host, n * sizeof(float),
                                  cudaMemcpyHostToDevice, d->compute));
}

static void cu_download(void *dev, float *host, const float *src, size_t n)
{
    struct cuda_dev *d = (struct cuda_dev *)dev;

    if (!host_float(d, src))
        return;
    CHECK_CUDA(d, cudaMemcpyAsync(host, src, n * sizeof(float),
                                  cudaMemcpyDeviceToHost, d->compute));
    CHECK_CUDA(d, cudaStreamSynchronize(d->compute));
}

/* Between buffers of one type a copy, else a conversion. */
static void cu_copy(void *dev, float *dst, const float *src, size_t n)
{
    struct cuda_dev *d = (struct cuda_dev *)dev;
    struct cu_ten to = ten(d, dst), from = ten(d, src);

    written(d, dst);
    if (to.type != from.type)
        cu_convert(d, to, from, n);
    else
        CHECK_CUDA(d, cudaMemcpyAsync(dst, src, n * type_bytes(to.type),
                                      cudaMemcpyDeviceToDevice, d->compute));
}

static float *cu_at(void *dev, const float *p, size_t i)
{
    struct cuda_dev *d = (struct cuda_dev *)dev;

    return (float *)((char *)p + i * type_bytes(ten(d, p).type));
}

/* The weights at w in the activation type: a copy of w's whole buffer,
 * made at the first use and again at the first use after a write (the
 * step, a rollback, an all-gather), on the compute stream, where the
 * writers' work is ordered before it. It lives as long as the buffer. */
static const float *cu_weights(void *dev, const float *w, size_t n)
{
    struct cuda_dev *d = (struct cuda_dev *)dev;
    uintptr_t base = 0;
    struct dbuf *b = find(d, w, &base);
    size_t off = (uintptr_t)w - base;

    if (d->act == CU_F32)
        return w;
    if (!b || b->type != CU_F32 || b->hdr || off + n * sizeof(float) >
                                                 b->bytes) {
        cu_sticky(d, __FILE__, __LINE__, "weights outside a float buffer");
        return w;
    }
    if (!b->copy) {
        const size_t count = b->bytes / sizeof(float);
        b->copy = (char *)dev_alloc(d, count, 0, d->act, d->compute);
        b->stale = true;
        d->copies += (double)count * type_bytes(d->act);
        d->copies_high = fmax(d->copies_high, d->copies);
    }
    if (b->stale && b->copy) {
        struct cu_ten to = { b->copy, d->act }, from = { (void *)base,
                                                         CU_F32 };
        cu_convert(d, to, from, b->bytes / sizeof(float));
        b->stale = false;
    }
    return (const float *)(b->copy + off / sizeof(float) *
                                         type_bytes(d->act));
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

static cudaDataType blas_type(enum cu_type t)
{
    return t == CU_BF16 ? CUDA_R_16BF : CUDA_R_32F;
}

/* The transformer's GEMMs on the operands' own types (A and B alike:
 * bf16 activations and weight copies; C bf16, or float for a weight
 * gradient) with float accumulation (CUBLAS_COMPUTE_32F: bf16 products
 * on the tensor cores, rounded once into a bf16 C), the row-major to
 * column-major swap as in cu_gemm. */
static void cu_bgemm(void *dev, bool ta, bool tb, int m, int n, int k,
                     const float *a, int lda, size_t sa, const float *b,
                     int ldb, size_t sb, float beta, float *c, int ldc,
                     size_t sc, int count)
{
    struct cuda_dev *d = (struct cuda_dev *)dev;
    struct cu_ten A = ten(d, a), B = ten(d, b), C = ten(d, c);
    const float one = 1.0f;

    if (A.type != B.type) {
        cu_sticky(d, __FILE__, __LINE__, "a GEMM of bf16 and float");
        return;
    }
    CHECK_BLAS(d, cublasGemmStridedBatchedEx(
                      d->blas, tb ? CUBLAS_OP_T : CUBLAS_OP_N,
                      ta ? CUBLAS_OP_T : CUBLAS_OP_N, n, m, k, &one, b,
                      blas_type(B.type), ldb, (long long)sb, a,
                      blas_type(A.type), lda, (long long)sa, &beta, c,
                      blas_type(C.type), ldc, (long long)sc, count,
                      CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
}

/* The steps with typed operands, looked up (cuda_api.h). */
static void cu_axpy_f(void *dev, float *y, float a, const float *x,
                      size_t n)
{
    written((struct cuda_dev *)dev, y);
    cu_axpy(dev, y, a, x, n);
}

static void t_mse(void *dev, float *dy, float *loss, const float *y,
                  const float *t, size_t n, float scale)
{
    struct cuda_dev *d = (struct cuda_dev *)dev;

    cu_mse(d, ten(d, dy), loss, ten(d, y), ten(d, t), n, scale);
}

static void t_rmsnorm(void *dev, float *y, float *rstd, const float *x,
                      int rows, int cols)
{
    struct cuda_dev *d = (struct cuda_dev *)dev;

    cu_rmsnorm(d, ten(d, y), ten(d, rstd), ten(d, x), rows, cols);
}

static void t_rmsnorm_grad(void *dev, float *dx, const float *dy,
                           const float *y, const float *rstd, int rows,
                           int cols)
{
    struct cuda_dev *d = (struct cuda_dev *)dev;

    cu_rmsnorm_grad(d, ten(d, dx), ten(d, dy), ten(d, y), ten(d, rstd),
                    rows, cols);
}

static void t_gelu(void *dev, float *y, const float *x, size_t n)
{
    struct cuda_dev *d = (struct cuda_dev *)dev;

    cu_gelu(d, ten(d, y), ten(d, x), n);
}

static void t_gelu_grad(void *dev, float *dx, const float *dy,
                        const float *x, size_t n)
{
    struct cuda_dev *d = (struct cuda_dev *)dev;

    cu_gelu_grad(d, ten(d, dx), ten(d, dy), ten(d, x), n);
}

static void t_softmax(void *dev, float *p, int s, int mats, float scale)
{
    struct cuda_dev *d = (struct cuda_dev *)dev;

    cu_softmax(d, ten(d, p), s, mats, scale);
}

static void t_softmax_grad(void *dev, float *dp, const float *p, int s,
                           int mats, float scale)
{
    struct cuda_dev *d = (struct cuda_dev *)dev;

    cu_softmax_grad(d, ten(d, dp), ten(d, p), s, mats, scale);
}

static void t_heads(void *dev, float *dst, const float *src, int b, int s,
                    int h, int dh, int parts, bool split)
{
    struct cuda_dev *d = (struct cuda_dev *)dev;

    cu_heads(d, ten(d, dst), ten(d, src), b, s, h, dh, parts, split);
}

static const struct zb_math cuda_math = {
    cu_alloc, cu_release, cu_upload, cu_download, cu_copy, cu_gemm,
    cu_bias_act, cu_act_grad, cu_colsum, cu_axpy_f, t_mse,
    cu_bgemm, t_rmsnorm, t_rmsnorm_grad, t_gelu, t_gelu_grad,
    t_softmax, t_softmax_grad, t_heads, cu_alloc_act, cu_at, cu_weights,
};

/* ---- Setup ---------------------------------------------------------- */

static int nccl_status(struct cuda_dev *d, ncclComm_t c, const char *what,
                       ncclResult_t r, struct zb_error *err);

/* This process's device: its rank on the node modulo the GPUs it sees
 * (one each under CUDA_VISIBLE_DEVICES or SLURM --gpus-per-task, all of
 * them otherwise). NCCL refuses two ranks of one communicator on one
 * GPU, so ranks that share one (same PCI bus id) need --transport mpi. */
static int pick_device(struct exec *x, struct cuda_dev *d,
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

static int setup(struct exec *x, struct cuda_dev *d, struct zb_error *err)
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
    return take_error(d, err);
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

/* Wait while a non-blocking communicator works (init, a group's enqueue,
 * finalize); under the watchdog like any other wait. */
static ncclResult_t settle(ncclComm_t c)
{
    ncclResult_t state = ncclInProgress;

    for (int spins = 0; state == ncclInProgress; spins++) {
        if (ncclCommGetAsyncError(c, &state) != ncclSuccess)
            return ncclInternalError;
        if (state == ncclInProgress)
            exec_pause(spins);
    }
    return state;
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
            r = settle(l->nccl);
        if (r != ncclSuccess)
            nccl_status(d, l->nccl, "connecting a link", r, NULL);
        CHECK_CUDA(d, cudaStreamSynchronize(l->stream));
    }
    CHECK_CUDA(d, cudaFreeAsync(probe, d->compute));
    return take_error(d, err);
}

/* One two-rank communicator per link, made in the links' global order
 * (src, dst, dir): the sender makes the id and MPI carries it, so no
 * rank waits on one that waits on it. Every init is started before any
 * is waited for (non-blocking communicators), and a failure aborts the
 * communicator and the job at once: the peers would wait in vain. */
static int nccl_connect(struct exec *x, struct cuda_dev *d,
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
                    rc = nccl_status(d, NULL, src == x->rank
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
                    rc = nccl_status(d, NULL, "ncclCommInitRankConfig", r,
                                     err);
                l->have_nccl = r == ncclSuccess || r == ncclInProgress;
            }
    for (int k = 0; k < d->nlinks && !rc; k++)
        rc = nccl_status(d, d->links[k].nccl, "NCCL init",
                         settle(d->links[k].nccl), err);
    if (!rc)
        rc = take_error(d, err);
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
static int dp_connect(struct exec *x, struct cuda_dev *d,
                      struct zb_error *err)
{
    ncclConfig_t cfg = NCCL_CONFIG_INITIALIZER;
    ncclUniqueId id;
    ncclResult_t r;

    CHECK_CUDA(d, cudaStreamCreateWithFlags(&d->coll,
                                            cudaStreamNonBlocking));
    memset(&id, 0, sizeof(id));
    if (x->replica == 0 && (r = ncclGetUniqueId(&id)) != ncclSuccess)
        nccl_status(d, NULL, "ncclGetUniqueId (data parallelism)", r, NULL);
    MPI_Bcast(&id, sizeof(id), MPI_BYTE, 0, x->dp_comm);
    if (!d->error[0]) {
        cfg.blocking = 0;
        r = ncclCommInitRankConfig(&d->dp_nccl, x->dp, id, x->replica,
                                   &cfg);
        d->have_dp = r == ncclSuccess || r == ncclInProgress;
        if (!d->have_dp)
            nccl_status(d, NULL, "ncclCommInitRankConfig (data "
                        "parallelism)", r, NULL);
        else
            nccl_status(d, d->dp_nccl, "NCCL init (data parallelism)",
                        settle(d->dp_nccl), NULL);
    }
    if (take_error(d, err) < 0) {
        if (d->have_dp)
            ncclCommAbort(d->dp_nccl);
        d->have_dp = false;
        exec_abort(x, err);
    }
    return 0;
}

/* The device's memory in use: the context, every library's buffers and
 * what the pool reserved. */
static double mem_used(struct cuda_dev *d)
{
    size_t free_b = 0, total = 0;

    CHECK_CUDA(d, cudaMemGetInfo(&free_b, &total));
    return (double)(total - free_b);
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
    rc = pick_device(x, d, err);
    if (!rc)
        rc = setup(x, d, err);
    /* NCCL's setup waits for the peers: only go on if every rank got
     * here. A rank that did returns 0 when another failed; the caller's
     * agreement then fails every rank with the failing rank's message. */
    ok = rc == 0;
    MPI_Allreduce(MPI_IN_PLACE, &ok, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    if (ok && !d->mpi) {
        watchdog_phase("NCCL init");
        if ((rc = nccl_connect(x, d, err)) == 0 && x->dp > 1) {
            watchdog_phase("NCCL init of the data-parallel group");
            rc = dp_connect(x, d, err);
        }
    }
    if (ok && !rc) {
        const int streams = 1 + d->nlinks + (d->coll != NULL);
        const char *env = getenv("CUDA_DEVICE_MAX_CONNECTIONS");
        if (env && atoi(env) < streams)
            exec_warn(x->world, "CUDA_DEVICE_MAX_CONNECTIONS=%s is below "
                      "this rank's %d streams: CUDA may serialise NCCL "
                      "kernels that must run together", env, streams);
        d->used_start = mem_used(d);
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
        settle(c);
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

/* ---- NCCL errors ------------------------------------------------------ */

/* A clear message: the call, NCCL's error and its own last words (a
 * peer that died shows as ncclRemoteError with the peer's address). */
static int nccl_status(struct cuda_dev *d, ncclComm_t c, const char *what,
                       ncclResult_t r, struct zb_error *err)
{
    char msg[384];

    if (r == ncclSuccess)
        return 0;
    snprintf(msg, sizeof(msg), "%s: %s%s%s", what, ncclGetErrorString(r),
             c ? ": " : "", c ? ncclGetLastError(c) : "");
    cu_sticky(d, __FILE__, __LINE__, msg);
    return take_error(d, err);
}

/* The communicator's async error, if any: then abort it (its kernels
 * would wait forever) and record a message saying what it carried. */
static void comm_check(struct cuda_dev *d, ncclComm_t c, bool *have,
                       const char *what)
{
    ncclResult_t state = ncclSuccess;

    if (!*have)
        return;
    if (ncclCommGetAsyncError(c, &state) != ncclSuccess)
        state = ncclInternalError;
    if (state == ncclSuccess || state == ncclInProgress)
        return;
    nccl_status(d, c, what, state, NULL);
    ncclCommAbort(c);
    *have = false;
}

static void link_check(struct cuda_dev *d, struct link *l)
{
    char what[96];

    snprintf(what, sizeof(what), "NCCL %s link %d -> %d",
             l->dir == MSG_F ? "activation" : "gradient", l->src, l->dst);
    comm_check(d, l->nccl, &l->have_nccl, what);
}

/* ---- Transport: NCCL --------------------------------------------------- */

/* The link of m on this rank; pings (profile_out.c) ride any link
 * between the two ranks in the right direction of travel. */
static struct link *link_of(struct cuda_dev *d, int me, const struct xmsg *m)
{
    int src = m->send ? me : m->peer, dst = m->send ? m->peer : me;
    struct link *any = NULL;

    for (int k = 0; k < d->nlinks; k++) {
        struct link *l = &d->links[k];
        if (l->src != src || l->dst != dst)
            continue;
        if (l->dir == m->hdr.dir)
            return l;
        any = l;
    }
    return m->hdr.dir == MSG_PING ? any : NULL;
}

static int header_slot(const struct cuda_dev *d, const struct xmsg *m)
{
    return m->op >= 0 ? m->op : d->nheaders - 1;
}

/* A message of n entries as it travels: the header's floats, then the
 * payload in the activation type (bf16 for the transformer: half the
 * bytes of float), counted in entries of that type (the header is a
 * whole number of them). */
static size_t msg_bytes(const struct cuda_dev *d, size_t n)
{
    return MSG_HDR_FLOATS * sizeof(float) +
           (n - MSG_HDR_FLOATS) * type_bytes(d->act);
}

static size_t msg_count(const struct cuda_dev *d, size_t n)
{
    return msg_bytes(d, n) / type_bytes(d->act);
}

static ncclDataType_t msg_nccl(const struct cuda_dev *d)
{
    return d->act == CU_BF16 ? ncclBfloat16 : ncclFloat;
}

static MPI_Datatype msg_mpi(const struct cuda_dev *d)
{
    return d->act == CU_BF16 ? MPI_UINT16_T : MPI_FLOAT;
}

/* Queue m on its link; flush() issues the link's queue as one group. */
static int nccl_post(struct exec *x, struct cuda_dev *d, struct xmsg *m,
                     struct cuda_req *q, struct zb_error *err)
{
    struct link *l = link_of(d, x->rank, m);

    if (!l)
        return zb_error_set(err, ZB_EILLEGAL, "no NCCL link %d -> %d for "
                            "this message: the list sends where no stage "
                            "boundary is", m->send ? x->rank : m->peer,
                            m->send ? m->peer : x->rank);
    q->link = l;
    if (!m->send)       /* on the link's own timeline, see exec.h */
        m->buf = (float *)dev_alloc(d, m->n, MSG_HDR_FLOATS, d->act,
                                    l->stream);
    zb_xgrow((void **)&l->queue, &l->capqueue, l->nqueue + 1,
             sizeof(*l->queue));
    l->queue[l->nqueue++] = m;
    return take_error(d, err);
}

/* Every link's queued run of messages (the list's consecutive comm ops,
 * in list order) goes into ONE NCCL group spanning the links (NCCL groups
 * may span communicators, as Megatron's batched send/recv does), each op
 * on its link's stream. One group, settled as a whole: settling one
 * link's group before issuing the next deadlocked when a link connected
 * lazily at first use (docs/zbexec.md, "Backends"); the links are
 * also connected at init (preconnect()). A group only lets its ops
 * progress together, a subset of the ordering the validator proved
 * deadlock-free with each op blocking in list order, and links only drop
 * waits between unrelated messages. A sending link's stream first waits
 * for the compute work queued so far (the payload and its header). NCCL
 * makes a group that spans streams one point of those streams (each
 * waits for the others' earlier work, and all for the group's end): a
 * receive grouped with a send waits for that compute too, which the list
 * order asks of it anyway; a run of receives alone waits for no compute. */
static int nccl_flush(struct exec *x, struct cuda_dev *d,
                      struct zb_error *err)
{
    bool ready = false, any = false;
    ncclResult_t r;

    for (int k = 0; k < d->nlinks; k++) {
        struct link *l = &d->links[k];
        any = any || l->nqueue > 0;
        if (l->nqueue == 0 || l->src != x->rank)
            continue;
        if (!ready)
            CHECK_CUDA(d, cudaEventRecord(d->ready, d->compute));
        ready = true;
        CHECK_CUDA(d, cudaStreamWaitEvent(l->stream, d->ready, 0));
    }
    if (!any)
        return take_error(d, err);
    CHECK_NCCL(d, ncclGroupStart());
    for (int k = 0; k < d->nlinks; k++) {
        struct link *l = &d->links[k];
        for (int i = 0; i < l->nqueue; i++) {
            struct xmsg *m = l->queue[i];
            if (m->op >= 0)     /* before the kernel GroupEnd launches */
                CHECK_CUDA(d, cudaEventRecord(d->cev[3 * m->op], l->stream));
            if (l->src == x->rank)
                CHECK_NCCL(d, ncclSend(m->buf, msg_count(d, m->n),
                                       msg_nccl(d), 1, l->nccl, l->stream));
            else
                CHECK_NCCL(d, ncclRecv(m->buf, msg_count(d, m->n),
                                       msg_nccl(d), 0, l->nccl, l->stream));
        }
    }
    r = ncclGroupEnd();
    for (int k = 0; k < d->nlinks; k++) {
        struct link *l = &d->links[k];
        ncclResult_t lr = r;
        if (l->nqueue == 0)
            continue;
        if (lr == ncclInProgress)
            lr = settle(l->nccl);
        if (lr != ncclSuccess)
            nccl_status(d, l->nccl, "ncclGroupEnd", lr, NULL);
    }
    for (int k = 0; k < d->nlinks; k++) {
        struct link *l = &d->links[k];
        for (int i = 0; i < l->nqueue; i++) {
            struct xmsg *m = l->queue[i];
            struct cuda_req *q = (struct cuda_req *)m->priv;
            if (l->src != x->rank)
                CHECK_CUDA(d, cudaMemcpyAsync(&d->headers[header_slot(d, m)],
                                              m->buf, sizeof(*d->headers),
                                              cudaMemcpyDeviceToHost,
                                              l->stream));
            CHECK_CUDA(d, cudaEventRecord(q->done, l->stream));
            if (m->op >= 0) {
                CHECK_CUDA(d, cudaEventRecord(d->cev[3 * m->op + 1],
                                              l->stream));
                d->crec[m->op] = true;
            }
            q->issued = true;
        }
        l->nqueue = 0;
    }
    return take_error(d, err);
}

static int nccl_test(struct cuda_dev *d, struct xmsg *m, bool *done,
                     struct zb_error *err)
{
    struct cuda_req *q = (struct cuda_req *)m->priv;
    cudaError_t e;

    if (!q->issued)     /* still queued: flush() comes first */
        return take_error(d, err);
    e = cudaEventQuery(q->done);
    if (e == cudaErrorNotReady) {
        link_check(d, q->link);         /* a failed peer shows here */
        return take_error(d, err);
    }
    CHECK_CUDA(d, e);
    if (!m->send)       /* copied before the event: no sync needed */
        m->got = d->headers[header_slot(d, m)];
    *done = true;
    return take_error(d, err);
}

/* ---- Transport: MPI through pinned host buffers ------------------------ */

/* A free pinned buffer of `bytes` from list (all of one list's buffers
 * have one size: every message's, every collective's). */
static float *staging_get(struct cuda_dev *d, float **list, int *nlist,
                          size_t bytes)
{
    float *p = NULL;

    if (*nlist > 0)
        return list[--*nlist];
    CHECK_CUDA(d, cudaMallocHost((void **)&p, bytes));
    return p;
}

static void staging_put(float ***list, int *nlist, int *cap, float *p)
{
    zb_xgrow((void **)list, cap, *nlist + 1, sizeof(**list));
    (*list)[(*nlist)++] = p;
}

/* Append p to a FIFO of pointers (head: the oldest not yet taken). */
static void fifo_push(void ***items, int *head, int *n, int *cap, void *p)
{
    if (*head > 0 && *head == *n)
        *head = *n = 0;
    zb_xgrow((void **)items, cap, *n + 1, sizeof(**items));
    (*items)[(*n)++] = p;
}

/* Hand MPI every send and collective whose download is done, in post
 * order (a later one never overtakes an earlier one: pairs match in
 * order, and replicas must call collectives in one order). */
static int mpi_pump(struct exec *x, struct cuda_dev *d, struct zb_error *err)
{
    cudaError_t e;
    int rc;

    while (d->unsent_head < d->nunsent) {
        struct xmsg *m = d->unsent[d->unsent_head];
        struct cuda_req *q = (struct cuda_req *)m->priv;
        if ((e = cudaEventQuery(q->done)) == cudaErrorNotReady)
            break;
        CHECK_CUDA(d, e);
        rc = MPI_Isend(q->host, (int)msg_count(d, m->n), msg_mpi(d),
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
    return take_error(d, err);
}

/* A send copies to the host on the compute stream (after the pass that
 * made it) and joins the FIFO that mpi_pump() hands to MPI; a receive
 * lands in a pinned buffer and is copied to the device on the compute
 * stream. */
static int mpi_post(struct exec *x, struct cuda_dev *d, struct xmsg *m,
                    struct cuda_req *q, struct zb_error *err)
{
    int rc;

    q->host = staging_get(d, d->staging, &d->nstaging, msg_bytes(d, m->n));
    if (m->send) {
        CHECK_CUDA(d, cudaMemcpyAsync(q->host, m->buf, msg_bytes(d, m->n),
                                      cudaMemcpyDeviceToHost, d->compute));
        CHECK_CUDA(d, cudaEventRecord(q->done, d->compute));
        fifo_push((void ***)&d->unsent, &d->unsent_head, &d->nunsent,
                  &d->capunsent, m);
        return take_error(d, err);
    }
    m->buf = cu_alloc_act(d, m->n, MSG_HDR_FLOATS);
    rc = MPI_Irecv(q->host, (int)msg_count(d, m->n), msg_mpi(d), m->peer, 0,
                   x->comm, &q->mreq);
    if (rc != MPI_SUCCESS)
        return exec_mpi_error(rc, "MPI_Irecv", err);
    q->issued = true;
    return take_error(d, err);
}

/* Move m one step on (host side), and every unissued send with it;
 * *done once nothing is left. */
static int mpi_advance(struct exec *x, struct cuda_dev *d, struct xmsg *m,
                       bool *done, struct zb_error *err)
{
    struct cuda_req *q = (struct cuda_req *)m->priv;
    int flag = 0, rc;
    cudaError_t e;

    if ((rc = mpi_pump(x, d, err)) < 0)
        return rc;
    if (m->send && !q->issued)
        return 0;
    if (m->send || !q->copied) {
        rc = MPI_Test(&q->mreq, &flag, MPI_STATUS_IGNORE);
        if (rc != MPI_SUCCESS)
            return exec_mpi_error(rc, "MPI_Test", err);
        if (!flag)
            return take_error(d, err);
        if (m->send) {
            *done = true;
            return take_error(d, err);
        }
        memcpy(&m->got, q->host, sizeof(m->got));
        CHECK_CUDA(d, cudaMemcpyAsync(m->buf, q->host, msg_bytes(d, m->n),
                                      cudaMemcpyHostToDevice, d->compute));
        CHECK_CUDA(d, cudaEventRecord(q->done, d->compute));
        q->copied = true;
    }
    /* The staging buffer is free again once the copy ran. */
    if ((e = cudaEventQuery(q->done)) == cudaErrorNotReady)
        return take_error(d, err);
    CHECK_CUDA(d, e);
    *done = true;
    return take_error(d, err);
}

/* ---- Transport: the table's entries ------------------------------------ */

/* A message's or collective's completion event, from a pool: one is in
 * use per message in flight, and creating one per message costs a
 * driver call on the hot path. Reused only once completed. */
static cudaEvent_t event_get(struct cuda_dev *d)
{
    cudaEvent_t e = NULL;

    if (d->nevents > 0)
        return d->events[--d->nevents];
    CHECK_CUDA(d, cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
    return e;
}

static void event_put(struct cuda_dev *d, cudaEvent_t e)
{
    if (!e)
        return;
    zb_xgrow((void **)&d->events, &d->capevents, d->nevents + 1,
             sizeof(*d->events));
    d->events[d->nevents++] = e;
}

static int cu_post(struct exec *x, struct xmsg *m, struct zb_error *err)
{
    struct cuda_dev *d = (struct cuda_dev *)x->dev;
    struct cuda_req *q = (struct cuda_req *)zb_xcalloc(1, sizeof(*q));
    int rc;

    q->done = event_get(d);
    m->priv = q;
    if (m->send) {      /* after the payload's pass, on compute */
        struct msg_header *h = &d->sendhdr[header_slot(d, m)];
        *h = m->hdr;
        CHECK_CUDA(d, cudaMemcpyAsync(m->buf, h, sizeof(*h),
                                      cudaMemcpyHostToDevice, d->compute));
    }
    rc = d->mpi ? mpi_post(x, d, m, q, err) : nccl_post(x, d, m, q, err);
    if (rc < 0) {
        event_put(d, q->done);
        free(q);
        m->priv = NULL;
    }
    return rc;
}

static int cu_flush(struct exec *x, struct zb_error *err)
{
    struct cuda_dev *d = (struct cuda_dev *)x->dev;

    return d->mpi ? mpi_pump(x, d, err) : nccl_flush(x, d, err);
}

static int cu_test(struct exec *x, struct xmsg *m, bool *done,
                   struct zb_error *err)
{
    struct cuda_dev *d = (struct cuda_dev *)x->dev;
    struct cuda_req *q = (struct cuda_req *)m->priv;
    int rc;

    *done = false;
    rc = d->mpi ? mpi_advance(x, d, m, done, err)
                : nccl_test(d, m, done, err);
    if (rc < 0 || !*done)
        return rc;
    if (q->host)
        staging_put(&d->staging, &d->nstaging, &d->capstaging, q->host);
    event_put(d, q->done);
    free(q);
    m->priv = NULL;
    return 0;
}

/* Where the compute stream starts waiting for comm op `op` (none: -1). */
static void wait_mark(struct cuda_dev *d, int op)
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
static int cu_consume(struct exec *x, struct xmsg *m, struct zb_error *err)
{
    struct cuda_dev *d = (struct cuda_dev *)x->dev;
    struct cuda_req *q = (struct cuda_req *)m->priv;
    bool done = false;
    int rc;

    if (d->mpi) {
        for (int spins = 0; !q->copied && !done; spins++) {
            if ((rc = mpi_advance(x, d, m, &done, err)) < 0)
                return rc;
            if (!q->copied && !done)
                exec_pause(spins);
        }
        return take_error(d, err);      /* the copy is on compute */
    }
    if (!q->issued && (rc = nccl_flush(x, d, err)) < 0)
        return rc;
    wait_mark(d, m->op);
    CHECK_CUDA(d, cudaStreamWaitEvent(d->compute, q->done, 0));
    return take_error(d, err);
}

/* ---- Data-parallel collectives (coll.c) ------------------------------ */

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
            return take_error(d, err);
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
            r = settle(d->dp_nccl);
        if (r != ncclSuccess)
            nccl_status(d, d->dp_nccl, "ncclGroupEnd (data parallelism)", r,
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
    return take_error(d, err);
}

/* --transport mpi: what the collective reads is copied to a pinned host
 * buffer on the compute stream (after the work queued so far), MPI's
 * collective (coll.c, the cpu backend's calls) is posted once that copy
 * ran (mpi_pump(), in list order on every replica), and its result is
 * uploaded on the compute stream: no host sync at the post. */
static int mpi_coll(struct exec *x, struct cuda_dev *d, enum coll_kind k,
                    float *buf, float *shard, struct cuda_coll *q,
                    struct zb_error *err)
{
    const int me = x->replica;
    const size_t np = x->nparam, ns = (size_t)x->shard_n[me],
                 off = (size_t)x->shard_off[me];

    q->kind = k;
    q->host = staging_get(d, d->cstaging, &d->ncstaging,
                          (np + ns) * sizeof(float));
    if (!q->host)
        return take_error(d, err);
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
        return take_error(d, err);
    fifo_push((void ***)&d->unposted, &d->unposted_head, &d->nunposted,
              &d->capunposted, q);
    return 0;
}

/* Queue the result's upload once MPI is done; q->finished then. */
static int mpi_coll_advance(struct exec *x, struct cuda_dev *d,
                            struct cuda_coll *q, struct zb_error *err)
{
    int flag = 0, rc;

    if ((rc = mpi_pump(x, d, err)) < 0)
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
    return take_error(d, err);
}

static void coll_free(struct cuda_dev *d, struct cuda_coll *q)
{
    event_put(d, q->done);
    if (q->host)
        staging_put(&d->cstaging, &d->ncstaging, &d->capcstaging, q->host);
    free(q);
}

static int cu_coll_post(struct exec *x, enum coll_kind k, int op,
                        float *buf, float *shard, void **req,
                        struct zb_error *err)
{
    struct cuda_dev *d = (struct cuda_dev *)x->dev;
    struct cuda_coll *q = (struct cuda_coll *)zb_xcalloc(1, sizeof(*q));
    int rc;

    q->done = event_get(d);
    q->op = op;
    written(d, buf);            /* the result lands in one of them */
    written(d, shard);
    rc = d->mpi ? mpi_coll(x, d, k, buf, shard, q, err)
                : nccl_coll(x, d, k, op, buf, shard, q, err);
    if (rc < 0) {
        coll_free(d, q);
        return rc;
    }
    *req = q;
    return 0;
}

static int cu_coll_test(struct exec *x, void *req, bool *done,
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
            comm_check(d, d->dp_nccl, &d->have_dp,
                       "NCCL data-parallel group");
        return take_error(d, err);
    }
    CHECK_CUDA(d, e);
    if ((rc = take_error(d, err)) < 0)
        return rc;
    coll_free(d, q);
    *done = true;
    return 0;
}

/* The compute stream waits for the collective's event; over MPI the
 * result reaches the device through the host, so the host waits until
 * its upload is queued on the compute stream (under the watchdog, which
 * coll.c told). */
static int cu_coll_consume(struct exec *x, void *req, struct zb_error *err)
{
    struct cuda_dev *d = (struct cuda_dev *)x->dev;
    struct cuda_coll *q = (struct cuda_coll *)req;
    int rc;

    if (!d->mpi) {
        wait_mark(d, q->op);
        CHECK_CUDA(d, cudaStreamWaitEvent(d->compute, q->done, 0));
        return take_error(d, err);
    }
    for (int spins = 0; !q->finished; spins++) {
        if ((rc = mpi_coll_advance(x, d, q, err)) < 0)
            return rc;
        if (!q->finished)
            exec_pause(spins);
    }
    return 0;
}

/* ---- Timeline ----------------------------------------------------------- */

static void cu_mark(struct exec *x, int slot)
{
    struct cuda_dev *d = (struct cuda_dev *)x->dev;

    if (slot == 0) {
        /* Slot 0 ties the device timeline to the host clock. */
        uint64_t zero = 0;
        CHECK_CUDA(d, cudaStreamSynchronize(d->compute));
        d->base = exec_now() - x->epoch;
        memset(d->recorded, 0, (size_t)d->nmarks * sizeof(bool));
        memset(d->crec, 0, (size_t)x->ops->n * sizeof(bool));
        memset(d->cwait, 0, (size_t)x->ops->n * sizeof(bool));
        /* The iteration's own high-water marks (reset to current use). */
        CHECK_CUDA(d, cudaMemPoolSetAttribute(
                          d->pool, cudaMemPoolAttrUsedMemHigh, &zero));
        CHECK_CUDA(d, cudaMemPoolSetAttribute(
                          d->pool, cudaMemPoolAttrReservedMemHigh, &zero));
        d->copies_high = d->copies;
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

/* Device ms of event e on the timeline (slot 0's clock); false when it
 * did not complete. */
static bool event_ms(struct cuda_dev *d, cudaEvent_t e, double *ms)
{
    float f;

    if (cudaEventElapsedTime(&f, d->marks[0], e) != cudaSuccess)
        return false;
    *ms = d->base + f;
    return true;
}

/* NCCL: the comm lanes in device time, from the events around each op
 * on its stream (a receive starts when its kernel could, a send when its
 * payload was made) and, for a consumed one, where the compute stream
 * began to wait for it (no wait when it was there first); a wait of the
 * host (a collective's at STEP) is not drawn. Over MPI the host moves
 * the data: its times are the measure. */
static void cu_comm_times(struct exec *x)
{
    struct cuda_dev *d = (struct cuda_dev *)x->dev;
    double a, b, w;

    for (int i = 0; i < x->ops->n && !d->mpi; i++) {
        struct op_time *t = &x->t[i];
        if (!d->crec[i] || !event_ms(d, d->cev[3 * i], &a) ||
            !event_ms(d, d->cev[3 * i + 1], &b))
            continue;
        t->start = t->end = a;
        t->done = b;
        if (d->cwait[i] && event_ms(d, d->cev[3 * i + 2], &w))
            t->wait = w < b ? w : b;
        else            /* the host's wait (STEP's), on its own clock */
            t->wait = 0;
    }
}

/* The schedule's peak activations (in units of one F's: the simulator's
 * prediction) in their types, the model state as the engine counts it
 * (float) and the weight copies held at most this iteration. */
static double predicted(const struct exec *x, const struct cuda_dev *d)
{
    const double fs = x->sched.predicted.ranks[x->rank].peak_memory /
                      x->p->m_b;
    const double f = x->tf ? tf_mb_bytes(x->tf, type_bytes(d->act))
                           : exec_mem_unit(x) * sizeof(float);

    return fs * f + fmax(x->state, x->state_peak) * sizeof(float) +
           d->copies_high;
}

static void cu_memory(struct exec *x, struct dev_memory *out)
{
    struct cuda_dev *d = (struct cuda_dev *)x->dev;
    uint64_t used = 0, reserved = 0;

    CHECK_CUDA(d, cudaMemPoolGetAttribute(d->pool, cudaMemPoolAttrUsedMemHigh,
                                          &used));
    CHECK_CUDA(d, cudaMemPoolGetAttribute(
                      d->pool, cudaMemPoolAttrReservedMemHigh, &reserved));
    out->predicted = predicted(x, d);
    out->used_high = (double)used;
    out->reserved_high = (double)reserved;
    out->used_start = d->used_start;
    out->used_now = mem_used(d);
}

extern "C" const struct zb_executor zb_executor_cuda = {
    "cuda", &cuda_math, cu_init, cu_fini, cu_post, cu_flush, cu_test,
    cu_consume, cu_coll_post, cu_coll_test, cu_coll_consume, cu_mark,
    cu_marks, cu_comm_times, cu_memory,
};
