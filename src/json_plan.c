/* json_plan.c - the Plan JSON writer (split.h; docs/formats.md, "Plan"):
 * the split, its predicted measures and memory per rank, the baselines,
 * what Megatron and torchtitan take, and the schedule document itself;
 * and the reader of what the plan's picture needs back from it. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "json_util.h"
#include "strbuf.h"
#include "zbsched/json.h"
#include "zbsched/split.h"
#include "zbsched/xalloc.h"

/* A number, or null where it is not known (a split never scheduled). */
static void num_or_null(struct strbuf *sb, bool known, double v)
{
    if (known)
        zbi_sb_add_num(sb, v);
    else
        zbi_sb_add(sb, "null");
}

static void counts(struct strbuf *sb, const struct zb_plan_split *s)
{
    zbi_sb_add(sb, "[");
    for (int i = 0; i < s->nstages; i++) {
        if (i)
            zbi_sb_add(sb, ", ");
        zbi_sb_add_int(sb, s->counts[i]);
    }
    zbi_sb_add(sb, "]");
}

/* F, B and W of stage i of s: its layers' sums. */
static void stage_fbw(const struct zb_model *m, const struct zb_plan_split *s,
                      int i, double fbw[3])
{
    int at = 0;

    for (int k = 0; k < i; k++)
        at += s->counts[k];
    fbw[0] = fbw[1] = fbw[2] = 0;
    for (int k = at; k < at + s->counts[i]; k++) {
        fbw[0] += m->layers[k].f;
        fbw[1] += m->layers[k].b;
        fbw[2] += m->layers[k].w;
    }
}

/* Memory of pp ranks as a JSON list, `indent` spaces before each entry
 * after the first. */
static void rank_list(struct strbuf *sb, const struct zb_memory_rank *ranks,
                      int pp, int indent)
{
    zbi_sb_add(sb, "[");
    for (int r = 0; r < pp; r++) {
        const struct zb_memory_rank *k = &ranks[r];
        if (r)
            zbi_sb_addf(sb, ",\n%*s", indent, "");
        zbi_sb_add(sb, "{\"memory_bytes\": ");
        zbi_sb_add_num(sb, k->total);
        zbi_sb_add(sb, ", \"activation_bytes\": ");
        zbi_sb_add_num(sb, k->activations);
        zbi_sb_add(sb, ", \"model_state_bytes\": ");
        zbi_sb_add_num(sb, k->model_state);
        zbi_sb_add(sb, ", \"buffer_bytes\": ");
        zbi_sb_add_num(sb, k->buffers);
        zbi_sb_add(sb, "}");
    }
    zbi_sb_add(sb, "]");
}

/* A baseline's cost, whether it fits, and its largest rank total (with
 * one microbatch in flight where it was never scheduled), with what the
 * picture draws: each stage's F, B, W and each rank's memory. */
static void baseline(struct strbuf *sb, const struct zb_model *m,
                     const char *name, const struct zb_plan_split *s, int pp,
                     bool last)
{
    double peak = 0;

    for (int r = 0; s->exists && r < pp; r++)
        peak = fmax(peak, s->ranks[r].total);
    zbi_sb_addf(sb, "    \"%s\": ", name);
    if (!s->exists) {
        zbi_sb_addf(sb, "null%s\n", last ? "" : ",");
        return;
    }
    zbi_sb_add(sb, "{\"cost\": ");
    num_or_null(sb, s->scheduled, s->cost);
    zbi_sb_add(sb, ", \"step\": ");
    num_or_null(sb, s->scheduled, s->step);
    zbi_sb_addf(sb, ", \"fits\": %s, \"memory_bytes\": ",
                s->fits ? "true" : "false");
    zbi_sb_add_num(sb, peak);
    zbi_sb_add(sb, ", \"layers_per_stage\": ");
    counts(sb, s);
    zbi_sb_add(sb, ",\n      \"stage_times\": [");
    for (int i = 0; i < s->nstages; i++) {
        double fbw[3];
        stage_fbw(m, s, i, fbw);
        zbi_sb_add(sb, i ? ", [" : "[");
        for (int k = 0; k < 3; k++) {
            zbi_sb_add(sb, k ? ", " : "");
            zbi_sb_add_num(sb, fbw[k]);
        }
        zbi_sb_add(sb, "]");
    }
    zbi_sb_add(sb, "],\n      \"ranks\": ");
    rank_list(sb, s->ranks, pp, 8);
    zbi_sb_addf(sb, "}%s\n", last ? "" : ",");
}

/* Layer names of stage i, as a JSON list. */
static void stage_layers(struct strbuf *sb, const struct zb_model *m,
                         const struct zb_plan_split *s, int i)
{
    int at = 0;

    for (int k = 0; k < i; k++)
        at += s->counts[k];
    zbi_sb_add(sb, "[");
    for (int k = 0; k < s->counts[i]; k++) {
        if (k)
            zbi_sb_add(sb, ", ");
        zbi_sb_add_str(sb, m->layers[at + k].name);
    }
    zbi_sb_add(sb, "]");
}

static void predicted(struct strbuf *sb, const struct zb_plan *p, int pp)
{
    const struct zb_plan_split *b = &p->best;

    zbi_sb_add(sb, "  \"predicted\": {\"step\": ");
    num_or_null(sb, b->scheduled, b->step);
    zbi_sb_add(sb, ", \"cost\": ");
    num_or_null(sb, b->scheduled, b->cost);
    zbi_sb_add(sb, ", \"makespan\": ");
    num_or_null(sb, b->scheduled, b->makespan);
    zbi_sb_add(sb, ", \"bubble_ratio\": ");
    num_or_null(sb, b->scheduled, b->bubble_ratio);
    zbi_sb_add(sb, ", \"lower_bound\": ");
    zbi_sb_add_num(sb, p->lower_bound);
    zbi_sb_add(sb, ", \"gap\": ");
    num_or_null(sb, b->scheduled && p->lower_bound > 0,
                b->step / p->lower_bound - 1);
    zbi_sb_add(sb, ", \"bound_by\": ");
    if (!b->fits)
        zbi_sb_add(sb, "null");
    else if (p->binding_rank < 0)
        zbi_sb_add(sb, "\"time\"");
    else
        zbi_sb_addf(sb, "\"memory of rank %d\"", p->binding_rank);
    zbi_sb_add(sb, ",\n                \"ranks\": ");
    rank_list(sb, b->ranks, pp, 18);
    zbi_sb_add(sb, "},\n");
}

static void trainers(struct strbuf *sb, const struct zb_model *m,
                     const struct zb_plan_request *rq,
                     const struct zb_plan_split *b)
{
    char *layout = zb_plan_megatron_layout(m, b);

    zbi_sb_add(sb, "  \"megatron\": ");
    if (layout) {
        zbi_sb_add(sb, "{\"pipeline_model_parallel_layout\": ");
        zbi_sb_add_str(sb, layout);
        zbi_sb_add(sb, "},\n");
        free(layout);
    } else {
        zbi_sb_add(sb, "null,\n");
    }
    zbi_sb_add(sb, "  \"torchtitan\": {\"module_fqns_per_model_part\": [");
    for (int i = 0; i < b->nstages; i++) {
        zbi_sb_add(sb, i ? ",\n      " : "\n      ");
        stage_layers(sb, m, b, i);
    }
    zbi_sb_add(sb, "],\n    \"pipeline_parallel_schedule\": ");
    zbi_sb_add_str(sb, zb_plan_torchtitan_schedule(b));
    zbi_sb_addf(sb, ", \"num_pp_microbatches\": %d},\n", rq->microbatches);
}

char *zb_plan_format_json(const struct zb_model *m,
                          const struct zb_plan_request *rq,
                          const struct zb_plan *p)
{
    const struct zb_plan_split *b = &p->best;
    struct strbuf sb;
    double fbw[3];

    zbi_sb_init(&sb);
    zbi_sb_add(&sb, "{\n  \"format\": \"zbsched-plan\", \"version\": 1,\n"
                    "  \"model\": ");
    zbi_sb_add_str(&sb, m->name);
    zbi_sb_addf(&sb, ", \"pp\": %d, \"vpp\": %d, \"placement\": \"%s\", "
                "\"microbatches\": %d,\n", rq->pp, b->vpp,
                zb_placement_name(b->placement), rq->microbatches);
    zbi_sb_addf(&sb, "  \"schedule_name\": \"zb\", \"time_unit\": \"%s\", "
                "\"gpu_memory_bytes\": ", zb_time_unit_name(m->time_unit));
    zbi_sb_add_num(&sb, rq->gpu_mem);
    zbi_sb_add(&sb, ", \"layers_per_stage\": ");
    counts(&sb, b);
    zbi_sb_add(&sb, ",\n  \"stages\": [");
    for (int i = 0; i < b->nstages; i++) {
        struct zb_profile sh = { .pp = rq->pp, .vpp = b->vpp,
                                 .placement = b->placement };
        zbi_sb_addf(&sb, "%s{\"stage\": %d, \"rank\": %d, \"layers\": ",
                    i ? ",\n    " : "\n    ", i,
                    zb_profile_stage_rank(&sh, i));
        stage_layers(&sb, m, b, i);
        stage_fbw(m, b, i, fbw);
        zbi_sb_add(&sb, ", \"F\": ");
        zbi_sb_add_num(&sb, fbw[0]);
        zbi_sb_add(&sb, ", \"B\": ");
        zbi_sb_add_num(&sb, fbw[1]);
        zbi_sb_add(&sb, ", \"W\": ");
        zbi_sb_add_num(&sb, fbw[2]);
        zbi_sb_add(&sb, "}");
    }
    zbi_sb_addf(&sb, "],\n  \"fits\": %s,\n", b->fits ? "true" : "false");
    predicted(&sb, p, rq->pp);
    zbi_sb_add(&sb, "  \"baselines\": {\n");
    baseline(&sb, m, "even", &p->even, rq->pp, false);
    baseline(&sb, m, "minmax", &p->minmax, rq->pp, true);
    zbi_sb_add(&sb, "  },\n");
    trainers(&sb, m, rq, b);
    zbi_sb_add(&sb, "  \"schedule\": ");
    if (b->sched.ranks) {
        char *doc = zb_json_format_schedule(&b->sched);
        size_t n = strlen(doc);
        while (n > 0 && doc[n - 1] == '\n')
            doc[--n] = '\0';
        zbi_sb_add(&sb, doc);
        free(doc);
    } else {
        zbi_sb_add(&sb, "null");
    }
    zbi_sb_add(&sb, "\n}\n");
    return zbi_sb_detach(&sb);
}

/* ---- Reading a plan back for its picture --------------------------- */

static const cJSON *item(const cJSON *obj, const char *key)
{
    return cJSON_GetObjectItemCaseSensitive(obj, key);
}

/* obj[key] as a finite number >= 0, else an error naming where.key. */
static int get_num(const cJSON *obj, const char *where, const char *key,
                   double *out, struct zb_error *err)
{
    const cJSON *it = item(obj, key);

    if (!cJSON_IsNumber(it) || !isfinite(it->valuedouble) ||
        it->valuedouble < 0)
        return zb_error_set(err, ZB_EPARSE, "plan: %s%s%s must be a number "
                            ">= 0", where, *where ? "." : "", key);
    *out = it->valuedouble;
    return 0;
}

static int get_bool(const cJSON *obj, const char *where, const char *key,
                    bool *out, struct zb_error *err)
{
    const cJSON *it = item(obj, key);

    if (!cJSON_IsBool(it))
        return zb_error_set(err, ZB_EPARSE, "plan: %s%s%s must be true or "
                            "false", where, *where ? "." : "", key);
    *out = cJSON_IsTrue(it);
    return 0;
}

/* A list of exactly n entries at obj[key]. */
static const cJSON *get_list(const cJSON *obj, const char *where,
                             const char *key, int n, struct zb_error *err)
{
    const cJSON *it = item(obj, key);

    if (!cJSON_IsArray(it) || cJSON_GetArraySize(it) != n) {
        zb_error_set(err, ZB_EPARSE, "plan: %s%s%s must be a list of %d",
                     where, *where ? "." : "", key, n);
        return NULL;
    }
    return it;
}

static int read_ranks(const cJSON *obj, const char *where, int pp,
                      struct zb_memory_rank *ranks, struct zb_error *err)
{
    char w[64];
    const cJSON *list = get_list(obj, where, "ranks", pp, err), *it;
    int r = 0, rc;

    if (!list)
        return ZB_EPARSE;
    cJSON_ArrayForEach(it, list) {
        snprintf(w, sizeof(w), "%s.ranks[%d]", where, r);
        if ((rc = get_num(it, w, "memory_bytes", &ranks[r].total, err)) ||
            (rc = get_num(it, w, "activation_bytes", &ranks[r].activations,
                          err)) ||
            (rc = get_num(it, w, "model_state_bytes", &ranks[r].model_state,
                          err)) ||
            (rc = get_num(it, w, "buffer_bytes", &ranks[r].buffers, err)))
            return rc;
        r++;
    }
    return 0;
}

/* The step a split is compared by: "step", or in a plan written before
 * it existed "cost" (the same without data parallelism); null where the
 * split was never scheduled. */
static int read_step(const cJSON *obj, const char *where,
                     struct zb_plan_view_split *s, struct zb_error *err)
{
    const char *key = item(obj, "step") ? "step" : "cost";

    s->scheduled = cJSON_IsNumber(item(obj, key));
    return s->scheduled ? get_num(obj, where, key, &s->step, err) : 0;
}

static void view_alloc(struct zb_plan_view_split *s, int n, int pp)
{
    s->exists = true;
    s->nstages = n;
    s->counts = zb_xcalloc((size_t)n, sizeof(int));
    s->rank = zb_xcalloc((size_t)n, sizeof(int));
    s->f = zb_xcalloc((size_t)n, sizeof(double));
    s->b = zb_xcalloc((size_t)n, sizeof(double));
    s->w = zb_xcalloc((size_t)n, sizeof(double));
    s->ranks = zb_xcalloc((size_t)pp, sizeof(*s->ranks));
}

/* The plan's own split: stages[] and predicted. */
static int read_plan_split(const cJSON *doc, struct zb_plan_view *v,
                           struct zb_error *err)
{
    struct zb_plan_view_split *s = &v->plan;
    const cJSON *st = get_list(doc, "", "stages", v->pp * v->vpp, err), *it;
    const cJSON *pred = item(doc, "predicted");
    int i = 0, rc;
    char w[32];

    if (!st)
        return ZB_EPARSE;
    view_alloc(s, v->pp * v->vpp, v->pp);
    cJSON_ArrayForEach(it, st) {
        const cJSON *layers = item(it, "layers");
        snprintf(w, sizeof(w), "stages[%d]", i);
        if (json_get_int(it, "rank", &s->rank[i]) < 0 || s->rank[i] < 0 ||
            s->rank[i] >= v->pp)
            return zb_error_set(err, ZB_EPARSE, "plan: %s.rank must be a "
                                "rank from 0 to %d", w, v->pp - 1);
        if (!cJSON_IsArray(layers))
            return zb_error_set(err, ZB_EPARSE, "plan: %s.layers must be a "
                                "list", w);
        s->counts[i] = cJSON_GetArraySize(layers);
        if ((rc = get_num(it, w, "F", &s->f[i], err)) ||
            (rc = get_num(it, w, "B", &s->b[i], err)) ||
            (rc = get_num(it, w, "W", &s->w[i], err)))
            return rc;
        i++;
    }
    if ((rc = get_bool(doc, "", "fits", &s->fits, err)))
        return rc;
    if (!cJSON_IsObject(pred))
        return zb_error_set(err, ZB_EPARSE, "plan: predicted must be an "
                            "object");
    if ((rc = read_step(pred, "predicted", s, err)))
        return rc;
    return read_ranks(pred, "predicted", v->pp, s->ranks, err);
}

/* baselines.even (null: none in the plan's shape). */
static int read_even(const cJSON *doc, struct zb_plan_view *v,
                     struct zb_error *err)
{
    struct zb_plan_view_split *s = &v->even;
    const cJSON *bl = item(doc, "baselines"), *e, *lps, *times, *it;
    struct zb_profile sh = { .pp = v->pp, .vpp = v->vpp,
                             .placement = v->placement };
    const char *w = "baselines.even";
    int n = v->pp * v->vpp, i = 0, rc;

    if (!cJSON_IsObject(bl))
        return zb_error_set(err, ZB_EPARSE, "plan: baselines must be an "
                            "object");
    e = item(bl, "even");
    if (cJSON_IsNull(e))
        return 0;
    if (!cJSON_IsObject(e))
        return zb_error_set(err, ZB_EPARSE, "plan: %s must be an object or "
                            "null", w);
    if (!(lps = get_list(e, w, "layers_per_stage", n, err)) ||
        !(times = get_list(e, w, "stage_times", n, err)))
        return ZB_EPARSE;
    view_alloc(s, n, v->pp);
    cJSON_ArrayForEach(it, lps) {
        if (!cJSON_IsNumber(it) || it->valuedouble < 1 ||
            it->valuedouble > ZB_MODEL_MAX_LAYERS)
            return zb_error_set(err, ZB_EPARSE, "plan: %s.layers_per_stage"
                                "[%d] must be a layer count", w, i);
        s->counts[i] = (int)it->valuedouble;
        s->rank[i] = zb_profile_stage_rank(&sh, i);
        i++;
    }
    i = 0;
    cJSON_ArrayForEach(it, times) {
        double *dst[3] = { &s->f[i], &s->b[i], &s->w[i] };
        const cJSON *x;
        int k = 0;
        if (!cJSON_IsArray(it) || cJSON_GetArraySize(it) != 3)
            return zb_error_set(err, ZB_EPARSE, "plan: %s.stage_times[%d] "
                                "must be [F, B, W]", w, i);
        cJSON_ArrayForEach(x, it) {
            if (!cJSON_IsNumber(x) || !isfinite(x->valuedouble) ||
                x->valuedouble < 0)
                return zb_error_set(err, ZB_EPARSE, "plan: %s.stage_times"
                                    "[%d] must be [F, B, W], each >= 0", w,
                                    i);
            *dst[k++] = x->valuedouble;
        }
        i++;
    }
    if ((rc = get_bool(e, w, "fits", &s->fits, err)))
        return rc;
    if ((rc = read_step(e, w, s, err)))
        return rc;
    return read_ranks(e, w, v->pp, s->ranks, err);
}

int zb_plan_view_parse(const char *text, struct zb_plan_view *out,
                       struct zb_error *err)
{
    cJSON *doc = zbi_json_parse(text, err);
    const cJSON *it;
    int rc = ZB_EPARSE;

    memset(out, 0, sizeof(*out));
    if (!doc)
        return ZB_EPARSE;
    it = item(doc, "format");
    if (!cJSON_IsString(it) || strcmp(it->valuestring, "zbsched-plan")) {
        zb_error_set(err, ZB_EPARSE, "plan: format must be \"zbsched-plan\"");
        goto out;
    }
    it = item(doc, "model");
    out->model = zb_xstrdup(cJSON_IsString(it) ? it->valuestring : "model");
    if (json_get_int(doc, "pp", &out->pp) < 0 || out->pp < 1 ||
        out->pp > 4096 || json_get_int(doc, "vpp", &out->vpp) < 0 ||
        out->vpp < 1 || out->vpp > 64 ||
        json_get_int(doc, "microbatches", &out->microbatches) < 0 ||
        out->microbatches < 1) {
        zb_error_set(err, ZB_EPARSE, "plan: pp, vpp and microbatches must be "
                     "whole numbers >= 1 (pp at most 4096, vpp 64)");
        goto out;
    }
    it = item(doc, "placement");
    if (!cJSON_IsString(it) ||
        zb_placement_parse(it->valuestring, &out->placement) < 0 ||
        (out->placement == ZB_PLACEMENT_V && out->vpp != 2)) {
        zb_error_set(err, ZB_EPARSE, "plan: placement must be \"loop\", or "
                     "\"v\" with vpp 2");
        goto out;
    }
    it = item(doc, "time_unit");
    if (!cJSON_IsString(it) ||
        zb_time_unit_parse("plan: time_unit", it->valuestring,
                           &out->time_unit, err) < 0) {
        if (!cJSON_IsString(it))
            zb_error_set(err, ZB_EPARSE, "plan: time_unit must be us, ms "
                         "or s");
        goto out;
    }
    if (get_num(doc, "", "gpu_memory_bytes", &out->gpu_mem, err) < 0 ||
        read_plan_split(doc, out, err) < 0 || read_even(doc, out, err) < 0)
        goto out;
    rc = 0;
out:
    cJSON_Delete(doc);
    if (rc < 0)
        zb_plan_view_release(out);
    return rc;
}

/* The string test first: a large schedule file is not parsed twice. */
bool zb_plan_json_detect(const char *text)
{
    cJSON *doc = strstr(text, "\"zbsched-plan\"")
                     ? zbi_json_parse(text, NULL) : NULL;
    const cJSON *f = cJSON_GetObjectItemCaseSensitive(doc, "format");
    bool yes = cJSON_IsString(f) && !strcmp(f->valuestring, "zbsched-plan");

    cJSON_Delete(doc);
    return yes;
}
