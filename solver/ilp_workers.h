/* ilp_workers.h - the searches that run in the worker threads: one
 * model's branch and cut (ilp_mip.c), the full model's proof (ilp_bnb.c)
 * and the window search (ilp_lns.c). They read and offer to the
 * blackboard (ilp_shared.h); the coordinator (ilp_search.h) starts them. */
#ifndef ZBSCHED_SOLVER_ILP_WORKERS_H
#define ZBSCHED_SOLVER_ILP_WORKERS_H

#include "ilp_shared.h"

/* ---- Solving one model (ilp_mip.c) ----------------------------------- */

struct ilp_mip_result {
    bool proven;            /* search finished: no better order exists */
    double bound;           /* proven bound on the model's objective */
    long nodes;
};

/* Branch and cut on md from the shared best order (injected as the
 * incumbent), for at most `seconds`. Improvements are offered to sh;
 * `global` (the full model) also raises sh's bound. ZB_ESOLVER when GLPK
 * fails: that only weakens the search, nothing is claimed from it; if it
 * failed inside (zbi_ilp_glpk_run), md is lost (zbi_ilp_model_lost) and the
 * reason goes to sh (zbi_ilp_shared_fail). */
int zbi_ilp_mip_solve(struct ilp_model *md, struct ilp_shared *sh, bool global,
                      double seconds, struct ilp_mip_result *res);

/* ---- Window search and branch and cut (ilp_bnb.c, ilp_lns.c) --------- */

/* Prepare the full model's relation under the best objective (ilp_bnb.c);
 * false when branch and cut would not pay (too many binaries). */
bool zbi_ilp_bnb_prepare(struct ilp_shared *sh, struct ilp_rel *rel);
/* Full-model branch and cut on that relation until proven or stopped. */
void zbi_ilp_bnb_run(struct ilp_shared *sh, struct ilp_rel *rel);
/* Window large-neighbourhood search until stopped (ilp_lns.c); `lane` of
 * `lanes` workers takes every lanes-th window. */
void zbi_ilp_lns_run(struct ilp_shared *sh, int lane, int lanes);
/* The same for instances too large for the relation (ilp_band.c):
 * windows solved as small models with everything outside fixed in time;
 * needs sh->tiebreak. */
void zbi_ilp_band_run(struct ilp_shared *sh, int lane, int lanes);

#endif
