/* coll.c - the data-parallel collectives of a schedule with dp >= 2
 * (docs/zero.md): REDUCE_GRAD, UNSHARD and RESHARD on the communicator of
 * this pipeline rank's replicas, posted non-blocking through the backend
 * (coll_post) where the list puts them and completed only before their
 * consumer: the stage's next pass (UNSHARD) or STEP (REDUCE_GRAD). A
 * backend with coll_consume makes only its compute timeline wait for an
 * UNSHARD; the host then completes it later, at the latest at STEP.
 *
 * A stage's parameters split into dp contiguous shards, replica r owning
 * shard r (ZeRO-3 on units: per unit, coll_units.c). ZeRO-0 all-reduces
 * the gradient and every replica steps all of it; ZeRO-1/2 reduce-scatter
 * it, step their shard and all-gather the weights after the step; ZeRO-3
 * keeps only the weight shard between steps, all-gathers the weights in
 * place at UNSHARD, keeps its shard again at RESHARD and reduce-scatters
 * the gradient; ZeRO-2/3 free the full gradient buffer once it is
 * reduced. Sums are MPI_SUM over the replicas.
 *
 * Reducing per microbatch (ZeRO >= 2), each W writes its microbatch's
 * gradient into a full buffer g of its own, the REDUCE_GRAD after it
 * reduce-scatters that into the shard, and the buffer is freed when the
 * reduce-scatter is seen done; the stage's next W waits for that, as
 * the simulator's W waits for the buffer.
 *
 * This file posts the list's ops on a whole stage; the rest of the module
 * (coll_int.h) is coll_shard.c (the shards' layout and buffers),
 * coll_units.c (FSDP units) and coll_progress.c (completion). */
#include "coll_int.h"

int coll_op_error(struct exec *x, int i, const char *why,
                  struct zb_error *err)
{
    char desc[96];

    return zb_error_set(err, ZB_EILLEGAL, "op %d (%s) %s", i,
                        zb_op_describe(&x->ops->ops[i], desc, sizeof(desc)),
                        why);
}

/* Reduce microbatch: the reduce-scatter of the microbatch's gradient
 * that g holds, summed into the shard. This replica first adds the shard
 * so far into its own slot of g, so the sum over the replicas that lands
 * in the shard counts it once: no receive buffer beyond the model's. */
static int post_reduce_mb(struct exec *x, int i, struct stage_state *st,
                          struct zb_error *err)
{
    const size_t n = (size_t)x->shard_n[x->replica],
                 off = (size_t)x->shard_off[x->replica];
    int rc;

    if (!st->g || st->grad_mb != x->ops->ops[i].mb)
        return coll_op_error(x, i, "does not follow its microbatch's W", err);
    if (st->nreduced > 0)
        x->m->axpy(x->dev, st->g + off, 1.0f, st->gshard, n);
    rc = x->be->coll_post(x, COLL_REDUCE_SCATTER, i, st->g, st->gshard,
                          &st->reduce_req, err);
    if (rc < 0)
        return rc;
    st->grad_mb = -1;
    st->reduce_op = i;
    st->reduced = ++st->nreduced == x->p->microbatches;
    return 0;
}

static int post_reduce(struct exec *x, int i, struct stage_state *st,
                       struct zb_error *err)
{
    int rc;

    if (st->reduced)
        return coll_op_error(x, i, "reduces the stage a second time", err);
    if (coll_per_mb(x))
        return post_reduce_mb(x, i, st, err);
    if (st->next_w != x->p->microbatches)
        return coll_op_error(x, i, "comes before the stage's last W", err);
    if (coll_unit_shards(x))
        return coll_reduce_step_units(x, i, st, err);
    rc = x->be->coll_post(x, coll_sharded_grad(x) ? COLL_REDUCE_SCATTER
                                                  : COLL_ALLREDUCE,
                          i, st->g, st->gshard, &st->reduce_req, err);
    if (rc < 0)
        return rc;
    st->reduced = true;
    st->reduce_op = i;
    return 0;
}

/* ZeRO-3's weights live in one buffer at a time, as the model counts
 * them (zb_dp_gathered): the shard moves into its slot of the full
 * buffer at UNSHARD, which gathers in place, and back at RESHARD. The
 * copies are queued on the compute timeline, before the collective and
 * after the passes that read the weights. */
static void move_shard(struct exec *x, struct stage_state *st, bool in)
{
    const size_t n = (size_t)x->shard_n[x->replica],
                 off = (size_t)x->shard_off[x->replica];

    if (in) {
        st->w = exec_state_alloc(x, x->nparam);
        x->m->copy(x->dev, st->w + off, st->wshard, n);
        exec_state_free(x, st->wshard, n);
        st->wshard = NULL;
    } else {
        st->wshard = exec_state_alloc(x, n);
        x->m->copy(x->dev, st->wshard, st->w + off, n);
        exec_state_free(x, st->w, x->nparam);
        st->w = NULL;
    }
}

static int post_unshard(struct exec *x, int i, struct stage_state *st,
                        struct zb_error *err)
{
    int rc;

    if (!coll_zero3(x))
        return coll_op_error(x, i, "needs ZeRO-3", err);
    if (st->w)
        return coll_op_error(x, i, "gathers weights that are gathered", err);
    /* The previous step's, consumed on the device and not yet seen done. */
    if ((rc = coll_wait_req(x, &st->unshard_req, st->unshard_op, err)) < 0)
        return rc;
    move_shard(x, st, true);
    rc = x->be->coll_post(x, COLL_ALLGATHER, i, st->w,
                          st->w + x->shard_off[x->replica],
                          &st->unshard_req, err);
    if (rc < 0)
        return rc;
    st->unshard_op = i;
    st->unshard_consumed = false;
    return 0;
}

static int reshard(struct exec *x, int i, struct stage_state *st,
                   struct zb_error *err)
{
    int rc;

    if (!coll_zero3(x))
        return coll_op_error(x, i, "needs ZeRO-3", err);
    if (!st->w)
        return coll_op_error(x, i, "frees weights that are not gathered", err);
    /* A stage with no pass between its UNSHARD and RESHARD; the release
     * is on the compute timeline, after the gather there. */
    if ((rc = coll_await_unshard(x, st, err)) < 0)
        return rc;
    move_shard(x, st, false);
    return 0;
}

int coll_post(struct exec *x, int i, struct zb_error *err)
{
    const struct zb_op *op = &x->ops->ops[i];
    struct stage_state *st = exec_stage(x, op->stage);
    int rc;

    if (x->coll_early && x->coll_early[i]) {
        coll_unit_early(x, i, st);
        exec_mem_sample(x);
        return 0;
    }
    x->t[i].start = exec_now() - x->epoch;
    if (x->dp < 2)
        return coll_op_error(x, i, "needs data parallelism (dp >= 2)", err);
    if (x->opt.synthetic)
        rc = 0;     /* refused in main.c; kept safe */
    else if (coll_units(x) && (op->kind != ZB_OP_REDUCE_GRAD || op->mb >= 0))
        rc = coll_post_unit(x, i, st, err);
    else if (op->kind == ZB_OP_REDUCE_GRAD)
        rc = post_reduce(x, i, st, err);
    else if (op->kind == ZB_OP_UNSHARD)
        rc = post_unshard(x, i, st, err);
    else
        rc = reshard(x, i, st, err);
    x->t[i].end = exec_now() - x->epoch;
    if (op->kind == ZB_OP_RESHARD)
        x->t[i].done = x->t[i].end;
    exec_mem_sample(x);
    return rc;
}
