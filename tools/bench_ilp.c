/* bench_ilp.c - the integer-program benchmark: p in {4, 8},
 * m in {8, 16, 32}, unit and unequal times, limits 1p and 2p; for each,
 * the `zb` heuristic beside the solver (cost, proven bound, gap, status,
 * seconds, nodes). Prints a Markdown table; tools/bench_ilp.sh adds the
 * machine. Usage: bench_ilp [SECONDS [THREADS]] (default 60 and 2). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include "zbsched/bound.h"
#include "zbsched/generator.h"
#include "zbsched/solver.h"

struct times {
    const char *name;
    double f, b, w, comm;
};

static void make(int pp, int m, const struct times *t, double n,
                 struct zb_profile *p)
{
    *p = (struct zb_profile){ .pp = pp, .vpp = 1, .microbatches = m,
                              .placement = ZB_PLACEMENT_LOOP,
                              .comm = t->comm, .m_b = 1, .m_w = 0.5 };
    p->stage = calloc((size_t)pp, sizeof(*p->stage));
    p->mem_limit = calloc((size_t)pp, sizeof(double));
    for (int s = 0; s < pp; s++)
        p->stage[s] = (struct zb_stage_times){ t->f, t->b, t->w };
    for (int r = 0; r < pp; r++)
        p->mem_limit[r] = n * zb_profile_1f1b_peak(p);
}

int main(int argc, char **argv)
{
    static const struct times times[] = {
        { "unit", 1, 1, 1, 0 }, { "unequal", 1, 1.2, 0.8, 0.05 },
    };
    static const int pps[] = { 4, 8 }, ms[] = { 8, 16, 32 };
    struct zb_options o;

    zb_options_init(&o);
    if (argc > 1)
        o.time_limit = atof(argv[1]);
    if (argc > 2)
        o.threads = atoi(argv[2]);
    printf("| p | m | times | limit | zb | ilp | bound | gap | status | "
           "seconds | nodes | LB2 |\n");
    printf("|---|---|---|---|---|---|---|---|---|---|---|---|\n");
    for (size_t t = 0; t < 2; t++)
        for (int i = 0; i < 2; i++)
            for (int j = 0; j < 3; j++)
                for (int n = 1; n <= 2; n++) {
                    struct zb_profile p;
                    struct zb_schedule h, s;
                    struct zb_error err = { 0 };
                    make(pps[i], ms[j], &times[t], n, &p);
                    if (zb_generator_run(zb_generator_find("zb"), &p, NULL,
                                         &h, &err) < 0 ||
                        zb_generator_run(zb_generator_find("ilp"), &p, &o,
                                         &s, &err) < 0) {
                        fprintf(stderr, "bench_ilp: %s\n", err.msg);
                        return 1;
                    }
                    printf("| %d | %d | %s | %dp | %.6g | %.6g | %.6g | "
                           "%.2f%% | %s | %.2f | %ld | %.6g |\n", pps[i],
                           ms[j], times[t].name, n, h.predicted.cost,
                           s.predicted.cost, s.solver.bound,
                           100 * s.solver.gap, s.solver.status,
                           s.solver.seconds, s.solver.nodes,
                           zb_bound_cost(&p));
                    fflush(stdout);
                    zb_schedule_release(&h);
                    zb_schedule_release(&s);
                    zb_profile_release(&p);
                }
    return 0;
}
