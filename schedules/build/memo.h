/* memo.h - the last order each expensive construction built, kept with
 * its profile (internal to schedules/). One run asks for the same
 * construction on the same profile more than once: `zb` weighs the
 * `zb-v` family among its candidates, whose ZB-V construction and list
 * scheduler at 1F1B's limit are zb's own there; the pick over every
 * shape runs `zb` again on the winner's shape; `compare` and `frontier`
 * run `zb` and `zb-v` one after the other. At p 64, m 1024 a ZB-V
 * construction takes about a second; a copy, milliseconds. Safe across
 * threads; zb_generator_forget() (generator.h) empties it. */
#ifndef ZBSCHED_MEMO_H
#define ZBSCHED_MEMO_H

#include <stdbool.h>
#include "zbsched/profile.h"
#include "zbsched/schedule.h"

enum memo_kind {
    MEMO_CONSTRUCT_V,           /* zbi_construct_v(), CONSTRUCT_V_PAPER */
    MEMO_CONSTRUCT_V_B_ROOM,    /* zbi_construct_v(), CONSTRUCT_V_B_ROOM */
    MEMO_GREEDY_BEST,           /* zbi_greedy_best() */
    MEMO_KINDS
};

/* Copy the order kind last built for a profile equal to p into s
 * (initialised for p); false, s untouched, when it built none for p. */
bool zbi_memo_fetch(enum memo_kind kind, const struct zb_profile *p,
                struct zb_schedule *s);

/* Keep s's order as what kind built for p, replacing the last one. */
void zbi_memo_store(enum memo_kind kind, const struct zb_profile *p,
                const struct zb_schedule *s);

#endif
