/* boundary_comm.c - the links of a plan: each stage boundary's transfer
 * time from the bytes its last layer sends and the link it crosses (a
 * plan's boundaries differ: an inter-node hop, a stage whose last layer
 * sends less), and the link of the data-parallel ring. */
#include <math.h>
#include "split/split_int.h"

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

/* The one rule for the data-parallel ring's link (docs/plan.md, "Data
 * parallelism"): each replica's pp ranks sit consecutively, as the
 * boundaries assume, so the replicas of rank r are ranks r + k pp. A ring
 * that stays on one node (no --gpus-per-node: every rank does) runs at
 * the link's bandwidth; one that crosses a node, at the inter-node
 * bandwidth, its slowest hop. Latency: the link's. Given values win. */
void zb_plan_dp_link(const struct zb_plan_request *rq, double *bandwidth,
                     double *latency)
{
    const struct zb_link *l = &rq->link;
    bool cross = false;

    for (int r = 0; l->gpus_per_node > 0 && r < rq->pp && !cross; r++)
        cross = r / l->gpus_per_node !=
                (r + (long long)(rq->dp - 1) * rq->pp) / l->gpus_per_node;
    *bandwidth = cross ? l->inter_bandwidth : l->bandwidth;
    *latency = l->latency;
    if (!isnan(rq->dpx.bandwidth))
        *bandwidth = rq->dpx.bandwidth;
    if (!isnan(rq->dpx.latency))
        *latency = rq->dpx.latency;
}
