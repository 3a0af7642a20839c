/* check_quality.c - the quality gate, run on purpose (`make check-quality`),
 * not by `make test`: how much better the building blocks are than their
 * plainer candidates on the unit tests' profiles (tests/unit/
 * quality_cases.h). The unit tests check the orderings, which hold by
 * construction; these margins are measurements, and a tighter lower bound
 * or another candidate may move them: reset a gate from a run of this
 * program and say why (docs/tuning.md, "Quality gates").
 *   build/tools/check_quality        one row a gate; exit 1 if one fails */
#include <stdio.h>
#include <stdlib.h>
#include "../tests/unit/quality_cases.h"
#include "zbsched/bound.h"
#include "zbsched/schedule.h"
#include "zbsched/sim.h"
#include "build/build.h"

/* The simulated cost of s as built (rc from the builder); INFINITY when
 * the build failed or the order does not fit. */
static double built_cost(int rc, struct zb_schedule *s)
{
    double cost = INFINITY;

    if (rc == 0 && zb_sim_run(s, NULL) == 0 && s->predicted.fits_memory)
        cost = s->predicted.cost;
    zb_schedule_release(s);
    return cost;
}

static double v_cost(const struct zb_profile *p, enum construct_v_rules r)
{
    struct zb_schedule s;

    zb_schedule_init(&s, "zbv", p);
    return built_cost(zbi_construct_v(p, r, &s, NULL), &s);
}

static double loop_cost(const struct zb_profile *p)
{
    struct zb_schedule s;

    zb_schedule_init(&s, "zb", p);
    return built_cost(zbi_construct_loop(p, &s, NULL), &s);
}

/* The ZB-V construction's mean gap to the bound on u's profiles. */
static double uneven_gap(struct uneven u)
{
    double sum = 0;

    for (int i = 0; i < UNEVEN_CASES; i++) {
        struct zb_profile p;
        uneven_profile(&u, &p);
        sum += v_cost(&p, CONSTRUCT_V_PAPER) / zb_bound_cost(&p) - 1;
        zb_profile_release(&p);
    }
    return sum / UNEVEN_CASES;
}

static double gap_at_one_and_a_half(void)
{
    return uneven_gap(uneven_at_one_and_a_half);
}

static double gap_at_onef1b(void)
{
    return uneven_gap(uneven_at_onef1b);
}

/* The two long profiles, the paper's rules at 1F1B's memory and a B
 * making room at 1.5x: the mean gap. */
static double gap_long_runs(void)
{
    static const enum construct_v_rules rules[2] = { CONSTRUCT_V_PAPER,
                                                     CONSTRUCT_V_B_ROOM };
    unsigned seed = 4848;
    double sum = 0;

    for (int k = 0; k < 2; k++) {
        struct zb_profile p;
        long_v_profile(&seed, k, &p);
        sum += v_cost(&p, rules[k]) / zb_bound_cost(&p) - 1;
        zb_profile_release(&p);
    }
    return sum / 2;
}

/* The loop construction (its per-stage tuning included): mean gap. */
static double gap_loop_tuned(void)
{
    unsigned seed = 2027;
    double sum = 0;

    for (int i = 0; i < LOOP_UNEVEN_CASES; i++) {
        struct zb_profile p;
        loop_uneven_profile(&seed, &p);
        sum += loop_cost(&p) / zb_bound_cost(&p) - 1;
        zb_profile_release(&p);
    }
    return sum / LOOP_UNEVEN_CASES;
}

/* The list scheduler: the best forwards-first policy's cost over the
 * best ready-first one's. */
static double ratio_forwards_first(void)
{
    struct zb_profile p;
    double ready = INFINITY, forwards = INFINITY;

    make_profile(&forwards_first_shape, &p);
    for (int q = 0; q < GREEDY_POLICIES; q++) {
        struct zb_schedule s;
        double c;
        zb_schedule_init(&s, "list-scheduler", &p);
        c = built_cost(zbi_greedy_schedule(&p, &zbi_greedy_policies[q], &s,
                                           NULL), &s);
        if (zbi_greedy_policies[q].b_patience > 0)
            forwards = fmin(forwards, c);
        else
            ready = fmin(ready, c);
    }
    zb_profile_release(&p);
    return forwards / ready;
}

/* The capped list scheduler's cost over the plain one's. */
static double ratio_capped(void)
{
    struct zb_profile p;
    struct zb_schedule list, capped;
    double l, c;

    make_profile(&capped_list_shape, &p);
    zb_schedule_init(&list, "list-scheduler", &p);
    l = built_cost(zbi_greedy_best(&p, &list, NULL), &list);
    zb_schedule_init(&capped, "capped-list", &p);
    c = built_cost(zbi_greedy_capped(&p, &capped, NULL), &capped);
    zb_profile_release(&p);
    return c / l;
}

/* A gate: the measure must stay at most `limit` (its value when the gate
 * was set, rounded up). */
struct gate {
    const char *name, *what;
    double (*measure)(void);
    double limit;
};

static const struct gate gates[] = {
    { "construct_v-1.5p", "ZB-V construction, 8 uneven V profiles at "
      "1.5x 1F1B: mean gap", gap_at_one_and_a_half, 0.010 },
    { "construct_v-1p", "ZB-V construction, 8 uneven V profiles at 1F1B: "
      "mean gap", gap_at_onef1b, 0.029 },
    { "construct_v-long", "ZB-V construction, p 32, m 1040 (shorter copy): "
      "mean gap", gap_long_runs, 0.00112 },
    { "construct-loop", "loop construction, 10 uneven profiles at 1.5x "
      "1F1B: mean gap", gap_loop_tuned, 0.0075 },
    { "list-forwards-first", "list scheduler, interleaved p 12, m 16: "
      "forwards first / ready first", ratio_forwards_first, 0.98 },
    { "list-capped", "list scheduler, interleaved p 8, m 26: capped / "
      "plain", ratio_capped, 0.99 },
};

int main(void)
{
    const int n = (int)(sizeof(gates) / sizeof(gates[0]));
    int bad = 0;

    printf("%-20s %10s %10s  %-5s %s\n", "gate", "measured", "limit",
           "check", "what");
    for (int i = 0; i < n; i++) {
        double v = gates[i].measure();
        int ok = v <= gates[i].limit;
        printf("%-20s %10.6f %10.6f  %-5s %s\n", gates[i].name, v,
               gates[i].limit, ok ? "ok" : "FAIL", gates[i].what);
        bad += !ok;
    }
    if (bad) {
        fprintf(stderr, "check_quality: %d of %d gates failed\n", bad, n);
        return 1;
    }
    return 0;
}
