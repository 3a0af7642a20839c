/* v_half.c - V-Half (Qi et al., "Pipeline parallelism with controllable
 * memory", NeurIPS 2024): V placement, two chunks per rank, B/W split,
 * built from a building block whose microbatch lifespan on rank 0 is
 * about 6p slots of a 6-slot period, so a rank holds about half of 1F1B's
 * activations (paper: ceil((p+2)/2) stage activations against p) at
 * about half of 1F1B's bubble (F = B = W; measured: about 7/12, 3 slots
 * less than the block alone after the compaction). A fixed shape: it
 * ignores the limit and reports whether it fits. Measured values:
 * docs/controllable-memory.md. */
#include "build/build.h"
#include "families/families.h"
#include "plan/plan.h"
#include "zbsched/generator.h"
#include "zbsched/sim.h"

/* Rank i: F0 at 2i, F1 at 3p-2-i, B1 at 3p+d-1+2i, B0 at 6p+d-2-i; the
 * shift d = 3 when p is even keeps the four passes in distinct slots
 * mod 6. */
static void offsets(int p, int i, int off[4])
{
    int d = p % 2 == 0 ? 3 : 0;

    off[0] = 2 * i;
    off[1] = 3 * p - 2 - i;
    off[2] = 3 * p + d - 1 + 2 * i;
    off[3] = 6 * p + d - 2 - i;
}

/* One of the two orders gen_v_half() weighs, built and timed. */
struct v_half_build {
    const struct zb_profile *p;
    bool compact;
    struct zb_schedule *s;
    struct zb_error err;
    int rc;
};

static void *build(void *arg)
{
    struct v_half_build *b = arg;

    b->rc = zbi_vblock_order(b->p, offsets, b->compact, b->s, &b->err);
    if (b->rc == 0)
        b->rc = zb_sim_run(b->s, &b->err);
    return NULL;
}

/* The block repeated, then compacted (the paper's last step); the
 * compacted order is kept where the simulator times it as a gain with
 * the real durations and it holds no more memory on any rank. The plain
 * order is built on a second thread (at p 64, m 1024 each takes about
 * 0.12 s). */
static int gen_v_half(const struct zb_profile *p,
                      const struct zb_options *opt, struct zb_schedule *s,
                      struct zb_error *err)
{
    struct zb_schedule plain;
    struct v_half_build pb = { .p = p, .compact = false, .s = &plain };
    struct v_half_build cb = { .p = p, .compact = true, .s = s };
    struct side_thread helper;
    int rc;

    (void)opt;
    zb_schedule_init(&plain, s->name, p);
    zbi_side_thread_start(&helper, build, &pb);
    build(&cb);
    zbi_side_thread_join(&helper);
    rc = pb.rc < 0 ? pb.rc : cb.rc;
    if (rc < 0 && err)
        *err = pb.rc < 0 ? pb.err : cb.err;
    else if (rc == 0 && !zbi_pick_better_leaner(s, &plain))
        zb_schedule_copy_order(s, &plain);
    zb_schedule_release(&plain);
    return rc;
}

const struct zb_generator zb_gen_v_half = {
    .name = "v-half",
    .summary = "V placement, 2 chunks, B/W split; about half of 1F1B's "
               "activation memory",
    .placements = ZB_PLACES_V, .min_vpp = 2, .max_vpp = 2,
    .shape_placement = ZB_PLACEMENT_V, .shape_vpp = 2, .peak_cap = 1,
    .generate = gen_v_half,
};
