/* zb_h1.c - ZB-H1 (Zero Bubble paper, section 2.2): 1F1B with the backward
 * split into B and W, and W passes deferred as far as 1F1B's own peak
 * (p microbatches) allows. The tail's B passes then run back to back and
 * the bubble drops from 3(p-1) to p-1 at unit times, at 1F1B's memory. */
#include "families/families.h"

static int gen_zb_h1(const struct zb_profile *p, const struct zb_options *opt,
                     struct zb_schedule *s, struct zb_error *err)
{
    (void)opt;
    (void)err;
    zbi_order_1f1b(p, s);
    zbi_split_deferred(s, zbi_max_in_flight(s));
    return 0;
}

const struct zb_generator zb_gen_zb_h1 = {
    .name = "zb-h1",
    .summary = "1F1B with B/W split, W deferred; 1F1B memory, bubble ~1/3",
    .placements = ZB_PLACES_LOOP, .min_vpp = 1, .max_vpp = 1,
    .generate = gen_zb_h1,
};
