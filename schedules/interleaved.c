/* interleaved.c - interleaved 1F1B (Megatron-LM, Narayanan et al. 2021):
 * v chunks per rank in loop placement; microbatches go in groups of p
 * through chunk 0, then the same group through chunk 1, and so on;
 * backwards take the chunks in reverse. Rank r warms up with
 * 2(p-r-1) + (v-1)p forwards, then alternates one forward and one fused
 * backward. When p does not divide m, the last group is short, and so
 * many forwards may not be enough for a backward to find its inputs: the
 * generator then raises every rank's warm-up by one until the order runs
 * (what Megatron's table with a short group would need). */
#include "onef1b.h"
#include "zbsched/sim.h"
#include "zbsched/xalloc.h"
#include <stdlib.h>

struct vmb {
    int chunk, mb;
};

/* Megatron's virtual-microbatch table: k -> (chunk, microbatch). */
static struct vmb *virtual_order(const struct zb_profile *p, bool backward)
{
    const int m = p->microbatches, v = p->vpp, P = p->pp;
    struct vmb *t = zb_xmalloc((size_t)m * v * sizeof(*t));
    int k = 0;

    for (int g0 = 0; g0 < m; g0 += P) {
        int g1 = g0 + P < m ? g0 + P : m;
        for (int c = 0; c < v; c++)
            for (int mb = g0; mb < g1; mb++)
                t[k++] = (struct vmb){ backward ? v - 1 - c : c, mb };
    }
    return t;
}

/* extra: forwards added to every rank's warm-up beyond Megatron's. */
static void order_with_warmup(const struct zb_profile *p,
                              struct zb_schedule *s, int extra)
{
    const int total = p->microbatches * p->vpp;
    struct vmb *fwd = virtual_order(p, false), *bwd = virtual_order(p, true);

    for (int r = 0; r < p->pp; r++) {
        int warmup = 2 * (p->pp - r - 1) + (p->vpp - 1) * p->pp + extra;
        s->ranks[r].n = 0;
        if (warmup > total)
            warmup = total;
#define STAGE(x) zb_profile_rank_stage(p, r, (x).chunk)
        for (int k = 0; k < warmup; k++)
            zb_schedule_push(s, r, ZB_OP_F, STAGE(fwd[k]), fwd[k].mb);
        for (int k = 0; k < total - warmup; k++) {
            zb_schedule_push(s, r, ZB_OP_F, STAGE(fwd[warmup + k]),
                             fwd[warmup + k].mb);
            zb_schedule_push(s, r, ZB_OP_BW, STAGE(bwd[k]), bwd[k].mb);
        }
        for (int k = total - warmup; k < total; k++)
            zb_schedule_push(s, r, ZB_OP_BW, STAGE(bwd[k]), bwd[k].mb);
#undef STAGE
    }
    free(fwd);
    free(bwd);
}

void order_interleaved(const struct zb_profile *p, struct zb_schedule *s)
{
    /* Terminates: with the warm-up at every forward the order is GPipe's
     * per chunk, which always runs. */
    for (int extra = 0;; extra++) {
        order_with_warmup(p, s, extra);
        if (p->microbatches % p->pp == 0 || zb_sim_run(s, NULL) == 0)
            return;
    }
}

static int gen_interleaved(const struct zb_profile *p,
                           const struct zb_options *opt, struct zb_schedule *s,
                           struct zb_error *err)
{
    (void)opt;
    (void)err;
    order_interleaved(p, s);
    return 0;
}

const struct zb_generator zb_gen_interleaved = {
    .name = "interleaved",
    .summary = "interleaved 1F1B (Megatron order), loop placement, vpp >= 2",
    .placements = ZB_PLACES_LOOP, .min_vpp = 2, .max_vpp = 64,
    .generate = gen_interleaved,
};
