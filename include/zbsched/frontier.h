/* frontier.h - cost against peak activation memory for one model: every
 * family, placement and vpp (1 to 4) that serves it, and `zb` at a sweep
 * of limits, with the Pareto front and the closed-form lower bound at
 * each limit (`zbsched frontier`); and the pick among the same candidates
 * at one limit (`zbsched generate --mem-limit X` without --schedule).
 *
 * The model is the profile's per-rank work: each shape is built from the
 * profile the way a per-rank profile is (zb_profile_reshape(): a rank's
 * F, B, W and activations split evenly over its chunks; the profile's own
 * shape keeps its per-stage times), so all points do the same work and
 * their costs and peaks compare. Ownership: a frontier owns its arrays;
 * zb_frontier_release() frees them. */
#ifndef ZBSCHED_FRONTIER_H
#define ZBSCHED_FRONTIER_H

#include <stdbool.h>
#include <stdint.h>
#include "zbsched/error.h"
#include "zbsched/options.h"
#include "zbsched/profile.h"
#include "zbsched/schedule.h"

/* zb's local search per point, in seconds of effort (options.h), where
 * the caller asks for the default (effort 0): about 30 zb points make a
 * frontier, and zb's own default (0.2 s and up per chain) would take
 * half a minute at p 8, m 32. */
#define ZB_FRONTIER_EFFORT 0.02

/* A placement and a chunk count. */
struct zb_frontier_shape {
    enum zb_placement placement;
    int vpp;
};

struct zb_frontier_point {
    char name[ZB_SCHEDULE_NAME_MAX];    /* the family */
    enum zb_placement placement;
    int vpp;
    double limit;       /* zb: the limit it was built under; else INFINITY */
    double peak;        /* largest peak over ranks */
    double cost, bubble;
    bool front;         /* no other point has both less memory and less
                           cost (or equal memory and less cost) */
};

struct zb_frontier_bound {
    double limit;       /* a per-rank limit of the sweep */
    double bound;       /* least closed-form cost bound over the placements
                           and vpp at that limit: no schedule of the model
                           within it costs less */
};

struct zb_frontier {
    struct zb_frontier_point *pts;      /* by peak, then cost */
    int n;
    struct zb_frontier_bound *bounds;   /* by limit */
    int nb;
    double unit;        /* 1F1B's activation peak: pp * vpp * M_B */
};

/* Build every point (each schedule generated and validated by
 * zb_generator_run(); opt: zb's search effort per point, NULL or effort 0
 * for ZB_FRONTIER_EFFORT; opt->progress: the points done, phase
 * ZB_PROGRESS_SWEEP, options.h).
 * ZB_EUNSUPPORTED when no family serves the model. */
int zb_frontier_build(const struct zb_profile *p,
                      const struct zb_options *opt, struct zb_frontier *out,
                      struct zb_error *err);
void zb_frontier_release(struct zb_frontier *f);

/* The best schedule at p's own limits among the frontier's candidates:
 * zb and every fixed family (not the solver) in p's shape, and with
 * every_shape also in the frontier's other shapes (the same model,
 * zb_profile_reshape()); cost, then makespan, then memory
 * (zb_measures_better()), the earlier of equals: p's shape first, zb
 * before the families in each. The runner-up is the best other candidate
 * in another shape, or with none there, of another family in the pick's
 * shape. Where zb's collection in a shape settles (a candidate meets the
 * lower bounds), the families that do not overlap passes are not
 * built in that shape (they could at best tie zb). opt: zb's effort
 * (NULL: the defaults); with every_shape and zb's default effort the
 * candidates are compared at ZB_FRONTIER_EFFORT, as the frontier has
 * them, and a zb winner then gets zb's default
 * search too (the better of the two is kept; the runner-up's cost is the
 * frontier's). The candidates are compared as timed orders
 * (zb_generator_time()); only the pick is lowered and validated, except
 * with data parallelism, whose collectives re-time each candidate. */
struct zb_frontier_pick {
    struct zb_schedule sched;       /* the pick, validated; the caller
                                       releases it */
    bool has_runner_up;
    char runner_up[ZB_SCHEDULE_NAME_MAX];   /* its family */
    struct zb_frontier_shape runner_shape;
    double runner_cost;
    double p95, runner_p95;         /* zb_frontier_pick_robust(): the
                                       pick's and the runner-up's */
};

/* ZB_ENOMEM_LIMIT (zb's message in p's shape) when no candidate fits,
 * the pipeline's error when the pick does not lower or validate (a bug,
 * zb_generator_finish()); then out holds nothing to release. */
int zb_frontier_pick(const struct zb_profile *p, bool every_shape,
                     const struct zb_options *opt,
                     struct zb_frontier_pick *out, struct zb_error *err);

/* generate --robust: the noise the candidates are compared under, as
 * zb_jitter_run() (profile_import.h) draws it. */
struct zb_frontier_robust {
    double cv;              /* every pass's coefficient of variation */
    int samples;
    uint64_t seed;
};

/* zb_frontier_pick() with the candidates (pick and runner-up alike)
 * ranked by the p95 makespan of their replays under r's noise, the
 * deterministic order breaking ties; the same seed for each, so the same
 * input gives the same pick. A zb winner's longer search is kept only
 * where its p95 is lower. ZB_EINVAL from zb_jitter_run() (a cv outside
 * [0, 10], data parallelism). */
int zb_frontier_pick_robust(const struct zb_profile *p, bool every_shape,
                            const struct zb_options *opt,
                            const struct zb_frontier_robust *r,
                            struct zb_frontier_pick *out,
                            struct zb_error *err);

/* Cost against peak memory as an SVG: every point labelled with its
 * family, placement and vpp, the front joined, the bound as a dashed step
 * line under it; from p (the profile f was built from) the limit as a
 * vertical line where it has one and the time unit of the cost axis.
 * Caller frees. */
char *zb_frontier_svg(const struct zb_frontier *f,
                      const struct zb_profile *p, int width);

#endif
