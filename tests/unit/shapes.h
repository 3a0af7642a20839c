/* shapes.h - building profiles for tests and benchmark drivers: a shape
 * (every stage alike) or a random profile. No test framework here, so
 * tools/ drivers include it too. */
#ifndef ZBSCHED_TEST_SHAPES_H
#define ZBSCHED_TEST_SHAPES_H

#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include "zbsched/profile.h"

struct shape {
    int pp, vpp, mb;
    enum zb_placement placement;
    double f, b, w, comm;
    double m_b, m_w;
    double limit;           /* every rank; INFINITY = unlimited */
};

/* Unit times, comm 0, M_B = M_W = 1, unlimited. */
static inline struct shape unit_shape(int pp, int mb)
{
    return (struct shape){ pp, 1, mb, ZB_PLACEMENT_LOOP, 1, 1, 1, 0, 1, 1,
                           INFINITY };
}

static inline void make_profile(const struct shape *sh, struct zb_profile *p)
{
    int n = sh->pp * sh->vpp;
    *p = (struct zb_profile){ .pp = sh->pp, .vpp = sh->vpp,
                              .microbatches = sh->mb,
                              .placement = sh->placement, .comm = sh->comm,
                              .m_b = sh->m_b, .m_w = sh->m_w };
    p->stage = calloc((size_t)n, sizeof(*p->stage));
    p->mem_limit = calloc((size_t)sh->pp, sizeof(double));
    for (int s = 0; s < n; s++)
        p->stage[s] = (struct zb_stage_times){ sh->f, sh->b, sh->w };
    for (int r = 0; r < sh->pp; r++)
        p->mem_limit[r] = sh->limit;
}

/* V placement, two chunks per rank, every chunk alike (F, B, W each),
 * M_B 1, the limit on every rank. */
static inline void v_chunks_profile(int p, int m, double f, double b,
                                    double w, double comm, double m_w,
                                    double limit, struct zb_profile *out)
{
    struct shape sh = { p, 2, m, ZB_PLACEMENT_V, f, b, w, comm, 1, m_w,
                        limit };
    make_profile(&sh, out);
}

/* Data parallelism for tests: d 4 replicas of every stage, ZeRO `zero`,
 * 1e9 parameters per stage (2-byte weights and gradients, 12-byte
 * optimizer state), 1 GB per time unit and 0.01 per ring step, memory
 * in GB: a ZeRO-0 REDUCE_GRAD takes 3.06. Needs p's pp and vpp set. */
static inline void set_test_dp(struct zb_profile *p, int zero)
{
    const int n = p->pp * p->vpp;

    p->dp = (struct zb_dp){ .degree = 4, .zero = zero, .bandwidth = 1e9,
                            .latency = 0.01, .bytes_weight = 2,
                            .bytes_grad = 2, .bytes_optim = 12,
                            .unit_bytes = 1e9, .prefetch = 1,
                            .all_reduce = NAN, .reduce_scatter = NAN,
                            .all_gather = NAN };
    p->dp.params = malloc((size_t)n * sizeof(double));
    for (int s = 0; s < n; s++)
        p->dp.params[s] = 1e9;
}

/* Ranges of random_profile(): pp in [pp_min, pp_min + pp_span), vpp in
 * [1, vpp_span], m in [1, mb_per_pp * pp + mb_extra], a common limit up to
 * limit_scale * pp * vpp (or none), and with rank_limits some ranks get
 * their own. */
struct random_ranges {
    int pp_min, pp_span, vpp_span, mb_per_pp, mb_extra;
    double limit_scale;
    bool rank_limits;
};

static inline double uniform(unsigned *seed, double lo, double hi)
{
    return lo + (hi - lo) * (rand_r(seed) / (double)RAND_MAX);
}

/* A random profile: per-stage times, comm, M_W and limits drawn too. */
static inline void random_profile(unsigned *seed,
                                  const struct random_ranges *rr,
                                  struct zb_profile *p)
{
    struct shape sh;

    sh.pp = rr->pp_min + rand_r(seed) % rr->pp_span;
    sh.vpp = 1 + rand_r(seed) % rr->vpp_span;
    sh.placement = sh.vpp == 2 && rand_r(seed) % 2 ? ZB_PLACEMENT_V
                                                    : ZB_PLACEMENT_LOOP;
    sh.mb = 1 + rand_r(seed) % (rr->mb_per_pp * sh.pp + rr->mb_extra);
    sh.f = sh.b = sh.w = 1;
    sh.comm = rand_r(seed) % 3 ? uniform(seed, 0, 0.3) : 0;
    sh.m_b = 1;
    sh.m_w = rand_r(seed) % 2 ? 1 : uniform(seed, 0, 1);
    sh.limit = rand_r(seed) % 4
        ? uniform(seed, sh.vpp, rr->limit_scale * sh.pp * sh.vpp)
        : INFINITY;
    make_profile(&sh, p);
    for (int s = 0; s < sh.pp * sh.vpp; s++)
        p->stage[s] = (struct zb_stage_times){ uniform(seed, 0.5, 2),
                                               uniform(seed, 0.5, 2.5),
                                               uniform(seed, 0, 1.5) };
    for (int r = 0; rr->rank_limits && r < sh.pp; r++)
        if (rand_r(seed) % 5 == 0)
            p->mem_limit[r] = uniform(seed, sh.vpp, 4.0 * sh.pp);
}

#endif
