/* v_half.c - V-Half (Qi et al., "Pipeline parallelism with controllable
 * memory", NeurIPS 2024): V placement, two chunks per rank, B/W split,
 * built from a building block whose microbatch lifespan on rank 0 is
 * about 6p slots of a 6-slot period, so a rank holds about half of 1F1B's
 * activations (paper: ceil((p+2)/2) stage activations against p) at
 * about half of 1F1B's bubble (F = B = W). Its order is the best of the
 * block's (repeated, compacted, the paper's squeeze, builders held to its
 * peak: vblock_best.c). A fixed shape: it ignores the limit and reports
 * whether it fits. Measured values: docs/controllable-memory.md. */
#include "families/families.h"
#include "zbsched/generator.h"

/* Rank i: F0 at 2i, F1 at 3p-2-i, B1 at 3p+d-1+2i, B0 at 6p+d-2-i; the
 * shift d = 3 when p is even keeps the four passes in distinct slots
 * mod 6. */
static void offsets(int p, int i, int off[4])
{
    int d = p % 2 == 0 ? 3 : 0;

    off[0] = 2 * i;
    off[1] = 3 * p - 2 - i;
    off[2] = 3 * p + d - 1 + 2 * i;
    off[3] = 6 * p + d - 2 - i;
}

/* The block, compacted or not, the paper's squeeze of it and builders on
 * the real times held to its peak; the best kept (vblock_best.c). */
static int gen_v_half(const struct zb_profile *p,
                      const struct zb_options *opt, struct zb_schedule *s,
                      struct zb_error *err)
{
    (void)opt;
    return zbi_vblock_best(p, offsets, true, s, err);
}

const struct zb_generator zb_gen_v_half = {
    .name = "v-half",
    .summary = "V placement, 2 chunks, B/W split; about half of 1F1B's "
               "activation memory",
    .placements = ZB_PLACES_V, .min_vpp = 2, .max_vpp = 2,
    .shape_placement = ZB_PLACEMENT_V, .shape_vpp = 2, .peak_cap = 1,
    .generate = gen_v_half,
};
