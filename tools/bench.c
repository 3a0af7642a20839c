/* bench.c - generation time of every family (generate, lower, simulate,
 * validate: what `zbsched generate` does before writing) at the sizes of
 * the targets (docs/bench.md). Prints a Markdown table; tools/bench.sh
 * adds the machine.
 * Median of repeated runs, wall clock (CLOCK_MONOTONIC). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include "zbsched/generator.h"

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* A profile for g at (pp, m) in the family's own shape (zb-v: v, 2): a
 * rank's F 1, B 1.2, W 0.8 split over its chunks, M_B 1 per chunk. The
 * limit is 2p chunk activations: 2p at vpp 1, 1p (1F1B's memory) at
 * vpp 2. */
static void make(const struct zb_generator *g, int pp, int m,
                 struct zb_profile *p)
{
    int vpp = g->shape_vpp ? g->shape_vpp : 1, n = pp * vpp;
    *p = (struct zb_profile){ .pp = pp, .vpp = vpp, .microbatches = m,
                              .placement = g->shape_vpp ? g->shape_placement
                                                        : ZB_PLACEMENT_LOOP,
                              .comm = 0.05, .m_b = 1, .m_w = 0.5 };
    p->stage = malloc((size_t)n * sizeof(*p->stage));
    p->mem_limit = malloc((size_t)pp * sizeof(double));
    for (int s = 0; s < n; s++)
        p->stage[s] = (struct zb_stage_times){ 1.0 / vpp, 1.2 / vpp,
                                               0.8 / vpp };
    for (int r = 0; r < pp; r++)
        p->mem_limit[r] = 2.0 / vpp * zb_profile_1f1b_peak(p);
}

int main(void)
{
    static const int sizes[][2] = { { 8, 32 }, { 32, 256 }, { 64, 1024 } };

    printf("| family | vpp | (8, 32) ms | (32, 256) ms | (64, 1024) ms |"
           " cost at (64, 1024) | bubble_ratio at (64, 1024) |\n");
    printf("|---|---|---|---|---|---|---|\n");
    for (int i = 0; zb_generators[i]; i++) {
        const struct zb_generator *g = zb_generators[i];
        struct zb_schedule s;
        double cost = 0, bubble = 0;
        int vpp = 1;

        if (g->solver)
            continue;       /* a timed search: tools/bench_ilp.sh */

        printf("| %s |", g->name);
        for (int k = 0; k < 3; k++) {
            struct zb_profile p;
            struct zb_error err = { 0 };
            double t[15];
            int runs = k == 2 ? 5 : 15;
            make(g, sizes[k][0], sizes[k][1], &p);
            vpp = p.vpp;
            for (int rep = 0; rep < runs; rep++) {
                double t0;
                t0 = now();
                if (zb_generator_run(g, &p, NULL, &s, &err) < 0) {
                    fprintf(stderr, "bench: %s: %s\n", g->name, err.msg);
                    return 1;
                }
                t[rep] = now() - t0;
                cost = s.predicted.cost;
                bubble = s.predicted.bubble_ratio;
                zb_schedule_release(&s);
            }
            qsort(t, (size_t)runs, sizeof(double), cmp);
            if (k == 0)
                printf(" %d |", vpp);
            printf(" %.2f |", 1e3 * t[runs / 2]);
            zb_profile_release(&p);
        }
        printf(" %.6g | %.4f |\n", cost, bubble);
        fflush(stdout);
    }
    return 0;
}
