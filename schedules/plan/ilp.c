/* ilp.c - `ilp`: the optimal-placement integer program (solver/) as an
 * ordinary row: it reads the search options (time limit, gap, objective,
 * Ctrl-C, progress, --export-lp) and hands the solver its warm start, the
 * orders `zb` chooses from (candidates.c) plus `zb`'s choice after local search
 * (improve.c), so the solver needs nothing from this directory and never
 * starts below `zb`. Ctrl-C (opt->interrupt) also ends the local search.
 * A profile too large for the full model (zb_ilp_searchable) gets part of
 * the time limit as more local search, by the clock, the rest as the
 * solver's window search. */
#include <stdlib.h>
#include "plan/plan.h"
#include "search/search.h"
#include "zbsched/clock.h"
#include "zbsched/dp.h"
#include "zbsched/generator.h"
#include "zbsched/io.h"
#include "zbsched/sim.h"
#include "zbsched/solver.h"
#include "zbsched/xalloc.h"
#include "zbsched/zero.h"

/* Share of the time limit that the local search gets on a profile too
 * large for the full model. Measured at p 16, vpp 2, m 100 (docs/ilp.md):
 * the local search gains more per second there than the windows, which
 * found nothing more after it; the windows keep the rest. */
#define LARGE_LOCAL_SHARE 0.5

/* Go on with the local search from out's order until `until` (monotonic
 * seconds) by the clock, or Ctrl-C; never worse. */
static void search_more(const struct zb_profile *p,
                        const struct zb_options *opt, double until,
                        struct zb_schedule *out)
{
    struct deadline dl;
    double seconds = until - zb_clock_now();
    /* Work is counted in seconds of the reference machine, about as
     * many as wall seconds: the clock stops it first under load. */
    struct improve_opts io = { .seed = (unsigned)opt->seed + 1,
                               .threads = opt->threads,
                               .effort = seconds < 1e6 ? seconds : 1e6,
                               .interrupt = &dl.flag };

    if (seconds <= 0 || (opt->interrupt && *opt->interrupt))
        return;
    zbi_deadline_start(&dl, seconds, opt->interrupt);
    if (zbi_improve_order(p, out, &io, NULL, NULL) < 0)
        zb_sim_run(out, NULL);
    zbi_deadline_stop(&dl);
}

/* `zb`'s schedule from the candidates c, by zb's own plan (its searches
 * from the choice, the runner-up and the starts of their own, so never
 * worse than zb, which one search from the choice alone is not:
 * docs/tuning.md, "ilp warm start"), then searched further until `until`
 * if that is not in the past. False when no candidate fits. */
static bool searched_choice(const struct plan_candidates *c,
                            const struct zb_profile *p,
                            const struct zb_options *opt, double until,
                            struct zb_schedule *out)
{
    zb_schedule_init(out, "zb", p);
    /* A compute order with its times, which the warm start needs. */
    if (zbi_plan_zb(p, opt, c, out, NULL) < 0) {
        zb_schedule_release(out);
        return false;
    }
    search_more(p, opt, until, out);
    return true;
}

/* With data parallelism the W post-pass (zero.h) can end a candidate's
 * step sooner than any order the search reaches from it (zb keeps such an
 * order: zb.c): warm[0..n) gets, after its n orders, the grouped order of
 * each that fits and gains, owned by the caller (released from index n
 * on). Returns the new count. */
static int add_grouped(struct zb_schedule *warm, int n)
{
    int k = n;

    for (int i = 0; i < n; i++) {
        bool grouped;
        if (!warm[i].predicted.fits_memory ||
            zb_zero_best_step(&warm[i], &warm[k], &grouped, NULL) < 0)
            continue;
        if (grouped)
            k++;
        else
            zb_schedule_release(&warm[k]);
    }
    return k;
}

/* The caller's progress callback, with the clock of the whole call: the
 * search's own clock leaves out the warm start and the bounds. */
struct wall_progress {
    const struct zb_options *opt;
    double t0;
};

static void report_wall(const struct zb_progress *pr, void *ctx)
{
    const struct wall_progress *w = ctx;
    struct zb_progress q = *pr;

    q.wall = zb_clock_now() - w->t0;
    w->opt->progress(&q, w->opt->progress_ctx);
}

/* --export-lp goes through a temporary file like every other output. */
struct lp_export {
    const struct zb_profile *p;
    const struct zb_options *opt;
    const struct zb_schedule *warm;
    int nwarm;
};

static int write_lp(const char *tmp, void *ctx, struct zb_error *err)
{
    const struct lp_export *x = ctx;

    return zb_ilp_export_lp(x->p, x->opt, x->warm, x->nwarm, tmp, err);
}

static int gen_ilp(const struct zb_profile *p, const struct zb_options *opt,
                   struct zb_schedule *s, struct zb_error *err)
{
    struct plan_candidates c;
    struct zb_schedule *warm, choice;
    struct zb_options left = *opt, warming = *opt;
    bool have_choice, large = !zb_ilp_searchable(p), dp = zb_dp_active(p);
    double t0 = zb_clock_now();
    struct wall_progress wp = { opt, t0 };
    int nwarm = 0, nplain, rc = 0;

    /* The warm start reports once, as a whole (below), not by zb's steps:
     * the reports keep a second apart on one clock. */
    warming.progress = NULL;
    zbi_plan_collect(p, &warming, &c);
    /* Every fixed family's order in table order (with data parallelism
     * every candidate's), then `zb`'s searched choice: borrowed (nothing
     * to free but the array and the choice), then the grouped orders. */
    warm = zb_xcalloc(2 * ((size_t)c.n + 1), sizeof(*warm));
    for (int i = 0; i < c.n; i++)
        if (dp || c.role[i] == PLAN_FIXED)
            warm[nwarm++] = c.s[i];
    if ((have_choice = searched_choice(&c, p, &warming,
                                       large ? t0 + LARGE_LOCAL_SHARE *
                                                    opt->time_limit : 0,
                                       &choice)))
        warm[nwarm++] = choice;
    nplain = nwarm;
    if (dp)
        nwarm = add_grouped(warm, nwarm);
    if (large) {
        left.time_limit -= zb_clock_now() - t0;
        if (left.time_limit < 0)
            left.time_limit = 0;
    }
    if (opt->progress) {
        /* Like every report, not in the first second. */
        double t = zb_clock_now() - t0;
        if (t >= 1.0)
            opt->progress(&(struct zb_progress){
                              .phase = ZB_PROGRESS_WARM_START,
                              .elapsed = t, .wall = t },
                          opt->progress_ctx);
        left.progress = report_wall;
        left.progress_ctx = &wp;
    }
    if (opt->export_lp) {
        struct lp_export x = { p, &left, warm, nwarm };
        rc = zb_io_write_with(opt->export_lp, write_lp, &x, err);
    }
    if (rc == 0)
        rc = zb_ilp_solve(p, &left, warm, nwarm, s, err);
    if (have_choice)
        zb_schedule_release(&choice);
    for (int i = nplain; i < nwarm; i++)
        zb_schedule_release(&warm[i]);
    free(warm);
    zbi_plan_release(&c);
    return rc;
}

const struct zb_generator zb_gen_ilp = {
    .name = "ilp",
    .summary = "integer program (GLPK): best order for real times, comm "
               "and limits, with a proven bound",
    .placements = ZB_PLACES_LOOP | ZB_PLACES_V, .min_vpp = 1, .max_vpp = 64,
    .memory_aware = true, .stage_memory = true,
    .solver = true,
    .generate = gen_ilp,
};
