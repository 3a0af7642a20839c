/* gpipe.c - GPipe: every forward, then every backward (fused BW). Simple,
 * the most memory (m microbatches in flight) and the largest bubble. */
#include "zbsched/generator.h"

static int gen_gpipe(const struct zb_profile *p, const struct zb_options *opt,
                     struct zb_schedule *s, struct zb_error *err)
{
    (void)opt;
    (void)err;
    for (int r = 0; r < p->pp; r++) {
        for (int i = 0; i < p->microbatches; i++)
            zb_schedule_push(s, r, ZB_OP_F, r, i);
        for (int i = 0; i < p->microbatches; i++)
            zb_schedule_push(s, r, ZB_OP_BW, r, i);
    }
    return 0;
}

const struct zb_generator zb_gen_gpipe = {
    .name = "gpipe",
    .summary = "all forwards, then all backwards (fused BW); m in flight",
    .placements = ZB_PLACES_LOOP, .min_vpp = 1, .max_vpp = 1,
    .generate = gen_gpipe,
};
