/* profile_out.c - --profile-out FILE: a profile measured from the run,
 * closing the loop profile -> schedule -> run -> profile.
 *
 * Per stage the median F, B and W over the measured iterations'
 * microbatches (p10 and p90 printed beside them); `comm` is the slowest
 * neighbouring rank pair's half median round trip of an activation-sized
 * message over the backend's own transport; in model mode M_B and M_W are
 * what the first F and W of a stage added and freed (MiB), and with data
 * parallelism the model state as this executor holds it. Times are in
 * profile units (ms / --time-unit: ms by default). */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "exec.h"
#include "zbsched/dp.h"
#include "zbsched/io.h"
#include "zbsched/json.h"
#include "zbsched/xalloc.h"

#define PINGS 21
#define WARMUP_PINGS 3
#define MIB (1024.0 * 1024.0)

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* The q-quantile of v[0..n-1] (sorted here), interpolated between ranks;
 * q = 0.5 is the median. */
static double quantile(double *v, int n, double q)
{
    if (n == 0)
        return 0;
    qsort(v, (size_t)n, sizeof(*v), cmp_double);
    double pos = q * (n - 1);
    int lo = (int)floor(pos);
    if (lo + 1 >= n)
        return v[n - 1];
    return v[lo] + (pos - lo) * (v[lo + 1] - v[lo]);
}

static int ping(struct exec *x, float *buf, bool send, int peer, int rep,
                struct zb_error *err)
{
    struct xmsg m = { .send = send, .peer = peer, .op = -1,
                      .buf = send ? buf : NULL, .n = xfer_floats(x) };
    int rc;

    m.hdr = (struct msg_header){ MSG_MAGIC, MSG_PING, 0, rep, x->iter,
                                 (int32_t)(m.n - MSG_HDR_FLOATS), 0, 0 };
    if ((rc = x->be->post(x, &m, err)) < 0)     /* writes a send's header */
        return rc;
    rc = xfer_wait(x, &m, err);
    if (!send)      /* post() allocated it */
        x->m->release(x->dev, m.buf);
    return rc;
}

/* Half the median round trip between this rank and peer (lead: this
 * rank sends first and keeps the result); buf is the send buffer. */
static int round_trip(struct exec *x, int peer, bool lead, float *buf,
                      double *out, struct zb_error *err)
{
    double rtt[PINGS];
    int rc = 0;

    for (int k = 0; k < WARMUP_PINGS + PINGS && !rc; k++) {
        double t0 = exec_now();
        rc = ping(x, buf, lead, peer, k, err);
        if (!rc)
            rc = ping(x, buf, !lead, peer, k, err);
        if (k >= WARMUP_PINGS)
            rtt[k - WARMUP_PINGS] = exec_now() - t0;
    }
    *out = lead ? quantile(rtt, PINGS, 0.5) / 2 / x->opt.time_unit : 0;
    return rc;
}

/* The distinct rank pairs that hold neighbouring stages, as (a < b) in
 * lexicographic order: every rank walks them in the same order, so the
 * exchanges cannot wait on each other in a cycle. */
static int neighbour_pairs(const struct zb_profile *p, int *pairs)
{
    int n = 0;

    for (int a = 0; a < p->pp; a++)
        for (int b = a + 1; b < p->pp; b++)
            for (int s = 0; s + 1 < zb_profile_stages(p); s++) {
                int r0 = zb_profile_stage_rank(p, s);
                int r1 = zb_profile_stage_rank(p, s + 1);
                if ((r0 == a && r1 == b) || (r0 == b && r1 == a)) {
                    pairs[2 * n] = a;
                    pairs[2 * n + 1] = b;
                    n++;
                    break;
                }
            }
    return n;
}

/* comm[k] of pair k on rank 0 (reduced from the pairs' lower ranks). */
static int measure_comm(struct exec *x, const int *pairs, int n,
                        double *comm, struct zb_error *err)
{
    double *mine = zb_xcalloc((size_t)n + 1, sizeof(double));
    float *buf = x->m->alloc(x->dev, xfer_floats(x));
    int rc = 0;

    watchdog_phase("--profile-out: timing point-to-point messages");
    for (int k = 0; k < n && !rc; k++)
        if (pairs[2 * k] == x->rank || pairs[2 * k + 1] == x->rank) {
            bool lead = pairs[2 * k] == x->rank;
            rc = round_trip(x, pairs[2 * k + lead], lead, buf, &mine[k],
                            err);
        }
    x->m->release(x->dev, buf);
    /* A failed exchange leaves the peer waiting: abort, as in the replay. */
    if (rc < 0)
        exec_abort(x, err);
    watchdog_phase("--profile-out: gathering the round trips");
    rc = MPI_Reduce(mine, comm, n, MPI_DOUBLE, MPI_MAX, 0, x->comm);
    free(mine);
    return rc == MPI_SUCCESS ? 0 : exec_mpi_error(rc, "MPI_Reduce", err);
}

/* Signs of a timer that does not split the passes as named. */
static void sanity(const struct exec *x, const struct zb_profile *p)
{
    for (int s = 0; s < zb_profile_stages(p); s++) {
        const struct zb_stage_times *t = &p->stage[s];
        if (t->f <= 0 || t->b <= 0 || t->w <= 0)
            exec_warn(x->rank, "--profile-out: stage %d: a pass measured "
                      "0 (F %.3g, B %.3g, W %.3g), below the clock's "
                      "resolution or never run", s, t->f, t->b, t->w);
        if (t->w > 0 && t->w < 0.25 * t->b)
            exec_warn(x->rank, "--profile-out: stage %d: W (%.3g) is far "
                      "below B (%.3g): does B compute the weight gradient "
                      "too?", s, t->w, t->b);
        if (t->w > 0 && fabs(t->b - (t->f + t->w)) <= 0.1 * (t->f + t->w))
            exec_warn(x->rank, "--profile-out: stage %d: B (%.3g) is about "
                      "F + W (%.3g): does B's timer include W?", s, t->b,
                      t->f + t->w);
    }
    if (x->opt.iters < 2)
        exec_warn(x->rank, "--profile-out: one iteration, no warm-up: "
                  "first-touch costs are in the medians (use --iters 3)");
}

/* M_B and M_W in MiB from the first F and W of every stage (all alike in
 * the MLP: the largest); the limit stays the same multiple of M_B. */
static int measure_memory(struct exec *x, double *mb_mw,
                          struct zb_error *err)
{
    double mine[3] = { 0, 0, 0 };
    int rc;

    for (int c = 0; c < x->p->vpp; c++) {
        const double *d = &x->mem_delta[3 * c];
        mine[0] = fmax(mine[0], d[0]);
        mine[1] = fmax(mine[1], -d[2]);
        mine[2] = fmax(mine[2], fabs(d[0] + d[1] + d[2]));
    }
    rc = MPI_Reduce(mine, mb_mw, 3, MPI_DOUBLE, MPI_MAX, 0, x->comm);
    if (rc != MPI_SUCCESS)
        return exec_mpi_error(rc, "MPI_Reduce", err);
    if (x->rank == 0 && mb_mw[2] > 0)
        exec_warn(0, "--profile-out: a stage's F, B and W do not free what "
                  "they allocate (%.6g floats left)", mb_mw[2]);
    return 0;
}

/* Data parallelism: the model state of this executor (docs/zbexec.md),
 * fp32 weights and gradients and SGD's no optimizer state, each stage's
 * parameters counted, in the MiB of M_B; so a schedule made from the
 * profile predicts the model_state the run realizes. The ring model
 * then moves these bytes too; bandwidth and latency stay as given. */
static void state_model(const struct exec *x, struct zb_profile *prof)
{
    for (int s = 0; s < zb_profile_stages(prof); s++)
        prof->dp.params[s] = (double)x->nparam;
    prof->dp.bytes_weight = prof->dp.bytes_grad = sizeof(float);
    prof->dp.bytes_optim = 0;
    prof->dp.unit_bytes = MIB;
}

static void print_spread(const struct exec *x, const double *q, int S,
                         const int *pairs, const double *comm, int np)
{
    static const char *const names[3] = { "F", "B", "W" };

    printf("profile: times in profile units, median [p10, p90] over "
           "%d microbatches a stage\n", (x->opt.iters - (x->opt.iters > 1)) *
                                       x->p->microbatches);
    for (int s = 0; s < S; s++) {
        printf("profile: stage %d:", s);
        for (int k = 0; k < 3; k++)
            printf(" %s %.4g [%.4g, %.4g]", names[k], q[9 * s + 3 * k],
                   q[9 * s + 3 * k + 1], q[9 * s + 3 * k + 2]);
        printf("\n");
    }
    for (int k = 0; k < np; k++)
        printf("profile: comm ranks %d-%d: %.4g\n", pairs[2 * k],
               pairs[2 * k + 1], comm[k]);
    fflush(stdout);
}

int profile_write(struct exec *x, struct zb_error *err)
{
    const struct zb_profile *sp = x->p;
    const int mbs = sp->microbatches, first = x->opt.iters > 1 ? 1 : 0;
    const int per = x->opt.iters * mbs, n = (x->opt.iters - first) * mbs;
    const int S = zb_profile_stages(sp);
    static const double qs[3] = { 0.5, 0.1, 0.9 };
    /* [chunk][F, B, W][median, p10, p90] here, [rank] of those on 0 */
    double *mine = zb_xcalloc((size_t)9 * sp->vpp, sizeof(double));
    double *all = zb_xcalloc((size_t)9 * sp->vpp * sp->pp, sizeof(double));
    double *q = zb_xcalloc((size_t)9 * S, sizeof(double));
    int *pairs = zb_xcalloc((size_t)2 * sp->pp * sp->pp, sizeof(int));
    double *comm = zb_xcalloc((size_t)sp->pp * sp->pp + 1, sizeof(double));
    double mem[3] = { 0, 0, 0 };
    struct zb_profile prof = { 0 };
    int np = neighbour_pairs(sp, pairs), rc = 0;
    char *text;

    for (int c = 0; c < sp->vpp; c++)
        for (int k = 0; k < 3; k++)
            for (int j = 0; j < 3; j++)
                mine[9 * c + 3 * k + j] =
                    quantile(x->durations + (size_t)(3 * c + k) * per +
                             (size_t)first * mbs, n, qs[j]) /
                    x->opt.time_unit;
    if ((rc = measure_comm(x, pairs, np, comm, err)) < 0)
        goto out;
    if (!x->opt.synthetic && (rc = measure_memory(x, mem, err)) < 0)
        goto out;
    watchdog_phase("--profile-out: gathering the medians");
    rc = MPI_Gather(mine, 9 * sp->vpp, MPI_DOUBLE, all, 9 * sp->vpp,
                    MPI_DOUBLE, 0, x->comm);
    if (rc != MPI_SUCCESS) {
        rc = exec_mpi_error(rc, "MPI_Gather", err);
        goto out;
    }
    if (x->rank != 0)
        goto out;
    zb_profile_copy(&prof, sp);
    for (int s = 0; s < S; s++) {
        const double *v = &all[9 * (zb_profile_stage_rank(sp, s) * sp->vpp +
                                    zb_profile_stage_chunk(sp, s))];
        memcpy(&q[9 * s], v, 9 * sizeof(double));
        prof.stage[s] = (struct zb_stage_times){ v[0], v[3], v[6] };
    }
    prof.comm = 0;
    for (int k = 0; k < np; k++)
        prof.comm = fmax(prof.comm, comm[k]);
    if (!x->opt.synthetic) {
        /* Synthetic runs hold no activations: their memory stays the
         * schedule's. */
        prof.m_b = mem[0] * sizeof(float) / MIB;
        prof.m_w = mem[1] * sizeof(float) / MIB;
        for (int r = 0; r < sp->pp; r++)
            prof.mem_limit[r] = sp->mem_limit[r] / sp->m_b * prof.m_b;
        if (zb_dp_active(sp))
            state_model(x, &prof);
    }
    print_spread(x, q, S, pairs, comm, np);
    sanity(x, &prof);
    text = zb_json_format_profile(&prof);
    rc = zb_io_write_file(x->opt.profile_out, text, strlen(text), err);
    free(text);
    zb_profile_release(&prof);
out:
    free(mine);
    free(all);
    free(q);
    free(pairs);
    free(comm);
    return rc;
}
