/* test_dp.c - the data-parallel profile keys, the ring cost of the
 * collectives and the memory each ZeRO stage leaves on a rank (dp.h). */
#include <string.h>
#include "helpers.h"
#include "zbsched/dp.h"
#include "zbsched/json.h"
#include "zbsched/op.h"

/* A profile from flags: "pp=2", "dp=4", ... (name=value pairs). */
static int build(struct zb_profile *p, struct zb_error *err, int n,
                 const char *const *flags)
{
    struct zb_profile_draft d;
    int rc = 0;

    zb_profile_draft_init(&d);
    for (int i = 0; i < n && rc == 0; i++) {
        char name[32];
        const char *eq = strchr(flags[i], '=');
        snprintf(name, sizeof(name), "%.*s", (int)(eq - flags[i]), flags[i]);
        rc = zb_profile_draft_set(&d, name, eq + 1, err);
    }
    if (rc == 0)
        rc = zb_profile_build(&d, p, err);
    zb_profile_draft_release(&d);
    return rc;
}

#define BUILD(p, ...)                                                       \
    do {                                                                    \
        const char *const fl_[] = { __VA_ARGS__ };                          \
        struct zb_error e_ = { 0 };                                         \
        cr_assert_eq(build(p, &e_, sizeof(fl_) / sizeof(fl_[0]), fl_), 0,   \
                     "%s", e_.msg);                                         \
    } while (0)

static void assert_rejects(const char *expect, int n,
                           const char *const *flags)
{
    struct zb_profile p = { 0 };
    struct zb_error err = { 0 };

    cr_assert_lt(build(&p, &err, n, flags), 0, "accepted");
    cr_assert(strstr(err.msg, expect), "'%s' lacks '%s'", err.msg, expect);
}

Test(dp, absent_keys_mean_no_data_parallelism)
{
    struct zb_profile p;

    BUILD(&p, "pp=4");
    cr_assert(!zb_dp_active(&p));
    cr_assert_eq(p.dp.degree, 1);
    cr_assert_null(p.dp.params);
    zb_profile_release(&p);
}

Test(dp, ring_times_follow_the_alpha_beta_formulas)
{
    struct zb_profile p;

    /* d 4: 3 steps of latency + n/(d bw) each; all-reduce twice that. */
    BUILD(&p, "pp=2", "dp=4", "bandwidth=1e9", "latency=0.01");
    assert_near(zb_dp_ring_half(&p.dp, 2e9), 3 * (0.01 + 0.5), "half");
    assert_near(zb_dp_ring_all_reduce(&p.dp, 2e9), 6 * (0.01 + 0.5), "ar");
    p.dp.degree = 1;
    assert_near(zb_dp_ring_all_reduce(&p.dp, 2e9), 0, "one replica");
    zb_profile_release(&p);
}

Test(dp, each_zero_stage_charges_its_collectives)
{
    const double half = 3 * (0.01 + 2e9 / 4e9);  /* 1e9 params x 2 B */
    struct zb_profile p;

    BUILD(&p, "pp=2", "dp=4", "params=1e9", "bandwidth=1e9", "latency=0.01");
    assert_near(zb_dp_op_time(&p, ZB_OP_REDUCE_GRAD, 0), 2 * half, "zero 0");
    for (int z = 1; z <= 2; z++) {  /* reduce-scatter + weights' gather */
        p.dp.zero = z;
        assert_near(zb_dp_op_time(&p, ZB_OP_REDUCE_GRAD, 1), 2 * half,
                    "zero %d", z);
    }
    p.dp.zero = 3;
    assert_near(zb_dp_op_time(&p, ZB_OP_REDUCE_GRAD, 0), half, "zero 3");
    assert_near(zb_dp_op_time(&p, ZB_OP_UNSHARD, 0), half, "unshard");
    assert_near(zb_dp_op_time(&p, ZB_OP_RESHARD, 0), 0, "reshard");
    /* A given time replaces the model. */
    p.dp.reduce_scatter = 7;
    assert_near(zb_dp_op_time(&p, ZB_OP_REDUCE_GRAD, 0), 7, "given");
    zb_profile_release(&p);
}

/* ZeRO paper, 2/2/12 bytes per parameter, d 4, in units of 1e9 bytes. */
Test(dp, memory_per_zero_stage_follows_the_zero_paper)
{
    static const double state[4] = { 2 + 2 + 12, 2 + 2 + 3, 2 + 0 + 3,
                                     0.5 + 0 + 3 };
    static const double buffer[4] = { 0, 0, 2, 2 };
    static const double gathered[4] = { 0, 0, 0, 1.5 };
    struct zb_profile p;
    struct zb_profile_draft d;
    struct zb_error err = { 0 };

    zb_profile_draft_init(&d);
    d.dp.unit_bytes = 1e9;
    cr_assert_eq(zb_profile_draft_set(&d, "pp", "2", &err), 0);
    cr_assert_eq(zb_profile_draft_set(&d, "dp", "4", &err), 0);
    cr_assert_eq(zb_profile_draft_set(&d, "params", "1e9", &err), 0);
    cr_assert_eq(zb_profile_build(&d, &p, &err), 0, "%s", err.msg);
    zb_profile_draft_release(&d);
    for (int z = 0; z <= 3; z++) {
        p.dp.zero = z;
        assert_near(zb_dp_state_memory(&p, 0), state[z], "state, zero %d", z);
        assert_near(zb_dp_grad_buffer(&p, 1), buffer[z], "buffer, zero %d",
                    z);
        assert_near(zb_dp_grad_shard(&p, 1), buffer[z] / 4, "shard, zero %d",
                    z);
        assert_near(zb_dp_gathered(&p, 0), gathered[z], "gathered, zero %d",
                    z);
    }
    zb_profile_release(&p);
}

Test(dp, rejects_bad_values_naming_the_key)
{
    assert_rejects("zero must be an integer from 0 to 3, got 4", 2,
                   (const char *const[]){ "dp=2", "zero=4" });
    assert_rejects("zero 2 needs dp >= 2, got dp 1", 1,
                   (const char *const[]){ "zero=2" });
    assert_rejects("dp must be an integer", 1,
                   (const char *const[]){ "dp=1.5" });
    assert_rejects("data_parallel.bandwidth must be a finite number > 0", 2,
                   (const char *const[]){ "dp=2", "bandwidth=0" });
    assert_rejects("--latency: 'x' is not a number", 1,
                   (const char *const[]){ "latency=x" });
}

Test(dp, json_keys_parse_and_a_params_list_needs_one_per_stage)
{
    struct zb_profile_draft d;
    struct zb_profile p = { 0 };
    struct zb_error err = { 0 };

    zb_profile_draft_init(&d);
    cr_assert_eq(zb_json_parse_profile(
                     "{\"pp\": 2, \"dp\": 8, \"zero\": 3, \"data_parallel\": "
                     "{\"params\": [1, 2], \"bytes\": {\"optimizer\": 8}, "
                     "\"prefetch\": 2, \"all_gather\": 5}}", &d, &err), 0,
                 "%s", err.msg);
    cr_assert_eq(zb_profile_build(&d, &p, &err), 0, "%s", err.msg);
    cr_assert_eq(p.dp.degree, 8);
    cr_assert_eq(p.dp.zero, 3);
    cr_assert_eq(p.dp.prefetch, 2);
    assert_near(p.dp.params[1], 2, "params[1]");
    assert_near(p.dp.bytes_optim, 8, "optimizer bytes");
    assert_near(zb_dp_op_time(&p, ZB_OP_UNSHARD, 0), 5, "given gather");
    zb_profile_release(&p);
    zb_profile_draft_release(&d);

    zb_profile_draft_init(&d);
    cr_assert_eq(zb_json_parse_profile(
                     "{\"pp\": 2, \"dp\": 2, \"data_parallel\": "
                     "{\"params\": [1, 2, 3]}}", &d, &err), 0);
    cr_assert_lt(zb_profile_build(&d, &p, &err), 0);
    cr_assert(strstr(err.msg, "data_parallel.params has 3 entries, expected "
                              "pp*vpp = 2"), "%s", err.msg);
    zb_profile_draft_release(&d);
}
