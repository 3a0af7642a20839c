/* test_stages.c - stages that differ in memory (M_B, M_W) and boundaries
 * that differ in comm: the profile format, the simulator and validator
 * counting each stage's own, every family's order within the real limits
 * (built on the uniform view), bounds that hold. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>
#include "helpers.h"
#include "zbsched/bound.h"
#include "zbsched/json.h"
#include "zbsched/profile_import.h"
#include "zbsched/timing.h"

/* Build a profile from JSON text; returns the build's code (err set). */
static int from_json(const char *text, struct zb_profile *p,
                     struct zb_error *err)
{
    struct zb_profile_draft d;
    int rc;

    zb_profile_draft_init(&d);
    rc = zb_json_parse_profile(text, &d, err);
    if (rc == 0)
        rc = zb_profile_build(&d, p, err);
    zb_profile_draft_release(&d);
    return rc;
}

static void must(const char *text, struct zb_profile *p)
{
    struct zb_error err = { 0 };
    cr_assert_eq(from_json(text, p, &err), 0, "%s", err.msg);
}

/* The error of a profile that must not build, in buf. */
static void fails(const char *text, const char *needle)
{
    struct zb_profile p;
    struct zb_error err = { 0 };
    cr_assert_neq(from_json(text, &p, &err), 0, "built: %s", text);
    cr_assert(strstr(err.msg, needle), "'%s' lacks '%s'", err.msg, needle);
}

#define HEAD "{\"pp\": 4, \"microbatches\": 8, " \
             "\"time\": {\"F\": 1, \"B\": 1, \"W\": 1, \"comm\": 0.1}, "

Test(stages, entries_override_memory_and_comm)
{
    struct zb_profile p;

    must(HEAD "\"stages\": [{\"F\": 1, \"B\": 1, \"W\": 1},"
         "{\"F\": 1, \"B\": 1, \"W\": 1, \"comm\": 0.5},"
         "{\"F\": 1, \"B\": 1, \"W\": 1},"
         "{\"F\": 2, \"B\": 2, \"W\": 2, \"M_B\": 3}],"
         "\"memory\": {\"M_B\": 1, \"M_W\": 0.5, \"limit\": 12}}", &p);
    cr_assert_not_null(p.stage_mem);
    cr_assert_not_null(p.stage_comm);
    cr_assert_eq(zb_profile_m_b(&p, 0), 1);
    cr_assert_eq(zb_profile_m_b(&p, 3), 3);
    /* A stage that names only its M_B keeps the common M_W / M_B. */
    cr_assert_eq(zb_profile_m_w(&p, 3), 1.5);
    cr_assert_eq(p.m_b, 3, "the largest");
    cr_assert_eq(zb_timing_comm(&p, 1, 2), 0.5);
    cr_assert_eq(zb_timing_comm(&p, 2, 1), 0.5, "gradients alike");
    cr_assert_eq(zb_timing_comm(&p, 0, 1), 0.1);
    cr_assert_eq(p.comm, 0.5, "the largest");
    cr_assert_eq(zb_profile_rank_microbatch(&p, 3), 3);
    cr_assert_eq(zb_profile_1f1b_peak(&p), 12);
    zb_profile_release(&p);
}

Test(stages, entries_that_agree_are_the_plain_profile)
{
    struct zb_profile p;

    must(HEAD "\"stages\": [{\"F\": 1, \"B\": 1, \"W\": 1, \"M_B\": 2},"
         "{\"F\": 1, \"B\": 1, \"W\": 1, \"M_B\": 2, \"comm\": 0.3},"
         "{\"F\": 1, \"B\": 1, \"W\": 1, \"M_B\": 2, \"comm\": 0.3},"
         "{\"F\": 1, \"B\": 1, \"W\": 1, \"M_B\": 2}],"
         "\"memory\": {\"M_B\": 1}}", &p);
    cr_assert_null(p.stage_mem);
    cr_assert_eq(p.m_b, 2);
    cr_assert_eq(p.m_w, 2);
    /* Entry 0 gives no comm: it takes the common 0.1, so they differ. */
    cr_assert_not_null(p.stage_comm);
    zb_profile_release(&p);
}

Test(stages, bad_entries_name_the_field)
{
    fails(HEAD "\"stages\": [{\"F\": 1, \"B\": 1, \"W\": 1, \"M_B\": -1},"
          "{\"F\": 1, \"B\": 1, \"W\": 1}, {\"F\": 1, \"B\": 1, \"W\": 1},"
          "{\"F\": 1, \"B\": 1, \"W\": 1}]}", "stages[0].M_B");
    fails(HEAD "\"stages\": [{\"F\": 1, \"B\": 1, \"W\": 1},"
          "{\"F\": 1, \"B\": 1, \"W\": 1, \"comm\": -2},"
          "{\"F\": 1, \"B\": 1, \"W\": 1}, {\"F\": 1, \"B\": 1, \"W\": 1}]}",
          "stages[1].comm");
    fails(HEAD "\"stages\": [{\"F\": 1, \"B\": 1, \"W\": 1},"
          "{\"F\": 1, \"B\": 1, \"W\": 1}, {\"F\": 1, \"B\": 1, \"W\": 1},"
          "{\"F\": 1, \"B\": 1, \"W\": 1, \"comm\": 1}]}", "last stage");
    fails(HEAD "\"stages\": [{\"F\": 1, \"B\": 1, \"W\": 1, \"M_B\": 2},"
          "{\"F\": 1, \"B\": 1, \"W\": 1}, {\"F\": 1, \"B\": 1, \"W\": 1},"
          "{\"F\": 1, \"B\": 1, \"W\": 1}], \"memory\": {\"M_B\": "
          "\"1GiB\"}}", "stages[0].M_B");
    fails(HEAD "\"stages\": [{\"F\": 1, \"B\": 1, \"W\": 1, \"MB\": 2},"
          "{\"F\": 1, \"B\": 1, \"W\": 1}, {\"F\": 1, \"B\": 1, \"W\": 1},"
          "{\"F\": 1, \"B\": 1, \"W\": 1}]}", "unknown key 'stages[0].MB'");
    /* Rank 3 holds a 5 GiB microbatch: a 4 GiB limit is too small. */
    fails(HEAD "\"stages\": [{\"F\": 1, \"B\": 1, \"W\": 1},"
          "{\"F\": 1, \"B\": 1, \"W\": 1}, {\"F\": 1, \"B\": 1, \"W\": 1},"
          "{\"F\": 1, \"B\": 1, \"W\": 1, \"M_B\": \"5GiB\"}], \"memory\": "
          "{\"M_B\": \"1GiB\", \"limit\": \"4GiB\"}}", "memory.limit");
}

Test(stages, sizes_on_every_stage_need_no_common_m_b)
{
    struct zb_profile p;

    must(HEAD "\"stages\": [{\"F\": 1, \"B\": 1, \"W\": 1, \"M_B\": \"1GiB\"},"
         "{\"F\": 1, \"B\": 1, \"W\": 1, \"M_B\": \"1GiB\"},"
         "{\"F\": 1, \"B\": 1, \"W\": 1, \"M_B\": \"1GiB\"},"
         "{\"F\": 1, \"B\": 1, \"W\": 1, \"M_B\": \"2GiB\", \"M_W\": 0}],"
         "\"memory\": {\"limit\": \"9GiB\"}}", &p);
    cr_assert(p.mem_gib);
    cr_assert_eq(zb_profile_m_b(&p, 3), 2);
    cr_assert_eq(zb_profile_m_w(&p, 3), 0);
    zb_profile_release(&p);
}

Test(stages, flags_override_the_entries)
{
    struct zb_profile_draft d;
    struct zb_profile p;
    struct zb_error err = { 0 };

    zb_profile_draft_init(&d);
    cr_assert_eq(zb_json_parse_profile(HEAD "\"stages\": ["
        "{\"F\": 1, \"B\": 1, \"W\": 1, \"M_B\": 4, \"comm\": 2},"
        "{\"F\": 1, \"B\": 1, \"W\": 1}, {\"F\": 1, \"B\": 1, \"W\": 1},"
        "{\"F\": 1, \"B\": 1, \"W\": 1}]}", &d, &err), 0, "%s", err.msg);
    cr_assert_eq(zb_profile_draft_set(&d, "m-b", "2", &err), 0);
    cr_assert_eq(zb_profile_draft_set(&d, "comm", "0.2", &err), 0);
    cr_assert_eq(zb_profile_build(&d, &p, &err), 0, "%s", err.msg);
    cr_assert_null(p.stage_mem);
    cr_assert_null(p.stage_comm);
    cr_assert_eq(p.m_b, 2);
    cr_assert_eq(p.comm, 0.2);
    zb_profile_release(&p);
    zb_profile_draft_release(&d);
}

/* A random profile whose last stage holds k times the others' memory
 * and whose boundaries differ, loop or V (vpp 0: 1 or 2 by seed under
 * loop), within `limit` times pp * vpp * k (INFINITY: none), and room
 * for a microbatch of each rank's stages. */
static void uneven(unsigned seed, enum zb_placement pl, int vpp, double k,
                   double limit, struct zb_profile *p)
{
    char text[4096], *at = text;
    int pp = 2 + seed % 3;
    int n;

    if (vpp == 0)
        vpp = pl == ZB_PLACEMENT_V ? 2 : 1 + seed % 2;
    n = pp * vpp;
    srand(seed);
    at += sprintf(at, "{\"pp\": %d, \"vpp\": %d, \"placement\": \"%s\", "
                  "\"microbatches\": %d, \"stages\": [", pp, vpp,
                  zb_placement_name(pl), 2 * pp + (int)(seed % 5));
    for (int s = 0; s < n; s++) {
        at += sprintf(at, "%s{\"F\": %g, \"B\": %g, \"W\": %g", s ? ", " : "",
                      0.5 + rand() % 100 / 50.0, 0.5 + rand() % 100 / 50.0,
                      0.2 + rand() % 100 / 80.0);
        if (s + 1 < n)
            at += sprintf(at, ", \"comm\": %g", rand() % 10 / 20.0);
        at += sprintf(at, ", \"M_B\": %g, \"M_W\": %g}",
                      s == n - 1 ? k : 1 + rand() % 4 / 8.0,
                      rand() % 6 / 8.0);
    }
    if (isfinite(limit))
        sprintf(at, "], \"memory\": {\"limit\": %g}}",
                fmax(limit * pp * vpp * k, 1.1 * vpp * fmax(k, 1.5)));
    else
        sprintf(at, "]}");
    must(text, p);
}

/* Sum of the real memory of a rank's compute ops at each op: the peak
 * the simulator must report, by a count independent of it. */
static double walk_peak(const struct zb_schedule *s, int r)
{
    const struct zb_profile *p = &s->profile;
    double mem = 0, peak = 0;

    for (int i = 0; i < s->ranks[r].n; i++) {
        const struct zb_op *op = &s->ranks[r].ops[i];
        if (!zb_op_is_compute(op->kind))
            continue;       /* a STEP names no stage */
        double m_b = zb_profile_m_b(p, op->stage);
        double m_w = zb_profile_m_w(p, op->stage);
        switch (op->kind) {
        case ZB_OP_F: mem += m_b; break;
        case ZB_OP_B: mem -= m_b - m_w; break;
        case ZB_OP_W: mem -= m_w; break;
        case ZB_OP_BW: mem -= m_b; break;
        default: break;
        }
        peak = fmax(peak, mem);
    }
    return peak;
}

/* Every family on `seeds` random profiles whose last stage holds k
 * times the others, within `limit` (uneven()): the order validates, fits
 * where the family reads the limit, the simulator's peaks are each
 * stage's own memory counted, and the lower bound is below the cost of
 * each that fits (a bound above one would be wrong). Returns how many
 * schedules were built. */
static int families_on_uneven(unsigned seeds, double k, double limit)
{
    static const char *const fams[] = { "1f1b", "zb-h1", "zb-h2", "zb",
                                        "interleaved", "zb-v", "v-half",
                                        "v-min", "interleaved-zb" };
    int built = 0;

    for (unsigned seed = 1; seed <= seeds; seed++)
        for (size_t f = 0; f < sizeof(fams) / sizeof(fams[0]); f++) {
            const struct zb_generator *g = zb_generator_find(fams[f]);
            enum zb_placement pl = g->shape_vpp ? g->shape_placement
                                 : ZB_PLACEMENT_LOOP;
            struct zb_profile p;
            struct zb_schedule s;
            struct zb_error err = { 0 };

            uneven(seed, pl, g->shape_vpp, k, limit, &p);
            if (zb_generator_accepts(g, &p, &err) < 0 ||
                zb_generator_run(g, &p, NULL, &s, &err) < 0) {
                zb_profile_release(&p);
                continue;   /* a shape or limit it cannot serve */
            }
            built++;
            cr_assert_eq(zb_validate_order(&s, &err), 0, "%s: %s",
                         fams[f], err.msg);
            cr_assert(zb_profile_equal(&s.profile, &p), "%s", fams[f]);
            for (int r = 0; r < p.pp; r++) {
                if (s.profile.fb > 0)
                    break;
                cr_assert_float_eq(s.predicted.ranks[r].peak_memory,
                                   walk_peak(&s, r), 1e-9, "%s seed %u "
                                   "rank %d", fams[f], seed, r);
            }
            if (g->memory_aware)
                cr_assert(s.predicted.fits_memory, "%s seed %u", fams[f],
                          seed);
            /* The bound is over the schedules within the limits. */
            if (s.predicted.fits_memory)
                cr_assert_leq(s.predicted.lower_bound,
                              s.predicted.cost * (1 + 1e-9), "%s seed %u: "
                              "bound %g above the cost %g", fams[f], seed,
                              s.predicted.lower_bound, s.predicted.cost);
            zb_schedule_release(&s);
            zb_profile_release(&p);
        }
    return built;
}

Test(stages, every_family_fits_the_real_limits_and_measures_them)
{
    int built = families_on_uneven(10, 3, 0.6);

    cr_assert_geq(built, 60, "only %d schedules built", built);
}

/* Tight limits, where the bound's memory sections bind. */
Test(stages, the_bound_holds_at_tight_memory)
{
    int built = families_on_uneven(30, 2, 0.4) +
                families_on_uneven(30, 4, 0.3);

    cr_assert_geq(built, 200, "only %d schedules built", built);
}

Test(stages, the_validator_counts_each_stages_memory)
{
    struct zb_profile p;
    struct zb_schedule s;
    struct zb_error err = { 0 };

    uneven(3, ZB_PLACEMENT_LOOP, 1, 3, INFINITY, &p);
    gen("gpipe", &p, &s);
    /* GPipe holds every microbatch of the last stage at once. */
    s.profile.mem_limit[p.pp - 1] = walk_peak(&s, p.pp - 1) * 0.99;
    cr_assert_eq(zb_validate_schedule(&s, &err), ZB_ENOMEM_LIMIT, "%s",
                 err.msg);
    s.profile.mem_limit[p.pp - 1] = walk_peak(&s, p.pp - 1);
    cr_assert_eq(zb_validate_schedule(&s, &err), 0, "%s", err.msg);
    zb_schedule_release(&s);
    zb_profile_release(&p);
}

Test(stages, each_boundary_takes_its_own_comm)
{
    for (unsigned seed = 1; seed <= 8; seed++) {
        struct zb_profile p, q;
        struct zb_schedule s, t;
        struct zb_error err = { 0 };
        int n;

        uneven(seed, ZB_PLACEMENT_LOOP, 1, 1, INFINITY, &p);
        gen("1f1b", &p, &s);
        /* The same order with every boundary at the slowest one's. */
        zb_profile_copy(&q, &p);
        n = zb_profile_stages(&q);
        for (int b = 0; q.stage_comm && b + 1 < n; b++)
            q.stage_comm[b] = q.comm;
        gen("1f1b", &q, &t);
        cr_assert_leq(s.predicted.cost, t.predicted.cost * (1 + 1e-12),
                      "faster links never slow a fixed order (seed %u)",
                      seed);
        cr_assert_geq(s.predicted.lower_bound, 0);
        cr_assert_leq(s.predicted.lower_bound,
                      s.predicted.cost * (1 + 1e-9));
        cr_assert_eq(zb_validate_order(&s, &err), 0, "%s", err.msg);
        zb_schedule_release(&s);
        zb_schedule_release(&t);
        zb_profile_release(&q);
        zb_profile_release(&p);
    }
}

Test(stages, the_schedule_file_round_trips)
{
    struct zb_profile p;
    struct zb_schedule s, back;
    struct zb_error err = { 0 };
    char *text;

    uneven(5, ZB_PLACEMENT_V, 2, 2.5, 0.7, &p);
    gen("zb-v", &p, &s);
    text = zb_json_format_schedule(&s);
    cr_assert_eq(zb_json_parse_schedule(text, &back, &err), 0, "%s",
                 err.msg);
    cr_assert(zb_profile_equal(&back.profile, &s.profile));
    cr_assert_eq(zb_sim_run(&back, &err), 0, "%s", err.msg);
    cr_assert_float_eq(back.predicted.cost, s.predicted.cost, 1e-12);
    free(text);
    zb_schedule_release(&back);
    zb_schedule_release(&s);
    zb_profile_release(&p);
}


Test(stages, check_profile_weighs_each_stages_m_w_against_its_m_b)
{
    struct zb_profile p;
    struct zb_check c;

    /* Stage 3's M_W (2.5) is under the largest M_B (3, stage 1) but 5
     * times its own M_B. */
    must(HEAD "\"stages\": [{\"F\": 1, \"B\": 1, \"W\": 1},"
         "{\"F\": 1, \"B\": 1, \"W\": 1, \"M_B\": 3},"
         "{\"F\": 1, \"B\": 1, \"W\": 1},"
         "{\"F\": 1, \"B\": 1, \"W\": 1, \"M_B\": 0.5, \"M_W\": 2.5}],"
         "\"memory\": {\"M_B\": 1, \"M_W\": 0.5}}", &p);
    zb_check_init(&c);
    zb_check_profile(&p, NULL, NULL, NULL, &c);
    bool found = false;
    for (int i = 0; i < c.n; i++)
        found |= strstr(c.msg[i], "stage 3: M_W 2.5 is 5.00 M_B") != NULL;
    cr_assert(found, "no warning on stage 3 (%d warnings)", c.n);
    zb_check_release(&c);
    zb_profile_release(&p);
}
