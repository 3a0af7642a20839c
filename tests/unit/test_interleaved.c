/* test_interleaved.c - zbi_order_interleaved() picks the smallest extra
 * warm-up whose order runs by a timing-free check; here the reference is
 * the search it replaced (every extra from 0, each order simulated), and
 * the two must agree op for op. Runnability is not monotone in the extra
 * (pp 9, vpp 5, m 28 runs at 3, not at 4), so no shortcut is safe that
 * this would not catch. */
#include "helpers.h"
#include "families/families.h"

/* The old linear search: returns the extra it chose, s holds the order. */
static int reference_order(const struct zb_profile *p, struct zb_schedule *s)
{
    for (int extra = 0;; extra++) {
        zbi_order_interleaved_warmup(p, s, extra);
        if (p->microbatches % p->pp == 0 || zb_sim_run(s, NULL) == 0)
            return extra;
    }
}

static void assert_same_order(const struct zb_schedule *a,
                              const struct zb_schedule *b, int pp, int vpp,
                              int m, int extra)
{
    for (int r = 0; r < pp; r++) {
        cr_assert_eq(a->ranks[r].n, b->ranks[r].n, "pp %d vpp %d m %d", pp,
                     vpp, m);
        for (int i = 0; i < a->ranks[r].n; i++) {
            const struct zb_op *x = &a->ranks[r].ops[i],
                              *y = &b->ranks[r].ops[i];
            cr_assert(x->kind == y->kind && x->stage == y->stage &&
                          x->mb == y->mb,
                      "pp %d vpp %d m %d (reference extra %d): rank %d op "
                      "%d differs", pp, vpp, m, extra, r, i);
        }
    }
}

Test(interleaved, same_order_as_the_linear_search)
{
    int shapes = 0, raised = 0;

    for (int pp = 2; pp <= 12; pp++)
        for (int vpp = 2; vpp <= 5; vpp++)
            for (int m = pp + 1; m < 4 * pp; m++) {
                struct shape sh = unit_shape(pp, m);
                struct zb_profile p;
                struct zb_schedule fast, ref;
                int extra;

                if (m % pp == 0)
                    continue;
                sh.vpp = vpp;
                make_profile(&sh, &p);
                cr_assert_eq(zb_schedule_init(&fast, "fast", &p), 0);
                cr_assert_eq(zb_schedule_init(&ref, "ref", &p), 0);
                zbi_order_interleaved(&p, &fast);
                extra = reference_order(&p, &ref);
                assert_same_order(&fast, &ref, pp, vpp, m, extra);
                cr_assert_eq(zb_sim_run(&fast, NULL), 0);
                shapes++;
                raised += extra > 0;
                zb_schedule_release(&fast);
                zb_schedule_release(&ref);
                zb_profile_release(&p);
            }
    /* The grid must exercise the search, not only extra 0. */
    cr_assert_gt(shapes, 500);
    cr_assert_gt(raised, shapes / 4);
}

/* The case that defeated bisection: the only small extra that runs is 3. */
Test(interleaved, non_monotone_case)
{
    struct shape sh = unit_shape(9, 28);
    struct zb_profile p;
    struct zb_schedule s;

    sh.vpp = 5;
    make_profile(&sh, &p);
    cr_assert_eq(zb_schedule_init(&s, "x", &p), 0);
    zbi_order_interleaved_warmup(&p, &s, 4);
    cr_assert_neq(zb_sim_run(&s, NULL), 0);
    zbi_order_interleaved_warmup(&p, &s, 2);
    cr_assert_neq(zb_sim_run(&s, NULL), 0);
    zbi_order_interleaved(&p, &s);
    cr_assert_eq(zb_sim_run(&s, NULL), 0);
    cr_assert_eq(zb_measures_max_peak(&s.predicted, p.pp), 56);
    zb_schedule_release(&s);
    zb_profile_release(&p);
}
