/* interleaved_zb.c - interleaving combined with the B/W split: the
 * interleaved 1F1B order with each backward split into B and W and the W
 * passes deferred within interleaved 1F1B's own peak memory, as ZB-H1 does
 * for 1F1B. The Zero Bubble authors call the two ideas orthogonal and
 * leave the combination open; this is the direct one. */
#include "families/families.h"

static int gen_interleaved_zb(const struct zb_profile *p,
                              const struct zb_options *opt,
                              struct zb_schedule *s, struct zb_error *err)
{
    int rc = zbi_interleaved_check_size(p, err);

    (void)opt;
    if (rc < 0)
        return rc;
    zbi_order_interleaved(p, s);
    zbi_split_deferred(s, zbi_max_in_flight(s));
    return 0;
}

const struct zb_generator zb_gen_interleaved_zb = {
    .name = "interleaved-zb",
    .summary = "interleaved 1F1B with B/W split and deferred W (ZB-H1 idea)",
    .placements = ZB_PLACES_LOOP, .min_vpp = 2, .max_vpp = 64,
    .shape_placement = ZB_PLACEMENT_LOOP, .shape_vpp = 2,
    .generate = gen_interleaved_zb,
};
