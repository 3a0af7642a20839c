/* ilp_inst.c - the solver's view of a profile: every pass with its rank,
 * duration, memory change and intrinsic predecessors, and each rank's
 * fixed start time under as-soon-as-possible timing. */
#include <math.h>
#include <stdlib.h>
#include "ilp.h"
#include "zbsched/dp.h"
#include "zbsched/pass.h"
#include "zbsched/xalloc.h"

static const enum zb_op_kind pass_op[ZB_PASS_COUNT] = {
    [ZB_PASS_F] = ZB_OP_F, [ZB_PASS_B] = ZB_OP_B, [ZB_PASS_W] = ZB_OP_W,
};

static void add_pred(struct ilp_inst *in, int to, int from)
{
    double w = in->dur[from] + ilp_lag(in, from, to);
    in->pred[to][in->npred[to]++] = (struct ilp_arc){ from, w };
}

/* The collectives' times per stage (dp.h, in the profile's units: the
 * model's, ilp_scale.c). A rank's UNSHARDs are placed in the order of
 * its stages' first passes, which is the stages' order (a rank's higher
 * stage needs its lower one's output), and run one after another. */
static void step_init(struct ilp_inst *in)
{
    const struct zb_profile *p = in->p;

    if (!in->step)
        return;
    in->reduce = zb_xmalloc((size_t)in->S * sizeof(double));
    in->gathered = zb_xcalloc((size_t)in->S, sizeof(double));
    for (int s = 0; s < in->S; s++)
        in->reduce[s] = zb_dp_op_time(p, ZB_OP_REDUCE_GRAD, s);
    for (int r = 0; p->dp.zero >= 3 && r < p->pp; r++) {
        double t = 0;
        for (int s = 0; s < in->S; s++)
            if (zb_profile_stage_rank(p, s) == r) {
                t += zb_dp_op_time(p, ZB_OP_UNSHARD, s);
                in->gathered[s] = t;
            }
    }
}

/* The step ends at least this long after rank r's compute: its last
 * compute op is a W (an F or B has its own B or W after it on the rank),
 * and that stage's reduce follows. */
static double least_reduce(const struct ilp_inst *in, int r)
{
    double least = INFINITY;

    for (int c = 0; c < in->p->vpp; c++)
        least = fmin(least,
                     in->reduce[zb_profile_rank_stage(in->p, r, c)]);
    return least;
}

void zbi_ilp_inst_init(struct ilp_inst *in, const struct zb_profile *p,
                       enum zb_objective obj)
{
    const int S = zb_profile_stages(p), m = p->microbatches;

    *in = (struct ilp_inst){ .p = p, .objective = obj, .S = S, .m = m,
                             .n = (int)zb_pass_count(p),
                             .step = zb_dp_active(p) };
    in->dur = zb_xmalloc((size_t)in->n * sizeof(double));
    in->delta = zb_xmalloc((size_t)in->n * sizeof(double));
    in->rank = zb_xmalloc((size_t)in->n * sizeof(int));
    in->slot = zb_xmalloc((size_t)in->n * sizeof(int));
    in->pred = zb_xmalloc((size_t)in->n * sizeof(*in->pred));
    in->npred = zb_xcalloc((size_t)in->n, sizeof(int));
    in->rank_n = zb_xcalloc((size_t)p->pp, sizeof(int));
    in->rank_pass = zb_xmalloc((size_t)p->pp * sizeof(int *));
    for (int r = 0; r < p->pp; r++)
        in->rank_pass[r] = zb_xmalloc((size_t)3 * p->vpp * m * sizeof(int));

    for (int k = 0; k < ZB_PASS_COUNT; k++)
        for (int s = 0; s < S; s++)
            for (int i = 0; i < m; i++) {
                int a = (int)zb_pass_index(p, k, s, i);
                int r = zb_profile_stage_rank(p, s);
                const struct zb_stage_times *t = &p->stage[s];
                in->dur[a] = k == ZB_PASS_F ? t->f
                           : k == ZB_PASS_B ? t->b : t->w;
                in->delta[a] = zb_pass_memory_delta(p, pass_op[k], s);
                in->rank[a] = r;
                in->slot[a] = in->rank_n[r];
                in->rank_pass[r][in->rank_n[r]++] = a;
            }
    for (int k = 0; k < ZB_PASS_COUNT; k++)
        for (int s = 0; s < S; s++)
            for (int i = 0; i < m; i++) {
                int a = (int)zb_pass_index(p, k, s, i);
                struct zb_dep deps[2];
                int nd = zb_pass_deps(p, pass_op[k], s, i, deps);
                for (int d = 0; d < nd; d++)
                    add_pred(in, a, (int)zb_pass_index(p, deps[d].pass,
                                                      deps[d].stage,
                                                      deps[d].mb));
                /* Same-kind passes of a stage run in microbatch order:
                 * no loss, since renumbering microbatches by start time
                 * keeps any legal timing legal (docs/ilp.md). */
                if (i > 0)
                    add_pred(in, a, a - 1);
            }

    /* Under as-soon-as-possible timing (the simulator's) F(r, 0) is the
     * first pass of rank r and starts when microbatch 0 arrives from
     * F(r-1, 0), itself the first pass of rank r-1, and (ZeRO-3) its
     * stage's gather, the first on its rank, has ended: a constant. */
    step_init(in);
    in->start = zb_xmalloc((size_t)p->pp * sizeof(double));
    in->first = zb_xmalloc((size_t)p->pp * sizeof(int));
    in->off = zb_xmalloc((size_t)p->pp * sizeof(double));
    for (int r = 0; r < p->pp; r++) {
        int lo = zb_profile_rank_stage(p, r, 0);
        for (int c = 1; c < p->vpp; c++)
            if (zb_profile_rank_stage(p, r, c) < lo)
                lo = zb_profile_rank_stage(p, r, c);
        in->first[r] = (int)zb_pass_index(p, ZB_PASS_F, lo, 0);
    }
    for (int r = 0; r < p->pp; r++) {
        /* Summed as the simulator sums, so the values match exactly. */
        double t = 0;
        int lo = in->first[r] - (int)zb_pass_index(p, ZB_PASS_F, 0, 0);
        lo /= m;
        for (int s = 0; s < lo; s++) {
            if (in->step)
                t = fmax(t, in->gathered[s]);
            t = zb_timing_arrival(p, s, s + 1, zb_profile_stage_rank(p, s + 1),
                                  t + p->stage[s].f);
        }
        if (in->step)
            t = fmax(t, in->gathered[lo]);
        in->start[r] = t;
        in->off[r] = in->step ? -least_reduce(in, r)
                   : obj == ZB_OBJECTIVE_COST ? t : 0;
    }
}

bool zb_ilp_searchable(const struct zb_profile *p)
{
    /* Every rank holds vpp chunks, three passes per chunk and microbatch. */
    return zb_pass_count(p) <= ILP_MAX_PASSES &&
           3L * p->vpp * p->microbatches <= ILP_MAX_RANK_PASSES;
}

bool zbi_ilp_inst_searchable(const struct ilp_inst *in)
{
    return zb_ilp_searchable(in->p);
}

void zbi_ilp_inst_release(struct ilp_inst *in)
{
    if (!in->dur)
        return;
    for (int r = 0; r < in->p->pp; r++)
        free(in->rank_pass[r]);
    free(in->rank_pass);
    free(in->rank_n);
    free(in->dur);
    free(in->delta);
    free(in->rank);
    free(in->slot);
    free(in->pred);
    free(in->npred);
    free(in->start);
    free(in->first);
    free(in->off);
    free(in->reduce);
    free(in->gathered);
    in->dur = NULL;
}
