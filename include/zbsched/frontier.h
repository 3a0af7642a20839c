/* frontier.h - cost against peak activation memory for one model: every
 * family, placement and vpp (1 to 4) that serves it, and `zb` at a sweep
 * of limits, with the Pareto front and the closed-form lower bound at
 * each limit (`zbsched frontier`).
 *
 * The model is the profile's per-rank work: every stage's F, B and W
 * averaged, times the profile's vpp, make one rank's times; a rank's
 * activations per microbatch are vpp * M_B. A placement with v chunks
 * per rank splits both by v, so all points do the same work and their
 * costs and peaks compare. Ownership: a frontier owns its arrays;
 * zb_frontier_release() frees them. */
#ifndef ZBSCHED_FRONTIER_H
#define ZBSCHED_FRONTIER_H

#include <stdbool.h>
#include "zbsched/error.h"
#include "zbsched/options.h"
#include "zbsched/profile.h"
#include "zbsched/schedule.h"

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
 * zb_generator_run(); opt: zb's search effort, NULL for the defaults).
 * ZB_EUNSUPPORTED when no family serves the model. */
int zb_frontier_build(const struct zb_profile *p,
                      const struct zb_options *opt, struct zb_frontier *out,
                      struct zb_error *err);
void zb_frontier_release(struct zb_frontier *f);

/* Cost against peak memory as an SVG: every point, the front joined, the
 * bound as a dashed step line under it. Caller frees. */
char *zb_frontier_svg(const struct zb_frontier *f, int width);

#endif
