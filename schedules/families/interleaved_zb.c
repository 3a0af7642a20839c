/* interleaved_zb.c - interleaving combined with the B/W split, the way
 * PyTorch's ScheduleInterleavedZeroBubble (the Zero Bubble paper's ZB-H1
 * on interleaved 1F1B) orders it: microbatches go in rounds of m/rounds
 * (rounds = max(1, m/p)), each rank runs (vpp-1) rounds' worth of
 * forwards plus p-1-r as its warm-up, then one F and one B at a time,
 * and rank r defers its W passes by r backwards, so the W fill the
 * bubbles; rank 0 holds (vpp-1) m/rounds + p chunk activations, 1F1B's
 * own where p divides m. Where rounds does not divide m (PyTorch refuses
 * such m), the interleaved 1F1B order with the B/W split and W passes
 * deferred within its own peak instead, as ZB-H1 does for 1F1B. */
#include <stdlib.h>
#include "families/families.h"
#include "zbsched/xalloc.h"

/* Rank r's program under the rounds rule (m a multiple of the rounds). */
static void rounds_order(const struct zb_profile *p, int r,
                         struct zb_schedule *s)
{
    const int v = p->vpp, m = p->microbatches, pp = p->pp;
    const int rounds = m / pp > 1 ? m / pp : 1, per = m / rounds;
    const int total = m * v;
    const int warm = (v - 1) * per + pp - 1 - r < total
                         ? (v - 1) * per + pp - 1 - r : total;
    int *nf = zb_xcalloc((size_t)v, sizeof(int)),
        *nb = zb_xcalloc((size_t)v, sizeof(int)),
        *nw = zb_xcalloc((size_t)v, sizeof(int)),
        *bchunk = zb_xmalloc((size_t)total * sizeof(int));
    int nbw = 0, done_w = 0;

    for (int op = 0; op < total + warm; op++) {
        if (op < total) {
            int c = (op / per) % v;
            zb_schedule_push(s, r, ZB_OP_F, zb_profile_rank_stage(p, r, c),
                             nf[c]++);
        }
        if (op < warm)
            continue;
        bchunk[nbw] = v - 1 - ((op - warm) / per) % v;
        zb_schedule_push(s, r, ZB_OP_B,
                         zb_profile_rank_stage(p, r, bchunk[nbw]),
                         nb[bchunk[nbw]]++);
        nbw++;
        if (op - warm >= r) {
            int c = bchunk[done_w++];
            zb_schedule_push(s, r, ZB_OP_W, zb_profile_rank_stage(p, r, c),
                             nw[c]++);
        }
    }
    while (done_w < nbw) {
        int c = bchunk[done_w++];
        zb_schedule_push(s, r, ZB_OP_W, zb_profile_rank_stage(p, r, c),
                         nw[c]++);
    }
    free(nf);
    free(nb);
    free(nw);
    free(bchunk);
}

static int gen_interleaved_zb(const struct zb_profile *p,
                              const struct zb_options *opt,
                              struct zb_schedule *s, struct zb_error *err)
{
    const int m = p->microbatches;
    const int rounds = m / p->pp > 1 ? m / p->pp : 1;
    int rc;

    (void)opt;
    if (m % rounds == 0) {
        for (int r = 0; r < p->pp; r++)
            rounds_order(p, r, s);
        return 0;
    }
    if ((rc = zbi_interleaved_check_size(p, err)) < 0)
        return rc;
    zbi_order_interleaved(p, s);
    zbi_split_deferred(s, zbi_max_in_flight(s));
    return 0;
}

const struct zb_generator zb_gen_interleaved_zb = {
    .name = "interleaved-zb",
    .summary = "interleaved 1F1B with B/W split and deferred W (PyTorch's "
               "InterleavedZeroBubble); 1F1B's memory when p divides m",
    .placements = ZB_PLACES_LOOP, .min_vpp = 2, .max_vpp = 64,
    .shape_placement = ZB_PLACEMENT_LOOP, .shape_vpp = 2,
    .generate = gen_interleaved_zb,
};
