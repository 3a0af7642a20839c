/* evaluate.c - one split in one shape: the conservative profile zb
 * schedules on, the zb run, and the exact measures of its order.
 *
 * The profile: per-stage times from the split's layers; comm the slowest
 * boundary's transfer; memory in GiB with one M_B, the largest stage
 * activation, and per rank a limit that makes that M_B stand for the
 * rank's own largest stage: rank r's budget (--gpu-mem less its model
 * state and buffers) times M_B / (its largest stage activation). zb
 * counts microbatches in flight per rank, so the order it returns holds,
 * on every rank, at most what that rank's real bytes allow (M_W / M_B is
 * the largest act_w / act ratio of any rank, so what B keeps is covered
 * too). The order is then measured with each stage's bytes and each
 * boundary's comm. */
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
    return s->exists && s->fits ? s->cost : INFINITY;
}

struct stage_info {
    struct zb_stage_bytes *st;      /* per stage */
    double *comm;                   /* per boundary */
    double *budget, *amax, *wmax;   /* per rank */
};

static void stage_info(struct zbi_plan_ctx *c, const struct zb_profile *sh,
                       const int *counts, struct stage_info *si)
{
    int n = zb_profile_stages(sh), at = 0, pp = sh->pp;

    si->st = zb_xcalloc((size_t)n, sizeof(*si->st));
    si->comm = zb_xcalloc((size_t)n, sizeof(*si->comm));
    si->budget = zb_xcalloc((size_t)pp, sizeof(double));
    si->amax = zb_xcalloc((size_t)pp, sizeof(double));
    si->wmax = zb_xcalloc((size_t)pp, sizeof(double));
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
    free(si->budget);
    free(si->amax);
    free(si->wmax);
}

/* Model state, buffers and the least activation any schedule holds
 * (one microbatch of each of its stages: the first microbatch's F runs
 * through all of a rank's chunks before its first B). */
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

/* The conservative profile (file comment): 0, or 1 when some rank's
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
    double mb = 0, rho = 0, comm = 0;

    for (int s = 0; s < n; s++) {
        int r = zb_profile_stage_rank(sh, s);
        if (si->st[s].act > si->amax[r])
            si->amax[r] = si->st[s].act;
        if (si->st[s].act_w > si->wmax[r])
            si->wmax[r] = si->st[s].act_w;
        if (s + 1 < n && si->comm[s] > comm)
            comm = si->comm[s];
    }
    for (int r = 0; r < pp; r++) {
        if (si->amax[r] > mb)
            mb = si->amax[r];
        if (si->amax[r] > 0 && si->wmax[r] / si->amax[r] > rho)
            rho = si->wmax[r] / si->amax[r];
        si->budget[r] = c->rq->gpu_mem - floor[r].model_state -
                        floor[r].buffers;
        if (limited && floor[r].total > c->rq->gpu_mem)
            return 1;
    }
    mb = fmax(mb / GIB, ZB_VALUE_MIN);
    zb_profile_draft_init(&d);
    zb_profile_draft_set_shape(&d, pp, sh->vpp, sh->microbatches,
                               sh->placement);
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
    }
    d.comm = (struct zb_opt){ comm, true };
    d.m_b = (struct zb_opt){ mb, true };
    d.m_w = (struct zb_opt){ rho * mb, true };
    if (limited) {
        d.limit_kind = ZB_LIMIT_ARRAY;
        d.limits = zb_xcalloc((size_t)pp, sizeof(double));
        d.n_limits = pp;
        for (int r = 0; r < pp; r++) {
            double l = si->amax[r] > 0
                           ? si->budget[r] / GIB * mb / (si->amax[r] / GIB)
                           : ZB_VALUE_MAX;
            d.limits[r] = fmin(l, ZB_VALUE_MAX);
            /* The profile's own rule: room for a microbatch a chunk. */
            if (d.limits[r] < sh->vpp * mb) {
                zb_profile_draft_release(&d);
                return 1;
            }
        }
    }
    rc = zb_profile_build(&d, out, err);
    zb_profile_draft_release(&d);
    return rc;
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
    if ((rc = zb_plan_retime(&out->sched, si.comm, &out->cost,
                             &out->makespan, &out->bubble_ratio, err)) < 0)
        goto out;
    peak = zb_xmalloc((size_t)sh.pp * sizeof(double));
    zb_memory_replay(&out->sched, si.st, peak);
    out->fits = true;
    for (int r = 0; r < sh.pp; r++) {
        struct zb_memory_rank *k = &out->ranks[r];
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
