/* engine.c - the replay loop: one iteration of this rank's op list, op by
 * op, through the backend.
 *
 * Receives and sends are posted where the list puts them (lowering puts
 * each receive at the global time of its send), a compute op waits only
 * for the receive it consumes, and STEP completes every send before the
 * optimizer runs. Data-parallel collectives (coll.c) are posted likewise
 * and completed before their consumer. */
#include <stdlib.h>
#include <string.h>
#include "exec.h"
#include "zbsched/xalloc.h"

static void reset(struct exec *x)
{
    const int mbs = x->p->microbatches;
    float *host = NULL;

    for (long k = 0; k < 2L * x->nstages * mbs; k++)
        x->xf[k] = (struct xfer){ XF_EMPTY, NULL, NULL };
    memset(x->t, 0, (size_t)x->ops->n * sizeof(*x->t));
    x->mem_peak = x->mem;
    x->live_peak = x->live;
    x->state_peak = x->total_peak = x->gather_done = 0;
    exec_mem_sample(x);
    for (int c = 0; c < x->p->vpp; c++) {
        struct stage_state *st = &x->st[c];
        st->next_w = 0;
        for (int mb = 0; mb < mbs; mb++)
            st->mbs[mb].f = st->mbs[mb].b = st->mbs[mb].w = false;
        /* This iteration's inputs (stage 0) and targets (last stage). */
        for (int k = 0; k < 2; k++) {
            float *dst = k ? st->target : st->input;
            if (!dst)
                continue;
            if (!host)
                host = zb_xmalloc((size_t)mbs * x->nact * sizeof(float));
            for (int mb = 0; mb < mbs; mb++)
                mlp_data(&x->net, x->opt.seed, k == 1, x->iter,
                         exec_global_mb(x, mb), host + (size_t)mb * x->nact);
            x->m->upload(x->dev, dst, host, (size_t)mbs * x->nact);
        }
    }
    free(host);
}

/* Compute ops' times from the timeline slots (3 per op: start, mid, end). */
static void resolve_times(struct exec *x)
{
    for (int i = 0; i < x->ops->n; i++) {
        struct op_time *t = &x->t[i];
        if (!zb_op_is_compute(x->ops->ops[i].kind))
            continue;
        t->start = x->marks[3 * i + 1];
        t->end = x->marks[3 * i + 3];
        t->mid = x->ops->ops[i].kind == ZB_OP_BW ? x->marks[3 * i + 2]
                                                 : t->end;
    }
}

static int run_op(struct exec *x, int i, struct zb_error *err)
{
    const struct zb_op *op = &x->ops->ops[i];
    int rc;

    watchdog_op(i, WD_RUN);
    if ((rc = xfer_progress(x, err)) < 0 ||
        (rc = coll_progress(x, err)) < 0)
        return rc;
    if (zb_op_is_comm(op->kind))
        return xfer_post(x, i, err);
    if (zb_op_is_collective(op->kind))
        return coll_post(x, i, err);
    if ((rc = x->be->flush(x, err)) < 0)
        return rc;
    if (op->kind == ZB_OP_STEP) {
        if ((rc = xfer_drain(x, err)) < 0 || (rc = coll_drain(x, err)) < 0)
            return rc;
        return step_run(x, err);
    }
    return pass_run(x, i, err);
}

int exec_iteration(struct exec *x, struct zb_error *err)
{
    int rc;

    reset(x);
    watchdog_phase("the barrier that starts the iteration");
    if ((rc = MPI_Barrier(MPI_COMM_WORLD)) != MPI_SUCCESS)
        return exec_mpi_error(rc, "MPI_Barrier", err);
    if (x->opt.synthetic)
        x->marks[0] = exec_now() - x->epoch;
    else
        x->be->mark(x, 0);
    for (int i = 0; i < x->ops->n; i++)
        if ((rc = run_op(x, i, err)) < 0) {
            zb_error_prefix(err, "iteration %d", x->iter + 1);
            return rc;
        }
    watchdog_phase("collecting the timeline");
    if (!x->opt.synthetic &&
        (rc = x->be->marks(x, 3 * x->ops->n + 1, x->marks, err)) < 0)
        return rc;
    resolve_times(x);
    if (!x->opt.synthetic && x->be->comm_times)
        x->be->comm_times(x);
    return 0;
}
