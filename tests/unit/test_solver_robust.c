/* test_solver_robust.c - the solver never takes the process down: a GLPK
 * failure inside a call is caught by the error hook, and `ilp` on random
 * microsecond-scale profiles (where GLPK used to fail an internal
 * assertion) always returns a legal schedule that respects the bound, and
 * the schedule's lower_bound is the best the solver proved. */
#include <glpk.h>
#include <string.h>
#include "helpers.h"
#include "zbsched/generator.h"
#include "zbsched/validate.h"
#include "../../solver/ilp.h"

/* An invalid call: GLPK reports it through its error hook (by default it
 * prints and aborts). */
static int bad_call(void *arg)
{
    glp_prob *P = glp_create_prob();

    (void)arg;
    glp_add_cols(P, 1);
    glp_set_col_bnds(P, 7, GLP_LO, 0, 0);  /* column 7 does not exist */
    return 0;
}

static int tiny_lp(void *arg)
{
    glp_prob *P = glp_create_prob();
    glp_smcp parm;
    double *obj = arg;
    int rc;

    glp_set_obj_dir(P, GLP_MIN);
    glp_add_cols(P, 1);
    glp_set_col_bnds(P, 1, GLP_LO, 2.5, 0);
    glp_set_obj_coef(P, 1, 1);
    glp_init_smcp(&parm);
    parm.msg_lev = GLP_MSG_OFF;
    rc = glp_simplex(P, &parm);
    *obj = glp_get_obj_val(P);
    glp_delete_prob(P);
    return rc;
}

Test(solver_robust, catches_a_glpk_failure_and_recovers)
{
    char msg[ILP_GLPK_MSG_MAX] = "";
    double obj = 0;

    zbi_ilp_glpk_quiet();
    cr_assert_eq(zbi_ilp_glpk_run(bad_call, NULL, msg, sizeof(msg)),
                 ZB_ESOLVER);
    cr_assert(strstr(msg, "GLPK failed: ") == msg, "message '%s'", msg);
    cr_assert_gt(strlen(msg), strlen("GLPK failed: "), "no reason given");
    /* The environment was freed and GLPK works again in this thread. */
    cr_assert_eq(zbi_ilp_glpk_run(tiny_lp, &obj, msg, sizeof(msg)), 0);
    cr_assert_float_eq(obj, 2.5, 1e-12);
    zbi_ilp_glpk_done();
}

/* Microsecond-scale times (1e3..5e4), per-stage times, limits 1p..3p,
 * loop and V placement, a short search each: never a crash, every
 * schedule legal and within its limits, cost never below the bound. */
Test(solver_robust, ilp_holds_on_random_microsecond_profiles, .timeout = 600)
{
    unsigned seed = 91;

    for (int iter = 0; iter < 200; iter++) {
        struct shape sh;
        struct zb_options o;
        struct zb_profile p;
        struct zb_schedule s;
        struct zb_error err = { 0 };
        bool v = iter % 3 == 0;

        sh = (struct shape){ .pp = 2 + rand_r(&seed) % 3, .vpp = v ? 2 : 1,
                             .placement = v ? ZB_PLACEMENT_V
                                            : ZB_PLACEMENT_LOOP,
                             .comm = uniform(&seed, 0, 3000), .m_b = 1,
                             .m_w = uniform(&seed, 0.3, 0.7) };
        sh.mb = sh.pp + rand_r(&seed) % (2 * sh.pp);
        /* Np is N times 1F1B's activations, p * M_B, whatever the vpp
         * (docs/design.md): with V that reaches down to ZB-V's own 1p. */
        sh.limit = uniform(&seed, 1, 3) * sh.pp;
        make_profile(&sh, &p);
        for (int st = 0; st < sh.pp * sh.vpp; st++)
            p.stage[st] = (struct zb_stage_times){
                uniform(&seed, 1e3, 5e4), uniform(&seed, 1e3, 5e4),
                uniform(&seed, 1e3, 5e4) };
        zb_options_init(&o);
        o.time_limit = 0.05;
        /* The solver is under test, not the warm start's local search
         * (test_improve.c): a token budget keeps 200 runs quick. */
        o.effort = 0.005;
        cr_assert_eq(zb_generator_run(zb_generator_find("ilp"), &p, &o, &s,
                                      &err), 0, "iter %d: %s", iter, err.msg);
        cr_assert_eq(zb_validate_schedule(&s, &err), 0, "iter %d: %s", iter,
                     err.msg);
        cr_assert_geq(s.predicted.cost, s.predicted.lower_bound * (1 - 1e-9),
                      "iter %d: cost %g < bound %g", iter, s.predicted.cost,
                      s.predicted.lower_bound);
        cr_assert_leq(s.solver.bound, s.predicted.cost * (1 + 1e-9),
                      "iter %d: solver bound %g > cost %g", iter,
                      s.solver.bound, s.predicted.cost);
        /* One bound everywhere: the schedule's is the solver's when the
         * solver proved more than the closed form. */
        cr_assert_geq(s.predicted.lower_bound, s.solver.bound,
                      "iter %d: lower_bound %g below the solver's %g", iter,
                      s.predicted.lower_bound, s.solver.bound);
        zb_schedule_release(&s);
        zb_profile_release(&p);
    }
}
