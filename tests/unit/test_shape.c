/* test_shape.c - a family's own shape (placement, vpp) where the user
 * gives none, the one-line conflicts, and the model units that make
 * shapes comparable: "1p" is 1F1B's memory and a per-rank profile is the
 * same model whatever the chunking. */
#include <string.h>
#include "helpers.h"
#include "zbsched/json.h"

/* Draft from flags ("name=value" strings), built in family name's shape;
 * returns zb_generator_profile()'s status. */
static int shaped(const char *name, const char *const *flags,
                  struct zb_profile *out, struct zb_error *err)
{
    struct zb_profile_draft d;
    int rc = 0;

    zb_profile_draft_init(&d);
    for (int i = 0; rc == 0 && flags[i]; i++) {
        char key[32];
        const char *eq = strchr(flags[i], '=');
        snprintf(key, sizeof(key), "%.*s", (int)(eq - flags[i]), flags[i]);
        rc = zb_profile_draft_set(&d, key, eq + 1, err);
    }
    if (rc == 0)
        rc = zb_generator_profile(zb_generator_find(name), &d, out, err);
    zb_profile_draft_release(&d);
    return rc;
}

static void assert_shape(const char *name, const char *const *flags,
                         enum zb_placement pl, int vpp)
{
    struct zb_profile p;
    struct zb_error err = { 0 };

    cr_assert_eq(shaped(name, flags, &p, &err), 0, "%s: %s", name, err.msg);
    cr_assert_eq(p.placement, pl, "%s placement", name);
    cr_assert_eq(p.vpp, vpp, "%s vpp", name);
    zb_profile_release(&p);
}

static void assert_conflict(const char *name, const char *const *flags,
                            const char *expect)
{
    struct zb_profile p = { 0 };
    struct zb_error err = { 0 };

    cr_assert_eq(shaped(name, flags, &p, &err), ZB_EUNSUPPORTED,
                 "%s accepted %s", name, flags[0]);
    cr_assert_str_eq(err.msg, expect);
}

Test(shape, a_family_sets_its_shape_unless_given)
{
    static const char *const none[] = { "pp=4", NULL };
    static const char *const vpp4[] = { "vpp=4", NULL };
    static const char *const v[] = { "placement=v", NULL };
    static const char *const vpp2[] = { "vpp=2", NULL };

    assert_shape("zb-v", none, ZB_PLACEMENT_V, 2);
    assert_shape("interleaved", none, ZB_PLACEMENT_LOOP, 2);
    assert_shape("interleaved-zb", none, ZB_PLACEMENT_LOOP, 2);
    assert_shape("1f1b", none, ZB_PLACEMENT_LOOP, 1);
    assert_shape("zb", none, ZB_PLACEMENT_LOOP, 1);
    assert_shape("interleaved", vpp4, ZB_PLACEMENT_LOOP, 4);
    assert_shape("zb-v", v, ZB_PLACEMENT_V, 2);
    assert_shape("zb-v", vpp2, ZB_PLACEMENT_V, 2);
    assert_shape("zb", v, ZB_PLACEMENT_V, 2);
    assert_shape("zb", vpp2, ZB_PLACEMENT_LOOP, 2);
}

Test(shape, an_explicit_value_the_family_cannot_serve_names_both)
{
    static const char *const loop[] = { "placement=loop", NULL };
    static const char *const vpp3[] = { "vpp=3", NULL };
    static const char *const vpp1[] = { "vpp=1", NULL };
    static const char *const v[] = { "placement=v", NULL };

    assert_conflict("zb-v", loop, "zb-v needs placement 'v', got 'loop'");
    assert_conflict("zb-v", vpp3, "zb-v needs vpp = 2, got 3");
    assert_conflict("interleaved", vpp1,
                    "interleaved needs vpp between 2 and 64, got 1");
    assert_conflict("interleaved-zb", v,
                    "interleaved-zb needs placement 'loop', got 'v'");
    assert_conflict("zb-h1", vpp3, "zb-h1 needs vpp = 1, got 3");
}

/* The papers' claim in this tool's units: ZB-V at 1F1B's memory ("1p")
 * has no bubble at unit times once m >= 2p, and its peak is 1F1B's. */
Test(shape, zb_v_fits_at_1p_with_unit_times)
{
    static const int ps[] = { 2, 4, 8 };

    for (size_t i = 0; i < sizeof(ps) / sizeof(ps[0]); i++) {
        char pp[16], mb[16];
        const char *flags[] = { pp, mb, "mem-limit=1p", NULL };
        struct zb_profile p;
        struct zb_schedule s;
        struct zb_error err = { 0 };

        snprintf(pp, sizeof(pp), "pp=%d", ps[i]);
        snprintf(mb, sizeof(mb), "mb=%d", 4 * ps[i]);
        cr_assert_eq(shaped("zb-v", flags, &p, &err), 0, "%s", err.msg);
        gen("zb-v", &p, &s);
        cr_assert(s.predicted.fits_memory, "p %d: zb-v over 1p", ps[i]);
        assert_near(zb_measures_max_peak(&s.predicted, p.pp),
                    zb_profile_1f1b_peak(&p), "p %d: peak is 1F1B's", ps[i]);
        assert_near(s.predicted.bubble_ratio, 0, "p %d: no bubble", ps[i]);
        zb_schedule_release(&s);
        zb_profile_release(&p);
    }
}

/* A per-rank profile and its per-chunk spelling are one profile: every
 * family makes the same schedule from them, byte for byte. */
Test(shape, per_rank_and_per_chunk_profiles_give_the_same_schedule)
{
    static const char *const rank[] = {
        "pp=4", "vpp=2", "mb=8", "per=rank", "f=2", "b=2.4", "w=1.6",
        "comm=0.05", "m-b=1", "m-w=0.5", "mem-limit=1p", NULL };
    static const char *const chunk[] = {
        "pp=4", "vpp=2", "mb=8", "f=1", "b=1.2", "w=0.8", "comm=0.05",
        "m-b=0.5", "m-w=0.25", "mem-limit=4", NULL };
    static const char *const families[] = { "zb-v", "interleaved",
                                            "interleaved-zb", "zb" };

    for (size_t i = 0; i < sizeof(families) / sizeof(families[0]); i++) {
        struct zb_profile pr, pc;
        struct zb_schedule sr, sc;
        struct zb_error err = { 0 };
        char *jr, *jc;

        cr_assert_eq(shaped(families[i], rank, &pr, &err), 0, "%s", err.msg);
        cr_assert_eq(shaped(families[i], chunk, &pc, &err), 0, "%s",
                     err.msg);
        gen(families[i], &pr, &sr);
        gen(families[i], &pc, &sc);
        jr = zb_json_format_schedule(&sr);
        jc = zb_json_format_schedule(&sc);
        cr_assert_str_eq(jr, jc, "%s: per rank and per chunk differ",
                         families[i]);
        free(jr);
        free(jc);
        zb_schedule_release(&sr);
        zb_schedule_release(&sc);
        zb_profile_release(&pr);
        zb_profile_release(&pc);
    }
}
