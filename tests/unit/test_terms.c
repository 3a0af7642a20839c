/* test_terms.c - names and numbers as users type them: the one decimal
 * number reader (units.h), "did you mean" (suggest.h) and PyTorch's
 * schedule names (zb_generator_lookup()). */
#include <criterion/criterion.h>
#include <string.h>
#include "zbsched/generator.h"
#include "zbsched/suggest.h"
#include "zbsched/units.h"

Test(terms, numbers_are_decimal_only)
{
    static const char *const good[] = { "12", "-1.5", "2e-3", ".5", "3.",
                                        "+4", "1E3" };
    static const double want[] = { 12, -1.5, 2e-3, .5, 3, 4, 1000 };
    static const char *const bad[] = { "", "0x10", "nan", "inf", "-inf",
                                       "1e999", "12abc", "1e", ".", "-",
                                       " 1", "1 " };
    double v;

    for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
        cr_assert_eq(zb_units_parse_number(good[i], &v), 0, "%s", good[i]);
        cr_assert_eq(v, want[i], "%s", good[i]);
    }
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        cr_assert_eq(zb_units_parse_number(bad[i], &v), -1, "'%s'", bad[i]);
}

Test(terms, sizes_refuse_hex_and_infinity)
{
    struct zb_error err = { 0 };
    double v;

    cr_assert_lt(zb_units_parse_size("--m-b", "0x10GiB", &v, &err), 0);
    cr_assert_lt(zb_units_parse_size("--m-b", "infGiB", &v, &err), 0);
    cr_assert_eq(zb_units_parse_size("--m-b", "2e0KiB", &v, &err), 0);
    cr_assert_eq(v, 2048);
}

Test(terms, suggestions_are_close_or_none)
{
    static const char *const names[] = { "mem-limit", "m-b", "m-w", NULL,
                                         "comm" };

    cr_assert_eq(zb_suggest_distance("mem-limt", "mem-limit"), 1);
    cr_assert_eq(zb_suggest_distance("mem-lmiit", "mem-limit"), 1);
    cr_assert_eq(zb_suggest_distance("Comm", "comm"), 0);
    cr_assert_str_eq(zb_suggest("mem-limt", names, 5), "mem-limit");
    cr_assert_str_eq(zb_suggest("Comm", names, 5), "comm");
    cr_assert_null(zb_suggest("frobnicate", names, 5));
    cr_assert_null(zb_suggest("xyz", names, 5));
}

Test(terms, pytorch_names_find_their_family)
{
    static const char *const pairs[][2] = {
        { "1F1B", "1f1b" }, { "GPipe", "gpipe" },
        { "Interleaved1F1B", "interleaved" },
        { "ScheduleInterleavedZeroBubble", "interleaved-zb" },
        { "zbvzerobubble", "zb-v" }, { "DualPipeV", "dualpipev" },
        { "ZB-H1", "zb-h1" },
    };
    struct zb_error err = { 0 };

    for (size_t i = 0; i < sizeof(pairs) / sizeof(pairs[0]); i++) {
        const struct zb_generator *g = zb_generator_lookup(pairs[i][0], &err);
        cr_assert_not_null(g, "%s: %s", pairs[i][0], err.msg);
        cr_assert_str_eq(g->name, pairs[i][1]);
    }
    cr_assert_null(zb_generator_lookup("LoopedBFS", &err));
    cr_assert(strstr(err.msg, "no zbsched family"), "%s", err.msg);
    cr_assert_null(zb_generator_lookup("dualpipe", &err));
    cr_assert_str_eq(err.msg, "unknown schedule 'dualpipe' (did you mean "
                              "'dualpipev'?)");
}
