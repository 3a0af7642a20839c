/* zb_v.c - ZB-V (Qi et al., "Pipeline parallelism with controllable
 * memory"): two chunks per rank in V placement (rank r holds stages r and
 * 2p-1-r), so the turn at the last stage and the start of the backward
 * stay on one rank without communication; with the B/W split its bubble
 * nearly vanishes within 1F1B's activation memory (p full stages = 2p
 * chunk activations).
 *
 * We place the passes with the list scheduler (greedy.c), on the profile's
 * own times, capped at 2p chunk activations per rank whatever the limit:
 * the family's memory is 1F1B's by definition. Measured against the
 * handcrafted ZB-V this is not yet its equal: at unit times the bubble is
 * about 1.2p passes (4x8: 49 against the optimum 48; 16x32: 211 vs 192). */
#include "families.h"
#include "zbsched/generator.h"

static int gen_zb_v(const struct zb_profile *p, const struct zb_options *opt,
                    struct zb_schedule *s, struct zb_error *err)
{
    struct zb_profile capped;
    int rc;

    (void)opt;
    zb_profile_copy(&capped, p);
    for (int r = 0; r < p->pp; r++)
        capped.mem_limit[r] = 2.0 * p->pp * p->m_b;
    rc = greedy_best(&capped, s, err);
    zb_profile_release(&capped);
    return rc;
}

const struct zb_generator zb_gen_zb_v = {
    .name = "zb-v",
    .summary = "V placement, 2 chunks, B/W split; zero bubble at 1F1B memory",
    .placements = ZB_PLACES_V, .min_vpp = 2, .max_vpp = 2,
    .generate = gen_zb_v,
};
