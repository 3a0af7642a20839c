/* test_split.c - the layer-split planner (split.h): the candidate splits
 * against brute force, the Megatron layout round trip, the re-timing and
 * the memory replay against the simulator, and zb_plan_run()'s promises
 * (bound <= cost, bound >= total work / p, never worse than the even
 * split where it fits, errors naming the problem). */
#include <stdio.h>
#include <string.h>
#include "helpers.h"
#include "split/split_int.h"
#include "zbsched/memory_model.h"
#include "zbsched/op.h"
#include "zbsched/split.h"

#define GIB 1073741824.0

/* A model: an embedding, nb blocks of work f+b+w = 3 (times scaled by
 * jitter[i] when given), an MTP layer when mtp, and a head group (norm,
 * output of weight `head`). Bytes: act bytes each block, logits on the
 * output. */
static void make_model(int nb, double head, bool mtp, const double *jitter,
                       double act, struct zb_model *m)
{
    char *buf = malloc(200000), *o = buf;
    struct zb_error err = { 0 };

    o += sprintf(o, "{\"format\": \"zbsched-model\", \"name\": \"t\", "
                 "\"time_unit\": \"ms\", \"layers\": [{\"name\": \"emb\", "
                 "\"kind\": \"embedding\", \"F\": 0.01, \"B\": 0, \"W\": "
                 "0.02, \"act_bytes\": 1e3, \"act_w_bytes\": 1e3, "
                 "\"params\": 5e8, \"out_bytes\": 3e7}");
    for (int i = 0; i < nb; i++) {
        double j = jitter ? jitter[i] : 1;
        o += sprintf(o, ", {\"name\": \"layers.%d\", \"kind\": \"layer\", "
                     "\"F\": %.6f, \"B\": %.6f, \"W\": %.6f, \"act_bytes\": "
                     "%g, \"act_w_bytes\": %g, \"params\": 2e8, "
                     "\"out_bytes\": 3e7}", i, j, 1.1 * j, 0.9 * j, act,
                     0.9 * act);
    }
    if (mtp)
        o += sprintf(o, ", {\"name\": \"mtp\", \"kind\": \"mtp\", \"F\": 2, "
                     "\"B\": 2, \"W\": 2, \"act_bytes\": %g, \"act_w_bytes\":"
                     " %g, \"params\": 3e8, \"out_bytes\": 3e7}", act, act);
    o += sprintf(o, ", {\"name\": \"norm\", \"kind\": \"head\", \"F\": 0.01, "
                 "\"B\": 0.01, \"W\": 0, \"act_bytes\": 3e7, \"act_w_bytes\":"
                 " 3e7, \"params\": 4096, \"out_bytes\": 3e7}, {\"name\": "
                 "\"output\", \"kind\": \"head\", \"F\": %g, \"B\": %g, "
                 "\"W\": %g, \"act_bytes\": 2e9, \"act_w_bytes\": 1e9, "
                 "\"params\": 5e8, \"out_bytes\": 0}]}", head / 3, head / 3,
                 head / 3);
    cr_assert_eq(zb_model_parse(buf, m, &err), 0, "%s", err.msg);
    free(buf);
}

static struct zb_plan_request request(int pp, int mb, double gib)
{
    struct zb_plan_request rq;

    zb_plan_request_init(&rq);
    rq.pp = pp;
    rq.microbatches = mb;
    rq.gpu_mem = gib * GIB;
    rq.link = (struct zb_link){ .bandwidth = 5e10, .latency = 1e-5 };
    rq.effort = 0.01;
    return rq;
}

/* Ops of kind k in a schedule's lists. */
static int count_ops(const struct zb_schedule *s, enum zb_op_kind k)
{
    int n = 0;

    for (int r = 0; r < s->profile.pp; r++)
        for (int i = 0; i < s->ranks[r].n; i++)
            n += s->ranks[r].ops[i].kind == k;
    return n;
}

Test(split, even_is_torchtitans_default)
{
    struct zb_model m;
    int k[8];

    make_model(32, 6, false, NULL, 1e8, &m);
    cr_assert_eq(zbi_split_even(&m, 8, k), 0);
    /* 32 blocks + 2 = 34 units: 5 5 4 4 4 4 4 4, the first and last one
     * block fewer, plus the embedding and the head group (2 layers). */
    int want[8] = { 5, 5, 4, 4, 4, 4, 4, 5 };
    for (int s = 0; s < 8; s++)
        cr_assert_eq(k[s], want[s], "stage %d: %d", s, k[s]);
    zb_model_release(&m);
}

/* The least max stage work over every split into n stages that cut no
 * head group, by enumeration. */
static double brute(const struct zb_model *m, int n, int at, double worst)
{
    double best = INFINITY, w = 0;

    if (n == 1) {
        for (int i = at; i < m->n; i++)
            w += zb_model_work(m, i);
        return fmax(worst, w);
    }
    for (int e = at; e < m->n - (n - 1); e++) {
        w += zb_model_work(m, e);
        if (zbi_split_cut_ok(m, e + 1))
            best = fmin(best, brute(m, n - 1, e + 1, fmax(worst, w)));
    }
    return best;
}

Test(split, minmax_meets_brute_force_from_either_side)
{
    srand(7);
    for (int trial = 0; trial < 40; trial++) {
        double jit[10];
        struct zb_model m;
        int nb = 4 + trial % 6, n = 2 + trial % 4, k[8];
        for (int i = 0; i < nb; i++)
            jit[i] = 0.2 + (rand() % 1000) / 250.0;
        make_model(nb, 1 + trial % 7, trial % 2, jit, 1e8, &m);
        double want = brute(&m, n, 0, 0);
        for (int side = 0; side < 2; side++) {
            double w[8], max = 0;
            int sum = 0;
            cr_assert_eq(zbi_split_minmax(&m, n, NULL, side, k), 0);
            zbi_split_work(&m, k, n, w);
            for (int s = 0; s < n; s++) {
                cr_assert_geq(k[s], 1);
                max = fmax(max, w[s]);
                sum += k[s];
            }
            cr_assert_eq(sum, m.n);
            cr_assert_float_eq(max, want, 1e-9 * want, "trial %d side %d: "
                               "%g vs %g", trial, side, max, want);
        }
        zb_model_release(&m);
    }
}

Test(split, minmax_under_memory_keeps_every_stage_within_its_budget)
{
    struct zb_model m;
    double kin[4] = { 4, 3, 2, 1 }, bud[4], spp = 18;
    struct zbi_split_memory mem = { kin, bud, spp };
    int k[4], at = 0;

    make_model(16, 6, false, NULL, 1e9, &m);
    for (int s = 0; s < 4; s++)
        bud[s] = 30 * GIB;
    cr_assert_eq(zbi_split_minmax(&m, 4, &mem, false, k), 0);
    for (int s = 0; s < 4; s++) {
        struct zb_stage_bytes b;
        zb_memory_stage_bytes(&m, at, k[s], &b);
        cr_assert_leq(b.params * spp + kin[s] * b.act +
                      2 * (b.in_bytes + b.out_bytes), bud[s], "stage %d", s);
        at += k[s];
    }
    /* The first stage, holding 4 microbatches, gets fewer blocks than
     * the compute-only split gives it. */
    int free_k[4];
    cr_assert_eq(zbi_split_minmax(&m, 4, NULL, false, free_k), 0);
    cr_assert_lt(k[0], free_k[0]);
    for (int s = 0; s < 4; s++)
        bud[s] = 1 * GIB;
    cr_assert_eq(zbi_split_minmax(&m, 4, &mem, false, k), -1);
    zb_model_release(&m);
}

static void roundtrip(const struct zb_model *m, const int *counts, int n)
{
    struct zb_plan_split s = { .exists = true, .vpp = 1, .nstages = n,
                               .placement = ZB_PLACEMENT_LOOP,
                               .counts = (int *)counts };
    struct zb_error err = { 0 };
    char *layout = zb_plan_megatron_layout(m, &s);
    int back[64], nb;

    cr_assert_not_null(layout);
    cr_assert_eq(zb_plan_layout_parse(m, layout, back, 64, &nb, &err), 0,
                 "%s: %s", layout, err.msg);
    cr_assert_eq(nb, n, "%s", layout);
    for (int i = 0; i < n; i++)
        cr_assert_eq(back[i], counts[i], "%s: stage %d", layout, i);
    free(layout);
}

Test(split, megatron_layout_round_trips)
{
    struct zb_model m;
    int even[8], k[8];

    make_model(32, 6, true, NULL, 1e8, &m);
    cr_assert_eq(zbi_split_even(&m, 8, even), 0);
    roundtrip(&m, even, 8);
    srand(3);
    for (int trial = 0; trial < 200; trial++) {
        int n = 2 + trial % 7, left = m.n - 2;  /* head group: 2 */
        for (int s = 0; s < n - 1; s++) {
            k[s] = 1 + rand() % (left - (n - s - 1) - 1 + 1 > 6 ? 6 :
                                 left - (n - s - 1));
            left -= k[s];
        }
        if (left < 1)
            continue;
        k[n - 1] = left + 2;
        roundtrip(&m, k, n);
    }
    zb_model_release(&m);
}

Test(split, megatron_layout_is_null_where_megatron_cannot_say_it)
{
    struct zb_model m;
    int cut[2] = { 34, 1 }, k[16];
    struct zb_plan_split s = { .exists = true, .vpp = 1, .nstages = 2,
                               .placement = ZB_PLACEMENT_LOOP, .counts = cut };
    char *l;

    make_model(32, 6, false, NULL, 1e8, &m);
    cr_assert_null(zb_plan_megatron_layout(&m, &s), "norm | output");
    cr_assert_eq(zbi_split_even(&m, 16, k), 0);
    s = (struct zb_plan_split){ .exists = true, .vpp = 2, .nstages = 16,
                                .placement = ZB_PLACEMENT_V, .counts = k };
    cr_assert_null(zb_plan_megatron_layout(&m, &s), "V placement");
    s.placement = ZB_PLACEMENT_LOOP;
    cr_assert_not_null(l = zb_plan_megatron_layout(&m, &s));
    free(l);
    zb_model_release(&m);
}

Test(split, layout_parse_reads_megatrons_grammar)
{
    struct zb_model m;
    struct zb_error err = { 0 };
    int k[64], n;

    make_model(6, 3, true, NULL, 1e8, &m);
    /* DeepSeek's form: a group, a cosmetic comma, m and L. */
    cr_assert_eq(zb_plan_layout_parse(&m, "Et*2|(tt|)*2,m|L", k, 64, &n,
                                      &err), 0, "%s", err.msg);
    cr_assert_eq(n, 5);
    cr_assert_eq(k[0], 3);
    cr_assert_eq(k[1], 2);
    cr_assert_eq(k[3], 1);
    cr_assert_eq(k[4], 2, "L is the whole head group");
    cr_assert_lt(zb_plan_layout_parse(&m, "Et*3|t*4|L", k, 64, &n, &err), 0);
    cr_assert(strstr(err.msg, "layout: 't' where the model has mtp"), "%s",
              err.msg);
    cr_assert_lt(zb_plan_layout_parse(&m, "Et*6|mL|x", k, 64, &n, &err), 0);
    zb_model_release(&m);
}

/* A zb schedule of a profile with random stage times and comm. */
static void random_schedule(int pp, int vpp, enum zb_placement pl,
                            unsigned seed, struct zb_schedule *s)
{
    struct shape sh = { pp, vpp, 3 * pp, pl, 1, 1, 1, 0.3, 1, 0.5,
                        INFINITY };
    struct zb_profile p;

    srand(seed);
    make_profile(&sh, &p);
    for (int st = 0; st < pp * vpp; st++)
        p.stage[st] = (struct zb_stage_times){ 0.5 + rand() % 100 / 50.0,
                                               0.5 + rand() % 100 / 50.0,
                                               0.2 + rand() % 100 / 80.0 };
    p.mem_limit[0] = pp * vpp * 1.5;
    gen("zb", &p, s);
    zb_profile_release(&p);
}

Test(split, replay_with_uniform_bytes_gives_the_simulators_peaks)
{
    for (unsigned seed = 1; seed <= 8; seed++) {
        struct zb_schedule s;
        struct zb_stage_bytes st[32];
        double peak[16];

        random_schedule(2 + seed % 3, 2, ZB_PLACEMENT_V, seed, &s);
        for (int k = 0; k < zb_profile_stages(&s.profile); k++)
            st[k] = (struct zb_stage_bytes){ .act = s.profile.m_b,
                                             .act_w = s.profile.m_w };
        zb_memory_replay(&s, st, peak);
        for (int r = 0; r < s.profile.pp; r++)
            cr_assert_float_eq(peak[r], s.predicted.ranks[r].peak_memory,
                               1e-9, "seed %u rank %d", seed, r);
        zb_schedule_release(&s);
    }
}

Test(split, zero_divides_the_optimizer_state)
{
    struct zb_model m;

    make_model(4, 3, false, NULL, 1e8, &m);
    cr_assert_eq(zb_memory_state_per_param(&m, 1, 0), 18);
    cr_assert_eq(zb_memory_state_per_param(&m, 4, 0), 18);
    cr_assert_eq(zb_memory_state_per_param(&m, 4, 1), 2 + 4 + 3);
    cr_assert_eq(zb_memory_state_per_param(&m, 4, 3), 2 + 4 + 3);
    zb_model_release(&m);
}

Test(split, plan_is_bounded_and_never_worse_than_even)
{
    struct zb_model m;

    make_model(14, 7, true, NULL, 2e9, &m);
    for (int gib = 30; gib <= 90; gib += 30) {
        struct zb_plan_request rq = request(4, 8, gib);
        struct zb_plan p;
        struct zb_error err = { 0 };
        double total = 0;

        for (int i = 0; i < m.n; i++)
            total += zb_model_work(&m, i);
        cr_assert_eq(zb_plan_run(&m, &rq, &p, &err), 0, "%s", err.msg);
        cr_assert(p.best.fits, "%d GiB", gib);
        cr_assert_leq(p.lower_bound, p.best.cost);
        cr_assert_geq(p.lower_bound, total * 8 / 4 * (1 - 1e-12));
        if (p.even.exists && p.even.fits)
            cr_assert_leq(p.best.cost, p.even.cost * (1 + 1e-12));
        if (p.minmax.exists && p.minmax.fits)
            cr_assert_leq(p.best.cost, p.minmax.cost * (1 + 1e-12));
        for (int r = 0; r < 4; r++)
            cr_assert_leq(p.best.ranks[r].total, rq.gpu_mem * (1 + 1e-9));
        zb_plan_release(&p);
    }
    zb_model_release(&m);
}

Test(split, plan_errors_name_the_problem)
{
    struct zb_model m;
    struct zb_plan_request rq = request(4, 8, 80);
    struct zb_plan p;
    struct zb_error err = { 0 };
    int bad[4] = { 4, 4, 4, 4 };

    make_model(14, 7, false, NULL, 2e9, &m);
    rq.split = ZB_SPLIT_GIVEN;
    rq.counts = bad;
    rq.n_counts = 4;
    cr_assert_lt(zb_plan_run(&m, &rq, &p, &err), 0);
    cr_assert_str_eq(err.msg, "--split adds up to 16 layers, the model has "
                     "17");
    rq.n_counts = 3;
    cr_assert_lt(zb_plan_run(&m, &rq, &p, &err), 0);
    cr_assert(strstr(err.msg, "not a multiple of --pp 4"), "%s", err.msg);
    rq = request(4, 8, 1);
    cr_assert_lt(zb_plan_run(&m, &rq, &p, &err), 0);
    cr_assert(strstr(err.msg, "layer 'emb' alone needs"), "%s", err.msg);
    rq = request(20, 8, 80);
    cr_assert_lt(zb_plan_run(&m, &rq, &p, &err), 0);
    cr_assert(strstr(err.msg, "need at least as many layers"), "%s",
              err.msg);
    zb_model_release(&m);
}

/* The picture's view of a plan: made from the plan in memory and read
 * back from its JSON, the same numbers and the same SVG. */
Test(split, plan_view_reads_back_from_the_json)
{
    struct zb_model m;
    struct zb_plan_request rq = request(4, 8, 60);
    struct zb_plan p;
    struct zb_plan_view a, b;
    struct zb_error err = { 0 };
    char *json, *sa, *sb;

    make_model(14, 7, true, NULL, 2e9, &m);
    cr_assert_eq(zb_plan_run(&m, &rq, &p, &err), 0, "%s", err.msg);
    zb_plan_view_make(&m, &rq, &p, &a);
    json = zb_plan_format_json(&m, &rq, &p);
    cr_assert(zb_plan_json_detect(json));
    cr_assert_eq(zb_plan_view_parse(json, &b, &err), 0, "%s", err.msg);
    cr_assert_eq(a.pp, b.pp);
    cr_assert_eq(a.vpp, b.vpp);
    cr_assert(a.even.exists && b.even.exists);
    for (int i = 0; i < a.plan.nstages; i++) {
        cr_assert_eq(a.plan.counts[i], b.plan.counts[i]);
        cr_assert_eq(a.plan.rank[i], b.plan.rank[i]);
        cr_assert_float_eq(a.plan.f[i], b.plan.f[i], 1e-9);
        cr_assert_float_eq(a.even.w[i], b.even.w[i], 1e-9);
    }
    for (int r = 0; r < 4; r++)
        cr_assert_float_eq(a.even.ranks[r].activations,
                           b.even.ranks[r].activations, 1);
    sa = zb_plan_render_svg(&a);
    sb = zb_plan_render_svg(&b);
    cr_assert_str_eq(sa, sb);
    cr_assert(!zb_plan_json_detect("{\"format\": \"zbsched-schedule\"}"));
    free(sa);
    free(sb);
    free(json);
    zb_plan_view_release(&a);
    zb_plan_view_release(&b);
    zb_plan_release(&p);
    zb_model_release(&m);
}

/* A plan file missing what the picture draws is refused naming it. */
Test(split, plan_view_names_a_missing_field)
{
    struct zb_plan_view v;
    struct zb_error err = { 0 };

    cr_assert_lt(zb_plan_view_parse("{\"format\": \"zbsched-plan\", \"pp\": "
                                    "1, \"vpp\": 1, \"microbatches\": 2, "
                                    "\"placement\": \"loop\", \"time_unit\":"
                                    " \"ms\", \"gpu_memory_bytes\": 1e9, "
                                    "\"stages\": [{\"rank\": 0, \"layers\": "
                                    "[\"a\"], \"F\": 1, \"B\": 1}]}", &v,
                                    &err), 0);
    cr_assert_str_eq(err.msg, "plan: stages[0].W must be a number >= 0");
}

/* With dp the embedded schedule holds the collectives and the plan's step
 * is its step_time: at least the no-dp step, longer than its compute by
 * the reduce; the memory the plan reports is what the schedule's profile
 * counts (its model state, plus activations and buffers), within the GPU;
 * ZeRO-3 adds a gather per stage. */
Test(split, plan_with_dp_times_the_reduce_and_counts_the_state_once)
{
    struct zb_model m;
    struct zb_plan_request rq = request(4, 8, 60);
    struct zb_plan p0;
    struct zb_error err = { 0 };

    make_model(14, 7, true, NULL, 2e9, &m);
    cr_assert_eq(zb_plan_run(&m, &rq, &p0, &err), 0, "%s", err.msg);
    cr_assert_float_eq(p0.best.step, p0.best.cost, 1e-12);
    cr_assert_eq(count_ops(&p0.best.sched, ZB_OP_REDUCE_GRAD), 0);
    for (int zero = 0; zero <= 3; zero++) {
        struct zb_plan p;
        const struct zb_schedule *s;
        int n;

        rq.dp = 4;
        rq.zero = zero;
        rq.dpx.bandwidth = 2e10;
        cr_assert_eq(zb_plan_run(&m, &rq, &p, &err), 0, "%s", err.msg);
        cr_assert(p.best.fits, "zero %d", zero);
        s = &p.best.sched;
        n = zb_profile_stages(&s->profile);
        cr_assert(zb_dp_active(&s->profile));
        cr_assert_float_eq(p.best.step, s->predicted.step_time, 1e-12);
        cr_assert_geq(p.best.step, p0.best.step * (1 - 1e-12),
                      "zero %d: %g < %g", zero, p.best.step, p0.best.step);
        /* The tail: the last reduce after the last W, at least one ring
         * step of latency and the bytes of the smallest stage. */
        cr_assert_gt(p.best.step, p.best.makespan * (1 + 1e-6));
        cr_assert_eq(count_ops(s, ZB_OP_REDUCE_GRAD), n);
        cr_assert_eq(count_ops(s, ZB_OP_UNSHARD), zero == 3 ? n : 0);
        cr_assert_leq(p.lower_bound, p.best.step);
        for (int r = 0; r < 4; r++) {
            const struct zb_memory_rank *k = &p.best.ranks[r];
            double state = 0;
            for (int st = 0; st < n; st++)
                if (zb_profile_stage_rank(&s->profile, st) == r)
                    state += s->profile.dp.params[st] *
                             zb_memory_state_per_param(&m, 4, zero);
            cr_assert_float_eq(k->model_state,
                               zb_profile_model_state(&s->profile, r) * GIB,
                               1e-6 * k->model_state);
            cr_assert_float_eq(k->model_state, state, 1e-6 * state,
                               "memory_model.h's count is the profile's");
            cr_assert_float_eq(k->activations,
                               s->predicted.ranks[r].peak_memory * GIB,
                               1e-6 * k->activations + 1);
            cr_assert_float_eq(k->total, k->model_state + k->activations +
                               k->buffers, 1);
            cr_assert_leq(k->total, rq.gpu_mem * (1 + 1e-9));
            /* The profile's budget is the same sum, within the GPU. */
            cr_assert_float_eq(s->profile.mem_total[r] * GIB,
                               rq.gpu_mem - k->buffers, 1);
        }
        if (p.even.exists && p.even.fits)
            cr_assert_leq(p.best.step, p.even.step * (1 + 1e-12));
        zb_plan_release(&p);
    }
    zb_plan_release(&p0);
    zb_model_release(&m);
}

/* The data-parallel ring's link (zb_plan_dp_link()): the link's within a
 * node, the inter-node one where a replica sits on another node, a given
 * one whatever the layout. */
Test(split, dp_link_follows_the_nodes)
{
    struct zb_plan_request rq = request(4, 8, 80);
    double bw, lat;

    rq.link.inter_bandwidth = 1e10;
    rq.dp = 2;
    zb_plan_dp_link(&rq, &bw, &lat);
    cr_assert_eq(bw, 5e10, "no --gpus-per-node: one node");
    cr_assert_eq(lat, 1e-5);
    rq.link.gpus_per_node = 8;
    zb_plan_dp_link(&rq, &bw, &lat);
    cr_assert_eq(bw, 5e10, "two replicas of 4 ranks on a node of 8");
    rq.dp = 4;
    zb_plan_dp_link(&rq, &bw, &lat);
    cr_assert_eq(bw, 1e10, "four replicas cross to the next node");
    rq.link.gpus_per_node = 2;
    rq.dp = 2;
    zb_plan_dp_link(&rq, &bw, &lat);
    cr_assert_eq(bw, 1e10);
    rq.dpx.bandwidth = 3e9;
    rq.dpx.latency = 0;
    zb_plan_dp_link(&rq, &bw, &lat);
    cr_assert_eq(bw, 3e9);
    cr_assert_eq(lat, 0);
}

Test(split, plan_dp_errors_name_the_flag)
{
    struct zb_model m;
    struct zb_plan_request rq = request(4, 8, 80);
    struct zb_plan p;
    struct zb_error err = { 0 };

    make_model(14, 7, false, NULL, 2e9, &m);
    rq.dp = 4;
    rq.zero = 1;
    rq.dpx.reduce = ZB_DP_REDUCE_MICROBATCH;
    cr_assert_lt(zb_plan_run(&m, &rq, &p, &err), 0);
    cr_assert_str_eq(err.msg, "--reduce microbatch needs --zero >= 2 "
                     "(sharded gradients), got 1");
    rq.dpx.reduce = ZB_DP_REDUCE_STEP;
    rq.dpx.units = 2;
    cr_assert_lt(zb_plan_run(&m, &rq, &p, &err), 0);
    cr_assert(strstr(err.msg, "--fsdp-units 2 needs --zero 3"), "%s",
              err.msg);
    rq.dpx.units = 1;
    rq.dpx.bandwidth = 0;
    cr_assert_lt(zb_plan_run(&m, &rq, &p, &err), 0);
    cr_assert(strstr(err.msg, "--dp-bw must be > 0"), "%s", err.msg);
    zb_model_release(&m);
}
