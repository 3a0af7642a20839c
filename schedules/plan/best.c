/* best.c - the candidates `zb` and the `ilp` warm start choose from, and
 * the choice (see best.h). */
#include <math.h>
#include <stdlib.h>
#include "plan/best.h"
#include "build/families.h"
#include "build/construct.h"
#include "build/construct_v.h"
#include "build/warm_depth.h"
#include "zbsched/bound.h"
#include "zbsched/dp.h"
#include "zbsched/generator.h"
#include "zbsched/pass.h"
#include "zbsched/sim.h"
#include "zbsched/xalloc.h"

/* The largest profile (passes) on which `zb` also builds ZB-V with full
 * ranks making room with a B: that second construction adds about 40 %
 * to a V profile's whole run (the paper's 28.3B times, 1.5p: p 64, m 512
 * 1.53 -> 2.08 s; m 1024 3.3 -> 4.6 s, past the 3 s target), so the
 * largest pipelines keep the paper's alone. */
#define B_ROOM_MAX_PASSES 200000L

/* What a candidate's builder leaves besides the order. */
enum came {
    CAME_ORDER,     /* the order alone: simulated here */
    CAME_TIMED,     /* with the simulator's times: measured here
                       (zb_sim_measure()) */
    CAME_SIMULATED  /* simulated, bounds included */
};

/* Whether s meets both its lower bounds (cost, then makespan: the first
 * two keys of zb_measures_better()) within the memory a user would give
 * it: its own limit on a limited rank, 1F1B's peak on an unlimited one
 * (there the list scheduler, optimal, ran all 1024 microbatches of p 64,
 * m 1024 at once, 16 times 1F1B's peak, where the ZB-V construction at
 * 1F1B's memory is optimal too). */
static bool settles(const struct zb_schedule *s)
{
    const struct zb_measures *m = &s->predicted;
    const struct zb_profile *p = &s->profile;

    if (!m->fits_memory || !zbi_best_meets_bound(s) ||
        m->makespan > m->makespan_bound * (1 + 1e-9))
        return false;
    for (int r = 0; r < p->pp; r++)
        if (!isfinite(p->mem_limit[r]) &&
            m->ranks[r].peak_memory > zb_profile_1f1b_peak(p) * (1 + 1e-9))
            return false;
    return true;
}

/* Keep the order in out->s[out->n] (named after its origin), with its
 * measures (`how` it came), when rc says the candidate built; else drop
 * it. A kept candidate that settles (settles()) settles the collection:
 * without data parallelism (where the step decides, which the bounds do
 * not cover) a later one could at best tie it on cost and makespan, and
 * win only on memory, which the limit already caps. At p 64, m 1024
 * under V, where the list scheduler, built first, is often such a
 * candidate, the rest took 2.7 of 3.5 s. */
static void keep(struct best_candidates *out, int rc, enum came how)
{
    struct zb_schedule *c = &out->s[out->n];

    if (rc == 0 && (how == CAME_SIMULATED ||
                    (how == CAME_TIMED ? zb_sim_measure(c, NULL)
                                       : zb_sim_run(c, NULL)) == 0)) {
        out->settled = out->settled ||
                       (!zb_dp_active(&c->profile) && settles(c));
        out->n++;
    } else {
        zb_schedule_release(c);
    }
}

/* keep() a timed order (both extra starts come so) that, when kept, is
 * the extra start (best.h). */
static void keep_extra(struct best_candidates *out, int rc)
{
    int at = out->n;

    keep(out, rc, CAME_TIMED);
    if (out->n > at)
        out->extra = at;
}

/* The lower bound at a memory cap (outclassed()), kept for the next
 * family with the same cap: zb-v, V-Half and V-Min share 1F1B's, and
 * the bound at p 64, m 1024 takes about 4 ms. cap 0: none yet. */
struct cap_bound {
    double cap, bound;
};

/* Whether the fixed family g cannot beat the candidates kept so far: it
 * never holds more than g->peak_cap times 1F1B's peak on a rank, and one
 * of them that fits costs less than the lower bound at that memory (each
 * rank's limit, or the cap where lower), so g would cost more, and cost
 * decides first (zb_measures_better()). Not with data parallelism, where
 * the step decides. At p 64, m 1024 under V at 1.5p (the paper's 1.5B
 * times) the `zb-v` family, ZB-V and the list scheduler once more at
 * 1F1B's memory, took 0.9 of the 3.9 s, V-Half and V-Min 0.3 more. */
static bool outclassed(const struct best_candidates *c,
                       const struct zb_generator *g,
                       const struct zb_profile *p, struct cap_bound *cb)
{
    struct zb_profile q;
    double least = INFINITY, cap = g->peak_cap * zb_profile_1f1b_peak(p);

    if (!(g->peak_cap > 0) || zb_dp_active(p))
        return false;
    for (int i = 0; i < c->n; i++)
        if (c->s[i].predicted.fits_memory)
            least = fmin(least, c->s[i].predicted.cost);
    if (!isfinite(least))
        return false;
    if (cb->cap != cap) {
        zb_profile_copy(&q, p);
        for (int r = 0; r < p->pp; r++)
            q.mem_limit[r] = fmin(p->mem_limit[r], cap);
        *cb = (struct cap_bound){ cap, zb_bound_cost(&q) };
        zb_profile_release(&q);
    }
    return least < cb->bound * (1 - 1e-9);
}

bool zbi_best_meets_bound(const struct zb_schedule *s)
{
    return s->predicted.cost <= s->predicted.lower_bound * (1 + 1e-9);
}

void zbi_best_candidates_collect(const struct zb_profile *p,
                             const struct zb_options *opt,
                             struct best_candidates *out)
{
    struct cap_bound cb = { 0, 0 };
    int cap = 4, families = 0;

    while (zb_generators[families])
        families++;
    cap += families;
    out->s = zb_xcalloc((size_t)cap, sizeof(*out->s));
    out->outclassed = zb_xcalloc((size_t)families, sizeof(bool));
    out->n = 0;
    out->extra = -1;
    out->capped = -1;
    out->settled = false;
    /* Timing an order is enough to compare; the winner is lowered and
     * validated by zb_generator_run() like any generator's order. Each
     * candidate is named after where its order comes from. */
    zb_schedule_init(&out->s[out->n], "list-scheduler", p);
    keep(out, zbi_greedy_best(p, &out->s[out->n], NULL), CAME_TIMED);
    /* Under V below 1F1B's memory and interleaved placement, with its
     * warm-up depths searched (families.h); elsewhere it declines. Not
     * where the list scheduler already meets the cost bound: the caps
     * could only save memory, which an unlimited rank (not settled by
     * it) does not ask for, and at p 32, m 256 under interleaved without
     * a limit their search took 1 s. */
    if (!out->settled && !(out->n > 0 && zbi_best_meets_bound(&out->s[0]))) {
        int at = out->n;
        zb_schedule_init(&out->s[out->n], "capped-list", p);
        keep(out, zbi_greedy_capped(p, &out->s[out->n], NULL), CAME_TIMED);
        if (out->n > at)
            out->capped = at;
    }
    /* The paper's construction comes simulated (construct.h). */
    if (p->placement == ZB_PLACEMENT_LOOP && p->vpp == 1 &&
        !out->settled) {
        zb_schedule_init(&out->s[out->n], "zb-construct", p);
        keep(out, zbi_construct_loop(p, &out->s[out->n], NULL), CAME_SIMULATED);
        if (!out->settled) {
            zb_schedule_init(&out->s[out->n], "warm-depth", p);
            keep_extra(out, zbi_warm_depth_loop(p, &out->s[out->n], NULL));
        }
    }
    /* ZB-V built the paper's way, at the profile's own limit; then with
     * full ranks making room with a B (construct_v.h) as the extra
     * start. */
    if (p->placement == ZB_PLACEMENT_V && p->vpp == 2 && !out->settled) {
        zb_schedule_init(&out->s[out->n], "zb-v-construct", p);
        keep(out, zbi_construct_v(p, CONSTRUCT_V_PAPER, &out->s[out->n], NULL),
             CAME_TIMED);
        if (zb_pass_count(p) <= B_ROOM_MAX_PASSES && !out->settled) {
            zb_schedule_init(&out->s[out->n], "zb-v-b-room", p);
            keep_extra(out, zbi_construct_v(p, CONSTRUCT_V_B_ROOM,
                                        &out->s[out->n], NULL));
        }
    }
    out->fixed = out->n;
    /* The fixed families as candidates: their order, timed. After
     * Ctrl-C (ilp) the candidates so far must do. */
    for (int i = 0; zb_generators[i]; i++) {
        const struct zb_generator *g = zb_generators[i];
        if ((opt && opt->interrupt && *opt->interrupt) || out->settled)
            break;
        if (g->memory_aware || g->overlaps ||
            zb_generator_accepts(g, p, NULL) < 0)
            continue;
        if (outclassed(out, g, p, &cb)) {
            out->outclassed[i] = true;
            continue;
        }
        zb_schedule_init(&out->s[out->n], g->name, p);
        keep(out, g->generate(p, opt, &out->s[out->n], NULL), CAME_ORDER);
    }
}

void zbi_best_candidates_release(struct best_candidates *c)
{
    for (int i = 0; i < c->n; i++)
        zb_schedule_release(&c->s[i]);
    free(c->s);
    free(c->outclassed);
    c->s = NULL;
    c->outclassed = NULL;
    c->n = 0;
}

void zbi_best_init(struct best *b)
{
    *b = (struct best){ .sched = NULL, .least_over = INFINITY };
}

void zbi_best_consider(struct best *b, const struct zb_schedule *cand)
{
    const struct zb_measures *x = &cand->predicted;

    if (!x->fits_memory) {
        double worst = 0;
        int rank = 0;
        for (int r = 0; r < cand->profile.pp; r++) {
            double ratio = x->ranks[r].peak_memory /
                           cand->profile.mem_limit[r];
            if (ratio > worst) {
                worst = ratio;
                rank = r;
            }
        }
        if (worst < b->least_over) {
            b->least_over = worst;
            b->over_rank = rank;
            b->over_peak = x->ranks[rank].peak_memory;
        }
        return;
    }
    if (b->sched && !zb_measures_better(x, &b->sched->predicted,
                                        cand->profile.pp))
        return;
    b->sched = cand;
}

int zbi_best_result(const struct best *b, const struct zb_profile *p,
                struct zb_error *err)
{
    if (b->sched)
        return 0;
    if (isfinite(b->least_over))
        return zb_error_set(err, ZB_ENOMEM_LIMIT,
                            "no schedule fits the memory limit: the leanest "
                            "found needs %g on rank %d (limit %g)",
                            b->over_peak, b->over_rank,
                            p->mem_limit[b->over_rank]);
    return zb_error_set(err, ZB_ENOMEM_LIMIT,
                        "no schedule fits the memory limit");
}
