/* quality_cases.h - the profiles on which the unit tests check that a
 * building block is never worse than its plainer candidates, and on
 * which tools/check_quality.c holds how much better it is: one copy of
 * each draw, so the gate and the tests judge the same instances. No test
 * framework here. */
#ifndef ZBSCHED_TEST_QUALITY_CASES_H
#define ZBSCHED_TEST_QUALITY_CASES_H

#include "shapes.h"

/* V placement, two chunks a rank, unit times, the limit on every rank. */
static inline struct shape quality_v_shape(int pp, int mb, double limit)
{
    struct shape sh = unit_shape(pp, mb);

    sh.vpp = 2;
    sh.placement = ZB_PLACEMENT_V;
    sh.limit = limit;
    return sh;
}

/* Random V profiles with uneven stage times: p in [8, 8 + pp_span), m in
 * [2p, 2p + mb_extra_per_p * p], the limit `limit` times p chunk pairs'
 * worth, comm and M_W uniform in their ranges, each stage's F, B, W
 * uniform in theirs. */
struct uneven {
    unsigned seed;
    int pp_span, mb_extra_per_p;
    double limit;
    double comm[2], m_w[2], f[2], b[2], w[2];
};

/* The next profile drawn from u (advancing u->seed). */
static inline void uneven_profile(struct uneven *u, struct zb_profile *p)
{
    int pp = 8 + rand_r(&u->seed) % u->pp_span;
    struct shape sh = quality_v_shape(pp, 2 * pp + rand_r(&u->seed) %
                                              (u->mb_extra_per_p * pp + 1),
                                      u->limit * pp);

    sh.comm = uniform(&u->seed, u->comm[0], u->comm[1]);
    sh.m_w = uniform(&u->seed, u->m_w[0], u->m_w[1]);
    make_profile(&sh, p);
    for (int k = 0; k < 2 * pp; k++)
        p->stage[k] = (struct zb_stage_times){
            uniform(&u->seed, u->f[0], u->f[1]),
            uniform(&u->seed, u->b[0], u->b[1]),
            uniform(&u->seed, u->w[0], u->w[1]) };
}

/* Eight profiles of each, for the ZB-V construction. At 1.5x 1F1B's
 * memory with a small W (the quality grid's worst V instances are such)
 * the leg rule decides; at 1F1B's memory the rounds do. */
#define UNEVEN_CASES 8
static const struct uneven uneven_at_one_and_a_half = {
    .seed = 1117, .pp_span = 7, .mb_extra_per_p = 1, .limit = 3.0,
    .comm = { 0.02, 0.1 }, .m_w = { 0.3, 0.5 }, .f = { 0.45, 0.55 },
    .b = { 0.55, 0.7 }, .w = { 0.18, 0.3 } };
static const struct uneven uneven_at_onef1b = {
    .seed = 3041, .pp_span = 13, .mb_extra_per_p = 2, .limit = 2.0,
    .comm = { 0.02, 0.12 }, .m_w = { 0.3, 0.6 }, .f = { 0.4, 0.6 },
    .b = { 0.45, 0.75 }, .w = { 0.15, 0.5 } };

/* The k-th (0, 1) of two long V profiles, p 32, m 1040, uneven times,
 * at 1F1B's memory (k 0) and 1.5x (k 1), drawn from *seed (4848 for the
 * pair): long enough that the construction chooses its variants on a
 * shorter copy. */
static inline void long_v_profile(unsigned *seed, int k, struct zb_profile *p)
{
    struct shape sh = quality_v_shape(32, 1040, (k ? 3.0 : 2.0) * 32);

    sh.comm = uniform(seed, 0.02, 0.1);
    sh.m_w = uniform(seed, 0.3, 0.6);
    make_profile(&sh, p);
    for (int s = 0; s < 2 * p->pp; s++)
        p->stage[s] = (struct zb_stage_times){
            uniform(seed, 0.45, 0.55), uniform(seed, 0.45, 0.7),
            uniform(seed, 0.15, 0.5) };
}

/* The next of ten loop profiles (seed 2027 for the ten), one chunk, p 6
 * to 16, m 2p to 4p, uneven times, 1.5x 1F1B's memory: the quality
 * grid's loop cells, for the loop construction's per-stage tuning. */
#define LOOP_UNEVEN_CASES 10
static inline void loop_uneven_profile(unsigned *seed, struct zb_profile *p)
{
    struct shape sh = unit_shape(6 + rand_r(seed) % 11, 1);

    sh.mb = 2 * sh.pp + rand_r(seed) % (2 * sh.pp + 1);
    sh.comm = uniform(seed, 0, 0.12);
    sh.m_w = uniform(seed, 0.3, 0.6);
    sh.limit = 1.5 * sh.pp;
    make_profile(&sh, p);
    for (int k = 0; k < sh.pp; k++)
        p->stage[k] = (struct zb_stage_times){
            uniform(seed, 0.8, 1.2), uniform(seed, 0.85, 1.35),
            uniform(seed, 0.35, 1.0) };
}

/* Interleaved, p 12, two chunks, m 16 (fewer than p vpp), 1.5 times
 * 1F1B's memory: every forward fits before the first backward returns,
 * where the list scheduler's forwards-first policies should win. */
static const struct shape forwards_first_shape = {
    12, 2, 16, ZB_PLACEMENT_LOOP, 0.48, 0.57, 0.41, 0.115, 1, 0.34, 36 };

/* Interleaved, p 8, two chunks, m 26, twice 1F1B's memory: the plain
 * list scheduler crowds the ranks with chunk-0 forwards, the in-flight
 * caps keep room for chunk 1. */
static const struct shape capped_list_shape = {
    8, 2, 26, ZB_PLACEMENT_LOOP, 0.5, 0.6, 0.3, 0.05, 1, 0.5, 32 };

#endif
