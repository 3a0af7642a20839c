/* solver_grids.h - the two grids that hold the integer program to account:
 * the closed-form bound never above an optimum it proves, and the solver
 * never worse than `zb`. One instance at a time, so the unit suite
 * (test_solver.c) runs a small slice and `make bench`
 * (tools/bench_solver_check.c) runs them whole: the same checks, one copy.
 * No test framework here: a check returns its verdict. */
#ifndef ZBSCHED_TEST_SOLVER_GRIDS_H
#define ZBSCHED_TEST_SOLVER_GRIDS_H

#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include "shapes.h"
#include "zbsched/bound.h"
#include "zbsched/generator.h"
#include "zbsched/options.h"
#include "zbsched/schedule.h"
#include "zbsched/validate.h"

/* What one instance did. */
struct grid_row {
    char what[96];          /* the instance, for people */
    char status[16];        /* the solver's status */
    double objective;       /* the solver's (simulated) cost */
    double other;           /* the closed-form bound, or zb's cost */
    bool proven;            /* status "optimal" */
    bool tight;             /* bound grid: the bound meets the optimum */
    char violation[ZB_ERROR_MSG_MAX + 64];  /* "" when every check held */
};

/* ---- the closed-form bound against proven optima ----------------------- */

/* Unequal times (F, B, W, comm) of the bound grid. */
static const double grid_times[][4] = {
    { 1, 1.2, 0.8, 0.05 }, { 1, 1.5, 0.5, 0.2 }, { 1, 0.8, 1.3, 0.1 },
    { 1, 1, 1, 0 },
};

/* The bound grid: p 2..4, m p..p+3, four time sets, limits p + extra
 * (M_B 1, M_W 0.5): 144 instances. Fills up to max shapes; returns how
 * many the grid has. */
#define BOUND_GRID_MAX 256
static inline int bound_grid(struct shape *out, int max)
{
    int n = 0;

    for (int pp = 2; pp <= 4; pp++)
        for (int mb = pp; mb <= pp + 3; mb++)
            for (int t = 0; t < 4; t++)
                for (int extra = 0; extra <= pp; extra += pp > 2 ? 1 : 2) {
                    if (pp == 4 && (extra == 2 || extra == 3))
                        continue;
                    if (n < max)
                        out[n] = (struct shape){
                            pp, 1, mb, ZB_PLACEMENT_LOOP, grid_times[t][0],
                            grid_times[t][1], grid_times[t][2],
                            grid_times[t][3], 1, 0.5, pp + extra };
                    n++;
                }
    return n;
}

/* Every solver result: legal, fits, objective = simulated cost, bound
 * below it. Returns false with row->violation set otherwise. */
static inline bool grid_solve(const struct zb_profile *p,
                              const struct zb_options *o,
                              struct zb_schedule *s, struct grid_row *row)
{
    struct zb_error err = { 0 };

    if (zb_generator_run(zb_generator_find("ilp"), p, o, s, &err) < 0) {
        snprintf(row->violation, sizeof(row->violation), "ilp: %s", err.msg);
        return false;
    }
    snprintf(row->status, sizeof(row->status), "%s", s->solver.status);
    row->objective = s->predicted.cost;
    row->proven = !strcmp(s->solver.status, "optimal");
    if (!s->solver.present || strcmp(s->name, "ilp"))
        snprintf(row->violation, sizeof(row->violation),
                 "no solver record");
    else if (zb_validate_schedule(s, &err) < 0)
        snprintf(row->violation, sizeof(row->violation), "illegal: %s",
                 err.msg);
    else if (!s->predicted.fits_memory)
        snprintf(row->violation, sizeof(row->violation), "over the limit");
    else if (fabs(s->solver.objective - s->predicted.cost) >= 1e-9)
        snprintf(row->violation, sizeof(row->violation),
                 "objective %g, simulated %g", s->solver.objective,
                 s->predicted.cost);
    else if (s->solver.bound > s->solver.objective * (1 + 1e-9))
        snprintf(row->violation, sizeof(row->violation),
                 "solver bound %g above its objective %g", s->solver.bound,
                 s->solver.objective);
    return !row->violation[0];
}

/* The integer program alone (no closed-form bound in it) on one shape of
 * the grid: the bound of src/bound.c must not exceed a proven optimum. */
static inline bool bound_grid_check(const struct shape *sh, double seconds,
                                    struct grid_row *row)
{
    struct zb_options o;
    struct zb_profile p;
    struct zb_schedule s;

    memset(row, 0, sizeof(*row));
    snprintf(row->what, sizeof(row->what),
             "p %d m %d times %g/%g/%g/%g limit %g", sh->pp, sh->mb, sh->f,
             sh->b, sh->w, sh->comm, sh->limit);
    zb_options_init(&o);
    o.time_limit = seconds;
    o.threads = 1;
    o.independent = true;
    make_profile(sh, &p);
    row->other = zb_bound_cost(&p);
    if (grid_solve(&p, &o, &s, row)) {
        if (row->proven && row->other > row->objective * (1 + 1e-9))
            snprintf(row->violation, sizeof(row->violation),
                     "bound %g above the optimum %g", row->other,
                     row->objective);
        row->tight = row->proven &&
                     row->other >= row->objective * (1 - 1e-9);
        zb_schedule_release(&s);
    }
    zb_profile_release(&p);
    return !row->violation[0];
}

/* ---- never worse than the heuristic --------------------------------- */

static const struct random_ranges grid_ranges = { 2, 5, 2, 2, 3, 2.5,
                                                  false };

/* The next random profile of the sequence *seed (2024 for the grid):
 * ilp under `seconds` is never worse than zb, and above the closed-form
 * bound. The profile is drawn whatever happens, so the sequence holds. */
static inline bool random_grid_check(unsigned *seed, double seconds,
                                     struct grid_row *row)
{
    struct zb_options o;
    struct zb_profile p;
    struct zb_schedule heur, s;
    struct zb_error err = { 0 };
    int rc;

    memset(row, 0, sizeof(*row));
    random_profile(seed, &grid_ranges, &p);
    snprintf(row->what, sizeof(row->what), "p %d vpp %d %s m %d", p.pp,
             p.vpp, p.placement == ZB_PLACEMENT_V ? "v" : "loop",
             p.microbatches);
    zb_options_init(&o);
    o.time_limit = seconds;
    o.threads = 1;
    rc = zb_generator_run(zb_generator_find("zb"), &p, NULL, &heur, &err);
    row->other = rc == 0 ? heur.predicted.cost : NAN;
    if (grid_solve(&p, &o, &s, row)) {
        if (rc == 0 && s.predicted.cost > heur.predicted.cost + 1e-9)
            snprintf(row->violation, sizeof(row->violation),
                     "ilp %g worse than zb %g", s.predicted.cost,
                     heur.predicted.cost);
        else if (s.predicted.cost < s.predicted.lower_bound * (1 - 1e-9))
            snprintf(row->violation, sizeof(row->violation),
                     "cost %g below the closed-form bound %g",
                     s.predicted.cost, s.predicted.lower_bound);
        zb_schedule_release(&s);
    }
    if (rc == 0)
        zb_schedule_release(&heur);
    zb_profile_release(&p);
    return !row->violation[0];
}

#endif
