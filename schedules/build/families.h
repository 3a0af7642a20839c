/* families.h - building blocks shared by the generator files: the order
 * transforms and the greedy list scheduler. Not part of the public API. */
#ifndef ZBSCHED_FAMILIES_H
#define ZBSCHED_FAMILIES_H

#include <stdbool.h>
#include "zbsched/error.h"
#include "zbsched/profile.h"
#include "zbsched/schedule.h"

/* Split every BW into B and W and defer the W passes (ZB-H1's idea): a
 * rank runs a W only when the next F would otherwise hold more than `cap`
 * microbatches' activations (F done, W not), and after its last F it keeps
 * the number of deferred W passes it had then, so the tail's B passes run
 * back to back while W passes fill the gaps. Oldest W first. */
void zbi_split_deferred(struct zb_schedule *s, int cap);

/* Most microbatches in flight (F done, W or BW not yet) on any rank. */
int zbi_max_in_flight(const struct zb_schedule *s);

/* A rank's choice among the passes it can start: the one ready first; on
 * a tie B, then F, then W, then the later stage. The patience values bend
 * that rule toward the critical path (B passes flowing back to rank 0). */
struct greedy_policy {
    /* A W ready now runs only if no B or F becomes ready before
     * now + w_patience * T_W: 0 fills every gap with W, 1 never lets a W
     * delay a pass that is about to be ready. */
    double w_patience;
    /* An F ready now waits for a B that becomes ready before
     * now + f_patience * T_F: 0 never waits. */
    double f_patience;
    /* Per stage, the most microbatches it holds between F and B (its
     * warm-up depth, kept in the steady state), or NULL: memory alone
     * limits them. */
    const int *in_flight;
    /* Forwards first: a B ready now waits for an F that becomes ready
     * before now + b_patience * T_B (0: never waits). Where memory holds
     * most microbatches' forwards and the first backward is a long round
     * trip away (interleaved, m close to p vpp), a rank that runs every
     * forward it can before that round trip ends idles less. */
    double b_patience;
};

/* Memory-aware list scheduler (the Zero Bubble paper's automatic
 * scheduling, section 3, in our own form): simulates time and, whenever a
 * rank can start something, picks the pass that can start first under the
 * policy; F passes only when the rank's memory limit allows (keeping room
 * for the microbatch's later chunks on the same rank), passes of one kind
 * and stage in microbatch order. Fills s with the compute order, each op
 * with the start and end the simulator would give it.
 * ZB_ENOMEM_LIMIT when the limit stalls it. */
int zbi_greedy_schedule(const struct zb_profile *p,
                    const struct greedy_policy *pol, struct zb_schedule *s,
                    struct zb_error *err);

/* zbi_greedy_schedule() under each policy in a fixed table; s gets the order
 * with the lowest simulated cost (then makespan, then peak memory). */
int zbi_greedy_best(const struct zb_profile *p, struct zb_schedule *s,
                struct zb_error *err);

/* zbi_greedy_best() with every limit above 1F1B's activation peak lowered
 * to it; s (initialised for p) gets the order. The list scheduler starts
 * forwards while memory allows, so more memory can make it worse:
 * forwards of early chunks crowd the ranks before the backwards return
 * (interleaved placement above all); its run at 1F1B's memory fits any
 * larger limit. ZB_EUNSUPPORTED where no rank has more. */
int zbi_greedy_best_1f1b(const struct zb_profile *p, struct zb_schedule *s,
                     struct zb_error *err);

/* The policies zbi_greedy_best() runs, in order; under V placement the first
 * GREEDY_V_POLICIES. */
#define GREEDY_POLICIES 8
#define GREEDY_V_POLICIES 4
extern const struct greedy_policy zbi_greedy_policies[GREEDY_POLICIES];

/* V placement (two chunks) with some rank below 1F1B's activation peak,
 * or interleaved loop placement (vpp >= 2) at any limit or none:
 * zbi_greedy_schedule() with in-flight caps that follow each stage's round
 * trip, their two parameters searched with the V policies (once ready
 * first and once forwards first, greedy_caps.c), or zbi_greedy_best_1f1b()
 * where that is better; s gets the best order found, timed.
 * ZB_EUNSUPPORTED for other profiles and for those too large for the
 * search's budget to run its first grid; ZB_ENOMEM_LIMIT when every run
 * stalls. */
int zbi_greedy_capped(const struct zb_profile *p, struct zb_schedule *s,
                  struct zb_error *err);

/* A copy of p with unit times (F = B = W = 1, comm 0) and M_W = M_B = 1,
 * for families whose shape is defined at unit times. */
void zbi_unit_profile(const struct zb_profile *p, struct zb_profile *out,
                  double limit);

/* Controllable-memory building block (vblock.c), V placement with two
 * chunks: offsets(pp, rank, off) gives the slots of F chunk 0, F chunk 1,
 * B chunk 1 and B chunk 0 of microbatch 0 on rank; microbatch j's sit 6j
 * later, W passes fill the free slots oldest first, and each rank's slots
 * read in order fill s; with compact, zbi_vblock_compact() first moves the F
 * and B passes into earlier free slots. Any pp and m (pp 1 turns on its
 * own rank).
 * ZB_EUNSUPPORTED for offsets that share a slot modulo 6. */
int zbi_vblock_order(const struct zb_profile *p,
                 void (*offsets)(int pp, int rank, int off[4]), bool compact,
                 struct zb_schedule *s, struct zb_error *err);

/* Passes of one microbatch on one rank in a building block: F chunk 0,
 * F chunk 1, B chunk 1, B chunk 0, W chunk 1, W chunk 0. */
#define VBLOCK_PASSES 6

/* The building block's last step (vblock_compact.c): slot holds the
 * grid slot of every pass, index (rank * m + mb) * VBLOCK_PASSES + k;
 * each moves, in slot order, into the first free slot of its rank from
 * the one its input is ready in (unit times), never later, and an F only
 * where its rank keeps within the block's own peak of live activations. */
void zbi_vblock_compact(const struct zb_profile *p, int *slot);

#endif
