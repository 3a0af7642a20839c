/* bound_strong.c - a lower bound by refutation: if propagating the
 * horizon "objective <= H" through the fixed-order relation (ilp_rel.c)
 * empties some start window, no schedule reaches H, so the optimum lies
 * above H. Bisection between the closed-form bound and the incumbent.
 *
 * Each probe is the same propagation the models are built with (cheap:
 * docs/tuning.md, "ILP size limits"), and it sees what the closed form
 * cannot: the head and tail idle of every rank at once, the round trips
 * through busy ranks, memory-forced orders. Refutations are proofs whatever
 * the probe order; bisection just assumes they are monotone in H to aim. */
#include <math.h>
#include "ilp.h"

struct limit {
    double deadline;
    const volatile sig_atomic_t *interrupt;
};

static bool stop(void *arg)
{
    const struct limit *l = arg;
    return zb_clock_now() >= l->deadline || (l->interrupt && *l->interrupt);
}

/* A cancelled probe refutes nothing. */
static bool refuted(const struct ilp_inst *in, double h, struct limit *l)
{
    struct ilp_rel rel;
    bool ok;

    zbi_ilp_rel_init(&rel, in);
    rel.cancel = stop;
    rel.cancel_arg = l;
    zbi_ilp_rel_fix_memory(&rel);
    ok = zbi_ilp_rel_prepare(&rel, h) || rel.cancelled;
    zbi_ilp_rel_release(&rel);
    return !ok;
}

double zbi_ilp_bound_strong(const struct ilp_inst *in, double lo, double hi,
                            double deadline,
                            const volatile sig_atomic_t *interrupt)
{
    /* Probes closer than the proofs' slack prove nothing new. */
    const double tol = 2 * ILP_TOL * fmax(1, hi);
    struct limit l = { deadline, interrupt };
    double best = lo;

    /* The incumbent itself is never refuted; just below it often is,
     * which proves it optimal in one probe. */
    hi -= tol;
    if (hi <= lo)
        return lo;
    if (refuted(in, hi, &l))
        return hi;
    while (hi - lo > tol && !stop(&l)) {
        double mid = 0.5 * (lo + hi);
        if (refuted(in, mid, &l)) {
            best = lo = mid;
        } else {
            hi = mid;
        }
    }
    return best;
}
