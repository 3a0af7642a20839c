/* retime.c - a finished order timed with each stage boundary's own
 * transfer time, and those times from the bytes and the links.
 *
 * The simulator (sim.h) takes one comm for every edge; a plan's
 * boundaries differ (an inter-node hop, a stage whose last layer sends
 * less), so this is the simulator's rule, a pass starts when its rank is
 * free and its inputs have arrived, with comm looked up per edge. Ranks
 * are swept in turn, each running its list as far as its inputs allow:
 * the order is fixed, so the times do not depend on the sweep. */
#include <math.h>
#include <stdlib.h>
#include "split/split_int.h"
#include "zbsched/pass.h"
#include "zbsched/xalloc.h"

void zb_plan_boundary_comm(const struct zb_model *m,
                           const struct zb_plan_request *rq,
                           const struct zb_profile *shape, const int *counts,
                           double *comm)
{
    const struct zb_link *l = &rq->link;
    double unit = zb_time_unit_seconds(m->time_unit);
    int n = zb_profile_stages(shape), last = -1;

    for (int s = 0; s + 1 < n; s++) {
        int a = zb_profile_stage_rank(shape, s);
        int b = zb_profile_stage_rank(shape, s + 1);
        double bw = l->bandwidth, bytes;

        last += counts[s];
        bytes = m->layers[last].out_bytes;
        if (a == b) {
            comm[s] = 0;
            continue;
        }
        if (l->gpus_per_node > 0 &&
            a / l->gpus_per_node != b / l->gpus_per_node)
            bw = l->inter_bandwidth;
        comm[s] = (l->latency + (isinf(bw) ? 0 : bytes / bw)) / unit;
    }
}

/* Comm on the edge between stages a and b (adjacent, either order). */
static double edge(const struct zb_profile *p, const double *comm, int a,
                   int b)
{
    if (zb_profile_stage_rank(p, a) == zb_profile_stage_rank(p, b))
        return 0;
    return comm[a < b ? a : b];
}

int zb_plan_retime(const struct zb_schedule *s, const double *comm,
                   double *cost, double *makespan, double *bubble_ratio,
                   struct zb_error *err)
{
    const struct zb_profile *p = &s->profile;
    long npass = zb_pass_count(p);
    double *end = zb_xmalloc((size_t)npass * sizeof(*end));
    double *clock = zb_xcalloc((size_t)p->pp, sizeof(*clock));
    double *first = zb_xmalloc((size_t)p->pp * sizeof(*first));
    int *pos = zb_xcalloc((size_t)p->pp, sizeof(*pos));
    double busy = 0, lo = INFINITY, hi = -INFINITY;
    bool progress = true, done = false;
    int rc = 0;

    for (long i = 0; i < npass; i++)
        end[i] = NAN;
    for (int r = 0; r < p->pp; r++)
        first[r] = NAN;
    while (progress && !done) {
        progress = false;
        done = true;
        for (int r = 0; r < p->pp; r++) {
            const struct zb_op_list *l = &s->ranks[r];
            for (; pos[r] < l->n; pos[r]++) {
                const struct zb_op *op = &l->ops[pos[r]];
                struct zb_op part[2];
                struct zb_dep dep[2];
                double t = clock[r], d = zb_op_duration(p, op);
                int np, nd;
                bool ready = true;

                if (!zb_op_is_compute(op->kind))
                    continue;
                np = zb_op_split(op, part);
                for (int h = 0; h < np && ready; h++) {
                    nd = zb_pass_deps(p, part[h].kind, part[h].stage,
                                      part[h].mb, dep);
                    for (int k = 0; k < nd; k++) {
                        double e = end[zb_pass_index(p, dep[k].pass,
                                                     dep[k].stage,
                                                     dep[k].mb)];
                        if (isnan(e)) {
                            ready = false;
                            break;
                        }
                        e += edge(p, comm, dep[k].stage, part[h].stage);
                        if (e > t)
                            t = e;
                    }
                }
                if (!ready)
                    break;
                clock[r] = t + d;
                busy += d;
                if (isnan(first[r]))
                    first[r] = t;
                if (t < lo)
                    lo = t;
                if (t + d > hi)
                    hi = t + d;
                for (int h = 0; h < np; h++) {
                    enum zb_pass k = zb_pass_of(part[h].kind);
                    end[zb_pass_index(p, k, part[h].stage, part[h].mb)] =
                        t + d;
                    if (part[h].kind == ZB_OP_BW)
                        end[zb_pass_index(p, ZB_PASS_W, part[h].stage,
                                          part[h].mb)] = t + d;
                }
                progress = true;
            }
            if (pos[r] < l->n)
                done = false;
        }
    }
    if (!done) {
        rc = zb_error_set(err, ZB_EILLEGAL, "re-timing: a pass waits on "
                          "one that never runs");
        goto out;
    }
    *cost = 0;
    for (int r = 0; r < p->pp; r++)
        if (!isnan(first[r]) && clock[r] - first[r] > *cost)
            *cost = clock[r] - first[r];
    *makespan = hi - lo;
    *bubble_ratio = *cost > 0 ? 1 - busy / (p->pp * *cost) : 0;
out:
    free(end);
    free(clock);
    free(first);
    free(pos);
    return rc;
}
