/* zb_h2.c - ZB-H2 (Zero Bubble paper, section 2.2): more warm-up forwards
 * (2(p-r)-1 on rank r) and W passes reordered in the tail, turning the
 * pipeline into a parallelogram with no bubble at unit times once
 * m >= 2p-1, at (2p-1) microbatches of memory.
 *
 * The shape is defined at unit times: we run the list scheduler on a
 * unit-time copy of the profile with a limit of 2p-1 microbatches in
 * flight, and keep its order for the real times. */
#include "build/build.h"
#include "families/families.h"
#include "zbsched/generator.h"

static int gen_zb_h2(const struct zb_profile *p, const struct zb_options *opt,
                     struct zb_schedule *s, struct zb_error *err)
{
    struct greedy_policy pol = { 0, 0, 0, 0 };
    struct zb_profile unit;
    int rc;

    (void)opt;
    zbi_unit_profile(p, &unit, 2.0 * p->pp - 1);
    rc = zbi_greedy_schedule(&unit, &pol, s, err);
    zb_profile_release(&unit);
    return rc;
}

const struct zb_generator zb_gen_zb_h2 = {
    .name = "zb-h2",
    .summary = "extra warm-up F, W reordered; zero bubble at (2p-1) memory",
    .placements = ZB_PLACES_LOOP, .min_vpp = 1, .max_vpp = 1,
    .generate = gen_zb_h2,
};
