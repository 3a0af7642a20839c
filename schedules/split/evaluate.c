/* evaluate.c - one split in one shape: the profile zb schedules on, the
 * zb run, and the measures of its order.
 *
 * The profile is the split as the schedule layer sees it: per-stage
 * times from its layers, each stage's activations in GiB (M_B, M_W),
 * each boundary's transfer time (zb_plan_boundary_comm()), each stage's
 * parameters at the model's bytes per parameter, the data-parallel ring
 * and ZeRO stage (dp >= 2), and per rank a limit of --gpu-mem less its
 * buffers. The profile counts the model state against that limit
 * (profile.h, mem_total: the one count, which the plan reports), and the
 * schedule's times, collectives and memory are then the plan's; the
 * bytes of the activation peak are replayed from the layers
 * (zb_memory_replay()). */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "split/split_int.h"
#include "zbsched/generator.h"
#include "zbsched/memory_model.h"
#include "zbsched/xalloc.h"

#define GIB 1073741824.0

int zbi_plan_shape(const struct zbi_plan_ctx *c, enum zb_placement pl,
                   int vpp, struct zb_profile *out, struct zb_error *err)
{
    if (pl == ZB_PLACEMENT_V && vpp != 2)
        return zb_error_set(err, ZB_EINVAL, "placement v needs vpp 2, got "
                            "%d", vpp);
    /* Only the shape: the placement maps of profile.h read these. */
    memset(out, 0, sizeof(*out));
    out->pp = c->rq->pp;
    out->vpp = vpp;
    out->microbatches = c->rq->microbatches;
    out->placement = pl;
    return 0;
}

void zbi_plan_split_release(struct zb_plan_split *s)
{
    if (!s)
        return;
    free(s->counts);
    free(s->ranks);
    if (s->sched.ranks)
        zb_schedule_release(&s->sched);
    memset(s, 0, sizeof(*s));
}

double zbi_plan_score(const struct zb_plan_split *s)
{
    return s->exists && s->fits ? s->step : INFINITY;
}

struct stage_info {
    struct zb_stage_bytes *st;      /* per stage */
    double *comm;                   /* per boundary */
};

static void stage_info(struct zbi_plan_ctx *c, const struct zb_profile *sh,
                       const int *counts, struct stage_info *si)
{
    int n = zb_profile_stages(sh), at = 0;

    si->st = zb_xcalloc((size_t)n, sizeof(*si->st));
    si->comm = zb_xcalloc((size_t)n, sizeof(*si->comm));
    for (int s = 0; s < n; s++) {
        zb_memory_stage_bytes(c->m, at, counts[s], &si->st[s]);
        at += counts[s];
    }
    zb_plan_boundary_comm(c->m, c->rq, sh, counts, si->comm);
}

static void stage_info_release(struct stage_info *si)
{
    free(si->st);
    free(si->comm);
}

/* Model state, buffers and the least activation any schedule holds
 * (one microbatch of each of its stages: the first microbatch's F runs
 * through all of a rank's chunks before its first B). The model state
 * is memory_model.h's, the profile's count in bytes (a unit test holds
 * them equal); a scheduled split reports the profile's own. */
static void rank_floor(struct zbi_plan_ctx *c, const struct zb_profile *sh,
                       const struct stage_info *si,
                       struct zb_memory_rank *ranks)
{
    for (int r = 0; r < sh->pp; r++) {
        struct zb_memory_rank *k = &ranks[r];
        *k = (struct zb_memory_rank){ 0 };
        for (int s = 0; s < zb_profile_stages(sh); s++)
            if (zb_profile_stage_rank(sh, s) == r) {
                k->model_state += si->st[s].params * c->state_per_param;
                k->activations += si->st[s].act;
            }
        k->buffers = zb_memory_buffers(sh, si->st, r);
        k->total = k->model_state + k->activations + k->buffers;
    }
}

/* The model state and, with dp >= 2, the collectives into d: each
 * stage's parameters, the model's bytes per parameter, and the ring in
 * the model's time unit (the profile has none: its times are plain). */
static void draft_dp(const struct zbi_plan_ctx *c, const struct stage_info *si,
                     int n, struct zb_dp_draft *d)
{
    const struct zb_plan_request *rq = c->rq;
    double unit = zb_time_unit_seconds(c->m->time_unit), bw, lat;

    d->params_list = zb_xmalloc((size_t)n * sizeof(double));
    d->n_params = n;
    for (int s = 0; s < n; s++)
        d->params_list[s] = si->st[s].params;
    d->bytes_weight = c->m->bytes_weight;
    d->bytes_grad = c->m->bytes_grad;
    d->bytes_optim = c->m->bytes_optim;
    if (rq->dp < 2)
        return;
    zb_plan_dp_link(rq, &bw, &lat);
    d->degree = rq->dp;
    d->zero = rq->zero;
    d->bandwidth = bw * unit;
    d->latency = lat / unit;
    d->units = rq->dpx.units;
    d->prefetch = rq->dpx.prefetch;
    d->reduce = rq->dpx.reduce;
}

/* The split's profile (file comment): 0, or 1 when some rank's
 * budget cannot take one microbatch of each of its stages (then nothing
 * is built), or the profile's error (a shape too large). Times of 0 (an
 * embedding's B) become ZB_VALUE_MIN: a profile's times are > 0. */
static int build_profile(struct zbi_plan_ctx *c, const struct zb_profile *sh,
                         const int *counts, const struct stage_info *si,
                         const struct zb_memory_rank *floor, bool limited,
                         struct zb_profile *out, struct zb_error *err)
{
    int n = zb_profile_stages(sh), pp = sh->pp, at = 0, rc;
    struct zb_profile_draft d;

    for (int r = 0; r < pp; r++)
        if (limited && floor[r].total > c->rq->gpu_mem)
            return 1;
    zb_profile_draft_init(&d);
    zb_profile_draft_set_shape(&d, pp, sh->vpp, sh->microbatches,
                               sh->placement);
    draft_dp(c, si, n, &d.dp);
    d.stages = zb_xcalloc((size_t)n, sizeof(*d.stages));
    d.n_stages = n;
    for (int s = 0; s < n; s++) {
        struct zb_draft_stage *t = &d.stages[s];
        for (int k = 0; k < counts[s]; k++, at++) {
            t->f.value += c->m->layers[at].f;
            t->b.value += c->m->layers[at].b;
            t->w.value += c->m->layers[at].w;
        }
        t->f.value = fmax(t->f.value, ZB_VALUE_MIN);
        t->b.value = fmax(t->b.value, ZB_VALUE_MIN);
        t->w.value = fmax(t->w.value, ZB_VALUE_MIN);
        t->f.set = t->b.set = t->w.set = true;
        /* A stage that keeps nothing still counts: M_B is > 0. */
        t->m_b = (struct zb_opt){ fmax(si->st[s].act / GIB, ZB_VALUE_MIN),
                                  true };
        t->m_w = (struct zb_opt){ si->st[s].act_w / GIB, true };
        t->m_b_sized = t->m_w_sized = true;
        if (s + 1 < n)
            t->comm = (struct zb_opt){ si->comm[s], true };
    }
    if (limited) {
        d.limit_kind = ZB_LIMIT_ARRAY;
        d.limit_sized = true;
        d.limits = zb_xcalloc((size_t)pp, sizeof(double));
        d.n_limits = pp;
        for (int r = 0; r < pp; r++)
            d.limits[r] = fmin((c->rq->gpu_mem - floor[r].buffers) / GIB,
                               ZB_VALUE_MAX);
    }
    rc = zb_profile_build(&d, out, err);
    zb_profile_draft_release(&d);
    /* A budget below one microbatch a chunk: the split is unscheduled. */
    return rc == ZB_ENOMEM_LIMIT ? 1 : rc;
}

int zbi_plan_evaluate(struct zbi_plan_ctx *c, enum zb_placement pl, int vpp,
                      const int *counts, double effort, bool limited,
                      struct zb_plan_split *out, struct zb_error *err)
{
    const struct zb_generator *zb = zb_generator_find("zb");
    struct zb_profile sh, prof;
    struct stage_info si;
    struct zb_options opt;
    struct zb_error e2 = { 0 };
    double *peak;
    int n, rc;

    memset(out, 0, sizeof(*out));
    if ((rc = zbi_plan_shape(c, pl, vpp, &sh, err)) < 0)
        return rc;
    n = zb_profile_stages(&sh);
    out->exists = true;
    out->vpp = vpp;
    out->placement = pl;
    out->nstages = n;
    out->effort = effort;
    out->counts = zb_xmalloc((size_t)n * sizeof(int));
    memcpy(out->counts, counts, (size_t)n * sizeof(int));
    out->ranks = zb_xcalloc((size_t)sh.pp, sizeof(*out->ranks));
    stage_info(c, &sh, counts, &si);
    rank_floor(c, &sh, &si, out->ranks);
    /* A limit below one microbatch a chunk, or no order zb finds within
     * the limits: the split is unscheduled, not an error. */
    if ((rc = build_profile(c, &sh, counts, &si, out->ranks, limited,
                            &prof, err)) != 0) {
        rc = rc > 0 ? 0 : rc;
        goto out;
    }
    zb_options_init(&opt);
    opt.effort = effort;
    c->evaluations++;
    rc = zb_generator_run(zb, &prof, &opt, &out->sched, &e2);
    zb_profile_release(&prof);
    if (rc < 0)
        memset(&out->sched, 0, sizeof(out->sched));
    if (rc == ZB_ENOMEM_LIMIT || rc == ZB_EUNSUPPORTED) {
        rc = 0;
        goto out;
    }
    if (rc < 0) {
        zb_error_set(err, rc, "zb on a split: %s", e2.msg);
        goto out;
    }
    out->scheduled = true;
    out->cost = out->sched.predicted.cost;
    out->makespan = out->sched.predicted.makespan;
    out->bubble_ratio = out->sched.predicted.bubble_ratio;
    out->step = zb_dp_active(&out->sched.profile)
                    ? out->sched.predicted.step_time : out->cost;
    peak = zb_xmalloc((size_t)sh.pp * sizeof(double));
    zb_memory_replay(&out->sched, si.st, peak);
    out->fits = true;
    for (int r = 0; r < sh.pp; r++) {
        struct zb_memory_rank *k = &out->ranks[r];
        k->model_state = zb_profile_model_state(&out->sched.profile, r) *
                         GIB;
        k->activations = peak[r];
        k->total = k->model_state + k->activations + k->buffers;
        if (k->total > c->rq->gpu_mem * (1 + 1e-9))
            out->fits = false;
    }
    free(peak);
out:
    stage_info_release(&si);
    return rc;
}
