/* measure.c - realized measures: each rank's busy time, first start, last
 * end and peak memory per iteration (with data parallelism also the
 * step's ends with its collectives and the model state), gathered on rank
 * 0 and set beside the simulator's predictions with the difference
 * (docs/design.md, "Measures"; docs/zbexec.md).
 *
 * Times are host-clock ms since the run's epoch, one instant on every
 * rank's clock (exec_common_epoch), so makespan across ranks carries its
 * estimation error (microseconds); busy, span and cost are per rank and
 * free of it. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "exec.h"
#include "zbsched/xalloc.h"
#include "zbsched/zero.h"

static void record_duration(struct exec *x, int i)
{
    const struct zb_op *op = &x->ops->ops[i];
    const struct op_time *t = &x->t[i];
    const int per = x->opt.iters * x->p->microbatches;
    const int c = zb_profile_stage_chunk(x->p, op->stage);
    double *d = x->durations + (size_t)c * 3 * per;
    const int k = x->iter * x->p->microbatches + op->mb;

    switch (op->kind) {
    case ZB_OP_F:
        d[k] = t->end - t->start;
        break;
    case ZB_OP_B:
        d[per + k] = t->end - t->start;
        break;
    case ZB_OP_W:
        d[2 * per + k] = t->end - t->start;
        break;
    default:    /* BW: its halves */
        d[per + k] = t->mid - t->start;
        d[2 * per + k] = t->end - t->mid;
        break;
    }
}

/* The step as zero.h's step_time takes it, on this rank: from the first
 * pass or collective post to the last pass's end or collective's
 * completion. A completion is when the host saw it (coll_progress.c:
 * the test or wait that returned done), at most one polling interval
 * after it happened; the ZeRO-1/2 weights' all-gather after STEP counts
 * as REDUCE_GRAD's end, as the model charges it there. */
static void step_bounds(const struct exec *x, struct rank_sample *r)
{
    r->step_first = r->first;
    r->step_last = fmax(r->last, x->gather_done);
    for (int i = 0; i < x->ops->n; i++) {
        const struct op_time *t = &x->t[i];
        if (!zb_op_is_collective(x->ops->ops[i].kind))
            continue;
        r->step_first = fmin(r->step_first, t->start);
        r->step_last = fmax(r->step_last, t->done);
    }
}

void measure_iteration(struct exec *x)
{
    struct rank_sample *r = &x->samples[x->iter];

    *r = (struct rank_sample){ .first = INFINITY, .last = -INFINITY };
    for (int i = 0; i < x->ops->n; i++) {
        const struct op_time *t = &x->t[i];
        if (!zb_op_is_compute(x->ops->ops[i].kind))
            continue;
        r->busy += t->end - t->start;
        r->first = fmin(r->first, t->start);
        r->last = fmax(r->last, t->end);
        record_duration(x, i);
    }
    if (r->last < r->first)
        r->first = r->last = 0;
    if (x->opt.synthetic) {
        r->peak = x->mem_peak;
        return;
    }
    r->peak = x->mem_peak / exec_mem_unit(x) * x->p->m_b;
    r->peak_buffers = x->live_peak / exec_mem_unit(x) * x->p->m_b;
    if (x->be->memory) {
        struct dev_memory dm = { 0, 0, 0, 0, 0 };
        x->be->memory(x, &dm);
        r->dev_predicted = dm.predicted;    /* the backend knows the types */
        r->dev_used_high = dm.used_high;
        r->dev_reserved_high = dm.reserved_high;
        r->dev_used_start = dm.used_start;
        r->dev_used_now = dm.used_now;
    }
    if (x->dp < 2)
        return;
    step_bounds(x, r);
    r->model_state = x->state_peak * sizeof(float) / x->p->dp.unit_bytes;
    r->total_memory = x->total_peak;
}

/* The device memory of every rank: the worst measured iteration's
 * high-water marks, the last one's use, in one allocation. */
static void device_summary(const struct exec *x,
                           const struct rank_sample *all,
                           struct realized *out)
{
    const int P = x->p->pp, iters = x->opt.iters;
    double *a = zb_xcalloc((size_t)P * 5, sizeof(double));

    out->dev_predicted = a;
    out->dev_used_high = a + P;
    out->dev_reserved_high = a + 2 * P;
    out->dev_used_start = a + 3 * P;
    out->dev_used_end = a + 4 * P;
    for (int k = 0; k < P; k++)
        for (int it = iters > 1 ? 1 : 0; it < iters; it++) {
            const struct rank_sample *s = &all[k * iters + it];
            a[k] = s->dev_predicted;
            a[P + k] = fmax(a[P + k], s->dev_used_high);
            a[2 * P + k] = fmax(a[2 * P + k], s->dev_reserved_high);
            a[3 * P + k] = s->dev_used_start;
            a[4 * P + k] = s->dev_used_now;
        }
}

/* samples: [rank][iter] gathered on rank 0; each iteration's measures
 * come from the library's one definition (measures.h), in host ms, then
 * turn into profile units. */
static void summarise(const struct exec *x, const struct rank_sample *all,
                      struct realized *out)
{
    const int P = x->p->pp, iters = x->opt.iters;
    const double u = x->opt.time_unit;
    struct zb_measures ms = { 0 };

    ms.ranks = zb_xcalloc((size_t)P, sizeof(*ms.ranks));
    out->first = iters > 1 ? 1 : 0;
    out->last = iters - 1;
    for (int it = out->first; it <= out->last; it++) {
        double step_first = INFINITY, step_last = -INFINITY;
        for (int r = 0; r < P; r++) {
            const struct rank_sample *s = &all[r * iters + it];
            ms.ranks[r] = (struct zb_rank_measures){
                .busy = s->busy, .first_start = s->first,
                .last_end = s->last, .peak_memory = s->peak };
        }
        zb_measures_summarise(&ms, P);
        for (int r = 0; r < P; r++) {
            out->busy[r] += ms.ranks[r].busy / u;
            out->span[r] += ms.ranks[r].span / u;
            out->peak_memory[r] = fmax(out->peak_memory[r],
                                       ms.ranks[r].peak_memory);
            out->peak_buffers[r] = fmax(out->peak_buffers[r],
                                        all[r * iters + it].peak_buffers);
            out->model_state[r] = fmax(out->model_state[r],
                                       all[r * iters + it].model_state);
            out->total_memory[r] = fmax(out->total_memory[r],
                                        all[r * iters + it].total_memory);
            step_first = fmin(step_first, all[r * iters + it].step_first);
            step_last = fmax(step_last, all[r * iters + it].step_last);
        }
        /* Across ranks, like makespan: on the common epoch's clock. */
        if (x->dp > 1)
            out->step_time += (step_last - step_first) / u;
        out->cost += ms.cost / u;
        out->makespan += ms.makespan / u;
        out->bubble_ratio += ms.bubble_ratio;
        out->sync_bubble_ratio += ms.sync_bubble_ratio;
    }
    free(ms.ranks);
    const int n = out->last - out->first + 1;
    out->cost /= n;
    out->makespan /= n;
    out->bubble_ratio /= n;
    out->sync_bubble_ratio /= n;
    out->step_time /= n;
    for (int r = 0; r < P; r++) {
        out->busy[r] /= n;
        out->span[r] /= n;
    }
}

static void row(const char *name, double pred, double real)
{
    printf("%-18s %12.6g %12.6g %+12.4g\n", name, pred, real, real - pred);
}

static void print_header(const struct exec *x, const char *check)
{
    const struct zb_profile *p = x->p;

    printf("schedule %s: pp %d, vpp %d, %d microbatches, placement %s",
           x->sched.name, p->pp, p->vpp, p->microbatches,
           zb_placement_name(p->placement));
    /* The measures are replica 0's; the replicas run the same list. */
    if (x->dp > 1)
        printf(", dp %d, zero %d%s (measures of replica 0)", x->dp,
               p->dp.zero, zb_dp_per_mb(p) ? ", reduce microbatch" : "");
    printf("\n");
    if (x->opt.synthetic) {
        printf("run: backend %s, synthetic, %d iterations\n", x->be->name,
               x->opt.iters);
        return;
    }
    char model[160];
    exec_model_name(x, model, sizeof(model));
    printf("run: backend %s, model %s, %d iterations, seed %llu%s\n",
           x->be->name, model, x->opt.iters,
           (unsigned long long)x->opt.seed,
           x->post_validation ? ", post-validation" : "");
    printf("loss:");
    for (int it = 0; it < x->opt.iters; it++)
        printf(" %.9g", x->steps[it].loss);
    printf("\n");
    for (int it = 0; it < x->opt.iters; it++) {
        const struct step_info *s = &x->steps[it];
        if (s->nonfinite || s->clipped)
            printf("step %d: %s%s\n", it + 1,
                   s->nonfinite ? "skipped, non-finite gradient"
                                : "clipped",
                   s->rolled_back ? " (rolled back)" : "");
    }
    if (check)
        printf("check: %s\n", !strcmp(check, "exact")
               ? "exact match with the sequential run (loss, gradients, "
                 "weights)"
               : check);
}

/* Data parallelism: the model state ZeRO shards and the total with the
 * activations, per rank (the predicted model state is total_memory's
 * walk without the activations, zero.h). */
static void print_memory(const struct exec *x, const struct realized *r)
{
    const struct zb_measures *m = &x->sched.predicted;

    printf("     %-32s %s\n", "model_state", "total_memory");
    printf("%4s %10s %10s %10s %10s %10s %10s\n", "rank", "predicted",
           "realized", "difference", "predicted", "realized", "difference");
    for (int k = 0; k < x->p->pp; k++) {
        const double ps = zb_zero_state_peak(&x->sched, k),
                     pt = m->ranks[k].total_memory;
        printf("%4d %10.4g %10.4g %+10.3g %10.4g %10.4g %+10.3g\n", k, ps,
               r->model_state[k], r->model_state[k] - ps, pt,
               r->total_memory[k], r->total_memory[k] - pt);
    }
}

/* A device backend: the allocator's high-water mark beside the
 * prediction of what it holds, the device's memory in use beside it
 * (the context, NCCL's and cuBLAS's buffers are outside the allocator),
 * MiB. */
static void print_device_memory(const struct exec *x,
                                const struct realized *r)
{
    const double mib = 1024.0 * 1024.0;

    printf("device memory, MiB: the allocator's high-water mark (used, "
           "reserved) vs the prediction (peak activations + model state); "
           "cudaMemGetInfo's in use at the start and the end\n");
    printf("%4s %10s %10s %10s %10s %10s %10s\n", "rank", "predicted",
           "used", "ratio", "reserved", "start", "end");
    for (int k = 0; k < x->p->pp; k++)
        printf("%4d %10.4g %10.4g %10.3g %10.4g %10.4g %10.4g\n", k,
               r->dev_predicted[k] / mib, r->dev_used_high[k] / mib,
               r->dev_predicted[k] > 0
                   ? r->dev_used_high[k] / r->dev_predicted[k] : 0,
               r->dev_reserved_high[k] / mib, r->dev_used_start[k] / mib,
               r->dev_used_end[k] / mib);
}

static void print(const struct exec *x, const struct realized *r,
                  const char *check)
{
    const struct zb_measures *m = &x->sched.predicted;

    print_header(x, check);
    printf("realized: mean of iterations %d-%d; times in profile units "
           "(1 unit = %g ms)\n", r->first + 1, r->last + 1,
           x->opt.time_unit);
    printf("%-18s %12s %12s %12s\n", "measure", "predicted", "realized",
           "difference");
    row("cost", m->cost, r->cost);
    row("makespan", m->makespan, r->makespan);
    row("bubble_ratio", m->bubble_ratio, r->bubble_ratio);
    row("sync_bubble_ratio", m->sync_bubble_ratio, r->sync_bubble_ratio);
    if (x->dp > 1)
        row("step_time", m->step_time, r->step_time);
    if (x->opt.synthetic)
        printf("     %-32s %-32s %s\n", "busy", "span", "peak_memory");
    else
        printf("     %-32s %-32s %-32s %s\n", "busy", "span", "peak_memory",
               "all buffers");
    printf("%4s %10s %10s %10s %10s %10s %10s %10s %10s %10s%s\n", "rank",
           "predicted", "realized", "difference", "predicted", "realized",
           "difference", "predicted", "realized", "difference",
           x->opt.synthetic ? "" : "   realized");
    for (int k = 0; k < x->p->pp; k++) {
        const struct zb_rank_measures *pr = &m->ranks[k];
        printf("%4d %10.4g %10.4g %+10.3g %10.4g %10.4g %+10.3g %10.4g "
               "%10.4g %+10.3g", k, pr->busy, r->busy[k],
               r->busy[k] - pr->busy, pr->span, r->span[k],
               r->span[k] - pr->span, pr->peak_memory, r->peak_memory[k],
               r->peak_memory[k] - pr->peak_memory);
        if (!x->opt.synthetic)
            printf(" %10.4g", r->peak_buffers[k]);
        printf("\n");
    }
    if (x->dp > 1)
        print_memory(x, r);
    if (r->dev_predicted)
        print_device_memory(x, r);
    fflush(stdout);
}

int measure_report(struct exec *x, const char *check, struct zb_error *err)
{
    const int P = x->p->pp;
    const int n = (int)(sizeof(struct rank_sample) / sizeof(double)) *
                  x->opt.iters;
    struct rank_sample *all = NULL;
    struct realized r = { 0 };
    int rc = 0;

    watchdog_phase("gathering the measures");
    if (x->rank == 0)
        all = zb_xcalloc((size_t)P * x->opt.iters, sizeof(*all));
    rc = MPI_Gather(x->samples, n, MPI_DOUBLE, all, n, MPI_DOUBLE, 0,
                    x->comm);
    if (rc != MPI_SUCCESS)
        return exec_mpi_error(rc, "MPI_Gather", err);
    if (x->rank != 0)
        return 0;
    r.busy = zb_xcalloc((size_t)P, sizeof(double));
    r.span = zb_xcalloc((size_t)P, sizeof(double));
    r.peak_memory = zb_xcalloc((size_t)P, sizeof(double));
    r.peak_buffers = zb_xcalloc((size_t)P, sizeof(double));
    r.model_state = zb_xcalloc((size_t)P, sizeof(double));
    r.total_memory = zb_xcalloc((size_t)P, sizeof(double));
    if (x->be->memory && !x->opt.synthetic)
        device_summary(x, all, &r);
    summarise(x, all, &r);
    print(x, &r, check);
    if (x->opt.report)
        rc = report_write(x, &r, check, err);
    free(r.busy);
    free(r.span);
    free(r.peak_memory);
    free(r.peak_buffers);
    free(r.model_state);
    free(r.total_memory);
    free(r.dev_predicted);      /* one allocation for the five */
    free(all);
    return rc;
}

/* The schedule's limit holds for the model's activations too: the
 * profile it was made for may not describe this model (an M_W below the
 * model's own lets B keep more than the schedule planned for). */
int measure_check_limit(const struct exec *x, struct zb_error *err)
{
    const double limit = x->p->mem_limit[x->rank];
    double peak = 0;

    for (int it = 0; it < x->opt.iters; it++)
        peak = fmax(peak, x->samples[it].peak);
    if (peak <= limit * (1 + 1e-9) + 1e-12)
        return 0;
    if (x->opt.synthetic)
        return zb_error_set(err, ZB_EILLEGAL, "realized peak_memory %.6g "
                            "exceeds the schedule's limit %.6g: a pass ran "
                            "out of the validated order", peak, limit);
    const double unit = exec_mem_unit(x);
    return zb_error_set(err, ZB_EILLEGAL, "realized peak_memory %.6g "
                        "exceeds the schedule's limit %.6g: the schedule's "
                        "profile has M_W = %.6g M_B, this model's B keeps "
                        "M_W = %.6g M_B until W (generate with --m-w or "
                        "from --profile-out)", peak, limit,
                        x->p->m_w / x->p->m_b,
                        (MSG_HDR_FLOATS + 2.0 * x->net.layers * x->nact) /
                            unit);
}
