/* cuda_measure.cu - the cuda backend's measures: the timeline's slots
 * and the comm ops' device times from events, and the device's memory
 * (the pool's high-water marks beside the simulator's prediction). */
#include <math.h>
#include <string.h>
#include "cuda_int.h"

/* ---- Timeline ----------------------------------------------------------- */

void cu_mark(struct exec *x, int slot)
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

int cu_marks(struct exec *x, int n, double *ms, struct zb_error *err)
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
    return cu_take_error(d, err);
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
void cu_comm_times(struct exec *x)
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

/* ---- Memory ------------------------------------------------------------- */

/* The device's memory in use: the context, every library's buffers and
 * what the pool reserved. */
double cu_mem_used(struct cuda_dev *d)
{
    size_t free_b = 0, total = 0;

    CHECK_CUDA(d, cudaMemGetInfo(&free_b, &total));
    return (double)(total - free_b);
}

/* The schedule's peak activations (in units of one F's: the simulator's
 * prediction) in their types, the model state as the engine counts it
 * (float) and the weight copies held at most this iteration. */
static double predicted(const struct exec *x, const struct cuda_dev *d)
{
    const double fs = x->sched.predicted.ranks[x->rank].peak_memory /
                      x->p->m_b;
    const double f = x->tf ? tf_mb_bytes(x->tf, cu_type_bytes(d->act))
                           : exec_mem_unit(x) * sizeof(float);

    return fs * f + fmax(x->state, x->state_peak) * sizeof(float) +
           d->copies_high;
}

void cu_memory(struct exec *x, struct dev_memory *out)
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
    out->used_now = cu_mem_used(d);
}
