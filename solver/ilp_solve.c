/* ilp_solve.c - zb_ilp_solve(): check the limits, start from the best of
 * the caller's orders, stop at once if a closed-form bound proves it, else
 * search; say honestly what was proven. The `ilp` row (schedules/plan/ilp.c)
 * lowers and validates the order like any generator's. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include "ilp_search.h"
#include "zbsched/bound.h"
#include "zbsched/dp.h"

double zb_ilp_min_limit(const struct zb_profile *p, int r)
{
    return zb_profile_rank_microbatch(p, r);
}

static int check(const struct zb_profile *p,
                 const struct zb_options *opt, struct zb_error *err)
{
    if (!(opt->time_limit >= 0) || !isfinite(opt->time_limit))
        return zb_error_set(err, ZB_EINVAL, "time limit must be a finite "
                            "number >= 0, got %g", opt->time_limit);
    if (!(opt->gap >= 0) || !isfinite(opt->gap))
        return zb_error_set(err, ZB_EINVAL, "gap must be a finite number "
                            ">= 0, got %g", opt->gap);
    if (opt->threads < 1 || opt->threads > 2)
        return zb_error_set(err, ZB_EINVAL, "threads must be 1 or 2, got "
                            "%d", opt->threads);
    if (opt->objective != ZB_OBJECTIVE_COST &&
        opt->objective != ZB_OBJECTIVE_MAKESPAN)
        return zb_error_set(err, ZB_EINVAL, "unknown objective %d",
                            (int)opt->objective);
    for (int r = 0; r < p->pp; r++)
        if (p->mem_limit[r] < zb_ilp_min_limit(p, r) * (1 - 1e-12))
            return zb_error_set(err, ZB_ENOMEM_LIMIT,
                                "no schedule fits memory limit %g on rank "
                                "%d: the smallest that works is %g "
                                "(vpp*M_B)", p->mem_limit[r], r,
                                zb_ilp_min_limit(p, r));
    return 0;
}

/* The best of the caller's candidates that fit the limits, or the serial
 * order if none does. */
static void warm_start(const struct ilp_inst *in,
                       const struct zb_schedule *warm, int nwarm,
                       struct ilp_order *best)
{
    struct ilp_order o;
    struct ilp_eval ev = { .t = NULL };
    double best_obj = INFINITY;

    zbi_ilp_order_init(&o, in);
    for (int i = 0; i < nwarm; i++) {
        if (!warm[i].predicted.fits_memory)
            continue;
        zbi_ilp_order_from_schedule(&o, in, &warm[i]);
        if (zbi_ilp_order_eval(in, &o, &ev) == 0 && ev.obj < best_obj) {
            best_obj = ev.obj;
            zbi_ilp_order_copy(best, &o, in);
        }
    }
    if (!isfinite(best_obj))
        zbi_ilp_order_serial(best, in);
    zbi_ilp_order_release(&o, in);
}

static double closed_bound(const struct zb_profile *p, enum zb_objective obj)
{
    if (zb_dp_active(p))
        return zb_bound_step(p);
    return obj == ZB_OBJECTIVE_COST ? zb_bound_cost(p)
                                    : zb_bound_makespan(p);
}

/* s->solver from the search's result; unit converts the model's objective
 * and bound back to the profile's time unit (zbi_ilp_scale_profile). */
static void fill_info(struct zb_solver_info *info, struct ilp_shared *sh,
                      double warm_obj, double unit)
{
    double obj = sh->best_ev.obj, bound = sh->bound;
    const char *status;

    if (bound > 0 && ilp_meets(obj, bound)) {
        status = "optimal";
        bound = obj;    /* equal within the proofs' slack */
    }
    else if (sh->interrupt && *sh->interrupt)
        status = "interrupted";
    else if (obj < warm_obj * (1 - ILP_TOL))
        status = "feasible";
    else
        status = "heuristic";
    *info = (struct zb_solver_info){
        .present = true, .objective = obj * unit, .bound = bound * unit,
        /* With no bound at all (independent and nothing proven) the
         * relative gap is taken as 100 %. */
        .gap = bound > 0 ? fmax(0, obj / bound - 1) : 1,
        .seconds = zb_clock_now() - sh->t0, .nodes = sh->nodes,
    };
    snprintf(info->status, sizeof(info->status), "%s", status);
    snprintf(info->warning, sizeof(info->warning), "%s", sh->failure);
}

/* Fill s (initialised for prof) with the best order found and s->solver.
 * The search runs in the model's units (zbi_ilp_scale_profile). */
static void solve_order(const struct zb_profile *prof,
                        const struct zb_options *opt,
                        const struct zb_schedule *warm, int nwarm,
                        struct zb_schedule *s)
{
    struct zb_profile scaled, *p = &scaled;
    struct ilp_inst in;
    struct ilp_order start;
    struct ilp_shared sh;
    double warm_obj, t0 = zb_clock_now();
    double unit = zbi_ilp_scale_profile(prof, &scaled);

    zbi_ilp_inst_init(&in, p, opt->objective);
    zbi_ilp_order_init(&start, &in);
    warm_start(&in, warm, nwarm, &start);
    zbi_ilp_shared_init(&sh, &in, &start);
    sh.gap = opt->gap;
    sh.independent = opt->independent;
    sh.interrupt = opt->interrupt;
    sh.t0 = t0;
    sh.unit = unit;
    sh.deadline = t0 + opt->time_limit;
    warm_obj = sh.best_ev.obj;
    /* A bound the heuristic meets proves it: no search at all. Else try
     * to refute better objectives by propagation (a fifth of the time at
     * most). */
    if (!opt->independent)
        zbi_ilp_shared_bound(&sh, closed_bound(p, opt->objective));
    /* Too large for the relation: window search only (ilp_band.c). */
    sh.tiebreak = !zbi_ilp_inst_searchable(&in);
    if (!sh.tiebreak && !opt->independent && !zbi_ilp_shared_done(&sh))
        zbi_ilp_shared_bound(&sh, zbi_ilp_bound_strong(&in, sh.bound, warm_obj,
                                               t0 + 0.2 * opt->time_limit,
                                               opt->interrupt));
    if (!zbi_ilp_shared_done(&sh))
        zbi_ilp_search(&sh, opt);
    zbi_ilp_order_to_schedule(&sh.best, &in, s);
    fill_info(&s->solver, &sh, warm_obj, unit);
    zbi_ilp_shared_release(&sh);
    zbi_ilp_order_release(&start, &in);
    zbi_ilp_inst_release(&in);
    zb_profile_release(&scaled);
}

static const struct zb_options *or_defaults(const struct zb_options *opt,
                                           struct zb_options *def)
{
    if (opt)
        return opt;
    zb_options_init(def);
    return def;
}

int zb_ilp_solve(const struct zb_profile *p, const struct zb_options *opt,
                 const struct zb_schedule *warm, int nwarm,
                 struct zb_schedule *s, struct zb_error *err)
{
    struct zb_options def;
    int rc;

    opt = or_defaults(opt, &def);
    if ((rc = check(p, opt, err)) < 0)
        return rc;
    solve_order(p, opt, warm, nwarm, s);
    return 0;
}

int zb_ilp_export_lp(const struct zb_profile *prof,
                     const struct zb_options *opt,
                     const struct zb_schedule *warm, int nwarm,
                     const char *path, struct zb_error *err)
{
    struct zb_options def;
    struct zb_profile scaled, *p = &scaled;
    double unit;
    struct ilp_inst in;
    struct ilp_order start;
    struct ilp_eval ev = { .t = NULL };
    struct ilp_rel rel;
    struct ilp_model *md;
    int rc;

    opt = or_defaults(opt, &def);
    if ((rc = check(prof, opt, err)) < 0)
        return rc;
    unit = zbi_ilp_scale_profile(prof, &scaled);
    zbi_ilp_inst_init(&in, p, opt->objective);
    if (!zbi_ilp_inst_searchable(&in)) {
        rc = zb_error_set(err, ZB_EUNSUPPORTED, "%d passes (%d at most, %d "
                          "a rank) are too many for the integer program",
                          in.n, ILP_MAX_PASSES, ILP_MAX_RANK_PASSES);
        zbi_ilp_inst_release(&in);
        zb_profile_release(&scaled);
        return rc;
    }
    zbi_ilp_order_init(&start, &in);
    zbi_ilp_rel_init(&rel, &in);
    warm_start(&in, warm, nwarm, &start);
    zbi_ilp_order_eval(&in, &start, &ev);
    zbi_ilp_rel_fix_memory(&rel);
    if (!zbi_ilp_rel_prepare(&rel, ev.obj)) {
        rc = zb_error_set(err, ZB_ESOLVER, "model preparation failed at "
                          "horizon %g (a bug)", ev.obj);
        goto out;
    }
    rel.obj_lb = opt->independent ? 0 : closed_bound(p, opt->objective);
    zbi_ilp_glpk_quiet();
    md = zbi_ilp_model_build(&rel, true);
    errno = 0;
    if ((rc = zbi_ilp_model_write_lp(md, path, unit)) < 0)
        zb_error_set(err, rc, "cannot write the model to '%s': %s", path,
                     errno ? strerror(errno) : "GLPK's writer failed");
    zbi_ilp_model_free(md);
    zbi_ilp_glpk_done();
out:
    zbi_ilp_rel_release(&rel);
    zbi_ilp_order_release(&start, &in);
    zbi_ilp_inst_release(&in);
    zb_profile_release(&scaled);
    return rc;
}
