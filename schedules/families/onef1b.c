/* onef1b.c - 1F1B (PipeDream-flush): rank r warms up with p-r-1 forwards,
 * then alternates one forward and one fused backward, then drains. At most
 * p microbatches in flight on rank 0. */
#include "families/families.h"

void zbi_order_1f1b(const struct zb_profile *p, struct zb_schedule *s)
{
    const int m = p->microbatches;

    for (int r = 0; r < p->pp; r++) {
        int warmup = p->pp - r - 1 < m ? p->pp - r - 1 : m;
        for (int i = 0; i < warmup; i++)
            zb_schedule_push(s, r, ZB_OP_F, r, i);
        for (int i = 0; i < m - warmup; i++) {
            zb_schedule_push(s, r, ZB_OP_F, r, warmup + i);
            zb_schedule_push(s, r, ZB_OP_BW, r, i);
        }
        for (int i = m - warmup; i < m; i++)
            zb_schedule_push(s, r, ZB_OP_BW, r, i);
    }
}

static int gen_1f1b(const struct zb_profile *p, const struct zb_options *opt,
                    struct zb_schedule *s, struct zb_error *err)
{
    (void)opt;
    (void)err;
    zbi_order_1f1b(p, s);
    return 0;
}

const struct zb_generator zb_gen_1f1b = {
    .name = "1f1b",
    .summary = "one forward, one fused backward; p in flight on rank 0",
    .placements = ZB_PLACES_LOOP, .min_vpp = 1, .max_vpp = 1,
    .generate = gen_1f1b,
};
