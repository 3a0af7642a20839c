/* jitter.c - a schedule under timing noise: its compute order replayed
 * with each pass's duration drawn log-normal around the profile's, re-timed
 * by the simulator's rule, the measures' distribution over many draws
 * (docs/profiles.md, "Noise"). The generator's state is the caller's. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "zbsched/dp.h"
#include "zbsched/pass.h"
#include "zbsched/profile_import.h"
#include "zbsched/timing.h"
#include "zbsched/xalloc.h"

/* ---- xoshiro256** (Blackman and Vigna), seeded by splitmix64 ---------- */

static uint64_t splitmix64(uint64_t *x)
{
    uint64_t z = (*x += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

void zb_rng_seed(struct zb_rng *g, uint64_t seed)
{
    for (int i = 0; i < 4; i++)
        g->s[i] = splitmix64(&seed);
}

static uint64_t rotl(uint64_t x, int k)
{
    return (x << k) | (x >> (64 - k));
}

uint64_t zb_rng_next(struct zb_rng *g)
{
    uint64_t *s = g->s, result = rotl(s[1] * 5, 7) * 9, t = s[1] << 17;

    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = rotl(s[3], 45);
    return result;
}

double zb_rng_uniform(struct zb_rng *g)
{
    return ((zb_rng_next(g) >> 11) + 1) * 0x1.0p-53;
}

/* exp(N(mu, sigma^2)) has mean exp(mu + sigma^2 / 2) and CV
 * sqrt(exp(sigma^2) - 1): sigma^2 = ln(1 + cv^2), mu = ln(mean) -
 * sigma^2 / 2. The normal draw is Box-Muller's. */
double zb_rng_lognormal(struct zb_rng *g, double mean, double cv)
{
    double s2, z;

    if (cv <= 0 || mean <= 0)
        return mean;
    s2 = log1p(cv * cv);
    z = sqrt(-2 * log(zb_rng_uniform(g))) *
        cos(6.283185307179586 * zb_rng_uniform(g));
    return mean * exp(sqrt(s2) * z - s2 / 2);
}

/* ---- Replay ----------------------------------------------------------- */

struct replay {
    const struct zb_schedule *s;
    const struct zb_op **ops;   /* rank r's compute ops at ops[first[r]..] */
    int *first, *count;
    double *dur;                /* per op, drawn */
    double *end;                /* per pass (pass.h index); NAN: not yet */
    int *pos;
    double *free_at, *busy, *start0;
};

/* When op's inputs are all there (transfers added); NAN: not yet. */
static double ready_at(const struct replay *rp, int rank,
                       const struct zb_op *op)
{
    const struct zb_profile *p = &rp->s->profile;
    struct zb_op half[2];
    double t = 0;
    int nh = zb_op_split(op, half);

    for (int h = 0; h < nh; h++) {
        struct zb_dep dep[2];
        int nd = zb_pass_deps(p, half[h].kind, half[h].stage, half[h].mb,
                              dep);
        for (int d = 0; d < nd; d++) {
            double e = rp->end[zb_pass_index(p, dep[d].pass, dep[d].stage,
                                             dep[d].mb)];
            /* FB's B half may wait on its own F half: same op. */
            if (op->kind == ZB_OP_FB && h == 1 && dep[d].pass == ZB_PASS_F &&
                dep[d].stage == op->stage && dep[d].mb == op->mb)
                continue;
            if (isnan(e))
                return NAN;
            e = zb_timing_arrival(p, dep[d].stage, half[h].stage, rank, e);
            t = fmax(t, e);
        }
    }
    return t;
}

static void finish(struct replay *rp, const struct zb_op *op, double end)
{
    const struct zb_profile *p = &rp->s->profile;
    struct zb_op half[2];
    int nh = zb_op_split(op, half);

    for (int h = 0; h < nh; h++) {
        rp->end[zb_pass_index(p, zb_pass_of(half[h].kind), half[h].stage,
                              half[h].mb)] = end;
        if (half[h].kind == ZB_OP_BW)
            rp->end[zb_pass_index(p, ZB_PASS_W, half[h].stage,
                                  half[h].mb)] = end;
    }
}

/* One replay with the durations in rp->dur: cost, makespan, bubble. */
static int replay_once(struct replay *rp, double out[3], struct zb_error *err)
{
    const struct zb_profile *p = &rp->s->profile;
    long np = zb_pass_count(p);
    int left = 0;
    double lo = INFINITY, hi = -INFINITY, cost = 0, busy = 0;

    for (long i = 0; i < np; i++)
        rp->end[i] = NAN;
    for (int r = 0; r < p->pp; r++) {
        rp->pos[r] = 0;
        rp->free_at[r] = 0;
        rp->busy[r] = 0;
        rp->start0[r] = INFINITY;
        left += rp->count[r];
    }
    while (left > 0) {
        bool moved = false;
        for (int r = 0; r < p->pp; r++)
            while (rp->pos[r] < rp->count[r]) {
                int k = rp->first[r] + rp->pos[r];
                const struct zb_op *op = rp->ops[k];
                double t = ready_at(rp, r, op), end;
                if (isnan(t))
                    break;
                t = fmax(t, rp->free_at[r]);
                end = t + rp->dur[k];
                finish(rp, op, end);
                rp->free_at[r] = end;
                rp->busy[r] += rp->dur[k];
                rp->start0[r] = fmin(rp->start0[r], t);
                rp->pos[r]++;
                left--;
                moved = true;
            }
        if (!moved)
            return zb_error_set(err, ZB_EILLEGAL, "the replay stopped: a "
                                "pass waits on one that never runs");
    }
    for (int r = 0; r < p->pp; r++) {
        if (rp->count[r] == 0)
            continue;
        cost = fmax(cost, rp->free_at[r] - rp->start0[r]);
        lo = fmin(lo, rp->start0[r]);
        hi = fmax(hi, rp->free_at[r]);
        busy += rp->busy[r];
    }
    out[0] = cost;
    out[1] = hi > lo ? hi - lo : 0;
    out[2] = cost > 0 ? 1 - busy / (p->pp * cost) : 0;
    return 0;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static struct zb_jitter_stat stat_of(double *v, int n)
{
    struct zb_jitter_stat st = { 0, 0, 0 };
    double pos;
    int lo;

    for (int i = 0; i < n; i++)
        st.mean += v[i] / n;
    qsort(v, (size_t)n, sizeof(*v), cmp_double);
    pos = 0.5 * (n - 1);
    lo = (int)pos;
    st.p50 = lo + 1 < n ? v[lo] + (pos - lo) * (v[lo + 1] - v[lo]) : v[lo];
    pos = 0.95 * (n - 1);
    lo = (int)pos;
    st.p95 = lo + 1 < n ? v[lo] + (pos - lo) * (v[lo + 1] - v[lo]) : v[lo];
    return st;
}

int zb_jitter_cvs(const struct zb_measured *m, const struct zb_profile *p,
                  double *cvs, struct zb_error *err)
{
    const int S = zb_profile_stages(p);
    const double z90 = 1.2815515655446004;  /* the normal's 90 % point */

    if (m->n == 0 || m->n != (m->per_rank ? p->pp : S))
        return zb_error_set(err, ZB_EINVAL, "the measured spread has %d "
                            "entries, the schedule %d %s", m->n,
                            m->per_rank ? p->pp : S,
                            m->per_rank ? "ranks" : "stages");
    for (int s = 0; s < S; s++)
        for (int k = 0; k < ZB_MEAS_KINDS; k++) {
            const struct zb_spread *x =
                &m->t[m->per_rank ? zb_profile_stage_rank(p, s) : s][k];
            double sigma;
            cvs[3 * s + k] = 0;
            if (x->samples < 2 || x->p10 <= 0 || x->p90 <= x->p10)
                continue;
            sigma = log(x->p90 / x->p10) / (2 * z90);
            cvs[3 * s + k] = sqrt(expm1(sigma * sigma));
        }
    return 0;
}

/* The cv of an op's pass kind at its stage (FB: its F's). */
static double cv_of(const double *cvs, double cv, const struct zb_op *op)
{
    if (!cvs)
        return cv;
    switch (op->kind) {
    case ZB_OP_B: return cvs[3 * op->stage + 1];
    case ZB_OP_W: return cvs[3 * op->stage + 2];
    case ZB_OP_BW: return fmax(cvs[3 * op->stage + 1], cvs[3 * op->stage + 2]);
    default: return cvs[3 * op->stage];
    }
}

int zb_jitter_run(const struct zb_schedule *s, double cv, const double *cvs,
                  int samples, uint64_t seed, struct zb_jitter_result *out,
                  struct zb_error *err)
{
    const struct zb_profile *p = &s->profile;
    struct replay rp = { .s = s };
    struct zb_rng g;
    double *v[3] = { NULL, NULL, NULL }, m[3];
    int n = 0, rc = 0;

    memset(out, 0, sizeof(*out));
    for (int i = 0; i < (cvs ? 3 * zb_profile_stages(p) : 1); i++) {
        double x = cvs ? cvs[i] : cv;
        if (!(x >= 0 && x <= 10))
            return zb_error_set(err, ZB_EINVAL, "--jitter must be a "
                                "coefficient of variation between 0 and 10, "
                                "got %g", x);
    }
    if (samples < 1 || samples > 1000000)
        return zb_error_set(err, ZB_EINVAL, "--samples must be 1 to "
                            "1000000, got %d", samples);
    if (zb_dp_active(p))
        return zb_error_set(err, ZB_EINVAL, "--jitter replays compute and "
                            "transfers only, not data-parallel collectives");
    rp.first = zb_xcalloc((size_t)p->pp, sizeof(int));
    rp.count = zb_xcalloc((size_t)p->pp, sizeof(int));
    for (int r = 0; r < p->pp; r++)
        for (int i = 0; i < s->ranks[r].n; i++)
            n += zb_op_is_compute(s->ranks[r].ops[i].kind);
    rp.ops = zb_xcalloc((size_t)n + 1, sizeof(*rp.ops));
    rp.dur = zb_xcalloc((size_t)n + 1, sizeof(double));
    n = 0;
    for (int r = 0; r < p->pp; r++) {
        rp.first[r] = n;
        for (int i = 0; i < s->ranks[r].n; i++)
            if (zb_op_is_compute(s->ranks[r].ops[i].kind))
                rp.ops[n++] = &s->ranks[r].ops[i];
        rp.count[r] = n - rp.first[r];
    }
    rp.end = zb_xmalloc((size_t)zb_pass_count(p) * sizeof(double));
    rp.pos = zb_xcalloc((size_t)p->pp, sizeof(int));
    rp.free_at = zb_xcalloc((size_t)p->pp, sizeof(double));
    rp.busy = zb_xcalloc((size_t)p->pp, sizeof(double));
    rp.start0 = zb_xcalloc((size_t)p->pp, sizeof(double));
    for (int k = 0; k < 3; k++)
        v[k] = zb_xcalloc((size_t)samples, sizeof(double));

    for (int i = 0; i < n; i++)
        rp.dur[i] = zb_op_duration(p, rp.ops[i]);
    if ((rc = replay_once(&rp, m, err)) < 0)
        goto out;
    out->exact.cost = m[0];
    out->exact.makespan = m[1];
    out->exact.bubble_ratio = m[2];
    /* Draws in list order, rank by rank: the same seed gives the same
     * durations whatever order the replay places them in. */
    zb_rng_seed(&g, seed);
    for (int k = 0; k < samples; k++) {
        for (int i = 0; i < n; i++)
            rp.dur[i] = zb_rng_lognormal(&g, zb_op_duration(p, rp.ops[i]),
                                         cv_of(cvs, cv, rp.ops[i]));
        if ((rc = replay_once(&rp, m, err)) < 0)
            goto out;
        for (int j = 0; j < 3; j++)
            v[j][k] = m[j];
    }
    out->cv = cvs ? -1 : cv;
    out->samples = samples;
    out->seed = seed;
    out->cost = stat_of(v[0], samples);
    out->makespan = stat_of(v[1], samples);
    out->bubble_ratio = stat_of(v[2], samples);
out:
    for (int k = 0; k < 3; k++)
        free(v[k]);
    free(rp.first);
    free(rp.count);
    free(rp.ops);
    free(rp.dur);
    free(rp.end);
    free(rp.pos);
    free(rp.free_at);
    free(rp.busy);
    free(rp.start0);
    return rc;
}
