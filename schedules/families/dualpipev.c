/* dualpipev.c - DualPipeV (DeepSeek-V3's DualPipe cut in half, as in
 * PyTorch's ScheduleDualPipeV): V placement, two chunks per rank, and in
 * the steady state each rank runs one chunk's forward overlapped with the
 * other chunk's backward (FB ops), so the two hide each other's
 * communication. Rank r's program, in eight phases:
 *   1. 2(p-r-1) forwards of chunk 0;
 *   2. r+1 times: F chunk 0, F chunk 1;
 *   3. p-r-1 times: B chunk 1 (its W at once), F chunk 1;
 *   4. m-2p+r+1 times: FB (F chunk 0, B chunk 1), FB (F chunk 1, B chunk 0)
 *      (the last rank runs its first pair apart: its F feeds its own B);
 *   5. p-r-1 times: B chunk 1, FB (F chunk 1, B chunk 0);
 *   6. r+1 times: B chunk 1, B chunk 0, the W of the second half deferred;
 *   7. p-r-1 times: a deferred W, B chunk 0 (its W deferred);
 *   8. the deferred W.
 * A backward that is not deferred runs whole: BW alone, or an FB with its
 * W right after; where the simulator times it better, each FB runs as its
 * F then its B instead (gen_dualpipev()). Needs m >= 2p (phase 4 at least
 * once on rank 0; the generator table says so, zb_generator_accepts()
 * refuses less). A fixed
 * shape: it ignores the limit and reports whether it fits; its peak is
 * 2p+1 chunk activations at unit times, one over 1F1B's: an FB holds its
 * F's before its B frees any (docs/controllable-memory.md). */
#include <stdlib.h>
#include "families/families.h"
#include "plan/plan.h"
#include "zbsched/generator.h"
#include "zbsched/sim.h"
#include "zbsched/xalloc.h"

struct prog {
    struct zb_schedule *s;
    int r;
    int nf[2], nb[2];           /* next microbatch per chunk */
    struct zb_op *wq;           /* deferred W, oldest first */
    int wq_head, wq_tail;
    bool split;                 /* an FB as its F, then its B */
};

static int stage_of(const struct prog *g, int chunk)
{
    return zb_profile_rank_stage(&g->s->profile, g->r, chunk);
}

static void fwd(struct prog *g, int c)
{
    zb_schedule_push(g->s, g->r, ZB_OP_F, stage_of(g, c), g->nf[c]++);
}

/* A backward alone: deferred (B now, W queued) or whole (BW). */
static void bwd(struct prog *g, int c, bool defer)
{
    int st = stage_of(g, c), mb = g->nb[c]++;

    if (!defer) {
        zb_schedule_push(g->s, g->r, ZB_OP_BW, st, mb);
        return;
    }
    zb_schedule_push(g->s, g->r, ZB_OP_B, st, mb);
    g->wq[g->wq_tail++] = (struct zb_op){ .kind = ZB_OP_W, .stage = st,
                                          .mb = mb };
}

static void weight(struct prog *g)
{
    const struct zb_op *w = &g->wq[g->wq_head++];

    zb_schedule_push(g->s, g->r, ZB_OP_W, w->stage, w->mb);
}

/* F of chunk fc overlapped with the whole backward of chunk bc (split:
 * the F, then the B, then its W). */
static void overlapped(struct prog *g, int fc, int bc)
{
    struct zb_op op = { .kind = ZB_OP_FB, .stage = stage_of(g, fc),
                        .mb = g->nf[fc]++, .b_stage = stage_of(g, bc),
                        .b_mb = g->nb[bc]++, .peer = -1, .seq = -1 };

    if (g->split) {
        zb_schedule_push(g->s, g->r, ZB_OP_F, op.stage, op.mb);
        zb_schedule_push(g->s, g->r, ZB_OP_B, op.b_stage, op.b_mb);
    } else {
        zb_op_list_push(&g->s->ranks[g->r], &op);
    }
    zb_schedule_push(g->s, g->r, ZB_OP_W, op.b_stage, op.b_mb);
}

static void rank_program(struct prog *g, int p, int m)
{
    const int r = g->r, rest = p - r - 1;
    bool defer;

    for (int i = 0; i < 2 * rest; i++)
        fwd(g, 0);
    for (int i = 0; i < r + 1; i++) {
        fwd(g, 0);
        fwd(g, 1);
    }
    for (int i = 0; i < rest; i++) {
        bwd(g, 1, true);
        weight(g);
        fwd(g, 1);
    }
    for (int i = 0; i < m - 2 * p + r + 1; i++) {
        if (i == 0 && r == p - 1) {
            fwd(g, 0);
            bwd(g, 1, false);
        } else {
            overlapped(g, 0, 1);
        }
        overlapped(g, 1, 0);
    }
    for (int i = 0; i < rest; i++) {
        bwd(g, 1, false);
        overlapped(g, 1, 0);
    }
    /* The second half of the drain defers its W, so the W fill the
     * tail's bubbles; odd ranks switch one pass earlier. */
    defer = false;
    for (int i = 0; i < r + 1; i++) {
        if (i == (r + 1) / 2 && r % 2 == 1)
            defer = true;
        bwd(g, 1, defer);
        if (i == (r + 1) / 2 && r % 2 == 0)
            defer = true;
        bwd(g, 0, defer);
    }
    for (int i = 0; i < rest; i++) {
        weight(g);
        bwd(g, 0, true);
    }
    while (g->wq_head < g->wq_tail)
        weight(g);
}

static void build(const struct zb_profile *p, bool split,
                  struct zb_schedule *s)
{
    const int m = p->microbatches;

    for (int r = 0; r < p->pp; r++) {
        struct prog g = { .s = s, .r = r, .split = split };
        g.wq = zb_xmalloc((size_t)(2 * m) * sizeof(*g.wq));
        rank_program(&g, p->pp, m);
        free(g.wq);
    }
}

/* The program with its FB ops, and with each split into its F and its B
 * in the same place; the better timed is kept. An FB waits for both
 * inputs and gains only where the profile's FB time (--fb) is below
 * F + B; split, the F runs as soon as its input is there, as PyTorch's
 * own order does (its overlap of an F and a whole backward runs them one
 * after the other where they cannot overlap). Same passes, same order,
 * so the same memory but for the FB's own (its F's before its B frees). */
static int gen_dualpipev(const struct zb_profile *p,
                         const struct zb_options *opt, struct zb_schedule *s,
                         struct zb_error *err)
{
    struct zb_schedule split;
    int rc;

    (void)opt;
    build(p, false, s);
    zb_schedule_init(&split, s->name, p);
    build(p, true, &split);
    if ((rc = zb_sim_run(s, err)) == 0 && zb_sim_run(&split, NULL) == 0 &&
        zbi_pick_better(&split, s))
        zb_schedule_copy_order(s, &split);
    zb_schedule_release(&split);
    return rc;
}

const struct zb_generator zb_gen_dualpipev = {
    .name = "dualpipev",
    .summary = "V placement, 2 chunks; DualPipeV: a forward overlapped with "
               "a backward (FB) in the steady state; m >= 2p",
    .placements = ZB_PLACES_V, .min_vpp = 2, .max_vpp = 2,
    .shape_placement = ZB_PLACEMENT_V, .shape_vpp = 2,
    .min_mb_per_pp = 2, .overlaps = true, .generate = gen_dualpipev,
};
