/* v_min.c - V-Min (Qi et al., "Pipeline parallelism with controllable
 * memory", NeurIPS 2024): V placement, two chunks per rank, B/W split,
 * built from a building block whose microbatch lifespan on rank 0 is
 * about 4p slots of a 6-slot period, so a rank holds about a third of
 * 1F1B's activations (paper: floor((p+4)/3) stage activations against p)
 * at about two thirds of 1F1B's bubble (F = B = W). Its order is the
 * best of the block's (repeated, the paper's squeeze, builders held to
 * its peak: vblock_best.c). A fixed shape: it ignores the limit and
 * reports whether it fits. Measured values: docs/controllable-memory.md. */
#include "families/families.h"
#include "zbsched/generator.h"

/* Rank i: F0 at i, F1 at 2p-1-i, B1 at 2p+d+i, B0 at 4p+d-1-i; the shift
 * d = 2 when 3 divides p keeps the four passes in distinct slots mod 6. */
static void offsets(int p, int i, int off[4])
{
    int d = p % 3 == 0 ? 2 : 0;

    off[0] = i;
    off[1] = 2 * p - 1 - i;
    off[2] = 2 * p + d + i;
    off[3] = 4 * p + d - 1 - i;
}

static int gen_v_min(const struct zb_profile *p, const struct zb_options *opt,
                     struct zb_schedule *s, struct zb_error *err)
{
    (void)opt;
    return zbi_vblock_best(p, offsets, false, s, err);
}

const struct zb_generator zb_gen_v_min = {
    .name = "v-min",
    .summary = "V placement, 2 chunks, B/W split; about 1/3 of 1F1B's "
               "activation memory",
    .placements = ZB_PLACES_V, .min_vpp = 2, .max_vpp = 2,
    .shape_placement = ZB_PLACEMENT_V, .shape_vpp = 2, .peak_cap = 1,
    .generate = gen_v_min,
};
