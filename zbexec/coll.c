/* coll.c - the data-parallel collectives of a schedule with dp >= 2
 * (docs/zero.md): REDUCE_GRAD, UNSHARD and RESHARD on the communicator of
 * this pipeline rank's replicas, posted non-blocking through the backend
 * (coll_post) where the list puts them and completed only before their
 * consumer: the stage's next pass (UNSHARD) or STEP (REDUCE_GRAD). A
 * backend with coll_consume makes only its compute timeline wait for an
 * UNSHARD; the host then completes it later, at the latest at STEP.
 *
 * A stage's parameters split into dp contiguous shards, replica r owning
 * shard r. ZeRO-0 all-reduces the gradient and every replica steps all of
 * it; ZeRO-1/2 reduce-scatter it, step their shard and all-gather the
 * weights after the step; ZeRO-3 keeps only the weight shard between
 * steps, all-gathers the weights in place at UNSHARD, keeps its shard
 * again at RESHARD and reduce-scatters the gradient; ZeRO-2/3 free the
 * full gradient buffer once it is reduced. Sums are MPI_SUM over the
 * replicas.
 *
 * Reducing per microbatch (ZeRO >= 2), each W writes its microbatch's
 * gradient into a full buffer g of its own, the REDUCE_GRAD after it
 * reduce-scatters that into the shard, and the buffer is freed when the
 * reduce-scatter is seen done; the stage's next W waits for that, as
 * the simulator's W waits for the buffer.
 *
 * With FSDP units (data_parallel.units K > 1, docs/zero.md "Units") a
 * stage's parameters are K contiguous ranges; a unit's UNSHARD gathers
 * its range into the stage's full buffer (the first allocates it, as at
 * K = 1), its RESHARD releases it (the stage's last gathered unit frees
 * the buffer) and a per-microbatch REDUCE_GRAD reduce-scatters its range
 * of g into the matching part of the shard. These run blocking on the
 * host (cpu backend), so the replay checks the numbers and the memory of
 * a pass's units, not their overlap. */
#include <limits.h>
#include <stdlib.h>
#include "exec.h"
#include "zbsched/xalloc.h"

static bool zero3(const struct exec *x)
{
    return x->dp > 1 && x->p->dp.zero >= 3;
}

static bool sharded_grad(const struct exec *x)
{
    return x->dp > 1 && x->p->dp.zero >= 1;
}

bool coll_per_mb(const struct exec *x)
{
    return x->dp > 1 && zb_dp_per_mb(x->p);
}

static bool units(const struct exec *x)
{
    return x->dp > 1 && zb_dp_units(x->p);
}

/* Unit u of a stage: [*a, *b) of its parameters; into cnt and dsp (dp
 * entries) each replica's part of it and where that starts in it. */
static void unit_range(const struct exec *x, int u, size_t *a, size_t *b,
                       int *cnt, int *dsp)
{
    const size_t k = (size_t)x->p->dp.units;

    *a = x->nparam * (size_t)u / k;
    *b = x->nparam * (size_t)(u + 1) / k;
    for (int r = 0; r < x->dp; r++) {
        size_t lo = (size_t)x->shard_off[r], hi = lo + (size_t)x->shard_n[r];
        lo = lo > *a ? lo : *a;
        hi = hi < *b ? hi : *b;
        cnt[r] = hi > lo ? (int)(hi - lo) : 0;
        dsp[r] = hi > lo ? (int)(lo - *a) : 0;
    }
}

/* Units of stage st gathered before op i: the UNSHARDs minus the
 * RESHARDs of the list so far (an iteration starts sharded). */
static int gathered_units(const struct exec *x, int i, int stage)
{
    int n = 0;

    for (int j = 0; j < i; j++) {
        const struct zb_op *o = &x->ops->ops[j];
        if (o->stage == stage && o->kind == ZB_OP_UNSHARD)
            n++;
        else if (o->stage == stage && o->kind == ZB_OP_RESHARD)
            n--;
    }
    return n;
}

static int op_error(struct exec *x, int i, const char *why,
                    struct zb_error *err);
static void move_shard(struct exec *x, struct stage_state *st, bool in);

/* One unit's collective, blocking (see the top of the file). */
static int unit_coll(struct exec *x, int i, struct stage_state *st,
                     struct zb_error *err)
{
    const struct zb_op *op = &x->ops->ops[i];
    const int me = x->replica;
    int *cnt = zb_xmalloc(2 * (size_t)x->dp * sizeof(int)), *dsp = cnt + x->dp;
    size_t a, b;
    int rc = MPI_SUCCESS, held = gathered_units(x, i, op->stage);
    const char *what = "MPI_Allgatherv";

    if (op->unit < 0 || op->unit >= x->p->dp.units) {
        free(cnt);
        return op_error(x, i, "names no unit of its stage", err);
    }
    unit_range(x, op->unit, &a, &b, cnt, dsp);
    if (op->kind == ZB_OP_UNSHARD) {
        if (!st->w)
            move_shard(x, st, true);
        rc = MPI_Allgatherv(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, st->w + a,
                            cnt, dsp, MPI_FLOAT, x->dp_comm);
    } else if (op->kind == ZB_OP_RESHARD) {
        if (!st->w || held < 1)
            rc = op_error(x, i, "frees a unit that is not gathered", err);
        else if (held == 1)
            move_shard(x, st, false);
    } else {
        float *mine = st->gshard + (a + (size_t)dsp[me] -
                                    (size_t)x->shard_off[me]);
        if (!st->g || st->grad_mb != op->mb) {
            free(cnt);
            return op_error(x, i, "does not follow its microbatch's W", err);
        }
        /* As post_reduce_mb(): the shard so far joins this replica's slot
         * of the unit's gradient, which the sum then counts once. */
        if (st->nreduced > 0 && cnt[me] > 0)
            x->m->axpy(x->dev, st->g + a + dsp[me], 1.0f, mine,
                       (size_t)cnt[me]);
        what = "MPI_Reduce_scatter";
        rc = MPI_Reduce_scatter(st->g + a, mine, cnt, MPI_FLOAT, MPI_SUM,
                                x->dp_comm);
        /* A W reduces its units K-1 .. 0 (zero_measure.h): 0 ends it. */
        if (rc == MPI_SUCCESS && op->unit == 0) {
            st->grad_mb = -1;
            st->reduce_op = i;
            st->reduced = ++st->nreduced == x->p->microbatches;
        }
    }
    free(cnt);
    x->t[i].done = exec_now() - x->epoch;
    if (rc < 0)
        return rc;
    return rc == MPI_SUCCESS ? 0 : exec_mpi_error(rc, what, err);
}

int coll_init(struct exec *x, struct zb_error *err)
{
    const size_t per = x->nparam / (size_t)x->dp,
                 extra = x->nparam % (size_t)x->dp;

    /* MPI counts are int. */
    if (x->dp > 1 && x->nparam > INT_MAX)
        return zb_error_set(err, ZB_EUNSUPPORTED, "a stage of %zu "
                            "parameters is beyond an MPI collective's int "
                            "count", x->nparam);
    if (units(x) && x->be != &zb_executor_cpu)
        return zb_error_set(err, ZB_EUNSUPPORTED, "data_parallel.units > 1 "
                            "runs on the cpu backend only");
    x->shard_n = zb_xcalloc((size_t)x->dp, sizeof(int));
    x->shard_off = zb_xcalloc((size_t)x->dp, sizeof(int));
    for (int r = 0, off = 0; r < x->dp; r++) {
        x->shard_n[r] = (int)(per + ((size_t)r < extra));
        x->shard_off[r] = off;
        off += x->shard_n[r];
    }
    for (int c = 0; c < x->p->vpp; c++) {
        x->st[c].reduce_req = x->st[c].unshard_req = NULL;
        x->st[c].reduce_op = x->st[c].unshard_op = -1;
        x->st[c].grad_mb = -1;
    }
    if (x->opt.synthetic || !sharded_grad(x))
        return 0;
    for (int c = 0; c < x->p->vpp; c++) {
        struct stage_state *st = &x->st[c];
        const size_t n = (size_t)x->shard_n[x->replica],
                     off = (size_t)x->shard_off[x->replica];
        st->gshard = exec_state_alloc(x, n);
        if (coll_per_mb(x)) {   /* each W allocates its own buffer */
            exec_state_free(x, st->g, x->nparam);
            st->g = NULL;
        }
        if (!zero3(x))
            continue;
        /* ZeRO-3 starts the run sharded: the first UNSHARD gathers. */
        st->wshard = exec_state_alloc(x, n);
        x->m->copy(x->dev, st->wshard, st->w + off, n);
        exec_state_free(x, st->w, x->nparam);
        st->w = NULL;
    }
    return 0;
}

void coll_view(const struct exec *x, struct stage_state *st, float **w,
               float **g, size_t *n, size_t *off)
{
    *off = sharded_grad(x) ? (size_t)x->shard_off[x->replica] : 0;
    *n = sharded_grad(x) ? (size_t)x->shard_n[x->replica] : x->nparam;
    *g = sharded_grad(x) ? st->gshard : st->g;
    *w = zero3(x) ? st->wshard : st->w + *off;
}

const float *coll_grad_shard(const struct exec *x, struct stage_state *st,
                            size_t *n)
{
    *n = (size_t)x->shard_n[x->replica];
    return sharded_grad(x) ? st->gshard
                           : st->g + x->shard_off[x->replica];
}

static int op_error(struct exec *x, int i, const char *why,
                    struct zb_error *err)
{
    char desc[96];

    return zb_error_set(err, ZB_EILLEGAL, "op %d (%s) %s", i,
                        zb_op_describe(&x->ops->ops[i], desc, sizeof(desc)),
                        why);
}

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

/* Wait on the host for *req, posted by op `op`, under the watchdog; 0
 * when done (*req is then NULL). */
static int wait_req(struct exec *x, void **req, int op, struct zb_error *err)
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

/* The stage's UNSHARD is complete for the compute timeline: on the
 * device where the backend can (consumed once), else on the host. */
static int await_unshard(struct exec *x, struct stage_state *st,
                         struct zb_error *err)
{
    int rc;

    if (!x->be->coll_consume)
        return wait_req(x, &st->unshard_req, st->unshard_op, err);
    if (!st->unshard_req || st->unshard_consumed)
        return 0;
    x->t[st->unshard_op].wait = exec_now() - x->epoch;
    watchdog_op(st->unshard_op, WD_WAIT);
    if ((rc = x->be->coll_consume(x, st->unshard_req, err)) < 0)
        return rc;
    st->unshard_consumed = true;
    return 0;
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
        return op_error(x, i, "does not follow its microbatch's W", err);
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

/* A reduce-scatter is done: reducing per microbatch, its buffer goes. */
static void reduce_done(struct exec *x, struct stage_state *st)
{
    if (coll_per_mb(x) && st->grad_mb < 0) {
        exec_state_free(x, st->g, x->nparam);
        st->g = NULL;
    }
}

static int post_reduce(struct exec *x, int i, struct stage_state *st,
                       struct zb_error *err)
{
    int rc;

    if (st->reduced)
        return op_error(x, i, "reduces the stage a second time", err);
    if (coll_per_mb(x))
        return post_reduce_mb(x, i, st, err);
    if (st->next_w != x->p->microbatches)
        return op_error(x, i, "comes before the stage's last W", err);
    rc = x->be->coll_post(x, sharded_grad(x) ? COLL_REDUCE_SCATTER
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

    if (!zero3(x))
        return op_error(x, i, "needs ZeRO-3", err);
    if (st->w)
        return op_error(x, i, "gathers weights that are gathered", err);
    /* The previous step's, consumed on the device and not yet seen done. */
    if ((rc = wait_req(x, &st->unshard_req, st->unshard_op, err)) < 0)
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

    if (!zero3(x))
        return op_error(x, i, "needs ZeRO-3", err);
    if (!st->w)
        return op_error(x, i, "frees weights that are not gathered", err);
    /* A stage with no pass between its UNSHARD and RESHARD; the release
     * is on the compute timeline, after the gather there. */
    if ((rc = await_unshard(x, st, err)) < 0)
        return rc;
    move_shard(x, st, false);
    return 0;
}

int coll_post(struct exec *x, int i, struct zb_error *err)
{
    const struct zb_op *op = &x->ops->ops[i];
    struct stage_state *st = exec_stage(x, op->stage);
    int rc;

    x->t[i].start = exec_now() - x->epoch;
    if (x->dp < 2)
        return op_error(x, i, "needs data parallelism (dp >= 2)", err);
    if (x->opt.synthetic)
        rc = 0;     /* refused in main.c; kept safe */
    else if (units(x) && (op->kind != ZB_OP_REDUCE_GRAD || op->mb >= 0))
        rc = unit_coll(x, i, st, err);
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

int coll_before_pass(struct exec *x, int i, struct stage_state *st,
                     struct zb_error *err)
{
    const enum zb_op_kind k = x->ops->ops[i].kind;
    int rc;

    if (x->dp < 2 || x->opt.synthetic)
        return 0;
    if ((k == ZB_OP_W || k == ZB_OP_BW) && st->reduced)
        return op_error(x, i, "runs after its stage's REDUCE_GRAD", err);
    if ((k == ZB_OP_W || k == ZB_OP_BW) && coll_per_mb(x)) {
        if (st->grad_mb >= 0)
            return op_error(x, i, "comes before the REDUCE_GRAD of its "
                            "stage's previous W", err);
        if ((rc = wait_req(x, &st->reduce_req, st->reduce_op, err)) < 0)
            return rc;
        reduce_done(x, st);
    }
    if (!zero3(x))
        return 0;
    /* With units a W reads no weights; the other passes read them all. */
    if (units(x) && k == ZB_OP_W)
        return 0;
    if (units(x) && gathered_units(x, i, st->stage) != x->p->dp.units)
        return op_error(x, i, "runs on sharded units", err);
    if (!st->w)
        return op_error(x, i, "runs on sharded weights (no UNSHARD before "
                        "it)", err);
    rc = await_unshard(x, st, err);
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
        if (zero3(x) && st->w)
            return zb_error_set(err, ZB_EILLEGAL, "STEP: stage %d has no "
                                "RESHARD", st->stage);
        if ((rc = wait_req(x, &st->reduce_req, st->reduce_op, err)) < 0 ||
            (rc = wait_req(x, &st->unshard_req, st->unshard_op, err)) < 0)
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
    if (x->dp < 2 || x->opt.synthetic || x->p->dp.zero < 1 || zero3(x))
        return 0;
    watchdog_phase("STEP: the all-gather of the updated weights");
    for (int c = 0; c < x->p->vpp; c++) {
        float *w = x->st[c].w;
        void *req = NULL;
        int rc = x->be->coll_post(x, COLL_ALLGATHER, -1, w,
                                  w + x->shard_off[x->replica], &req, err);
        if (rc < 0 || (rc = wait_req(x, &req, -1, err)) < 0)
            return rc;
    }
    /* The model charges this gather to REDUCE_GRAD: it ends the step. */
    x->gather_done = exec_now() - x->epoch;
    return 0;
}
