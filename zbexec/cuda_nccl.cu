/* cuda_nccl.cu - messages over NCCL: one two-rank communicator and one
 * stream per link, a run of comm ops one group across the links, its
 * completion an event on each link's stream; and NCCL's errors turned
 * into messages that say which call or link failed. */
#include <stdio.h>
#include "cuda_int.h"

/* Wait while a non-blocking communicator works (init, a group's enqueue,
 * finalize); under the watchdog like any other wait. */
ncclResult_t cu_settle(ncclComm_t c)
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

/* ---- NCCL errors ------------------------------------------------------ */

/* A clear message: the call, NCCL's error and its own last words (a
 * peer that died shows as ncclRemoteError with the peer's address). */
int cu_nccl_status(struct cuda_dev *d, ncclComm_t c, const char *what,
                   ncclResult_t r, struct zb_error *err)
{
    char msg[384];

    if (r == ncclSuccess)
        return 0;
    snprintf(msg, sizeof(msg), "%s: %s%s%s", what, ncclGetErrorString(r),
             c ? ": " : "", c ? ncclGetLastError(c) : "");
    cu_sticky(d, __FILE__, __LINE__, msg);
    return cu_take_error(d, err);
}

/* The communicator's async error, if any: then abort it (its kernels
 * would wait forever) and record a message saying what it carried. */
void cu_comm_check(struct cuda_dev *d, ncclComm_t c, bool *have,
                   const char *what)
{
    ncclResult_t state = ncclSuccess;

    if (!*have)
        return;
    if (ncclCommGetAsyncError(c, &state) != ncclSuccess)
        state = ncclInternalError;
    if (state == ncclSuccess || state == ncclInProgress)
        return;
    cu_nccl_status(d, c, what, state, NULL);
    ncclCommAbort(c);
    *have = false;
}

static void link_check(struct cuda_dev *d, struct link *l)
{
    char what[96];

    snprintf(what, sizeof(what), "NCCL %s link %d -> %d",
             l->dir == MSG_F ? "activation" : "gradient", l->src, l->dst);
    cu_comm_check(d, l->nccl, &l->have_nccl, what);
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

static ncclDataType_t msg_nccl(const struct cuda_dev *d)
{
    return d->act == CU_BF16 ? ncclBfloat16 : ncclFloat;
}

/* Queue m on its link; flush() issues the link's queue as one group. */
int cu_nccl_post(struct exec *x, struct cuda_dev *d, struct xmsg *m,
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
        m->buf = (float *)cu_dev_alloc(d, m->n, MSG_HDR_FLOATS, d->act,
                                       l->stream);
    zb_xgrow((void **)&l->queue, &l->capqueue, l->nqueue + 1,
             sizeof(*l->queue));
    l->queue[l->nqueue++] = m;
    return cu_take_error(d, err);
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
int cu_nccl_flush(struct exec *x, struct cuda_dev *d,
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
        return cu_take_error(d, err);
    CHECK_NCCL(d, ncclGroupStart());
    for (int k = 0; k < d->nlinks; k++) {
        struct link *l = &d->links[k];
        for (int i = 0; i < l->nqueue; i++) {
            struct xmsg *m = l->queue[i];
            if (m->op >= 0)     /* before the kernel GroupEnd launches */
                CHECK_CUDA(d, cudaEventRecord(d->cev[3 * m->op], l->stream));
            if (l->src == x->rank)
                CHECK_NCCL(d, ncclSend(m->buf, cu_msg_count(d, m->n),
                                       msg_nccl(d), 1, l->nccl, l->stream));
            else
                CHECK_NCCL(d, ncclRecv(m->buf, cu_msg_count(d, m->n),
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
            lr = cu_settle(l->nccl);
        if (lr != ncclSuccess)
            cu_nccl_status(d, l->nccl, "ncclGroupEnd", lr, NULL);
    }
    for (int k = 0; k < d->nlinks; k++) {
        struct link *l = &d->links[k];
        for (int i = 0; i < l->nqueue; i++) {
            struct xmsg *m = l->queue[i];
            struct cuda_req *q = (struct cuda_req *)m->priv;
            if (l->src != x->rank)
                CHECK_CUDA(d, cudaMemcpyAsync(&d->headers[cu_header_slot(d, m)],
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
    return cu_take_error(d, err);
}

int cu_nccl_test(struct cuda_dev *d, struct xmsg *m, bool *done,
                 struct zb_error *err)
{
    struct cuda_req *q = (struct cuda_req *)m->priv;
    cudaError_t e;

    if (!q->issued)     /* still queued: flush() comes first */
        return cu_take_error(d, err);
    e = cudaEventQuery(q->done);
    if (e == cudaErrorNotReady) {
        link_check(d, q->link);         /* a failed peer shows here */
        return cu_take_error(d, err);
    }
    CHECK_CUDA(d, e);
    if (!m->send)       /* copied before the event: no sync needed */
        m->got = d->headers[cu_header_slot(d, m)];
    *done = true;
    return cu_take_error(d, err);
}
