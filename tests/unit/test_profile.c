/* test_profile.c - profile input: JSON and flags, and the one-line errors
 * that name the field. */
#include <string.h>
#include "helpers.h"
#include "zbsched/json.h"

/* Parse text, apply flags ("name=value" strings), build. */
static int load(const char *text, const char *const *flags,
                struct zb_profile *out, struct zb_error *err,
                char *warnings, size_t wsize)
{
    struct zb_profile_draft d;
    int rc = 0;

    zb_profile_draft_init(&d);
    if (text)
        rc = zb_json_parse_profile(text, &d, err);
    for (int i = 0; rc == 0 && flags && flags[i]; i++) {
        char name[32];
        const char *eq = strchr(flags[i], '=');
        snprintf(name, sizeof(name), "%.*s", (int)(eq - flags[i]), flags[i]);
        rc = zb_profile_draft_set(&d, name, eq + 1, err);
    }
    if (warnings)
        snprintf(warnings, wsize, "%s", d.warnings);
    if (rc == 0)
        rc = zb_profile_build(&d, out, err);
    zb_profile_draft_release(&d);
    return rc;
}

static void assert_error(const char *text, const char *const *flags,
                         const char *expect)
{
    struct zb_profile p = { 0 };
    struct zb_error err = { 0 };
    int rc = load(text, flags, &p, &err, NULL, 0);
    cr_assert_lt(rc, 0, "accepted: %s", text ? text : flags[0]);
    cr_assert_str_eq(err.msg, expect);
}

Test(profile, reads_every_field_of_the_design_example)
{
    const char *text =
        "{\"pp\": 4, \"vpp\": 1, \"microbatches\": 16, "
        "\"placement\": \"loop\","
        " \"time\": {\"F\": 18.5, \"B\": 18.1, \"W\": 9.3, \"comm\": 0.6},"
        " \"stages\": [{\"F\": 20.1, \"B\": 19, \"W\": 9.9}, {}, {\"W\": 1},"
        " {\"F\": 2}],"
        " \"memory\": {\"M_B\": 1.0, \"M_W\": 0.4, \"limit\": 8.0}}";
    struct zb_profile p;
    struct zb_error err = { 0 };

    cr_assert_eq(load(text, NULL, &p, &err, NULL, 0), 0, "%s", err.msg);
    cr_assert_eq(p.pp, 4);
    cr_assert_eq(p.microbatches, 16);
    assert_near(p.stage[0].f, 20.1, "stage 0 F");
    assert_near(p.stage[1].b, 18.1, "stage 1 B from time");
    assert_near(p.stage[2].w, 1, "stage 2 W");
    assert_near(p.stage[3].f, 2, "stage 3 F");
    assert_near(p.comm, 0.6, "comm");
    assert_near(p.m_w, 0.4, "M_W");
    for (int r = 0; r < 4; r++)
        assert_near(p.mem_limit[r], 8, "limit");
    zb_profile_release(&p);
}

Test(profile, flags_override_the_file_and_np_scales_by_p)
{
    const char *text = "{\"pp\": 4, \"microbatches\": 16, "
                       "\"time\": {\"F\": 1, "
                       "\"B\": 2, \"W\": 1}, \"stages\": [{\"F\": 5}, {}, {}, "
                       "{}], \"memory\": {\"M_B\": 2}}";
    static const char *const flags[] = { "pp=4", "f=3", "mem-limit=1.5p",
                                         NULL };
    struct zb_profile p;
    struct zb_error err = { 0 };

    cr_assert_eq(load(text, flags, &p, &err, NULL, 0), 0, "%s", err.msg);
    assert_near(p.stage[0].f, 3, "--f overrides stages[0].F");
    assert_near(p.stage[0].b, 2, "B from file");
    assert_near(p.mem_limit[3], 1.5 * 4 * 2, "1.5p = 1.5 * p * M_B");
    assert_near(p.m_w, 2, "M_W defaults to M_B");
    zb_profile_release(&p);
}

/* "Np" is N times 1F1B's activation peak, p times a rank's M_B, for every
 * vpp and placement: V's two half-stage chunks at 1p hold p stages. */
Test(profile, np_is_onef1b_peak_for_every_vpp_and_placement)
{
    static const char *const v1p[] = { "pp=4", "placement=v", "m-b=0.5",
                                       "mem-limit=1p", NULL };
    static const char *const loop[] = { "pp=4", "vpp=3", "m-b=0.5",
                                        "mem-limit=1.5p", NULL };
    static const char *const plain[] = { "pp=4", "m-b=0.5", "mem-limit=2p",
                                         NULL };
    struct zb_profile p;
    struct zb_error err = { 0 };

    cr_assert_eq(load(NULL, v1p, &p, &err, NULL, 0), 0, "%s", err.msg);
    cr_assert_eq(p.vpp, 2, "placement v alone means vpp 2");
    assert_near(p.mem_limit[0], 4 * 2 * 0.5, "v 1p = p * 2 chunks * M_B");
    assert_near(zb_profile_1f1b_peak(&p), 4, "1F1B's peak");
    zb_profile_release(&p);
    cr_assert_eq(load(NULL, loop, &p, &err, NULL, 0), 0, "%s", err.msg);
    assert_near(p.mem_limit[3], 1.5 * 4 * 3 * 0.5, "loop vpp 3 1.5p");
    zb_profile_release(&p);
    cr_assert_eq(load(NULL, plain, &p, &err, NULL, 0), 0, "%s", err.msg);
    assert_near(p.mem_limit[1], 2 * 4 * 0.5, "vpp 1 2p = 2 * p * M_B");
    zb_profile_release(&p);
}

/* Per rank: the same model whatever the chunking. Rank r's "stages" entry
 * and M_B/M_W are split evenly over its chunks (V: stages r, 2p-1-r);
 * comm and limits are not split. */
Test(profile, per_rank_splits_times_and_memory_over_chunks)
{
    const char *rank =
        "{\"pp\": 2, \"placement\": \"v\", \"per\": \"rank\","
        " \"time\": {\"F\": 2, \"B\": 3, \"W\": 1, \"comm\": 0.5},"
        " \"stages\": [{\"F\": 4}, {}],"
        " \"memory\": {\"M_B\": 2, \"M_W\": 1, \"limit\": 6}}";
    static const char *const flags[] = { "pp=2", "vpp=4", "per=rank",
                                         "f=8", "m-b=4", "mem-limit=1p",
                                         NULL };
    static const double f[4] = { 2, 1, 1, 2 };   /* stages 0..3 */
    struct zb_profile p;
    struct zb_error err = { 0 };

    cr_assert_eq(load(rank, NULL, &p, &err, NULL, 0), 0, "%s", err.msg);
    for (int s = 0; s < 4; s++) {
        assert_near(p.stage[s].f, f[s], "stage %d F", s);
        assert_near(p.stage[s].b, 1.5, "stage %d B", s);
        assert_near(p.stage[s].w, 0.5, "stage %d W", s);
    }
    assert_near(p.comm, 0.5, "comm is per transfer");
    assert_near(p.m_b, 1, "M_B per chunk");
    assert_near(p.m_w, 0.5, "M_W per chunk");
    assert_near(p.mem_limit[1], 6, "limit per rank");
    zb_profile_release(&p);
    cr_assert_eq(load(NULL, flags, &p, &err, NULL, 0), 0, "%s", err.msg);
    assert_near(p.stage[7].f, 2, "--f per rank over 4 chunks");
    assert_near(p.m_b, 1, "--m-b per rank over 4 chunks");
    assert_near(p.mem_limit[0], 2 * 4, "1p = p * a rank's M_B");
    zb_profile_release(&p);
    assert_error("{\"pp\": 2, \"vpp\": 2, \"per\": \"rank\", "
                 "\"stages\": [{}, {}, {}, {}]}", NULL,
                 "stages has 4 entries, expected pp (per rank) = 2");
    assert_error("{\"per\": \"stage\"}", NULL,
                 "per must be \"rank\" or \"chunk\"");
}

/* A shape made from a built profile is the profile a per-rank file
 * builds in that shape; its own shape is a plain copy. */
Test(profile, reshape_builds_a_shape_as_a_per_rank_profile_does)
{
#define RANK_MODEL \
        "{\"pp\": 3, \"per\": \"rank\", \"microbatches\": 6," \
        " \"time\": {\"F\": 2, \"B\": 3, \"W\": 1, \"FB\": 4}," \
        " \"stages\": [{\"F\": 4}, {}, {\"B\": 6}]," \
        " \"memory\": {\"M_B\": 2, \"M_W\": 1, \"limit\": \"1p\"}"
    /* params has one entry per stage: the base shape's, 3. */
    const char *rank = RANK_MODEL "}";
    const char *rank_dp = RANK_MODEL ", \"dp\": 2,"
        " \"data_parallel\": {\"params\": [3, 6, 9]}}";
    static const char *const as_v[] = { "placement=v", NULL };
    static const char *const as_loop3[] = { "vpp=3", NULL };
    const char *const *shapes[2] = { as_v, as_loop3 };
    const int vpp[2] = { 2, 3 };
    struct zb_profile base, want, got;
    struct zb_error err = { 0 };

    cr_assert_eq(load(rank_dp, NULL, &base, &err, NULL, 0), 0, "%s",
                 err.msg);
    for (int k = 0; k < 2; k++) {
        enum zb_placement pl = k ? ZB_PLACEMENT_LOOP : ZB_PLACEMENT_V;
        cr_assert_eq(load(rank, shapes[k], &want, &err, NULL, 0), 0, "%s",
                     err.msg);
        cr_assert_eq(zb_profile_reshape(&base, pl, vpp[k], &got, &err), 0,
                     "%s", err.msg);
        cr_assert_eq(got.vpp, vpp[k]);
        cr_assert_eq(got.placement, pl);
        for (int s = 0; s < zb_profile_stages(&want); s++) {
            assert_near(got.stage[s].f, want.stage[s].f, "stage %d F", s);
            assert_near(got.stage[s].b, want.stage[s].b, "stage %d B", s);
            assert_near(got.stage[s].w, want.stage[s].w, "stage %d W", s);
            /* dp params are per stage: the rank's split over chunks. */
            assert_near(got.dp.params[s],
                         base.dp.params[zb_profile_stage_rank(&got, s)] /
                             vpp[k], "stage %d params", s);
        }
        assert_near(got.m_b, want.m_b, "M_B");
        assert_near(got.m_w, want.m_w, "M_W");
        assert_near(got.fb, want.fb, "FB");
        assert_near(got.mem_limit[2], want.mem_limit[2], "limit");
        zb_profile_release(&got);
        zb_profile_release(&want);
    }
    /* Its own shape: per-stage times kept, not averaged. */
    cr_assert_eq(zb_profile_reshape(&base, ZB_PLACEMENT_LOOP, 1, &got,
                                    &err), 0, "%s", err.msg);
    assert_near(got.stage[0].f, 4, "stage 0 keeps its F");
    assert_near(got.stage[2].b, 6, "stage 2 keeps its B");
    zb_profile_release(&got);
    cr_assert_lt(zb_profile_reshape(&base, ZB_PLACEMENT_V, 3, &got, &err),
                 0);
    cr_assert_str_eq(err.msg, "no profile has placement 'v' with vpp 3");
    zb_profile_release(&base);
}

Test(profile, per_rank_limits_and_unlimited_ranks)
{
    const char *text = "{\"pp\": 2, \"microbatches\": 4, "
                       "\"memory\": {\"limit\": [3, null]}}";
    struct zb_profile p;
    struct zb_error err = { 0 };

    cr_assert_eq(load(text, NULL, &p, &err, NULL, 0), 0, "%s", err.msg);
    assert_near(p.mem_limit[0], 3, "rank 0");
    cr_assert(isinf(p.mem_limit[1]));
    zb_profile_release(&p);
}

Test(profile, rejects_bad_times_naming_the_field)
{
    static const char *const neg[] = { "b=-1", NULL };
    static const char *const nan_f[] = { "f=nan", NULL };
    static const char *const inf_w[] = { "w=inf", NULL };
    static const char *const bad[] = { "comm=fast", NULL };

    assert_error("{\"time\": {\"F\": 1, \"B\": 1}}", NULL,
                 "time.W is missing");
    assert_error("{\"time\": {\"F\": -2, \"B\": 1, \"W\": 1}}", NULL,
                 "time.F must be a finite number > 0, got -2");
    assert_error("{\"time\": {\"F\": 1, \"B\": 1, \"W\": 1e999}}", NULL,
                 "time.W must be a finite number >= 0, got inf");
    assert_error("{\"pp\": 2, \"stages\": [{\"F\": 1, \"B\": 1, \"W\": 1}, "
                 "{\"F\": 1, \"B\": -3, \"W\": 1}]}", NULL,
                 "stages[1].B must be a finite number > 0, got -3");
    assert_error("{\"pp\": 2, \"stages\": [{\"F\": 1, \"B\": 1, \"W\": 1}, "
                 "{\"F\": 1, \"B\": 1}]}", NULL, "stages[1].W is missing");
    assert_error(NULL, neg, "time.B must be a finite number > 0, got -1");
    /* nan and inf are not numbers a user types (units.h). */
    assert_error(NULL, nan_f, "--f: 'nan' is not a number or a time "
                              "(14.4ms: us, ms or s)");
    assert_error(NULL, inf_w, "--w: 'inf' is not a number or a time "
                              "(14.4ms: us, ms or s)");
    assert_error(NULL, bad, "--comm: 'fast' is not a number or a time "
                            "(14.4ms: us, ms or s)");
    assert_error("{\"time\": {\"F\": \"1\", \"B\": 1, \"W\": 1}}", NULL,
                 "time.F must be a number");
}

Test(profile, rejects_bad_counts_and_shapes)
{
    static const char *const vpp0[] = { "vpp=0", NULL };
    static const char *const mb_frac[] = { "mb=2.5", NULL };
    static const char *const v3[] = { "vpp=3", "placement=v", NULL };

    assert_error("{\"pp\": 0}", NULL, "pp must be an integer >= 1, got 0");
    assert_error(NULL, vpp0, "vpp must be an integer >= 1, got 0");
    assert_error(NULL, mb_frac,
                 "microbatches must be an integer >= 1, got 2.5");
    assert_error(NULL, v3, "placement 'v' needs vpp = 2, got 3");
    assert_error("{\"pp\": 4, \"stages\": [{}, {}, {}]}", NULL,
                 "stages has 3 entries, expected pp*vpp = 4");
    assert_error("{\"pp\": 100000, \"microbatches\": 100000}", NULL,
                 "pp must be at most 4096, got 100000");
    assert_error("{\"pp\": 4000, \"microbatches\": 100000}", NULL,
                 "pp*vpp*microbatches = 400000000 is too large (at most "
                 "333333, 1000000 passes)");
}

Test(profile, rejects_a_limit_below_one_microbatch)
{
    static const char *const low[] = { "mem-limit=0.5", NULL };
    static const char *const low_v[] = { "vpp=2", "mem-limit=1.5", NULL };

    assert_error(NULL, low, "memory.limit = 0.5 is below one microbatch's "
                            "activations (M_B = 1)");
    assert_error(NULL, low_v, "memory.limit = 1.5 is below one microbatch's "
                              "activations (vpp*M_B = 2)");
    assert_error("{\"pp\": 2, \"memory\": {\"limit\": [4, 0.2]}}", NULL,
                 "memory.limit[1] = 0.2 is below one microbatch's "
                 "activations (M_B = 1)");
    assert_error("{\"pp\": 2, \"memory\": {\"limit\": [4]}}", NULL,
                 "memory.limit has 1 entries, expected pp = 2");
    assert_error("{\"memory\": {\"M_W\": -1}}", NULL,
                 "memory.M_W must be a finite number >= 0, got -1");
}

Test(profile, refuses_unknown_keys_naming_the_closest)
{
    assert_error("{\"pp\": 2, \"colour\": 1}", NULL,
                 "unknown key 'colour'");
    assert_error("{\"time\": {\"F\": 1, \"B\": 1, \"W\": 1, \"Comm\": 2}}",
                 NULL, "unknown key 'time.Comm' (did you mean 'time.comm'?)");
    assert_error("{\"memory\": {\"MB\": 1.9}}", NULL,
                 "unknown key 'memory.MB' (did you mean 'memory.M_B'?)");
}

Test(profile, malformed_json_gives_line_and_column)
{
    assert_error("{\n  \"pp\": 4,\n  \"microbatches\" 8\n}", NULL,
                 "malformed JSON at line 3, column 18");
    assert_error("", NULL, "malformed JSON at line 1, column 1");
    assert_error("[1, 2]", NULL, "the profile must be an object");
}

/* zb_profile_equal() is the key of the constructions' memo (memo.h): a
 * copy is equal; any one time, limit, comm or data-parallel setting
 * changed tells them apart. */
Test(profile, equal_profiles_and_each_field_that_tells_them_apart)
{
    struct shape sh = unit_shape(4, 8);
    struct zb_profile a, b;

    make_profile(&sh, &a);
    set_test_dp(&a, 1);
    zb_profile_copy(&b, &a);
    cr_assert(zb_profile_equal(&a, &b));
    b.stage[3].w = 1.5;
    cr_assert_not(zb_profile_equal(&a, &b), "a stage's W");
    b.stage[3].w = a.stage[3].w;
    b.mem_limit[2] = 6;
    cr_assert_not(zb_profile_equal(&a, &b), "one rank's limit");
    b.mem_limit[2] = a.mem_limit[2];
    b.dp.params[1] = 2e9;
    cr_assert_not(zb_profile_equal(&a, &b), "one stage's parameters");
    b.dp.params[1] = a.dp.params[1];
    b.comm = 0.1;
    cr_assert_not(zb_profile_equal(&a, &b), "comm");
    b.comm = a.comm;
    cr_assert(zb_profile_equal(&a, &b), "every field restored");
    zb_profile_release(&a);
    zb_profile_release(&b);
}
