/* json_measured.c - the "measured" object `zbsched profile` writes after a
 * profile (medians' spread and sample counts, where they came from) and
 * reads back for check-profile; docs/profiles.md has the layout. Like
 * json.c, the cJSON tree never leaves this file. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "json_util.h"
#include "measure_util.h"
#include "strbuf.h"
#include "zbsched/json.h"
#include "zbsched/xalloc.h"

static const char *const kinds[ZB_MEAS_KINDS] = { "F", "B", "W" };

static void add_spread(struct strbuf *sb, const struct zb_spread *s)
{
    zbi_sb_add(sb, "{\"median\": ");
    zbi_sb_add_num(sb, s->median);
    zbi_sb_add(sb, ", \"p10\": ");
    zbi_sb_add_num(sb, s->p10);
    zbi_sb_add(sb, ", \"p90\": ");
    zbi_sb_add_num(sb, s->p90);
    zbi_sb_addf(sb, ", \"samples\": %d}", s->samples);
}

char *zb_json_format_measured(const struct zb_profile *p,
                              const struct zb_measured *m)
{
    char *prof = zb_json_format_profile(p), *close = strrchr(prof, '}');
    size_t len;
    struct strbuf sb;

    /* The profile object ends in "}\n": the measured key goes before. */
    if (close)
        *close = '\0';
    len = strlen(prof);
    while (len > 0 && (prof[len - 1] == '\n' || prof[len - 1] == ' '))
        prof[--len] = '\0';
    zbi_sb_init(&sb);
    zbi_sb_add(&sb, prof);
    free(prof);
    zbi_sb_add(&sb, ",\n  \"measured\": {\"source\": ");
    zbi_sb_add_str(&sb, m->source);
    zbi_sb_add(&sb, ", \"clock\": ");
    zbi_sb_add_str(&sb, m->clock);
    zbi_sb_add(&sb, ", \"unit\": ");
    zbi_sb_add_str(&sb, m->unit);
    zbi_sb_addf(&sb, ", \"per\": \"%s\", \"fused_backward\": %s,\n",
                m->per_rank ? "rank" : "stage", m->fused ? "true" : "false");
    zbi_sb_add(&sb, "    \"comm\": ");
    add_spread(&sb, &m->comm);
    zbi_sb_add(&sb, ",\n    \"entries\": [");
    for (int i = 0; i < m->n; i++) {
        zbi_sb_addf(&sb, "%s\n      {", i ? "," : "");
        for (int k = 0; k < ZB_MEAS_KINDS; k++) {
            zbi_sb_addf(&sb, "%s\"%s\": ", k ? ", " : "", kinds[k]);
            add_spread(&sb, &m->t[i][k]);
        }
        zbi_sb_add(&sb, "}");
    }
    zbi_sb_add(&sb, "\n    ]}\n}\n");
    return zbi_sb_detach(&sb);
}

static int get_spread(const cJSON *obj, const char *path,
                      struct zb_spread *out, struct zb_error *err)
{
    static const char *const keys[3] = { "median", "p10", "p90" };
    double *dst[3] = { &out->median, &out->p10, &out->p90 };

    if (!cJSON_IsObject(obj))
        return zb_error_set(err, ZB_EPARSE, "%s must be an object", path);
    for (int k = 0; k < 3; k++) {
        const cJSON *it = cJSON_GetObjectItemCaseSensitive(obj, keys[k]);
        if (!cJSON_IsNumber(it) || !isfinite(it->valuedouble) ||
            it->valuedouble < 0)
            return zb_error_set(err, ZB_EPARSE, "%s.%s must be a number "
                                ">= 0", path, keys[k]);
        *dst[k] = it->valuedouble;
    }
    if (json_get_int(obj, "samples", &out->samples) < 0 || out->samples < 0)
        return zb_error_set(err, ZB_EPARSE, "%s.samples must be an integer "
                            ">= 0", path);
    return 0;
}

/* A name, when given, is a string (a mistyped one is an error, not
 * skipped). */
static int get_name(const cJSON *obj, const char *key, char *dst,
                    size_t size, struct zb_error *err)
{
    const cJSON *it = cJSON_GetObjectItemCaseSensitive(obj, key);

    if (it && !cJSON_IsString(it))
        return zb_error_set(err, ZB_EPARSE, "measured.%s must be a string",
                            key);
    if (it && strlen(it->valuestring) < size)
        strcpy(dst, it->valuestring);
    return 0;
}

int zb_json_parse_measured(const char *text, struct zb_measured *out,
                           struct zb_error *err)
{
    cJSON *root = zbi_json_parse(text, err);
    const cJSON *m, *entries, *e, *it;
    int i = 0, rc = 0;

    zb_measured_init(out);
    if (!root)
        return ZB_EPARSE;
    m = cJSON_GetObjectItemCaseSensitive(root, "measured");
    if (!m)
        goto out;
    entries = cJSON_GetObjectItemCaseSensitive(m, "entries");
    if (!cJSON_IsObject(m) || !cJSON_IsArray(entries)) {
        rc = zb_error_set(err, ZB_EPARSE, "measured must be an object with "
                          "an array \"entries\"");
        goto out;
    }
    if ((rc = get_name(m, "source", out->source, sizeof(out->source),
                       err)) < 0 ||
        (rc = get_name(m, "clock", out->clock, sizeof(out->clock), err)) < 0 ||
        (rc = get_name(m, "unit", out->unit, sizeof(out->unit), err)) < 0)
        goto out;
    it = cJSON_GetObjectItemCaseSensitive(m, "per");
    if (it && (!cJSON_IsString(it) || (strcmp(it->valuestring, "rank") &&
                                       strcmp(it->valuestring, "stage")))) {
        rc = zb_error_set(err, ZB_EPARSE, "measured.per must be \"rank\" "
                          "or \"stage\"");
        goto out;
    }
    out->per_rank = it && !strcmp(it->valuestring, "rank");
    it = cJSON_GetObjectItemCaseSensitive(m, "fused_backward");
    if (it && !cJSON_IsBool(it)) {
        rc = zb_error_set(err, ZB_EPARSE, "measured.fused_backward must be "
                          "true or false");
        goto out;
    }
    out->fused = cJSON_IsTrue(it);
    if ((it = cJSON_GetObjectItemCaseSensitive(m, "comm")) &&
        (rc = get_spread(it, "measured.comm", &out->comm, err)) < 0)
        goto out;
    zbi_measured_alloc(out, cJSON_GetArraySize(entries));
    cJSON_ArrayForEach(e, entries) {
        for (int k = 0; k < ZB_MEAS_KINDS; k++) {
            char path[64];
            snprintf(path, sizeof(path), "measured.entries[%d].%s", i,
                     kinds[k]);
            if ((rc = get_spread(cJSON_GetObjectItemCaseSensitive(e, kinds[k]),
                                 path, &out->t[i][k], err)) < 0)
                goto out;
        }
        i++;
    }
out:
    cJSON_Delete(root);
    if (rc < 0)
        out->n = 0;
    return rc;
}
