/* bound_strong.c - a lower bound by refutation: if propagating the
 * horizon "objective <= H" through the fixed-order relation (ilp_rel.c)
 * empties some start window, no schedule reaches H, so the optimum lies
 * above H. Bisection between the closed-form bound and the incumbent.
 *
 * Each probe is the same propagation the models are built with (tens of
 * milliseconds at p 8, m 32), and it sees what the closed form cannot:
 * the head and tail idle of every rank at once, the round trips through
 * busy ranks, memory-forced orders. Refutations are proofs whatever the
 * probe order; bisection just assumes they are monotone in H to aim. */
#include <math.h>
#include "ilp.h"

static bool refuted(const struct ilp_inst *in, double h)
{
    struct ilp_rel rel;
    bool ok;

    ilp_rel_init(&rel, in);
    ilp_rel_fix_memory(&rel);
    ok = ilp_rel_prepare(&rel, h);
    ilp_rel_release(&rel);
    return !ok;
}

double ilp_bound_strong(const struct ilp_inst *in, double lo, double hi,
                        double deadline)
{
    /* Probes closer than the proofs' slack prove nothing new. */
    const double tol = 2 * ILP_TOL * fmax(1, hi);
    double best = lo;

    /* The incumbent itself is never refuted; just below it often is,
     * which proves it optimal in one probe. */
    hi -= tol;
    if (hi <= lo)
        return lo;
    if (refuted(in, hi))
        return hi;
    while (hi - lo > tol && ilp_now() < deadline) {
        double mid = 0.5 * (lo + hi);
        if (refuted(in, mid)) {
            best = lo = mid;
        } else {
            hi = mid;
        }
    }
    return best;
}
