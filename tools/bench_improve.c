/* bench_improve.c - measures the local search (schedules/improve.c): the
 * incremental evaluator against zb_sim_run, and bubbles before/after on
 * the Zero Bubble paper's settings and random profiles. Not built by the
 * Makefile; after `make`:
 *   cc -O2 -std=c11 -D_POSIX_C_SOURCE=200809L -pthread -Iinclude \
 *      -Ischedules tools/bench_improve.c build/libzbsched.a \
 *      -lglpk -lcjson -lm -o build/bench_improve
 *   build/bench_improve check|speed|paper|random|v [effort...] */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "improve.h"
#include "improve_eval.h"
#include "zbsched/generator.h"
#include "zbsched/passes.h"
#include "families.h"

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

struct prof {
    const char *name;
    int pp, vpp, mb;
    enum zb_placement pl;
    double f, b, w, comm, m_w, limit_p;   /* limit in units of p*M_B */
};

static void make(const struct prof *x, struct zb_profile *p)
{
    int n = x->pp * x->vpp;
    *p = (struct zb_profile){ .pp = x->pp, .vpp = x->vpp,
                              .microbatches = x->mb, .placement = x->pl,
                              .comm = x->comm, .m_b = 1, .m_w = x->m_w };
    p->stage = calloc((size_t)n, sizeof(*p->stage));
    p->mem_limit = calloc((size_t)x->pp, sizeof(double));
    for (int s = 0; s < n; s++)
        p->stage[s] = (struct zb_stage_times){ x->f, x->b, x->w };
    for (int r = 0; r < x->pp; r++)
        p->mem_limit[r] = x->limit_p > 0 ? x->limit_p * x->pp : INFINITY;
}

static int start_zb(const struct zb_profile *p, struct zb_schedule *s)
{
    struct zb_error err = { 0 };
    if (zb_generate(zb_generator_find("zb"), p, s, &err) < 0) {
        fprintf(stderr, "zb: %s\n", err.msg);
        return -1;
    }
    zb_schedule_strip_comm(s);
    return 0;
}

static uint64_t rs = 12345;
static int rnd(int n)
{
    rs = rs * 6364136223846793005ull + 1442695040888963407ull;
    return (int)((rs >> 33) % (uint64_t)n);
}

/* Incremental times must equal zb_sim_run's after every try and undo. */
static int check(const struct zb_profile *p, int moves)
{
    struct zb_schedule s, t;
    struct zb_improve_state st;
    int bad = 0, tried = 0;

    if (start_zb(p, &s) < 0)
        return 1;
    zb_schedule_init(&t, "t", p);
    if (zb_improve_state_init(&st, p, &s, NULL) < 0)
        return 1;
    for (int i = 0; i < moves && bad < 5; i++) {
        int r = rnd(p->pp), from = rnd(st.len[r]);
        int to = from + rnd(9) - 4;
        if (!zb_improve_check(&st, r, from, to))
            continue;
        int rc = zb_improve_try(&st, r, from, to);
        zb_improve_write(&st, &t);
        if (rc < 0) {   /* undone: apply the move to t by hand */
            struct zb_op *o = t.ranks[r].ops, x = o[from];
            if (to < from)
                memmove(&o[to + 1], &o[to], (size_t)(from - to) * sizeof(*o));
            else
                memmove(&o[from], &o[from + 1], (size_t)(to - from) * sizeof(*o));
            o[to] = x;
        }
        int src = zb_sim_run(&t, NULL);
        if ((rc < 0) != (src < 0)) {
            printf("cycle disagreement %d %d\n", rc, src);
            bad++;
            continue;
        }
        if (rc < 0)
            continue;
        tried++;
        if (t.predicted.cost != st.cost || t.predicted.makespan != st.makespan) {
            printf("move %d: cost %.17g vs %.17g\n", i, st.cost, t.predicted.cost);
            bad++;
        }
        for (int q = 0; q < p->pp; q++)
            for (int k = 0; k < st.len[q]; k++)
                if (t.ranks[q].ops[k].start != st.start[st.order[q][k]])
                    bad++;
        if (rnd(2))
            zb_improve_commit(&st);
        else
            zb_improve_undo(&st);
    }
    /* memory sums after all commits */
    zb_improve_write(&st, &t);
    zb_sim_run(&t, NULL);
    for (int q = 0; q < p->pp; q++)
        if (t.predicted.ranks[q].peak_memory > p->mem_limit[q] * (1 + 1e-9))
            bad++, printf("rank %d over limit\n", q);
    if (zb_lower(&t, NULL) < 0 || zb_schedule_validate(&t, NULL) < 0)
        bad++, printf("invalid\n");
    printf("check p %d m %d: %d moves re-timed, %d bad\n", p->pp,
           p->microbatches, tried, bad);
    zb_improve_state_release(&st);
    zb_schedule_release(&s);
    zb_schedule_release(&t);
    return bad != 0;
}

/* Speed: zb_sim_run, the evaluator's full re-timing, an incremental try. */
static void speed(const struct zb_profile *p)
{
    struct zb_schedule s;
    struct zb_improve_state st;
    int n = 200, tries = 0;
    double t0, t_sim, t_full, t_inc;
    long w0;

    if (start_zb(p, &s) < 0)
        return;
    zb_improve_state_init(&st, p, &s, NULL);
    t0 = now();
    for (int i = 0; i < n; i++)
        zb_sim_run(&s, NULL);
    t_sim = (now() - t0) / n;
    t0 = now();
    for (int i = 0; i < n; i++)
        zb_improve_retime(&st);
    t_full = (now() - t0) / n;
    w0 = st.work;
    t0 = now();
    for (int i = 0; tries < 20000 && i < 200000; i++) {
        int r = rnd(p->pp), from = rnd(st.len[r]);
        int to = from + rnd(9) - 4;
        if (!zb_improve_check(&st, r, from, to))
            continue;
        if (zb_improve_try(&st, r, from, to) < 0)
            continue;
        tries++;
        zb_improve_undo(&st);
    }
    t_inc = (now() - t0) / tries;
    printf("p %2d m %3d ops %6d: zb_sim_run %8.1f us, full re-time %8.1f us, "
           "incremental %6.1f us (%.0f ops re-timed of %d), %.0f units/s\n",
           p->pp, p->microbatches, st.nops, t_sim * 1e6, t_full * 1e6,
           t_inc * 1e6, (double)(st.work - w0) / tries - p->pp, st.nops,
           (st.work - w0) / (t_inc * tries));
    zb_improve_state_release(&st);
    zb_schedule_release(&s);
}

/* One row: bubble before and after at each effort. */
static void row(const char *name, const struct zb_profile *p, int neff,
                char **eff, int threads)
{
    struct zb_schedule s;
    double busy = 0;

    if (start_zb(p, &s) < 0)
        return;
    for (int r = 0; r < p->pp; r++)
        busy += s.predicted.ranks[r].busy;
    printf("%-22s zb %.4f lb %.4f", name, s.predicted.bubble_ratio,
           1 - busy / (p->pp * s.predicted.lower_bound));
    for (int e = 0; e < neff; e++) {
        struct zb_schedule t;
        double ef = !strcmp(eff[e], "d") ? zb_improve_default_effort(p)
                                         : atof(eff[e]);
        struct zb_improve_opts o = { ef, 1, threads };
        struct zb_improve_stats stt;
        struct zb_error err = { 0 };
        double t0;
        zb_schedule_init(&t, "t", p);
        zb_copy_order(&t, &s);
        t0 = now();
        if (zb_improve(p, &t, &o, &stt, &err) < 0) {
            printf(" ERR %s", err.msg);
            continue;
        }
        t0 = now() - t0;
        int ok = zb_lower(&t, NULL) == 0 && zb_schedule_validate(&t, NULL) == 0;
        printf(" | e %.2f: %.4f %.2fs %.0fk ev/s%s", ef,
               t.predicted.bubble_ratio, t0, stt.evals / t0 / 1e3,
               ok ? "" : " INVALID");
        zb_schedule_release(&t);
    }
    printf("\n");
    fflush(stdout);
    zb_schedule_release(&s);
}

static const struct prof paper[] = {
    { "1.5B p8 m24", 8, 1, 24, 0, 18522, 18086, 9337, 601, 0.3664, 2 },
    { "1.5B p8 m32", 8, 1, 32, 0, 18513, 18086, 9331, 626, 0.3664, 2 },
    { "1.5B p8 m64", 8, 1, 64, 0, 18546, 18097, 9321, 762, 0.3664, 2 },
    { "6.2B p8 m24", 8, 1, 24, 0, 29718, 29444, 19927, 527, 0.4324, 2 },
    { "6.2B p8 m32", 8, 1, 32, 0, 29802, 29428, 19530, 577, 0.4324, 2 },
    { "6.2B p8 m64", 8, 1, 64, 0, 29935, 29621, 19388, 535, 0.4324, 2 },
    { "14.6B p16 m48", 16, 1, 48, 0, 11347, 11248, 8132, 377, 0.4324, 2 },
    { "14.6B p16 m64", 16, 1, 64, 0, 11307, 11254, 8101, 379, 0.4324, 2 },
    { "14.6B p16 m128", 16, 1, 128, 0, 11325, 11308, 8109, 378, 0.4324, 2 },
    { "28.3B p32 m96", 32, 1, 96, 0, 10419, 10207, 7715, 408, 0.4324, 2 },
    { "28.3B p32 m128", 32, 1, 128, 0, 10408, 10204, 7703, 408, 0.4324, 2 },
    { "28.3B p32 m256", 32, 1, 256, 0, 10402, 10248, 7698, 460, 0.4324, 2 },
};

static void random_profile(unsigned *seed, struct zb_profile *p, int vpp,
                           enum zb_placement pl, char *name, int size)
{
    struct prof x = { 0 };
    double u;
#define U(lo, hi) ((lo) + ((hi) - (lo)) * (rand_r(seed) / (double)RAND_MAX))
    x.pp = 4 + rand_r(seed) % 29;
    x.vpp = vpp;
    x.pl = pl;
    x.mb = x.pp + rand_r(seed) % (3 * x.pp + 1);
    x.f = 1000;
    x.b = U(0.85, 1.35) * x.f;
    x.w = U(0.35, 1.0) * x.f;
    x.comm = U(0, 0.12) * x.f;
    x.m_w = U(0.3, 0.6);
    u = U(1, 2);
    x.limit_p = u;
    if (vpp == 2) {
        /* chunks of half a stage: half the time and activation memory */
        x.f /= 2, x.b /= 2, x.w /= 2;
    }
    make(&x, p);
    if (vpp == 2) {
        p->m_b = 0.5;
        p->m_w = 0.5 * x.m_w;
    }
    snprintf(name, (size_t)size, "p%d m%d %.2fp", x.pp, x.mb, u);
#undef U
}

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "check";
    struct zb_profile p;

    if (!strcmp(mode, "check")) {
        int bad = 0;
        for (int i = 0; i < 12; i += 3) {
            make(&paper[i], &p);
            bad |= check(&p, 3000);
            zb_profile_release(&p);
        }
        return bad;
    }
    if (!strcmp(mode, "speed")) {
        static const int sz[][2] = { { 8, 32 }, { 16, 64 }, { 32, 96 },
                                     { 32, 256 } };
        for (int i = 0; i < 4; i++) {
            struct prof x = paper[9];
            x.pp = sz[i][0];
            x.mb = sz[i][1];
            make(&x, &p);
            speed(&p);
            zb_profile_release(&p);
        }
        return 0;
    }
    int threads = getenv("THREADS") ? atoi(getenv("THREADS")) : 2;
    if (!strcmp(mode, "paper"))
        for (size_t i = 0; i < sizeof(paper) / sizeof(*paper); i++) {
            make(&paper[i], &p);
            row(paper[i].name, &p, argc - 2, argv + 2, threads);
            zb_profile_release(&p);
        }
    if (!strcmp(mode, "random") || !strcmp(mode, "v")) {
        unsigned seed = 7;
        int n = getenv("N") ? atoi(getenv("N")) : 30;
        for (int i = 0; i < n; i++) {
            char name[64];
            if (!strcmp(mode, "v"))
                random_profile(&seed, &p, 2, ZB_PLACEMENT_V, name, 64);
            else
                random_profile(&seed, &p, 1, ZB_PLACEMENT_LOOP, name, 64);
            row(name, &p, argc - 2, argv + 2, threads);
            zb_profile_release(&p);
        }
    }
    return 0;
}
