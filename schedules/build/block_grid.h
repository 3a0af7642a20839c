/* block_grid.h - the unit grid of the building-block search (private to
 * build/block_*.c): V placement, two chunks per rank, every pass one slot
 * long, comm 0.
 *
 * A row per rank, a slot per unit of time, each slot empty or holding
 * one pass of a kind: F chunk 0, F chunk 1, B chunk 1, B chunk 0 and the
 * W passes of chunk 1 and chunk 0. A row holds the same number of passes
 * of every kind (g->m), and the j-th pass of a kind in a row is
 * microbatch j's; so moving a pass never needs its microbatch, only its
 * kind. Memory is counted the paper's way (F +1, W -1, B nothing): the
 * live chunk activations of a rank, an upper bound of the real memory in
 * units of M_B whatever M_W is.
 *
 * The phases (block_grid.c, block_phases.c) are the controllable-memory
 * paper's repeat, squeeze and reorder (Qi et al., NeurIPS 2024, section 4
 * and appendix A); each returns false where its result would not be a
 * valid order, and the caller drops the block. block_time.c times a
 * grid on the real durations. */
#ifndef ZBSCHED_BLOCK_GRID_H
#define ZBSCHED_BLOCK_GRID_H

#include <stdbool.h>
#include "zbsched/profile.h"
#include "zbsched/schedule.h"

enum { BG_F0, BG_F1, BG_B1, BG_B0, BG_W1, BG_W0, BG_KINDS };
#define BG_EMPTY (-1)
#define BG_PERIOD 6     /* slots of a building block: one of each kind */

struct bgrid {
    int pp;
    int m;              /* passes of every kind in each row */
    int len;            /* slots of every row */
    int cap;            /* slots allocated per row */
    signed char *cell;  /* pp rows of cap slots: a kind or BG_EMPTY */
    int *pos;           /* scratch, pp * BG_KINDS * m_max slots */
    int m_max;
    /* Per rank and kind (r * BG_KINDS + k), the pass the same
     * microbatch's pass waits for: its rank and kind (the rank before or
     * after for the same kind; its own rank where the V turns, rank 0's
     * B chunk 1 after its F chunk 1, rank p-1's F chunk 1 after F chunk 0
     * and B chunk 0 after B chunk 1; a W after its B); kind -1 for the
     * first stage's F, which waits for none. */
    int *in_rank, *in_kind;
};

static inline signed char *bg_cell(const struct bgrid *g, int r, int t)
{
    return &g->cell[(size_t)r * g->cap + t];
}

static inline bool bg_is_f(int k)
{
    return k == BG_F0 || k == BG_F1;
}

static inline bool bg_is_w(int k)
{
    return k == BG_W1 || k == BG_W0;
}

/* A grid for pp ranks holding up to m_max passes of each kind. */
void zbi_bg_init(struct bgrid *g, int pp, int m_max);
void zbi_bg_release(struct bgrid *g);

/* Room for len slots in every row (new slots empty); g->len grows to
 * len where it is shorter. */
void zbi_bg_reserve(struct bgrid *g, int len);

/* The first slot of each kind in each row of the block repeated
 * (block[r][k]: slot of kind k in rank r's period, 0..5): walking F
 * chunk 0 down the ranks, F chunk 1 up, B chunk 1 down, B chunk 0 up,
 * each rank's first pass of the kind is its first one after the
 * previous rank's (or kind's), and a W's first is the first after its
 * B's. */
void zbi_bg_first_slots(const int (*block)[BG_KINDS], int pp,
                        int (*first)[BG_KINDS]);

/* The block repeated from those first slots, m passes of each kind a
 * period apart in every row. */
void zbi_bg_repeat(struct bgrid *g, const int (*first)[BG_KINDS], int m);

/* zbi_bg_peak_all() of that grid, without building it. */
int zbi_bg_repeat_peak(const int (*first)[BG_KINDS], int pp, int m);

/* Live activations' peak of row r (F +1, W -1), and of the grid. */
int zbi_bg_peak(const struct bgrid *g, int r);
int zbi_bg_peak_all(const struct bgrid *g);

/* Visit every pass after its input: sweeps down and up the ranks in
 * turn (forwards of chunk 0 flow down, of chunk 1 up), each row visiting
 * its passes in slot order while their inputs are visited; visit(ctx, r,
 * k, j) gets row r's j-th pass of kind k. With w_free a W does not wait
 * for its B (before zbi_bg_relabel_w() the W passes are
 * interchangeable). False where the order deadlocks (a row waits on a
 * pass that waits on it, or on a later pass of its own) or a row holds
 * more than m of a kind. */
bool zbi_bg_walk(const struct bgrid *g, bool w_free,
                 void (*visit)(void *ctx, int r, int k, int j), void *ctx);

/* Every pass as soon as possible in its row's order (unit times, comm
 * 0); false where the order deadlocks (a row waits on a pass that waits
 * on it, or on a later pass of its own) or a row holds more than m of a
 * kind. */
bool zbi_bg_squeeze(struct bgrid *g);

/* Keep the first m passes of each kind in every row. */
void zbi_bg_keep_first(struct bgrid *g, int m);

/* Each W slot takes the W of the oldest B before it that has none (the
 * grid's W passes are interchangeable until then); false where a W slot
 * has no such B. */
bool zbi_bg_relabel_w(struct bgrid *g);

/* Whether every row holds m passes of each kind and every pass starts
 * after its inputs. */
bool zbi_bg_valid(const struct bgrid *g);

/* Each row's passes in slot order into s (p: V, two chunks, g->pp
 * ranks, g->m microbatches). */
void zbi_bg_to_order(const struct bgrid *g, const struct zb_profile *p,
                     struct zb_schedule *s);

/* The cost (the largest span of a rank) and makespan of the grid's
 * order on p's real durations and comm, as the simulator times it
 * (timing.h): every pass at the start the simulator gives it. False
 * where the order deadlocks. */
bool zbi_bg_time(const struct bgrid *g, const struct zb_profile *p,
                 double *cost, double *makespan);

/* ---- The reorder phases (block_phases.c) ---- */

/* The warm-up rebuilt up to each row's first chunk-0 B: rank r holds
 * min(r + 1, peak / 2) chunk-1 forwards and the rest of the peak in
 * chunk-0 forwards before its first chunk-1 B, then alternates B, W
 * and a forward. */
bool zbi_bg_warmup(struct bgrid *g);

/* Where memory is left over (few microbatches): each row's first W
 * passes move to its end, as many as take it up to `peak`. */
void zbi_bg_release_w(struct bgrid *g, int peak);

/* The cool-down rebuilt after rank 0's last chunk-1 F: the last B
 * passes of each rank set back at a fixed stride from it, the tail's W
 * passes dropped and put into the free slots after the last W kept,
 * then squeezed. */
bool zbi_bg_cooldown(struct bgrid *g);

/* Every free slot, in slot order, takes the first later pass of its row
 * that can run there: its inputs done and, for an F, the row's live
 * activations kept within the grid's peak. */
void zbi_bg_reorder_greedy(struct bgrid *g);

#endif
