/* report.c - --report FILE: the run's predicted and realized measures,
 * their difference, the losses and steps, as JSON (docs/zbexec.md). */
#include <stdio.h>
#include <stdlib.h>
#include "exec.h"
#include "zbsched/io.h"
#include "zbsched/json.h"
#include "zbsched/xalloc.h"

/* "key": v then sep; a non-finite loss is written as null (json.h). */
static void num(FILE *f, const char *key, double v, const char *sep)
{
    fprintf(f, "\"%s\": ", key);
    zb_json_fput_num(f, v);
    fputs(sep, f);
}

static void measures(FILE *f, const char *name, double cost, double span,
                     double bubble, double sync, const double *busy,
                     const double *spans, const double *peak, int P)
{
    fprintf(f, "  \"%s\": {", name);
    num(f, "cost", cost, ", ");
    num(f, "makespan", span, ", ");
    num(f, "bubble_ratio", bubble, ", ");
    num(f, "sync_bubble_ratio", sync, ",\n    \"ranks\": [");
    for (int r = 0; r < P; r++) {
        fprintf(f, "%s{", r ? ", " : "");
        num(f, "busy", busy[r], ", ");
        num(f, "span", spans[r], ", ");
        num(f, "peak_memory", peak[r], "}");
    }
    fprintf(f, "]}");
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

int report_write(const struct exec *x, const struct realized *r,
                 const char *check, struct zb_error *err)
{
    const struct zb_measures *m = &x->sched.predicted;
    const int P = x->p->pp;
    /* predicted (p*) and difference (d*) per rank, like r's arrays */
    double *pb = zb_xcalloc((size_t)P * 6, sizeof(double));
    double *ps = pb + P, *pm = pb + 2 * P, *db = pb + 3 * P;
    double *ds = pb + 4 * P, *dm = pb + 5 * P;
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    int rc;

    if (!f) {
        free(pb);
        return zb_error_set(err, ZB_EIO, "cannot buffer the report");
    }
    for (int k = 0; k < P; k++) {
        pb[k] = m->ranks[k].busy;
        ps[k] = m->ranks[k].span;
        pm[k] = m->ranks[k].peak_memory;
        db[k] = r->busy[k] - pb[k];
        ds[k] = r->span[k] - ps[k];
        dm[k] = r->peak_memory[k] - pm[k];
    }
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
    if (!x->opt.synthetic)
        fprintf(f, "\"model\": {\"layers\": %d, \"hidden\": %d, "
                "\"batch\": %d}, ", x->net.layers, x->net.hidden,
                x->net.batch);
    fprintf(f, "\"iterations\": %d,\n  \"measured_iterations\": [%d, %d], "
            "\"time_unit_ms\": ", x->opt.iters, r->first + 1, r->last + 1);
    zb_json_fput_num(f, x->opt.time_unit);
    fprintf(f, ", \"post_validation\": %s,\n",
            x->post_validation ? "true" : "false");
    measures(f, "predicted", m->cost, m->makespan, m->bubble_ratio,
             m->sync_bubble_ratio, pb, ps, pm, P);
    fprintf(f, ",\n");
    measures(f, "realized", r->cost, r->makespan, r->bubble_ratio,
             r->sync_bubble_ratio, r->busy, r->span, r->peak_memory, P);
    fprintf(f, ",\n");
    measures(f, "difference", r->cost - m->cost, r->makespan - m->makespan,
             r->bubble_ratio - m->bubble_ratio,
             r->sync_bubble_ratio - m->sync_bubble_ratio, db, ds, dm, P);
    fprintf(f, ",\n");
    if (!x->opt.synthetic) {
        fputs("  \"peak_buffers\": [", f);
        for (int k = 0; k < P; k++) {
            fputs(k ? ", " : "", f);
            zb_json_fput_num(f, r->peak_buffers[k]);
        }
        fputs("],\n", f);
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
    free(pb);
    return rc;
}
