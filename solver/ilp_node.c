/* ilp_node.c - constraint propagation at branch-and-bound nodes: the
 * orders GLPK has fixed by branching, plus the relation the model was
 * built from, propagated under "better than the incumbent". When that
 * empties a start window the whole subtree holds nothing better, which
 * the LP relaxation often does not see: at the root the same propagation
 * proves optima the LP bound stays far below (docs/ilp.md). */
#include <glpk.h>
#include "ilp.h"

bool zbi_ilp_node_refuted(const struct ilp_model *md, glp_prob *P,
                          double horizon)
{
    const struct ilp_rel *base = zbi_ilp_model_rel(md);
    const int col_y = zbi_ilp_model_col_y(md);
    struct ilp_rel rel;
    bool ok;

    zbi_ilp_rel_init(&rel, base->in);
    rel.cancel = base->cancel;
    rel.cancel_arg = base->cancel_arg;
    for (int e = 0; e < base->nextra; e++)
        zbi_ilp_rel_add(&rel, base->extra[e].a, base->extra[e].b);
    for (int k = 0; k < base->nfree; k++) {
        const struct ilp_pair *pr = &base->free[k];
        if (glp_get_col_lb(P, col_y + k) > 0.5)
            zbi_ilp_rel_add(&rel, pr->a, pr->b);
        else if (glp_get_col_ub(P, col_y + k) < 0.5)
            zbi_ilp_rel_add(&rel, pr->b, pr->a);
    }
    ok = zbi_ilp_rel_prepare(&rel, horizon) || rel.cancelled;
    zbi_ilp_rel_release(&rel);
    return !ok;
}
