/* test_json.c - schedule JSON: what is written reads back to the same
 * schedule, integers and times are spelled as printf spells them, and bad
 * files are refused with a reason. */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "helpers.h"
#include "zbsched/json.h"
#include "../src/strbuf.h"

static void assert_same(const struct zb_schedule *a,
                        const struct zb_schedule *b)
{
    cr_assert_str_eq(a->name, b->name);
    cr_assert_eq(a->profile.pp, b->profile.pp);
    for (int r = 0; r < a->profile.pp; r++) {
        cr_assert_eq(a->ranks[r].n, b->ranks[r].n, "rank %d length", r);
        for (int i = 0; i < a->ranks[r].n; i++) {
            const struct zb_op *x = &a->ranks[r].ops[i];
            const struct zb_op *y = &b->ranks[r].ops[i];
            cr_assert(x->kind == y->kind && x->stage == y->stage &&
                      x->mb == y->mb && x->peer == y->peer &&
                      x->start == y->start && x->end == y->end,
                      "rank %d op %d differs", r, i);
        }
    }
}

Test(json, schedules_round_trip_exactly)
{
    struct shape sh = { 4, 2, 8, ZB_PLACEMENT_V, 1, 1.2, 0.8, 0.05, 1, 0.5,
                        INFINITY };
    struct zb_profile p;
    struct zb_schedule s, back;
    struct zb_error err = { 0 };
    char *text;

    make_profile(&sh, &p);
    p.stage[3].f = 1.7;        /* per-stage times must survive too */
    p.mem_limit[1] = 12;
    gen("zb-v", &p, &s);
    text = zb_json_format_schedule(&s);
    cr_assert_eq(zb_json_parse_schedule(text, &back, &err), 0, "%s",
                 err.msg);
    assert_same(&s, &back);
    assert_near(back.profile.stage[3].f, 1.7, "stage time");
    assert_near(back.profile.mem_limit[1], 12, "rank limit");
    cr_assert(isinf(back.profile.mem_limit[0]));
    cr_assert_eq(zb_validate_schedule(&back, &err), 0, "%s", err.msg);
    cr_assert_eq(zb_sim_run(&back, &err), 0, "%s", err.msg);
    assert_near(back.predicted.cost, s.predicted.cost, "cost");
    free(text);
    zb_schedule_release(&back);
    zb_schedule_release(&s);
    zb_profile_release(&p);
}

/* The writers' own integer spelling (zbi_sb_add_int()) is printf's "%d". */
Test(json, integers_are_spelled_as_printf_spells_them)
{
    const int vals[] = { 0, 7, -7, 10, -10, 123456789, INT_MAX, INT_MIN };
    struct strbuf sb;
    char want[256] = "";

    zbi_sb_init(&sb);
    for (size_t i = 0; i < sizeof(vals) / sizeof(vals[0]); i++) {
        zbi_sb_add_int(&sb, vals[i]);
        zbi_sb_add(&sb, " ");
        snprintf(want + strlen(want), sizeof(want) - strlen(want), "%d ",
                 vals[i]);
    }
    cr_assert_str_eq(sb.buf, want);
    cr_assert_eq(sb.len, strlen(want));
    zbi_sb_release(&sb);
}

/* Times (zbi_sb_add_num()): whole numbers below 1e15 as "%.15g" spells them
 * (the fast path), the rest by "%.15g" or, where that does not read back
 * to the same double, "%.17g"; -0 as 0. */
Test(json, numbers_are_spelled_as_printf_spells_them)
{
    const double vals[] = { 0, -0.0, 1, -1, 6163, 10408, 1e14,
                            999999999999999, -999999999999999, 1e15, 1e16,
                            2.5, 0.1, 1.0 / 3, 123456.75, 1e-7,
                            -4503599627370497.0 };
    struct strbuf sb;
    char want[1024] = "";

    zbi_sb_init(&sb);
    for (size_t i = 0; i < sizeof(vals) / sizeof(vals[0]); i++) {
        char tmp[32];
        double v = vals[i] == 0 ? 0 : vals[i];
        zbi_sb_add_num(&sb, vals[i]);
        zbi_sb_add(&sb, " ");
        snprintf(tmp, sizeof(tmp), "%.15g", v);
        if (strtod(tmp, NULL) != v)
            snprintf(tmp, sizeof(tmp), "%.17g", v);
        snprintf(want + strlen(want), sizeof(want) - strlen(want), "%s ",
                 tmp);
    }
    cr_assert_str_eq(sb.buf, want);
    zbi_sb_release(&sb);
}

static void assert_refused(const char *text, const char *expect)
{
    struct zb_schedule s;
    struct zb_error err = { 0 };
    cr_assert_lt(zb_json_parse_schedule(text, &s, &err), 0);
    cr_assert(strstr(err.msg, expect), "'%s' lacks '%s'", err.msg, expect);
}

Test(json, refuses_unknown_ops_and_foreign_files)
{
    const char *head = "{\"format\": \"zbsched-schedule\", \"version\": 1, "
                       "\"profile\": {\"pp\": 1, \"microbatches\": 1}, "
                       "\"ranks\": [{\"rank\": 0, \"ops\": [";
    char text[512];

    snprintf(text, sizeof(text), "%s{\"op\": \"ALLREDUCE\"}]}]}", head);
    assert_refused(text, "rank 0 op 0: unknown op 'ALLREDUCE'");
    snprintf(text, sizeof(text), "%s{\"op\": \"F\", \"stage\": 0}]}]}", head);
    assert_refused(text, "\"stage\" and \"mb\" must be integers");
    assert_refused("{\"pp\": 4}", "not a schedule");
    assert_refused("{\"format\": \"zbsched-schedule\", \"version\": 2}",
                   "unsupported schedule version");
    assert_refused("{\"format\": \"zbsched-schedule\", \"version\": 1, "
                   "\"profile\": {\"pp\": -1}}",
                   "profile: pp must be an integer >= 1, got -1");
}
