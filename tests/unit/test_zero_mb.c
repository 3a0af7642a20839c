/* test_zero_mb.c - ZeRO-2/3 reducing per microbatch (reduce microbatch,
 * docs/zero.md): placement, the W that waits for the gradient buffer,
 * the memory walk on hand-computed cases, the validator, the profile's
 * error below ZeRO-2, and the JSON and CSV round trips. */
#include <string.h>
#include "helpers.h"
#include "zbsched/dp.h"
#include "zbsched/json.h"
#include "zbsched/torch.h"
#include "zbsched/zero.h"

/* Unit times (M_B = M_W = 1, no comm), 1e9 parameters per stage, d 4,
 * 1 GB/time unit, latency 0.01, 1e9-byte memory units: a reduce-scatter
 * of a stage's gradient takes 3 (0.01 + 0.5) = 1.53, and so does the
 * all-gather of its weights; the gradient buffer is 2 units, its shard
 * 0.5, the rest of ZeRO-2's model state 2 + 12/4 = 5. */
static void mb_profile(struct zb_profile *p, int pp, int vpp, int mb,
                       int zero)
{
    struct shape sh = unit_shape(pp, mb);

    sh.vpp = vpp;
    sh.placement = vpp == 2 ? ZB_PLACEMENT_V : ZB_PLACEMENT_LOOP;
    make_profile(&sh, p);
    set_test_dp(p, zero);
    p->dp.reduce = ZB_DP_REDUCE_MICROBATCH;
}

static bool is_w(const struct zb_op *op)
{
    return op->kind == ZB_OP_W || op->kind == ZB_OP_BW;
}

/* Index of op (kind, stage, mb) in l, or -1. */
static int find_op(const struct zb_op_list *l, enum zb_op_kind k, int stage,
                   int mb)
{
    for (int i = 0; i < l->n; i++)
        if (l->ops[i].kind == k && l->ops[i].stage == stage &&
            l->ops[i].mb == mb)
            return i;
    return -1;
}

static void check_placement(const char *family, int vpp)
{
    struct zb_profile p;
    struct zb_schedule s;

    mb_profile(&p, 4, vpp, 8, 2);
    gen(family, &p, &s);
    for (int r = 0; r < p.pp; r++) {
        const struct zb_op_list *l = &s.ranks[r];
        int reduces = 0;
        for (int i = 0; i < l->n; i++) {
            const struct zb_op *op = &l->ops[i];
            if (op->kind == ZB_OP_REDUCE_GRAD)
                reduces++;
            if (!is_w(op))
                continue;
            cr_assert_lt(i + 1, l->n);
            cr_assert_eq(l->ops[i + 1].kind, ZB_OP_REDUCE_GRAD,
                         "%s rank %d op %d: no REDUCE_GRAD after the W",
                         family, r, i);
            cr_assert_eq(l->ops[i + 1].stage, op->stage);
            cr_assert_eq(l->ops[i + 1].mb, op->mb);
        }
        cr_assert_eq(reduces, vpp * p.microbatches, "%s rank %d: %d",
                     family, r, reduces);
    }
    zb_schedule_release(&s);
    zb_profile_release(&p);
}

Test(zero_mb, places_one_reduce_after_every_w)
{
    check_placement("1f1b", 1);     /* BW */
    check_placement("zb-h1", 1);    /* W */
    check_placement("zb-v", 2);     /* two stages a rank */
}

Test(zero_mb, a_w_waits_for_the_previous_reduce)
{
    struct zb_profile p;
    struct zb_schedule s;
    const struct zb_op_list *l0, *l1;

    /* 1F1B, p 2, m 2: rank 1 runs F0 BW0 F1 BW1, rank 0 F0 F1 BW0 BW1.
     * Rank 1: BW0 [2, 4], its reduce-scatter [4, 5.53]; F1 [4, 5]; BW1
     * waits for the buffer: [5.53, 7.53], then the last reduce, which
     * carries ZeRO-2's all-gather: [7.53, 10.59]. Rank 0: BW0 [4, 6],
     * reduce [6, 7.53]; BW1 needs rank 1's B of mb 1 (7.53) and the
     * buffer (7.53): [7.53, 9.53]; last reduce [9.53, 12.59]. */
    mb_profile(&p, 2, 1, 2, 2);
    gen("1f1b", &p, &s);
    l0 = &s.ranks[0];
    l1 = &s.ranks[1];
    assert_near(l1->ops[find_op(l1, ZB_OP_BW, 1, 1)].start, 5.53, "r1 BW1");
    assert_near(l1->ops[find_op(l1, ZB_OP_REDUCE_GRAD, 1, 0)].end, 5.53,
                "r1 reduce 0");
    assert_near(l1->ops[find_op(l1, ZB_OP_REDUCE_GRAD, 1, 1)].end, 10.59,
                "r1 reduce 1");
    assert_near(l0->ops[find_op(l0, ZB_OP_BW, 0, 1)].start, 7.53, "r0 BW1");
    assert_near(s.predicted.step_time, 12.59, "step %.17g",
                s.predicted.step_time);
    /* ZeRO-3: no all-gather on the last reduce; the step starts with the
     * gather of rank 0's weights (1.53). */
    zb_schedule_release(&s);
    p.dp.zero = 3;
    gen("1f1b", &p, &s);
    l0 = &s.ranks[0];
    const struct zb_op *last = &l0->ops[find_op(l0, ZB_OP_REDUCE_GRAD, 0, 1)];
    assert_near(last->end - last->start, 1.53, "zero 3 last reduce");
    zb_schedule_release(&s);
    zb_profile_release(&p);
}

Test(zero_mb, memory_holds_a_buffer_until_its_reduce_ends)
{
    struct zb_profile p;
    struct zb_schedule s;

    /* The case above. Rank 0: F0 6, F1 7, BW0 + shard 0.5 + buffer 2 - 1
     * = 8.5; BW1 starts when the reduce that frees the buffer ends: 6.5,
     * then + 2 - 1 = 7.5. Peak 8.5, against 8 reducing per step (the
     * buffer from BW0 on, no shard beside it). */
    mb_profile(&p, 2, 1, 2, 2);
    gen("1f1b", &p, &s);
    assert_near(s.predicted.ranks[0].total_memory, 8.5, "r0 %g",
                s.predicted.ranks[0].total_memory);
    /* Rank 1: F0 6, BW0 7.5, F1 starts at 4, before its reduce ends
     * (5.53): the buffer still counts, 8.5. */
    assert_near(s.predicted.ranks[1].total_memory, 8.5, "r1 %g",
                s.predicted.ranks[1].total_memory);
    assert_near(zb_zero_state_peak(&s, 1), 5 + 0.5 + 2, "r1 state");
    zb_schedule_release(&s);
    /* A free network: the reduce ends as BW0 does, when F1 starts, so
     * F1 runs without the buffer: 5.5 + 1 = 6.5, BW1 7.5. Reducing per
     * step, F1 runs beside the buffer: 8. */
    p.dp.bandwidth = INFINITY;
    p.dp.latency = 0;
    gen("1f1b", &p, &s);
    assert_near(s.predicted.ranks[1].total_memory, 7.5, "r1 fast %g",
                s.predicted.ranks[1].total_memory);
    zb_schedule_release(&s);
    p.dp.reduce = ZB_DP_REDUCE_STEP;
    gen("1f1b", &p, &s);
    assert_near(s.predicted.ranks[1].total_memory, 8, "r1 step %g",
                s.predicted.ranks[1].total_memory);
    zb_schedule_release(&s);
    zb_profile_release(&p);
}

/* ---- The profile ------------------------------------------------------ */

Test(zero_mb, reduce_microbatch_needs_zero_2)
{
    struct zb_dp_draft d;
    struct zb_dp dp;
    struct zb_error err = { 0 };

    zb_dp_draft_init(&d);
    d.degree = 4;
    d.zero = 1;
    cr_assert_eq(zb_dp_draft_set(&d, "reduce", "microbatch", &err), 0);
    cr_assert_eq(zb_dp_build(&d, 4, &dp, &err), ZB_EINVAL);
    cr_assert_str_eq(err.msg, "reduce microbatch needs zero >= 2 (sharded "
                              "gradients), got zero 1");
    d.zero = 2;
    cr_assert_eq(zb_dp_build(&d, 4, &dp, &err), 0, "%s", err.msg);
    cr_assert_eq(dp.reduce, ZB_DP_REDUCE_MICROBATCH);
    zb_dp_release(&dp);
    cr_assert_eq(zb_dp_draft_set(&d, "reduce", "layer", &err), ZB_EINVAL);
    zb_dp_draft_release(&d);
}

/* ---- The validator ---------------------------------------------------- */

static void assert_rejects(const struct zb_schedule *s, const char *expect)
{
    struct zb_error err = { 0 };

    cr_assert_eq(zb_validate_schedule(s, &err), ZB_EILLEGAL, "got %d: %s",
                 err.code, err.msg);
    cr_assert(strstr(err.msg, expect), "message '%s' lacks '%s'", err.msg,
              expect);
}

/* Remove op i of l. */
static void drop(struct zb_op_list *l, int i)
{
    memmove(&l->ops[i], &l->ops[i + 1],
            (size_t)(l->n - i - 1) * sizeof(*l->ops));
    l->n--;
}

static void setup(struct zb_profile *p, struct zb_schedule *s)
{
    mb_profile(p, 4, 1, 8, 2);
    gen("zb-h1", p, s);
}

/* Each case sets up its own profile and schedule: release both. */
static void teardown(struct zb_profile *p, struct zb_schedule *s)
{
    zb_schedule_release(s);
    zb_profile_release(p);
}

Test(validate_dp_mb, accepts_the_placement)
{
    struct zb_profile p;
    struct zb_schedule s;
    struct zb_error err = { 0 };

    setup(&p, &s);
    cr_assert_eq(zb_validate_schedule(&s, &err), 0, "%s", err.msg);
    teardown(&p, &s);
}

Test(validate_dp_mb, rejects_a_missing_reduce)
{
    struct zb_profile p;
    struct zb_schedule s;
    struct zb_op_list *l;

    setup(&p, &s);
    l = &s.ranks[2];
    drop(l, find_op(l, ZB_OP_REDUCE_GRAD, 2, 3));
    assert_rejects(&s, "(W stage 2 mb 4) comes before the REDUCE_GRAD of op");
    teardown(&p, &s);
    /* The last W's: nothing comes after it. */
    setup(&p, &s);
    l = &s.ranks[2];
    drop(l, find_op(l, ZB_OP_REDUCE_GRAD, 2, 7));
    assert_rejects(&s, "(W stage 2 mb 7) has no REDUCE_GRAD after it");
    teardown(&p, &s);
}

Test(validate_dp_mb, rejects_a_misplaced_reduce)
{
    struct zb_profile p;
    struct zb_schedule s;
    struct zb_op_list *l;

    /* Before its W. */
    setup(&p, &s);
    l = &s.ranks[1];
    int w = find_op(l, ZB_OP_W, 1, 5), rg = w + 1;
    struct zb_op tmp = l->ops[w];
    l->ops[w] = l->ops[rg];
    l->ops[rg] = tmp;
    assert_rejects(&s, "(REDUCE_GRAD stage 1 mb 5) does not follow its "
                       "microbatch's W");
    teardown(&p, &s);
    /* Naming another microbatch. */
    setup(&p, &s);
    l = &s.ranks[1];
    l->ops[find_op(l, ZB_OP_REDUCE_GRAD, 1, 5)].mb = 6;
    assert_rejects(&s, "(REDUCE_GRAD stage 1 mb 6) does not follow its "
                       "microbatch's W");
    teardown(&p, &s);
    /* Naming none. */
    setup(&p, &s);
    l = &s.ranks[1];
    l->ops[find_op(l, ZB_OP_REDUCE_GRAD, 1, 5)].mb = -1;
    assert_rejects(&s, "names no microbatch, but reduce is microbatch");
    teardown(&p, &s);
    /* The same list under a profile that reduces per step. */
    setup(&p, &s);
    s.profile.dp.reduce = ZB_DP_REDUCE_STEP;
    assert_rejects(&s, "(REDUCE_GRAD stage 0 mb 0): only a REDUCE_GRAD "
                       "under reduce microbatch names a microbatch");
    teardown(&p, &s);
    /* Another collective naming one. */
    setup(&p, &s);
    s.profile.dp.zero = 3;
    l = &s.ranks[0];
    l->ops[find_op(l, ZB_OP_REDUCE_GRAD, 0, 0)].kind = ZB_OP_RESHARD;
    assert_rejects(&s, "(RESHARD stage 0 mb 0): only a REDUCE_GRAD under "
                       "reduce microbatch names a microbatch");
    teardown(&p, &s);
}

/* ---- Round trips ------------------------------------------------------ */

Test(zero_mb, schedule_json_round_trips)
{
    struct zb_profile p;
    struct zb_schedule s, back;
    struct zb_error err = { 0 };
    char *text;

    setup(&p, &s);
    text = zb_json_format_schedule(&s);
    cr_assert(strstr(text, "\"reduce\": \"microbatch\""));
    cr_assert(strstr(text, "{\"op\": \"REDUCE_GRAD\", \"stage\": 0, "
                           "\"mb\": 0, "));
    cr_assert_eq(zb_json_parse_schedule(text, &back, &err), 0, "%s",
                 err.msg);
    cr_assert_eq(back.profile.dp.reduce, ZB_DP_REDUCE_MICROBATCH);
    cr_assert_eq(zb_validate_schedule(&back, &err), 0, "%s", err.msg);
    assert_same_ops(&s, &back);
    free(text);
    zb_schedule_release(&back);
    zb_schedule_release(&s);
    zb_profile_release(&p);
}

Test(zero_mb, torch_csv_round_trips)
{
    struct zb_profile p;
    struct zb_schedule s, back;
    struct zb_torch_csv c;
    struct zb_error err = { 0 };
    char *text;

    setup(&p, &s);
    text = zb_torch_csv_format(&s, ZB_TORCH_COMPUTE_COMMS);
    cr_assert(strstr(text, ",0W7,0REDUCE_GRAD7"), "%s", text);
    cr_assert_eq(zb_torch_csv_parse(text, &c, &err), 0, "%s", err.msg);
    cr_assert(c.reduce_per_mb && !c.reduce_per_step);
    cr_assert_eq(zb_torch_csv_schedule(&c, &p, "zb-h1", &back, &err), 0,
                 "%s", err.msg);
    assert_same_ops(&s, &back);
    zb_schedule_release(&back);
    /* A profile that reduces per step does not take it. */
    p.dp.reduce = ZB_DP_REDUCE_STEP;
    cr_assert_eq(zb_torch_csv_schedule(&c, &p, "zb-h1", &back, &err),
                 ZB_EINVAL);
    cr_assert(strstr(err.msg, "reduces gradients per microbatch"));
    zb_torch_csv_release(&c);
    free(text);
    zb_schedule_release(&s);
    zb_profile_release(&p);
}
