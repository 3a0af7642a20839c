/* zb_v.c - ZB-V (Qi et al., "Pipeline parallelism with controllable
 * memory"): two chunks per rank in V placement (rank r holds stages r and
 * 2p-1-r), so the turn at the last stage and the start of the backward
 * stay on one rank without communication; with the B/W split its bubble
 * nearly vanishes within 1F1B's activation memory (p full stages = 2p
 * chunk activations).
 *
 * The family's memory is 1F1B's by definition: every rank builds under
 * 2p chunk activations whatever the profile's limit. Two candidates, the
 * better kept (cost, then makespan, then peak memory; the construction on
 * a tie): the paper's construction (construct_v.c) and the list
 * scheduler (greedy.c), which was this family alone before; the
 * construction reaches zero bubble at unit times and beats the list on
 * the paper's settings and random profiles (docs/tuning.md, "ZB-V
 * family: construction and list scheduler"). */
#include <stddef.h>
#include "build/build.h"
#include "families/families.h"
#include "zbsched/generator.h"
#include "zbsched/measures.h"
#include "zbsched/sim.h"

/* Measure an order that came with its times (both builders time their
 * passes as the simulator does); whether it is usable. */
static bool timed(int rc, struct zb_schedule *c)
{
    return rc == 0 && zb_sim_measure(c, NULL) == 0;
}

bool zbi_zb_v_choose(const struct zb_schedule *con,
                     const struct zb_schedule *list, struct zb_schedule *s)
{
    if (list && (!con || zb_measures_better(&list->predicted,
                                            &con->predicted,
                                            list->profile.pp)))
        zb_schedule_copy_order(s, list);
    else if (con)
        zb_schedule_copy_order(s, con);
    return con || list;
}

static int gen_zb_v(const struct zb_profile *p, const struct zb_options *opt,
                    struct zb_schedule *s, struct zb_error *err)
{
    struct zb_profile capped;
    struct zb_schedule con, list;
    struct zb_error why = { 0 };
    bool have_con, have_list;
    int rc = 0;

    (void)opt;
    zb_profile_copy(&capped, p);
    for (int r = 0; r < p->pp; r++)
        capped.mem_limit[r] = zb_profile_1f1b_peak(p);
    zb_schedule_init(&con, s->name, &capped);
    zb_schedule_init(&list, s->name, &capped);
    have_con = timed(zbi_construct_v(&capped, CONSTRUCT_V_PAPER, &con, &why),
                     &con);
    have_list = timed(zbi_greedy_best(&capped, &list, NULL), &list);
    if (!zbi_zb_v_choose(have_con ? &con : NULL, have_list ? &list : NULL,
                         s))
        rc = zb_error_set(err, why.code ? why.code : ZB_EILLEGAL, "%s",
                          why.code ? why.msg : "no ZB-V order found");
    zb_schedule_release(&con);
    zb_schedule_release(&list);
    zb_profile_release(&capped);
    return rc;
}

const struct zb_generator zb_gen_zb_v = {
    .name = "zb-v",
    .summary = "V placement, 2 chunks, B/W split; zero bubble at 1F1B memory",
    .placements = ZB_PLACES_V, .min_vpp = 2, .max_vpp = 2,
    .shape_placement = ZB_PLACEMENT_V, .shape_vpp = 2, .peak_cap = 1,
    .generate = gen_zb_v,
};
