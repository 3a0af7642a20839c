/* test_vmem.c - the controllable-memory families (v-half, v-min) against
 * the closed forms of docs/controllable-memory.md at F = B = W = 1, and
 * `zb` choosing them under a limit they fit. */
#include "helpers.h"

static const int vps[] = { 2, 3, 4, 5, 6, 8, 12, 16 };
#define N_VPS (int)(sizeof(vps) / sizeof(vps[0]))

/* V placement, every chunk F = B = W = 1, M_B = M_W = 1 per chunk. */
static struct shape v_shape(int p, int m)
{
    struct shape sh = unit_shape(p, m);
    sh.vpp = 2;
    sh.placement = ZB_PLACEMENT_V;
    return sh;
}

/* 1F1B on the same model: one stage per rank is two chunks (times 2,
 * activations 2). */
static void onef1b(int p, int m, struct zb_schedule *s)
{
    struct shape sh = unit_shape(p, m);
    struct zb_profile prof;
    sh.f = sh.b = sh.w = 2;
    sh.m_b = sh.m_w = 2;
    make_profile(&sh, &prof);
    gen("1f1b", &prof, s);
    zb_profile_release(&prof);
}

struct measured {
    double peak;        /* max over ranks, chunk activations */
    double bubble;      /* cost - 6m: a rank's idle time */
    double cost;
};

static struct measured measure(const char *name, int p, int m,
                               double limit)
{
    struct shape sh = v_shape(p, m);
    struct zb_profile prof;
    struct zb_schedule s;
    struct measured x;
    sh.limit = limit;
    make_profile(&sh, &prof);
    gen(name, &prof, &s);
    x = (struct measured){ zb_measures_max_peak(&s.predicted, p),
                           s.predicted.cost - 6.0 * m, s.predicted.cost };
    zb_schedule_release(&s);
    zb_profile_release(&prof);
    return x;
}

/* Peaks in stage activations (two chunk activations each): 1F1B and zb-v
 * p, v-half ceil((p+2)/2) and v-min floor((p+4)/3), the papers' closed
 * forms; an odd p may do better than v-half's form. */
Test(vmem, peak_memory_against_onef1b)
{
    for (int i = 0; i < N_VPS; i++)
        for (int k = 1; k <= 4; k *= 2) {
            int p = vps[i], m = k * p;
            struct zb_schedule ref;
            double half = 2.0 * ((p + 3) / 2), min = 2.0 * ((p + 4) / 3);
            onef1b(p, m, &ref);
            assert_near(zb_measures_max_peak(&ref.predicted, p), 2.0 * p,
                        "1f1b p %d m %d", p, m);
            zb_schedule_release(&ref);
            assert_near(measure("zb-v", p, m, INFINITY).peak, 2.0 * p,
                        "zb-v p %d m %d", p, m);
            if (p % 2 == 0)
                assert_near(measure("v-half", p, m, INFINITY).peak, half,
                            "v-half p %d m %d", p, m);
            else
                cr_assert_leq(measure("v-half", p, m, INFINITY).peak, half,
                              "v-half p %d m %d", p, m);
            assert_near(measure("v-min", p, m, INFINITY).peak, min,
                        "v-min p %d m %d", p, m);
        }
}

/* Idle time per rank (cost - 6m, in chunk passes) for m >= p: 1F1B
 * 6(p-1); v-half 3p-7 at even p from 4 and m >= 2p (the paper's squeeze
 * of the block), else at most the block's 3.5p-5 (p even) or 3.5(p-1);
 * v-min at most 4p-5, 4p-7 when 3 divides p: about 1/2 and 2/3 of
 * 1F1B's. zb-v none once m >= 2p. */
Test(vmem, bubbles_against_onef1b)
{
    for (int i = 0; i < N_VPS; i++)
        for (int k = 1; k <= 4; k *= 2) {
            int p = vps[i], m = k * p;
            struct zb_schedule ref;
            double half = p % 2 == 0 ? 3.5 * p - 5 : 3.5 * (p - 1);
            double min = 4.0 * p - (p % 3 == 0 ? 7 : 5);
            onef1b(p, m, &ref);
            assert_near(ref.predicted.cost - 6.0 * m, 6.0 * (p - 1),
                        "1f1b p %d m %d", p, m);
            zb_schedule_release(&ref);
            if (p % 2 == 0 && p >= 4 && m >= 2 * p)
                assert_near(measure("v-half", p, m, INFINITY).bubble,
                            3.0 * p - 7, "v-half p %d m %d", p, m);
            else
                cr_assert_leq(measure("v-half", p, m, INFINITY).bubble,
                              half, "v-half p %d m %d", p, m);
            cr_assert_leq(measure("v-min", p, m, INFINITY).bubble, min,
                          "v-min p %d m %d", p, m);
            if (m >= 2 * p)
                assert_near(measure("zb-v", p, m, INFINITY).bubble, 0,
                            "zb-v p %d m %d", p, m);
        }
}

/* Any limit from v-min's peak up serves `zb` in V placement, no worse
 * than the leanest family that fits. */
Test(vmem, zb_serves_every_limit_from_v_min_up)
{
    static const int cases[][2] = { { 4, 8 }, { 6, 12 }, { 8, 16 } };
    for (int i = 0; i < 3; i++) {
        int p = cases[i][0], m = cases[i][1];
        struct measured vmin = measure("v-min", p, m, INFINITY);
        struct measured vhalf = measure("v-half", p, m, INFINITY);
        double lims[] = { vmin.peak, vmin.peak + 1, vhalf.peak,
                          2.0 * p, 4.0 * p };
        for (int l = 0; l < 5; l++) {
            double lim = lims[l];
            struct measured z = measure("zb", p, m, lim);
            double want = lim >= vhalf.peak ? fmin(vmin.cost, vhalf.cost)
                                            : vmin.cost;
            cr_assert_leq(z.peak, lim, "p %d m %d limit %g", p, m, lim);
            cr_assert_leq(z.cost, want + 1e-9, "p %d m %d limit %g: %g",
                          p, m, lim, z.cost);
        }
    }
}

/* Fewer microbatches than ranks, and one rank: still legal, within the
 * steady-state peak. */
Test(vmem, few_microbatches_and_one_rank)
{
    static const char *const names[] = { "v-half", "v-min" };
    for (int n = 0; n < 2; n++)
        for (int m = 1; m <= 3; m++) {
            struct measured one = measure(names[n], 1, m, INFINITY);
            struct measured few = measure(names[n], 8, m, INFINITY);
            assert_near(one.bubble, 0, "%s p 1 m %d", names[n], m);
            cr_assert_leq(few.peak, n == 0 ? 10 : 8, "%s p 8 m %d",
                          names[n], m);
        }
}
