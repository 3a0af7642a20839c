/* search_plan.c - which orders `zb`'s local search starts from, and how
 * much of the budget each gets (see plan.h).
 *
 * The search is local: from the choice it can settle in a basin that a
 * different start (another family's shape of warm-up and drain) avoids.
 * So it runs from the choice and, with a share more, from the runner-up;
 * a runner-up that starts far above the choice (more than RUNNER_UP_ROOM
 * times the choice's distance to the lower bound) does not win in that
 * share, and the choice's search gets it instead. A start of its own
 * gets a search of its own where it fits and starts better than the
 * choice. Where it is the ZB-V room start, or the capped list with no
 * room start searched, its basin is the one that wins: it takes the
 * runner-up's share and all but BESIDE_SHARE of the choice's (the capped
 * list adds those to its own; the room start does not need them). A
 * choice that meets the lower bound is optimal: it is not searched; one
 * close to it (plan.h) is not searched either, nor any other start,
 * unless the user asked for more effort.
 * With data parallelism the search minimises the step, which the pick by
 * step then weighs against every candidate: one search, from the choice.
 * Why each share is what it is: docs/tuning.md, "Search plan". */
#include <assert.h>
#include <stddef.h>
#include "plan/plan.h"
#include "zbsched/dp.h"
#include "zbsched/op.h"

/* The choice's share where it searches beside the runner-up. */
#define CHOICE_SHARE 1
/* The runner-up's share (docs/tuning.md, "Runner-up share"). */
#define RUNNER_UP_SHARE 0.5
/* A runner-up starting further above the choice than this many times the
 * choice's distance to its bound is not searched (docs/tuning.md,
 * "Runner-up room"). */
#define RUNNER_UP_ROOM 2
/* A start of its own's share. */
#define OWN_SHARE 1
/* What the choice keeps where a start of its own takes the rest
 * (docs/tuning.md, "Beside-room share"). */
#define BESIDE_SHARE 0.25

/* Whether a and b (same profile) run the same passes in the same order on
 * every rank. */
static bool same_order(const struct zb_schedule *a,
                       const struct zb_schedule *b)
{
    for (int r = 0; r < a->profile.pp; r++) {
        const struct zb_op_list *x = &a->ranks[r], *y = &b->ranks[r];
        if (x->n != y->n)
            return false;
        for (int i = 0; i < x->n; i++)
            if (x->ops[i].kind != y->ops[i].kind ||
                x->ops[i].stage != y->ops[i].stage ||
                x->ops[i].mb != y->ops[i].mb)
                return false;
    }
    return true;
}

/* The best fitting candidate after the choice that may be chosen, is not
 * a finished order (PLAN_FINISHED) and whose order differs from the
 * choice's, or NULL. A copy of the choice's order would be a second
 * search from the same start: at 1F1B's limit under V the `zb-v` family
 * is the better of the ZB-V construction and the list scheduler, both
 * candidates already. */
static const struct zb_schedule *runner_up(const struct plan_candidates *c,
                                           const struct zb_schedule *choice)
{
    const struct zb_schedule *r = NULL;

    for (int i = 0; i < c->n; i++) {
        const struct zb_schedule *x = &c->s[i];
        if (x == choice || plan_own_start(c->role[i]) ||
            c->role[i] == PLAN_FINISHED ||
            !x->predicted.fits_memory || same_order(x, choice))
            continue;
        if (!r || zbi_pick_better(x, r))
            r = x;
    }
    return r;
}

/* c's start of its own with role r where it gets a search: it fits and
 * starts better than the choice. NULL otherwise. */
static const struct zb_schedule *own(const struct plan_candidates *c,
                                     enum plan_role r,
                                     const struct zb_schedule *choice)
{
    for (int i = 0; i < c->n; i++)
        if (c->role[i] == r && c->s[i].predicted.fits_memory &&
            zbi_pick_better(&c->s[i], choice))
            return &c->s[i];
    return NULL;
}

int zbi_plan_searches(const struct zb_profile *p,
                      const struct zb_options *opt,
                      const struct plan_candidates *c,
                      const struct zb_schedule *choice,
                      struct plan_start starts[PLAN_MAX_STARTS])
{
    const struct zb_measures *m = &choice->predicted;
    const struct zb_schedule *depth, *room, *capped, *first, *r;
    double total = 0;
    int n = 0;

    starts[n++] = (struct plan_start){ choice, 0 };
    if (zb_dp_active(p)) {
        starts[0].share = 1;
        return n;
    }
    if (zbi_pick_close(choice) && !zbi_pick_eager(opt, p))
        return n;   /* a search could gain PLAN_CLOSE_GAP at most */
    depth = own(c, PLAN_DEPTH_START, choice);
    room = own(c, PLAN_ROOM_START, choice);
    capped = own(c, PLAN_CAPPED_START, choice);
    first = room ? room : capped;
    if (zbi_pick_meets_bound(choice)) {
        /* optimal: starts[0] keeps share 0 */
    } else if (first) {
        starts[0].share = BESIDE_SHARE;
    } else {
        r = runner_up(c, choice);
        if (r && r->predicted.cost - m->cost >
                     RUNNER_UP_ROOM * (m->cost - m->lower_bound))
            r = NULL;
        starts[0].share = r ? CHOICE_SHARE : CHOICE_SHARE + RUNNER_UP_SHARE;
        if (r)
            starts[n++] = (struct plan_start){ r, RUNNER_UP_SHARE };
    }
    /* At most one of depth (loop, one chunk) and room (V) is built. */
    if (room || depth)
        starts[n++] = (struct plan_start){ room ? room : depth, OWN_SHARE };
    if (capped)
        starts[n++] = (struct plan_start){
            capped, capped == first ? OWN_SHARE + CHOICE_SHARE +
                                          RUNNER_UP_SHARE - BESIDE_SHARE
                                    : OWN_SHARE };
    for (int i = 0; i < n; i++)
        total += starts[i].share;
    assert(n <= PLAN_MAX_STARTS && total <= PLAN_BUDGETS + 1e-12);
    return n;
}
