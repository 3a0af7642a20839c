/* step.c - the optimizer step: SGD after a global check of the gradients
 * (non-finite values, norm clipping) gathered from every rank.
 *
 * With post-validation (Zero Bubble paper, section 4) the step is taken at
 * once, optimistically, while the check's all-gather is in flight; if the
 * check then fails, the saved weights are restored and the step redone
 * (clipped) or skipped (non-finite). Restoring a copy, not undoing the
 * update arithmetically, keeps the result equal to the synchronous step. */
#include <math.h>
#include <stdlib.h>
#include "exec.h"
#include "zbsched/xalloc.h"

void step_stats(const float *g, size_t n, double *sumsq, int *bad)
{
    double s = 0;

    *bad = 0;
    for (size_t i = 0; i < n; i++) {
        if (!isfinite(g[i]))
            *bad = 1;
        else
            s += (double)g[i] * g[i];
    }
    *sumsq = s;
}

void step_stage_stats(const struct exec *x, const float *g, double *sumsq,
                      int *bad)
{
    double total = 0;

    *bad = 0;
    for (int r = 0; r < x->dp; r++) {
        double s;
        int b;
        coll_shard_stats(x, g, r, &s, &b);
        total += s;
        *bad |= b;
    }
    *sumsq = total;
}

void step_decide(const struct exec *x, const double *sums, const int *bad,
                 struct step_info *out, float *factor)
{
    double total = 0, scale = 1;

    out->nonfinite = false;
    out->clipped = false;
    /* Stage order, on every rank and in the reference: the same sum. */
    for (int s = 0; s < x->nstages; s++) {
        total += sums[s];
        out->nonfinite |= bad[s] != 0;
    }
    out->norm = sqrt(total);
    if (!out->nonfinite && x->opt.clip > 0 && out->norm > x->opt.clip) {
        scale = x->opt.clip / out->norm;
        out->clipped = true;
    }
    *factor = (float)(-(x->opt.lr * scale));
}

void step_inject(const struct exec *x, const struct zb_math *m, void *dev,
                 int stage, int mb, int iter, float *dw)
{
    const float nan = NAN;

    if (iter == 0 && stage == x->opt.nan_stage && mb == x->opt.nan_mb)
        m->upload(dev, dw, &nan, 1);
}

/* Every pass of this rank's stages ran: with --no-validate a list may
 * lack one, and a missing W would silently leave its gradient out. */
static int check_complete(struct exec *x, struct zb_error *err)
{
    static const char *const names[] = { "F", "B", "W" };

    for (int c = 0; c < x->p->vpp; c++)
        for (int mb = 0; mb < x->p->microbatches; mb++) {
            const struct mb_state *b = &x->st[c].mbs[mb];
            bool done[3] = { b->f, b->b, b->w };
            for (int k = 0; k < 3; k++)
                if (!done[k])
                    return zb_error_set(err, ZB_EILLEGAL, "STEP: %s stage "
                                        "%d mb %d never ran", names[k],
                                        x->st[c].stage, mb);
        }
    return 0;
}

/* This rank's part of the check: {sumsq, bad, loss} per chunk, the
 * sums of its replica's shard of the reduced gradient (the whole of it
 * without data parallelism) and the loss of its replica. */
static void local_stats(struct exec *x, double *mine, float *host)
{
    const int mbs = x->p->microbatches;

    for (int c = 0; c < x->p->vpp; c++) {
        struct stage_state *st = &x->st[c];
        size_t n;
        const float *g = coll_grad_shard(x, st, &n);
        int bad;
        x->m->download(x->dev, host, g, n);
        step_stats(host, n, &mine[3 * c], &bad);
        mine[3 * c + 1] = bad;
        mine[3 * c + 2] = 0;
        if (!st->loss)
            continue;
        x->m->download(x->dev, host, st->loss, (size_t)mbs);
        for (int mb = 0; mb < mbs; mb++)
            mine[3 * c + 2] += host[mb];
    }
}

static int gather(struct exec *x, double *mine, double *all,
                  struct zb_error *err)
{
    const int n = 3 * x->p->vpp;
    MPI_Request req;
    int rc, flag = 0;

    watchdog_phase("STEP: the all-gather of the gradient check");
    /* Over the world: every replica's shards and losses. */
    rc = MPI_Iallgather(mine, n, MPI_DOUBLE, all, n, MPI_DOUBLE,
                        MPI_COMM_WORLD, &req);
    if (rc != MPI_SUCCESS)
        return exec_mpi_error(rc, "MPI_Iallgather", err);
    for (int spins = 0; !flag; spins++) {
        if ((rc = MPI_Test(&req, &flag, MPI_STATUS_IGNORE)) != MPI_SUCCESS)
            return exec_mpi_error(rc, "MPI_Test", err);
        if (!flag)
            exec_pause(spins);
    }
    return 0;
}

/* The step, the save and the rollback touch what this rank updates
 * (coll_view): everything, or its shard with ZeRO >= 1. */
static void apply(struct exec *x, float factor)
{
    for (int c = 0; c < x->p->vpp; c++) {
        float *w, *g;
        size_t n, off;
        coll_view(x, &x->st[c], &w, &g, &n, &off);
        x->m->axpy(x->dev, w, factor, g, n);
    }
}

static void save(struct exec *x, bool back)
{
    for (int c = 0; c < x->p->vpp; c++) {
        float *w, *g;
        size_t n, off;
        coll_view(x, &x->st[c], &w, &g, &n, &off);
        if (back)
            x->m->copy(x->dev, w, x->st[c].saved, n);
        else
            x->m->copy(x->dev, x->st[c].saved, w, n);
    }
}

int step_run(struct exec *x, struct zb_error *err)
{
    const struct zb_profile *p = x->p;
    struct step_info *info = &x->steps[x->iter];
    double *mine, *all, *sums;
    int *bad, rc;
    float *host, factor, optimistic = (float)(-x->opt.lr);

    if ((rc = check_complete(x, err)) < 0 || x->opt.synthetic)
        return rc;
    mine = zb_xcalloc((size_t)3 * p->vpp, sizeof(double));
    all = zb_xcalloc((size_t)3 * p->vpp * x->nranks, sizeof(double));
    sums = zb_xcalloc((size_t)x->nstages, sizeof(double));
    bad = zb_xcalloc((size_t)x->nstages, sizeof(int));
    host = zb_xmalloc((x->nparam > (size_t)p->microbatches
                        ? x->nparam : (size_t)p->microbatches) *
                   sizeof(float));
    local_stats(x, mine, host);
    if (x->post_validation) {
        save(x, false);
        apply(x, optimistic);
    }
    if ((rc = gather(x, mine, all, err)) < 0)
        goto out;
    /* Replica order, as step_stage_stats and the reference sum. */
    info->loss = 0;
    for (int s = 0; s < x->nstages; s++)
        for (int r = 0; r < x->dp; r++) {
            int k = 3 * ((r * p->pp + zb_profile_stage_rank(p, s)) * p->vpp +
                         zb_profile_stage_chunk(p, s));
            sums[s] += all[k];
            bad[s] |= (int)all[k + 1];
            if (s == x->nstages - 1)
                info->loss += all[k + 2];
        }
    step_decide(x, sums, bad, info, &factor);
    if (!x->post_validation) {
        if (!info->nonfinite)
            apply(x, factor);
    } else if (info->nonfinite || info->clipped) {
        save(x, true);
        info->rolled_back = true;
        if (!info->nonfinite)
            apply(x, factor);
    }
    rc = coll_gather_weights(x, err);
out:
    free(mine);
    free(all);
    free(sums);
    free(bad);
    free(host);
    return rc;
}
