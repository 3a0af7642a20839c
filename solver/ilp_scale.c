/* ilp_scale.c - the profile in the model's units. GLPK's simplex works in
 * absolute tolerances and fails internal assertions on badly scaled models
 * (profiled microseconds: coefficients of 1e4-1e6 beside binaries of 1);
 * the search therefore runs on a copy whose pass durations are about 1 and
 * whose activation memory is 1, and only the results are scaled back.
 * Every timing rule is homogeneous in the durations, so the orders and
 * their ranking are the same in both units. */
#include <math.h>
#include "ilp.h"

double zbi_ilp_scale_profile(const struct zb_profile *p,
                             struct zb_profile *out)
{
    const int S = zb_profile_stages(p);
    double sum = 0, unit;

    zb_profile_copy(out, p);
    for (int s = 0; s < S; s++)
        sum += p->stage[s].f + p->stage[s].b + p->stage[s].w;
    unit = sum / (3.0 * S);
    if (!(unit > 0) || !isfinite(unit))
        unit = 1;       /* all passes take no time: nothing to scale */
    for (int s = 0; s < S; s++) {
        out->stage[s].f /= unit;
        out->stage[s].b /= unit;
        out->stage[s].w /= unit;
    }
    out->comm /= unit;
    for (int s = 0; out->stage_comm && s < S; s++)
        out->stage_comm[s] /= unit;
    /* Collective times (dp.h) in the same unit: latency and given times
     * are times, bandwidth is bytes per time. */
    out->dp.latency /= unit;
    out->dp.bandwidth *= unit;
    out->dp.all_reduce /= unit;
    out->dp.reduce_scatter /= unit;
    out->dp.all_gather /= unit;
    if (p->m_b > 0) {
        out->m_b = 1;
        out->m_w = p->m_w / p->m_b;
        for (int r = 0; r < p->pp; r++)
            out->mem_limit[r] = p->mem_limit[r] / p->m_b;
        for (int s = 0; out->stage_mem && s < S; s++) {
            out->stage_mem[s].m_b /= p->m_b;
            out->stage_mem[s].m_w /= p->m_b;
        }
    }
    return unit;
}
