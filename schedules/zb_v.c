/* zb_v.c - ZB-V (Qi et al., "Pipeline parallelism with controllable
 * memory"): two chunks per rank in V placement (rank r holds stages r and
 * 2p-1-r), so the turn at the last stage and the start of the backward
 * stay on one rank without communication. With the B/W split it reaches
 * zero bubble at unit times within 1F1B's activation memory (p full
 * stages = 2p chunk activations).
 *
 * Like ZB-H2 the shape is fixed at unit times: the list scheduler on a
 * unit-time copy of the profile limited to 2p chunk activations. */
#include "families.h"
#include "zbsched/generator.h"

static int gen_zb_v(const struct zb_profile *p, struct zb_schedule *s,
                    struct zb_error *err)
{
    struct zb_greedy_policy pol = { ZB_GREEDY_B_FIRST, 0 };
    struct zb_profile unit;
    int rc;

    zb_unit_profile(p, &unit, 2.0 * p->pp);
    rc = zb_greedy(&unit, &pol, s, err);
    zb_profile_release(&unit);
    return rc;
}

const struct zb_generator zb_gen_zb_v = {
    .name = "zb-v",
    .summary = "V placement, 2 chunks, B/W split; zero bubble at 1F1B memory",
    .placements = ZB_PLACES_V, .min_vpp = 2, .max_vpp = 2,
    .generate = gen_zb_v,
};
