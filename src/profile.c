/* profile.c - profile drafts (user input) and their checked form.
 *
 * zb_profile_build() is the only place that validates profile values, so
 * JSON files and flags get the same one-line errors naming the field. */
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "profile_int.h"
#include "zbsched/op.h"
#include "zbsched/xalloc.h"

/* Guards against allocations no real pipeline needs (and against typos
 * such as --mb 1e9): checked with a clear message instead of an abort.
 * The pass cap is profile.h's ZB_MAX_PASSES. */
#define MAX_RANKS 4096
#define MAX_VPP 64

void zb_profile_draft_init(struct zb_profile_draft *d)
{
    memset(d, 0, sizeof(*d));
    d->limit_kind = ZB_LIMIT_NONE;
    zb_dp_draft_init(&d->dp);
}

void zb_profile_draft_release(struct zb_profile_draft *d)
{
    if (!d)
        return;
    free(d->stages);
    free(d->limits);
    zb_dp_draft_release(&d->dp);
    d->stages = NULL;
    d->limits = NULL;
}

void zb_profile_draft_warn(struct zb_profile_draft *d, const char *fmt, ...)
{
    size_t len = strlen(d->warnings);
    va_list ap;

    if (len && len + 2 < sizeof(d->warnings)) {
        strcpy(d->warnings + len, "; ");
        len += 2;
    }
    va_start(ap, fmt);
    vsnprintf(d->warnings + len, sizeof(d->warnings) - len, fmt, ap);
    va_end(ap);
}

#define GIB 1073741824.0

int zb_profile_draft_memory(const char *what, const char *text, double *v,
                            bool *sized, struct zb_error *err)
{
    if (zb_units_parse_number(text, v) == 0) {
        *sized = false;
        return 0;
    }
    if (zb_units_parse_size(what, text, v, err) < 0)
        return ZB_EINVAL;
    *v /= GIB;
    *sized = true;
    return 0;
}

int zb_profile_draft_time(const struct zb_profile_draft *d, const char *what,
                          const char *text, double *out,
                          struct zb_error *err)
{
    double sec;
    char num[32];

    if (zb_units_parse_number(text, out) == 0)
        return 0;
    if (zb_units_parse_time(what, text, ZB_TIME_S, &sec, err) < 0)
        return zb_error_set(err, ZB_EINVAL, "%s: '%s' is not a number or a "
                            "time (14.4ms: us, ms or s)", what, text);
    if (!d->time_unit_set)
        return zb_error_set(err, ZB_EINVAL, "%s: '%s' has a unit: give the "
                            "profile's time_unit (--time-unit us|ms|s)",
                            what, text);
    /* Through seconds, 1ms is 1000.0000000000001 us: 15 digits give the
     * decimal back (no typed time has more). */
    snprintf(num, sizeof(num), "%.15g",
             sec / zb_time_unit_seconds(d->time_unit));
    *out = strtod(num, NULL);
    return 0;
}

static void set_opt(struct zb_opt *o, double v)
{
    o->value = v;
    o->set = true;
}

void zb_profile_draft_set_shape(struct zb_profile_draft *d, int pp, int vpp,
                                int microbatches,
                                enum zb_placement placement)
{
    set_opt(&d->pp, pp);
    set_opt(&d->vpp, vpp);
    set_opt(&d->microbatches, microbatches);
    d->placement = placement;
    d->placement_set = true;
}

int zb_profile_draft_set(struct zb_profile_draft *d, const char *name,
                         const char *value, struct zb_error *err)
{
    static const struct {
        const char *flag;
        size_t offset;
    } numeric[] = {
        { "pp", offsetof(struct zb_profile_draft, pp) },
        { "vpp", offsetof(struct zb_profile_draft, vpp) },
        { "mb", offsetof(struct zb_profile_draft, microbatches) },
        { "f", offsetof(struct zb_profile_draft, f) },
        { "b", offsetof(struct zb_profile_draft, b) },
        { "w", offsetof(struct zb_profile_draft, w) },
        { "comm", offsetof(struct zb_profile_draft, comm) },
        { "fb", offsetof(struct zb_profile_draft, fb) },
    };
    double v;

    if (!strcmp(name, "placement"))
        return zb_placement_parse(value, &d->placement) < 0
            ? zb_error_set(err, ZB_EINVAL,
                           "--placement must be 'loop' or 'v', got '%s'",
                           value)
            : (d->placement_set = true, 0);
    if (!strcmp(name, "per")) {
        if (strcmp(value, "rank") && strcmp(value, "chunk"))
            return zb_error_set(err, ZB_EINVAL,
                                "--per must be 'rank' or 'chunk', got '%s'",
                                value);
        d->per_rank = !strcmp(value, "rank");
        return 0;
    }
    if (!strcmp(name, "time-unit")) {
        enum zb_time_unit u;
        if (zb_time_unit_parse("--time-unit", value, &u, err) < 0)
            return ZB_EINVAL;
        /* Relabelling the file's times would change every one of them. */
        if (d->time_unit_set && u != d->time_unit)
            return zb_error_set(err, ZB_EINVAL, "--time-unit %s, but the "
                                "profile says time_unit %s", value,
                                zb_time_unit_name(d->time_unit));
        d->time_unit = u;
        d->time_unit_set = true;
        return 0;
    }
    if (!strcmp(name, "mem-limit")) {
        size_t n = strlen(value);
        if (n > 1 && value[n - 1] == 'p') {
            char *num = zb_xstrdup(value);
            int rc;
            num[n - 1] = '\0';
            rc = zb_units_parse_number(num, &v);
            free(num);
            if (rc < 0)
                goto bad;
            d->limit_kind = ZB_LIMIT_TIMES_P;
            d->limit_sized = false;
        } else {
            if (zb_profile_draft_memory("--mem-limit", value, &v,
                                        &d->limit_sized, err) < 0)
                goto bad;
            d->limit_kind = ZB_LIMIT_VALUE;
        }
        d->limit = v;
        return 0;
    }
    if (!strcmp(name, "m-b") || !strcmp(name, "m-w")) {
        bool m_b = !strcmp(name, "m-b");
        if (zb_profile_draft_memory(m_b ? "--m-b" : "--m-w", value, &v,
                                    m_b ? &d->m_b_sized : &d->m_w_sized,
                                    err) < 0)
            return ZB_EINVAL;
        set_opt(m_b ? &d->m_b : &d->m_w, v);
        d->flag_memory[!m_b] = true;
        return 0;
    }
    for (size_t i = 0; i < sizeof(numeric) / sizeof(numeric[0]); i++) {
        char what[16];
        if (strcmp(name, numeric[i].flag))
            continue;
        snprintf(what, sizeof(what), "--%s", name);
        /* The counts (pp, vpp, mb) are plain; the times may have a unit. */
        if (i < 3 ? zb_units_parse_number(value, &v) < 0
                  : zb_profile_draft_time(d, what, value, &v, err) < 0)
            return i < 3 ? zb_error_set(err, ZB_EINVAL, "--%s: '%s' is not "
                                        "a number", name, value)
                         : ZB_EINVAL;
        set_opt((struct zb_opt *)((char *)d + numeric[i].offset), v);
        if (i >= 3 && i <= 5)
            d->flag_times[i - 3] = true;
        d->flag_comm |= !strcmp(name, "comm");
        return 0;
    }
    if (zb_dp_is_flag(name))
        return zb_dp_draft_set(&d->dp, name, value, err);
    return zb_error_set(err, ZB_EINVAL, "unknown profile flag '--%s'", name);
bad:
    return zb_error_set(err, ZB_EINVAL, "--%s: '%s' is not a number%s",
                        name, value, strcmp(name, "mem-limit") ? ""
                        : ", a size (80GiB) or Np");
}

static int get_count(const struct zb_opt *o, const char *field, int dflt,
                     int max, int *out, struct zb_error *err)
{
    if (!o->set) {
        *out = dflt;
        return 0;
    }
    if (!isfinite(o->value) || o->value != floor(o->value) || o->value < 1)
        return zb_error_set(err, ZB_EINVAL,
                            "%s must be an integer >= 1, got %g",
                            field, o->value);
    if (o->value > max)
        return zb_error_set(err, ZB_EINVAL, "%s must be at most %d, got %g",
                            field, max, o->value);
    *out = (int)o->value;
    return 0;
}

int zbi_profile_in_range(double v, const char *field, double *out,
                         struct zb_error *err)
{
    if (v != 0 && (v < ZB_VALUE_MIN || v > ZB_VALUE_MAX))
        return zb_error_set(err, ZB_EINVAL, "%s = %g is out of range (0 or "
                            "%g to %g)", field, v, ZB_VALUE_MIN,
                            ZB_VALUE_MAX);
    *out = v;
    return 0;
}

/* > 0 for F and B, >= 0 for W and comm: a W-free stage or a
 * shared-memory link are real cases; an F or B of zero is a profiling
 * mistake. */
int zbi_profile_get_time(const struct zb_opt *o, double dflt, bool positive,
                         const char *field, double *out,
                         struct zb_error *err)
{
    double v = o->set ? o->value : dflt;

    if (!isfinite(v) || v < 0 || (positive && v == 0))
        return zb_error_set(err, ZB_EINVAL,
                            "%s must be a finite number %s 0, got %g",
                            field, positive ? ">" : ">=", v);
    return zbi_profile_in_range(v, field, out, err);
}

/* Per stage (chunk) times; per rank, entry r of "stages" is rank r's and
 * each of its chunks gets 1/vpp of every value. */
static int build_times(const struct zb_profile_draft *d, struct zb_profile *p,
                       struct zb_error *err)
{
    static const char *const names[3] = { "F", "B", "W" };
    const struct zb_opt *common[3] = { &d->f, &d->b, &d->w };
    int n = zb_profile_stages(p);
    int entries = d->per_rank ? p->pp : n;
    double split = d->per_rank ? p->vpp : 1;
    int rc;

    if ((rc = zbi_profile_get_time(&d->comm, 0, false, "time.comm",
                                   &p->comm, err)) < 0)
        return rc;
    /* Unset: each FB op takes its F plus its B (op.h). */
    p->fb = 0;
    if (d->fb.set &&
        (rc = zbi_profile_get_time(&d->fb, 0, true, "time.FB", &p->fb,
                                   err)) < 0)
        return rc;
    p->fb /= split;
    for (int k = 0; k < 3; k++)
        if (d->time_given && !common[k]->set)
            return zb_error_set(err, ZB_EINVAL, "time.%s is missing",
                                names[k]);
    if (d->stages && d->n_stages != entries)
        return zb_error_set(err, ZB_EINVAL,
                            "stages has %d entries, expected %s = %d",
                            d->n_stages, d->per_rank ? "pp (per rank)"
                                                     : "pp*vpp", entries);
    p->stage = zb_xcalloc((size_t)n, sizeof(*p->stage));
    for (int s = 0; s < n; s++) {
        double *dst[3] = { &p->stage[s].f, &p->stage[s].b, &p->stage[s].w };
        int e = d->per_rank ? zb_profile_stage_rank(p, s) : s;
        for (int k = 0; k < 3; k++) {
            const struct zb_opt *o = common[k];
            char field[48];

            snprintf(field, sizeof(field), "time.%s", names[k]);
            if (d->stages && !d->flag_times[k]) {
                const struct zb_draft_stage *ds = &d->stages[e];
                const struct zb_opt *so = k == 0 ? &ds->f
                                        : k == 1 ? &ds->b : &ds->w;
                if (so->set || !o->set) {
                    o = so;
                    snprintf(field, sizeof(field), "stages[%d].%s", e,
                             names[k]);
                }
                if (!o->set)
                    return zb_error_set(err, ZB_EINVAL, "%s is missing",
                                        field);
            }
            /* Without a file, flags or the default 1 give the times. */
            if ((rc = zbi_profile_get_time(o, 1.0, k < 2, field, dst[k],
                                           err)) < 0)
                return rc;
            *dst[k] /= split;
        }
    }
    return 0;
}

/* Every memory is a size or none is: a plain M_B beside a "40GiB" limit
 * would make the limit 40 of M_B. 0 and "Np" need no unit. */
static int check_sizes(const struct zb_profile_draft *d, struct zb_profile *p,
                       struct zb_error *err)
{
    bool numbered = d->limit_kind == ZB_LIMIT_VALUE ||
                    d->limit_kind == ZB_LIMIT_ARRAY;
    bool every_stage = zbi_profile_every_stage_m_b(d), staged = false;
    const char *plain = NULL;
    char field[40];
    double v = 0;

    for (int i = 0; d->stages && i < d->n_stages; i++)
        staged |= (d->stages[i].m_b.set && d->stages[i].m_b_sized &&
                   !d->flag_memory[0]) ||
                  (d->stages[i].m_w.set && d->stages[i].m_w_sized &&
                   !d->flag_memory[1]);
    p->mem_gib = (d->m_b.set && d->m_b_sized) ||
                 (d->m_w.set && d->m_w_sized) ||
                 (numbered && d->limit_sized) || staged;
    if (!p->mem_gib)
        return 0;
    /* Stages that all give their M_B need no common one. */
    if (!d->m_b.set && !every_stage)
        return zb_error_set(err, ZB_EINVAL, "memory is given as sizes: "
                            "memory.M_B (--m-b) needs one too (1.9GiB)");
    if (d->m_b.set && !d->m_b_sized) {
        plain = "memory.M_B";
        v = d->m_b.value;
    } else if (d->m_w.set && !d->m_w_sized && d->m_w.value != 0) {
        plain = "memory.M_W";
        v = d->m_w.value;
    } else if (numbered && !d->limit_sized) {
        plain = "memory.limit";
        v = d->limit_kind == ZB_LIMIT_VALUE ? d->limit : d->limits[0];
    } else {
        plain = zbi_profile_plain_stage_memory(d, &v, field, sizeof(field));
    }
    if (plain)
        return zb_error_set(err, ZB_EINVAL, "%s = %g has no unit while "
                            "other memory sizes have one: write it as a "
                            "size (%gGiB)", plain, v, v);
    return 0;
}

static int build_memory(const struct zb_profile_draft *d, struct zb_profile *p,
                        struct zb_error *err)
{
    if (check_sizes(d, p, err) < 0)
        return ZB_EINVAL;
    p->m_b = d->m_b.set ? d->m_b.value : 1.0;
    if (!isfinite(p->m_b) || p->m_b <= 0)
        return zb_error_set(err, ZB_EINVAL,
                            "memory.M_B must be a finite number > 0, got %g",
                            p->m_b);
    p->m_w = d->m_w.set ? d->m_w.value : p->m_b;
    /* M_W above M_B: B allocates (M_W - M_B) more than it frees, as a
     * stage whose weight gradient needs more than the activations F
     * kept (the pre-activation gradients of every layer). */
    if (!isfinite(p->m_w) || p->m_w < 0)
        return zb_error_set(err, ZB_EINVAL,
                            "memory.M_W must be a finite number >= 0, "
                            "got %g", p->m_w);
    if (zbi_profile_in_range(p->m_b, "memory.M_B", &p->m_b, err) < 0 ||
        zbi_profile_in_range(p->m_w, "memory.M_W", &p->m_w, err) < 0)
        return ZB_EINVAL;
    if (d->per_rank) {
        p->m_b /= p->vpp;
        p->m_w /= p->vpp;
    }
    if (zbi_profile_build_stages(d, p, err) < 0)
        return ZB_EINVAL;
    p->mem_limit = zb_xmalloc((size_t)p->pp * sizeof(double));
    if (d->limit_kind == ZB_LIMIT_ARRAY && d->n_limits != p->pp)
        return zb_error_set(err, ZB_EINVAL,
                            "memory.limit has %d entries, expected pp = %d",
                            d->n_limits, p->pp);
    for (int r = 0; r < p->pp; r++) {
        double v;
        switch (d->limit_kind) {
        case ZB_LIMIT_VALUE: v = d->limit; break;
        case ZB_LIMIT_ARRAY: v = d->limits[r]; break;
        case ZB_LIMIT_TIMES_P: v = d->limit * zb_profile_1f1b_peak(p); break;
        default: v = INFINITY; break;
        }
        /* An array entry may be null (INFINITY): that rank is unlimited. */
        bool bad = !(v > 0) ||
                   (!isfinite(v) && d->limit_kind != ZB_LIMIT_ARRAY);
        if (d->limit_kind != ZB_LIMIT_NONE && bad)
            return zb_error_set(err, ZB_EINVAL,
                                "memory.limit must be a finite number > 0, "
                                "got %g", v);
        /* A rank holds every chunk of a microbatch before its first B. */
        if (v < zb_profile_rank_microbatch(p, r)) {
            char field[32] = "memory.limit";
            if (d->limit_kind == ZB_LIMIT_ARRAY)
                snprintf(field, sizeof(field), "memory.limit[%d]", r);
            return zb_error_set(err, ZB_ENOMEM_LIMIT,
                                "%s = %g is below one microbatch's "
                                "activations (%s = %g)", field, v,
                                p->stage_mem ? "its stages' M_B"
                                : p->vpp > 1 ? "vpp*M_B" : "M_B",
                                zb_profile_rank_microbatch(p, r));
        }
        p->mem_limit[r] = v;
    }
    return 0;
}

/* Every duration of the step, passes, transfers and collectives (the
 * collectives derived from parameters, bandwidth and latency), within
 * ZB_TIME_SPAN of each other and at most ZB_VALUE_MAX: beyond that a
 * pass vanishes in the sums of start times (a cost of 0 that looks
 * optimal) instead of being timed. */
static int check_time_span(const struct zb_profile *p, struct zb_error *err)
{
    static const int collective[] = { ZB_OP_UNSHARD, ZB_OP_REDUCE_GRAD };
    double lo = INFINITY, hi = 0;
    const char *hi_name = "";

    for (int s = 0; s < zb_profile_stages(p); s++) {
        const struct zb_stage_times *t = &p->stage[s];
        double v[3] = { t->f, t->b, t->w };
        for (int k = 0; k < 3; k++)
            if (v[k] > 0) {
                lo = fmin(lo, v[k]);
                if (v[k] > hi)
                    hi = v[k], hi_name = "a pass";
            }
        for (int k = 0; k < 2 && zb_dp_active(p); k++) {
            double c = zb_dp_op_time(p, collective[k], s);
            if (!(c <= ZB_VALUE_MAX))
                return zb_error_set(err, ZB_EINVAL, "stage %d's %s takes "
                                    "%g, over %g: check data_parallel's "
                                    "params, bandwidth and latency", s,
                                    k ? "gradient reduction" : "gather", c,
                                    ZB_VALUE_MAX);
            if (c > hi)
                hi = c, hi_name = "a collective";
        }
    }
    if (p->comm > hi)
        hi = p->comm, hi_name = "comm";
    if (hi > 0 && lo < INFINITY && hi / lo > ZB_TIME_SPAN)
        return zb_error_set(err, ZB_EINVAL, "times span more than %g: %s "
                            "takes %g, the shortest pass %g (is one of them "
                            "in another unit?)", ZB_TIME_SPAN, hi_name, hi,
                            lo);
    return 0;
}

/* The data-parallel keys in the profile's units: memory given as sizes
 * counts GiB (bytes_per_unit), a bandwidth per second becomes one per
 * time unit. */
static int build_dp(const struct zb_profile_draft *d, struct zb_profile *p,
                    struct zb_error *err)
{
    struct zb_dp_draft dd = d->dp;      /* a view: dp_build only reads */

    if (p->mem_gib && isnan(dd.unit_bytes))
        dd.unit_bytes = GIB;
    else if (p->mem_gib && dd.unit_bytes != GIB)
        return zb_error_set(err, ZB_EINVAL, "data_parallel.bytes_per_unit "
                            "is a GiB (%.0f) when memory is given as sizes, "
                            "got %g", GIB, dd.unit_bytes);
    if (!isnan(dd.bandwidth_per_s)) {
        if (!p->has_time_unit)
            return zb_error_set(err, ZB_EINVAL, "data_parallel.bandwidth "
                                "is per second: give the profile's "
                                "time_unit (--time-unit us|ms|s)");
        dd.bandwidth = dd.bandwidth_per_s * zb_time_unit_seconds(p->time_unit);
    }
    return zb_dp_build(&dd, zb_profile_stages(p), &p->dp, err);
}

/* A copy of n doubles (limits, stage comm), NULL for NULL. */
static double *copy_limits(const double *v, int n)
{
    double *out = v ? zb_xmalloc((size_t)n * sizeof(double)) : NULL;

    if (v)
        memcpy(out, v, (size_t)n * sizeof(double));
    return out;
}

/* A limit given as a size (or sizes) with params is the GPU's memory:
 * it bounds model state plus activations (mem_total). A plain number
 * or "Np" bounds activations, as it always has. */
static void build_total(const struct zb_profile_draft *d,
                        struct zb_profile *p)
{
    bool state = false;

    for (int r = 0; r < p->pp; r++)
        state |= zb_profile_model_state(p, r) > 0;
    if (!state || !d->limit_sized ||
        (d->limit_kind != ZB_LIMIT_VALUE && d->limit_kind != ZB_LIMIT_ARRAY))
        return;
    p->mem_total = copy_limits(p->mem_limit, p->pp);
}

double zb_profile_model_state(const struct zb_profile *p, int r)
{
    double sum = 0;

    for (int c = 0; c < p->vpp; c++) {
        int s = zb_profile_rank_stage(p, r, c);
        sum += zb_dp_state_memory(p, s) + zb_dp_grad_buffer(p, s) +
               zb_dp_gathered(p, s);
    }
    return sum;
}

int zb_profile_count_state(struct zb_profile *p, struct zb_error *err)
{
    for (int r = 0; r < (p->mem_total ? p->pp : 0); r++) {
        double total = p->mem_total[r], state = zb_profile_model_state(p, r);
        double left = total - state;
        if (isfinite(total) && left < zb_profile_rank_microbatch(p, r))
            return zb_error_set(err, ZB_ENOMEM_LIMIT, "memory.limit: rank "
                                "%d's model state %.4g GiB leaves less "
                                "than one microbatch's activations (%.4g "
                                "GiB) of its limit %.4g GiB", r, state,
                                zb_profile_rank_microbatch(p, r), total);
        p->mem_limit[r] = left;
    }
    return 0;
}

int zb_profile_build(const struct zb_profile_draft *d, struct zb_profile *out,
                     struct zb_error *err)
{
    struct zb_profile p = { 0 };
    int rc;

    p.placement = d->placement_set ? d->placement : ZB_PLACEMENT_LOOP;
    /* V is two chunks per rank: saying the placement says the vpp. */
    if ((rc = get_count(&d->pp, "pp", 8, MAX_RANKS, &p.pp, err)) < 0 ||
        (rc = get_count(&d->vpp, "vpp",
                        p.placement == ZB_PLACEMENT_V ? 2 : 1, MAX_VPP,
                        &p.vpp, err)) < 0 ||
        (rc = get_count(&d->microbatches, "microbatches", 32, INT32_MAX,
                        &p.microbatches, err)) < 0)
        goto fail;
    if (p.placement == ZB_PLACEMENT_V && p.vpp != 2) {
        rc = zb_error_set(err, ZB_EINVAL,
                          "placement 'v' needs vpp = 2, got %d", p.vpp);
        goto fail;
    }
    if (3.0 * p.pp * p.vpp * (double)p.microbatches > ZB_MAX_PASSES) {
        rc = zb_error_set(err, ZB_EINVAL,
                          "pp*vpp*microbatches = %.0f is too large (at most "
                          "%.0f, %d passes)", (double)p.pp * p.vpp *
                          p.microbatches, floor(ZB_MAX_PASSES / 3.0),
                          ZB_MAX_PASSES);
        goto fail;
    }
    p.has_time_unit = d->time_unit_set;
    p.time_unit = d->time_unit;
    if ((rc = build_times(d, &p, err)) < 0 ||
        (rc = build_memory(d, &p, err)) < 0 ||
        (rc = build_dp(d, &p, err)) < 0)
        goto fail;
    build_total(d, &p);
    if ((rc = zb_profile_count_state(&p, err)) < 0 ||
        (rc = check_time_span(&p, err)) < 0)
        goto fail;
    *out = p;
    return 0;
fail:
    zb_profile_release(&p);
    return rc;
}

void zb_profile_release(struct zb_profile *p)
{
    if (!p)
        return;
    free(p->stage);
    free(p->stage_mem);
    free(p->stage_comm);
    free(p->mem_limit);
    free(p->mem_total);
    zb_dp_release(&p->dp);
    p->stage = NULL;
    p->stage_mem = NULL;
    p->stage_comm = NULL;
    p->mem_limit = NULL;
    p->mem_total = NULL;
}

int zb_profile_copy(struct zb_profile *dst, const struct zb_profile *src)
{
    size_t ns = (size_t)zb_profile_stages(src);

    *dst = *src;
    dst->stage = zb_xmalloc(ns * sizeof(*dst->stage));
    memcpy(dst->stage, src->stage, ns * sizeof(*dst->stage));
    dst->stage_mem = NULL;
    if (src->stage_mem) {
        dst->stage_mem = zb_xmalloc(ns * sizeof(*dst->stage_mem));
        memcpy(dst->stage_mem, src->stage_mem, ns * sizeof(*dst->stage_mem));
    }
    dst->stage_comm = copy_limits(src->stage_comm, (int)ns);
    dst->mem_limit = zb_xmalloc((size_t)src->pp * sizeof(double));
    memcpy(dst->mem_limit, src->mem_limit, (size_t)src->pp * sizeof(double));
    dst->mem_total = copy_limits(src->mem_total, src->pp);
    zb_dp_copy(&dst->dp, &src->dp, (int)ns);
    return 0;
}

bool zb_profile_equal(const struct zb_profile *a, const struct zb_profile *b)
{
    size_t ns = (size_t)zb_profile_stages(a);

    return a->pp == b->pp && a->vpp == b->vpp &&
           a->microbatches == b->microbatches &&
           a->placement == b->placement && a->comm == b->comm &&
           a->fb == b->fb && a->m_b == b->m_b && a->m_w == b->m_w &&
           a->has_time_unit == b->has_time_unit &&
           (!a->has_time_unit || a->time_unit == b->time_unit) &&
           a->mem_gib == b->mem_gib &&
           !memcmp(a->stage, b->stage, ns * sizeof(*a->stage)) &&
           !a->stage_mem == !b->stage_mem &&
           (!a->stage_mem || !memcmp(a->stage_mem, b->stage_mem,
                                     ns * sizeof(*a->stage_mem))) &&
           !a->stage_comm == !b->stage_comm &&
           (!a->stage_comm || !memcmp(a->stage_comm, b->stage_comm,
                                      ns * sizeof(double))) &&
           !memcmp(a->mem_limit, b->mem_limit,
                   (size_t)a->pp * sizeof(double)) &&
           !a->mem_total == !b->mem_total &&
           (!a->mem_total || !memcmp(a->mem_total, b->mem_total,
                                     (size_t)a->pp * sizeof(double))) &&
           zb_dp_equal(&a->dp, &b->dp, (int)ns);
}

int zb_profile_reshape(const struct zb_profile *p,
                       enum zb_placement placement, int vpp,
                       struct zb_profile *out, struct zb_error *err)
{
    int n = p->pp * vpp;

    memset(out, 0, sizeof(*out));
    if (vpp < 1 || vpp > MAX_VPP ||
        (placement == ZB_PLACEMENT_V && vpp != 2))
        return zb_error_set(err, ZB_EINVAL, "no profile has placement "
                            "'%s' with vpp %d", zb_placement_name(placement),
                            vpp);
    if (3.0 * n * (double)p->microbatches > ZB_MAX_PASSES)
        return zb_error_set(err, ZB_EINVAL, "placement '%s', vpp %d: more "
                            "than %d passes", zb_placement_name(placement),
                            vpp, ZB_MAX_PASSES);
    if (placement == p->placement && vpp == p->vpp)
        return zb_profile_copy(out, p);
    *out = *p;
    out->placement = placement;
    out->vpp = vpp;
    out->m_b = p->m_b * p->vpp / vpp;
    out->m_w = p->m_w * p->vpp / vpp;
    out->fb = p->fb * p->vpp / vpp;
    out->stage = zb_xcalloc((size_t)n, sizeof(*out->stage));
    out->stage_mem = p->stage_mem ? zb_xcalloc((size_t)n,
                                               sizeof(*out->stage_mem))
                                  : NULL;
    /* Another shape has other boundaries: each takes the slowest one's
     * time (comm is the largest entry). */
    out->stage_comm = NULL;
    out->mem_limit = zb_xmalloc((size_t)p->pp * sizeof(double));
    memcpy(out->mem_limit, p->mem_limit, (size_t)p->pp * sizeof(double));
    /* A rank's model state is its stages' sum: the same in any shape. */
    out->mem_total = copy_limits(p->mem_total, p->pp);
    /* out = *p shares p's dp.params: a fresh array replaces it. */
    out->dp.params = p->dp.params ? zb_xcalloc((size_t)n, sizeof(double))
                                  : NULL;
    /* Stage s of p adds its share to each chunk of its rank in out. */
    for (int s = 0; s < zb_profile_stages(p); s++) {
        int r = zb_profile_stage_rank(p, s);
        for (int c = 0; c < vpp; c++) {
            int t = zb_profile_rank_stage(out, r, c);
            out->stage[t].f += p->stage[s].f / vpp;
            out->stage[t].b += p->stage[s].b / vpp;
            out->stage[t].w += p->stage[s].w / vpp;
            if (p->stage_mem) {
                out->stage_mem[t].m_b += p->stage_mem[s].m_b / vpp;
                out->stage_mem[t].m_w += p->stage_mem[s].m_w / vpp;
            }
            if (p->dp.params)
                out->dp.params[t] += p->dp.params[s] / vpp;
        }
    }
    return 0;
}

bool zb_profile_has_limit(const struct zb_profile *p)
{
    for (int r = 0; r < p->pp; r++)
        if (isfinite(p->mem_limit[r]))
            return true;
    return false;
}

const char *zb_placement_name(enum zb_placement pl)
{
    return pl == ZB_PLACEMENT_V ? "v" : "loop";
}

int zb_placement_parse(const char *s, enum zb_placement *out)
{
    if (!strcmp(s, "loop"))
        *out = ZB_PLACEMENT_LOOP;
    else if (!strcmp(s, "v"))
        *out = ZB_PLACEMENT_V;
    else
        return -1;
    return 0;
}
