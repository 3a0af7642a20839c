/* layout.c - a split as trainers take it: Megatron's
 * --pipeline-model-parallel-layout string (and its parser, so a plan's
 * string can be checked against its stages) and torchtitan's schedule
 * name for the stages a CSV needs (docs/guide.md, "Running a zbsched CSV
 * in torchtitan"). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "split/split_int.h"
#include "zbsched/xalloc.h"

const char *zb_plan_torchtitan_schedule(const struct zb_plan_split *s)
{
    if (s->placement == ZB_PLACEMENT_V)
        return "ZBVZeroBubble";
    return s->vpp > 1 ? "Interleaved1F1B" : "1F1B";
}

/* The letters of one stage (layers first .. first+count-1): E, t, m, and
 * one L for the whole head group; 0 and "" where Megatron cannot say it
 * (an `other` layer, a head group cut by the stage's ends). */
static int stage_letters(const struct zb_model *m, int first, int count,
                         char *out)
{
    int n = 0;

    for (int i = first; i < first + count; i++) {
        switch (m->layers[i].kind) {
        case ZB_LAYER_EMBEDDING: out[n++] = 'E'; break;
        case ZB_LAYER_LAYER: out[n++] = 't'; break;
        case ZB_LAYER_MTP: out[n++] = 'm'; break;
        case ZB_LAYER_HEAD:
            if (i > first && m->layers[i - 1].kind == ZB_LAYER_HEAD)
                break;
            out[n++] = 'L';
            break;
        default:
            return -1;
        }
    }
    out[n] = '\0';
    return n;
}

/* Letters run-length coded: "Etttt" -> "Et*4". */
static void compress(const char *in, char *out)
{
    while (*in) {
        int run = 1;
        while (in[run] == in[0])
            run++;
        out += run > 1 ? sprintf(out, "%c*%d", in[0], run)
                       : sprintf(out, "%c", in[0]);
        in += run;
    }
    *out = '\0';
}

/* The model's E letters must start it and its one L group end it, as
 * Megatron builds the embedding first and the loss last. */
static bool ends_ok(const struct zb_model *m)
{
    int heads = 0;

    for (int i = 0; i < m->n; i++) {
        enum zb_layer_kind k = m->layers[i].kind;
        if (k == ZB_LAYER_EMBEDDING && i > 0 &&
            m->layers[i - 1].kind != ZB_LAYER_EMBEDDING)
            return false;
        if (k == ZB_LAYER_HEAD &&
            (i == 0 || m->layers[i - 1].kind != ZB_LAYER_HEAD))
            heads++;
        if (k != ZB_LAYER_HEAD && heads > 0)
            return false;
    }
    return heads <= 1;
}

char *zb_plan_megatron_layout(const struct zb_model *m,
                              const struct zb_plan_split *s)
{
    size_t cap = (size_t)m->n * 16 + (size_t)s->nstages * 24 + 16;
    char **stage = zb_xcalloc((size_t)s->nstages, sizeof(char *));
    char *out = zb_xmalloc(cap), *o = out, *tmp = zb_xmalloc(cap);
    int at = 0;
    bool ok = s->placement == ZB_PLACEMENT_LOOP && ends_ok(m);

    for (int i = 0; ok && i < s->nstages; i++) {
        /* A head group cut by a stage boundary is two L's: refused. */
        if (at > 0 && m->layers[at].kind == ZB_LAYER_HEAD &&
            m->layers[at - 1].kind == ZB_LAYER_HEAD)
            ok = false;
        if (stage_letters(m, at, s->counts[i], tmp) < 0)
            ok = false;
        stage[i] = zb_xmalloc(strlen(tmp) * 4 + 8);
        compress(tmp, stage[i]);
        at += s->counts[i];
    }
    /* Runs of equal stages as a group, "(t*4|)*5", but the last stage
     * stands alone (a group ends in |). */
    for (int i = 0; ok && i < s->nstages;) {
        int run = 1;
        while (i + run < s->nstages - 1 && !strcmp(stage[i + run], stage[i]))
            run++;
        if (i == s->nstages - 1)
            o += sprintf(o, "%s", stage[i]);
        else if (run > 1)
            o += sprintf(o, "(%s|)*%d%s", stage[i], run,
                         i + run < s->nstages ? "," : "");
        else
            o += sprintf(o, "%s|", stage[i]);
        i += run;
    }
    for (int i = 0; i < s->nstages; i++)
        free(stage[i]);
    free(stage);
    free(tmp);
    if (!ok) {
        free(out);
        return NULL;
    }
    return out;
}

/* Expand "(...)*n" groups (not nested, as Megatron's) and "x*n", and
 * drop the cosmetic commas: Megatron's reading. */
static char *expand(const char *in, size_t len, struct zb_error *err)
{
    size_t cap = len + 1, n = 0;
    char *out = zb_xmalloc(cap);
    const char *p = in, *stop = in + len;

    while (p < stop) {
        char *body, *num;
        const char *end;
        long times = 1;

        if (*p == ',') {
            p++;
            continue;
        }
        if (*p == '(') {
            if (!(end = memchr(p, ')', (size_t)(stop - p))) ||
                !(body = expand(p + 1, (size_t)(end - p - 1), err))) {
                free(out);
                if (!end)
                    zb_error_set(err, ZB_EINVAL, "layout: '(' without ')'");
                return NULL;
            }
            p = end + 1;
        } else {
            body = zb_xmalloc(2);
            body[0] = *p++;
            body[1] = '\0';
        }
        if (p < stop && *p == '*') {
            times = strtol(p + 1, &num, 10);
            if (num == p + 1 || times < 0 || times > 100000) {
                free(body);
                free(out);
                zb_error_set(err, ZB_EINVAL, "layout: '*' needs a count");
                return NULL;
            }
            p = num;
        }
        for (long t = 0; t < times; t++) {
            size_t blen = strlen(body);
            while (n + blen + 1 > cap) {
                cap *= 2;
                out = zb_xrealloc(out, cap);
            }
            memcpy(out + n, body, blen);
            n += blen;
        }
        free(body);
    }
    out[n] = '\0';
    return out;
}

int zb_plan_layout_parse(const struct zb_model *m, const char *layout,
                         int *counts, int max, int *nstages,
                         struct zb_error *err)
{
    char *x = expand(layout, strlen(layout), err);
    int at = 0, ns = 0, rc = 0;

    if (!x)
        return ZB_EINVAL;
    if (max < 1) {
        free(x);
        return zb_error_set(err, ZB_EINVAL, "layout: no room for stages");
    }
    counts[0] = 0;
    for (const char *p = x; ; p++) {
        enum zb_layer_kind want;
        if (!*p) {
            ns++;
            break;
        }
        if (*p == '|') {
            if (++ns >= max) {
                rc = zb_error_set(err, ZB_EINVAL, "layout: more than %d "
                                  "stages", max);
                goto out;
            }
            counts[ns] = 0;
            continue;
        }
        switch (*p) {
        case 'E': want = ZB_LAYER_EMBEDDING; break;
        case 't': want = ZB_LAYER_LAYER; break;
        case 'm': want = ZB_LAYER_MTP; break;
        case 'L': want = ZB_LAYER_HEAD; break;
        default:
            rc = zb_error_set(err, ZB_EINVAL, "layout: unknown letter '%c'",
                              *p);
            goto out;
        }
        if (at >= m->n || m->layers[at].kind != want) {
            rc = zb_error_set(err, ZB_EINVAL, "layout: '%c' where the model "
                              "has %s", *p, at < m->n ?
                              m->layers[at].name : "no more layers");
            goto out;
        }
        /* E and L stand for the whole run of their kind. */
        do {
            at++;
            counts[ns]++;
        } while ((want == ZB_LAYER_EMBEDDING || want == ZB_LAYER_HEAD) &&
                 at < m->n && m->layers[at].kind == want);
    }
    if (at != m->n)
        rc = zb_error_set(err, ZB_EINVAL, "layout: covers %d of the "
                          "model's %d layers", at, m->n);
    *nstages = ns;
out:
    free(x);
    return rc;
}
