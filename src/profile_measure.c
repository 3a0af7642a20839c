/* profile_measure.c - a run's timeline becomes a measured profile: per
 * stage the median and spread of each pass kind, the transfer time from
 * the waits, the shape from which stages each lane holds
 * (docs/profiles.md, "What is taken"). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "measure_util.h"
#include "zbsched/xalloc.h"

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double quantile(const double *v, int n, double q)
{
    double pos = q * (n - 1);
    int lo = (int)floor(pos);

    if (lo + 1 >= n)
        return v[n - 1];
    return v[lo] + (pos - lo) * (v[lo + 1] - v[lo]);
}

struct zb_spread zbi_spread_of(double *v, int n, double scale)
{
    struct zb_spread s = { 0, 0, 0, n };

    if (n == 0)
        return s;
    qsort(v, (size_t)n, sizeof(*v), cmp_double);
    s.median = quantile(v, n, 0.5) / scale;
    s.p10 = quantile(v, n, 0.1) / scale;
    s.p90 = quantile(v, n, 0.9) / scale;
    return s;
}

double zbi_unit_us(const char *unit)
{
    if (!unit || !strcmp(unit, "ms"))
        return 1e3;
    if (!strcmp(unit, "us"))
        return 1;
    if (!strcmp(unit, "s"))
        return 1e6;
    return 0;
}

void zb_measured_init(struct zb_measured *m)
{
    memset(m, 0, sizeof(*m));
    strcpy(m->unit, "ms");
}

void zb_measured_release(struct zb_measured *m)
{
    if (m)
        free(m->t);
}

void zbi_measured_alloc(struct zb_measured *m, int n)
{
    free(m->t);
    m->n = n;
    m->t = zb_xcalloc((size_t)n, sizeof(*m->t));
}

/* ---- Shape -------------------------------------------------------------- */

/* A profile's limits (profile.c): traces that name more are refused
 * before anything is sized by them. */
#define MAX_RANKS 4096
#define MAX_VPP 64

struct lane_info {
    int lo;             /* lowest stage; -1: no pass */
    int count;          /* distinct stages */
};

static int by_lane_stage(const void *a, const void *b)
{
    const struct zb_run_pass *x = *(const struct zb_run_pass *const *)a;
    const struct zb_run_pass *y = *(const struct zb_run_pass *const *)b;

    if (x->lane != y->lane)
        return x->lane - y->lane;
    return x->stage - y->stage;
}

/* Each lane's lowest stage and count of stages, from the passes sorted
 * by lane, then stage. */
static void lanes_of(const struct zb_run_pass *const *by, int n,
                     struct lane_info *li, int lanes)
{
    for (int l = 0; l < lanes; l++)
        li[l] = (struct lane_info){ -1, 0 };
    for (int i = 0; i < n; i++) {
        struct lane_info *x = &li[by[i]->lane];
        if (i == 0 || by[i - 1]->lane != by[i]->lane)
            x->lo = by[i]->stage;
        if (i == 0 || by[i - 1]->lane != by[i]->lane ||
            by[i - 1]->stage != by[i]->stage)
            x->count++;
    }
}

/* Every lane holds the stages of one rank (its lowest stage's). */
static bool fits(const struct zb_run *r, const struct lane_info *li,
                 const struct zb_profile *shape)
{
    if (shape->placement == ZB_PLACEMENT_V && shape->vpp != 2)
        return false;
    for (int i = 0; i < r->n; i++) {
        const struct lane_info *x = &li[r->passes[i].lane];
        if (x->lo >= shape->pp ||
            zb_profile_stage_rank(shape, r->passes[i].stage) != x->lo)
            return false;
    }
    return true;
}

static int find_shape(const struct zb_run *r, const struct zb_measure_opts *o,
                      struct zb_measured *m, struct zb_error *err)
{
    const struct zb_run_pass **by = zb_xcalloc((size_t)r->n,
                                               sizeof(*by));
    struct lane_info *li = zb_xcalloc((size_t)r->lanes + 1, sizeof(*li));
    struct zb_profile shape = { 0 };
    char *present = NULL;
    int S = 0, vpp = o->vpp, rc = 0;
    bool ok[2];

    for (int i = 0; i < r->n; i++) {
        by[i] = &r->passes[i];
        S = r->passes[i].stage + 1 > S ? r->passes[i].stage + 1 : S;
    }
    if (S > MAX_RANKS * MAX_VPP) {
        rc = zb_error_set(err, ZB_EINVAL, "the traces name stage %d: more "
                          "than a profile may hold (%d ranks x %d chunks)",
                          S - 1, MAX_RANKS, MAX_VPP);
        goto out;
    }
    qsort(by, (size_t)r->n, sizeof(*by), by_lane_stage);
    lanes_of(by, r->n, li, r->lanes);
    for (int l = 0; l < r->lanes && o->vpp == 0; l++)
        vpp = li[l].count > vpp ? li[l].count : vpp;
    if (o->pp > 0 && o->vpp == 0 && o->pp * vpp < S)
        vpp = (S + o->pp - 1) / o->pp;
    m->pp = o->pp > 0 ? o->pp : S / vpp;
    m->vpp = vpp;
    if (m->pp < 1 || m->pp > MAX_RANKS || vpp > MAX_VPP ||
        m->pp * vpp < S) {
        rc = zb_error_set(err, ZB_EINVAL, "the traces name %d stages, which "
                          "pp %d x vpp %d do not hold (one file per rank; "
                          "give --pp and --vpp)", S, m->pp, vpp);
        goto out;
    }
    S = m->pp * vpp;
    present = zb_xcalloc((size_t)S, 1);
    for (int i = 0; i < r->n; i++)
        present[r->passes[i].stage] = 1;
    for (int s = 0; s < S; s++)
        if (!present[s]) {
            rc = zb_error_set(err, ZB_EINVAL, "stage %d (of %d: pp %d x vpp "
                              "%d) is in none of the traces", s, S, m->pp,
                              vpp);
            goto out;
        }
    shape.pp = m->pp;
    shape.vpp = vpp;
    for (int k = 0; k < 2; k++) {
        shape.placement = (enum zb_placement)k;
        ok[k] = fits(r, li, &shape);
    }
    if (o->placement_set && !ok[o->placement])
        rc = zb_error_set(err, ZB_EINVAL, "the stages each trace holds do "
                          "not follow placement %s (pp %d, vpp %d)",
                          zb_placement_name(o->placement), m->pp, vpp);
    else if (o->placement_set)
        m->placement = o->placement;
    else if (ok[ZB_PLACEMENT_LOOP] || ok[ZB_PLACEMENT_V])
        m->placement = ok[ZB_PLACEMENT_LOOP] ? ZB_PLACEMENT_LOOP
                                             : ZB_PLACEMENT_V;
    else
        rc = zb_error_set(err, ZB_EINVAL, "the stages each trace holds "
                          "follow neither placement loop nor v at pp %d, "
                          "vpp %d (one file per rank; give --pp and --vpp)",
                          m->pp, vpp);
out:
    free(present);
    free(by);
    free(li);
    return rc;
}

/* ---- Samples ------------------------------------------------------------ */

struct sample_set {
    double *v;
    int n, cap;
};

static void add_sample(struct sample_set *s, double x)
{
    zb_xgrow((void **)&s->v, &s->cap, s->n + 1, sizeof(double));
    s->v[s->n++] = x;
}

/* A pass with its occurrence among the passes of its lane with the same
 * kind, stage and microbatch (the iteration, from 0) and the end of the
 * lane's pass before it (-inf for the first). B and BW both hand the
 * gradient on: they share a key. */
struct keyed {
    const struct zb_run_pass *p;
    int iter;
    double prev_end;
};

static int by_lane_start(const void *a, const void *b)
{
    const struct keyed *x = a, *y = b;

    if (x->p->lane != y->p->lane)
        return x->p->lane - y->p->lane;
    return (x->p->start > y->p->start) - (x->p->start < y->p->start);
}

static int cmp_int(int a, int b)
{
    return (a > b) - (a < b);
}

static int by_pass(const void *a, const void *b)
{
    const struct keyed *x = *(const struct keyed *const *)a;
    const struct keyed *y = *(const struct keyed *const *)b;
    int c;

    if ((c = cmp_int(x->p->lane, y->p->lane)) ||
        (c = cmp_int(x->p->kind, y->p->kind)) ||
        (c = cmp_int(x->p->stage, y->p->stage)) ||
        (c = cmp_int(x->p->mb, y->p->mb)))
        return c;
    return (x->p->start > y->p->start) - (x->p->start < y->p->start);
}

static int dir(const struct zb_run_pass *p)
{
    return p->kind != ZB_RUN_F;
}

static int by_key(const void *a, const void *b)
{
    const struct keyed *x = *(const struct keyed *const *)a;
    const struct keyed *y = *(const struct keyed *const *)b;
    int c;

    if ((c = cmp_int(dir(x->p), dir(y->p))) ||
        (c = cmp_int(x->p->stage, y->p->stage)) ||
        (c = cmp_int(x->p->mb, y->p->mb)))
        return c;
    return cmp_int(x->iter, y->iter);
}

/* Occurrences and previous ends; k sorted by lane and start. */
static void number(struct keyed *k, int n)
{
    const struct keyed **idx = zb_xcalloc((size_t)n, sizeof(*idx));

    qsort(k, (size_t)n, sizeof(*k), by_lane_start);
    for (int i = 0; i < n; i++) {
        k[i].prev_end = i > 0 && k[i - 1].p->lane == k[i].p->lane
                        ? k[i - 1].p->end : -INFINITY;
        idx[i] = &k[i];
    }
    qsort(idx, (size_t)n, sizeof(*idx), by_pass);
    for (int i = 0; i < n; i++) {
        const struct zb_run_pass *a = idx[i]->p, *b = i ? idx[i - 1]->p : 0;
        ((struct keyed *)idx[i])->iter =
            b && a->lane == b->lane && a->kind == b->kind &&
            a->stage == b->stage && a->mb == b->mb ? idx[i - 1]->iter + 1 : 0;
    }
    free(idx);
}

/* Transfers the consumer waited for: its lane was idle when the producer
 * ended, so its start minus that end is the transfer (the simulator's
 * rule: start = max(free, end + comm)). */
static void comm_samples(const struct keyed *k, int n, int S,
                         const struct zb_profile *shape,
                         struct sample_set *out)
{
    const struct keyed **idx = zb_xcalloc((size_t)n + 1, sizeof(*idx));
    int m = 0;

    for (int i = 0; i < n; i++)
        if (k[i].p->kind != ZB_RUN_W)
            idx[m++] = &k[i];
    qsort(idx, (size_t)m, sizeof(*idx), by_key);
    for (int i = 0; i < m; i++) {
        const struct zb_run_pass *c = idx[i]->p;
        struct zb_run_pass want = *c;
        struct keyed probe = { &want, idx[i]->iter, 0 };
        const struct keyed *pp = &probe, *const *hit;

        want.stage = dir(c) ? c->stage + 1 : c->stage - 1;
        if (want.stage < 0 || want.stage >= S ||
            zb_profile_stage_rank(shape, want.stage) ==
                zb_profile_stage_rank(shape, c->stage))
            continue;
        hit = bsearch(&pp, idx, (size_t)m, sizeof(*idx), by_key);
        if (!hit || idx[i]->prev_end > (*hit)->p->end ||
            c->start < (*hit)->p->end)
            continue;
        add_sample(out, c->start - (*hit)->p->end);
    }
    free(idx);
}

int zb_measure_run(const struct zb_run *r, const struct zb_measure_opts *o,
                   struct zb_measured *out, struct zb_error *err)
{
    struct sample_set *ss = NULL, comm = { 0 };
    struct keyed *k = NULL;
    int S = 0, M = 0, ndev = 0, rc;
    double scale = zbi_unit_us(o->unit);
    struct zb_profile shape;

    zb_measured_init(out);
    if (scale == 0)
        return zb_error_set(err, ZB_EINVAL, "unit must be us, ms or s, got "
                            "'%s'", o->unit);
    snprintf(out->unit, sizeof(out->unit), "%s", o->unit ? o->unit : "ms");
    if (r->n == 0)
        return zb_error_set(err, ZB_EINVAL, "the traces hold no pass");
    if ((rc = find_shape(r, o, out, err)) < 0)
        return rc;
    S = out->pp * out->vpp;
    shape = (struct zb_profile){ .pp = out->pp, .vpp = out->vpp,
                                 .placement = out->placement };
    for (int i = 0; i < r->n; i++) {
        M = r->passes[i].mb + 1 > M ? r->passes[i].mb + 1 : M;
        ndev += r->passes[i].device;
    }
    if (o->microbatches > 0 && o->microbatches < M)
        return zb_error_set(err, ZB_EINVAL, "the traces name microbatch %d, "
                            "more than --mb %d", M - 1, o->microbatches);
    out->microbatches = o->microbatches > 0 ? o->microbatches : M;
    if (3.0 * S * out->microbatches > ZB_MAX_PASSES)
        return zb_error_set(err, ZB_EINVAL, "%d stages x %d microbatches: "
                            "more passes than a profile may have (%d)", S,
                            out->microbatches, ZB_MAX_PASSES);
    snprintf(out->clock, sizeof(out->clock), "%s", ndev == r->n ? "device"
             : ndev == 0 ? "host" : "mixed");

    ss = zb_xcalloc((size_t)S * ZB_RUN_KINDS, sizeof(*ss));
    for (int i = 0; i < r->n; i++)
        add_sample(&ss[r->passes[i].stage * ZB_RUN_KINDS +
                       r->passes[i].kind],
                   r->passes[i].end - r->passes[i].start);
    zbi_measured_alloc(out, S);
    for (int s = 0; s < S; s++) {
        struct sample_set *x = &ss[s * ZB_RUN_KINDS];
        bool fused = x[ZB_RUN_B].n == 0 && x[ZB_RUN_BW].n > 0;

        if (x[ZB_RUN_F].n == 0 || (x[ZB_RUN_B].n == 0 && !fused)) {
            rc = zb_error_set(err, ZB_EINVAL, "stage %d: the traces hold no "
                              "%s pass", s, x[ZB_RUN_F].n == 0 ? "F"
                              : "backward (I or B)");
            goto out;
        }
        out->t[s][ZB_MEAS_F] = zbi_spread_of(x[ZB_RUN_F].v, x[ZB_RUN_F].n,
                                             scale);
        out->t[s][ZB_MEAS_B] = fused
            ? zbi_spread_of(x[ZB_RUN_BW].v, x[ZB_RUN_BW].n, scale)
            : zbi_spread_of(x[ZB_RUN_B].v, x[ZB_RUN_B].n, scale);
        out->t[s][ZB_MEAS_W] = zbi_spread_of(x[ZB_RUN_W].v, x[ZB_RUN_W].n,
                                             scale);
        out->fused = out->fused || fused;
    }
    k = zb_xcalloc((size_t)r->n, sizeof(*k));
    for (int i = 0; i < r->n; i++)
        k[i].p = &r->passes[i];
    number(k, r->n);
    comm_samples(k, r->n, S, &shape, &comm);
    out->comm = zbi_spread_of(comm.v, comm.n, scale);
    snprintf(out->source, sizeof(out->source), "run");
out:
    for (int i = 0; ss && i < S * ZB_RUN_KINDS; i++)
        free(ss[i].v);
    free(ss);
    free(comm.v);
    free(k);
    return rc;
}

/* ---- The profile of the medians ----------------------------------------- */

int zb_measured_profile(const struct zb_measured *m, struct zb_profile *out,
                        struct zb_error *err)
{
    struct zb_profile_draft d;
    int rc;

    zb_profile_draft_init(&d);
    zb_profile_draft_set_shape(&d, m->pp, m->vpp, m->microbatches,
                               m->placement);
    d.per_rank = m->per_rank;
    d.n_stages = m->n;
    d.stages = zb_xcalloc((size_t)m->n + 1, sizeof(*d.stages));
    for (int i = 0; i < m->n; i++) {
        d.stages[i].f = (struct zb_opt){ m->t[i][ZB_MEAS_F].median, true };
        d.stages[i].b = (struct zb_opt){ m->t[i][ZB_MEAS_B].median, true };
        d.stages[i].w = (struct zb_opt){ m->t[i][ZB_MEAS_W].median, true };
    }
    d.comm = (struct zb_opt){ m->comm.median, true };
    if (m->memory) {
        d.m_b = (struct zb_opt){ m->m_b, true };
        d.m_w = (struct zb_opt){ m->m_w, true };
    }
    rc = zb_profile_build(&d, out, err);
    if (rc < 0)
        zb_error_prefix(err, "the measured profile");
    zb_profile_draft_release(&d);
    return rc;
}
