/* profile_out.c - --profile-out FILE: a profile measured from the run,
 * closing the loop profile -> schedule -> run -> profile.
 *
 * Per stage the median F, B and W over the measured iterations'
 * microbatches; `comm` is half the median round trip of an activation-
 * sized message between ranks 0 and 1 over the backend's own transport.
 * Times are in profile units (ms / --time-unit: ms by default). */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "exec.h"
#include "zbsched/io.h"
#include "zbsched/json.h"
#include "zbsched/xalloc.h"

#define PINGS 21
#define WARMUP_PINGS 3

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *v, int n)
{
    if (n == 0)
        return 0;
    qsort(v, (size_t)n, sizeof(*v), cmp_double);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static int ping(struct exec *x, float *buf, bool send, int peer, int rep,
                struct zb_error *err)
{
    struct xmsg m = { .send = send, .peer = peer, .op = -1, .buf = buf,
                      .n = xfer_floats(x) };
    int rc;

    m.hdr = (struct msg_header){ MSG_MAGIC, MSG_PING, 0, rep, x->iter,
                                 (int32_t)(m.n - MSG_HDR_FLOATS), 0, 0 };
    if (send)
        x->m->upload(x->dev, buf, (const float *)&m.hdr, MSG_HDR_FLOATS);
    if ((rc = x->be->post(x, &m, err)) < 0)
        return rc;
    return xfer_wait(x, &m, err);
}

/* Round trips between ranks 0 and 1; rank 0 returns half the median. */
static int measure_comm(struct exec *x, double *out, struct zb_error *err)
{
    double rtt[PINGS];
    float *buf;
    int rc = 0;

    *out = 0;
    if (x->rank > 1 || x->nranks < 2)
        return 0;
    watchdog_phase("--profile-out: timing point-to-point messages");
    buf = x->m->alloc(x->dev, xfer_floats(x));
    for (int k = 0; k < WARMUP_PINGS + PINGS && !rc; k++) {
        double t0 = exec_now();
        /* Rank 0 sends first, rank 1 answers. */
        rc = ping(x, buf, x->rank == 0, 1 - x->rank, k, err);
        if (!rc)
            rc = ping(x, buf, x->rank == 1, 1 - x->rank, k, err);
        if (k >= WARMUP_PINGS)
            rtt[k - WARMUP_PINGS] = exec_now() - t0;
    }
    x->m->release(x->dev, buf);
    if (rc < 0)
        return rc;
    *out = median(rtt, PINGS) / 2 / x->opt.time_unit;
    return 0;
}

/* B including W's work shows as W far below F while B is about 2F. */
static void sanity(const struct exec *x, const struct zb_profile *p)
{
    for (int s = 0; s < zb_profile_stages(p); s++) {
        const struct zb_stage_times *t = &p->stage[s];
        if (t->w < 0.25 * t->f && t->b > 1.6 * t->f)
            exec_warn(x->rank, "--profile-out: stage %d: W (%.3g) is far "
                      "below F (%.3g) while B (%.3g) is about 2F: does B "
                      "compute the weight gradient too?", s, t->w, t->f,
                      t->b);
        if (t->f <= 0 || t->b <= 0 || t->w <= 0)
            exec_warn(x->rank, "--profile-out: stage %d: a pass measured "
                      "0, below the clock's resolution", s);
    }
    if (x->opt.iters < 2)
        exec_warn(x->rank, "--profile-out: one iteration, no warm-up: "
                  "first-touch costs are in the medians (use --iters 3)");
}

int profile_write(struct exec *x, struct zb_error *err)
{
    const struct zb_profile *sp = x->p;
    const int mbs = sp->microbatches, first = x->opt.iters > 1 ? 1 : 0;
    const int per = x->opt.iters * mbs, n = (x->opt.iters - first) * mbs;
    double *mine = zb_xcalloc((size_t)3 * sp->vpp, sizeof(double));
    double *all = zb_xcalloc((size_t)3 * sp->vpp * sp->pp, sizeof(double));
    double comm = 0;
    struct zb_profile prof = { 0 };
    char *text;
    int rc = 0;

    for (int c = 0; c < sp->vpp; c++)
        for (int k = 0; k < 3; k++)
            mine[3 * c + k] = median(x->durations + (size_t)(3 * c + k) *
                                     per + (size_t)first * mbs, n) /
                              x->opt.time_unit;
    /* A failed exchange leaves the peer waiting: abort, as in the replay. */
    if (measure_comm(x, &comm, err) < 0)
        exec_abort(x, err);
    watchdog_phase("--profile-out: gathering the medians");
    rc = MPI_Gather(mine, 3 * sp->vpp, MPI_DOUBLE, all, 3 * sp->vpp,
                    MPI_DOUBLE, 0, MPI_COMM_WORLD);
    if (rc != MPI_SUCCESS) {
        rc = exec_mpi_error(rc, "MPI_Gather", err);
        goto out;
    }
    if (x->rank != 0)
        goto out;
    zb_profile_copy(&prof, sp);
    for (int s = 0; s < zb_profile_stages(sp); s++) {
        const double *v = &all[3 * (zb_profile_stage_rank(sp, s) * sp->vpp +
                                    zb_profile_stage_chunk(sp, s))];
        prof.stage[s] = (struct zb_stage_times){ v[0], v[1], v[2] };
    }
    prof.comm = comm;
    sanity(x, &prof);
    text = zb_json_format_profile(&prof);
    rc = zb_io_write_file(x->opt.profile_out, text, strlen(text), err);
    free(text);
    zb_profile_release(&prof);
out:
    free(mine);
    free(all);
    return rc;
}
