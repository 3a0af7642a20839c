/* test_validate.c - the validator rejects each kind of broken schedule
 * with a message naming rank, op and position, and accepts the good one. */
#include <stdio.h>
#include <string.h>
#include "helpers.h"

struct fixture {
    struct zb_profile prof;
    struct zb_schedule s;
};

/* A legal zb-h1 schedule at p 4, m 8, lowered, to break in each test. */
static void setup(struct fixture *fx, double limit)
{
    struct shape sh = unit_shape(4, 8);
    sh.limit = limit;
    make_profile(&sh, &fx->prof);
    gen("zb-h1", &fx->prof, &fx->s);
}

static void teardown(struct fixture *fx)
{
    zb_schedule_release(&fx->s);
    zb_profile_release(&fx->prof);
}

static int find(const struct zb_op_list *l, enum zb_op_kind k, int stage,
                int mb)
{
    for (int i = 0; i < l->n; i++)
        if (l->ops[i].kind == k && l->ops[i].stage == stage &&
            l->ops[i].mb == mb)
            return i;
    cr_assert_fail("op %s stage %d mb %d not found", zb_op_kind_name(k),
                   stage, mb);
    return -1;
}

static void remove_at(struct zb_op_list *l, int i)
{
    memmove(&l->ops[i], &l->ops[i + 1], (size_t)(l->n - i - 1) *
            sizeof(l->ops[0]));
    l->n--;
}

static void swap(struct zb_op_list *l, int i, int j)
{
    struct zb_op t = l->ops[i];
    l->ops[i] = l->ops[j];
    l->ops[j] = t;
}

static void assert_rejects(const struct zb_schedule *s, int code,
                           const char *expect)
{
    struct zb_error err = { 0 };
    cr_assert_eq(zb_validate_schedule(s, &err), code, "got %d: %s",
                 err.code, err.msg);
    cr_assert(strstr(err.msg, expect), "message '%s' lacks '%s'", err.msg,
              expect);
}

/* Every family of the table (the solver aside: test_solver.c) that
 * accepts the shape, at p 4, m 8 with uneven times and comm, unlimited
 * and at 1F1B's memory: the schedule passes the validator in full. */
Test(validate, accepts_every_generated_schedule)
{
    static const struct shape shapes[] = {
        { 4, 1, 8, ZB_PLACEMENT_LOOP, 1, 1.2, 0.8, 0.05, 1, 0.5, INFINITY },
        { 4, 2, 8, ZB_PLACEMENT_LOOP, 0.5, 0.6, 0.4, 0.05, 1, 0.5,
          INFINITY },
        { 4, 2, 8, ZB_PLACEMENT_V, 0.5, 0.6, 0.4, 0.05, 1, 0.5, INFINITY },
    };
    bool validated[32] = { false };

    for (size_t k = 0; k < 2 * sizeof(shapes) / sizeof(shapes[0]); k++) {
        struct shape sh = shapes[k / 2];
        struct zb_profile p;
        if (k % 2)
            sh.limit = sh.pp * sh.vpp * sh.m_b;     /* 1F1B's peak */
        make_profile(&sh, &p);
        for (int i = 0; i < 32 && zb_generators[i]; i++) {
            const struct zb_generator *g = zb_generators[i];
            struct zb_schedule s;
            struct zb_error err = { 0 };
            if (g->solver || zb_generator_accepts(g, &p, NULL) < 0 ||
                zb_generator_run(g, &p, NULL, &s, &err) < 0)
                continue;
            if (s.predicted.fits_memory) {
                cr_assert_eq(zb_validate_schedule(&s, &err), 0,
                             "shape %zu %s: %s", k, g->name, err.msg);
                validated[i] = true;
            }
            zb_schedule_release(&s);
        }
        zb_profile_release(&p);
    }
    for (int i = 0; zb_generators[i]; i++)
        cr_assert(zb_generators[i]->solver || validated[i],
                  "%s built no schedule within its limit on any shape",
                  zb_generators[i]->name);
}

Test(validate, rejects_a_missing_w)
{
    struct fixture fx;
    setup(&fx, INFINITY);
    remove_at(&fx.s.ranks[2], find(&fx.s.ranks[2], ZB_OP_W, 2, 5));
    assert_rejects(&fx.s, ZB_EILLEGAL, "rank 2: W stage 2 mb 5 is missing");
    teardown(&fx);
}

Test(validate, rejects_a_duplicated_f)
{
    struct fixture fx;
    struct zb_op_list *l;
    setup(&fx, INFINITY);
    l = &fx.s.ranks[1];
    int i = find(l, ZB_OP_F, 1, 3);
    zb_op_list_push(l, &l->ops[i]);
    swap(l, l->n - 1, l->n - 2);     /* keep STEP last */
    assert_rejects(&fx.s, ZB_EILLEGAL, "(F stage 1 mb 3) duplicates op");
    teardown(&fx);
}

Test(validate, rejects_a_w_before_its_b)
{
    struct fixture fx;
    struct zb_op_list *l;
    setup(&fx, INFINITY);
    l = &fx.s.ranks[0];
    int b = find(l, ZB_OP_B, 0, 4), w = find(l, ZB_OP_W, 0, 4);
    swap(l, b, w);
    char expect[64];
    snprintf(expect, sizeof(expect), "rank 0 op %d (W stage 0 mb 4) comes "
             "before its B stage 0 mb 4", b);
    assert_rejects(&fx.s, ZB_EILLEGAL, expect);
    teardown(&fx);
}

Test(validate, rejects_two_swapped_sends)
{
    struct fixture fx;
    struct zb_op_list *l;
    setup(&fx, INFINITY);
    l = &fx.s.ranks[0];
    /* Exchange the microbatches of two sends that both follow their F. */
    int a = find(l, ZB_OP_SEND_F, 0, 5), b = find(l, ZB_OP_SEND_F, 0, 6);
    int fb = find(l, ZB_OP_F, 0, 6);
    cr_assert_lt(fb, b);
    l->ops[a].mb = 6;
    l->ops[b].mb = 5;
    swap(l, a, fb);             /* F6 now precedes both sends */
    char expect[96];
    snprintf(expect, sizeof(expect), "rank 0 op %d (SEND_F stage 0 mb 6 to "
             "1) is matched by rank 1 op", fb);
    assert_rejects(&fx.s, ZB_EILLEGAL, expect);
    teardown(&fx);
}

Test(validate, rejects_a_send_without_its_receive)
{
    struct fixture fx;
    setup(&fx, INFINITY);
    remove_at(&fx.s.ranks[3], find(&fx.s.ranks[3], ZB_OP_RECV_F, 3, 7));
    assert_rejects(&fx.s, ZB_EILLEGAL,
                   "(SEND_F stage 2 mb 7 to 3) has no matching RECV on "
                   "rank 3");
    teardown(&fx);
}

/* Each direction is consistent on its own (the pairing check passes), but
 * rank 0 sends F1 before it receives B0 while rank 1 sends B0 before it
 * receives F1: under NCCL's rule both block in their SEND. */
Test(validate, rejects_a_cyclic_wait)
{
    static const struct {
        int rank;
        enum zb_op_kind kind;
        int stage, mb, peer;
    } ops[] = {
        { 0, ZB_OP_F, 0, 0, -1 },     { 0, ZB_OP_SEND_F, 0, 0, 1 },
        { 0, ZB_OP_F, 0, 1, -1 },     { 0, ZB_OP_SEND_F, 0, 1, 1 },
        { 0, ZB_OP_RECV_B, 0, 0, 1 }, { 0, ZB_OP_BW, 0, 0, -1 },
        { 0, ZB_OP_RECV_B, 0, 1, 1 }, { 0, ZB_OP_BW, 0, 1, -1 },
        { 0, ZB_OP_STEP, -1, -1, -1 },
        { 1, ZB_OP_RECV_F, 1, 0, 0 }, { 1, ZB_OP_F, 1, 0, -1 },
        { 1, ZB_OP_BW, 1, 0, -1 },    { 1, ZB_OP_SEND_B, 1, 0, 0 },
        { 1, ZB_OP_RECV_F, 1, 1, 0 }, { 1, ZB_OP_F, 1, 1, -1 },
        { 1, ZB_OP_BW, 1, 1, -1 },    { 1, ZB_OP_SEND_B, 1, 1, 0 },
        { 1, ZB_OP_STEP, -1, -1, -1 },
    };
    struct shape sh = unit_shape(2, 2);
    struct zb_profile prof;
    struct zb_schedule s;

    make_profile(&sh, &prof);
    zb_schedule_init(&s, "cycle", &prof);
    for (size_t i = 0; i < sizeof(ops) / sizeof(ops[0]); i++) {
        struct zb_op op = { .kind = ops[i].kind, .stage = ops[i].stage,
                            .mb = ops[i].mb, .peer = ops[i].peer };
        zb_op_list_push(&s.ranks[ops[i].rank], &op);
    }
    assert_rejects(&s, ZB_EDEADLOCK,
                   "deadlock: rank 0 op 3 (SEND_F stage 0 mb 1 to 1) waits "
                   "for rank 1, whose op 3 (SEND_B stage 1 mb 0 to 0) waits "
                   "for rank 0");
    /* The same lists with rank 0's RECV_B0 posted before its SEND_F1, as
     * lowering would place it, run. */
    swap(&s.ranks[0], 3, 4);
    swap(&s.ranks[0], 2, 3);
    struct zb_error err = { 0 };
    cr_assert_eq(zb_validate_schedule(&s, &err), 0, "%s", err.msg);
    zb_schedule_release(&s);
    zb_profile_release(&prof);
}

Test(validate, rejects_memory_over_the_limit)
{
    struct fixture fx;
    setup(&fx, 3);      /* zb-h1 needs 4 on rank 0 */
    assert_rejects(&fx.s, ZB_ENOMEM_LIMIT,
                   "rank 0 op 6 (F stage 0 mb 3): memory 4 exceeds the "
                   "limit 3");
    teardown(&fx);
}
