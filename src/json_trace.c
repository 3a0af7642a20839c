/* json_trace.c - realized timelines read back from zbexec's Chrome trace
 * or JSON report (layouts in docs/guide.md). Like json.c, the cJSON tree
 * never leaves this file: it is parsed into a struct zb_timeline. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "json_util.h"
#include "zbsched/pass.h"
#include "zbsched/timeline.h"
#include "zbsched/xalloc.h"

struct record {
    struct zb_op op;    /* compute op, times in microseconds */
    int rank, iter;
};

struct reader {
    const struct zb_profile *p;
    struct record *recs;
    int n, cap;
    struct zb_error *err;
};

static int get_num(const cJSON *obj, const char *key, double *out)
{
    const cJSON *it = cJSON_GetObjectItemCaseSensitive(obj, key);

    if (!cJSON_IsNumber(it) || !isfinite(it->valuedouble))
        return -1;
    *out = it->valuedouble;
    return 0;
}

/* Keep one compute op. `what` names it in messages ("event 7"). A slice
 * that names no compute op (STEP, an iteration marker) is not ours. */
static int add(struct reader *rd, const char *what, int rank,
               const cJSON *desc, double start, double end)
{
    const cJSON *op = cJSON_GetObjectItemCaseSensitive(desc, "op");
    const struct zb_profile *p = rd->p;
    struct record rec = { .rank = rank, .iter = 0 };

    if (!cJSON_IsString(op) ||
        zb_op_kind_parse(op->valuestring, &rec.op.kind) < 0 ||
        !zb_op_is_compute(rec.op.kind))
        return 0;
    if (json_get_int(desc, "stage", &rec.op.stage) < 0 ||
        json_get_int(desc, "mb", &rec.op.mb) < 0)
        return zb_error_set(rd->err, ZB_EPARSE, "%s (%s): \"stage\" and "
                            "\"mb\" must be integers", what, op->valuestring);
    if (rec.op.kind == ZB_OP_FB &&
        (json_get_int(desc, "b_stage", &rec.op.b_stage) < 0 ||
         json_get_int(desc, "b_mb", &rec.op.b_mb) < 0))
        return zb_error_set(rd->err, ZB_EPARSE, "%s (FB): \"b_stage\" and "
                            "\"b_mb\" must be integers", what);
    if (rank < 0 || rank >= p->pp)
        return zb_error_set(rd->err, ZB_EPARSE, "%s: rank %d is not a rank "
                            "of this schedule (pp %d)", what, rank, p->pp);
    if (rec.op.stage < 0 || rec.op.stage >= zb_profile_stages(p) ||
        rec.op.mb < 0 || rec.op.mb >= p->microbatches ||
        zb_profile_stage_rank(p, rec.op.stage) != rank)
        return zb_error_set(rd->err, ZB_EPARSE, "%s: %s stage %d mb %d does "
                            "not run on rank %d of this schedule", what,
                            op->valuestring, rec.op.stage, rec.op.mb, rank);
    if (!(end >= start))
        return zb_error_set(rd->err, ZB_EPARSE, "%s: needs a start and an "
                            "end not before it", what);
    if (!isfinite(end))
        return zb_error_set(rd->err, ZB_EPARSE, "%s: its end is not a "
                            "finite number", what);
    if (cJSON_GetObjectItemCaseSensitive(desc, "iter") &&
        json_get_int(desc, "iter", &rec.iter) < 0)
        return zb_error_set(rd->err, ZB_EPARSE, "%s: \"iter\" must be an "
                            "integer", what);
    rec.op.peer = rec.op.seq = -1;
    rec.op.start = start;
    rec.op.end = end;
    zb_xgrow((void **)&rd->recs, &rd->cap, rd->n + 1, sizeof(*rd->recs));
    rd->recs[rd->n++] = rec;
    return 0;
}

/* Complete events ("X") on thread 0, the compute track of each rank. */
static int read_events(struct reader *rd, const cJSON *events)
{
    const cJSON *ev;
    int i = 0, rc;

    cJSON_ArrayForEach(ev, events) {
        const cJSON *ph = cJSON_GetObjectItemCaseSensitive(ev, "ph");
        char what[32];
        double ts, dur;
        int pid, tid;

        snprintf(what, sizeof(what), "event %d", i++);
        if (!cJSON_IsString(ph) || strcmp(ph->valuestring, "X") ||
            json_get_int(ev, "tid", &tid) < 0 || tid != 0)
            continue;
        if (json_get_int(ev, "pid", &pid) < 0 || get_num(ev, "ts", &ts) < 0 ||
            get_num(ev, "dur", &dur) < 0)
            return zb_error_set(rd->err, ZB_EPARSE, "%s: a complete event "
                                "needs integer \"pid\" and numbers \"ts\" "
                                "and \"dur\"", what);
        rc = add(rd, what, pid, cJSON_GetObjectItemCaseSensitive(ev, "args"),
                 ts, ts + dur);
        if (rc < 0)
            return rc;
    }
    return 0;
}

static int read_report(struct reader *rd, const cJSON *ranks)
{
    const cJSON *rk, *o;
    int rc;

    cJSON_ArrayForEach(rk, ranks) {
        const cJSON *ops = cJSON_GetObjectItemCaseSensitive(rk, "ops");
        int r, i = 0;

        if (json_get_int(rk, "rank", &r) < 0 || !cJSON_IsArray(ops))
            return zb_error_set(rd->err, ZB_EPARSE, "report: every entry of "
                                "\"ranks\" needs \"rank\" and \"ops\"");
        cJSON_ArrayForEach(o, ops) {
            char what[48];
            double start, end;

            snprintf(what, sizeof(what), "rank %d op %d", r, i++);
            if (get_num(o, "start", &start) < 0 ||
                get_num(o, "end", &end) < 0)
                start = end = NAN;   /* only an error for compute ops */
            if ((rc = add(rd, what, r, o, start, end)) < 0)
                return rc;
        }
    }
    return 0;
}

static int by_start(const void *a, const void *b)
{
    const struct zb_op *x = a, *y = b;

    return x->start < y->start ? -1 : x->start > y->start;
}

/* Keep one iteration (*iterp; -1: the last, which it then names),
 * convert to profile units from the earliest start, and sort each rank by
 * start. Returns how many ops it kept. */
static int build(const struct reader *rd, double us_per_unit, int *iterp,
                 struct zb_timeline *out)
{
    double t0 = INFINITY;
    int kept = 0, iter = *iterp;

    if (iter < 0)
        for (int i = 0; i < rd->n; i++)
            if (rd->recs[i].iter > iter)
                iter = rd->recs[i].iter;
    *iterp = iter;
    for (int i = 0; i < rd->n; i++)
        if (rd->recs[i].iter == iter)
            t0 = fmin(t0, rd->recs[i].op.start);
    for (int i = 0; i < rd->n; i++) {
        struct zb_op op = rd->recs[i].op;
        if (rd->recs[i].iter != iter)
            continue;
        op.start = (op.start - t0) / us_per_unit;
        op.end = (op.end - t0) / us_per_unit;
        zb_op_list_push(&out->ranks[rd->recs[i].rank], &op);
        kept++;
    }
    for (int r = 0; r < out->pp; r++)
        if (out->ranks[r].n > 1)
            qsort(out->ranks[r].ops, (size_t)out->ranks[r].n,
                  sizeof(struct zb_op), by_start);
    return kept;
}

/* What a run can do: finite times, each pass once, and one op at a time
 * on a rank. A realized file is checked like a schedule, so a broken or
 * edited trace is an error instead of a picture of nonsense. */
static int check_timeline(const struct zb_profile *p,
                          const struct zb_timeline *t, int iter,
                          struct zb_error *err)
{
    char *seen = zb_xcalloc((size_t)zb_pass_count(p), 1);
    int rc = 0;

    for (int r = 0; r < t->pp && rc == 0; r++)
        for (int i = 0; i < t->ranks[r].n && rc == 0; i++) {
            const struct zb_op *op = &t->ranks[r].ops[i], *prev = op - 1;
            const char *kind = zb_op_kind_name(op->kind);
            enum zb_pass k = zb_pass_of(op->kind);
            long at = zb_pass_index(p, k, op->stage, op->mb);
            bool dup = seen[at]++ ||
                       (op->kind == ZB_OP_BW &&
                        seen[zb_pass_index(p, ZB_PASS_W, op->stage,
                                           op->mb)]++);

            if (!isfinite(op->start) || !isfinite(op->end))
                rc = zb_error_set(err, ZB_EPARSE, "rank %d: %s stage %d mb "
                                  "%d: times out of range in profile units",
                                  r, kind, op->stage, op->mb);
            else if (dup)
                rc = zb_error_set(err, ZB_EPARSE, "rank %d: %s stage %d mb "
                                  "%d ran twice in iteration %d", r, kind,
                                  op->stage, op->mb, iter);
            else if (i > 0 && op->start < prev->end -
                                  1e-9 * fmax(1, fabs(prev->end)))
                rc = zb_error_set(err, ZB_EPARSE, "rank %d: %s stage %d mb "
                                  "%d starts at %g, before %s stage %d mb "
                                  "%d ends (%g)", r, kind, op->stage, op->mb,
                                  op->start, zb_op_kind_name(prev->kind),
                                  prev->stage, prev->mb, prev->end);
        }
    free(seen);
    return rc;
}

int zb_timeline_parse(const char *text, const struct zb_profile *p,
                      double us_per_unit, int iter, struct zb_timeline *out,
                      struct zb_error *err)
{
    struct reader rd = { .p = p, .err = err };
    cJSON *root = zbi_json_parse(text, err);
    const cJSON *events = root, *ranks = NULL;
    int rc = 0;

    out->pp = p->pp;
    out->ranks = zb_xcalloc((size_t)p->pp, sizeof(*out->ranks));
    if (!root)
        return ZB_EPARSE;
    if (cJSON_IsObject(root)) {
        events = cJSON_GetObjectItemCaseSensitive(root, "traceEvents");
        ranks = cJSON_GetObjectItemCaseSensitive(root, "ranks");
    }
    if (cJSON_IsArray(events))
        rc = read_events(&rd, events);
    else if (cJSON_IsArray(ranks))
        rc = read_report(&rd, ranks);
    else
        rc = zb_error_set(err, ZB_EPARSE, "neither a trace (\"traceEvents\") "
                          "nor a report (\"ranks\")");
    if (rc == 0 && rd.n == 0)
        rc = zb_error_set(err, ZB_EPARSE, "no compute ops (F, B, W, BW) "
                          "found");
    if (rc == 0 && build(&rd, us_per_unit, &iter, out) == 0)
        rc = zb_error_set(err, ZB_EPARSE, "no ops of iteration %d", iter);
    if (rc == 0)
        rc = check_timeline(p, out, iter, err);
    cJSON_Delete(root);
    free(rd.recs);
    return rc;
}
