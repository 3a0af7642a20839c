/* ilp_mip.c - one branch-and-cut run of GLPK on a model: the shared best
 * order goes in as the incumbent (presolve off, so the columns GLPK works
 * on are ours), better orders found come out to the shared state, and the
 * search stops early when the shared state says so. */
#include <glpk.h>
#include <math.h>
#include <stdlib.h>
#include "ilp_workers.h"
#include "zbsched/xalloc.h"

struct mip {
    struct ilp_model *md;
    struct ilp_shared *sh;
    const struct ilp_inst *in;
    bool global;            /* the full model: its bound is global */
    struct ilp_mip_result *res;
    double deadline;
    struct ilp_order o;
    struct ilp_eval ev;
    double *x;
    long version;           /* shared version last injected */
    double held;            /* objective of GLPK's incumbent */
    double bound;
    long nodes;
    int node;               /* last node propagated */
};

/* Give GLPK the shared best order if it is newer and better than what
 * the tree holds. */
static void inject(struct mip *c, glp_tree *T)
{
    if (!zbi_ilp_shared_fetch(c->sh, &c->o, &c->version) ||
        zbi_ilp_order_eval(c->in, &c->o, &c->ev) < 0 ||
        c->ev.obj >= c->held * (1 - ILP_TOL))
        return;
    zbi_ilp_model_point(c->md, &c->o, &c->ev, c->x);
    if (glp_ios_heur_sol(T, c->x) == 0)
        c->held = c->ev.obj;
}

/* The node's LP start times, sorted per rank, are a legal order: worth a
 * simulation (it often fits memory too, and the LP knows the horizon). */
static void round_lp(struct mip *c, glp_tree *T)
{
    glp_prob *P = glp_ios_get_prob(T);

    for (int a = 0; a < c->in->n; a++)
        c->ev.t[a] = glp_get_col_prim(P, a + 1);
    zbi_ilp_order_by_times(&c->o, c->in, c->ev.t);
    zbi_ilp_shared_offer(c->sh, &c->o);
}

/* GLPK holds a better integer solution than the last we saw (its own
 * rounding heuristic finds some without a GLP_IBINGO call): re-time its
 * order in the simulator. */
static void harvest(struct mip *c)
{
    glp_prob *P = zbi_ilp_model_prob(c->md);
    int n = zbi_ilp_model_cols(c->md);

    if (glp_mip_status(P) == GLP_UNDEF ||
        glp_mip_obj_val(P) >= c->held * (1 - ILP_TOL))
        return;
    for (int j = 1; j <= n; j++)
        c->x[j] = glp_mip_col_val(P, j);
    c->held = fmin(c->held, glp_mip_obj_val(P));
    zbi_ilp_model_order(c->md, c->x, &c->o);
    zbi_ilp_shared_offer(c->sh, &c->o);
}

/* Propagate the node's fixings; if nothing better than the incumbent is
 * left, a local row C >= incumbent prunes the node (rows added here
 * belong to the current subproblem and its children only). */
static void propagate(struct mip *c, glp_tree *T)
{
    glp_prob *P = glp_ios_get_prob(T);
    int node = glp_ios_curr_node(T), row, col = zbi_ilp_model_col_c(c->md);
    double one = 1;

    if (node == c->node || !isfinite(c->held))
        return;
    c->node = node;
    if (!zbi_ilp_node_refuted(c->md, P, c->held * (1 - 2 * ILP_TOL)))
        return;
    row = glp_add_rows(P, 1);
    glp_set_mat_row(P, row, 1, (int[]){ 0, col }, (double[]){ 0, one });
    glp_set_row_bnds(P, row, GLP_LO, c->held, 0);
}

static void callback(glp_tree *T, void *info)
{
    struct mip *c = info;
    int best, total;

    if (zbi_ilp_shared_done(c->sh) || zb_clock_now() >= c->deadline) {
        glp_ios_terminate(T);
        return;
    }
    glp_ios_tree_size(T, NULL, NULL, &total);
    zbi_ilp_shared_add_nodes(c->sh, total - c->nodes);
    c->nodes = total;
    if ((best = glp_ios_best_node(T)) != 0) {
        double b = glp_ios_node_bound(T, best);
        if (b > -1e300 && b > c->bound) {
            c->bound = b;
            if (c->global)
                zbi_ilp_shared_bound(c->sh, fmin(b, c->held));
        }
    }
    harvest(c);
    switch (glp_ios_reason(T)) {
    case GLP_IHEUR:
        round_lp(c, T);
        inject(c, T);
        break;
    case GLP_IROWGEN:
        propagate(c, T);
        break;
    default:
        break;
    }
}

/* The root LP in slices, so that a stop request is seen within a quarter
 * of a second (GLPK's simplex has no callback; each call goes on from the
 * basis the last one left). */
static int root_lp(glp_prob *P, struct ilp_shared *sh, double deadline)
{
    glp_smcp smcp;
    int rc;

    glp_init_smcp(&smcp);
    smcp.msg_lev = GLP_MSG_OFF;
    smcp.meth = GLP_DUALP;
    for (;;) {
        double left = deadline - zb_clock_now();
        if (left <= 0 || zbi_ilp_shared_done(sh))
            return GLP_ETMLIM;
        smcp.tm_lim = zbi_ilp_glpk_ms(fmin(0.25, left));
        rc = glp_simplex(P, &smcp);
        if (rc != GLP_ETMLIM)
            return rc;
    }
}

/* The GLPK part of a solve, run under zbi_ilp_glpk_run(): the root LP, then
 * branch and cut. Returns 0 or a GLPK code; res->proven when finished. */
static int run_glpk(void *arg)
{
    struct mip *c = arg;
    glp_prob *P = zbi_ilp_model_prob(c->md);
    glp_iocp iocp;
    int st;

    st = root_lp(P, c->sh, c->deadline);
    if (st == GLP_ETMLIM)
        return 0;
    if (st != 0 || glp_get_status(P) != GLP_OPT)
        /* The incumbent satisfies every row, so this is a solver
         * failure, not a proof. */
        return ZB_ESOLVER;
    c->res->bound = c->bound = glp_get_obj_val(P);
    if (c->global)  /* the model holds the optimum: a global bound */
        zbi_ilp_shared_bound(c->sh, c->bound);
    glp_init_iocp(&iocp);
    iocp.msg_lev = GLP_MSG_OFF;
    iocp.presolve = GLP_OFF;
    iocp.cb_func = callback;
    iocp.cb_info = c;
    iocp.tm_lim = zbi_ilp_glpk_ms(c->deadline - zb_clock_now());
    st = glp_intopt(P, &iocp);
    c->res->nodes = c->nodes;
    c->res->bound = c->bound;
    if (st == 0 && glp_mip_status(P) == GLP_OPT) {
        /* Finished: nothing beats GLPK's final incumbent. */
        c->res->proven = true;
        c->res->bound = fmax(c->res->bound, glp_mip_obj_val(P));
        return 0;
    }
    if (st == 0 && glp_mip_status(P) == GLP_NOFEAS)
        /* No solution at all, yet the injected incumbent is one: a
         * solver failure, not a proof. */
        return ZB_ESOLVER;
    if (st != 0 && st != GLP_ETMLIM && st != GLP_ESTOP && st != GLP_EMIPGAP)
        return ZB_ESOLVER;
    return 0;
}

int zbi_ilp_mip_solve(struct ilp_model *md, struct ilp_shared *sh, bool global,
                      double seconds, struct ilp_mip_result *res)
{
    const struct ilp_inst *in = sh->in;
    struct mip c = { .md = md, .sh = sh, .in = in, .global = global,
                     .res = res,
                     .deadline = fmin(sh->deadline, zb_clock_now() + seconds),
                     .version = -1, .held = INFINITY, .bound = -INFINITY };
    char msg[ILP_GLPK_MSG_MAX] = "";
    int rc;

    *res = (struct ilp_mip_result){ .bound = -INFINITY };
    zbi_ilp_order_init(&c.o, in);
    c.ev.t = zb_xmalloc((size_t)in->n * sizeof(double));
    c.x = zb_xmalloc((size_t)(zbi_ilp_model_cols(md) + 1) * sizeof(double));
    rc = zbi_ilp_glpk_run(run_glpk, &c, msg, sizeof(msg));
    if (msg[0]) {
        /* GLPK failed inside and took md's problem object with it. */
        zbi_ilp_model_lost(md);
        zbi_ilp_shared_fail(sh, msg);
        *res = (struct ilp_mip_result){ .bound = -INFINITY,
                                        .nodes = c.nodes };
    }
    zbi_ilp_order_release(&c.o, in);
    free(c.ev.t);
    free(c.x);
    return rc;
}
