/* report.c - --report FILE: the run's predicted and realized measures,
 * their difference, the losses and steps, as JSON (docs/zbexec.md). */
#include <stdio.h>
#include <stdlib.h>
#include "exec.h"
#include "zbsched/io.h"
#include "zbsched/json.h"
#include "zbsched/xalloc.h"
#include "zbsched/zero.h"

/* "key": v then sep; a non-finite loss is written as null (json.h). */
static void num(FILE *f, const char *key, double v, const char *sep)
{
    fprintf(f, "\"%s\": ", key);
    zb_json_fput_num(f, v);
    fputs(sep, f);
}

/* One block; with data parallelism (dp) the step_time and each rank's
 * model_state and total_memory too, the names of the schedule's
 * predicted block (formats.md). */
static void measures(FILE *f, const char *name, const struct realized *v,
                     int P, bool dp)
{
    fprintf(f, "  \"%s\": {", name);
    num(f, "cost", v->cost, ", ");
    num(f, "makespan", v->makespan, ", ");
    num(f, "bubble_ratio", v->bubble_ratio, ", ");
    num(f, "sync_bubble_ratio", v->sync_bubble_ratio, ",");
    if (dp) {
        fputs(" ", f);
        num(f, "step_time", v->step_time, ",");
    }
    fputs("\n    \"ranks\": [", f);
    for (int r = 0; r < P; r++) {
        fprintf(f, "%s{", r ? ", " : "");
        num(f, "busy", v->busy[r], ", ");
        num(f, "span", v->span[r], ", ");
        num(f, "peak_memory", v->peak_memory[r], dp ? ", " : "}");
        if (!dp)
            continue;
        num(f, "model_state", v->model_state[r], ", ");
        num(f, "total_memory", v->total_memory[r], "}");
    }
    fprintf(f, "]}");
}

/* The schedule's predicted measures (*pred) and r minus them (*diff), in
 * one allocation of 5 arrays of P each (returned, to free). */
static double *compare(const struct exec *x, const struct realized *r,
                       struct realized *pred, struct realized *diff)
{
    const struct zb_measures *m = &x->sched.predicted;
    const int P = x->p->pp;
    double *a = zb_xcalloc((size_t)P * 10, sizeof(double));
    double **pa[5] = { &pred->busy, &pred->span, &pred->peak_memory,
                       &pred->model_state, &pred->total_memory };
    double **da[5] = { &diff->busy, &diff->span, &diff->peak_memory,
                       &diff->model_state, &diff->total_memory };
    const double *ra[5] = { r->busy, r->span, r->peak_memory,
                            r->model_state, r->total_memory };

    *pred = (struct realized){ .cost = m->cost, .makespan = m->makespan,
                               .bubble_ratio = m->bubble_ratio,
                               .sync_bubble_ratio = m->sync_bubble_ratio,
                               .step_time = m->step_time };
    *diff = (struct realized){
        .cost = r->cost - m->cost, .makespan = r->makespan - m->makespan,
        .bubble_ratio = r->bubble_ratio - m->bubble_ratio,
        .sync_bubble_ratio = r->sync_bubble_ratio - m->sync_bubble_ratio,
        .step_time = r->step_time - m->step_time };
    for (int k = 0; k < 5; k++) {
        *pa[k] = a + (size_t)(2 * k) * P;
        *da[k] = a + (size_t)(2 * k + 1) * P;
    }
    for (int k = 0; k < P; k++) {
        pred->busy[k] = m->ranks[k].busy;
        pred->span[k] = m->ranks[k].span;
        pred->peak_memory[k] = m->ranks[k].peak_memory;
        pred->model_state[k] = zb_zero_state_peak(&x->sched, k);
        pred->total_memory[k] = m->ranks[k].total_memory;
        for (int j = 0; j < 5; j++)
            (*da[j])[k] = ra[j][k] - (*pa[j])[k];
    }
    return a;
}

static void steps(FILE *f, const struct exec *x)
{
    fprintf(f, "  \"loss\": [");
    for (int it = 0; it < x->opt.iters; it++) {
        fputs(it ? ", " : "", f);
        zb_json_fput_num(f, x->steps[it].loss);
    }
    fprintf(f, "],\n  \"steps\": [");
    for (int it = 0; it < x->opt.iters; it++) {
        const struct step_info *s = &x->steps[it];
        fprintf(f, "%s\n    {\"iteration\": %d, \"status\": \"%s\", "
                "\"rolled_back\": %s, ", it ? "," : "", it + 1,
                s->nonfinite ? "skipped" : s->clipped ? "clipped"
                                                      : "applied",
                s->rolled_back ? "true" : "false");
        num(f, "grad_norm", s->norm, "}");
    }
    fprintf(f, "\n  ],\n");
}

/* A device backend's memory per rank, bytes (measure.c). */
static void device_memory(FILE *f, const struct realized *r, int P)
{
    const char *const names[5] = { "predicted", "used_high",
                                   "reserved_high", "used_start",
                                   "used_end" };
    const double *v[5] = { r->dev_predicted, r->dev_used_high,
                           r->dev_reserved_high, r->dev_used_start,
                           r->dev_used_end };

    fputs("  \"device_memory_bytes\": {", f);
    for (int i = 0; i < 5; i++) {
        fprintf(f, "%s\"%s\": [", i ? ", " : "", names[i]);
        for (int k = 0; k < P; k++) {
            fputs(k ? ", " : "", f);
            zb_json_fput_num(f, v[i][k]);
        }
        fputs("]", f);
    }
    fputs("},\n", f);
}

int report_write(const struct exec *x, const struct realized *r,
                 const char *check, struct zb_error *err)
{
    const int P = x->p->pp;
    const bool dp = x->dp > 1;
    struct realized pred, diff;
    double *arrays;
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    int rc;

    if (!f)
        return zb_error_set(err, ZB_EIO, "cannot buffer the report");
    arrays = compare(x, r, &pred, &diff);
    fputs("{\n  \"format\": \"zbexec-report\", \"version\": 1,\n"
          "  \"schedule\": ", f);
    zb_json_fput_str(f, x->sched.name);
    fprintf(f, ", \"pp\": %d, \"vpp\": %d, \"microbatches\": %d, "
            "\"placement\": \"%s\",\n  \"backend\": \"%s\", "
            "\"mode\": \"%s\", ", P, x->p->vpp, x->p->microbatches,
            zb_placement_name(x->p->placement), x->be->name,
            x->opt.synthetic ? "synthetic" : "model");
    if (x->dp > 1)
        fprintf(f, "\"dp\": %d, \"zero\": %d, ", x->dp, x->p->dp.zero);
    if (coll_per_mb(x))
        fprintf(f, "\"reduce\": \"microbatch\", ");
    if (!x->opt.synthetic && x->tf)
        fprintf(f, "\"model\": {\"name\": \"transformer\", \"layers\": %d, "
                "\"hidden\": %d, \"heads\": %d, \"seq\": %d, \"ffn\": %d, "
                "\"batch\": %d}, ", x->tf->layers, x->tf->hidden,
                x->tf->heads, x->tf->seq, x->tf->ffn, x->tf->batch);
    else if (!x->opt.synthetic)
        fprintf(f, "\"model\": {\"layers\": %d, \"hidden\": %d, "
                "\"batch\": %d}, ", x->net.layers, x->net.hidden,
                x->net.batch);
    fprintf(f, "\"iterations\": %d,\n  \"measured_iterations\": [%d, %d], "
            "\"time_unit_ms\": ", x->opt.iters, r->first + 1, r->last + 1);
    zb_json_fput_num(f, x->opt.time_unit);
    fprintf(f, ", \"post_validation\": %s,\n",
            x->post_validation ? "true" : "false");
    measures(f, "predicted", &pred, P, dp);
    fprintf(f, ",\n");
    measures(f, "realized", r, P, dp);
    fprintf(f, ",\n");
    measures(f, "difference", &diff, P, dp);
    fprintf(f, ",\n");
    if (!x->opt.synthetic) {
        fputs("  \"peak_buffers\": [", f);
        for (int k = 0; k < P; k++) {
            fputs(k ? ", " : "", f);
            zb_json_fput_num(f, r->peak_buffers[k]);
        }
        fputs("],\n", f);
        if (r->dev_predicted)
            device_memory(f, r, P);
        steps(f, x);
    }
    fputs("  \"check\": ", f);
    if (check)
        zb_json_fput_str(f, check);
    else
        fputs("null", f);
    fputs("\n}\n", f);
    fclose(f);
    rc = zb_io_write_file(x->opt.report, text, len, err);
    free(text);
    free(arrays);
    return rc;
}
