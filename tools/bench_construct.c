/* bench_construct.c - the constructive ZB heuristic (schedules/
 * zb_construct.c) against `zb` and the Zero Bubble paper's Table 5 on its
 * profiled settings, against `zb` on random profiles, and its run time.
 * Not built by the Makefile (a one-off for issue 9); from the repository
 * root, after `make`:
 *   cc -std=c11 -O2 -D_POSIX_C_SOURCE=200809L -Iinclude -Ischedules \
 *      tools/bench_construct.c build/libzbsched.a -lglpk -lcjson -lm \
 *      -pthread -o build/bench_construct && build/bench_construct */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include "zb_construct.h"
#include "zbsched/generator.h"

struct row {
    const char *model;
    int p, m;
    double f, b, w, comm, zb1p, zb2p;
};

/* Appendix D times (microseconds) and Table 5's ZB-1p and ZB-2p. */
static const struct row rows[] = {
    { "1.5B", 8, 24, 18522, 18086, 9337, 601, 0.1585, 0.0433 },
    { "1.5B", 8, 32, 18513, 18086, 9331, 626, 0.1242, 0.0039 },
    { "1.5B", 8, 64, 18546, 18097, 9321, 762, 0.0674, 0.0026 },
    { "6.2B", 8, 24, 29718, 29444, 19927, 527, 0.1323, 0.0029 },
    { "6.2B", 8, 32, 29802, 29428, 19530, 577, 0.1045, 0.0022 },
    { "6.2B", 8, 64, 29935, 29621, 19388, 535, 0.0554, 0.0010 },
    { "14.6B", 16, 48, 11347, 11248, 8132, 377, 0.1397, 0.0066 },
    { "14.6B", 16, 64, 11307, 11254, 8101, 379, 0.1088, 0.0054 },
    { "14.6B", 16, 128, 11325, 11308, 8109, 378, 0.0576, 0.0028 },
    { "28.3B", 32, 96, 10419, 10207, 7715, 408, 0.1421, 0.0038 },
    { "28.3B", 32, 128, 10408, 10204, 7703, 408, 0.1106, 0.0029 },
    { "28.3B", 32, 256, 10402, 10248, 7698, 460, 0.0594, 0.0018 },
};

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static double unit(unsigned *seed)
{
    return rand_r(seed) / (double)RAND_MAX;
}

static void make(struct zb_profile *p, int pp, int m, double comm,
                 double m_w, double limit)
{
    *p = (struct zb_profile){ .pp = pp, .vpp = 1, .microbatches = m,
                              .placement = ZB_PLACEMENT_LOOP, .comm = comm,
                              .m_b = 1, .m_w = m_w };
    p->stage = calloc((size_t)pp, sizeof(*p->stage));
    p->mem_limit = calloc((size_t)pp, sizeof(double));
    for (int r = 0; r < pp; r++)
        p->mem_limit[r] = limit;
}

/* The construction's order through simulate, lower, validate; its
 * measures in out. Exits on any failure: a benchmark of an illegal
 * schedule means nothing. */
static void construct(const struct zb_profile *p, struct zb_measures *out,
                      double *seconds)
{
    struct zb_schedule s;
    struct zb_error err = { 0 };
    double t0 = now();
    int rc;

    zb_schedule_init(&s, "zb", p);
    rc = zb_construct(p, &s, &err);
    if (seconds)
        *seconds = now() - t0;
    if (rc == 0)
        rc = zb_sim_run(&s, &err);
    if (rc == 0)
        rc = zb_lower(&s, &err);
    if (rc == 0)
        rc = zb_schedule_validate(&s, &err);
    if (rc < 0) {
        fprintf(stderr, "bench_construct: %s\n", err.msg);
        exit(1);
    }
    *out = s.predicted;
    out->ranks = NULL;
    zb_schedule_release(&s);
}

static void zb(const struct zb_profile *p, struct zb_measures *out)
{
    struct zb_schedule s;
    struct zb_error err = { 0 };

    if (zb_generate(zb_generator_find("zb"), p, &s, &err) < 0) {
        fprintf(stderr, "bench_construct: zb: %s\n", err.msg);
        exit(1);
    }
    *out = s.predicted;
    out->ranks = NULL;
    zb_schedule_release(&s);
}

static void paper_table(void)
{
    printf("| model | p | m | limit | construct | zb | paper |\n"
           "|---|---|---|---|---|---|---|\n");
    for (int x = 2; x >= 1; x--)
        for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
            const struct row *r = &rows[i];
            struct zb_profile p;
            struct zb_measures a, b;
            make(&p, r->p, r->m, r->comm, r->p == 8 && r->f < 20000
                 ? 0.3664 : 0.4324, x * (double)r->p);
            for (int s = 0; s < r->p; s++)
                p.stage[s] = (struct zb_stage_times){ r->f, r->b, r->w };
            construct(&p, &a, NULL);
            zb(&p, &b);
            printf("| %s | %d | %d | %dp | %.4f | %.4f | %.4f |\n", r->model,
                   r->p, r->m, x, a.bubble_ratio, b.bubble_ratio,
                   x == 2 ? r->zb2p : r->zb1p);
            zb_profile_release(&p);
        }
}

/* p 4-32, m p..4p, B/F 0.85-1.35, W/F 0.35-1.0 per stage, comm up to
 * 0.12 F, M_W/M_B 0.3-0.6, limit 1p, 1.5p or 2p. */
static void random_profiles(int n, unsigned seed)
{
    static const double limits[] = { 1, 1.5, 2 };
    int beats = 0, ties = 0, loses = 0;
    double worst = 0, best = 0;

    for (int k = 0; k < n; k++) {
        int pp = 4 + rand_r(&seed) % 29, m = pp + rand_r(&seed) % (3 * pp + 1);
        double limit = limits[rand_r(&seed) % 3] * pp;
        double m_w = 0.3 + 0.3 * unit(&seed), comm = 0.12 * unit(&seed);
        struct zb_profile p;
        struct zb_measures a, b;
        make(&p, pp, m, comm, m_w, limit);
        for (int s = 0; s < pp; s++)
            p.stage[s] = (struct zb_stage_times){
                1, 0.85 + 0.5 * unit(&seed), 0.35 + 0.65 * unit(&seed) };
        construct(&p, &a, NULL);
        zb(&p, &b);
        double rel = a.cost / b.cost - 1;
        beats += rel < -1e-9, loses += rel > 1e-9, ties += fabs(rel) <= 1e-9;
        worst = fmax(worst, rel), best = fmin(best, rel);
        zb_profile_release(&p);
    }
    printf("\n%d random profiles: construct beats zb %d, ties %d, loses %d; "
           "cost vs zb from %+.2f%% to %+.2f%%\n", n, beats, ties, loses,
           100 * best, 100 * worst);
}

static void timing(void)
{
    static const int sizes[][2] = { { 8, 32 }, { 16, 128 }, { 32, 256 },
                                    { 64, 1024 } };

    printf("\n| p | m | zb_construct seconds (best of 3) |\n|---|---|---|\n");
    for (int k = 0; k < 4; k++) {
        struct zb_profile p;
        struct zb_measures a;
        double best = INFINITY, t;
        make(&p, sizes[k][0], sizes[k][1], 0.05, 0.5, 2.0 * sizes[k][0]);
        for (int s = 0; s < sizes[k][0]; s++)
            p.stage[s] = (struct zb_stage_times){ 1, 1.2, 0.8 };
        for (int rep = 0; rep < 3; rep++) {
            construct(&p, &a, &t);
            best = fmin(best, t);
        }
        printf("| %d | %d | %.4f |\n", sizes[k][0], sizes[k][1], best);
        zb_profile_release(&p);
    }
}

int main(void)
{
    paper_table();
    random_profiles(50, 12345);
    timing();
    return 0;
}
