/* generate.c - the one pipeline every generator's output goes through:
 * generate (compute order) -> simulate -> lower -> place the data-parallel
 * collectives (re-simulated) -> validate. */
#include "zbsched/generator.h"
#include "zbsched/lower.h"
#include "zbsched/sim.h"
#include "zbsched/validate.h"
#include "zbsched/zero.h"

int zb_generator_accepts(const struct zb_generator *g,
                         const struct zb_profile *prof, struct zb_error *err)
{
    if (!(g->placements & (1u << prof->placement)))
        return zb_error_set(err, ZB_EUNSUPPORTED,
                            "%s does not support placement '%s'", g->name,
                            zb_placement_name(prof->placement));
    if (prof->vpp < g->min_vpp || prof->vpp > g->max_vpp) {
        if (g->min_vpp == g->max_vpp)
            return zb_error_set(err, ZB_EUNSUPPORTED,
                                "%s needs vpp = %d, got %d", g->name,
                                g->min_vpp, prof->vpp);
        return zb_error_set(err, ZB_EUNSUPPORTED,
                            "%s needs vpp between %d and %d, got %d",
                            g->name, g->min_vpp, g->max_vpp, prof->vpp);
    }
    return 0;
}

/* One bound everywhere: what a search proved (s->solver.bound, for the
 * objective it optimised) joins the simulator's closed-form bound, so the
 * schedule's `lower_bound`, the summary line, `compare` and the solver
 * block say the same. */
static void join_solver_bound(struct zb_schedule *s,
                              const struct zb_options *opt)
{
    double *b = opt->objective == ZB_OBJECTIVE_MAKESPAN
                    ? &s->predicted.makespan_bound
                    : &s->predicted.lower_bound;

    if (s->solver.present && s->solver.bound > *b)
        *b = s->solver.bound;
}

int zb_generator_run(const struct zb_generator *g,
                     const struct zb_profile *prof,
                     const struct zb_options *opt, struct zb_schedule *out,
                     struct zb_error *err)
{
    struct zb_options def;
    int rc;

    if (!opt) {
        zb_options_init(&def);
        opt = &def;
    }
    zb_schedule_init(out, g->name, prof);
    if ((rc = zb_generator_accepts(g, prof, err)) < 0 ||
        (rc = g->generate(prof, opt, out, err)) < 0)
        goto fail;
    /* The simulation orders the compute ops in time for lowering; lowering
     * keeps those ops, their times and the measures as they are (comm ops
     * take no compute time), so there is nothing to re-time. */
    if ((rc = zb_sim_run(out, err)) < 0 ||
        (rc = zb_lower_run(out, err)) < 0 ||
        (rc = zb_zero_place(out, err)) < 0)
        goto internal;
    join_solver_bound(out, opt);
    /* Whether a fixed family fits the limit is a property of the choice,
     * reported as fits_memory; for a row that reads the limit, fitting is
     * part of being correct. */
    rc = g->memory_aware ? zb_validate_schedule(out, err)
                         : zb_validate_order(out, err);
    if (rc < 0)
        goto internal;
    return 0;
internal:
    zb_error_prefix(err, "%s produced an illegal schedule (a bug)", g->name);
fail:
    zb_schedule_release(out);
    return rc;
}
