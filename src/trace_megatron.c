/* trace_megatron.c - a measured profile from Megatron-LM's logs: the
 * zero-bubble fork's per-rank "profiling conclusion" lines, or the
 * forward-compute / backward-compute timers printed with
 * --timing-log-option all; the shape from the arguments Megatron prints
 * at start-up (docs/profiles.md, "Megatron-LM"). */
#include <ctype.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "measure_util.h"
#include "zbsched/xalloc.h"

/* The arguments the shape comes from, as `  name ........ value`. */
struct margs {
    double pp, vpp, gbs, mbs, dp, world;
};

/* One "rank R profiling conclusion: [(f..), (b..), (w..), c, (fm..),
 * (bm..), (wm..)]" line: per chunk F, B, W in microseconds, comm, and
 * memory in MB (sail-sg's ScheduleTimers.joint_conclusion()). */
#define CONC_MAX_CHUNKS 8
struct conclusion {
    int rank, chunks;
    double f[CONC_MAX_CHUNKS], b[CONC_MAX_CHUNKS], w[CONC_MAX_CHUNKS];
    double fmem[CONC_MAX_CHUNKS], bmem[CONC_MAX_CHUNKS];
    double comm;
};

/* One per-rank timer value of a "times across ranks (ms):" block. */
struct timer_value {
    int block, rank;
    bool bwd;           /* backward-compute, else forward-compute */
    double ms;
};

struct mlog {
    struct margs a;
    struct conclusion *c;
    int nc, cc;
    struct timer_value *t;
    int nt, ct;
    int blocks;
    bool minmax;        /* a block without per-rank values was seen */
};

static void arg_line(const char *line, struct margs *a)
{
    static const struct { const char *name; size_t off; } keys[] = {
        { "pipeline_model_parallel_size", offsetof(struct margs, pp) },
        { "virtual_pipeline_model_parallel_size",
          offsetof(struct margs, vpp) },
        { "global_batch_size", offsetof(struct margs, gbs) },
        { "micro_batch_size", offsetof(struct margs, mbs) },
        { "data_parallel_size", offsetof(struct margs, dp) },
        { "world_size", offsetof(struct margs, world) },
    };
    char name[64];
    const char *v;

    while (*line == ' ')
        line++;
    if (sscanf(line, "%63s", name) != 1)
        return;
    v = line + strlen(name);
    if (*v != ' ' || v[1] != '.')
        return;
    while (*v == ' ' || *v == '.')
        v++;
    for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++)
        if (!strcmp(name, keys[i].name)) {
            double *dst = (double *)((char *)a + keys[i].off);
            char *end;
            double x = strtod(v, &end);
            if (end != v)
                *dst = x;
        }
}

/* Numbers of a bracketed list "(1, 2)" or "[1, 2]" at *s, at most max. */
static int number_list(const char **s, double *out, int max)
{
    const char *c = *s;
    char open = *c, close = open == '(' ? ')' : open == '[' ? ']' : 0;
    int n = 0;

    if (!close)
        return -1;
    c++;
    while (*c && *c != close) {
        char *end;
        double x;
        while (*c == ' ' || *c == ',')
            c++;
        if (*c == close)
            break;
        x = strtod(c, &end);
        if (end == c || n == max)
            return -1;
        out[n++] = x;
        c = end;
    }
    if (*c != close)
        return -1;
    *s = c + 1;
    return n;
}

static int conclusion_line(const char *line, const char *at, int lineno,
                           struct mlog *lg, struct zb_error *err)
{
    struct conclusion c = { 0 };
    double tmp[CONC_MAX_CHUNKS];
    double *lists[6] = { c.f, c.b, c.w, NULL, c.fmem, c.bmem };
    const char *s = strchr(at, ':') + 1, *r = strstr(line, "rank ");
    int n = -1;

    if (!r || sscanf(r, "rank %d", &c.rank) != 1 || c.rank < 0)
        return zb_error_set(err, ZB_EPARSE, "line %d: a profiling conclusion "
                            "without 'rank R'", lineno);
    while (*s == ' ')
        s++;
    if (*s++ != '[')
        goto bad;
    for (int k = 0; k < 7; k++) {
        while (*s == ' ' || *s == ',')
            s++;
        if (k == 3) {
            char *end;
            c.comm = strtod(s, &end);
            if (end == s)
                goto bad;
            s = end;
            continue;
        }
        n = number_list(&s, k < 6 ? lists[k] : tmp, CONC_MAX_CHUNKS);
        if (n < 1 || (k > 0 && n != c.chunks))
            goto bad;
        c.chunks = n;
    }
    zb_xgrow((void **)&lg->c, &lg->cc, lg->nc + 1, sizeof(*lg->c));
    lg->c[lg->nc++] = c;
    return 0;
bad:
    return zb_error_set(err, ZB_EPARSE, "line %d: a profiling conclusion is "
                        "read as [(F..), (B..), (W..), comm, (F mem..), "
                        "(B mem..), (W mem..)], one entry a chunk", lineno);
}

/* Split a text into lines in place (a copy of it). */
static int read_log(const char *text, struct mlog *lg, struct zb_error *err)
{
    char *copy = zb_xstrdup(text), *line = copy, *next;
    const char *timer = NULL;   /* inside a per-rank block: its timer */
    bool in_block = false;
    int lineno = 0, rc = 0;
    char tname[64];

    for (; line; line = next) {
        const char *at;
        int rank;
        double v;

        lineno++;
        if ((next = strchr(line, '\n')))
            *next++ = '\0';
        if ((at = strstr(line, "profiling conclusion:"))) {
            if ((rc = conclusion_line(line, at, lineno, lg, err)) < 0)
                break;
            continue;
        }
        if (strstr(line, "times across ranks (ms):")) {
            in_block = true;
            timer = NULL;
            lg->blocks++;
            continue;
        }
        if (strstr(line, "time across ranks (ms):")) {
            lg->minmax = true;  /* min and max only: no rank's own */
            continue;
        }
        if (in_block) {
            if (sscanf(line, " rank %d: %lf", &rank, &v) == 2) {
                if (timer && rank >= 0 && isfinite(v)) {
                    zb_xgrow((void **)&lg->t, &lg->ct, lg->nt + 1,
                             sizeof(*lg->t));
                    lg->t[lg->nt++] = (struct timer_value){
                        lg->blocks - 1, rank,
                        !strcmp(timer, "backward-compute"), v };
                }
                continue;
            }
            if (sscanf(line, " %63[^:]:", tname) == 1 && line[0] == ' ' &&
                line[strlen(line) - 1] == ':') {
                timer = !strcmp(tname, "forward-compute") ? "forward-compute"
                      : !strcmp(tname, "backward-compute") ? "backward-compute"
                      : NULL;
                continue;
            }
            in_block = false;
        }
        arg_line(line, &lg->a);
    }
    free(copy);
    return rc;
}

static int shape(const struct mlog *lg, const struct zb_measure_opts *o,
                 int *pp, int *vpp, int *m, int *world, struct zb_error *err)
{
    int max_rank = -1;

    for (int i = 0; i < lg->nc; i++)
        max_rank = lg->c[i].rank > max_rank ? lg->c[i].rank : max_rank;
    for (int i = 0; i < lg->nt; i++)
        max_rank = lg->t[i].rank > max_rank ? lg->t[i].rank : max_rank;
    *pp = o->pp > 0 ? o->pp : (int)lg->a.pp;
    if (*pp < 1)
        return zb_error_set(err, ZB_EINVAL, "the log does not print "
                            "pipeline_model_parallel_size: give --pp");
    *vpp = o->vpp > 0 ? o->vpp : lg->a.vpp >= 1 ? (int)lg->a.vpp
         : lg->nc ? lg->c[0].chunks : 1;
    *m = o->microbatches;
    if (*m < 1 && lg->a.gbs > 0 && lg->a.mbs > 0)
        *m = (int)llround(lg->a.gbs / (lg->a.mbs * fmax(lg->a.dp, 1)));
    if (*m < 1)
        return zb_error_set(err, ZB_EINVAL, "the log does not print "
                            "global_batch_size and micro_batch_size: give "
                            "--mb");
    if (*pp > 4096 || *vpp < 1 || *vpp > 64 ||
        3.0 * *pp * *vpp * *m > ZB_MAX_PASSES)
        return zb_error_set(err, ZB_EINVAL, "pp %d x vpp %d x %d "
                            "microbatches: more than a profile may hold",
                            *pp, *vpp, *m);
    *world = lg->a.world >= 1 && lg->a.world <= 1e7 ? (int)lg->a.world
           : max_rank + 1;
    if (*world < *pp || *world % *pp)
        return zb_error_set(err, ZB_EINVAL, "%d ranks do not split into "
                            "pipeline size %d", *world, *pp);
    return 0;
}

struct sample_set {
    double *v;
    int n, cap;
};

static void add(struct sample_set *s, double x)
{
    zb_xgrow((void **)&s->v, &s->cap, s->n + 1, sizeof(double));
    s->v[s->n++] = x;
}

/* Megatron's default rank order puts pipeline parallelism outermost
 * (tp-cp-ep-dp-pp): global rank g is pipeline rank g / (world / pp). */
static int from_conclusions(const struct mlog *lg, int pp, int vpp,
                            int world, struct zb_measured *out,
                            struct zb_error *err)
{
    int S = pp * vpp, rc = 0;
    struct sample_set *ss = zb_xcalloc((size_t)S * 5, sizeof(*ss));
    struct sample_set comm = { 0 };
    struct zb_profile shape = { .pp = pp, .vpp = vpp,
                                .placement = out->placement };
    double scale = zbi_unit_us(out->unit);

    for (int i = 0; i < lg->nc; i++) {
        const struct conclusion *c = &lg->c[i];
        int r = c->rank / (world / pp);
        if (r >= pp) {
            rc = zb_error_set(err, ZB_EINVAL, "rank %d's profiling conclusion: "
                              "the log has %d ranks (world_size)", c->rank,
                              world);
            goto out;
        }
        if (c->chunks != vpp) {
            rc = zb_error_set(err, ZB_EINVAL, "rank %d's profiling conclusion "
                              "has %d chunks, the pipeline %d", c->rank,
                              c->chunks, vpp);
            goto out;
        }
        for (int k = 0; k < vpp; k++) {
            struct sample_set *x = &ss[zb_profile_rank_stage(&shape, r, k) *
                                       5];
            add(&x[0], c->f[k]);
            add(&x[1], c->b[k]);
            add(&x[2], c->w[k]);
            add(&x[3], c->fmem[k]);
            add(&x[4], c->fmem[k] + c->bmem[k]);
        }
        add(&comm, c->comm);
    }
    zbi_measured_alloc(out, S);
    for (int s = 0; s < S; s++) {
        struct sample_set *x = &ss[s * 5];
        if (x[0].n == 0) {
            rc = zb_error_set(err, ZB_EINVAL, "stage %d (rank %d, chunk %d): "
                              "no profiling conclusion names it", s,
                              zb_profile_stage_rank(&shape, s),
                              zb_profile_stage_chunk(&shape, s));
            goto out;
        }
        for (int k = 0; k < 3; k++)
            out->t[s][k] = zbi_spread_of(x[k].v, x[k].n, scale);
        /* Memory: the largest stage's, in MB as the fork prints it. */
        out->m_b = fmax(out->m_b, zbi_spread_of(x[3].v, x[3].n, 1).median);
        out->m_w = fmax(out->m_w, zbi_spread_of(x[4].v, x[4].n, 1).median);
    }
    out->memory = out->m_b > 0;
    out->comm = zbi_spread_of(comm.v, comm.n, scale);
out:
    for (int i = 0; i < S * 5; i++)
        free(ss[i].v);
    free(ss);
    free(comm.v);
    return rc;
}

/* Per rank: the timers sum every microbatch and chunk of an iteration
 * (averaged over the log interval), one sample a block; backward-compute
 * is B and W together. */
static int from_timers(const struct mlog *lg, int pp, int m, int world,
                       struct zb_measured *out, struct zb_error *err)
{
    struct sample_set *ss = zb_xcalloc((size_t)pp * 2, sizeof(*ss));
    double scale = zbi_unit_us(out->unit) / 1e3;  /* timers are in ms */
    int rc = 0;

    for (int i = 0; i < lg->nt; i++) {
        int r = lg->t[i].rank / (world / pp);
        if (r < pp)
            add(&ss[r * 2 + lg->t[i].bwd], lg->t[i].ms / m);
    }
    zbi_measured_alloc(out, pp);
    out->per_rank = true;
    out->fused = true;
    for (int r = 0; r < pp; r++) {
        if (ss[r * 2].n == 0 || ss[r * 2 + 1].n == 0) {
            rc = zb_error_set(err, ZB_EINVAL, "rank %d (pipeline rank %d): no "
                              "%s timer in the log", r * (world / pp), r,
                              ss[r * 2].n ? "backward-compute"
                              : "forward-compute");
            goto out;
        }
        out->t[r][ZB_MEAS_F] = zbi_spread_of(ss[r * 2].v, ss[r * 2].n, scale);
        out->t[r][ZB_MEAS_B] = zbi_spread_of(ss[r * 2 + 1].v, ss[r * 2 + 1].n,
                                             scale);
    }
out:
    for (int i = 0; i < pp * 2; i++)
        free(ss[i].v);
    free(ss);
    return rc;
}

int zb_measure_megatron(const char *const *texts, int n,
                        const struct zb_measure_opts *o,
                        struct zb_measured *out, struct zb_error *err)
{
    struct mlog lg = { 0 };
    int pp = 0, vpp = 0, m = 0, world = 0, rc = 0;

    zb_measured_init(out);
    if (zbi_unit_us(o->unit) == 0)
        return zb_error_set(err, ZB_EINVAL, "unit must be us, ms or s, got "
                            "'%s'", o->unit);
    snprintf(out->unit, sizeof(out->unit), "%s", o->unit ? o->unit : "ms");
    for (int i = 0; i < n && rc == 0; i++) {
        rc = read_log(texts[i], &lg, err);
        if (rc < 0 && n > 1)
            zb_error_prefix(err, "log %d", i + 1);
    }
    if (rc < 0)
        goto out;
    if (lg.nc == 0 && lg.nt == 0) {
        rc = zb_error_set(err, ZB_EINVAL, lg.minmax
            ? "the timers were logged as min/max over ranks: per-rank times "
              "need --timing-log-option all (and --timing-log-level 2)"
            : "no 'profiling conclusion' line (zero-bubble fork) and no "
              "per-rank forward-compute/backward-compute timers "
              "(--timing-log-level 2 --timing-log-option all)");
        goto out;
    }
    if ((rc = shape(&lg, o, &pp, &vpp, &m, &world, err)) < 0)
        goto out;
    out->pp = pp;
    out->vpp = vpp;
    out->microbatches = m;
    out->placement = o->placement_set ? o->placement : ZB_PLACEMENT_LOOP;
    if (out->placement == ZB_PLACEMENT_V && vpp != 2) {
        rc = zb_error_set(err, ZB_EINVAL, "placement v needs 2 chunks a "
                          "rank, the log has %d", vpp);
        goto out;
    }
    snprintf(out->clock, sizeof(out->clock), "timers");
    rc = lg.nc ? from_conclusions(&lg, pp, vpp, world, out, err)
               : from_timers(&lg, pp, m, world, out, err);
    snprintf(out->source, sizeof(out->source), "megatron");
out:
    free(lg.c);
    free(lg.t);
    return rc;
}
