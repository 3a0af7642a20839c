/* block_search.c - the controllable-memory paper's search over building
 * blocks (Qi et al., NeurIPS 2024, section 4 and appendix A; the Zero
 * Bubble repository's v_auto_schedule, read and written anew): V
 * placement below 1F1B's memory (build.h).
 *
 * A building block gives each rank one slot of each kind in a period of
 * six; it is fixed by rank 0's slots and the offsets by which each next
 * rank's forwards and backwards move: chunk 0's by +d (a uniform offset
 * d of 1 to 5), chunk 1's by -1, one d for the first ranks and another,
 * no larger, after a switch. W passes take the first free slot after
 * their B. Each block is repeated, squeezed and reordered on the unit
 * grid (block_grid.h) within its own peak; the blocks whose peak fits
 * the limit are timed with the real durations and the best is kept. */
#include <math.h>
#include <stdlib.h>
#include "build/block_grid.h"
#include "build/build.h"
#include "zbsched/measures.h"
#include "zbsched/sim.h"
#include "zbsched/xalloc.h"

/* The uniform offsets d (appendix A): chunk 0's passes move by d slots
 * from rank to rank, chunk 1's by -1. */
#define BLOCK_OFFSETS 5

/* Rank 0's slot patterns: F chunk 0 first, the other three in any of
 * the other five slots. */
#define BLOCK_FIRST_RANKS (5 * 4 * 3)

/* Slots the search may walk (struct search): well under a second on one
 * core (docs/tuning.md, "Building-block search"); eager, ten times
 * that. A search its budget ends keeps the best found so far. */
#define BLOCK_BUDGET 1.5e7
#define BLOCK_EAGER 10

/* W and W chunk 0 into the first free slots after their B passes. */
static void fill_w(int *slot)
{
    bool used[BG_PERIOD] = { false };

    for (int k = BG_F0; k <= BG_B0; k++)
        used[slot[k]] = true;
    for (int b = BG_B1; b <= BG_B0; b++)
        for (int j = 1; j < BG_PERIOD; j++) {
            int t = (slot[b] + j) % BG_PERIOD;
            if (!used[t]) {
                slot[b == BG_B1 ? BG_W1 : BG_W0] = t;
                used[t] = true;
                break;
            }
        }
}

/* The block from rank 0's slots, offsets d0 for ranks 1..switch_at and
 * d1 after; false where two passes of a rank share a slot. */
static bool make_block(const int *first, int d0, int d1, int switch_at,
                       int pp, int (*block)[BG_KINDS])
{
    for (int k = 0; k < BG_KINDS; k++)
        block[0][k] = first[k];
    for (int r = 1; r < pp; r++) {
        const int d = r <= switch_at ? d0 : d1;
        const int step[4] = { d, -1, d, -1 };   /* F0, F1, B1, B0 */
        bool used[BG_PERIOD] = { false };
        for (int k = BG_F0; k <= BG_B0; k++) {
            int t = (block[r - 1][k] + step[k] + BG_PERIOD) % BG_PERIOD;
            if (used[t])
                return false;
            used[t] = true;
            block[r][k] = t;
        }
        fill_w(block[r]);
    }
    return true;
}

/* One search: the profile, the cap in live chunk activations, the
 * grid, the best order so far, and the work done (slots walked: the
 * repeated block's peak for every block tried, the grid of every block
 * built), which ends the search once it passes the budget. */
struct search {
    const struct zb_profile *p;
    int cap;
    struct bgrid *g;
    struct zb_schedule *c, *best;   /* scratch, and the best so far */
    bool have;                      /* best holds an order */
    double work, budget;
};

/* Slots of one block's grid: every rank, the walk's periods and m. */
static double grid_slots(int p, int full)
{
    return (double)p * BG_PERIOD * (4 * p + full + 1);
}

/* The block's order on the grid, repeat-squeeze-reorder, within the
 * cap; *peak gets the peak that decides whether larger blocks of the
 * same family can fit (the block's own, or its cut's where m is below
 * 2p). False where the block gives no valid order within the cap. */
static bool block_order(struct search *q, const int (*first)[BG_KINDS],
                        int *peak)
{
    struct bgrid *g = q->g;
    const int p = q->p->pp, m = q->p->microbatches, cap = q->cap;
    const int full = m > 2 * p ? m : 2 * p;
    int own, now;

    /* Fewer microbatches than 2p: built for 2p, then cut. */
    q->work += (double)p * (4 * p + 1);
    *peak = own = zbi_bg_repeat_peak(first, p, full);
    if ((m == full && own > cap) || own > 2 * p)
        return false;
    q->work += grid_slots(p, full);
    zbi_bg_repeat(g, first, full);
    if (!zbi_bg_squeeze(g) || !zbi_bg_warmup(g) || !zbi_bg_squeeze(g) ||
        zbi_bg_peak_all(g) > own)
        return false;
    if (m < full) {
        now = zbi_bg_peak_all(g);
        zbi_bg_keep_first(g, m);
        if (m <= p && 2 * m <= cap)
            zbi_bg_release_w(g, now < 2 * p ? now : 2 * p);
        if (!zbi_bg_squeeze(g))
            return false;
        *peak = own = zbi_bg_peak_all(g);
        if (own > cap)
            return false;
    }
    if (!zbi_bg_cooldown(g))
        return false;
    zbi_bg_reorder_greedy(g);
    if (!zbi_bg_relabel_w(g) || zbi_bg_peak_all(g) > own)
        return false;
    *peak = zbi_bg_peak_all(g);
    return zbi_bg_valid(g);
}

/* The most live chunk activations every rank's limit holds (each F
 * counted at the largest M_B), at most 2p. */
static int activation_cap(const struct zb_profile *p)
{
    double least = INFINITY;

    for (int r = 0; r < p->pp; r++)
        least = fmin(least, p->mem_limit[r]);
    least = floor(least / p->m_b * (1 + 1e-9));
    return least < 2 * p->pp ? (int)least : 2 * p->pp;
}

/* Time the grid's order on p (c: scratch for p) and keep it in best
 * where it fits and is better. The grid's own timing (zbi_bg_time(), the
 * simulator's rule) leaves out, without simulating them, the orders
 * that cost more than the best so far: most of the blocks. */
static void consider(struct search *q)
{
    const struct zb_profile *p = q->p;
    const double least = q->best->predicted.cost;
    double cost, makespan;

    if (!zbi_bg_time(q->g, p, &cost, &makespan) ||
        (q->have && cost - least > 1e-9 * fmax(1, least)))
        return;
    for (int r = 0; r < p->pp; r++)
        q->c->ranks[r].n = 0;
    zbi_bg_to_order(q->g, p, q->c);
    if (zb_sim_run(q->c, NULL) < 0 || !q->c->predicted.fits_memory)
        return;
    if (!q->have ||
        zb_measures_better(&q->c->predicted, &q->best->predicted, p->pp)) {
        zb_schedule_copy_order(q->best, q->c);
        zb_measures_copy(&q->best->predicted, &q->c->predicted, p->pp);
        q->have = true;
    }
}

/* The blocks of one first rank and one pair of offsets d1 <= d0, by
 * where they switch. A later switch gives the larger offset more ranks,
 * which lengthens lifetimes, so once a block's peak is over the cap the
 * later switches are not built (the reference's pruning); where d1 = d0
 * every switch gives the same block, built once. */
static void search_switches(struct search *q, const int *first, int d0,
                            int d1, int (*block)[BG_KINDS],
                            int (*slots)[BG_KINDS])
{
    const int pp = q->p->pp;

    for (int at = 1; at < pp && q->work <= q->budget; at++) {
        int peak;
        if (!make_block(first, d0, d1, at, pp, block))
            continue;
        zbi_bg_first_slots((const int (*)[BG_KINDS])block, pp, slots);
        if (block_order(q, (const int (*)[BG_KINDS])slots, &peak))
            consider(q);
        if (peak > q->cap || d1 == d0)
            break;
    }
}

/* Every block, offsets first (so that a search its budget ends has
 * tried every first rank with the smaller offsets, V-Min's and
 * V-Half's among them): rank 0's F chunk 0 in slot 0, its other three
 * passes in distinct slots of the rest of the period. */
static void search_all(struct search *q)
{
    const int pp = q->p->pp;
    int (*block)[BG_KINDS] = zb_xmalloc((size_t)pp * sizeof(*block));
    int (*slots)[BG_KINDS] = zb_xmalloc((size_t)pp * sizeof(*slots));

    for (int d0 = 1; d0 <= BLOCK_OFFSETS; d0++)
        for (int d1 = 1; d1 <= d0; d1++)
            for (int f1 = 1; f1 < BG_PERIOD; f1++)
                for (int b1 = 1; b1 < BG_PERIOD; b1++)
                    for (int b0 = 1; b0 < BG_PERIOD; b0++) {
                        int first[BG_KINDS] = { 0, f1, b1, b0, -1, -1 };
                        if (f1 == b1 || f1 == b0 || b1 == b0)
                            continue;
                        fill_w(first);
                        search_switches(q, first, d0, d1, block, slots);
                    }
    free(block);
    free(slots);
}

int zbi_block_search(const struct zb_profile *p, bool eager,
                     struct zb_schedule *s, struct zb_error *err)
{
    const int full = p->microbatches > 2 * p->pp ? p->microbatches
                                                  : 2 * p->pp;
    struct zb_schedule best, c;
    struct bgrid g;
    struct search q = { .p = p, .g = &g, .c = &c, .best = &best };

    if (p->placement != ZB_PLACEMENT_V || p->vpp != 2 || p->pp < 2)
        return zb_error_set(err, ZB_EUNSUPPORTED,
                            "the building-block search needs V placement "
                            "with two chunks on two ranks or more");
    q.cap = activation_cap(p);
    q.budget = BLOCK_BUDGET * (eager ? BLOCK_EAGER : 1);
    /* Not where the budget could not build one block of each first
     * rank. */
    if (grid_slots(p->pp, full) * BLOCK_FIRST_RANKS > q.budget)
        return zb_error_set(err, ZB_EUNSUPPORTED,
                            "the building-block search is too large for its "
                            "budget here");
    zb_schedule_init(&best, s->name, p);
    zb_schedule_init(&c, s->name, p);
    zbi_bg_init(&g, p->pp, full);
    search_all(&q);
    zbi_bg_release(&g);
    if (q.have)
        zb_schedule_copy_order(s, &best);
    zb_schedule_release(&c);
    zb_schedule_release(&best);
    return q.have ? 0
                  : zb_error_set(err, ZB_ENOMEM_LIMIT,
                                 "no building block fits the memory limit");
}
