/* test_zero_units.c - FSDP units inside a stage (data_parallel.units,
 * docs/zero.md "Units"): placement per pass, the memory that gathering
 * per pass saves against ZeRO-1, a pass that waits for a late gather,
 * the validator, the profile check and the JSON round trip. */
#include <math.h>
#include <string.h>
#include "helpers.h"
#include "zbsched/dp.h"
#include "zbsched/json.h"
#include "zbsched/sim.h"
#include "zbsched/zero.h"

/* set_test_dp() (d 4, 1e9 parameters a stage, 1 GB/time unit, memory
 * in GB) with k units and the given ZeRO stage and reduce mode. */
static void units_profile(struct zb_profile *p, int zero,
                          enum zb_dp_reduce reduce, int k)
{
    struct shape sh = unit_shape(4, 8);

    make_profile(&sh, p);
    set_test_dp(p, zero);
    p->dp.reduce = reduce;
    p->dp.units = k;
}

static double max_total(const struct zb_schedule *s)
{
    double m = 0;

    for (int r = 0; r < s->profile.pp; r++)
        m = fmax(m, s->predicted.ranks[r].total_memory);
    return m;
}

static double family_memory(const char *family, int zero,
                            enum zb_dp_reduce reduce, int k)
{
    struct zb_profile p;
    struct zb_schedule s;
    double m;

    units_profile(&p, zero, reduce, k);
    gen(family, &p, &s);
    m = max_total(&s);
    zb_schedule_release(&s);
    zb_profile_release(&p);
    return m;
}

Test(zero_units, every_pass_but_w_is_wrapped_in_its_units)
{
    struct zb_profile p;
    struct zb_schedule s;

    units_profile(&p, 3, ZB_DP_REDUCE_STEP, 2);
    gen("zb-h1", &p, &s);
    for (int r = 0; r < p.pp; r++) {
        const struct zb_op_list *l = &s.ranks[r];
        for (int i = 0; i < l->n; i++) {
            const struct zb_op *op = &l->ops[i];
            if (!zb_op_is_compute(op->kind) || op->kind == ZB_OP_W)
                continue;
            /* F gathers units 0, 1; B in reverse, 1, 0. */
            int first = op->kind == ZB_OP_F ? 0 : 1;
            cr_assert_geq(i, 2);
            cr_assert_eq(l->ops[i - 2].kind, ZB_OP_UNSHARD, "r%d op %d",
                         r, i);
            cr_assert_eq(l->ops[i - 2].unit, first);
            cr_assert_eq(l->ops[i - 1].unit, 1 - first);
            cr_assert_eq(l->ops[i + 1].kind, ZB_OP_RESHARD);
            cr_assert_eq(l->ops[i + 2].kind, ZB_OP_RESHARD);
        }
    }
    zb_schedule_release(&s);
    zb_profile_release(&p);
}

/* The criterion: at dp 4 with parameters, ZeRO-3 with 2 or more
 * units holds less per rank than ZeRO-1 (7 GB of model state a stage),
 * where one unit holds as much (the stage stays gathered all step). */
Test(zero_units, units_save_memory_against_zero_1)
{
    const char *fams[] = { "1f1b", "zb-h1" };

    for (int f = 0; f < 2; f++) {
        double z1 = family_memory(fams[f], 1, ZB_DP_REDUCE_STEP, 1);
        double one = family_memory(fams[f], 3, ZB_DP_REDUCE_STEP, 1);
        double mb2 = family_memory(fams[f], 3, ZB_DP_REDUCE_MICROBATCH, 2);
        double st4 = family_memory(fams[f], 3, ZB_DP_REDUCE_STEP, 4);
        cr_assert_geq(one, z1 - 1e-9, "%s: %g %g", fams[f], one, z1);
        cr_assert_lt(mb2, z1 - 0.5, "%s: %g %g", fams[f], mb2, z1);
        cr_assert_lt(st4, z1 - 0.5, "%s: %g %g", fams[f], st4, z1);
    }
}

/* Unit times: an F of 1 in 4 segments of 0.25; a unit's gather of 5e8
 * bytes at d 4 takes 3 (0.01 + 5e8 / 4e9) = 0.405, longer than a
 * segment, so the passes wait and the step grows; with a link 100 times
 * faster it all but disappears. */
Test(zero_units, a_pass_waits_only_for_a_late_gather)
{
    struct zb_profile p;
    struct zb_schedule s;
    double slow, fast, none;

    units_profile(&p, 1, ZB_DP_REDUCE_STEP, 1);
    p.dp.latency = 0;
    p.dp.bandwidth = 1e14;
    gen("1f1b", &p, &s);
    none = s.predicted.step_time;
    zb_schedule_release(&s);
    zb_profile_release(&p);
    units_profile(&p, 3, ZB_DP_REDUCE_STEP, 4);
    gen("1f1b", &p, &s);
    slow = s.predicted.step_time;
    zb_schedule_release(&s);
    p.dp.latency = 0;
    p.dp.bandwidth = 1e14;
    gen("1f1b", &p, &s);
    fast = s.predicted.step_time;
    cr_assert_gt(slow, none + 1, "%g %g", slow, none);
    cr_assert_lt(fabs(fast - none), 1e-3, "%g %g", fast, none);
    zb_schedule_release(&s);
    zb_profile_release(&p);
}

Test(zero_units, validator_wants_every_unit_gathered)
{
    struct zb_profile p;
    struct zb_schedule s;
    struct zb_error err = { 0 };

    units_profile(&p, 3, ZB_DP_REDUCE_MICROBATCH, 2);
    gen("1f1b", &p, &s);
    cr_assert_eq(zb_validate_schedule(&s, &err), 0, "%s", err.msg);
    drop_op(&s, 1, ZB_OP_UNSHARD, 1);
    cr_assert_eq(zb_validate_schedule(&s, &err), ZB_EILLEGAL);
    cr_assert(strstr(err.msg, "runs on a sharded unit: unit 1 of stage 1"),
              "%s", err.msg);
    zb_schedule_release(&s);
    zb_profile_release(&p);
}

Test(zero_units, a_missing_unit_reduce_is_rejected)
{
    struct zb_profile p;
    struct zb_schedule s;
    struct zb_error err = { 0 };

    units_profile(&p, 2, ZB_DP_REDUCE_MICROBATCH, 4);
    gen("zb-h1", &p, &s);
    cr_assert_eq(zb_validate_schedule(&s, &err), 0, "%s", err.msg);
    drop_op(&s, 0, ZB_OP_REDUCE_GRAD, 2);
    cr_assert_eq(zb_validate_schedule(&s, &err), ZB_EILLEGAL);
    cr_assert(strstr(err.msg, "REDUCE_GRAD"), "%s", err.msg);
    zb_schedule_release(&s);
    zb_profile_release(&p);
}

Test(zero_units, units_need_zero_3_or_reduce_microbatch)
{
    struct zb_dp_draft d;
    struct zb_dp dp;
    struct zb_error err = { 0 };

    zb_dp_draft_init(&d);
    d.degree = 4;
    d.zero = 2;
    d.units = 2;
    cr_assert_eq(zb_dp_build(&d, 4, &dp, &err), ZB_EINVAL);
    cr_assert(strstr(err.msg, "data_parallel.units > 1 needs zero 3"),
              "%s", err.msg);
    d.zero = 3;
    cr_assert_eq(zb_dp_build(&d, 4, &dp, &err), 0, "%s", err.msg);
    cr_assert_eq(dp.units, 2);
    zb_dp_release(&dp);
    d.units = NAN;
    cr_assert_eq(zb_dp_build(&d, 4, &dp, &err), 0, "%s", err.msg);
    cr_assert_eq(dp.units, 1);
    zb_dp_release(&dp);
    zb_dp_draft_release(&d);
}

Test(zero_units, schedule_json_round_trips_and_k1_writes_no_unit)
{
    struct zb_profile p;
    struct zb_schedule s, back;
    struct zb_error err = { 0 };
    char *text;

    units_profile(&p, 3, ZB_DP_REDUCE_STEP, 1);
    gen("1f1b", &p, &s);
    text = zb_json_format_schedule(&s);
    cr_assert_null(strstr(text, "\"unit\""), "K = 1 writes as before");
    free(text);
    zb_schedule_release(&s);
    p.dp.units = 2;
    gen("1f1b", &p, &s);
    text = zb_json_format_schedule(&s);
    cr_assert(strstr(text, "\"units\": 2"));
    cr_assert(strstr(text, "{\"op\": \"UNSHARD\", \"stage\": 0, "
                           "\"unit\": 1, "), "%s", text);
    cr_assert_eq(zb_json_parse_schedule(text, &back, &err), 0, "%s",
                 err.msg);
    cr_assert_eq(back.profile.dp.units, 2);
    cr_assert_eq(zb_validate_schedule(&back, &err), 0, "%s", err.msg);
    assert_same_ops(&s, &back);
    for (int i = 0; i < s.ranks[0].n; i++)
        cr_assert_eq(s.ranks[0].ops[i].unit, back.ranks[0].ops[i].unit);
    cr_assert_eq(zb_sim_run(&back, &err), 0, "%s", err.msg);
    assert_near(back.predicted.step_time, s.predicted.step_time, "step");
    free(text);
    zb_schedule_release(&back);
    zb_schedule_release(&s);
    zb_profile_release(&p);
}
