/* json_run_trace.c - the passes of a real run read from a PyTorch profiler
 * trace or a zbexec trace (docs/profiles.md) into a struct zb_run. Like
 * json.c, the cJSON tree never leaves this file. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "json_util.h"
#include "zbsched/profile_import.h"
#include "zbsched/xalloc.h"

void zb_run_init(struct zb_run *r)
{
    memset(r, 0, sizeof(*r));
}

void zb_run_release(struct zb_run *r)
{
    if (r)
        free(r->passes);
}

static void push(struct zb_run *r, const struct zb_run_pass *p)
{
    zb_xgrow((void **)&r->passes, &r->cap, r->n + 1, sizeof(*r->passes));
    r->passes[r->n++] = *p;
}

static const cJSON *events_of(const cJSON *root)
{
    if (cJSON_IsArray(root))
        return root;
    return cJSON_GetObjectItemCaseSensitive(root, "traceEvents");
}

static bool num(const cJSON *obj, const char *key, double *out)
{
    const cJSON *it = cJSON_GetObjectItemCaseSensitive(obj, key);

    if (!cJSON_IsNumber(it) || !isfinite(it->valuedouble))
        return false;
    *out = it->valuedouble;
    return true;
}

static const char *str(const cJSON *obj, const char *key)
{
    const cJSON *it = cJSON_GetObjectItemCaseSensitive(obj, key);
    return cJSON_IsString(it) ? it->valuestring : NULL;
}

/* A complete event's interval; false when it is not one. */
static bool slice(const cJSON *ev, double *ts, double *end)
{
    const char *ph = str(ev, "ph");
    double dur;

    if (!ph || strcmp(ph, "X") || !num(ev, "ts", ts) || !num(ev, "dur", &dur)
        || dur < 0)
        return false;
    *end = *ts + dur;
    return true;
}

/* "PP:<stage><F|I|W|B><mb>", the name _get_profiler_function_name() gives
 * a compute action (torch/distributed/pipelining/schedules.py); false for
 * every other name (SEND_F, UNSHARD, REDUCE_GRAD, "(..)OVERLAP_F_B"). */
static bool action(const char *name, struct zb_run_pass *p)
{
    const char *c = name + 3;
    char *end;
    long stage, mb;

    if (strncmp(name, "PP:", 3) || *c < '0' || *c > '9')
        return false;
    stage = strtol(c, &end, 10);
    switch (*end) {
    case 'F': p->kind = ZB_RUN_F; break;
    case 'I': p->kind = ZB_RUN_B; break;
    case 'W': p->kind = ZB_RUN_W; break;
    case 'B': p->kind = ZB_RUN_BW; break;
    default: return false;
    }
    c = end + 1;
    if (*c < '0' || *c > '9')
        return false;
    mb = strtol(c, &end, 10);
    if (*end || stage > 1000000 || mb > 1000000)
        return false;
    p->stage = (int)stage;
    p->mb = (int)mb;
    return true;
}

/* ScheduleGPipe's "Forward <mb>" and "Backward <mb>" (full backward):
 * single-stage schedules name no stage, the caller gives the file's. */
static bool single_stage_action(const char *name, int stage,
                                struct zb_run_pass *p)
{
    const char *c;
    char *end;
    long mb;

    if (!strncmp(name, "Forward ", 8)) {
        p->kind = ZB_RUN_F;
        c = name + 8;
    } else if (!strncmp(name, "Backward ", 9)) {
        p->kind = ZB_RUN_BW;
        c = name + 9;
    } else {
        return false;
    }
    if (*c < '0' || *c > '9')
        return false;
    mb = strtol(c, &end, 10);
    if (*end || mb > 1000000)
        return false;
    p->stage = stage;
    p->mb = (int)mb;
    return true;
}

struct launch {
    double ts;          /* when the host launched it */
    double corr;        /* correlation id, shared with its kernel */
    int pid, tid;
};

struct kernel {
    double corr, start, end;
};

struct gpu_span {
    char name[40];
    double start, end;
    bool used;
};

static int by_ts(const void *a, const void *b)
{
    const struct launch *x = a, *y = b;
    return (x->ts > y->ts) - (x->ts < y->ts);
}

static int by_corr(const void *a, const void *b)
{
    const struct kernel *x = a, *y = b;
    return (x->corr > y->corr) - (x->corr < y->corr);
}

static const struct kernel *find_kernel(const struct kernel *k, int n,
                                        double corr)
{
    int lo = 0, hi = n - 1;

    while (lo <= hi) {
        int mid = (lo + hi) / 2;
        if (k[mid].corr == corr)
            return &k[mid];
        if (k[mid].corr < corr)
            lo = mid + 1;
        else
            hi = mid - 1;
    }
    return NULL;
}

/* The device span of the kernels launched from pid/tid in [ts, end):
 * first kernel start to last kernel end; false when there are none. */
static bool kernel_span(const struct launch *l, int nl,
                        const struct kernel *k, int nk, int pid, int tid,
                        double ts, double end, double *ks, double *ke)
{
    int lo = 0, hi = nl;
    bool any = false;

    while (lo < hi) {       /* first launch at or after ts */
        int mid = (lo + hi) / 2;
        if (l[mid].ts < ts)
            lo = mid + 1;
        else
            hi = mid;
    }
    for (int i = lo; i < nl && l[i].ts < end; i++) {
        const struct kernel *kk;
        if (l[i].pid != pid || l[i].tid != tid ||
            !(kk = find_kernel(k, nk, l[i].corr)))
            continue;
        if (!any || kk->start < *ks)
            *ks = kk->start;
        if (!any || kk->end > *ke)
            *ke = kk->end;
        any = true;
    }
    return any;
}

static int by_name_start(const void *a, const void *b)
{
    const struct gpu_span *x = a, *y = b;
    int c = strcmp(x->name, y->name);

    return c ? c : (x->start > y->start) - (x->start < y->start);
}

/* The GPU-side slice of the same name not used yet, the earliest one
 * starting after the host annotation did (the device runs it later); g
 * is sorted by name, then start, so a name's few slices (one an
 * iteration) are next to each other. */
static struct gpu_span *gpu_match(struct gpu_span *g, int n,
                                  const char *name, double ts)
{
    int lo = 0, hi = n;

    while (lo < hi) {       /* the name's first slice */
        int mid = (lo + hi) / 2;
        if (strcmp(g[mid].name, name) < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    for (int i = lo; i < n && !strcmp(g[i].name, name); i++)
        if (!g[i].used && g[i].start >= ts)
            return &g[i];
    return NULL;
}

struct torch_file {
    struct launch *l;
    struct kernel *k;
    struct gpu_span *g;
    int nl, nk, ng, cl, ck, cg;
};

/* First walk: what the device ran, to time the annotations by. */
static void collect_device(const cJSON *events, struct torch_file *f)
{
    const cJSON *ev;

    cJSON_ArrayForEach(ev, events) {
        const char *cat = str(ev, "cat"), *name = str(ev, "name");
        const cJSON *args = cJSON_GetObjectItemCaseSensitive(ev, "args");
        double ts, end, corr;
        int pid = 0, tid = 0;

        if (!cat || !slice(ev, &ts, &end))
            continue;
        if (!strcmp(cat, "gpu_user_annotation") && name &&
            strlen(name) < sizeof(f->g->name)) {
            zb_xgrow((void **)&f->g, &f->cg, f->ng + 1, sizeof(*f->g));
            f->g[f->ng] = (struct gpu_span){ .start = ts, .end = end };
            strcpy(f->g[f->ng++].name, name);
        } else if (!strcmp(cat, "kernel") && num(args, "correlation", &corr)
                   && !(name && !strncmp(name, "nccl", 4))) {
            /* NCCL kernels wait for a peer: transfer time, not the pass */
            zb_xgrow((void **)&f->k, &f->ck, f->nk + 1, sizeof(*f->k));
            f->k[f->nk++] = (struct kernel){ corr, ts, end };
        } else if ((!strcmp(cat, "cuda_runtime") ||
                    !strcmp(cat, "cuda_driver")) &&
                   num(args, "correlation", &corr)) {
            json_get_int(ev, "pid", &pid);
            json_get_int(ev, "tid", &tid);
            zb_xgrow((void **)&f->l, &f->cl, f->nl + 1, sizeof(*f->l));
            f->l[f->nl++] = (struct launch){ ts, corr, pid, tid };
        }
    }
    if (f->nl > 1)
        qsort(f->l, (size_t)f->nl, sizeof(*f->l), by_ts);
    if (f->nk > 1)
        qsort(f->k, (size_t)f->nk, sizeof(*f->k), by_corr);
    if (f->ng > 1)
        qsort(f->g, (size_t)f->ng, sizeof(*f->g), by_name_start);
}

int zb_run_add_torch_trace(struct zb_run *r, const char *text,
                           struct zb_error *err)
{
    cJSON *root = zbi_json_parse(text, err);
    const cJSON *events, *ev;
    struct torch_file f = { 0 };
    double base = 0;
    int i = 0, found = 0, rc = 0, own_stage;

    if (!root)
        return ZB_EPARSE;
    if (!cJSON_IsArray(events = events_of(root))) {
        rc = zb_error_set(err, ZB_EPARSE, "no \"traceEvents\" array: not a "
                          "Chrome trace");
        goto out;
    }
    /* Kineto writes ts relative to baseTimeNanoseconds, one per file. */
    if (num(root, "baseTimeNanoseconds", &base))
        base /= 1000;
    /* The stage of a single-stage schedule: the rank Kineto records (one
     * pipeline rank a process), else the file's position. */
    if (json_get_int(cJSON_GetObjectItemCaseSensitive(root, "distributedInfo"),
                     "rank", &own_stage) < 0 || own_stage < 0)
        own_stage = r->lanes;
    collect_device(events, &f);
    cJSON_ArrayForEach(ev, events) {
        const char *cat = str(ev, "cat"), *name = str(ev, "name");
        struct zb_run_pass p = { .lane = r->lanes };
        struct gpu_span *g;
        double ts, end, ks = 0, ke = 0;
        int pid = 0, tid = 0;

        i++;
        if (!name || (!action(name, &p) &&
                      !single_stage_action(name, own_stage, &p)) ||
            (cat && !strcmp(cat, "gpu_user_annotation")))
            continue;
        if (!slice(ev, &ts, &end)) {
            rc = zb_error_set(err, ZB_EPARSE, "event %d ('%s'): an action "
                              "must be a complete event (\"ph\": \"X\") "
                              "with numbers \"ts\" and \"dur\"", i - 1, name);
            goto out;
        }
        json_get_int(ev, "pid", &pid);
        json_get_int(ev, "tid", &tid);
        if ((g = gpu_match(f.g, f.ng, name, ts))) {
            g->used = true;
            ts = g->start;
            end = g->end;
            p.device = true;
        } else if (kernel_span(f.l, f.nl, f.k, f.nk, pid, tid, ts, end, &ks,
                               &ke)) {
            ts = ks;
            end = ke;
            p.device = true;
        }
        p.start = base + ts;
        p.end = base + end;
        push(r, &p);
        found++;
    }
    if (!found)
        rc = zb_error_set(err, ZB_EPARSE, "no \"PP:\" compute action (PP:0F3, "
                          "PP:2I5, PP:1W0, PP:0B1) nor ScheduleGPipe's "
                          "\"Forward N\": not a trace of "
                          "torch.distributed.pipelining");
    else
        r->lanes++;
out:
    free(f.l);
    free(f.k);
    free(f.g);
    cJSON_Delete(root);
    return rc;
}

int zb_run_add_zbexec_trace(struct zb_run *r, const char *text,
                            struct zb_error *err)
{
    cJSON *root = zbi_json_parse(text, err);
    const cJSON *events, *ev;
    int i = 0, first = r->n, max_iter = 0, max_pid = -1, rc = 0, kept;
    int *iters = NULL, ci = 0;

    if (!root)
        return ZB_EPARSE;
    if (!cJSON_IsArray(events = events_of(root))) {
        rc = zb_error_set(err, ZB_EPARSE, "no \"traceEvents\" array: not a "
                          "Chrome trace");
        goto out;
    }
    cJSON_ArrayForEach(ev, events) {
        const cJSON *args = cJSON_GetObjectItemCaseSensitive(ev, "args");
        const char *op = str(args, "op");
        struct zb_run_pass p = { 0 };
        double ts, end;
        int pid, tid, iter = 0;

        i++;
        if (!op || !slice(ev, &ts, &end) || json_get_int(ev, "tid", &tid) < 0
            || tid != 0)
            continue;
        if (!strcmp(op, "F"))
            p.kind = ZB_RUN_F;
        else if (!strcmp(op, "B"))
            p.kind = ZB_RUN_B;
        else if (!strcmp(op, "W"))
            p.kind = ZB_RUN_W;
        else if (!strcmp(op, "BW"))
            p.kind = ZB_RUN_BW;
        else
            continue;   /* FB: one slice for two passes, no time of each */
        if (json_get_int(ev, "pid", &pid) < 0 || pid < 0 || pid >= 4096 ||
            json_get_int(args, "stage", &p.stage) < 0 || p.stage < 0 ||
            json_get_int(args, "mb", &p.mb) < 0 || p.mb < 0 ||
            (cJSON_GetObjectItemCaseSensitive(args, "iter") &&
             json_get_int(args, "iter", &iter) < 0)) {
            rc = zb_error_set(err, ZB_EPARSE, "event %d (%s): needs an "
                              "integer \"pid\" (a rank, below 4096) and "
                              "args \"stage\", \"mb\" (and \"iter\")",
                              i - 1, op);
            goto out;
        }
        p.lane = r->lanes + pid;
        p.start = ts;
        p.end = end;
        push(r, &p);
        zb_xgrow((void **)&iters, &ci, r->n - first, sizeof(int));
        iters[r->n - first - 1] = iter;
        max_iter = iter > max_iter ? iter : max_iter;
        max_pid = pid > max_pid ? pid : max_pid;
    }
    if (r->n == first) {
        rc = zb_error_set(err, ZB_EPARSE, "no compute slice with args \"op\" "
                          "on thread 0: not a zbexec --trace file");
        goto out;
    }
    kept = first;
    for (int k = first; k < r->n; k++)
        if (max_iter == 0 || iters[k - first] > 0)
            r->passes[kept++] = r->passes[k];
    r->n = kept;
    r->lanes += max_pid + 1;
out:
    free(iters);
    cJSON_Delete(root);
    return rc;
}
