/* cuda_int.h - the cuda backend's private header: its state (struct
 * cuda_dev and the handles of messages and collectives in flight) and
 * the functions its files share. cuda_host.cu tells how the backend
 * works; each file holds one part of it, and every one is also built
 * against the fake of tests/emu/ (make test-emu):
 *   cuda_host.cu     the executor table, init and fini, the sticky error
 *   cuda_math.cu     the math table: typed buffers, copies, GEMMs
 *   cuda_setup.cu    the device, its streams and events, NCCL's links
 *   cuda_nccl.cu     messages over NCCL, NCCL's errors
 *   cuda_mpi.cu      messages over MPI through pinned host buffers
 *   cuda_xfer.cu     the table's message entries, over either transport
 *   cuda_coll.cu     the data-parallel collectives, over either one
 *   cuda_measure.cu  the device timeline and memory
 * The kernels are cuda.cu's (cuda_api.h). Functions that can fail return
 * 0 or a negative ZB_E* code with detail in err, as exec.h's do. */
#ifndef ZBEXEC_CUDA_INT_H
#define ZBEXEC_CUDA_INT_H

#include <stdint.h>
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
    cudaEvent_t *events;        /* free completion events (cu_event_get) */
    int nevents, capevents;
    float **staging;            /* --transport mpi: free pinned buffers */
    int nstaging, capstaging;
    float **cstaging;           /* the same for collectives */
    int ncstaging, capcstaging;
    /* --transport mpi: sends and collectives whose device-to-host copy is
     * queued but which MPI has not been handed yet, in post order;
     * cu_mpi_pump() issues them from every wait loop (a wait that issued
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

/* ---- Errors (cuda_host.cu) ----------------------------------------------- */

/* The first failure recorded (cu_sticky) as ZB_EDEVICE; 0 if none. */
int cu_take_error(struct cuda_dev *d, struct zb_error *err);

/* ---- Math (cu_math.cu) ------------------------------------------------- */

/* The math table (exec.h, struct zb_math) on the compute stream. */
extern const struct zb_math cu_math;
/* The bytes of one entry of type t. */
size_t cu_type_bytes(enum cu_type t);
/* hdr floats, then n - hdr entries of type t, stream-ordered on s and
 * recorded in d->bufs; not zeroed. */
void *cu_dev_alloc(struct cuda_dev *d, size_t n, size_t hdr,
                   enum cu_type t, cudaStream_t s);
/* The math table's alloc_act: the activation type, on compute. */
float *cu_alloc_act(void *dev, size_t n, size_t hdr);
/* The buffer holding p is written: its weight copy is out of date. */
void cu_written(struct cuda_dev *d, const void *p);

/* ---- Setup (cuda_setup.cu; cu_init calls them in this order) ------------ */

/* Set this process's GPU; ZB_EDEVICE when there is none, or when NCCL
 * would need the one another rank of the node shares. */
int cu_pick_device(struct exec *x, struct cuda_dev *d,
                   struct zb_error *err);
/* The pool, the compute stream, cuBLAS, the pinned headers, the events. */
int cu_setup(struct exec *x, struct cuda_dev *d, struct zb_error *err);
/* Every link of this rank, connected; a failure aborts the job. */
int cu_nccl_connect(struct exec *x, struct cuda_dev *d,
                    struct zb_error *err);
/* The replicas' communicator and the collectives' stream (dp > 1). */
int cu_dp_connect(struct exec *x, struct cuda_dev *d, struct zb_error *err);

/* ---- NCCL (cuda_nccl.cu) ------------------------------------------------- */

/* Wait while non-blocking c works; its state then. */
ncclResult_t cu_settle(ncclComm_t c);
/* r, unless ncclSuccess, recorded as sticky with what and c's last
 * words (c may be NULL); then cu_take_error's result. */
int cu_nccl_status(struct cuda_dev *d, ncclComm_t c, const char *what,
                   ncclResult_t r, struct zb_error *err);
/* c's async error, if any, recorded; c then aborted, *have false. */
void cu_comm_check(struct cuda_dev *d, ncclComm_t c, bool *have,
                   const char *what);
/* Queue m on its link for cu_nccl_flush. */
int cu_nccl_post(struct exec *x, struct cuda_dev *d, struct xmsg *m,
                 struct cuda_req *q, struct zb_error *err);
/* Issue every link's queue as one NCCL group. */
int cu_nccl_flush(struct exec *x, struct cuda_dev *d,
                  struct zb_error *err);
/* *done once m's event completed (a receive's header in m->got). */
int cu_nccl_test(struct cuda_dev *d, struct xmsg *m, bool *done,
                 struct zb_error *err);

/* ---- MPI through pinned host buffers (cuda_mpi.cu) ----------------------- */

/* A free pinned buffer of `bytes` from list, else a new one. */
float *cu_staging_get(struct cuda_dev *d, float **list, int *nlist,
                      size_t bytes);
/* Give p back to list. */
void cu_staging_put(float ***list, int *nlist, int *cap, float *p);
/* Append p to a FIFO of pointers (head: the oldest not yet taken). */
void cu_fifo_push(void ***items, int *head, int *n, int *cap, void *p);
/* Hand MPI every send and collective whose download is done, in order. */
int cu_mpi_pump(struct exec *x, struct cuda_dev *d, struct zb_error *err);
/* Post m through a pinned buffer. */
int cu_mpi_post(struct exec *x, struct cuda_dev *d, struct xmsg *m,
                struct cuda_req *q, struct zb_error *err);
/* Move m one step on; *done once nothing is left. */
int cu_mpi_advance(struct exec *x, struct cuda_dev *d, struct xmsg *m,
                   bool *done, struct zb_error *err);

/* ---- Messages (cuda_xfer.cu) --------------------------------------------- */

/* m's slot in d->headers and d->sendhdr. */
int cu_header_slot(const struct cuda_dev *d, const struct xmsg *m);
/* A message of n entries as it travels: its bytes, and its count in
 * entries of the activation type. */
size_t cu_msg_bytes(const struct cuda_dev *d, size_t n);
size_t cu_msg_count(const struct cuda_dev *d, size_t n);
/* A completion event from the pool; back to it (NULL is fine). */
cudaEvent_t cu_event_get(struct cuda_dev *d);
void cu_event_put(struct cuda_dev *d, cudaEvent_t e);
/* Where the compute stream starts waiting for comm op `op` (none: -1). */
void cu_wait_mark(struct cuda_dev *d, int op);
/* The executor table's message entries (exec.h, struct zb_executor). */
int cu_post(struct exec *x, struct xmsg *m, struct zb_error *err);
int cu_flush(struct exec *x, struct zb_error *err);
int cu_test(struct exec *x, struct xmsg *m, bool *done,
            struct zb_error *err);
int cu_consume(struct exec *x, struct xmsg *m, struct zb_error *err);

/* ---- Data-parallel collectives (cuda_coll.cu) ---------------------------- */

/* The executor table's collective entries (exec.h). */
int cu_coll_post(struct exec *x, enum coll_kind k, int op, float *buf,
                 float *shard, void **req, struct zb_error *err);
int cu_coll_test(struct exec *x, void *req, bool *done,
                 struct zb_error *err);
int cu_coll_consume(struct exec *x, void *req, struct zb_error *err);

/* ---- Timeline and memory (cuda_measure.cu) ------------------------------- */

/* The executor table's timeline and memory entries (exec.h). */
void cu_mark(struct exec *x, int slot);
int cu_marks(struct exec *x, int n, double *ms, struct zb_error *err);
void cu_comm_times(struct exec *x);
void cu_memory(struct exec *x, struct dev_memory *out);
/* The device's memory in use (cudaMemGetInfo). */
double cu_mem_used(struct cuda_dev *d);

#endif
