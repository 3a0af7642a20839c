/* fake_cuda.cc - a host-only fake of the CUDA runtime, cuBLAS and NCCL
 * (fake_cuda.h) that models what decides whether the cuda backend's
 * transport hangs: asynchronous, late work on streams, events, lazy NCCL
 * connection with rendezvous semantics, and groups.
 *
 * One process-wide device (the state a driver keeps), advanced whenever
 * the host calls in, as a real device runs while the host polls it:
 * - a stream runs its items in order, each a random lag after the one
 *   before finished (ZB_EMU_LAG_US=LO:HI, default 2:200, on a virtual
 *   clock never ahead of the host's), so a copy or kernel is seen done
 *   only a while after it was queued;
 * - NCCL moves data between the processes with MPI on MPI_COMM_WORLD (tags
 *   from 1 << 22 up): MPI_Issend, so a send completes only once its
 *   receive has started, as NCCL's kernels do;
 * - a point-to-point connection is made at the first group that uses it
 *   (NCCL's runtime connection) and that group stays in progress, its ops
 *   held, until the peer has issued a group using it too;
 * - a group spanning streams joins them (NCCL's stream semantics: it starts
 *   once every stream reached it, each goes on once all of it is done);
 * - collectives sum in comm-rank order (the same bits on every rank) and
 *   need no connection;
 * - memory: stream-ordered allocations of the bytes asked for (a bf16
 *   buffer counts 2 a entry), poisoned (NaN) when freed, the pool's used
 *   (in the order the host queues allocations and frees, as a stream
 *   reuses what it freed) and reserved high-water marks, the bytes NCCL's
 *   sends moved (ZB_EMU_STATS), cudaMemGetInfo of an 80 GiB
 *   device with a context, NCCL's buffers and cuBLAS's workspace outside
 *   the pool; copies from or to pageable memory are counted
 *   (ZB_EMU_STATS=1 prints the counts at exit), a D2H to pageable memory
 *   waits for its stream as CUDA's may.
 * ZB_EMU_GPUS (default 1) is the device count every process sees. The
 * fake requires a communicator's id to be made by its rank 0. */
#define OMPI_SKIP_MPICXX 1
#define MPICH_SKIP_MPICXX 1
#include <mpi.h>
#include <cblas.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <algorithm>
#include <deque>
#include <map>
#include <memory>
#include <random>
#include <set>
#include <unordered_map>
#include <vector>
#include "fake_cuda.h"

namespace {

const size_t GiB = (size_t)1 << 30, MiB = (size_t)1 << 20;
const size_t DEVICE_BYTES = 80 * GiB;
const size_t CONTEXT_BYTES = 300 * MiB;     /* context, kernels */
const size_t NCCL_PEER_BYTES = 4 * MiB;     /* buffers per peer */
const size_t BLAS_BYTES = 4 * MiB;          /* workspace */
const int TAG_UNIT = 1 << 22;               /* tag = kind * unit + comm */
enum { TAG_INIT = 1, TAG_TABLE, TAG_CONN_SR, TAG_CONN_RS, TAG_DATA,
       TAG_COLL };

double now_ms()
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec * 1e-6;
}

void pause_spin(int spins)
{
    if (spins < 100) {
        sched_yield();
        return;
    }
    struct timespec ts = { 0, 20000 };
    nanosleep(&ts, NULL);
}

/* A point-to-point connection: (comm, peer, this side sends). */
struct conn_key {
    emu_comm *c;
    int peer;
    bool send;
    bool operator<(const conn_key &o) const
    {
        if (c != o.c)
            return c < o.c;
        if (peer != o.peer)
            return peer < o.peer;
        return send < o.send;
    }
};

/* A group's ops start once every connection it needs is made. */
struct gate {
    std::vector<conn_key> keys;
    std::vector<emu_comm *> comms;      /* in progress until open */
    bool open;
};

enum op_kind { OP_SEND, OP_RECV, OP_ALLREDUCE, OP_REDSCAT, OP_ALLGATHER };

struct nccl_op {
    op_kind kind;
    const float *send;
    float *recv;
    size_t count;               /* collectives: floats */
    size_t bytes;               /* point-to-point */
    int peer;
    emu_comm *c;
    emu_stream *s;
};

/* One op of a group on its way: its MPI requests, a collective's parts
 * by comm rank. */
struct op_run {
    nccl_op o;
    bool posted, done;
    std::vector<MPI_Request> reqs;
    std::vector<std::vector<float>> parts;
};

/* A group that spans streams is one point of them (NCCL's stream
 * semantics): it starts once every stream reached it and each stream
 * goes on once all of it finished. */
struct join {
    int n, arrived, finished;
};

struct task {
    enum { FN, RECORD, WAIT, FREE, NCCL } kind;
    double lag;                 /* ms after the previous item finished */
    std::function<void()> fn;
    emu_event *ev;
    uint64_t seq;
    void *ptr;
    std::vector<op_run> runs;   /* NCCL: the group's ops on this stream */
    std::shared_ptr<gate> g;
    std::shared_ptr<join> j;
    bool arrived, finished;
};

struct pending_conn {
    conn_key k;
    int out, in;
    MPI_Request reqs[2];
};

} // namespace

struct emu_event {
    uint64_t seq, done;
    double time;                /* virtual ms of the last completion */
    bool timing;
    int refs;                   /* queued items naming it */
    bool dead;
};

struct emu_stream {
    std::deque<task> q;
    double free_at;             /* virtual ms the last item finished */
    bool dead;
};

struct emu_comm {
    int nranks, rank, tagid, creator;
    std::vector<int> world;     /* world rank by comm rank */
    bool blocking, ready, aborted;
    std::vector<int> init_buf;
    std::vector<MPI_Request> init_reqs;
    int init_phase;
    int busy;                   /* groups waiting for a connection */
};

struct emu_blas {
    emu_stream *s;
};

struct emu_pool {
    int unused;
};

namespace {

struct device {
    bool init;
    int world;
    std::mt19937_64 rng;
    double lag_lo, lag_hi;
    int ngpus, current;
    std::vector<emu_stream *> streams;
    std::map<uintptr_t, size_t> pinned;
    std::unordered_map<void *, size_t> allocs;
    size_t used, used_high, reserved, reserved_high, outside;
    emu_pool pool;
    std::set<conn_key> connected;
    std::vector<pending_conn *> connecting;
    std::vector<std::shared_ptr<gate>> gates;
    std::vector<emu_comm *> initing;
    std::vector<nccl_op> group;
    int depth;
    unsigned ids;
    long pageable_h2d, pageable_d2h, syncs;
    size_t sent;                /* bytes of NCCL sends */
    bool stats;
};

void print_stats();

device &dev()
{
    static device d;
    if (!d.init) {
        const char *lag = getenv("ZB_EMU_LAG_US");
        const char *seed = getenv("ZB_EMU_SEED");
        const char *gpus = getenv("ZB_EMU_GPUS");
        double lo = 2, hi = 200;
        d.init = true;
        MPI_Comm_rank(MPI_COMM_WORLD, &d.world);
        if (lag && sscanf(lag, "%lf:%lf", &lo, &hi) != 2)
            hi = lo;
        d.lag_lo = lo * 1e-3;
        d.lag_hi = std::max(lo, hi) * 1e-3;
        d.rng.seed((seed ? strtoull(seed, NULL, 10) : 1) * 1000003ULL +
                   (uint64_t)d.world);
        d.ngpus = gpus ? atoi(gpus) : 1;
        d.stats = getenv("ZB_EMU_STATS") != NULL;
        if (d.stats)
            atexit(print_stats);
    }
    return d;
}

void print_stats()
{
    device &d = dev();
    fprintf(stderr, "emu: rank %d: pageable copies H2D %ld D2H %ld, "
            "stream syncs %ld, pool used high %zu B, NCCL sent %zu B\n",
            d.world, d.pageable_h2d, d.pageable_d2h, d.syncs, d.used_high,
            d.sent);
}

double lag(device &d)
{
    std::uniform_real_distribution<double> u(d.lag_lo, d.lag_hi);
    return u(d.rng);
}

void push(emu_stream *s, task t)
{
    device &d = dev();
    if (s->q.empty())
        s->free_at = std::max(s->free_at, now_ms());
    t.lag = lag(d);
    s->q.push_back(std::move(t));
}

bool pinned(const void *p)
{
    device &d = dev();
    auto it = d.pinned.upper_bound((uintptr_t)p);
    if (it == d.pinned.begin())
        return false;
    --it;
    return (uintptr_t)p < it->first + it->second;
}

/* A free reached on its stream: the memory goes (its bytes left the
 * pool's use when the free was queued, cudaFreeAsync). */
void release(void *p)
{
    device &d = dev();
    auto it = d.allocs.find(p);
    if (it == d.allocs.end())
        return;
    memset(p, 0xff, it->second);        /* NaN for a late reader */
    d.allocs.erase(it);
    free(p);
}

void event_unref(emu_event *e)
{
    if (--e->refs == 0 && e->dead)
        delete e;
}

int tag(int kind, const emu_comm *c)
{
    return kind * TAG_UNIT + c->tagid;
}

bool all_done(std::vector<MPI_Request> &reqs)
{
    int flag = 0;
    if (reqs.empty())
        return true;
    MPI_Testall((int)reqs.size(), reqs.data(), &flag, MPI_STATUSES_IGNORE);
    return flag != 0;
}

/* Start a point-to-point op or a collective; true once it completed. */
bool run_op(op_run &r)
{
    nccl_op &o = r.o;
    emu_comm *c = o.c;
    const int n = c->nranks, me = c->rank;
    const int bytes = (int)(o.kind == OP_SEND || o.kind == OP_RECV
                                ? o.bytes : o.count * sizeof(float));

    if (r.done)
        return true;
    if (!r.posted) {
        r.posted = true;
        if (o.kind == OP_SEND || o.kind == OP_RECV) {
            r.reqs.resize(1);
            if (o.kind == OP_SEND) {
                dev().sent += o.bytes;
                MPI_Issend(o.send, bytes, MPI_BYTE, c->world[o.peer],
                           tag(TAG_DATA, c), MPI_COMM_WORLD, &r.reqs[0]);
            } else {
                MPI_Irecv(o.recv, bytes, MPI_BYTE, c->world[o.peer],
                          tag(TAG_DATA, c), MPI_COMM_WORLD, &r.reqs[0]);
            }
        } else {
            const size_t cnt = o.count;
            r.parts.assign(n, std::vector<float>(cnt));
            for (int j = 0; j < n; j++) {
                const float *mine = o.kind == OP_REDSCAT
                                        ? o.send + (size_t)j * cnt : o.send;
                if (j == me) {
                    memcpy(r.parts[j].data(), mine, cnt * sizeof(float));
                    continue;
                }
                r.reqs.emplace_back();
                MPI_Isend(mine, bytes, MPI_BYTE, c->world[j],
                          tag(TAG_COLL, c), MPI_COMM_WORLD, &r.reqs.back());
                r.reqs.emplace_back();
                MPI_Irecv(r.parts[j].data(), bytes, MPI_BYTE, c->world[j],
                          tag(TAG_COLL, c), MPI_COMM_WORLD, &r.reqs.back());
            }
        }
    }
    if (!all_done(r.reqs))
        return false;
    if (o.kind == OP_ALLGATHER) {
        for (int j = 0; j < n; j++)
            memcpy(o.recv + (size_t)j * o.count, r.parts[j].data(),
                   o.count * sizeof(float));
    } else if (o.kind == OP_ALLREDUCE || o.kind == OP_REDSCAT) {
        for (size_t i = 0; i < o.count; i++) {
            float v = r.parts[0][i];
            for (int j = 1; j < n; j++)
                v += r.parts[j][i];
            o.recv[i] = v;
        }
    }
    r.done = true;
    return true;
}

/* A group's ops on one stream: they start once the group's connections
 * are made and every stream of the group reached it, progress together,
 * and the stream goes on once the whole group finished. */
bool run_nccl(task &t)
{
    bool done = true;

    if (t.g && !t.g->open)
        return false;
    if (!t.arrived) {
        t.arrived = true;
        t.j->arrived++;
    }
    if (t.j->arrived < t.j->n)
        return false;
    for (op_run &r : t.runs)
        done = run_op(r) && done;
    if (!done)
        return false;
    if (!t.finished) {
        t.finished = true;
        t.j->finished++;
    }
    return t.j->finished == t.j->n;
}

/* The head item of s, at virtual time `at` (its earliest start): true
 * once it finished, at *end. */
bool step(task &t, double at, double *end)
{
    *end = at;
    switch (t.kind) {
    case task::FN:
        t.fn();
        return true;
    case task::RECORD:
        t.ev->done = std::max(t.ev->done, t.seq);
        t.ev->time = at;
        event_unref(t.ev);
        return true;
    case task::WAIT:
        if (t.ev->done < t.seq)
            return false;
        *end = std::max(at, t.ev->time);
        event_unref(t.ev);
        return true;
    case task::FREE:
        release(t.ptr);
        return true;
    case task::NCCL:
        if (!run_nccl(t))
            return false;
        *end = std::max(at, now_ms());  /* it needed another process */
        return true;
    }
    return true;
}

void progress_inits()
{
    device &d = dev();
    for (size_t i = 0; i < d.initing.size();) {
        emu_comm *c = d.initing[i];
        if (!all_done(c->init_reqs)) {
            i++;
            continue;
        }
        c->init_reqs.clear();
        if (c->rank == 0 && c->init_phase == 0 && c->nranks > 1) {
            /* Every hello in: send the table of world ranks. */
            for (int r = 1; r < c->nranks; r++)
                c->world[c->init_buf[2 * (r - 1)]] =
                    c->init_buf[2 * (r - 1) + 1];
            c->init_phase = 1;
            c->init_reqs.resize(c->nranks - 1);
            for (int r = 1; r < c->nranks; r++)
                MPI_Isend(c->world.data(), c->nranks, MPI_INT, c->world[r],
                          tag(TAG_TABLE, c), MPI_COMM_WORLD,
                          &c->init_reqs[r - 1]);
            i++;
            continue;
        }
        c->ready = true;
        d.outside += NCCL_PEER_BYTES * (size_t)(c->nranks - 1);
        d.initing.erase(d.initing.begin() + (long)i);
    }
}

void progress_conns()
{
    device &d = dev();
    for (size_t i = 0; i < d.connecting.size();) {
        pending_conn *p = d.connecting[i];
        int flag = 0;
        MPI_Testall(2, p->reqs, &flag, MPI_STATUSES_IGNORE);
        if (!flag) {
            i++;
            continue;
        }
        d.connected.insert(p->k);
        delete p;
        d.connecting.erase(d.connecting.begin() + (long)i);
    }
    for (size_t i = 0; i < d.gates.size();) {
        gate &g = *d.gates[i];
        bool open = true;
        for (const conn_key &k : g.keys)
            open = open && d.connected.count(k);
        if (!open) {
            i++;
            continue;
        }
        g.open = true;
        for (emu_comm *c : g.comms)
            c->busy--;
        d.gates.erase(d.gates.begin() + (long)i);
    }
}

/* Run the device until nothing more can move now. */
void progress()
{
    device &d = dev();
    bool moved = true;

    while (moved) {
        moved = false;
        progress_inits();
        progress_conns();
        const double t = now_ms();
        for (emu_stream *s : d.streams)
            while (!s->q.empty()) {
                double at = s->free_at + s->q.front().lag, end;
                if (at > t || !step(s->q.front(), at, &end))
                    break;
                s->q.pop_front();
                s->free_at = end;
                moved = true;
            }
    }
    for (size_t i = 0; i < d.streams.size();)
        if (d.streams[i]->dead && d.streams[i]->q.empty()) {
            delete d.streams[i];
            d.streams.erase(d.streams.begin() + (long)i);
        } else {
            i++;
        }
}

void drain(emu_stream *s)
{
    for (int spins = 0;; spins++) {
        progress();
        if (s->q.empty())
            return;
        pause_spin(spins);
    }
}

ncclResult_t end_group()
{
    device &d = dev();
    std::vector<nccl_op> ops;
    auto g = std::make_shared<gate>();
    bool blocking = false;

    ops.swap(d.group);
    g->open = true;
    for (const nccl_op &o : ops) {
        if (o.c->aborted || !o.c->ready)
            return ncclInvalidUsage;
        if (o.kind != OP_SEND && o.kind != OP_RECV)
            continue;
        conn_key k = { o.c, o.peer, o.kind == OP_SEND };
        if (d.connected.count(k) ||
            std::find_if(g->keys.begin(), g->keys.end(),
                         [&](const conn_key &x) {
                             return !(x < k) && !(k < x);
                         }) != g->keys.end())
            continue;
        g->keys.push_back(k);
        g->open = false;
        bool started = false;
        for (pending_conn *p : d.connecting)
            started = started || (!(p->k < k) && !(k < p->k));
        if (started)
            continue;
        /* Tell the peer this side is up; wait for its word. */
        pending_conn *p = new pending_conn();
        p->k = k;
        p->out = 1;
        const int peer = o.c->world[o.peer];
        MPI_Isend(&p->out, 1, MPI_INT, peer,
                  tag(k.send ? TAG_CONN_SR : TAG_CONN_RS, o.c),
                  MPI_COMM_WORLD, &p->reqs[0]);
        MPI_Irecv(&p->in, 1, MPI_INT, peer,
                  tag(k.send ? TAG_CONN_RS : TAG_CONN_SR, o.c),
                  MPI_COMM_WORLD, &p->reqs[1]);
        d.connecting.push_back(p);
    }
    /* One item per stream of the group, its ops in call order. */
    std::vector<emu_stream *> streams;
    for (const nccl_op &o : ops)
        if (std::find(streams.begin(), streams.end(), o.s) == streams.end())
            streams.push_back(o.s);
    auto j = std::make_shared<join>();
    j->n = (int)streams.size();
    for (emu_stream *s : streams) {
        task t = {};
        t.kind = task::NCCL;
        t.j = j;
        if (!g->open)
            t.g = g;
        for (const nccl_op &o : ops)
            if (o.s == s)
                t.runs.push_back({ o, false, false, {}, {} });
        push(s, std::move(t));
    }
    for (const nccl_op &o : ops) {
        if (!g->open &&
            std::find(g->comms.begin(), g->comms.end(), o.c) ==
                g->comms.end()) {
            g->comms.push_back(o.c);
            o.c->busy++;
            blocking = blocking || o.c->blocking;
        }
    }
    if (g->open)
        return ncclSuccess;
    d.gates.push_back(g);
    if (!blocking)
        return ncclInProgress;
    for (int spins = 0; !g->open; spins++) {
        progress();
        if (!g->open)
            pause_spin(spins);
    }
    return ncclSuccess;
}

ncclResult_t add_op(const nccl_op &o)
{
    device &d = dev();
    if (!o.c || !o.s)
        return ncclInvalidArgument;
    d.group.push_back(o);
    return d.depth > 0 ? ncclSuccess : end_group();
}

} // namespace

/* ---- Runtime ------------------------------------------------------------ */

const char *cudaGetErrorString(cudaError_t e)
{
    switch (e) {
    case cudaSuccess: return "no error";
    case cudaErrorInvalidValue: return "invalid argument";
    case cudaErrorMemoryAllocation: return "out of memory";
    case cudaErrorInvalidResourceHandle: return "invalid resource handle";
    case cudaErrorNotReady: return "device not ready";
    }
    return "unknown error";
}

cudaError_t cudaGetLastError(void)
{
    return cudaSuccess;
}

cudaError_t cudaGetDeviceCount(int *count)
{
    *count = dev().ngpus;
    return cudaSuccess;
}

cudaError_t cudaSetDevice(int d)
{
    if (d < 0 || d >= dev().ngpus)
        return cudaErrorInvalidValue;
    dev().current = d;
    return cudaSuccess;
}

cudaError_t cudaGetDevice(int *d)
{
    *d = dev().current;
    return cudaSuccess;
}

cudaError_t cudaDeviceGetPCIBusId(char *id, int len, int d)
{
    snprintf(id, (size_t)len, "0000:%02x:00.0", d + 1);
    return cudaSuccess;
}

cudaError_t cudaDeviceGetDefaultMemPool(cudaMemPool_t *pool, int d)
{
    (void)d;
    *pool = &dev().pool;
    return cudaSuccess;
}

/* The high-water marks may be reset (to the current use), as CUDA's. */
cudaError_t cudaMemPoolSetAttribute(cudaMemPool_t pool, cudaMemPoolAttr a,
                                    void *value)
{
    device &d = dev();
    (void)pool;
    if (a == cudaMemPoolAttrUsedMemHigh && !*(uint64_t *)value)
        d.used_high = d.used;
    else if (a == cudaMemPoolAttrReservedMemHigh && !*(uint64_t *)value)
        d.reserved_high = d.reserved;
    else if (a != cudaMemPoolAttrReleaseThreshold)
        return cudaErrorInvalidValue;
    return cudaSuccess;
}

/* The pool keeps what it reserved (release threshold UINT64_MAX). */
cudaError_t cudaMemPoolGetAttribute(cudaMemPool_t pool, cudaMemPoolAttr a,
                                    void *value)
{
    device &d = dev();
    uint64_t *v = (uint64_t *)value;
    (void)pool;
    progress();
    switch (a) {
    case cudaMemPoolAttrUsedMemCurrent: *v = d.used; break;
    case cudaMemPoolAttrUsedMemHigh: *v = d.used_high; break;
    case cudaMemPoolAttrReservedMemCurrent: *v = d.reserved; break;
    case cudaMemPoolAttrReservedMemHigh: *v = d.reserved_high; break;
    default: return cudaErrorInvalidValue;
    }
    return cudaSuccess;
}

cudaError_t cudaMemGetInfo(size_t *free_bytes, size_t *total_bytes)
{
    device &d = dev();
    *total_bytes = DEVICE_BYTES;
    *free_bytes = DEVICE_BYTES - CONTEXT_BYTES - d.outside - d.reserved;
    return cudaSuccess;
}

cudaError_t cudaStreamCreateWithFlags(cudaStream_t *s, unsigned flags)
{
    (void)flags;
    *s = new emu_stream();
    dev().streams.push_back(*s);
    return cudaSuccess;
}

cudaError_t cudaStreamDestroy(cudaStream_t s)
{
    if (!s)
        return cudaErrorInvalidResourceHandle;
    s->dead = true;             /* freed once its work is done */
    progress();
    return cudaSuccess;
}

cudaError_t cudaStreamSynchronize(cudaStream_t s)
{
    dev().syncs++;
    drain(s);
    return cudaSuccess;
}

cudaError_t cudaStreamWaitEvent(cudaStream_t s, cudaEvent_t e,
                                unsigned flags)
{
    (void)flags;
    if (e->seq == 0)            /* never recorded: nothing to wait for */
        return cudaSuccess;
    task t = {};
    t.kind = task::WAIT;
    t.ev = e;
    t.seq = e->seq;
    e->refs++;
    push(s, std::move(t));
    return cudaSuccess;
}

cudaError_t cudaEventCreate(cudaEvent_t *e)
{
    return cudaEventCreateWithFlags(e, cudaEventDefault);
}

cudaError_t cudaEventCreateWithFlags(cudaEvent_t *e, unsigned flags)
{
    *e = new emu_event();
    (*e)->timing = !(flags & cudaEventDisableTiming);
    (*e)->refs = 1;
    return cudaSuccess;
}

cudaError_t cudaEventDestroy(cudaEvent_t e)
{
    if (!e || e->dead)
        return cudaErrorInvalidResourceHandle;
    e->dead = true;
    event_unref(e);
    return cudaSuccess;
}

cudaError_t cudaEventRecord(cudaEvent_t e, cudaStream_t s)
{
    task t = {};
    t.kind = task::RECORD;
    t.ev = e;
    t.seq = ++e->seq;
    e->refs++;
    push(s, std::move(t));
    return cudaSuccess;
}

cudaError_t cudaEventQuery(cudaEvent_t e)
{
    progress();
    return e->done >= e->seq ? cudaSuccess : cudaErrorNotReady;
}

cudaError_t cudaEventSynchronize(cudaEvent_t e)
{
    for (int spins = 0; cudaEventQuery(e) != cudaSuccess; spins++)
        pause_spin(spins);
    return cudaSuccess;
}

cudaError_t cudaEventElapsedTime(float *ms, cudaEvent_t a, cudaEvent_t b)
{
    progress();
    if (!a->timing || !b->timing || !a->seq || !b->seq)
        return cudaErrorInvalidResourceHandle;
    if (a->done < a->seq || b->done < b->seq)
        return cudaErrorNotReady;
    *ms = (float)(b->time - a->time);
    return cudaSuccess;
}

cudaError_t cudaMallocAsync(void **p, size_t bytes, cudaStream_t s)
{
    device &d = dev();
    (void)s;                    /* usable by what s runs after this */
    *p = malloc(bytes ? bytes : 1);
    if (!*p)
        return cudaErrorMemoryAllocation;
    d.allocs[*p] = bytes;
    d.used += bytes;
    d.used_high = std::max(d.used_high, d.used);
    d.reserved = std::max(d.reserved, d.used);
    d.reserved_high = std::max(d.reserved_high, d.reserved);
    return cudaSuccess;
}

/* The pool counts the bytes unused at once, in the order the host
 * queues allocations and frees: a later allocation on the stream may
 * reuse them (stream-ordered reuse), so the high-water mark is that of
 * the live buffers in queue order, not inflated by the device running
 * behind the host. */
cudaError_t cudaFreeAsync(void *p, cudaStream_t s)
{
    device &d = dev();
    auto it = d.allocs.find(p);
    if (it != d.allocs.end())
        d.used -= it->second;
    task t = {};
    t.kind = task::FREE;
    t.ptr = p;
    push(s, std::move(t));
    return cudaSuccess;
}

cudaError_t cudaMallocHost(void **p, size_t bytes)
{
    *p = malloc(bytes ? bytes : 1);
    if (!*p)
        return cudaErrorMemoryAllocation;
    dev().pinned[(uintptr_t)*p] = bytes;
    return cudaSuccess;
}

cudaError_t cudaFreeHost(void *p)
{
    dev().pinned.erase((uintptr_t)p);
    free(p);
    return cudaSuccess;
}

/* From pageable memory the source is staged at the call; to pageable
 * memory the call returns once the copy ran. */
cudaError_t cudaMemcpyAsync(void *dst, const void *src, size_t bytes,
                            cudaMemcpyKind kind, cudaStream_t s)
{
    device &d = dev();
    task t = {};
    t.kind = task::FN;
    if (kind == cudaMemcpyHostToDevice && !pinned(src)) {
        auto staged = std::make_shared<std::vector<char>>(
            (const char *)src, (const char *)src + bytes);
        d.pageable_h2d++;
        t.fn = [dst, staged]() {
            memcpy(dst, staged->data(), staged->size());
        };
    } else {
        t.fn = [dst, src, bytes]() { memmove(dst, src, bytes); };
    }
    push(s, std::move(t));
    if (kind == cudaMemcpyDeviceToHost && !pinned(dst)) {
        d.pageable_d2h++;
        drain(s);
    }
    return cudaSuccess;
}

cudaError_t cudaMemsetAsync(void *p, int value, size_t bytes,
                            cudaStream_t s)
{
    task t = {};
    t.kind = task::FN;
    t.fn = [p, value, bytes]() { memset(p, value, bytes); };
    push(s, std::move(t));
    return cudaSuccess;
}

void emu_launch(cudaStream_t s, std::function<void()> fn)
{
    task t = {};
    t.kind = task::FN;
    t.fn = std::move(fn);
    push(s, std::move(t));
}

/* ---- cuBLAS ------------------------------------------------------------- */

const char *cublasGetStatusString(cublasStatus_t s)
{
    return s == CUBLAS_STATUS_SUCCESS ? "CUBLAS_STATUS_SUCCESS"
                                      : "CUBLAS_STATUS_NOT_INITIALIZED";
}

cublasStatus_t cublasCreate(cublasHandle_t *h)
{
    *h = new emu_blas();
    dev().outside += BLAS_BYTES;
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasDestroy(cublasHandle_t h)
{
    delete h;
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasSetStream(cublasHandle_t h, cudaStream_t s)
{
    h->s = s;
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasSgemm(cublasHandle_t h, cublasOperation_t ta,
                           cublasOperation_t tb, int m, int n, int k,
                           const float *alpha, const float *a, int lda,
                           const float *b, int ldb, const float *beta,
                           float *c, int ldc)
{
    const float al = *alpha, be = *beta;
    if (!h || !h->s)
        return CUBLAS_STATUS_NOT_INITIALIZED;
    emu_launch(h->s, [=]() {
        cblas_sgemm(CblasColMajor, ta == CUBLAS_OP_T ? CblasTrans
                                                     : CblasNoTrans,
                    tb == CUBLAS_OP_T ? CblasTrans : CblasNoTrans, m, n, k,
                    al, a, lda, b, ldb, be, c, ldc);
    });
    return CUBLAS_STATUS_SUCCESS;
}

uint16_t emu_bf16(float v)
{
    uint32_t u;
    memcpy(&u, &v, sizeof(u));
    if ((u & 0x7fffffffu) > 0x7f800000u)       /* NaN: keep it quiet */
        return (uint16_t)(u >> 16 | 0x40u);
    u += 0x7fffu + ((u >> 16) & 1u);           /* to nearest even */
    return (uint16_t)(u >> 16);
}

float emu_float(uint16_t h)
{
    uint32_t u = (uint32_t)h << 16;
    float v;
    memcpy(&v, &u, sizeof(v));
    return v;
}

static size_t type_size(cudaDataType t)
{
    return t == CUDA_R_16BF ? 2 : sizeof(float);
}

/* Entry i of a column-major operand of type t, as a float. */
static float entry(const void *p, cudaDataType t, size_t i)
{
    return t == CUDA_R_16BF ? emu_float(((const uint16_t *)p)[i])
                            : ((const float *)p)[i];
}

/* A rows x cols column-major operand, columns ld apart, as floats. */
static std::vector<float> widen(const void *p, cudaDataType t, int ld,
                                int rows, int cols)
{
    std::vector<float> r((size_t)ld * cols);
    for (int j = 0; j < cols; j++)
        for (int i = 0; i < rows; i++)
            r[(size_t)j * ld + i] = entry(p, t, (size_t)j * ld + i);
    return r;
}

cublasStatus_t cublasGemmStridedBatchedEx(
    cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m,
    int n, int k, const void *alpha, const void *a, cudaDataType at,
    int lda, long long sa, const void *b, cudaDataType bt, int ldb,
    long long sb, const void *beta, void *c, cudaDataType ct, int ldc,
    long long sc, int count, cublasComputeType_t compute,
    cublasGemmAlgo_t algo)
{
    const float al = *(const float *)alpha, be = *(const float *)beta;
    (void)algo;
    if (!h || !h->s || at != bt || compute != CUBLAS_COMPUTE_32F)
        return CUBLAS_STATUS_NOT_INITIALIZED;
    emu_launch(h->s, [=]() {
        const bool at_ = ta == CUBLAS_OP_T, bt_ = tb == CUBLAS_OP_T;
        const int arows = at_ ? k : m, acols = at_ ? m : k;
        const int brows = bt_ ? n : k, bcols = bt_ ? k : n;
        for (int i = 0; i < count; i++) {
            const char *ai = (const char *)a + i * sa * type_size(at);
            const char *bi = (const char *)b + i * sb * type_size(bt);
            char *ci = (char *)c + i * sc * type_size(ct);
            std::vector<float> fa = widen(ai, at, lda, arows, acols);
            std::vector<float> fb = widen(bi, bt, ldb, brows, bcols);
            std::vector<float> fc = widen(ci, ct, ldc, m, n);
            cblas_sgemm(CblasColMajor,
                        ta == CUBLAS_OP_T ? CblasTrans : CblasNoTrans,
                        tb == CUBLAS_OP_T ? CblasTrans : CblasNoTrans, m, n,
                        k, al, fa.data(), lda, fb.data(), ldb, be,
                        fc.data(), ldc);
            for (int j = 0; j < n; j++)
                for (int r = 0; r < m; r++) {
                    size_t e = (size_t)j * ldc + r;
                    if (ct == CUDA_R_16BF)
                        ((uint16_t *)ci)[e] = emu_bf16(fc[e]);
                    else
                        ((float *)ci)[e] = fc[e];
                }
        }
    });
    return CUBLAS_STATUS_SUCCESS;
}

/* ---- NCCL --------------------------------------------------------------- */

const char *ncclGetErrorString(ncclResult_t r)
{
    switch (r) {
    case ncclSuccess: return "no error";
    case ncclInProgress: return "NCCL operation in progress";
    case ncclInvalidArgument: return "invalid argument";
    case ncclInvalidUsage: return "invalid usage";
    case ncclRemoteError: return "remote process exited or there was a "
                                 "network error";
    default: return "internal error";
    }
}

const char *ncclGetLastError(ncclComm_t c)
{
    (void)c;
    return "(emulated NCCL)";
}

ncclResult_t ncclGetUniqueId(ncclUniqueId *id)
{
    device &d = dev();
    int v[3] = { 0x7a62656d, d.world, (int)d.ids++ };
    memset(id, 0, sizeof(*id));
    memcpy(id->internal, v, sizeof(v));
    return ncclSuccess;
}

ncclResult_t ncclCommInitRankConfig(ncclComm_t *out, int nranks,
                                    ncclUniqueId id, int rank,
                                    ncclConfig_t *cfg)
{
    device &d = dev();
    int v[3];
    memcpy(v, id.internal, sizeof(v));
    if (v[0] != 0x7a62656d || nranks < 1 || rank < 0 || rank >= nranks ||
        (rank == 0 && v[1] != d.world) || v[2] >= 1024)
        return ncclInvalidArgument;
    emu_comm *c = new emu_comm();
    c->nranks = nranks;
    c->rank = rank;
    c->creator = v[1];
    c->tagid = v[1] * 1024 + v[2];
    c->blocking = !cfg || cfg->blocking;
    c->world.assign(nranks, -1);
    c->world[rank] = d.world;
    c->world[0] = v[1];
    if (rank == 0) {
        c->init_buf.resize(2 * (size_t)(nranks - 1));
        c->init_reqs.resize(nranks - 1);
        for (int r = 1; r < nranks; r++)
            MPI_Irecv(&c->init_buf[2 * (size_t)(r - 1)], 2, MPI_INT,
                      MPI_ANY_SOURCE, tag(TAG_INIT, c), MPI_COMM_WORLD,
                      &c->init_reqs[r - 1]);
    } else {
        c->init_buf = { rank, d.world };
        c->init_reqs.resize(2);
        MPI_Isend(c->init_buf.data(), 2, MPI_INT, c->creator,
                  tag(TAG_INIT, c), MPI_COMM_WORLD, &c->init_reqs[0]);
        MPI_Irecv(c->world.data(), nranks, MPI_INT, c->creator,
                  tag(TAG_TABLE, c), MPI_COMM_WORLD, &c->init_reqs[1]);
        c->init_phase = 1;
    }
    d.initing.push_back(c);
    *out = c;
    if (!c->blocking)
        return ncclInProgress;
    for (int spins = 0; !c->ready; spins++) {
        progress();
        if (!c->ready)
            pause_spin(spins);
    }
    return ncclSuccess;
}

ncclResult_t ncclCommGetAsyncError(ncclComm_t c, ncclResult_t *state)
{
    progress();
    *state = c->aborted ? ncclRemoteError
             : !c->ready || c->busy > 0 ? ncclInProgress : ncclSuccess;
    return ncclSuccess;
}

ncclResult_t ncclCommFinalize(ncclComm_t c)
{
    (void)c;
    return ncclSuccess;
}

ncclResult_t ncclCommDestroy(ncclComm_t c)
{
    device &d = dev();
    if (c->ready)
        d.outside -= NCCL_PEER_BYTES * (size_t)(c->nranks - 1);
    c->aborted = true;          /* kept: queued work may still name it */
    return ncclSuccess;
}

ncclResult_t ncclCommAbort(ncclComm_t c)
{
    c->aborted = true;
    return ncclSuccess;
}

ncclResult_t ncclGroupStart(void)
{
    dev().depth++;
    return ncclSuccess;
}

ncclResult_t ncclGroupEnd(void)
{
    device &d = dev();
    if (d.depth == 0)
        return ncclInvalidUsage;
    if (--d.depth > 0)
        return ncclSuccess;
    return end_group();
}

static size_t nccl_size(ncclDataType_t t)
{
    return t == ncclBfloat16 ? 2 : sizeof(float);
}

ncclResult_t ncclSend(const void *buf, size_t count, ncclDataType_t type,
                      int peer, ncclComm_t c, cudaStream_t s)
{
    return add_op({ OP_SEND, (const float *)buf, NULL, 0,
                    count * nccl_size(type), peer, c, s });
}

ncclResult_t ncclRecv(void *buf, size_t count, ncclDataType_t type,
                      int peer, ncclComm_t c, cudaStream_t s)
{
    return add_op({ OP_RECV, NULL, (float *)buf, 0, count * nccl_size(type),
                    peer, c, s });
}

ncclResult_t ncclAllReduce(const void *send, void *recv, size_t count,
                           ncclDataType_t type, ncclRedOp_t op,
                           ncclComm_t c, cudaStream_t s)
{
    (void)op;
    if (type != ncclFloat)
        return ncclInvalidArgument;
    return add_op({ OP_ALLREDUCE, (const float *)send, (float *)recv,
                    count, 0, -1, c, s });
}

ncclResult_t ncclReduceScatter(const void *send, void *recv,
                               size_t recvcount, ncclDataType_t type,
                               ncclRedOp_t op, ncclComm_t c,
                               cudaStream_t s)
{
    (void)op;
    if (type != ncclFloat)
        return ncclInvalidArgument;
    return add_op({ OP_REDSCAT, (const float *)send, (float *)recv,
                    recvcount, 0, -1, c, s });
}

ncclResult_t ncclAllGather(const void *send, void *recv, size_t sendcount,
                           ncclDataType_t type, ncclComm_t c,
                           cudaStream_t s)
{
    if (type != ncclFloat)
        return ncclInvalidArgument;
    return add_op({ OP_ALLGATHER, (const float *)send, (float *)recv,
                    sendcount, 0, -1, c, s });
}
