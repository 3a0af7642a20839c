/* test_profile_import.c - measured profiles (torch traces, Megatron logs,
 * zbexec traces), check-profile's warnings and the jitter replay. The
 * trace sets of a known profile are tests/cli/t_profile.sh's. */
#include <stdio.h>
#include <string.h>
#include "helpers.h"
#include "zbsched/json.h"
#include "zbsched/profile_import.h"

static void profile_of(const char *json, struct zb_profile *p)
{
    struct zb_profile_draft d;
    struct zb_error err = { 0 };

    zb_profile_draft_init(&d);
    cr_assert_eq(zb_json_parse_profile(json, &d, &err), 0, "%s", err.msg);
    cr_assert_eq(zb_profile_build(&d, p, &err), 0, "%s", err.msg);
    zb_profile_draft_release(&d);
}

/* ---- PyTorch traces --------------------------------------------------- */

/* One annotation "PP:<label>" on the host at [ts, ts + dur) us. */
static int host(char *buf, const char *label, double ts, double dur)
{
    return sprintf(buf, "{\"ph\": \"X\", \"cat\": \"user_annotation\", "
                   "\"name\": \"PP:%s\", \"pid\": 1, \"tid\": 1, \"ts\": %g, "
                   "\"dur\": %g},", label, ts, dur);
}

/* A trace file holding F, I and W of one stage for mbs microbatches;
 * each pass of length len us (host only). */
static void stage_trace(char *buf, int stage, int mbs, double f, double b,
                        double w, bool fused)
{
    double t = 1000.0 * stage;
    int n = sprintf(buf, "{\"traceEvents\": [");

    for (int i = 0; i < mbs; i++) {
        char l[32];
        snprintf(l, sizeof(l), "%dF%d", stage, i);
        n += host(buf + n, l, t, f);
        t += f + 1;
    }
    for (int i = 0; i < mbs; i++) {
        char l[32];
        snprintf(l, sizeof(l), "%d%s%d", stage, fused ? "B" : "I", i);
        n += host(buf + n, l, t, fused ? b + w : b);
        t += b + 1;
        if (fused)
            continue;
        snprintf(l, sizeof(l), "%dW%d", stage, i);
        n += host(buf + n, l, t, w);
        t += w + 1;
    }
    n += sprintf(buf + n, "{\"ph\": \"X\", \"name\": \"PP:%dSEND_F0\", "
                 "\"ts\": 0, \"dur\": 1}]}", stage);
}

static char big[1 << 16];

Test(profile_import, reads_the_pp_labels_of_each_rank)
{
    struct zb_run r;
    struct zb_measured m;
    struct zb_error err = { 0 };
    struct zb_measure_opts o = { 0 };

    zb_run_init(&r);
    for (int s = 0; s < 3; s++) {
        stage_trace(big, s, 4, 100 + s, 120, 60, false);
        cr_assert_eq(zb_run_add_torch_trace(&r, big, &err), 0, "%s",
                     err.msg);
    }
    cr_assert_eq(r.lanes, 3);
    cr_assert_eq(zb_measure_run(&r, &o, &m, &err), 0, "%s", err.msg);
    cr_assert_eq(m.pp, 3);
    cr_assert_eq(m.vpp, 1);
    cr_assert_eq(m.microbatches, 4);
    cr_assert_str_eq(m.clock, "host");
    for (int s = 0; s < 3; s++) {
        cr_assert_float_eq(m.t[s][ZB_MEAS_F].median, (100 + s) / 1e3, 1e-9);
        cr_assert_float_eq(m.t[s][ZB_MEAS_B].median, 0.12, 1e-9);
        cr_assert_float_eq(m.t[s][ZB_MEAS_W].median, 0.06, 1e-9);
        cr_assert_eq(m.t[s][ZB_MEAS_F].samples, 4);
    }
    cr_assert(!m.fused);
    zb_measured_release(&m);
    zb_run_release(&r);
}

Test(profile_import, a_fused_backward_is_b_with_w_zero)
{
    struct zb_run r;
    struct zb_measured m;
    struct zb_error err = { 0 };
    struct zb_measure_opts o = { .unit = "us" };

    zb_run_init(&r);
    stage_trace(big, 0, 3, 100, 120, 60, true);
    cr_assert_eq(zb_run_add_torch_trace(&r, big, &err), 0, "%s", err.msg);
    cr_assert_eq(zb_measure_run(&r, &o, &m, &err), 0, "%s", err.msg);
    cr_assert(m.fused);
    cr_assert_float_eq(m.t[0][ZB_MEAS_B].median, 180, 1e-9);
    cr_assert_eq(m.t[0][ZB_MEAS_W].samples, 0);
    zb_measured_release(&m);
    zb_run_release(&r);
}

Test(profile_import, a_stage_missing_from_the_traces_is_named)
{
    struct zb_run r;
    struct zb_measured m;
    struct zb_error err = { 0 };
    struct zb_measure_opts o = { .pp = 4 };

    zb_run_init(&r);
    for (int s = 0; s < 4; s++) {
        if (s == 2)
            continue;
        stage_trace(big, s, 2, 100, 120, 60, false);
        cr_assert_eq(zb_run_add_torch_trace(&r, big, &err), 0);
    }
    cr_assert_eq(zb_measure_run(&r, &o, &m, &err), ZB_EINVAL);
    cr_assert(strstr(err.msg, "stage 2"), "%s", err.msg);
    zb_measured_release(&m);
    zb_run_release(&r);
}

Test(profile_import, device_time_comes_from_the_kernels_launched)
{
    /* The host annotation lasts 10 us; its two launches' kernels span
     * 500 us on the device. A NCCL kernel does not count. */
    const char *t =
        "{\"traceEvents\": ["
        "{\"ph\": \"X\", \"cat\": \"user_annotation\", \"name\": \"PP:0F0\","
        " \"pid\": 1, \"tid\": 2, \"ts\": 100, \"dur\": 10},"
        "{\"ph\": \"X\", \"cat\": \"cuda_runtime\", \"name\": "
        "\"cudaLaunchKernel\", \"pid\": 1, \"tid\": 2, \"ts\": 102, "
        "\"dur\": 1, \"args\": {\"correlation\": 7}},"
        "{\"ph\": \"X\", \"cat\": \"cuda_runtime\", \"name\": "
        "\"cudaLaunchKernel\", \"pid\": 1, \"tid\": 2, \"ts\": 105, "
        "\"dur\": 1, \"args\": {\"correlation\": 8}},"
        "{\"ph\": \"X\", \"cat\": \"cuda_runtime\", \"name\": "
        "\"cudaLaunchKernel\", \"pid\": 1, \"tid\": 2, \"ts\": 107, "
        "\"dur\": 1, \"args\": {\"correlation\": 9}},"
        "{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"gemm\", \"pid\": 0,"
        " \"tid\": 7, \"ts\": 300, \"dur\": 200, \"args\": {\"correlation\":"
        " 7}},"
        "{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"gemm\", \"pid\": 0,"
        " \"tid\": 7, \"ts\": 500, \"dur\": 300, \"args\": {\"correlation\":"
        " 8}},"
        "{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"ncclDevKernel\", "
        "\"pid\": 0, \"tid\": 9, \"ts\": 300, \"dur\": 9000, \"args\": "
        "{\"correlation\": 9}},"
        "{\"ph\": \"X\", \"cat\": \"user_annotation\", \"name\": \"PP:0I0\","
        " \"pid\": 1, \"tid\": 2, \"ts\": 900, \"dur\": 40},"
        "{\"ph\": \"X\", \"cat\": \"gpu_user_annotation\", \"name\": "
        "\"PP:0I0\", \"pid\": 0, \"tid\": 7, \"ts\": 1000, \"dur\": 450}"
        "]}";
    struct zb_run r;
    struct zb_error err = { 0 };

    zb_run_init(&r);
    cr_assert_eq(zb_run_add_torch_trace(&r, t, &err), 0, "%s", err.msg);
    cr_assert_eq(r.n, 2);
    cr_assert(r.passes[0].device && r.passes[1].device);
    cr_assert_float_eq(r.passes[0].end - r.passes[0].start, 500, 1e-9);
    cr_assert_float_eq(r.passes[1].end - r.passes[1].start, 450, 1e-9);
    zb_run_release(&r);
}

Test(profile_import, v_placement_is_read_from_the_stages_of_each_file)
{
    struct zb_run r;
    struct zb_measured m;
    struct zb_error err = { 0 };
    struct zb_measure_opts o = { 0 };
    char a[1 << 15], b[1 << 15];

    zb_run_init(&r);
    for (int rank = 0; rank < 2; rank++) {
        /* rank r holds stages r and 3 - r */
        stage_trace(a, rank, 2, 100, 100, 50, false);
        stage_trace(b, 3 - rank, 2, 100, 100, 50, false);
        /* one file: the two arrays joined */
        a[strlen(a) - 2] = '\0';
        strcat(a, ",");
        strcat(a, strchr(b, '[') + 1);
        cr_assert_eq(zb_run_add_torch_trace(&r, a, &err), 0, "%s", err.msg);
    }
    cr_assert_eq(zb_measure_run(&r, &o, &m, &err), 0, "%s", err.msg);
    cr_assert_eq(m.pp, 2);
    cr_assert_eq(m.vpp, 2);
    cr_assert_eq(m.placement, ZB_PLACEMENT_V);
    zb_measured_release(&m);
    zb_run_release(&r);
}

Test(profile_import, gpipe_labels_take_the_stage_of_their_rank)
{
    struct zb_run r;
    struct zb_measured m;
    struct zb_error err = { 0 };
    struct zb_measure_opts o = { .unit = "us" };
    char t[1024];

    zb_run_init(&r);
    for (int rank = 1; rank >= 0; rank--) {
        snprintf(t, sizeof(t), "{\"distributedInfo\": {\"rank\": %d}, "
                 "\"traceEvents\": [{\"ph\": \"X\", \"name\": "
                 "\"Forward 0\", \"ts\": 0, \"dur\": %d}, {\"ph\": \"X\", "
                 "\"name\": \"Backward 0\", \"ts\": 500, \"dur\": 90}]}",
                 rank, 40 + rank);
        cr_assert_eq(zb_run_add_torch_trace(&r, t, &err), 0, "%s", err.msg);
    }
    cr_assert_eq(zb_measure_run(&r, &o, &m, &err), 0, "%s", err.msg);
    cr_assert_eq(m.pp, 2);
    cr_assert(m.fused);
    cr_assert_float_eq(m.t[1][ZB_MEAS_F].median, 41, 1e-9);
    cr_assert_float_eq(m.t[0][ZB_MEAS_B].median, 90, 1e-9);
    zb_measured_release(&m);
    zb_run_release(&r);
}

Test(profile_import, refuses_a_trace_without_pp_actions)
{
    struct zb_run r;
    struct zb_error err = { 0 };

    zb_run_init(&r);
    cr_assert_eq(zb_run_add_torch_trace(&r, "{\"traceEvents\": [{\"ph\": "
                 "\"X\", \"name\": \"aten::mm\", \"ts\": 1, \"dur\": 2}]}",
                 &err), ZB_EPARSE);
    cr_assert(strstr(err.msg, "PP:"), "%s", err.msg);
    cr_assert_eq(zb_run_add_torch_trace(&r, "{\"traceEvents\": [", &err),
                 ZB_EPARSE);
    cr_assert(strstr(err.msg, "malformed JSON"), "%s", err.msg);
    zb_run_release(&r);
}

Test(profile_import, zbexec_traces_drop_the_warm_up_iteration)
{
    const char *t =
        "{\"traceEvents\": ["
        "{\"ph\": \"X\", \"pid\": 0, \"tid\": 0, \"ts\": 0, \"dur\": 900, "
        "\"args\": {\"op\": \"F\", \"stage\": 0, \"mb\": 0, \"iter\": 0}},"
        "{\"ph\": \"X\", \"pid\": 0, \"tid\": 0, \"ts\": 1000, \"dur\": 100,"
        " \"args\": {\"op\": \"F\", \"stage\": 0, \"mb\": 0, \"iter\": 1}},"
        "{\"ph\": \"X\", \"pid\": 0, \"tid\": 1, \"ts\": 1000, \"dur\": 5,"
        " \"args\": {\"op\": \"SEND_F\", \"stage\": 0, \"mb\": 0}}"
        "]}";
    struct zb_run r;
    struct zb_error err = { 0 };

    zb_run_init(&r);
    cr_assert_eq(zb_run_add_zbexec_trace(&r, t, &err), 0, "%s", err.msg);
    cr_assert_eq(r.n, 1);
    cr_assert_float_eq(r.passes[0].end - r.passes[0].start, 100, 1e-9);
    zb_run_release(&r);
}

/* ---- Megatron logs ------------------------------------------------------ */

static const char *args_lines =
    "  global_batch_size ............................... 4\n"
    "  micro_batch_size ................................ 1\n"
    "  pipeline_model_parallel_size .................... 2\n"
    "  world_size ...................................... 2\n";

Test(profile_import, megatron_timers_give_per_rank_fused_times)
{
    char text[2048];
    const char *texts[1] = { text };
    struct zb_measured m;
    struct zb_error err = { 0 };
    struct zb_measure_opts o = { 0 };

    snprintf(text, sizeof(text), "%stimes across ranks (ms):\n"
             "  forward-compute:\n     rank  0: 40.00\n     rank  1: 48.00\n"
             "  backward-compute:\n     rank  0: 80.00\n     rank  1: 96.00\n",
             args_lines);
    cr_assert_eq(zb_measure_megatron(texts, 1, &o, &m, &err), 0, "%s",
                 err.msg);
    cr_assert(m.per_rank && m.fused);
    cr_assert_eq(m.microbatches, 4);
    cr_assert_float_eq(m.t[0][ZB_MEAS_F].median, 10, 1e-9);
    cr_assert_float_eq(m.t[1][ZB_MEAS_B].median, 24, 1e-9);
    zb_measured_release(&m);
}

Test(profile_import, megatron_min_max_timers_say_which_option_to_use)
{
    const char *texts[1] = {
        "(min, max) time across ranks (ms):\n"
        "    forward-compute ..........: (40.00, 48.00)\n" };
    struct zb_measured m;
    struct zb_error err = { 0 };
    struct zb_measure_opts o = { .pp = 2, .microbatches = 4 };

    cr_assert_eq(zb_measure_megatron(texts, 1, &o, &m, &err), ZB_EINVAL);
    cr_assert(strstr(err.msg, "--timing-log-option all"), "%s", err.msg);
    zb_measured_release(&m);
}

Test(profile_import, zero_bubble_conclusions_give_split_times_and_memory)
{
    char text[2048];
    const char *texts[1] = { text };
    struct zb_measured m;
    struct zb_error err = { 0 };
    struct zb_measure_opts o = { 0 };

    snprintf(text, sizeof(text), "%s"
             "rank 1 profiling conclusion: [(18500,), (18100,), (9300,), 600,"
             " (1000.0,), (-600.0,), (-400.0,)]\n"
             "rank 0 profiling conclusion: [(20000,), (19000,), (9900,), 620,"
             " (1000.0,), (-600.0,), (-400.0,)]\n", args_lines);
    cr_assert_eq(zb_measure_megatron(texts, 1, &o, &m, &err), 0, "%s",
                 err.msg);
    cr_assert(!m.per_rank && !m.fused && m.memory);
    cr_assert_float_eq(m.t[0][ZB_MEAS_F].median, 20, 1e-9);
    cr_assert_float_eq(m.t[1][ZB_MEAS_W].median, 9.3, 1e-9);
    cr_assert_float_eq(m.comm.median, 0.61, 1e-9);
    cr_assert_float_eq(m.m_b, 1000, 1e-9);
    cr_assert_float_eq(m.m_w, 400, 1e-9);
    zb_measured_release(&m);
}

/* ---- The measured object ----------------------------------------------- */

Test(profile_import, the_measured_object_reads_back_and_the_profile_too)
{
    struct zb_measured m, back;
    struct zb_profile p, q;
    struct zb_profile_draft d;
    struct zb_error err = { 0 };
    char *text;

    zb_measured_init(&m);
    m.pp = 2;
    m.vpp = 1;
    m.microbatches = 4;
    strcpy(m.source, "torch-trace");
    strcpy(m.clock, "device");
    m.comm = (struct zb_spread){ 0.5, 0.4, 0.7, 12 };
    m.t = calloc(2, sizeof(*m.t));
    m.n = 2;
    for (int s = 0; s < 2; s++)
        for (int k = 0; k < ZB_MEAS_KINDS; k++)
            m.t[s][k] = (struct zb_spread){ 10 + k, 9 + k, 12 + k, 8 };
    cr_assert_eq(zb_measured_profile(&m, &p, &err), 0, "%s", err.msg);
    text = zb_json_format_measured(&p, &m);
    zb_profile_draft_init(&d);
    cr_assert_eq(zb_json_parse_profile(text, &d, &err), 0, "%s", err.msg);
    cr_assert_str_empty(d.warnings, "%s", d.warnings);
    cr_assert_eq(zb_profile_build(&d, &q, &err), 0, "%s", err.msg);
    cr_assert(zb_profile_equal(&p, &q));
    cr_assert_eq(zb_json_parse_measured(text, &back, &err), 0, "%s",
                 err.msg);
    cr_assert_eq(back.n, 2);
    cr_assert_float_eq(back.t[1][ZB_MEAS_W].p90, 14, 1e-12);
    cr_assert_eq(back.t[1][ZB_MEAS_W].samples, 8);
    cr_assert_eq(back.comm.samples, 12);
    cr_assert_str_eq(back.clock, "device");
    free(text);
    zb_measured_release(&back);
    zb_measured_release(&m);
    zb_profile_release(&p);
    zb_profile_release(&q);
    zb_profile_draft_release(&d);
}

/* ---- check-profile ------------------------------------------------------ */

static int warnings(const char *json, const struct zb_measured *m,
                    const char *family, const char *needle)
{
    struct zb_profile p;
    struct zb_check c;
    int hits = 0;

    profile_of(json, &p);
    zb_check_init(&c);
    zb_check_profile(&p, m, family, NULL, &c);
    for (int i = 0; i < c.n; i++)
        hits += needle ? strstr(c.msg[i], needle) != NULL : 1;
    zb_check_release(&c);
    zb_profile_release(&p);
    return hits;
}

Test(check_profile, paper_profiles_raise_no_warning)
{
    static const char *paper[] = {
        "{\"pp\": 8, \"time\": {\"F\": 18.5, \"B\": 18.1, \"W\": 9.3, "
        "\"comm\": 0.6}, \"memory\": {\"M_B\": 1, \"M_W\": 0.3664}}",
        "{\"pp\": 8, \"time\": {\"F\": 29802, \"B\": 29428, \"W\": 19530, "
        "\"comm\": 577}, \"memory\": {\"M_B\": 1, \"M_W\": 0.4324}}",
        "{\"pp\": 16, \"time\": {\"F\": 11307, \"B\": 11254, \"W\": 8101, "
        "\"comm\": 379}, \"memory\": {\"M_B\": 1, \"M_W\": 0.4324}}",
        "{\"pp\": 32, \"time\": {\"F\": 10408, \"B\": 10204, \"W\": 7703, "
        "\"comm\": 408}, \"memory\": {\"M_B\": 1, \"M_W\": 0.4324}}",
        /* zbexec's MLP (tests/data/traces/zbexec-mlp.profile.json): F
         * holds tanh and stage 0 the input's generation, B is small;
         * M_W > M_B (each layer's dz kept for W) */
        "{\"pp\": 2, \"stages\": [{\"F\": 0.0352, \"B\": 0.00466, \"W\": "
        "0.00496}, {\"F\": 0.0202, \"B\": 0.00471, \"W\": 0.00491}], "
        "\"memory\": {\"M_B\": 0.01175, \"M_W\": 0.01566}}",
    };

    for (size_t i = 0; i < sizeof(paper) / sizeof(paper[0]); i++)
        cr_assert_eq(warnings(paper[i], NULL, NULL, NULL), 0, "%zu", i);
}

Test(check_profile, a_b_timer_holding_w_is_sail_sg_issue_22)
{
    const char *p = "{\"pp\": 2, \"time\": {\"F\": 12028, \"B\": 24056, "
                    "\"W\": 100}}";

    cr_assert_eq(warnings(p, NULL, "zb", "issue #22"), 2);
    cr_assert_eq(warnings(p, NULL, "zb", "--gradient-accumulation-fusion"),
                 2);
}

Test(check_profile, w_holding_part_of_b_is_named)
{
    cr_assert_eq(warnings("{\"pp\": 2, \"time\": {\"F\": 10, \"B\": 3, "
                          "\"W\": 12}}", NULL, NULL, "swapped"), 2);
    /* a small B alone is no sign (zbexec's MLP) */
    cr_assert_eq(warnings("{\"pp\": 2, \"time\": {\"F\": 10, \"B\": 3, "
                          "\"W\": 3}}", NULL, NULL, NULL), 0);
}

Test(check_profile, w_zero_matters_only_to_a_family_that_splits)
{
    const char *fused = "{\"pp\": 4, \"time\": {\"F\": 10, \"B\": 20, "
                        "\"W\": 0}}";
    const char *one = "{\"pp\": 4, \"time\": {\"F\": 10, \"B\": 10, \"W\": "
                      "5}, \"stages\": [{}, {\"W\": 0}, {}, {}]}";

    cr_assert_eq(warnings(fused, NULL, NULL, "every stage: W = 0"), 1);
    cr_assert_eq(warnings(fused, NULL, "zb-h1", "W = 0"), 1);
    cr_assert_eq(warnings(fused, NULL, "1f1b", NULL), 0);
    cr_assert_eq(warnings(one, NULL, "zb-v", "stage 1: W = 0"), 1);
}

Test(check_profile, a_wide_spread_names_the_stage_and_its_numbers)
{
    struct zb_measured m;
    const char *p = "{\"pp\": 2, \"time\": {\"F\": 10, \"B\": 10, "
                    "\"W\": 5}}";

    zb_measured_init(&m);
    m.n = 2;
    m.t = calloc(2, sizeof(*m.t));
    for (int s = 0; s < 2; s++)
        for (int k = 0; k < ZB_MEAS_KINDS; k++)
            m.t[s][k] = (struct zb_spread){ 10, 9.5, 11, 32 };
    cr_assert_eq(warnings(p, &m, NULL, NULL), 0);
    m.t[1][ZB_MEAS_B] = (struct zb_spread){ 10, 9, 14, 32 };
    cr_assert_eq(warnings(p, &m, NULL, "stage 1: B p90/median 1.40"), 1);
    zb_measured_release(&m);
}

Test(check_profile, inner_stages_far_apart_point_to_plan)
{
    const char *p = "{\"pp\": 4, \"time\": {\"F\": 10, \"B\": 10, \"W\": "
                    "5}, \"stages\": [{\"F\": 30}, {}, {\"F\": 14, \"B\": "
                    "14}, {\"F\": 30}]}";

    cr_assert_eq(warnings(p, NULL, NULL, "zbsched plan"), 1);
    cr_assert_eq(warnings(p, NULL, NULL, "stages 2 and 1 are 32 %"), 1);
}

Test(check_profile, m_w_above_twice_m_b_cannot_be)
{
    cr_assert_eq(warnings("{\"pp\": 2, \"memory\": {\"M_B\": 1, \"M_W\": "
                          "2.5}}", NULL, NULL, "M_W 2.5 is 2.50 M_B"), 1);
    cr_assert_eq(warnings("{\"pp\": 2, \"memory\": {\"M_B\": 1, \"M_W\": "
                          "1.33}}", NULL, NULL, NULL), 0);
}

/* ---- Jitter -------------------------------------------------------------- */

static void paper_schedule(const char *family, struct zb_schedule *s)
{
    struct zb_profile p;
    bool v = !strcmp(family, "zb-v") || !strcmp(family, "dualpipev");
    char json[256];

    snprintf(json, sizeof(json), "{\"pp\": 4, \"microbatches\": 8, %s"
             "\"time\": {\"F\": 18.5, \"B\": 18.1, \"W\": 9.3, \"comm\": "
             "0.6}}", v ? "\"vpp\": 2, \"placement\": \"v\", "
             : !strcmp(family, "interleaved") ? "\"vpp\": 2, " : "");
    profile_of(json, &p);
    gen(family, &p, s);
    zb_profile_release(&p);
}

Test(jitter, without_noise_the_replay_is_the_simulator)
{
    static const char *fam[] = { "1f1b", "zb-h1", "zb", "interleaved",
                                 "zb-v", "dualpipev" };
    struct zb_error err = { 0 };

    for (size_t i = 0; i < sizeof(fam) / sizeof(fam[0]); i++) {
        struct zb_schedule s;
        struct zb_jitter_result j;
        paper_schedule(fam[i], &s);
        cr_assert_eq(zb_jitter_run(&s, 0, NULL, 2, 1, &j, &err), 0, "%s",
                     err.msg);
        cr_assert_float_eq(j.exact.cost, s.predicted.cost, 1e-9, "%s",
                           fam[i]);
        cr_assert_float_eq(j.cost.p95, s.predicted.cost, 1e-9, "%s", fam[i]);
        cr_assert_float_eq(j.makespan.mean, s.predicted.makespan, 1e-9);
        zb_schedule_release(&s);
    }
}

Test(jitter, a_seed_gives_the_same_numbers_and_noise_costs_time)
{
    struct zb_schedule s;
    struct zb_jitter_result a, b, c;
    struct zb_error err = { 0 };

    paper_schedule("zb-h1", &s);
    cr_assert_eq(zb_jitter_run(&s, 0.1, NULL, 200, 7, &a, &err), 0, "%s",
                 err.msg);
    cr_assert_eq(zb_jitter_run(&s, 0.1, NULL, 200, 7, &b, &err), 0);
    cr_assert_eq(zb_jitter_run(&s, 0.1, NULL, 200, 8, &c, &err), 0);
    cr_assert(a.cost.mean == b.cost.mean && a.cost.p95 == b.cost.p95);
    cr_assert(a.cost.mean != c.cost.mean);
    /* the longest of several noisy paths is longer than the exact one */
    cr_assert_gt(a.cost.mean, a.exact.cost);
    cr_assert_geq(a.cost.p95, a.cost.p50);
    cr_assert_gt(a.bubble_ratio.mean, a.exact.bubble_ratio);
    zb_schedule_release(&s);
}

Test(jitter, lognormal_draws_have_the_asked_mean_and_cv)
{
    struct zb_rng g;
    double sum = 0, sq = 0;
    const int n = 200000;

    zb_rng_seed(&g, 42);
    for (int i = 0; i < n; i++) {
        double x = zb_rng_lognormal(&g, 10, 0.2);
        sum += x;
        sq += x * x;
    }
    sum /= n;
    cr_assert_float_eq(sum, 10, 0.02);
    cr_assert_float_eq(sqrt(sq / n - sum * sum) / sum, 0.2, 0.005);
}

Test(jitter, refuses_a_bad_cv_or_sample_count)
{
    struct zb_schedule s;
    struct zb_jitter_result j;
    struct zb_error err = { 0 };

    paper_schedule("1f1b", &s);
    cr_assert_eq(zb_jitter_run(&s, -0.1, NULL, 10, 1, &j, &err), ZB_EINVAL);
    cr_assert_eq(zb_jitter_run(&s, 0.1, NULL, 0, 1, &j, &err), ZB_EINVAL);
    zb_schedule_release(&s);
}

Test(jitter, a_measured_spread_gives_each_stage_its_own_cv)
{
    struct zb_schedule s;
    struct zb_measured m;
    struct zb_jitter_result a, b;
    struct zb_error err = { 0 };
    double cvs[12], same[12];

    paper_schedule("zb-h1", &s);
    zb_measured_init(&m);
    m.n = 4;
    m.t = calloc(4, sizeof(*m.t));
    /* log-normal with cv 0.1: sigma 0.09975, p90/p10 = e^(2 z90 sigma) */
    for (int st = 0; st < 4; st++)
        for (int k = 0; k < ZB_MEAS_KINDS; k++)
            m.t[st][k] = (struct zb_spread){ 10, 10 * exp(-1.2816 * 0.09975),
                                            10 * exp(1.2816 * 0.09975), 32 };
    m.t[2][ZB_MEAS_W].samples = 1;
    cr_assert_eq(zb_jitter_cvs(&m, &s.profile, cvs, &err), 0, "%s",
                 err.msg);
    cr_assert_float_eq(cvs[0], 0.1, 1e-4);
    cr_assert_eq(cvs[3 * 2 + 2], 0);
    for (int i = 0; i < 12; i++)
        same[i] = 0.1;
    cr_assert_eq(zb_jitter_run(&s, 0, same, 100, 3, &a, &err), 0);
    cr_assert_eq(zb_jitter_run(&s, 0.1, NULL, 100, 3, &b, &err), 0);
    cr_assert(a.cost.mean == b.cost.mean, "one cv everywhere is --jitter");
    cr_assert_eq(a.cv, -1);
    m.n = 3;
    cr_assert_eq(zb_jitter_cvs(&m, &s.profile, cvs, &err), ZB_EINVAL);
    zb_measured_release(&m);
    zb_schedule_release(&s);
}

Test(check_profile, time_ratios_far_from_the_flops_are_named)
{
    struct zb_profile p;
    struct zb_check c;
    /* h 4096, s 4096: B/F (24h + 8s) / (24h + 4s) = 1.143, W/F 0.857 */
    const struct zb_check_dims d = { 4096, 4096 };

    profile_of("{\"pp\": 2, \"time\": {\"F\": 10, \"B\": 11, \"W\": 8}}",
               &p);
    zb_check_init(&c);
    zb_check_profile(&p, NULL, NULL, &d, &c);
    cr_assert_eq(c.n, 0, "%s", c.n ? c.msg[0] : "");
    zb_profile_release(&p);
    profile_of("{\"pp\": 2, \"time\": {\"F\": 10, \"B\": 19, \"W\": "
               "0.5}}", &p);
    zb_check_profile(&p, NULL, NULL, &d, &c);
    cr_assert_eq(c.n, 4);   /* B holds W on each stage, then W/F */
    cr_assert(strstr(c.msg[2], "stage 0: W/F 0.05 where a transformer "
                     "layer's FLOPs (hidden 4096, sequence 4096) give 0.857"),
              "%s", c.msg[2]);
    zb_check_release(&c);
    zb_profile_release(&p);
}
