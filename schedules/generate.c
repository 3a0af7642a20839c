/* generate.c - the one pipeline every generator's output goes through:
 * generate (compute order) -> simulate -> lower -> place the data-parallel
 * collectives (re-simulated) -> validate; and the shape (placement, vpp) a
 * family's profile is built in. */
#include "zbsched/bound.h"
#include "zbsched/dp.h"
#include "zbsched/generator.h"
#include "zbsched/lower.h"
#include "zbsched/sim.h"
#include "zbsched/validate.h"
#include "zbsched/zero.h"

/* The one wording of a shape g cannot serve, for a profile's values and
 * for the ones a user set (vpp is a double there: not yet checked). */
static int check_placement(const struct zb_generator *g,
                           enum zb_placement placement, struct zb_error *err)
{
    /* Two placements: a family that refuses one serves the other. */
    if (!(g->placements & (1u << placement)))
        return zb_error_set(err, ZB_EUNSUPPORTED,
                            "%s needs placement '%s', got '%s'", g->name,
                            zb_placement_name(!placement),
                            zb_placement_name(placement));
    return 0;
}

static int check_vpp(const struct zb_generator *g, double vpp,
                     struct zb_error *err)
{
    if (vpp >= g->min_vpp && vpp <= g->max_vpp)
        return 0;
    if (g->min_vpp == g->max_vpp)
        return zb_error_set(err, ZB_EUNSUPPORTED, "%s needs vpp = %d, got %g",
                            g->name, g->min_vpp, vpp);
    return zb_error_set(err, ZB_EUNSUPPORTED,
                        "%s needs vpp between %d and %d, got %g", g->name,
                        g->min_vpp, g->max_vpp, vpp);
}

int zb_generator_accepts(const struct zb_generator *g,
                         const struct zb_profile *prof, struct zb_error *err)
{
    int rc = check_placement(g, prof->placement, err);
    if (rc < 0 || (rc = check_vpp(g, prof->vpp, err)) < 0)
        return rc;
    if (prof->microbatches < g->min_mb_per_pp * prof->pp)
        return zb_error_set(err, ZB_EUNSUPPORTED,
                            "%s needs at least %dp = %d microbatches, got %d",
                            g->name, g->min_mb_per_pp,
                            g->min_mb_per_pp * prof->pp, prof->microbatches);
    return 0;
}

int zb_generator_profile(const struct zb_generator *g,
                         const struct zb_profile_draft *d,
                         struct zb_profile *out, struct zb_error *err)
{
    struct zb_profile_draft shaped = *d;    /* borrows d's arrays */
    int rc;

    /* What the user said is checked before the build, whose own shape
     * rule (v needs vpp 2) would name only half of a conflict. */
    if ((d->placement_set &&
         (rc = check_placement(g, d->placement, err)) < 0) ||
        (d->vpp.set && (rc = check_vpp(g, d->vpp.value, err)) < 0))
        return rc;
    if (g->shape_vpp && !d->placement_set) {
        shaped.placement = g->shape_placement;
        shaped.placement_set = true;
    }
    if (g->shape_vpp && !d->vpp.set)
        shaped.vpp = (struct zb_opt){ .value = g->shape_vpp, .set = true };
    return zb_profile_build(&shaped, out, err);
}

/* One bound everywhere: what a search proved (s->solver.bound, for the
 * objective it optimised) joins the closed-form bound (bound.h), so the
 * schedule's `lower_bound`, the summary line, `compare` and the solver
 * block say the same. With data parallelism the search minimised the
 * step, which ends after the compute: its bound is no bound on cost or
 * makespan and stays in the solver block alone. */
static void join_solver_bound(struct zb_schedule *s,
                              const struct zb_options *opt)
{
    double *b = opt->objective == ZB_OBJECTIVE_MAKESPAN
                    ? &s->predicted.makespan_bound
                    : &s->predicted.lower_bound;

    if (s->solver.present && !zb_dp_active(&s->profile) &&
        s->solver.bound > *b)
        *b = s->solver.bound;
}

/* The one wording of a pipeline step failing on g's order. */
static void bug(const struct zb_generator *g, struct zb_error *err)
{
    zb_error_prefix(err, "%s produced an illegal schedule (a bug)", g->name);
}

/* Stages that differ in memory, for a family that counts microbatches:
 * the order built on the uniform view holds within the real limits
 * (profile.h), and is then timed and measured with each stage's own. */
static int time_uniform(const struct zb_generator *g,
                        const struct zb_profile *prof,
                        const struct zb_options *opt,
                        struct zb_schedule *out, struct zb_error *err)
{
    struct zb_profile view;
    int rc;

    zb_profile_uniform_memory(prof, &view);
    rc = zb_generator_time(g, &view, opt, out, err);
    zb_profile_release(&view);
    if (rc < 0)
        return rc;
    zb_schedule_set_profile(out, prof);
    return zb_generator_timed(g, out, err);
}

int zb_generator_time(const struct zb_generator *g,
                      const struct zb_profile *prof,
                      const struct zb_options *opt, struct zb_schedule *out,
                      struct zb_error *err)
{
    struct zb_options def;
    int rc;

    opt = zb_options_or_default(opt, &def);
    if (prof->stage_mem && !g->stage_memory)
        return time_uniform(g, prof, opt, out, err);
    zb_schedule_init(out, g->name, prof);
    if ((rc = zb_generator_accepts(g, prof, err)) < 0 ||
        (rc = g->generate(prof, opt, out, err)) < 0) {
        zb_schedule_release(out);
        return rc;
    }
    return g->simulated ? 0 : zb_generator_timed(g, out, err);
}

int zb_generator_timed(const struct zb_generator *g, struct zb_schedule *s,
                       struct zb_error *err)
{
    int rc = zb_sim_run(s, err);

    if (rc < 0) {
        bug(g, err);
        zb_schedule_release(s);
    }
    return rc;
}

int zb_generator_finish(const struct zb_generator *g,
                        const struct zb_options *opt, struct zb_schedule *s,
                        struct zb_error *err)
{
    struct zb_options def;
    int rc;

    opt = zb_options_or_default(opt, &def);
    /* The simulation ordered the compute ops in time for lowering;
     * lowering keeps those ops, their times and the measures as they are
     * (comm ops take no compute time), so there is nothing to re-time. */
    if ((rc = zb_lower_run(s, err)) < 0 || (rc = zb_zero_place(s, err)) < 0)
        goto fail;
    zb_bound_set(s);
    join_solver_bound(s, opt);
    /* Whether a fixed family fits the limit is a property of the choice,
     * reported as fits_memory; for a row that reads the limit, fitting is
     * part of being correct. */
    rc = g->memory_aware ? zb_validate_schedule(s, err)
                         : zb_validate_order(s, err);
    if (rc == 0)
        return 0;
fail:
    bug(g, err);
    zb_schedule_release(s);
    return rc;
}

int zb_generator_run(const struct zb_generator *g,
                     const struct zb_profile *prof,
                     const struct zb_options *opt, struct zb_schedule *out,
                     struct zb_error *err)
{
    int rc = zb_generator_time(g, prof, opt, out, err);

    return rc < 0 ? rc : zb_generator_finish(g, opt, out, err);
}
