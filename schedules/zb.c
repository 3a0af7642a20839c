/* zb.c - `zb`: the memory-aware heuristic. It reads the real per-stage
 * times, comm and per-rank limits, runs the list scheduler (greedy.c)
 * under several policies, and also considers every fixed family that
 * serves the same placement; it keeps the best schedule that fits the
 * limit (cost, then makespan, then memory). So `zb` is never worse than a
 * fixed family that fits, and equals ZB-H1 at 1F1B's memory. */
#include <math.h>
#include <string.h>
#include "families.h"
#include "zbsched/generator.h"
#include "zbsched/sim.h"

struct best {
    struct zb_schedule sched;
    bool have;
    /* Over-limit candidates: how far over the leanest one is, to tell the
     * user what limit would do. */
    double least_over;         /* smallest max over ranks of peak/limit */
    int over_rank;
    double over_peak;
};

static void consider(struct best *b, struct zb_schedule *cand)
{
    const struct zb_measures *x = &cand->predicted, *y = &b->sched.predicted;

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
        goto drop;
    }
    if (b->have && !zb_measures_better(x, y, cand->profile.pp))
        goto drop;
    if (b->have)
        zb_schedule_release(&b->sched);
    b->sched = *cand;
    b->have = true;
    return;
drop:
    zb_schedule_release(cand);
}

static int gen_zb(const struct zb_profile *p, struct zb_schedule *s,
                  struct zb_error *err)
{
    struct best b = { .have = false, .least_over = INFINITY };
    struct zb_schedule c;

    /* Timing an order is enough to compare; the winner is lowered and
     * validated by zb_generate() like any generator's order. */
    zb_schedule_init(&c, "zb", p);
    if (greedy_best(p, &c, NULL) == 0 && zb_sim_run(&c, NULL) == 0)
        consider(&b, &c);
    else
        zb_schedule_release(&c);
    /* The fixed families as candidates: their order, timed. */
    for (int i = 0; zb_generators[i]; i++) {
        const struct zb_generator *g = zb_generators[i];
        if (g->memory_aware || zb_generator_accepts(g, p, NULL) < 0)
            continue;
        zb_schedule_init(&c, "zb", p);
        if (g->generate(p, &c, NULL) < 0 || zb_sim_run(&c, NULL) < 0) {
            zb_schedule_release(&c);
            continue;
        }
        consider(&b, &c);
    }
    if (!b.have && isfinite(b.least_over))
        return zb_error_set(err, ZB_ENOMEM_LIMIT,
                            "no schedule fits the memory limit: the leanest "
                            "found needs %g on rank %d (limit %g)",
                            b.over_peak, b.over_rank,
                            p->mem_limit[b.over_rank]);
    if (!b.have)
        return zb_error_set(err, ZB_ENOMEM_LIMIT,
                            "no schedule fits the memory limit");
    zb_schedule_copy_order(s, &b.sched);
    zb_schedule_release(&b.sched);
    return 0;
}

const struct zb_generator zb_gen_zb = {
    .name = "zb",
    .summary = "memory-aware heuristic: real times, comm and limits; best "
               "of list scheduling and every fitting family",
    .placements = ZB_PLACES_LOOP | ZB_PLACES_V, .min_vpp = 1, .max_vpp = 64,
    .memory_aware = true,
    .generate = gen_zb,
};
