/* coll_progress.c - the collectives in flight, once coll.c posted them:
 * MPI's non-blocking calls behind the backends' coll_post, the host's
 * wait under the watchdog, the checks before a pass that consumes one,
 * the progress engine that sees them done, and at STEP the drain and the
 * all-gather of the updated weights. */
#include "coll_int.h"

int coll_mpi_post(const struct exec *x, enum coll_kind k, float *buf,
                  float *shard, MPI_Request *req, struct zb_error *err)
{
    const int me = x->replica;
    int rc;

    if (k == COLL_ALLREDUCE)
        rc = MPI_Iallreduce(MPI_IN_PLACE, buf, (int)x->nparam, MPI_FLOAT,
                            MPI_SUM, x->dp_comm, req);
    else if (k == COLL_REDUCE_SCATTER)
        rc = MPI_Ireduce_scatter(buf, shard, x->shard_n, MPI_FLOAT, MPI_SUM,
                                 x->dp_comm, req);
    else if (shard == buf + x->shard_off[me])
        rc = MPI_Iallgatherv(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, buf,
                             x->shard_n, x->shard_off, MPI_FLOAT, x->dp_comm,
                             req);
    else
        rc = MPI_Iallgatherv(shard, x->shard_n[me], MPI_FLOAT, buf,
                             x->shard_n, x->shard_off, MPI_FLOAT, x->dp_comm,
                             req);
    if (rc == MPI_SUCCESS)
        return 0;
    return exec_mpi_error(rc, k == COLL_ALLREDUCE ? "MPI_Iallreduce"
                              : k == COLL_REDUCE_SCATTER
                                  ? "MPI_Ireduce_scatter"
                                  : "MPI_Iallgatherv", err);
}

int coll_wait_req(struct exec *x, void **req, int op, struct zb_error *err)
{
    bool done = false;
    int rc;

    if (!*req)
        return 0;
    if (op >= 0 && x->t[op].wait == 0)
        x->t[op].wait = exec_now() - x->epoch;
    if (op >= 0)
        watchdog_op(op, WD_WAIT);
    for (int spins = 0; !done; spins++) {
        if ((rc = x->be->coll_test(x, *req, &done, err)) < 0)
            return rc;
        if (!done)
            exec_pause(spins);
    }
    *req = NULL;
    if (op >= 0)
        x->t[op].done = exec_now() - x->epoch;
    return 0;
}

int coll_await_unshard(struct exec *x, struct stage_state *st,
                       struct zb_error *err)
{
    int rc;

    if (!x->be->coll_consume)
        return coll_wait_req(x, &st->unshard_req, st->unshard_op, err);
    if (!st->unshard_req || st->unshard_consumed)
        return 0;
    x->t[st->unshard_op].wait = exec_now() - x->epoch;
    watchdog_op(st->unshard_op, WD_WAIT);
    if ((rc = x->be->coll_consume(x, st->unshard_req, err)) < 0)
        return rc;
    st->unshard_consumed = true;
    return 0;
}

/* A reduce-scatter is done: reducing per microbatch, its buffer goes. */
static void reduce_done(struct exec *x, struct stage_state *st)
{
    if (coll_per_mb(x) && st->grad_mb < 0) {
        exec_state_free(x, st->g, x->nparam);
        st->g = NULL;
    }
}
int coll_before_pass(struct exec *x, int i, struct stage_state *st,
                     struct zb_error *err)
{
    const enum zb_op_kind k = x->ops->ops[i].kind;
    int rc;

    if (x->dp < 2 || x->opt.synthetic)
        return 0;
    if ((k == ZB_OP_W || k == ZB_OP_BW) && st->reduced)
        return coll_op_error(x, i, "runs after its stage's REDUCE_GRAD", err);
    /* On units the segments check what the pass needs (coll_seg_begin). */
    if (coll_units(x))
        return 0;
    if ((k == ZB_OP_W || k == ZB_OP_BW) && coll_per_mb(x)) {
        if (st->grad_mb >= 0)
            return coll_op_error(x, i, "comes before the REDUCE_GRAD of its "
                                 "stage's previous W", err);
        if ((rc = coll_wait_req(x, &st->reduce_req, st->reduce_op, err)) < 0)
            return rc;
        reduce_done(x, st);
    }
    if (!coll_zero3(x))
        return 0;
    if (!st->w)
        return coll_op_error(x, i, "runs on sharded weights (no UNSHARD before "
                             "it)", err);
    rc = coll_await_unshard(x, st, err);
    watchdog_op(i, WD_RUN);
    return rc;
}

int coll_progress(struct exec *x, struct zb_error *err)
{
    for (int c = 0; c < x->p->vpp && x->dp > 1; c++) {
        void **reqs[2] = { &x->st[c].reduce_req, &x->st[c].unshard_req };
        const int ops[2] = { x->st[c].reduce_op, x->st[c].unshard_op };
        for (int k = 0; k < 2; k++) {
            bool done = false;
            int rc;
            if (!*reqs[k])
                continue;
            if ((rc = x->be->coll_test(x, *reqs[k], &done, err)) < 0)
                return rc;
            if (!done)
                continue;
            *reqs[k] = NULL;
            x->t[ops[k]].done = exec_now() - x->epoch;
            if (k == 0)
                reduce_done(x, &x->st[c]);
        }
    }
    return 0;
}

int coll_drain(struct exec *x, struct zb_error *err)
{
    int rc;

    if (x->dp < 2 || x->opt.synthetic)
        return 0;
    for (int c = 0; c < x->p->vpp; c++) {
        struct stage_state *st = &x->st[c];
        if (!st->reduced && coll_per_mb(x))
            return zb_error_set(err, ZB_EILLEGAL, "STEP: stage %d has %d "
                                "REDUCE_GRADs, expected one per microbatch "
                                "(%d)", st->stage, st->nreduced,
                                x->p->microbatches);
        if (!st->reduced)
            return zb_error_set(err, ZB_EILLEGAL, "STEP: stage %d has no "
                                "REDUCE_GRAD", st->stage);
        bool gathered = coll_zero3(x) && st->w;
        for (int u = 0; coll_units(x) && u < x->p->dp.units; u++) {
            if (st->ug[u])
                return zb_error_set(err, ZB_EILLEGAL, "STEP: stage %d unit "
                                    "%d has a gradient never reduced",
                                    st->stage, u);
            gathered |= coll_zero3(x) && st->ustate[u] != U_SHARD;
        }
        if (gathered)
            return zb_error_set(err, ZB_EILLEGAL, "STEP: stage %d has no "
                                "RESHARD", st->stage);
        /* The optimizer updates the shard as one buffer (step.c). */
        if (coll_unit_shards(x) && !st->wshard)
            coll_split_shard(x, st, true);
        if ((rc = coll_wait_req(x, &st->reduce_req, st->reduce_op, err)) < 0 ||
            (rc = coll_wait_req(x, &st->unshard_req, st->unshard_op, err)) < 0)
            return rc;
        reduce_done(x, st);
        st->reduced = false;    /* for the next iteration */
        st->nreduced = 0;
        /* ZeRO-2/3 keep only the shard: the full buffer comes back with
         * the stage's first W of the next step (pass.c). */
        if (x->p->dp.zero >= 2) {
            exec_state_free(x, st->g, x->nparam);
            st->g = NULL;
        }
    }
    return 0;
}

int coll_gather_weights(struct exec *x, struct zb_error *err)
{
    if (x->dp < 2 || x->opt.synthetic || x->p->dp.zero < 1 || coll_zero3(x))
        return 0;
    watchdog_phase("STEP: the all-gather of the updated weights");
    for (int c = 0; c < x->p->vpp; c++) {
        float *w = x->st[c].w;
        void *req = NULL;
        int rc = x->be->coll_post(x, COLL_ALLGATHER, -1, w,
                                  w + x->shard_off[x->replica], &req, err);
        if (rc < 0 || (rc = coll_wait_req(x, &req, -1, err)) < 0)
            return rc;
    }
    /* The model charges this gather to REDUCE_GRAD: it ends the step. */
    x->gather_done = exec_now() - x->epoch;
    return 0;
}
