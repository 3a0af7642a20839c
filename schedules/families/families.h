/* families.h - the fixed families' shared order transforms (internal to
 * schedules/, not part of the public API).
 *
 * A fixed family is one generator row (registry.c) whose compute order has
 * a shape of its own: 1F1B, interleaved 1F1B, GPipe, ZB-H1, the V-shaped
 * building blocks of V-Half and V-Min, DualPipeV. Its vocabulary: an
 * *order* is the list of compute passes (F, B, W, or a fused BW) each rank
 * runs, without times; a *transform* rewrites an order into another
 * family's (the B/W split with deferred W passes turns 1F1B into ZB-H1);
 * a *building block* is the V families' repeated pattern of slots on a
 * grid of unit times; a *unit profile* is a copy of the profile at unit
 * times on which a shape is defined. The contract: every function here
 * fills or rewrites the caller's schedule (initialised for the profile)
 * with an order only; it neither times the order nor reads a memory limit
 * (the caller simulates the result; whether it fits is the family's
 * measure, not its rule). The memory-aware building blocks that some
 * families borrow (the list scheduler, the ZB-V construction, the side
 * thread) are build/build.h's. */
#ifndef ZBSCHED_FAMILIES_H
#define ZBSCHED_FAMILIES_H

#include <stdbool.h>
#include "zbsched/error.h"
#include "zbsched/generator.h"
#include "zbsched/profile.h"
#include "zbsched/schedule.h"

/* ---- 1F1B and interleaved 1F1B (onef1b.c, interleaved.c) -------------- */

/* The 1F1B order, which ZB-H1 reuses with the backward split. */
void zbi_order_1f1b(const struct zb_profile *p, struct zb_schedule *s);

/* Interleaved 1F1B with the smallest extra warm-up that runs (the
 * interleaved-ZB family reuses it with the backward split). */
void zbi_order_interleaved(const struct zb_profile *p, struct zb_schedule *s);

/* 0 when zbi_order_interleaved() finishes in reasonable time for p; else
 * ZB_EUNSUPPORTED saying why (its warm-up search when pp does not divide
 * m grows as pp * vpp^2 * m^2 at small pp). */
int zbi_interleaved_check_size(const struct zb_profile *p,
                               struct zb_error *err);

/* The interleaved order with extra forwards added to every rank's
 * warm-up (zbi_order_interleaved() picks extra; tests compare). */
void zbi_order_interleaved_warmup(const struct zb_profile *p,
                                  struct zb_schedule *s, int extra);

/* ---- Transforms (order.c) --------------------------------------------- */

/* Split every BW into B and W and defer the W passes (ZB-H1's idea): a
 * rank runs a W only when the next F would otherwise hold more than `cap`
 * microbatches' activations (F done, W not), and after its last F it keeps
 * the number of deferred W passes it had then, so the tail's B passes run
 * back to back while W passes fill the gaps. Oldest W first. */
void zbi_split_deferred(struct zb_schedule *s, int cap);

/* Most microbatches in flight (F done, W or BW not yet) on any rank. */
int zbi_max_in_flight(const struct zb_schedule *s);

/* A copy of p with unit times (F = B = W = 1, comm 0) and M_W = M_B = 1,
 * for families whose shape is defined at unit times. */
void zbi_unit_profile(const struct zb_profile *p, struct zb_profile *out,
                      double limit);

/* ---- The V building block (vblock.c, vblock_compact.c) ---------------- */

/* Controllable-memory building block, V placement with two chunks:
 * offsets(pp, rank, off) gives the slots of F chunk 0, F chunk 1, B chunk
 * 1 and B chunk 0 of microbatch 0 on rank; microbatch j's sit 6j later, W
 * passes fill the free slots oldest first, and each rank's slots read in
 * order fill s; with compact, zbi_vblock_compact() first moves the F and
 * B passes into earlier free slots. Any pp and m (pp 1 turns on its own
 * rank). ZB_EUNSUPPORTED for offsets that share a slot modulo 6. */
int zbi_vblock_order(const struct zb_profile *p,
                     void (*offsets)(int pp, int rank, int off[4]),
                     bool compact, struct zb_schedule *s,
                     struct zb_error *err);

/* Passes of one microbatch on one rank in a building block: F chunk 0,
 * F chunk 1, B chunk 1, B chunk 0, W chunk 1, W chunk 0. */
#define VBLOCK_PASSES 6

/* The building block's last step: slot holds the grid slot of every pass,
 * index (rank * m + mb) * VBLOCK_PASSES + k; each moves, in slot order,
 * into the first free slot of its rank from the one its input is ready in
 * (unit times), never later, and an F only where its rank keeps within
 * the block's own peak of live activations. */
void zbi_vblock_compact(const struct zb_profile *p, int *slot);

/* The paper's own finish of the block (the Zero Bubble repository's
 * V-Half/V-Min): two rounds of moving the passes outside the steady state
 * into earlier free slots within the block's peak and re-timing at unit
 * times, then W passes split per chunk (vblock_squeeze.c). Errors as
 * zbi_vblock_order(). */
int zbi_vblock_squeezed(const struct zb_profile *p,
                        void (*offsets)(int pp, int rank, int off[4]),
                        struct zb_schedule *s, struct zb_error *err);

/* v-half's and v-min's order (vblock_best.c): the best, timed with the
 * real durations, of the block (compacted too where compact), the
 * squeezed block and builders on the real times held to the block's
 * peak; none holds more than the block alone. */
int zbi_vblock_best(const struct zb_profile *p,
                    void (*offsets)(int pp, int rank, int off[4]),
                    bool compact, struct zb_schedule *s,
                    struct zb_error *err);

/* ---- ZB-V (zb_v.c) ---------------------------------------------------- */

/* The zb-v family's order from its two orders on a profile held to
 * 1F1B's memory, both timed (NULL: did not build): the list scheduler's
 * where it is better, else the construction's, copied into s. False when
 * neither built. The planner, which builds both as candidates, asks it
 * instead of building them twice. */
bool zbi_zb_v_choose(const struct zb_schedule *con,
                     const struct zb_schedule *list, struct zb_schedule *s);

#endif
