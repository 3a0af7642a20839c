/* json.c - the profile and schedule JSON formats (docs/formats.md).
 *
 * With json_trace.c (traces and reports) the only files that include
 * cJSON (through json_util.h): trees are parsed into our structs and
 * deleted here. Output is written by hand (one op per line) so that large
 * schedules stay readable and diffable. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "json_util.h"
#include "strbuf.h"
#include "zbsched/json.h"
#include "zbsched/suggest.h"
#include "zbsched/units.h"
#include "zbsched/xalloc.h"
#include "zbsched/zero_measure.h"

/* ---- Parsing helpers -------------------------------------------------- */

/* The path of a's value below the node at `path` ("time.F",
 * "ranks[0].ops[3]"), into buf; a long path keeps its start. */
static void child_path(const char *path, const cJSON *node, const cJSON *a,
                       int index, char *buf, size_t size)
{
    if (cJSON_IsObject(node))
        snprintf(buf, size, "%s%s%s", path, *path ? "." : "", a->string);
    else
        snprintf(buf, size, "%s[%d]", path, index);
}

/* A key that appears twice in one object: cJSON keeps both and every
 * lookup finds the first, so a file could say two things and mean one.
 * The error names the key's path. Quadratic in an object's keys, which
 * stay few (an op has at most 8). */
static int check_repeated_keys(const cJSON *node, const char *path,
                               struct zb_error *err)
{
    char sub[160];
    int i = 0;

    for (const cJSON *a = node ? node->child : NULL; a; a = a->next, i++) {
        child_path(path, node, a, i, sub, sizeof(sub));
        if (cJSON_IsObject(node))
            for (const cJSON *b = node->child; b != a; b = b->next)
                if (!strcmp(a->string, b->string))
                    return zb_error_set(err, ZB_EPARSE,
                                        "key '%s' appears twice in one "
                                        "object", sub);
        int rc = check_repeated_keys(a, sub, err);
        if (rc < 0)
            return rc;
    }
    return 0;
}

/* Where the text stopped parsing, as "line L, column C", and whether it
 * stopped because it nests deeper than cJSON allows. */
static int report_malformed(const char *text, const char *end,
                            struct zb_error *err)
{
    int line = 1, col = 1, depth = 0, deepest = 0;
    bool in_string = false;

    for (const char *c = text; c < end && *c; c++) {
        if (in_string && *c == '\\' && c[1]) {
            c++;
            col += 2;
            continue;
        }
        if (*c == '"')
            in_string = !in_string;
        else if (!in_string && (*c == '[' || *c == '{'))
            deepest = ++depth > deepest ? depth : deepest;
        else if (!in_string && (*c == ']' || *c == '}'))
            depth--;
        if (*c == '\n') {
            line++;
            col = 1;
        } else {
            col++;
        }
    }
    if (deepest >= CJSON_NESTING_LIMIT)
        return zb_error_set(err, ZB_EPARSE, "JSON nested deeper than %d "
                            "levels (line %d)", CJSON_NESTING_LIMIT, line);
    return zb_error_set(err, ZB_EPARSE, "malformed JSON at line %d, column %d",
                        line, col);
}

cJSON *zbi_json_parse(const char *text, struct zb_error *err)
{
    const char *end = NULL;
    cJSON *root = cJSON_ParseWithOpts(text, &end, 1);

    if (!root) {
        report_malformed(text, end ? end : text, err);
        return NULL;
    }
    if (check_repeated_keys(root, "", err) < 0) {
        cJSON_Delete(root);
        return NULL;
    }
    return root;
}

static int want_number(const cJSON *item, const char *path, struct zb_opt *o,
                       struct zb_error *err)
{
    if (!cJSON_IsNumber(item))
        return zb_error_set(err, ZB_EPARSE, "%s must be a number", path);
    o->value = item->valuedouble;
    o->set = true;
    return 0;
}

struct key_rule {
    const char *key;
    int (*parse)(const cJSON *item, struct zb_profile_draft *d,
                 struct zb_error *err);
};

/* A key the reader does not know is an error naming the closest known
 * one: a typo skipped with a warning ran with a default in its place
 * ("time.Comm": comm 0; "memory.MB": M_B 1, so a limit of 40 meant 40
 * microbatches). names[0..n-1]. */
static int unknown_key(const char *path, const char *key,
                       const char *const *names, size_t n,
                       struct zb_error *err)
{
    const char *near = zb_suggest(key, names, n);

    const char *dot = *path ? "." : "";

    if (!near)
        return zb_error_set(err, ZB_EPARSE, "unknown key '%s%s%s'", path,
                            dot, key);
    return zb_error_set(err, ZB_EPARSE, "unknown key '%s%s%s' (did you mean "
                        "'%s%s%s'?)", path, dot, key, path, dot, near);
}

/* Every key of obj is one of names[0..n-1]. */
static int check_keys(const cJSON *obj, const char *path,
                      const char *const *names, size_t n,
                      struct zb_error *err)
{
    const cJSON *item;

    cJSON_ArrayForEach(item, obj) {
        size_t k = 0;
        while (k < n && strcmp(names[k], item->string))
            k++;
        if (k == n)
            return unknown_key(path, item->string, names, n, err);
    }
    return 0;
}

static int parse_object(const cJSON *obj, const char *path,
                        const struct key_rule *rules,
                        struct zb_profile_draft *d, struct zb_error *err)
{
    const char *names[32];
    size_t n = 0;
    const cJSON *item;

    if (!cJSON_IsObject(obj))
        return zb_error_set(err, ZB_EPARSE, "%s must be an object",
                            *path ? path : "the profile");
    while (rules[n].key && n < sizeof(names) / sizeof(names[0])) {
        names[n] = rules[n].key;
        n++;
    }
    cJSON_ArrayForEach(item, obj) {
        const struct key_rule *r = rules;
        int rc;
        while (r->key && strcmp(r->key, item->string))
            r++;
        if (!r->key)
            return unknown_key(path, item->string, names, n, err);
        if (r->parse && (rc = r->parse(item, d, err)) < 0)
            return rc;
    }
    return 0;
}

#define NUMBER_FIELD(fn, path, field)                                       \
    static int fn(const cJSON *it, struct zb_profile_draft *d,              \
                  struct zb_error *err)                                     \
    {                                                                       \
        return want_number(it, path, &d->field, err);                       \
    }

NUMBER_FIELD(p_pp, "pp", pp)
NUMBER_FIELD(p_vpp, "vpp", vpp)
NUMBER_FIELD(p_mb, "microbatches", microbatches)

/* A time: a number, or a time with a unit ("14.4ms") in the profile's
 * time_unit (read before every other key: profile_object()). */
static int want_time(const cJSON *it, const char *path, struct zb_opt *o,
                     const struct zb_profile_draft *d, struct zb_error *err)
{
    double v;

    /* A number in quotes is a number of the wrong kind. */
    if (!cJSON_IsString(it) || zb_units_parse_number(it->valuestring, &v) == 0)
        return want_number(it, path, o, err);
    if (zb_profile_draft_time(d, path, it->valuestring, &o->value, err) < 0)
        return ZB_EPARSE;
    o->set = true;
    return 0;
}

#define TIME_FIELD(fn, path, field)                                         \
    static int fn(const cJSON *it, struct zb_profile_draft *d,              \
                  struct zb_error *err)                                     \
    {                                                                       \
        return want_time(it, path, &d->field, d, err);                      \
    }

TIME_FIELD(p_f, "time.F", f)
TIME_FIELD(p_b, "time.B", b)
TIME_FIELD(p_w, "time.W", w)
TIME_FIELD(p_comm, "time.comm", comm)
TIME_FIELD(p_fb, "time.FB", fb)

/* A memory (memory.M_B, M_W, or a stage's own): a number, or a size
 * ("1.9GiB", held in GiB), *sized saying which. */
static int want_memory(const cJSON *it, const char *path, struct zb_opt *o,
                       bool *sized, struct zb_error *err)
{
    double v;

    if (cJSON_IsNumber(it)) {
        *o = (struct zb_opt){ it->valuedouble, true };
        *sized = false;
        return 0;
    }
    /* A string is a size: a number in quotes is of the wrong kind. */
    if (!cJSON_IsString(it) ||
        zb_units_parse_number(it->valuestring, &v) == 0 ||
        zb_profile_draft_memory(path, it->valuestring, &o->value, sized,
                                err) < 0)
        return zb_error_set(err, ZB_EPARSE, "%s must be a number or a size "
                            "(\"1.9GiB\": B, KB, MB, GB, TB, KiB, MiB, GiB, "
                            "TiB)", path);
    o->set = true;
    return 0;
}

static int p_mb_mem(const cJSON *it, struct zb_profile_draft *d,
                    struct zb_error *err)
{
    return want_memory(it, "memory.M_B", &d->m_b, &d->m_b_sized, err);
}

static int p_mw_mem(const cJSON *it, struct zb_profile_draft *d,
                    struct zb_error *err)
{
    return want_memory(it, "memory.M_W", &d->m_w, &d->m_w_sized, err);
}

static int p_time_unit(const cJSON *it, struct zb_profile_draft *d,
                       struct zb_error *err)
{
    if (!cJSON_IsString(it) ||
        zb_time_unit_parse("time_unit", it->valuestring, &d->time_unit,
                           err) < 0)
        return zb_error_set(err, ZB_EPARSE,
                            "time_unit must be \"us\", \"ms\" or \"s\"");
    d->time_unit_set = true;
    return 0;
}

static int p_placement(const cJSON *it, struct zb_profile_draft *d,
                       struct zb_error *err)
{
    if (!cJSON_IsString(it) ||
        zb_placement_parse(it->valuestring, &d->placement) < 0)
        return zb_error_set(err, ZB_EPARSE,
                            "placement must be \"loop\" or \"v\"");
    d->placement_set = true;
    return 0;
}

static int p_per(const cJSON *it, struct zb_profile_draft *d,
                 struct zb_error *err)
{
    if (!cJSON_IsString(it) || (strcmp(it->valuestring, "rank") &&
                                strcmp(it->valuestring, "chunk")))
        return zb_error_set(err, ZB_EPARSE,
                            "per must be \"rank\" or \"chunk\"");
    d->per_rank = !strcmp(it->valuestring, "rank");
    return 0;
}

static int p_time(const cJSON *it, struct zb_profile_draft *d,
                  struct zb_error *err)
{
    static const struct key_rule rules[] = {
        { "F", p_f }, { "B", p_b }, { "W", p_w }, { "comm", p_comm },
        { "FB", p_fb }, { NULL, NULL },
    };
    d->time_given = true;
    return parse_object(it, "time", rules, d, err);
}

static int p_stages(const cJSON *it, struct zb_profile_draft *d,
                    struct zb_error *err)
{
    static const char *const names[] = { "F", "B", "W", "comm", "M_B",
                                         "M_W" };
    const int nk = (int)(sizeof(names) / sizeof(names[0]));
    const cJSON *st;
    int i = 0;

    if (!cJSON_IsArray(it))
        return zb_error_set(err, ZB_EPARSE, "stages must be an array");
    d->n_stages = cJSON_GetArraySize(it);
    free(d->stages);        /* a repeated key: the last one counts */
    d->stages = zb_xcalloc((size_t)d->n_stages + 1, sizeof(*d->stages));
    cJSON_ArrayForEach(st, it) {
        struct zb_draft_stage *e = &d->stages[i];
        struct zb_opt *dst[] = { &e->f, &e->b, &e->w, &e->comm, &e->m_b,
                                 &e->m_w };
        const cJSON *field;
        char path[48];
        int rc;

        if (!cJSON_IsObject(st))
            return zb_error_set(err, ZB_EPARSE,
                                "stages[%d] must be an object", i);
        cJSON_ArrayForEach(field, st) {
            int k = 0;
            while (k < nk && strcmp(names[k], field->string))
                k++;
            if (k == nk) {
                snprintf(path, sizeof(path), "stages[%d]", i);
                return unknown_key(path, field->string, names, nk, err);
            }
            snprintf(path, sizeof(path), "stages[%d].%s", i, names[k]);
            rc = k < 4 ? want_time(field, path, dst[k], d, err)
                       : want_memory(field, path, dst[k],
                                           k == 4 ? &e->m_b_sized
                                                  : &e->m_w_sized, err);
            if (rc < 0)
                return rc;
        }
        i++;
    }
    return 0;
}

static int p_limit(const cJSON *it, struct zb_profile_draft *d,
                   struct zb_error *err)
{
    const cJSON *x;
    int i = 0;

    bool sized = false, plain = false;

    if (cJSON_IsNumber(it)) {
        d->limit_kind = ZB_LIMIT_VALUE;
        d->limit = it->valuedouble;
        d->limit_sized = false;
        return 0;
    }
    if (cJSON_IsString(it)) {
        /* "2p" or "80GiB" as on the command line; not a bare number */
        struct zb_error e2;
        double v;
        if (zb_units_parse_number(it->valuestring, &v) == 0 ||
            zb_profile_draft_set(d, "mem-limit", it->valuestring, &e2) < 0)
            return zb_error_set(err, ZB_EPARSE,
                                "memory.limit must be a number, a size "
                                "(\"80GiB\"), an array or \"Np\", got "
                                "\"%s\"", it->valuestring);
        return 0;
    }
    if (!cJSON_IsArray(it))
        return zb_error_set(err, ZB_EPARSE,
                            "memory.limit must be a number or an array");
    d->limit_kind = ZB_LIMIT_ARRAY;
    d->n_limits = cJSON_GetArraySize(it);
    free(d->limits);        /* a repeated key: the last one counts */
    d->limits = zb_xcalloc((size_t)d->n_limits + 1, sizeof(double));
    cJSON_ArrayForEach(x, it) {
        if (cJSON_IsNull(x)) {
            d->limits[i++] = INFINITY;      /* this rank is unlimited */
            continue;
        }
        if (cJSON_IsString(x)) {
            char what[32];
            snprintf(what, sizeof(what), "memory.limit[%d]", i);
            if (zb_units_parse_size(what, x->valuestring, &d->limits[i],
                                    err) < 0)
                return ZB_EPARSE;
            d->limits[i++] /= 1073741824.0;     /* held in GiB */
            sized = true;
            continue;
        }
        if (!cJSON_IsNumber(x))
            return zb_error_set(err, ZB_EPARSE,
                                "memory.limit[%d] must be a number, a size "
                                "or null", i);
        d->limits[i++] = x->valuedouble;
        plain = true;
    }
    if (sized && plain)
        return zb_error_set(err, ZB_EPARSE, "memory.limit mixes sizes and "
                            "plain numbers: give every entry a unit");
    d->limit_sized = sized;
    return 0;
}

static int p_memory(const cJSON *it, struct zb_profile_draft *d,
                    struct zb_error *err)
{
    static const struct key_rule rules[] = {
        { "M_B", p_mb_mem }, { "M_W", p_mw_mem }, { "limit", p_limit },
        { NULL, NULL },
    };
    return parse_object(it, "memory", rules, d, err);
}

/* ---- Data parallelism (dp.h): "dp", "zero", "data_parallel" ------------ */

static int want_double(const cJSON *item, const char *path, double *out,
                       struct zb_error *err)
{
    if (!cJSON_IsNumber(item))
        return zb_error_set(err, ZB_EPARSE, "%s must be a number", path);
    *out = item->valuedouble;
    return 0;
}

#define DP_FIELD(fn, path, field)                                           \
    static int fn(const cJSON *it, struct zb_profile_draft *d,              \
                  struct zb_error *err)                                     \
    {                                                                       \
        return want_double(it, path, &d->dp.field, err);                    \
    }

DP_FIELD(p_dp, "dp", degree)
DP_FIELD(p_zero, "zero", zero)
DP_FIELD(p_dp_lat, "data_parallel.latency", latency)

/* A number (bytes per time unit) or a bandwidth ("50GB/s"). */
static int p_dp_bw(const cJSON *it, struct zb_profile_draft *d,
                   struct zb_error *err)
{
    if (cJSON_IsString(it))
        return zb_dp_draft_set(&d->dp, "bandwidth", it->valuestring, err) < 0
            ? zb_error_set(err, ZB_EPARSE, "data_parallel.bandwidth must be "
                           "a number or a bandwidth (\"50GB/s\"), got \"%s\"",
                           it->valuestring)
            : 0;
    d->dp.bandwidth_per_s = NAN;
    return want_double(it, "data_parallel.bandwidth", &d->dp.bandwidth, err);
}

/* A number of bytes or a size ("1GiB"). */
static int p_dp_unit(const cJSON *it, struct zb_profile_draft *d,
                     struct zb_error *err)
{
    if (cJSON_IsString(it))
        return zb_units_parse_size("data_parallel.bytes_per_unit",
                                   it->valuestring, &d->dp.unit_bytes, err);
    return want_double(it, "data_parallel.bytes_per_unit", &d->dp.unit_bytes,
                       err);
}
DP_FIELD(p_dp_pre, "data_parallel.prefetch", prefetch)
DP_FIELD(p_dp_units, "data_parallel.units", units)
DP_FIELD(p_dp_ar, "data_parallel.all_reduce", all_reduce)
DP_FIELD(p_dp_rs, "data_parallel.reduce_scatter", reduce_scatter)
DP_FIELD(p_dp_ag, "data_parallel.all_gather", all_gather)
DP_FIELD(p_dp_bw8, "data_parallel.bytes.weights", bytes_weight)
DP_FIELD(p_dp_bg8, "data_parallel.bytes.grads", bytes_grad)
DP_FIELD(p_dp_bo8, "data_parallel.bytes.optimizer", bytes_optim)

static int p_dp_reduce(const cJSON *it, struct zb_profile_draft *d,
                       struct zb_error *err)
{
    if (!cJSON_IsString(it))
        return zb_error_set(err, ZB_EPARSE, "data_parallel.reduce must be "
                            "a string");
    return zb_dp_reduce_parse(it->valuestring, "data_parallel.reduce",
                              &d->dp.reduce, err);
}

/* One number for every stage, or an array of pp*vpp. */
static int p_dp_params(const cJSON *it, struct zb_profile_draft *d,
                       struct zb_error *err)
{
    const cJSON *x;
    int i = 0;

    if (cJSON_IsNumber(it))
        return want_double(it, "data_parallel.params", &d->dp.params, err);
    if (!cJSON_IsArray(it))
        return zb_error_set(err, ZB_EPARSE, "data_parallel.params must be a "
                            "number or an array");
    free(d->dp.params_list);
    d->dp.n_params = cJSON_GetArraySize(it);
    d->dp.params_list = zb_xcalloc((size_t)d->dp.n_params + 1,
                                   sizeof(double));
    cJSON_ArrayForEach(x, it) {
        char path[48];
        snprintf(path, sizeof(path), "data_parallel.params[%d]", i);
        if (want_double(x, path, &d->dp.params_list[i++], err) < 0)
            return ZB_EPARSE;
    }
    return 0;
}

static int p_dp_bytes(const cJSON *it, struct zb_profile_draft *d,
                      struct zb_error *err)
{
    static const struct key_rule rules[] = {
        { "weights", p_dp_bw8 }, { "grads", p_dp_bg8 },
        { "optimizer", p_dp_bo8 }, { NULL, NULL },
    };
    return parse_object(it, "data_parallel.bytes", rules, d, err);
}

static int p_data_parallel(const cJSON *it, struct zb_profile_draft *d,
                           struct zb_error *err)
{
    static const struct key_rule rules[] = {
        { "params", p_dp_params }, { "bandwidth", p_dp_bw },
        { "latency", p_dp_lat }, { "bytes_per_unit", p_dp_unit },
        { "prefetch", p_dp_pre }, { "bytes", p_dp_bytes },
        { "all_reduce", p_dp_ar }, { "reduce_scatter", p_dp_rs },
        { "all_gather", p_dp_ag }, { "reduce", p_dp_reduce },
        { "units", p_dp_units }, { NULL, NULL },
    };
    return parse_object(it, "data_parallel", rules, d, err);
}

static const struct key_rule profile_rules[] = {
    { "pp", p_pp },
    { "vpp", p_vpp },
    { "microbatches", p_mb },
    { "placement", p_placement },
    { "per", p_per },
    { "time_unit", p_time_unit },
    { "time", p_time },
    { "stages", p_stages },
    { "memory", p_memory },
    { "dp", p_dp },
    { "zero", p_zero },
    { "data_parallel", p_data_parallel },
    { "measured", NULL },   /* zbsched profile's spread: profile_import.h */
    { NULL, NULL },
};

/* A profile object: its time_unit first, which the times with a unit
 * are read into, then every key in order. */
static int profile_object(const cJSON *obj, const char *path,
                          struct zb_profile_draft *d, struct zb_error *err)
{
    const cJSON *unit = cJSON_IsObject(obj)
        ? cJSON_GetObjectItemCaseSensitive(obj, "time_unit") : NULL;

    if (unit && p_time_unit(unit, d, err) < 0)
        return ZB_EPARSE;
    return parse_object(obj, path, profile_rules, d, err);
}

int zb_json_parse_profile(const char *text, struct zb_profile_draft *d,
                          struct zb_error *err)
{
    cJSON *root = zbi_json_parse(text, err);
    int rc;

    if (!root)
        return ZB_EPARSE;
    rc = profile_object(root, "", d, err);
    cJSON_Delete(root);
    return rc;
}

/* ---- Schedule reader ---------------------------------------------------- */


static const char *const op_keys[] = {
    "op", "stage", "mb", "peer", "b_stage", "b_mb", "start", "end",
    "post_validation", "unit",
};

static int parse_op(const cJSON *o, int r, int i, struct zb_op *op,
                    struct zb_error *err)
{
    const cJSON *kind = cJSON_GetObjectItemCaseSensitive(o, "op");
    const cJSON *pv;
    char path[48];

    *op = (struct zb_op){ .stage = -1, .mb = -1, .peer = -1, .seq = -1,
                          .b_stage = -1, .b_mb = -1 };
    snprintf(path, sizeof(path), "ranks[%d].ops[%d]", r, i);
    if (!cJSON_IsObject(o))
        return zb_error_set(err, ZB_EPARSE, "%s must be an object", path);
    if (check_keys(o, path, op_keys, sizeof(op_keys) / sizeof(op_keys[0]),
                   err) < 0)
        return ZB_EPARSE;
    if (!cJSON_IsString(kind))
        return zb_error_set(err, ZB_EPARSE,
                            "rank %d op %d: missing \"op\"", r, i);
    if (zb_op_kind_parse(kind->valuestring, &op->kind) < 0)
        return zb_error_set(err, ZB_EPARSE, "rank %d op %d: unknown op '%s'",
                            r, i, kind->valuestring);
    if (op->kind == ZB_OP_STEP)
        return 0;
    if (zb_op_is_collective(op->kind)) {
        /* A collective names a stage, and a microbatch only when it
         * reduces one (reduce microbatch). */
        if (json_get_int(o, "stage", &op->stage) < 0 ||
            (cJSON_HasObjectItem(o, "mb") &&
             json_get_int(o, "mb", &op->mb) < 0))
            return zb_error_set(err, ZB_EPARSE, "rank %d op %d (%s): "
                                "\"stage\" (and \"mb\" if given) must be "
                                "integers", r, i, kind->valuestring);
        /* Its FSDP unit, with data_parallel.units > 1 (docs/zero.md). */
        if (cJSON_HasObjectItem(o, "unit") &&
            json_get_int(o, "unit", &op->unit) < 0)
            return zb_error_set(err, ZB_EPARSE, "rank %d op %d (%s): "
                                "\"unit\" must be an integer", r, i,
                                kind->valuestring);
    } else if (json_get_int(o, "stage", &op->stage) < 0 ||
               json_get_int(o, "mb", &op->mb) < 0)
        return zb_error_set(err, ZB_EPARSE,
                            "rank %d op %d (%s): \"stage\" and \"mb\" must be "
                            "integers", r, i, kind->valuestring);
    if (zb_op_is_comm(op->kind) && json_get_int(o, "peer", &op->peer) < 0)
        return zb_error_set(err, ZB_EPARSE,
                            "rank %d op %d (%s): \"peer\" must be an integer",
                            r, i, kind->valuestring);
    if (op->kind == ZB_OP_FB &&
        (json_get_int(o, "b_stage", &op->b_stage) < 0 ||
         json_get_int(o, "b_mb", &op->b_mb) < 0))
        return zb_error_set(err, ZB_EPARSE,
                            "rank %d op %d (FB): \"b_stage\" and \"b_mb\" "
                            "must be integers", r, i);
    /* Times are optional (the simulator sets them), numbers when given. */
    for (int k = 0; k < 2; k++) {
        pv = cJSON_GetObjectItemCaseSensitive(o, k ? "end" : "start");
        if (pv && !cJSON_IsNumber(pv))
            return zb_error_set(err, ZB_EPARSE, "%s: \"%s\" must be a "
                                "number", path, k ? "end" : "start");
        if (pv)
            *(k ? &op->end : &op->start) = pv->valuedouble;
    }
    return 0;
}

static int parse_ranks(const cJSON *ranks, struct zb_schedule *s,
                       struct zb_error *err)
{
    const cJSON *rk;
    int r = 0, rc;

    if (!cJSON_IsArray(ranks) || cJSON_GetArraySize(ranks) != s->profile.pp)
        return zb_error_set(err, ZB_EPARSE,
                            "\"ranks\" must be an array of pp = %d entries",
                            s->profile.pp);
    cJSON_ArrayForEach(rk, ranks) {
        const cJSON *ops = cJSON_GetObjectItemCaseSensitive(rk, "ops");
        const cJSON *o;
        int id, i = 0;

        if (json_get_int(rk, "rank", &id) < 0 || id != r)
            return zb_error_set(err, ZB_EPARSE,
                                "ranks[%d] must have \"rank\": %d", r, r);
        if (!cJSON_IsArray(ops))
            return zb_error_set(err, ZB_EPARSE,
                                "rank %d: \"ops\" must be an array", r);
        cJSON_ArrayForEach(o, ops) {
            struct zb_op op;
            const cJSON *pv;
            if ((rc = parse_op(o, r, i, &op, err)) < 0)
                return rc;
            pv = cJSON_GetObjectItemCaseSensitive(o, "post_validation");
            if (op.kind == ZB_OP_STEP && cJSON_IsTrue(pv))
                s->post_validation = true;
            zb_op_list_push(&s->ranks[r], &op);
            i++;
        }
        r++;
    }
    return 0;
}

/* The solver's record, every key of its type (a mistyped one was
 * skipped before: a file that says one thing and reads as another). */
static int parse_solver(const cJSON *so, struct zb_solver_info *info,
                        struct zb_error *err)
{
    static const char *const keys[] = {
        "status", "objective", "bound", "gap", "seconds", "nodes", "warning",
    };
    double *num[] = { NULL, &info->objective, &info->bound, &info->gap,
                      &info->seconds, NULL, NULL };
    const cJSON *x;

    if (!so)
        return 0;
    if (!cJSON_IsObject(so))
        return zb_error_set(err, ZB_EPARSE, "\"solver\" must be an object");
    if (check_keys(so, "solver", keys, 7, err) < 0)
        return ZB_EPARSE;
    info->present = true;
    for (int k = 0; k < 7; k++) {
        bool text = k == 0 || k == 6;
        if (!(x = cJSON_GetObjectItemCaseSensitive(so, keys[k])))
            continue;
        if (text ? !cJSON_IsString(x) : !cJSON_IsNumber(x))
            return zb_error_set(err, ZB_EPARSE, "solver.%s must be a %s",
                                keys[k], text ? "string" : "number");
        if (k == 0)
            snprintf(info->status, sizeof(info->status), "%s",
                     x->valuestring);
        else if (k == 6)
            snprintf(info->warning, sizeof(info->warning), "%s",
                     x->valuestring);
        else if (k == 5)
            info->nodes = (long)x->valuedouble;
        else
            *num[k] = x->valuedouble;
    }
    return 0;
}

static const char *const schedule_keys[] = {
    "format", "version", "schedule", "pp", "vpp", "microbatches",
    "placement", "stage_rank", "profile", "predicted", "solver", "ranks",
};

/* The schedule's own copies of its shape (pp, vpp, microbatches,
 * placement, stage_rank), where present, typed and equal to its
 * profile's: a reader that skipped a mistyped one would run a file that
 * contradicts itself. */
static int check_shape(const cJSON *root, const struct zb_profile *prof,
                       struct zb_error *err)
{
    static const char *const counts[] = { "pp", "vpp", "microbatches" };
    const int want[] = { prof->pp, prof->vpp, prof->microbatches };
    const cJSON *x;
    int v, i = 0;

    for (int k = 0; k < 3; k++) {
        if (!cJSON_HasObjectItem(root, counts[k]))
            continue;
        if (json_get_int(root, counts[k], &v) < 0)
            return zb_error_set(err, ZB_EPARSE, "\"%s\" must be an integer",
                                counts[k]);
        if (v != want[k])
            return zb_error_set(err, ZB_EPARSE, "\"%s\" is %d, the "
                                "profile's %d", counts[k], v, want[k]);
    }
    if ((x = cJSON_GetObjectItemCaseSensitive(root, "schedule")) &&
        !cJSON_IsString(x))
        return zb_error_set(err, ZB_EPARSE, "\"schedule\" must be a string");
    if ((x = cJSON_GetObjectItemCaseSensitive(root, "placement")) &&
        (!cJSON_IsString(x) ||
         strcmp(x->valuestring, zb_placement_name(prof->placement))))
        return zb_error_set(err, ZB_EPARSE, "\"placement\" must be the "
                            "profile's, \"%s\"",
                            zb_placement_name(prof->placement));
    if (!(x = cJSON_GetObjectItemCaseSensitive(root, "stage_rank")))
        return 0;
    if (!cJSON_IsArray(x) || cJSON_GetArraySize(x) != zb_profile_stages(prof))
        return zb_error_set(err, ZB_EPARSE, "\"stage_rank\" must be an "
                            "array of pp*vpp = %d entries",
                            zb_profile_stages(prof));
    for (const cJSON *e = x->child; e; e = e->next, i++)
        if (!cJSON_IsNumber(e) ||
            e->valuedouble != zb_profile_stage_rank(prof, i))
            return zb_error_set(err, ZB_EPARSE, "\"stage_rank\"[%d] must be "
                                "%d under placement %s", i,
                                zb_profile_stage_rank(prof, i),
                                zb_placement_name(prof->placement));
    return 0;
}

int zb_json_parse_schedule(const char *text, struct zb_schedule *out,
                           struct zb_error *err)
{
    struct zb_profile_draft d;
    struct zb_profile prof = { 0 };
    cJSON *root = zbi_json_parse(text, err);
    const cJSON *x, *name;
    int rc, v;

    memset(out, 0, sizeof(*out));
    if (!root)
        return ZB_EPARSE;
    zb_profile_draft_init(&d);
    x = cJSON_GetObjectItemCaseSensitive(root, "format");
    if (!cJSON_IsString(x) || strcmp(x->valuestring, "zbsched-schedule")) {
        rc = zb_error_set(err, ZB_EPARSE,
                          "not a schedule: \"format\" must be "
                          "\"zbsched-schedule\"");
        goto out;
    }
    if (json_get_int(root, "version", &v) < 0 || v != 1) {
        rc = zb_error_set(err, ZB_EPARSE,
                          "unsupported schedule version (this reader knows "
                          "version 1)");
        goto out;
    }
    if ((rc = check_keys(root, "", schedule_keys,
                         sizeof(schedule_keys) / sizeof(schedule_keys[0]),
                         err)) < 0)
        goto out;
    x = cJSON_GetObjectItemCaseSensitive(root, "profile");
    if (!x) {
        rc = zb_error_set(err, ZB_EPARSE, "schedule has no \"profile\"");
        goto out;
    }
    if ((rc = profile_object(x, "profile", &d, err)) < 0 ||
        (rc = zb_profile_build(&d, &prof, err)) < 0) {
        zb_error_prefix(err, "profile");
        goto out;
    }
    name = cJSON_GetObjectItemCaseSensitive(root, "schedule");
    zb_schedule_init(out, cJSON_IsString(name) ? name->valuestring : "custom",
                     &prof);
    if ((rc = check_shape(root, &prof, err)) < 0)
        goto out;
    if ((rc = parse_ranks(cJSON_GetObjectItemCaseSensitive(root, "ranks"), out,
                          err)) < 0)
        goto out;
    rc = parse_solver(cJSON_GetObjectItemCaseSensitive(root, "solver"),
                      &out->solver, err);
out:
    if (rc < 0)
        zb_schedule_release(out);
    zb_profile_release(&prof);
    zb_profile_draft_release(&d);
    cJSON_Delete(root);
    return rc;
}

/* ---- Writers ---------------------------------------------------------- */

static void add_key_num(struct strbuf *sb, const char *key, double v)
{
    zbi_sb_addf(sb, "\"%s\": ", key);
    zbi_sb_add_num(sb, v);
}

/* ",\n  "dp": 4, "zero": 2, "data_parallel": {...}" (dp >= 2, or params
 * at dp 1, so profiles without either are written as before). */
static void add_dp(struct strbuf *sb, const struct zb_profile *p,
                   const char *indent)
{
    const struct zb_dp *dp = &p->dp;
    const int n = zb_profile_stages(p);
    bool same = true;

    for (int s = 1; s < n; s++)
        if (dp->params[s] != dp->params[0])
            same = false;
    zbi_sb_addf(sb, ",\n%s  \"dp\": %d, \"zero\": %d,\n%s  \"data_parallel\": "
            "{\"params\": ", indent, dp->degree, dp->zero, indent);
    if (same) {
        zbi_sb_add_num(sb, dp->params[0]);
    } else {
        zbi_sb_addf(sb, "[");
        for (int s = 0; s < n; s++) {
            zbi_sb_addf(sb, s ? ", " : "");
            zbi_sb_add_num(sb, dp->params[s]);
        }
        zbi_sb_addf(sb, "]");
    }
    if (isfinite(dp->bandwidth)) {
        zbi_sb_addf(sb, ", ");
        add_key_num(sb, "bandwidth", dp->bandwidth);
    }
    zbi_sb_addf(sb, ", ");
    add_key_num(sb, "latency", dp->latency);
    zbi_sb_addf(sb, ",\n%s    ", indent);
    add_key_num(sb, "bytes_per_unit", dp->unit_bytes);
    zbi_sb_addf(sb, ", \"prefetch\": %d, \"bytes\": {", dp->prefetch);
    add_key_num(sb, "weights", dp->bytes_weight);
    zbi_sb_addf(sb, ", ");
    add_key_num(sb, "grads", dp->bytes_grad);
    zbi_sb_addf(sb, ", ");
    add_key_num(sb, "optimizer", dp->bytes_optim);
    zbi_sb_addf(sb, "}");
    if (!isnan(dp->all_reduce)) {
        zbi_sb_addf(sb, ", ");
        add_key_num(sb, "all_reduce", dp->all_reduce);
    }
    if (!isnan(dp->reduce_scatter)) {
        zbi_sb_addf(sb, ", ");
        add_key_num(sb, "reduce_scatter", dp->reduce_scatter);
    }
    if (!isnan(dp->all_gather)) {
        zbi_sb_addf(sb, ", ");
        add_key_num(sb, "all_gather", dp->all_gather);
    }
    if (dp->reduce != ZB_DP_REDUCE_STEP)     /* step: written as before */
        zbi_sb_addf(sb, ", \"reduce\": \"%s\"", zb_dp_reduce_name(dp->reduce));
    if (dp->units > 1)                       /* 1: written as before */
        zbi_sb_addf(sb, ", \"units\": %d", dp->units);
    zbi_sb_addf(sb, "}");
}

/* A memory as it was given: a number, or a size in GiB ("1.9GiB"),
 * which reads back to the same double (GiB is held as given). */
static void add_memory(struct strbuf *sb, const struct zb_profile *p,
                       const char *key, double v)
{
    if (key)
        zbi_sb_addf(sb, "\"%s\": ", key);
    if (p->mem_gib)
        zbi_sb_addf(sb, "\"");
    zbi_sb_add_num(sb, v);
    if (p->mem_gib)
        zbi_sb_addf(sb, "GiB\"");
}

static void add_profile(struct strbuf *sb, const struct zb_profile *p,
                        const char *indent)
{
    const int n = zb_profile_stages(p);
    bool uniform = !p->stage_mem && !p->stage_comm;

    for (int s = 1; s < n; s++)
        if (memcmp(&p->stage[s], &p->stage[0], sizeof(p->stage[0])))
            uniform = false;
    zbi_sb_addf(sb, "{\n%s  \"pp\": %d, \"vpp\": %d, \"microbatches\": %d, "
            "\"placement\": \"%s\",", indent, p->pp, p->vpp, p->microbatches,
            zb_placement_name(p->placement));
    /* Only when given, so that unitless profiles are written as before. */
    if (p->has_time_unit)
        zbi_sb_addf(sb, " \"time_unit\": \"%s\",",
                    zb_time_unit_name(p->time_unit));
    zbi_sb_addf(sb, "\n%s  \"time\": {", indent);
    add_key_num(sb, "F", p->stage[0].f);
    zbi_sb_addf(sb, ", ");
    add_key_num(sb, "B", p->stage[0].b);
    zbi_sb_addf(sb, ", ");
    add_key_num(sb, "W", p->stage[0].w);
    zbi_sb_addf(sb, ", ");
    add_key_num(sb, "comm", p->comm);
    if (p->fb > 0) {
        zbi_sb_addf(sb, ", ");
        add_key_num(sb, "FB", p->fb);
    }
    zbi_sb_addf(sb, "},\n");
    if (!uniform) {
        zbi_sb_addf(sb, "%s  \"stages\": [", indent);
        for (int s = 0; s < n; s++) {
            zbi_sb_addf(sb, "%s\n%s    {", s ? "," : "", indent);
            add_key_num(sb, "F", p->stage[s].f);
            zbi_sb_addf(sb, ", ");
            add_key_num(sb, "B", p->stage[s].b);
            zbi_sb_addf(sb, ", ");
            add_key_num(sb, "W", p->stage[s].w);
            if (p->stage_comm && s + 1 < n) {
                zbi_sb_addf(sb, ", ");
                add_key_num(sb, "comm", p->stage_comm[s]);
            }
            if (p->stage_mem) {
                zbi_sb_addf(sb, ", ");
                add_memory(sb, p, "M_B", p->stage_mem[s].m_b);
                zbi_sb_addf(sb, ", ");
                add_memory(sb, p, "M_W", p->stage_mem[s].m_w);
            }
            zbi_sb_addf(sb, "}");
        }
        zbi_sb_addf(sb, "\n%s  ],\n", indent);
    }
    zbi_sb_addf(sb, "%s  \"memory\": {", indent);
    add_memory(sb, p, "M_B", p->m_b);
    zbi_sb_addf(sb, ", ");
    add_memory(sb, p, "M_W", p->m_w);
    if (zb_profile_has_limit(p)) {
        /* The limits as given: a total one is read back as a total. */
        const double *lim = p->mem_total ? p->mem_total : p->mem_limit;
        bool same = true;
        for (int r = 1; r < p->pp; r++)
            if (lim[r] != lim[0])
                same = false;
        zbi_sb_addf(sb, ", \"limit\": ");
        if (same) {
            add_memory(sb, p, NULL, lim[0]);
        } else {
            zbi_sb_addf(sb, "[");
            for (int r = 0; r < p->pp; r++) {
                zbi_sb_addf(sb, r ? ", " : "");
                if (isfinite(lim[r]))
                    add_memory(sb, p, NULL, lim[r]);
                else
                    zbi_sb_addf(sb, "null");    /* unlimited rank */
            }
            zbi_sb_addf(sb, "]");
        }
    }
    zbi_sb_addf(sb, "}");
    if (zb_dp_active(p) || p->dp.params)
        add_dp(sb, p, indent);
    zbi_sb_addf(sb, "\n%s}", indent);
}

char *zb_json_format_profile(const struct zb_profile *p)
{
    struct strbuf sb;
    zbi_sb_init(&sb);
    add_profile(&sb, p, "");
    zbi_sb_addf(&sb, "\n");
    return zbi_sb_detach(&sb);
}

static void add_predicted(struct strbuf *sb, const struct zb_schedule *s)
{
    const struct zb_measures *m = &s->predicted;

    zbi_sb_addf(sb, "  \"predicted\": {");
    add_key_num(sb, "cost", m->cost);
    zbi_sb_addf(sb, ", ");
    add_key_num(sb, "makespan", m->makespan);
    zbi_sb_addf(sb, ", ");
    add_key_num(sb, "bubble_ratio", m->bubble_ratio);
    zbi_sb_addf(sb, ", ");
    add_key_num(sb, "sync_bubble_ratio", m->sync_bubble_ratio);
    zbi_sb_addf(sb, ",\n    ");
    add_key_num(sb, "lower_bound", m->lower_bound);
    zbi_sb_addf(sb, ", ");
    add_key_num(sb, "gap", m->lower_bound > 0
                               ? m->cost / m->lower_bound - 1 : 0);
    zbi_sb_addf(sb, ", ");
    add_key_num(sb, "makespan_lower_bound", m->makespan_bound);
    zbi_sb_addf(sb, ", \"fits_memory\": %s,",
                m->fits_memory ? "true" : "false");
    if (zb_dp_active(&s->profile)) {
        zbi_sb_addf(sb, " ");
        add_key_num(sb, "step_time", m->step_time);
        zbi_sb_addf(sb, ",");
    }
    zbi_sb_addf(sb, "\n    \"ranks\": [");
    for (int r = 0; r < s->profile.pp; r++) {
        zbi_sb_addf(sb, "%s\n      {", r ? "," : "");
        add_key_num(sb, "busy", m->ranks[r].busy);
        zbi_sb_addf(sb, ", ");
        add_key_num(sb, "span", m->ranks[r].span);
        zbi_sb_addf(sb, ", ");
        add_key_num(sb, "peak_memory", m->ranks[r].peak_memory);
        if (zb_dp_active(&s->profile)) {
            zbi_sb_addf(sb, ", ");
            add_key_num(sb, "total_memory", m->ranks[r].total_memory);
        }
        zbi_sb_addf(sb, "}");
    }
    zbi_sb_addf(sb, "\n    ]\n  },\n");
}

/* One op, with zbi_sb_add() rather than zbi_sb_addf(): a schedule at
 * p 64, m 1024 has about a million, and reading a format per field took
 * 0.15 s there. */
static void add_op(struct strbuf *sb, const struct zb_schedule *s,
                   const struct zb_op *op)
{
    zbi_sb_add(sb, "{\"op\": \"");
    zbi_sb_add(sb, zb_op_kind_name(op->kind));
    zbi_sb_add(sb, "\"");
    if (op->kind == ZB_OP_STEP) {
        if (s->post_validation)
            zbi_sb_add(sb, ", \"post_validation\": true");
        zbi_sb_add(sb, "}");
        return;
    }
    zbi_sb_add(sb, ", \"stage\": ");
    zbi_sb_add_int(sb, op->stage);
    if (!zb_op_is_collective(op->kind) || op->mb >= 0) {
        zbi_sb_add(sb, ", \"mb\": ");
        zbi_sb_add_int(sb, op->mb);
    }
    if (zb_zero_unit_op(&s->profile, op)) {
        zbi_sb_add(sb, ", \"unit\": ");
        zbi_sb_add_int(sb, op->unit);
    }
    if (op->kind == ZB_OP_FB) {
        zbi_sb_add(sb, ", \"b_stage\": ");
        zbi_sb_add_int(sb, op->b_stage);
        zbi_sb_add(sb, ", \"b_mb\": ");
        zbi_sb_add_int(sb, op->b_mb);
    }
    if (zb_op_is_comm(op->kind)) {
        zbi_sb_add(sb, ", \"peer\": ");
        zbi_sb_add_int(sb, op->peer);
    } else {
        zbi_sb_add(sb, ", \"start\": ");
        zbi_sb_add_num(sb, op->start);
        zbi_sb_add(sb, ", \"end\": ");
        zbi_sb_add_num(sb, op->end);
    }
    zbi_sb_add(sb, "}");
}

char *zb_json_format_schedule(const struct zb_schedule *s)
{
    const struct zb_profile *p = &s->profile;
    struct strbuf sb;

    zbi_sb_init(&sb);
    zbi_sb_addf(&sb, "{\n  \"format\": \"zbsched-schedule\", \"version\": 1,\n"
            "  \"schedule\": ");
    zbi_sb_add_str(&sb, s->name);
    zbi_sb_addf(&sb, ", \"pp\": %d, \"vpp\": %d, \"microbatches\": %d,\n  "
            "\"placement\": \"%s\", \"stage_rank\": [", p->pp, p->vpp,
            p->microbatches, zb_placement_name(p->placement));
    for (int st = 0; st < zb_profile_stages(p); st++)
        zbi_sb_addf(&sb, "%s%d", st ? ", " : "", zb_profile_stage_rank(p, st));
    zbi_sb_addf(&sb, "],\n  \"profile\": ");
    add_profile(&sb, p, "  ");
    zbi_sb_addf(&sb, ",\n");
    add_predicted(&sb, s);
    if (s->solver.present) {
        zbi_sb_addf(&sb, "  \"solver\": {\"status\": ");
        zbi_sb_add_str(&sb, s->solver.status);
        zbi_sb_addf(&sb, ", ");
        add_key_num(&sb, "objective", s->solver.objective);
        zbi_sb_addf(&sb, ", ");
        add_key_num(&sb, "bound", s->solver.bound);
        zbi_sb_addf(&sb, ", ");
        add_key_num(&sb, "gap", s->solver.gap);
        zbi_sb_addf(&sb, ", ");
        add_key_num(&sb, "seconds", s->solver.seconds);
        zbi_sb_addf(&sb, ", \"nodes\": %ld", s->solver.nodes);
        if (s->solver.warning[0]) {
            zbi_sb_addf(&sb, ", \"warning\": ");
            zbi_sb_add_str(&sb, s->solver.warning);
        }
        zbi_sb_addf(&sb, "},\n");
    }
    zbi_sb_addf(&sb, "  \"ranks\": [");
    for (int r = 0; r < p->pp; r++) {
        zbi_sb_addf(&sb, "%s\n    {\"rank\": %d, \"ops\": [", r ? "," : "", r);
        for (int i = 0; i < s->ranks[r].n; i++) {
            zbi_sb_add(&sb, i ? ",\n      " : "\n      ");
            add_op(&sb, s, &s->ranks[r].ops[i]);
        }
        zbi_sb_addf(&sb, "\n    ]}");
    }
    zbi_sb_addf(&sb, "\n  ]\n}\n");
    return zbi_sb_detach(&sb);
}
