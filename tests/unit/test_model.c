/* test_model.c - the model JSON reader (model.h): count expansion of
 * {i} names, defaults, and an error naming the field for every kind of
 * bad input. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>
#include "zbsched/model.h"

#define LAYER(extra) "{\"name\": \"layers.{i}\", \"count\": 3, \"kind\": " \
    "\"layer\", \"F\": 1, \"B\": 1, \"W\": 1, \"act_bytes\": 10, " \
    "\"act_w_bytes\": 5, \"params\": 100, \"out_bytes\": 2" extra "}"
#define EMB "{\"name\": \"emb\", \"kind\": \"embedding\", \"F\": 0.1, " \
    "\"B\": 0, \"W\": 0.2, \"act_bytes\": 1, \"act_w_bytes\": 0, " \
    "\"params\": 50, \"out_bytes\": 2}"
#define HEAD "{\"name\": \"output\", \"kind\": \"head\", \"F\": 2, " \
    "\"B\": 2, \"W\": 2, \"act_bytes\": \"1KiB\", \"act_w_bytes\": 4, " \
    "\"params\": 50, \"out_bytes\": 0}"
#define MODEL(head, layers) "{\"format\": \"zbsched-model\", " \
    "\"version\": 1, \"name\": \"t\", " head "\"layers\": [" layers "]}"
#define GOOD MODEL("\"time_unit\": \"ms\", ", EMB ", " LAYER("") ", " HEAD)

static void parse_ok(const char *text, struct zb_model *m)
{
    struct zb_error err = { 0 };

    cr_assert_eq(zb_model_parse(text, m, &err), 0, "%s", err.msg);
}

/* text must fail with a message containing want. */
static void parse_bad(const char *text, const char *want)
{
    struct zb_model m;
    struct zb_error err = { 0 };

    cr_assert_lt(zb_model_parse(text, &m, &err), 0, "accepted: %s", text);
    cr_assert(strstr(err.msg, want), "message '%s' lacks '%s'", err.msg,
              want);
    cr_assert_null(strchr(err.msg, '\n'));
}

Test(model, count_expands_i_in_names)
{
    struct zb_model m;

    parse_ok(GOOD, &m);
    cr_assert_eq(m.n, 5);
    cr_assert_str_eq(m.layers[0].name, "emb");
    cr_assert_str_eq(m.layers[1].name, "layers.0");
    cr_assert_str_eq(m.layers[3].name, "layers.2");
    cr_assert_eq(m.layers[3].kind, ZB_LAYER_LAYER);
    cr_assert_eq(m.layers[4].kind, ZB_LAYER_HEAD);
    cr_assert_eq(m.layers[4].act_bytes, 1024, "sizes take units");
    cr_assert_eq(m.time_unit, ZB_TIME_MS);
    cr_assert_eq(zb_model_work(&m, 2), 3);
    zb_model_release(&m);
}

Test(model, state_bytes_default_to_mixed_precision_adam)
{
    struct zb_model m;

    parse_ok(GOOD, &m);
    cr_assert_eq(m.bytes_weight, 2);
    cr_assert_eq(m.bytes_grad, 4);
    cr_assert_eq(m.bytes_optim, 12);
    zb_model_release(&m);
    parse_ok(MODEL("\"time_unit\": \"us\", \"state_bytes\": {\"grads\": 2},",
                   EMB), &m);
    cr_assert_eq(m.bytes_grad, 2);
    cr_assert_eq(m.bytes_optim, 12);
    cr_assert_eq(m.time_unit, ZB_TIME_US);
    zb_model_release(&m);
}

Test(model, a_negative_time_names_the_entry)
{
    parse_bad(MODEL("\"time_unit\": \"ms\", ", EMB ", " LAYER(", \"X\": 0")),
              "unknown key 'layers[1].X'");
    parse_bad(MODEL("\"time_unit\": \"ms\", ", EMB ", "
                    "{\"name\": \"a\", \"kind\": \"layer\", \"F\": -1, "
                    "\"B\": 1, \"W\": 1, \"act_bytes\": 1, \"act_w_bytes\": "
                    "0, \"params\": 1, \"out_bytes\": 1}"),
              "layers[1].F must be >= 0, got -1");
}

Test(model, strict_about_keys_types_and_counts)
{
    parse_bad("{", "malformed JSON");
    parse_bad(MODEL("\"time_unit\": \"min\", ", EMB),
              "time_unit must be us, ms or s, got 'min'");
    parse_bad(MODEL("", EMB), "time_unit is missing");
    parse_bad("{\"format\": \"x\", \"time_unit\": \"ms\", \"layers\": []}",
              "format must be");
    parse_bad(MODEL("\"time_unit\": \"ms\", \"time_unit\": \"ms\", ", EMB),
              "key 'time_unit' appears twice in one object");
    parse_bad(MODEL("\"time_unit\": \"ms\", \"extra\": 1, ", EMB),
              "unknown key 'extra'");
    parse_bad(MODEL("\"time_unit\": \"ms\", ", ""), "layers must be a "
              "non-empty array");
    parse_bad(MODEL("\"time_unit\": \"ms\", ",
                    "{\"name\": \"a\", \"kind\": \"layer\", \"F\": \"1\", "
                    "\"B\": 1, \"W\": 1, \"act_bytes\": 1, \"act_w_bytes\": "
                    "0, \"params\": 1, \"out_bytes\": 1}"),
              "layers[0].F must be a number");
    parse_bad(MODEL("\"time_unit\": \"ms\", ",
                    "{\"name\": \"a\", \"kind\": \"block\", \"F\": 1, "
                    "\"B\": 1, \"W\": 1, \"act_bytes\": 1, \"act_w_bytes\": "
                    "0, \"params\": 1, \"out_bytes\": 1}"),
              "layers[0].kind must be embedding, layer, mtp, head or other");
    parse_bad(MODEL("\"time_unit\": \"ms\", ",
                    "{\"name\": \"a\", \"kind\": \"layer\", \"F\": 1, "
                    "\"B\": 1, \"W\": 1, \"act_bytes\": 1, \"params\": 1, "
                    "\"out_bytes\": 1}"),
              "layers[0].act_w_bytes is missing");
    parse_bad(MODEL("\"time_unit\": \"ms\", ",
                    "{\"name\": \"a\", \"count\": 2, \"kind\": \"layer\", "
                    "\"F\": 1, \"B\": 1, \"W\": 1, \"act_bytes\": 1, "
                    "\"act_w_bytes\": 0, \"params\": 1, \"out_bytes\": 1}"),
              "layers[0].name 'a' needs {i} with count 2");
    parse_bad(MODEL("\"time_unit\": \"ms\", ",
                    "{\"name\": \"a{i}\", \"kind\": \"layer\", \"F\": 1, "
                    "\"B\": 1, \"W\": 1, \"act_bytes\": 1, \"act_w_bytes\": "
                    "0, \"params\": 1, \"out_bytes\": 1}"),
              "has {i} but the entry has no count");
    parse_bad(MODEL("\"time_unit\": \"ms\", ", LAYER(", \"count\": 0")),
              "key 'layers[0].count' appears twice in one object");
    parse_bad(MODEL("\"time_unit\": \"ms\", ",
                    "{\"name\": \"a{i}\", \"count\": 0.5, \"kind\": "
                    "\"layer\", \"F\": 1, \"B\": 1, \"W\": 1, \"act_bytes\": "
                    "1, \"act_w_bytes\": 0, \"params\": 1, \"out_bytes\": 1}"),
              "layers[0].count must be an integer");
    parse_bad(MODEL("\"time_unit\": \"ms\", ",
                    "{\"name\": \"a\", \"kind\": \"layer\", \"F\": 1, "
                    "\"B\": 1, \"W\": 1, \"act_bytes\": 1, \"act_w_bytes\": "
                    "2, \"params\": 1, \"out_bytes\": 1}"),
              "layers[0].act_w_bytes (2) must be <= act_bytes (1)");
    parse_bad(MODEL("\"time_unit\": \"ms\", ", EMB ", " EMB),
              "layer name 'emb' is given twice");
    parse_bad(MODEL("\"time_unit\": \"ms\", ",
                    "{\"name\": \"a\", \"kind\": \"layer\", \"F\": 1, "
                    "\"B\": 1, \"W\": 1, \"act_bytes\": \"1GX\", "
                    "\"act_w_bytes\": 0, \"params\": 1, \"out_bytes\": 1}"),
              "layers[0].act_bytes: '1GX' is not a size");
}
