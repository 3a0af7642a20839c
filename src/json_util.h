/* json_util.h - small cJSON readers shared by the files that parse JSON
 * (json.c, json_trace.c); nothing else includes cJSON. */
#ifndef ZBSCHED_JSON_UTIL_H
#define ZBSCHED_JSON_UTIL_H

#include <cjson/cJSON.h>
#include <math.h>
#include "zbsched/error.h"

/* The one door every JSON input comes through (json.c): the tree of a
 * whole document, or NULL with err saying where it is malformed, that it
 * nests too deeply, or which key one of its objects repeats. */
cJSON *zbi_json_parse(const char *text, struct zb_error *err);

/* obj[key] as an int: a whole number of magnitude at most 1e9, else -1. */
static inline int json_get_int(const cJSON *obj, const char *key, int *out)
{
    const cJSON *it = cJSON_GetObjectItemCaseSensitive(obj, key);

    if (!cJSON_IsNumber(it) || it->valuedouble != floor(it->valuedouble) ||
        fabs(it->valuedouble) > 1e9)
        return -1;
    *out = (int)it->valuedouble;
    return 0;
}

#endif
