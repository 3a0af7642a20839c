/* construct_v.h - ZB-V built the way the Zero Bubble paper builds it
 * (two-leg backward, warm-up with a memory reserve, W passes placed into
 * gaps against a per-rank slack, refinement, variants; best kept).
 * Internal to schedules/: the `zb-v` family and `zb` call it; `zb` also
 * weighs the same construction with one rule changed (below). */
#ifndef ZBSCHED_CONSTRUCT_V_H
#define ZBSCHED_CONSTRUCT_V_H

#include "zbsched/error.h"
#include "zbsched/profile.h"
#include "zbsched/schedule.h"

/* How a rank full to its limit makes room for its next F: the paper's
 * way (W passes, oldest first), or first a B whose input is already
 * there (its second leg before its first), then W's if still needed. A
 * B frees more than a W (M_B - M_W against M_W) and moves a backward
 * stream on, where a W only frees; at 1F1B's limit, where every rank is
 * full through most of the steady state, that is the difference (see
 * docs/model.md, "V at 1F1B's memory"). Neither rule wins everywhere. */
enum construct_v_rules {
    CONSTRUCT_V_PAPER,
    CONSTRUCT_V_B_ROOM
};

/* Fill s (initialised for p, empty lists) with the compute order (F, B, W)
 * of the best candidate constructed under `rules` that fits every rank's
 * limit; an unlimited rank gets twice 1F1B's activation memory (4p *
 * M_B). Candidates are timed by the simulator and compared by cost, then
 * makespan, then peak memory. Errors: ZB_EUNSUPPORTED unless placement v
 * with vpp 2; ZB_ENOMEM_LIMIT when a rank's limit is below what the
 * construction needs (2 * M_B: one microbatch's two chunks) or no
 * candidate fits. */
int zbi_construct_v(const struct zb_profile *p, enum construct_v_rules rules,
                struct zb_schedule *s, struct zb_error *err);

/* zbi_construct_v() running every refinement chain, also those it skips as
 * repeats of one it ran (a rule their decisions never turned on:
 * construct_v.c, RULE_*), and keeping nothing (memo.h): the same order
 * wherever the tuning's budget does not bind, in more time. For tests. */
int zbi_construct_v_every_chain(const struct zb_profile *p,
                            enum construct_v_rules rules,
                            struct zb_schedule *s, struct zb_error *err);

#endif
