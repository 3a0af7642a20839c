/* zb.c - `zb`: the memory-aware heuristic. It reads the real per-stage
 * times, comm and per-rank limits, runs the list scheduler (greedy.c)
 * under several policies, and also considers every fixed family that
 * serves the same placement; it keeps the best schedule that fits the
 * limit (cost, then makespan, then memory: best.c). So `zb` is never worse
 * than a fixed family that fits, and equals ZB-H1 at 1F1B's memory. */
#include <stdio.h>
#include "best.h"
#include "zbsched/generator.h"

static int gen_zb(const struct zb_profile *p, const struct zb_options *opt,
                  struct zb_schedule *s, struct zb_error *err)
{
    struct best_candidates c;
    struct best b;
    int rc;

    best_candidates_collect(p, opt, &c);
    best_init(&b);
    for (int i = 0; i < c.n; i++)
        best_consider(&b, &c.s[i]);
    if ((rc = best_result(&b, p, err)) == 0) {
        zb_schedule_copy_order(s, b.sched);
        snprintf(s->origin, sizeof(s->origin), "%s", b.sched->name);
    }
    best_candidates_release(&c);
    return rc;
}

const struct zb_generator zb_gen_zb = {
    .name = "zb",
    .summary = "memory-aware heuristic: real times, comm and limits; best "
               "of list scheduling and every fitting family",
    .placements = ZB_PLACES_LOOP | ZB_PLACES_V, .min_vpp = 1, .max_vpp = 64,
    .memory_aware = true,
    .generate = gen_zb,
};
