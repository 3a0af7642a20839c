/* improve_step.c - the step's end for the local search with data
 * parallelism (improve_step.h). */
#include <math.h>
#include <stdlib.h>
#include "search/improve_step.h"
#include "zbsched/dp.h"
#include "zbsched/xalloc.h"

void zbi_improve_step_init(struct improve_step *x,
                           const struct improve_state *st)
{
    const struct zb_profile *p = st->p;
    const int n = zb_profile_stages(p);
    int *last;

    *x = (struct improve_step){ .on = zb_dp_active(p), .pp = p->pp,
                                .vpp = p->vpp };
    if (!x->on)
        return;
    /* Same-class passes of a stage keep their order in every move, so
     * the stage's last W stays the one of the highest microbatch. */
    last = zb_xmalloc((size_t)n * sizeof(int));
    for (int s = 0; s < n; s++)
        last[s] = -1;
    for (int id = 0; id < st->nops; id++) {
        const struct improve_op *o = &st->op[id];
        if ((o->kind == ZB_OP_W || o->kind == ZB_OP_BW) &&
            (last[o->stage] < 0 || st->op[last[o->stage]].mb < o->mb))
            last[o->stage] = id;
    }
    x->last = zb_xmalloc((size_t)p->pp * p->vpp * sizeof(int));
    x->reduce = zb_xmalloc((size_t)p->pp * p->vpp * sizeof(double));
    for (int r = 0; r < p->pp; r++)
        for (int c = 0; c < p->vpp; c++) {
            int s = zb_profile_rank_stage(p, r, c);
            x->last[r * p->vpp + c] = last[s];
            x->reduce[r * p->vpp + c] =
                zb_dp_op_time(p, ZB_OP_REDUCE_GRAD, s);
        }
    free(last);
}

void zbi_improve_step_release(struct improve_step *x)
{
    free(x->last);
    free(x->reduce);
    x->last = NULL;
    x->reduce = NULL;
}

double zbi_improve_step_end(const struct improve_step *x,
                            const struct improve_state *st)
{
    double step = 0;

    for (int r = 0; r < x->pp; r++) {
        const int *last = x->last + r * x->vpp;
        const double *reduce = x->reduce + r * x->vpp;
        double t = 0;
        int prev = -1;
        /* The rank's reduces in the list order of their Ws, as the
         * simulator runs them: a selection by position, vpp^2 with vpp a
         * few chunks. */
        for (int k = 0; k < x->vpp; k++) {
            int pick = -1;
            for (int c = 0; c < x->vpp; c++)
                if (last[c] >= 0 && st->pos[last[c]] > prev &&
                    (pick < 0 || st->pos[last[c]] < st->pos[last[pick]]))
                    pick = c;
            if (pick < 0)
                break;
            prev = st->pos[last[pick]];
            t = fmax(t, st->end[last[pick]]) + reduce[pick];
        }
        step = fmax(step, t);
    }
    return step;
}
