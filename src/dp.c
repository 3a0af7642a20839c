/* dp.c - data parallelism with ZeRO: the profile keys (checked here, like
 * every other profile value in profile.c), the ring cost of collectives
 * and the memory each ZeRO stage leaves on a rank (see dp.h). */
#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include "zbsched/dp.h"
#include "zbsched/op.h"
#include "zbsched/profile.h"
#include "zbsched/units.h"
#include "zbsched/xalloc.h"

void zb_dp_draft_init(struct zb_dp_draft *d)
{
    memset(d, 0, sizeof(*d));
    d->degree = d->zero = d->bandwidth = d->latency = NAN;
    d->unit_bytes = d->prefetch = d->units = NAN;
    d->bytes_weight = d->bytes_grad = d->bytes_optim = NAN;
    d->all_reduce = d->reduce_scatter = d->all_gather = NAN;
    d->params = d->bandwidth_per_s = NAN;
    d->reduce = -1;
}

void zb_dp_draft_release(struct zb_dp_draft *d)
{
    if (!d)
        return;
    free(d->params_list);
    d->params_list = NULL;
}

static const struct {
    const char *flag;
    size_t offset;
} flags[] = {
    { "dp", offsetof(struct zb_dp_draft, degree) },
    { "zero", offsetof(struct zb_dp_draft, zero) },
    { "params", offsetof(struct zb_dp_draft, params) },
    { "bandwidth", offsetof(struct zb_dp_draft, bandwidth) },
    { "latency", offsetof(struct zb_dp_draft, latency) },
    { "prefetch", offsetof(struct zb_dp_draft, prefetch) },
    { "fsdp-units", offsetof(struct zb_dp_draft, units) },
};
#define NFLAGS (sizeof(flags) / sizeof(flags[0]))

bool zb_dp_is_flag(const char *name)
{
    if (!strcmp(name, "reduce"))
        return true;
    for (size_t i = 0; i < NFLAGS; i++)
        if (!strcmp(name, flags[i].flag))
            return true;
    return false;
}

static const char *const reduce_names[] = {
    [ZB_DP_REDUCE_STEP] = "step",
    [ZB_DP_REDUCE_MICROBATCH] = "microbatch",
};

int zb_dp_reduce_parse(const char *s, const char *key, int *out,
                       struct zb_error *err)
{
    for (int r = ZB_DP_REDUCE_STEP; r <= ZB_DP_REDUCE_MICROBATCH; r++)
        if (!strcmp(s, reduce_names[r])) {
            *out = r;
            return 0;
        }
    return zb_error_set(err, ZB_EINVAL, "%s must be \"step\" or "
                        "\"microbatch\", got '%s'", key, s);
}

const char *zb_dp_reduce_name(enum zb_dp_reduce r)
{
    return reduce_names[r];
}

int zb_dp_draft_set(struct zb_dp_draft *d, const char *name,
                    const char *value, struct zb_error *err)
{
    if (!strcmp(name, "reduce"))
        return zb_dp_reduce_parse(value, "--reduce", &d->reduce, err);
    for (size_t i = 0; i < NFLAGS; i++) {
        double v;
        if (strcmp(name, flags[i].flag))
            continue;
        if (!strcmp(name, "bandwidth")) {
            d->bandwidth_per_s = NAN;       /* the last one given counts */
            if (zb_units_parse_number(value, &v) < 0) {
                d->bandwidth = NAN;
                return zb_units_parse_bandwidth("--bandwidth", value,
                                                &d->bandwidth_per_s, err);
            }
        } else if (zb_units_parse_number(value, &v) < 0) {
            return zb_error_set(err, ZB_EINVAL, "--%s: '%s' is not a number",
                                name, value);
        }
        *(double *)((char *)d + flags[i].offset) = v;
        if (!strcmp(name, "params")) {
            free(d->params_list);   /* the flag overrides a per-stage list */
            d->params_list = NULL;
            d->n_params = 0;
        }
        return 0;
    }
    return zb_error_set(err, ZB_EINVAL, "unknown profile flag '--%s'", name);
}

/* A whole number in [lo, hi], or dflt when not given. */
static int get_int(double v, int dflt, int lo, int hi, const char *key,
                   int *out, struct zb_error *err)
{
    if (isnan(v)) {
        *out = dflt;
        return 0;
    }
    if (!isfinite(v) || v != floor(v) || v < lo || v > hi)
        return zb_error_set(err, ZB_EINVAL, "%s must be an integer from %d "
                            "to %d, got %g", key, lo, hi, v);
    *out = (int)v;
    return 0;
}

/* A number >= 0 (> 0 when positive; INFINITY allowed when inf_ok). */
static int get_num(double v, double dflt, bool positive, bool inf_ok,
                   const char *key, double *out, struct zb_error *err)
{
    if (isnan(v)) {
        *out = dflt;
        return 0;
    }
    if (v < 0 || (positive && v == 0) || (!inf_ok && !isfinite(v)))
        return zb_error_set(err, ZB_EINVAL, "%s must be a finite number %s "
                            "0, got %g", key, positive ? ">" : ">=", v);
    /* The profile's range for every number (profile.h says why). */
    if (isfinite(v) && v != 0 && (v < ZB_VALUE_MIN || v > ZB_VALUE_MAX))
        return zb_error_set(err, ZB_EINVAL, "%s = %g is out of range (0 or "
                            "%g to %g)", key, v, ZB_VALUE_MIN, ZB_VALUE_MAX);
    *out = v;
    return 0;
}

int zb_dp_build(const struct zb_dp_draft *d, int nstages, struct zb_dp *out,
                struct zb_error *err)
{
    struct zb_dp dp = { 0 };
    double params = 0;
    int rc;

    if ((rc = get_int(d->degree, 1, 1, 1 << 20, "dp", &dp.degree, err)) < 0 ||
        (rc = get_int(d->zero, 0, 0, 3, "zero", &dp.zero, err)) < 0 ||
        /* 1: a gather runs beside the pass (or unit) before it; 0 is
         * FSDP's no-prefetch, issued when its pass (unit) is reached. */
        (rc = get_int(d->prefetch, 1, 0, 1 << 20, "data_parallel.prefetch",
                      &dp.prefetch, err)) < 0 ||
        (rc = get_int(d->units, 1, 1, 1 << 10, "data_parallel.units",
                      &dp.units, err)) < 0 ||
        (rc = get_num(d->bandwidth, INFINITY, true, true,
                      "data_parallel.bandwidth", &dp.bandwidth, err)) < 0 ||
        (rc = get_num(d->latency, 0, false, false, "data_parallel.latency",
                      &dp.latency, err)) < 0 ||
        (rc = get_num(d->unit_bytes, 1, true, false,
                      "data_parallel.bytes_per_unit", &dp.unit_bytes,
                      err)) < 0 ||
        (rc = get_num(d->bytes_weight, ZB_DP_BYTES_WEIGHT, false, false,
                      "data_parallel.bytes.weights", &dp.bytes_weight,
                      err)) < 0 ||
        (rc = get_num(d->bytes_grad, ZB_DP_BYTES_GRAD, false, false,
                      "data_parallel.bytes.grads", &dp.bytes_grad, err)) < 0 ||
        (rc = get_num(d->bytes_optim, ZB_DP_BYTES_OPTIM, false, false,
                      "data_parallel.bytes.optimizer", &dp.bytes_optim,
                      err)) < 0 ||
        (rc = get_num(d->params, 0, false, false, "data_parallel.params",
                      &params, err)) < 0)
        return rc;
    /* Given times stay NAN when absent: the bytes model applies. */
    if ((rc = get_num(d->all_reduce, NAN, false, false,
                      "data_parallel.all_reduce", &dp.all_reduce, err)) < 0 ||
        (rc = get_num(d->reduce_scatter, NAN, false, false,
                      "data_parallel.reduce_scatter", &dp.reduce_scatter,
                      err)) < 0 ||
        (rc = get_num(d->all_gather, NAN, false, false,
                      "data_parallel.all_gather", &dp.all_gather, err)) < 0)
        return rc;
    if (dp.zero > 0 && dp.degree < 2)
        return zb_error_set(err, ZB_EINVAL, "zero %d needs dp >= 2, got dp "
                            "%d", dp.zero, dp.degree);
    dp.reduce = d->reduce < 0 ? ZB_DP_REDUCE_STEP
                              : (enum zb_dp_reduce)d->reduce;
    /* Below ZeRO-2 every replica keeps the whole gradient until its one
     * reduce: there is no shard to reduce a microbatch into. */
    if (dp.reduce == ZB_DP_REDUCE_MICROBATCH && dp.zero < 2)
        return zb_error_set(err, ZB_EINVAL, "reduce microbatch needs zero "
                            ">= 2 (sharded gradients), got zero %d",
                            dp.zero);
    /* Units change what a ZeRO-3 gather or a per-microbatch reduce
     * acts on; with neither they would name nothing. */
    if (dp.units > 1 && dp.zero < 3 && dp.reduce != ZB_DP_REDUCE_MICROBATCH)
        return zb_error_set(err, ZB_EINVAL, "data_parallel.units > 1 needs "
                            "zero 3 or reduce microbatch, got zero %d",
                            dp.zero);
    if (d->params_list && d->n_params != nstages)
        return zb_error_set(err, ZB_EINVAL, "data_parallel.params has %d "
                            "entries, expected pp*vpp = %d", d->n_params,
                            nstages);
    /* At dp 1 params matter only as model state (profile.h, mem_total):
     * without them the profile stays as it was. */
    if (dp.degree < 2 && !(params > 0) && !d->params_list) {
        *out = dp;
        return 0;
    }
    dp.params = zb_xmalloc((size_t)nstages * sizeof(double));
    for (int s = 0; s < nstages; s++) {
        double v = d->params_list ? d->params_list[s] : params;
        if (!isfinite(v) || v < 0) {
            free(dp.params);
            return zb_error_set(err, ZB_EINVAL, "data_parallel.params[%d] "
                                "must be a finite number >= 0, got %g", s, v);
        }
        dp.params[s] = v;
    }
    *out = dp;
    return 0;
}

void zb_dp_release(struct zb_dp *dp)
{
    if (!dp)
        return;
    free(dp->params);
    dp->params = NULL;
}

void zb_dp_copy(struct zb_dp *dst, const struct zb_dp *src, int nstages)
{
    *dst = *src;
    if (!src->params)
        return;
    dst->params = zb_xmalloc((size_t)nstages * sizeof(double));
    memcpy(dst->params, src->params, (size_t)nstages * sizeof(double));
}

/* Equal, or both unset (NAN). */
static bool same(double a, double b)
{
    return a == b || (isnan(a) && isnan(b));
}

bool zb_dp_equal(const struct zb_dp *a, const struct zb_dp *b, int nstages)
{
    if (!a->params != !b->params ||
        (a->params && memcmp(a->params, b->params,
                             (size_t)nstages * sizeof(double)) != 0))
        return false;
    return a->degree == b->degree && a->zero == b->zero &&
           a->bandwidth == b->bandwidth && a->latency == b->latency &&
           a->bytes_weight == b->bytes_weight &&
           a->bytes_grad == b->bytes_grad &&
           a->bytes_optim == b->bytes_optim &&
           a->unit_bytes == b->unit_bytes && a->prefetch == b->prefetch &&
           a->units == b->units &&
           a->reduce == b->reduce && same(a->all_reduce, b->all_reduce) &&
           same(a->reduce_scatter, b->reduce_scatter) &&
           same(a->all_gather, b->all_gather);
}

bool zb_dp_active(const struct zb_profile *p)
{
    return p->dp.degree >= 2;
}

bool zb_dp_per_mb(const struct zb_profile *p)
{
    return zb_dp_active(p) && p->dp.reduce == ZB_DP_REDUCE_MICROBATCH;
}

bool zb_dp_units(const struct zb_profile *p)
{
    return zb_dp_active(p) && p->dp.units > 1 &&
           (p->dp.zero >= 3 || p->dp.reduce == ZB_DP_REDUCE_MICROBATCH);
}

/* ---- Collectives ------------------------------------------------------ */

double zb_dp_ring_half(const struct zb_dp *dp, double bytes)
{
    double d = dp->degree;

    return d < 2 ? 0 : (d - 1) * (dp->latency + bytes / (d * dp->bandwidth));
}

double zb_dp_ring_all_reduce(const struct zb_dp *dp, double bytes)
{
    return 2 * zb_dp_ring_half(dp, bytes);
}

static double given_or(double given, double model)
{
    return isnan(given) ? model : given;
}

double zb_dp_op_time(const struct zb_profile *p, int kind, int stage)
{
    const struct zb_dp *dp = &p->dp;
    double grads, weights, gather;

    if (!dp->params)
        return 0;
    grads = dp->params[stage] * dp->bytes_grad;
    weights = dp->params[stage] * dp->bytes_weight;
    gather = given_or(dp->all_gather, zb_dp_ring_half(dp, weights));
    switch (kind) {
    case ZB_OP_UNSHARD:
        return gather;
    case ZB_OP_REDUCE_GRAD:
        if (dp->zero == 0)
            return given_or(dp->all_reduce, zb_dp_ring_all_reduce(dp, grads));
        return given_or(dp->reduce_scatter, zb_dp_ring_half(dp, grads)) +
               (dp->zero < 3 ? gather : 0);
    default:
        return 0;
    }
}

double zb_dp_reduce_time(const struct zb_profile *p, int stage, bool last)
{
    const struct zb_dp *dp = &p->dp;

    if (!zb_dp_per_mb(p) || (last && dp->zero < 3))
        return zb_dp_op_time(p, ZB_OP_REDUCE_GRAD, stage);
    return given_or(dp->reduce_scatter,
                    zb_dp_ring_half(dp, dp->params[stage] * dp->bytes_grad));
}

double zb_dp_unit_time(const struct zb_profile *p, int kind, int stage,
                       bool last)
{
    const struct zb_dp *dp = &p->dp;
    double k = dp->units, grads, gather;

    if (!dp->params)
        return 0;
    grads = dp->params[stage] * dp->bytes_grad / k;
    gather = isnan(dp->all_gather)
                 ? zb_dp_ring_half(dp, dp->params[stage] * dp->bytes_weight / k)
                 : dp->all_gather / k;
    if (kind == ZB_OP_UNSHARD)
        return gather;
    if (kind != ZB_OP_REDUCE_GRAD)
        return 0;
    return (isnan(dp->reduce_scatter) ? zb_dp_ring_half(dp, grads)
                                      : dp->reduce_scatter / k) +
           (last && dp->zero < 3 ? gather : 0);
}

/* ---- Memory ------------------------------------------------------------ */

static double param_units(const struct zb_profile *p, int stage,
                          double bytes)
{
    return p->dp.params ? p->dp.params[stage] * bytes / p->dp.unit_bytes : 0;
}

double zb_dp_state_memory(const struct zb_profile *p, int stage)
{
    const struct zb_dp *dp = &p->dp;
    double d = dp->degree;

    return param_units(p, stage, dp->bytes_weight / (dp->zero >= 3 ? d : 1)) +
           param_units(p, stage, dp->zero >= 2 ? 0 : dp->bytes_grad) +
           param_units(p, stage, dp->bytes_optim / (dp->zero >= 1 ? d : 1));
}

double zb_dp_grad_buffer(const struct zb_profile *p, int stage)
{
    return p->dp.zero >= 2 ? param_units(p, stage, p->dp.bytes_grad) : 0;
}

double zb_dp_grad_shard(const struct zb_profile *p, int stage)
{
    return zb_dp_grad_buffer(p, stage) / p->dp.degree;
}

double zb_dp_gathered(const struct zb_profile *p, int stage)
{
    double d = p->dp.degree;

    return p->dp.zero >= 3
               ? param_units(p, stage, p->dp.bytes_weight * (d - 1) / d)
               : 0;
}
