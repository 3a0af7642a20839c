/* bench_solver_check.c - the slow test grids, whole (the unit suite
 * runs a slice of each): the closed-form bound never above a proven
 * optimum nor the best of every order of a tiny instance
 * (tests/unit/solver_grids.h, bound_grids.h), and ilp never worse than
 * zb on random uneven profiles. Prints a row an instance and a summary;
 * exits 1, naming the instance, when a check fails. `make bench` runs
 * it:  build/tools/bench_solver_check [SECONDS]  (60 a bound instance;
 * the random grid runs 1 s each, as the unit test did). */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include "../tests/unit/bound_grids.h"
#include "../tests/unit/solver_grids.h"

static double now(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void print_row(const char *grid, int i, const struct grid_row *r,
                      double secs)
{
    printf("%-6s %3d  %-40s %-10s %10.6g %10.6g %7.2f  %s\n", grid, i,
           r->what, r->status, r->objective, r->other, secs,
           r->violation[0] ? "VIOLATED" : "ok");
    if (r->violation[0])
        fprintf(stderr, "bench_solver_check: %s %d (%s): %s\n", grid, i,
                r->what, r->violation);
}

/* Every shape of the bound grid under the integer program alone. */
static int bound_check(double seconds)
{
    static struct shape shapes[BOUND_GRID_MAX];
    int n = bound_grid(shapes, BOUND_GRID_MAX), proven = 0, tight = 0;
    int bad = 0;

    if (n > BOUND_GRID_MAX) {
        fprintf(stderr, "bench_solver_check: BOUND_GRID_MAX < %d\n", n);
        return 1;
    }
    for (int i = 0; i < n; i++) {
        struct grid_row r;
        double t0 = now();

        bad += !bound_grid_check(&shapes[i], seconds, &r);
        proven += r.proven;
        tight += r.tight;
        print_row("bound", i, &r, now() - t0);
    }
    printf("bound: %d instances, %d proven, %d with the bound tight\n", n,
           proven, tight);
    /* A loaded machine may leave one or two unproven; nearly all must be,
     * and a grid where the bound is always tight proves nothing. */
    if (proven < n - 2 || tight >= proven) {
        fprintf(stderr, "bench_solver_check: bound grid: %d of %d proven, "
                "%d tight\n", proven, n, tight);
        bad++;
    }
    return bad;
}

/* The exhaustive grids: every trial of every family. */
static int orders_check(void)
{
    int bad = 0;

    for (int g = 0; g < ORDER_GRIDS; g++) {
        struct order_tally t;
        double t0 = now();
        bool ok = order_grid_check(&order_grids[g], 1, &t);

        printf("orders %-10s %d instances, the bound tight in %d, %.1f s"
               "  %s\n", order_grids[g].name, t.cases, t.tight, now() - t0,
               ok ? "ok" : "VIOLATED");
        if (!ok) {
            fprintf(stderr, "bench_solver_check: orders %s: %s\n",
                    order_grids[g].name, t.violation);
            bad++;
        }
    }
    return bad;
}

/* The random grid: 24 profiles from seed 2024, 1 s of search each. */
static int random_check(void)
{
    unsigned seed = 2024;
    int bad = 0;

    for (int i = 0; i < 24; i++) {
        struct grid_row r;
        double t0 = now();

        bad += !random_grid_check(&seed, 1, &r);
        print_row("random", i, &r, now() - t0);
    }
    printf("random: 24 profiles, ilp never worse than zb\n");
    return bad;
}

int main(int argc, char **argv)
{
    double seconds = argc > 1 ? atof(argv[1]) : 60;
    int bad;

    printf("%-6s %3s  %-40s %-10s %10s %10s %7s  %s\n", "grid", "#",
           "instance", "status", "ilp", "LB2|zb", "seconds", "check");
    bad = orders_check() + bound_check(seconds) + random_check();
    if (bad) {
        fprintf(stderr, "bench_solver_check: %d check(s) FAILED\n", bad);
        return 1;
    }
    printf("every check held\n");
    return 0;
}
