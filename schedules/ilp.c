/* ilp.c - `ilp`: the optimal-placement integer program (solver/) as a
 * generator, with default options (60 s, both cores, cost). The CLI calls
 * zb_ilp_solve() itself to pass --time-limit and friends. */
#include <stddef.h>
#include "families.h"
#include "zbsched/generator.h"
#include "zbsched/solver.h"

static int gen_ilp(const struct zb_profile *p, struct zb_schedule *s,
                   struct zb_error *err)
{
    struct zb_schedule full;
    int rc;

    if ((rc = zb_ilp_solve(p, NULL, &full, err)) < 0)
        return rc;
    /* zb_generate() lowers and times the order again; the solver's
     * report travels with it. */
    zb_schedule_copy_order(s, &full);
    s->solver = full.solver;
    zb_schedule_release(&full);
    return 0;
}

const struct zb_generator zb_gen_ilp = {
    .name = "ilp",
    .summary = "integer program (GLPK): best order for real times, comm "
               "and limits, with a proven bound",
    .placements = ZB_PLACES_LOOP | ZB_PLACES_V, .min_vpp = 1, .max_vpp = 64,
    .memory_aware = true,
    .solver = true,
    .generate = gen_ilp,
};
