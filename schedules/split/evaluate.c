/* evaluate.c - one split in one shape: the profile zb schedules on, the
 * zb run, and the measures of its order.
 *
 * The profile is the split as the schedule layer sees it: per-stage
 * times from its layers, each stage's activations in GiB (M_B, M_W),
 * each boundary's transfer time (zb_plan_boundary_comm()), and per rank
 * a limit of its budget, --gpu-mem less its model state and buffers.
 * The schedule's times and memory are then the plan's; the bytes of the
 * activation peak are replayed from the layers (zb_memory_replay()). */
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
    double *budget;                 /* per rank */
};

static void stage_info(struct zbi_plan_ctx *c, const struct zb_profile *sh,
                       const int *counts, struct stage_info *si)
{
    int n = zb_profile_stages(sh), at = 0, pp = sh->pp;

    si->st = zb_xcalloc((size_t)n, sizeof(*si->st));
    si->comm = zb_xcalloc((size_t)n, sizeof(*si->comm));
    si->budget = zb_xcalloc((size_t)pp, sizeof(double));
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

    for (int r = 0; r < pp; r++) {
        si->budget[r] = c->rq->gpu_mem - floor[r].model_state -
                        floor[r].buffers;
        if (limited && floor[r].total > c->rq->gpu_mem)
            return 1;
    }
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
            d.limits[r] = fmin(si->budget[r] / GIB, ZB_VALUE_MAX);
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
