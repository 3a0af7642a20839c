/* test_overlap.c - the overlapped F&B op (FB) through the simulator, the
 * validator, JSON, PyTorch CSV, and the dualpipev family that uses it. */
#include <string.h>
#include "helpers.h"
#include "zbsched/bound.h"
#include "zbsched/json.h"
#include "zbsched/torch.h"

static void v_profile(int p, int m, double m_w, struct zb_profile *prof)
{
    struct shape sh = unit_shape(p, m);
    sh.m_w = m_w;
    sh.vpp = 2;
    sh.placement = ZB_PLACEMENT_V;
    make_profile(&sh, prof);
}

/* p 1, m 2 in V: rank 0 holds stages 0 and 1. F0 of mb 1 overlaps the
 * backward of mb 0 on stage 1 (its own F came before). M_W = 0: a B frees
 * all its microbatch's memory. */
static void tiny(struct zb_schedule *s, double fb)
{
    struct zb_profile prof;
    struct zb_op fb_op = { .kind = ZB_OP_FB, .stage = 0, .mb = 1,
                           .b_stage = 1, .b_mb = 0, .peer = -1, .seq = -1 };
    v_profile(1, 2, 0, &prof);
    prof.fb = fb;
    zb_schedule_init(s, "t", &prof);
    zb_schedule_push(s, 0, ZB_OP_F, 0, 0);
    zb_schedule_push(s, 0, ZB_OP_F, 1, 0);
    zb_op_list_push(&s->ranks[0], &fb_op);
    zb_schedule_push(s, 0, ZB_OP_F, 1, 1);
    zb_schedule_push(s, 0, ZB_OP_B, 1, 1);
    zb_schedule_push(s, 0, ZB_OP_B, 0, 0);
    zb_schedule_push(s, 0, ZB_OP_B, 0, 1);
    for (int st = 1; st >= 0; st--)
        for (int mb = 0; mb < 2; mb++)
            zb_schedule_push(s, 0, ZB_OP_W, st, mb);
    zb_profile_release(&prof);
}

Test(overlap, sim_times_fb_as_one_op_and_peaks_after_its_f)
{
    struct zb_schedule s;
    struct zb_error err = { 0 };

    tiny(&s, 0);
    cr_assert_eq(zb_sim_run(&s, &err), 0, "%s", err.msg);
    /* F+B by default: 2; 12 units of work in all, no idle. */
    assert_near(s.ranks[0].ops[2].end - s.ranks[0].ops[2].start, 2, "fb");
    assert_near(s.predicted.cost, 12, "cost");
    /* F0 mb 0, F1 mb 0, then the FB's F: 3 before its B frees one; never
     * more than 2 after. */
    assert_near(s.predicted.ranks[0].peak_memory, 3, "peak");
    zb_schedule_release(&s);
    tiny(&s, 1.5);
    cr_assert_eq(zb_sim_run(&s, &err), 0, "%s", err.msg);
    assert_near(s.predicted.cost, 11.5, "cost with fb 1.5");
    zb_bound_set(&s);
    cr_assert_gt(s.predicted.lower_bound, 0);
    cr_assert_leq(s.predicted.lower_bound, s.predicted.cost);
    zb_schedule_release(&s);
}

Test(overlap, validator_checks_both_halves)
{
    struct zb_schedule s;
    struct zb_error err = { 0 };

    tiny(&s, 0);
    cr_assert_eq(zb_sim_run(&s, &err), 0, "%s", err.msg);
    cr_assert_eq(zb_lower_run(&s, &err), 0, "%s", err.msg);
    cr_assert_eq(zb_validate_schedule(&s, &err), 0, "%s", err.msg);
    /* Its B half before its input: the FB swapped with F stage 1 mb 0. */
    struct zb_op t = s.ranks[0].ops[1];
    s.ranks[0].ops[1] = s.ranks[0].ops[2];
    s.ranks[0].ops[2] = t;
    cr_assert_eq(zb_validate_order(&s, &err), ZB_EILLEGAL);
    cr_assert(strstr(err.msg, "FB stage 0 mb 1 + B stage 1 mb 0) comes "
                              "before its F stage 1 mb 0") != NULL,
              "%s", err.msg);
    /* Its B half again as a lone B: a duplicate. */
    s.ranks[0].ops[2] = s.ranks[0].ops[1];
    s.ranks[0].ops[1] = t;
    s.ranks[0].ops[4].kind = ZB_OP_B;
    s.ranks[0].ops[4].stage = 1;
    s.ranks[0].ops[4].mb = 0;
    cr_assert_eq(zb_validate_order(&s, &err), ZB_EILLEGAL);
    cr_assert(strstr(err.msg, "duplicates") != NULL, "%s", err.msg);
    zb_schedule_release(&s);
}

Test(overlap, json_and_torch_csv_round_trip)
{
    struct zb_profile prof;
    struct zb_schedule s, back;
    struct zb_torch_csv c;
    struct zb_error err = { 0 };
    char *text, *csv;
    int n = 0;

    v_profile(4, 8, 1, &prof);
    prof.fb = 1.5;
    gen("dualpipev", &prof, &s);
    text = zb_json_format_schedule(&s);
    cr_assert(strstr(text, "\"FB\": 1.5") != NULL);
    cr_assert(strstr(text, "{\"op\": \"FB\", \"stage\": 0, \"mb\": 7, "
                           "\"b_stage\": 7, \"b_mb\": 3,") != NULL);
    cr_assert_eq(zb_json_parse_schedule(text, &back, &err), 0, "%s",
                 err.msg);
    cr_assert_eq(zb_sim_run(&back, &err), 0, "%s", err.msg);
    zb_bound_set(&back);
    free(text);
    text = zb_json_format_schedule(&back);
    csv = zb_json_format_schedule(&s);
    cr_assert_str_eq(text, csv);
    free(text);
    free(csv);
    zb_schedule_release(&back);
    csv = zb_torch_csv_format(&s, ZB_TORCH_COMPUTE_ONLY);
    cr_assert(strstr(csv, "(0F7;7I3)OVERLAP_F_B") != NULL, "%s", csv);
    cr_assert_eq(zb_torch_csv_parse(csv, &c, &err), 0, "%s", err.msg);
    for (int r = 0; r < c.pp; r++)
        for (int i = 0; i < c.rows[r].n; i++)
            n += c.rows[r].ops[i].kind == ZB_OP_FB;
    for (int r = 0; r < s.profile.pp; r++)
        for (int i = 0; i < s.ranks[r].n; i++)
            n -= s.ranks[r].ops[i].kind == ZB_OP_FB;
    cr_assert_eq(n, 0, "FB ops lost or gained in the CSV");
    zb_torch_csv_release(&c);
    free(csv);
    zb_schedule_release(&s);
    zb_profile_release(&prof);
}

/* At unit times DualPipeV idles p-1 per rank (cost 6m + p - 1) within
 * 2p+1 chunk activations (the FB's F before its B frees), and refuses
 * m < 2p naming the smallest m. */
Test(overlap, dualpipev_bubble_peak_and_refusal)
{
    static const int ps[] = { 2, 3, 4, 8 };
    struct zb_profile prof;
    struct zb_schedule s;
    struct zb_error err = { 0 };

    for (int i = 0; i < 4; i++)
        for (int k = 2; k <= 4; k += 2) {
            int p = ps[i], m = k * p;
            v_profile(p, m, 1, &prof);
            gen("dualpipev", &prof, &s);
            assert_near(s.predicted.cost, 6.0 * m + p - 1, "p %d m %d", p,
                        m);
            assert_near(zb_measures_max_peak(&s.predicted, p), 2.0 * p + 1,
                        "p %d m %d", p, m);
            zb_schedule_release(&s);
            zb_profile_release(&prof);
        }
    v_profile(4, 7, 1, &prof);
    cr_assert_eq(zb_generator_run(zb_generator_find("dualpipev"), &prof,
                                  NULL, &s, &err), ZB_EUNSUPPORTED);
    cr_assert_str_eq(err.msg, "dualpipev needs at least 2p = 8 "
                              "microbatches, got 7");
    zb_profile_release(&prof);
}
