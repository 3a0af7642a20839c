/* zb.c - `zb`: the memory-aware heuristic. It reads the real per-stage
 * times, comm and per-rank limits and picks the best schedule that fits the
 * limit (cost, then makespan, then memory: best.c) among the paper's
 * constructions (construct.c, construct_v.c), the list scheduler
 * (greedy.c) and every fixed family that serves the profile; then a local
 * search (improve.c) works on that order for the effort budget. So `zb` is
 * never worse than any of its candidates, and equals ZB-H1 at 1F1B's
 * memory. */
#include <stdio.h>
#include "best.h"
#include "improve.h"
#include "zbsched/generator.h"

/* Run the local search on s (the chosen order, from candidate `from`) and
 * say in s->origin where the result came from. */
static void search(const struct zb_profile *p, const struct zb_options *opt,
                   struct zb_schedule *s, const char *from)
{
    struct improve_opts io = {
        .effort = opt->effort != 0 ? opt->effort : improve_default_effort(p),
        .seed = (unsigned)opt->seed, .threads = opt->threads,
    };
    struct improve_stats st = { .chain = -1 };

    /* The chosen order is legal and fits (best.c checked it), so a
     * failure here would be a bug in the search: the chosen order stays,
     * and the pipeline validates whatever s holds. */
    if (io.effort > 0 && improve_order(p, s, &io, &st, NULL) < 0)
        st.chain = -1;
    snprintf(s->origin, sizeof(s->origin), "%s%s", from,
             st.chain >= 0 ? "+search" : "");
}

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
        search(p, opt, s, b.sched->name);
    }
    best_candidates_release(&c);
    return rc;
}

const struct zb_generator zb_gen_zb = {
    .name = "zb",
    .summary = "memory-aware heuristic: real times, comm and limits; best "
               "of the paper's constructions, list scheduling and every "
               "fitting family, then local search (--effort)",
    .placements = ZB_PLACES_LOOP | ZB_PLACES_V, .min_vpp = 1, .max_vpp = 64,
    .memory_aware = true,
    .generate = gen_zb,
};
