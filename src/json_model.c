/* json_model.c - the model JSON reader (model.h; docs/formats.md, "Model").
 *
 * Besides json.c and json_trace.c the only file that sees cJSON: the tree
 * is read into a struct zb_model and deleted here. Strict by design: a
 * misspelt key would otherwise silently leave a layer without memory. */
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "json_util.h"
#include "zbsched/model.h"
#include "zbsched/xalloc.h"

static const char *const kind_names[] = { "embedding", "layer", "mtp",
                                          "head", "other" };

const char *zb_layer_kind_name(enum zb_layer_kind k)
{
    return kind_names[k];
}

/* The keys obj may hold (NULL-terminated): any other key is an error
 * naming where (a repeated one zbi_json_parse() refused already). */
static int check_keys(const cJSON *obj, const char *where,
                      const char *const *allowed, struct zb_error *err)
{
    const cJSON *it;

    cJSON_ArrayForEach(it, obj) {
        bool known = false;
        for (int i = 0; allowed[i]; i++)
            known |= !strcmp(allowed[i], it->string);
        if (!known)
            return zb_error_set(err, ZB_EPARSE, "unknown key '%s%s%s'",
                                where, *where ? "." : "", it->string);
    }
    return 0;
}

/* A number >= 0 (a byte count may also be a size string: "1.9GiB"). */
static int get_value(const cJSON *obj, const char *where, const char *key,
                     bool size, bool required, double dflt, double *out,
                     struct zb_error *err)
{
    const cJSON *it = cJSON_GetObjectItemCaseSensitive(obj, key);
    char field[96];

    snprintf(field, sizeof(field), "%s.%s", where, key);
    if (!it) {
        if (required)
            return zb_error_set(err, ZB_EPARSE, "%s is missing", field);
        *out = dflt;
        return 0;
    }
    if (size && cJSON_IsString(it))
        return zb_units_parse_size(field, it->valuestring, out, err);
    if (!cJSON_IsNumber(it))
        return zb_error_set(err, ZB_EPARSE, "%s must be a number%s", field,
                            size ? " or a size (\"1.9GiB\")" : "");
    if (!isfinite(it->valuedouble) || it->valuedouble < 0)
        return zb_error_set(err, ZB_EPARSE, "%s must be >= 0, got %g", field,
                            it->valuedouble);
    *out = it->valuedouble;
    return 0;
}

static const char *get_string(const cJSON *obj, const char *key)
{
    const cJSON *it = cJSON_GetObjectItemCaseSensitive(obj, key);

    return cJSON_IsString(it) ? it->valuestring : NULL;
}

/* name with every "{i}" replaced by i. */
static char *expand_name(const char *name, int i)
{
    size_t n = strlen(name) + 1;
    char *out, *o;

    for (const char *p = strstr(name, "{i}"); p; p = strstr(p + 3, "{i}"))
        n += 12;
    o = out = zb_xmalloc(n);
    while (*name) {
        if (!strncmp(name, "{i}", 3)) {
            o += sprintf(o, "%d", i);
            name += 3;
        } else {
            *o++ = *name++;
        }
    }
    *o = '\0';
    return out;
}

static int parse_kind(const cJSON *l, const char *where,
                      enum zb_layer_kind *out, struct zb_error *err)
{
    const char *s = get_string(l, "kind");

    if (!s)
        return zb_error_set(err, ZB_EPARSE, "%s.kind is missing or not a "
                            "string", where);
    for (int k = 0; k <= ZB_LAYER_OTHER; k++)
        if (!strcmp(s, kind_names[k])) {
            *out = (enum zb_layer_kind)k;
            return 0;
        }
    return zb_error_set(err, ZB_EPARSE, "%s.kind must be embedding, layer, "
                        "mtp, head or other, got '%s'", where, s);
}

/* The entry's count: 1 without "count"; then the name may not hold {i}
 * (one name for one layer), and with it the name must. */
static int parse_count(const cJSON *l, const char *where, const char *name,
                       int *out, struct zb_error *err)
{
    const cJSON *c = cJSON_GetObjectItemCaseSensitive(l, "count");
    bool templ = strstr(name, "{i}") != NULL;

    *out = 1;
    if (!c) {
        if (templ)
            return zb_error_set(err, ZB_EPARSE, "%s.name '%s' has {i} but "
                                "the entry has no count", where, name);
        return 0;
    }
    if (!cJSON_IsNumber(c) || c->valuedouble != floor(c->valuedouble) ||
        c->valuedouble < 1 || c->valuedouble > ZB_MODEL_MAX_LAYERS)
        return zb_error_set(err, ZB_EPARSE, "%s.count must be an integer "
                            "from 1 to %d", where, ZB_MODEL_MAX_LAYERS);
    *out = (int)c->valuedouble;
    if (!templ)
        return zb_error_set(err, ZB_EPARSE, "%s.name '%s' needs {i} with "
                            "count %d (one name per layer)", where, name,
                            *out);
    return 0;
}

static int parse_layer(const cJSON *l, int idx, struct zb_model *m,
                       struct zb_error *err)
{
    static const char *const keys[] = { "name", "count", "kind", "F", "B",
        "W", "act_bytes", "act_w_bytes", "params", "out_bytes", NULL };
    char where[32];
    struct zb_layer t = { 0 };
    const char *name;
    int count, rc;

    snprintf(where, sizeof(where), "layers[%d]", idx);
    if (!cJSON_IsObject(l))
        return zb_error_set(err, ZB_EPARSE, "%s must be an object", where);
    if ((rc = check_keys(l, where, keys, err)) < 0)
        return rc;
    if (!(name = get_string(l, "name")) || !*name)
        return zb_error_set(err, ZB_EPARSE, "%s.name is missing or not a "
                            "non-empty string", where);
    if ((rc = parse_count(l, where, name, &count, err)) < 0 ||
        (rc = parse_kind(l, where, &t.kind, err)) < 0 ||
        (rc = get_value(l, where, "F", false, true, 0, &t.f, err)) < 0 ||
        (rc = get_value(l, where, "B", false, true, 0, &t.b, err)) < 0 ||
        (rc = get_value(l, where, "W", false, true, 0, &t.w, err)) < 0 ||
        (rc = get_value(l, where, "act_bytes", true, true, 0, &t.act_bytes,
                        err)) < 0 ||
        (rc = get_value(l, where, "act_w_bytes", true, true, 0,
                        &t.act_w_bytes, err)) < 0 ||
        (rc = get_value(l, where, "params", false, true, 0, &t.params,
                        err)) < 0 ||
        (rc = get_value(l, where, "out_bytes", true, true, 0, &t.out_bytes,
                        err)) < 0)
        return rc;
    if (t.act_w_bytes > t.act_bytes)
        return zb_error_set(err, ZB_EPARSE, "%s.act_w_bytes (%g) must be <= "
                            "act_bytes (%g): B keeps part of what F kept",
                            where, t.act_w_bytes, t.act_bytes);
    if (m->n + count > ZB_MODEL_MAX_LAYERS)
        return zb_error_set(err, ZB_EPARSE, "more than %d layers",
                            ZB_MODEL_MAX_LAYERS);
    for (int i = 0; i < count; i++) {
        m->layers[m->n] = t;
        m->layers[m->n++].name = expand_name(name, i);
    }
    return 0;
}

/* torchtitan and Megatron name modules by these: two layers of one name
 * would be one module there. */
static int check_unique(const struct zb_model *m, struct zb_error *err)
{
    for (int i = 1; i < m->n; i++)
        for (int j = 0; j < i; j++)
            if (!strcmp(m->layers[i].name, m->layers[j].name))
                return zb_error_set(err, ZB_EPARSE, "layer name '%s' is "
                                    "given twice (layers %d and %d of the "
                                    "expanded model)", m->layers[i].name, j,
                                    i);
    return 0;
}

static int parse_state(const cJSON *root, struct zb_model *m,
                       struct zb_error *err)
{
    static const char *const keys[] = { "weights", "grads", "optimizer",
                                        NULL };
    const cJSON *s = cJSON_GetObjectItemCaseSensitive(root, "state_bytes");
    int rc;

    m->bytes_weight = ZB_MODEL_BYTES_WEIGHT;
    m->bytes_grad = ZB_MODEL_BYTES_GRAD;
    m->bytes_optim = ZB_MODEL_BYTES_OPTIM;
    if (!s)
        return 0;
    if (!cJSON_IsObject(s))
        return zb_error_set(err, ZB_EPARSE, "state_bytes must be an object");
    if ((rc = check_keys(s, "state_bytes", keys, err)) < 0 ||
        (rc = get_value(s, "state_bytes", "weights", false, false,
                        m->bytes_weight, &m->bytes_weight, err)) < 0 ||
        (rc = get_value(s, "state_bytes", "grads", false, false,
                        m->bytes_grad, &m->bytes_grad, err)) < 0 ||
        (rc = get_value(s, "state_bytes", "optimizer", false, false,
                        m->bytes_optim, &m->bytes_optim, err)) < 0)
        return rc;
    return 0;
}

static int parse_header(const cJSON *root, struct zb_model *m,
                        struct zb_error *err)
{
    static const char *const keys[] = { "format", "version", "name",
        "time_unit", "layers", "state_bytes", NULL };
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(root, "version");
    const char *s;
    int rc;

    if (!cJSON_IsObject(root))
        return zb_error_set(err, ZB_EPARSE, "a model is a JSON object");
    if ((rc = check_keys(root, "", keys, err)) < 0)
        return rc;
    if (!(s = get_string(root, "format")) || strcmp(s, "zbsched-model"))
        return zb_error_set(err, ZB_EPARSE, "format must be "
                            "\"zbsched-model\"");
    if (v && (!cJSON_IsNumber(v) || v->valuedouble != 1))
        return zb_error_set(err, ZB_EPARSE, "version must be 1");
    if (cJSON_HasObjectItem(root, "name") && !get_string(root, "name"))
        return zb_error_set(err, ZB_EPARSE, "name must be a string");
    s = get_string(root, "name");
    m->name = zb_xstrdup(s ? s : "model");
    if (!(s = get_string(root, "time_unit")))
        return zb_error_set(err, ZB_EPARSE, "time_unit is missing or not a "
                            "string (us, ms or s)");
    return zb_time_unit_parse("time_unit", s, &m->time_unit, err);
}

int zb_model_parse(const char *text, struct zb_model *out,
                   struct zb_error *err)
{
    cJSON *root = zbi_json_parse(text, err);
    const cJSON *layers, *l;
    int rc, idx = 0;

    memset(out, 0, sizeof(*out));
    if (!root)
        return ZB_EPARSE;
    if ((rc = parse_header(root, out, err)) < 0 ||
        (rc = parse_state(root, out, err)) < 0)
        goto out;
    layers = cJSON_GetObjectItemCaseSensitive(root, "layers");
    if (!cJSON_IsArray(layers) || cJSON_GetArraySize(layers) == 0) {
        rc = zb_error_set(err, ZB_EPARSE, "layers must be a non-empty "
                          "array");
        goto out;
    }
    out->layers = zb_xcalloc(ZB_MODEL_MAX_LAYERS, sizeof(*out->layers));
    cJSON_ArrayForEach(l, layers)
        if ((rc = parse_layer(l, idx++, out, err)) < 0)
            goto out;
    rc = check_unique(out, err);
out:
    cJSON_Delete(root);
    if (rc < 0)
        zb_model_release(out);
    return rc;
}

void zb_model_release(struct zb_model *m)
{
    if (!m)
        return;
    for (int i = 0; i < m->n; i++)
        free(m->layers[i].name);
    free(m->layers);
    free(m->name);
    memset(m, 0, sizeof(*m));
}
