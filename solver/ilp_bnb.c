/* ilp_bnb.c - the proving worker: the full model under the incumbent's
 * horizon, solved by GLPK's branch and cut until it proves the best order
 * optimal or time runs out. Its tree bound is a global bound. */
#include "ilp_workers.h"

/* Above this many binaries after propagation the root LP alone takes
 * tens of seconds and only reaches the closed-form bound: windows pay
 * better (docs/tuning.md, "ILP size limits"). */
#define ILP_BNB_MAX_FREE 4000

bool zbi_ilp_bnb_prepare(struct ilp_shared *sh, struct ilp_rel *rel)
{
    zbi_ilp_rel_init(rel, sh->in);
    rel->cancel = zbi_ilp_shared_cancel;
    rel->cancel_arg = sh;
    zbi_ilp_rel_fix_memory(rel);
    /* The incumbent meets the horizon, so failing here would be a bug:
     * then only window search runs. */
    if (!zbi_ilp_rel_prepare(rel, zbi_ilp_shared_best(sh)))
        return false;
    return rel->nfree <= ILP_BNB_MAX_FREE;
}

void zbi_ilp_bnb_run(struct ilp_shared *sh, struct ilp_rel *rel)
{
    struct ilp_model *md;
    struct ilp_mip_result res;

    rel->obj_lb = sh->independent ? 0 : zbi_ilp_shared_lower(sh);
    md = zbi_ilp_model_build(rel, false);
    if (zbi_ilp_mip_solve(md, sh, true, sh->deadline - zb_clock_now(),
                          &res) == 0 && res.proven)
        /* Nothing under GLPK's final incumbent, and every incumbent GLPK
         * held was offered to the shared best: that best is optimal. */
        zbi_ilp_shared_bound(sh, res.bound);
    zbi_ilp_model_free(md);
}
