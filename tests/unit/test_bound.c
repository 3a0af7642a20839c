/* test_bound.c - the closed-form lower bound against exhaustive search:
 * on tiny instances with random times, comm and limits, every legal
 * compute order (same-kind passes in microbatch order) is simulated, and
 * none may beat the bound. */
#include <stdlib.h>
#include "helpers.h"
#include "zbsched/bound.h"

#define MAX_SEQ 1024
#define MAX_LEN 12     /* 3 passes x m <= 4 */

struct seqs {
    enum zb_op_kind kind[MAX_SEQ][MAX_LEN];
    int mb[MAX_SEQ][MAX_LEN];
    int n, len;
};

/* Every order of F, B, W over m microbatches on one stage with each kind
 * in microbatch order and F_i < B_i < W_i. */
static void enumerate(struct seqs *out, int m, int nf, int nb, int nw,
                      enum zb_op_kind *k, int *mb, int depth)
{
    if (depth == 3 * m) {
        cr_assert_lt(out->n, MAX_SEQ);
        for (int i = 0; i < depth; i++) {
            out->kind[out->n][i] = k[i];
            out->mb[out->n][i] = mb[i];
        }
        out->n++;
        return;
    }
    if (nf < m) {
        k[depth] = ZB_OP_F, mb[depth] = nf;
        enumerate(out, m, nf + 1, nb, nw, k, mb, depth + 1);
    }
    if (nb < nf) {
        k[depth] = ZB_OP_B, mb[depth] = nb;
        enumerate(out, m, nf, nb + 1, nw, k, mb, depth + 1);
    }
    if (nw < nb) {
        k[depth] = ZB_OP_W, mb[depth] = nw;
        enumerate(out, m, nf, nb, nw + 1, k, mb, depth + 1);
    }
}

static double best_cost(const struct zb_profile *p, const struct seqs *q)
{
    int idx[4] = { 0 };
    double best = INFINITY;
    struct zb_schedule s;

    zb_schedule_init(&s, "exhaustive", p);
    for (;;) {
        for (int r = 0; r < p->pp; r++) {
            s.ranks[r].n = 0;
            for (int i = 0; i < q->len; i++)
                zb_schedule_push(&s, r, q->kind[idx[r]][i], r,
                                 q->mb[idx[r]][i]);
        }
        if (zb_sim_run(&s, NULL) == 0 && s.predicted.fits_memory)
            best = fmin(best, s.predicted.cost);
        int r = 0;
        while (r < p->pp && ++idx[r] == q->n)
            idx[r++] = 0;
        if (r == p->pp)
            break;
    }
    zb_schedule_release(&s);
    return best;
}

Test(bound, no_order_beats_the_lower_bound_on_tiny_instances)
{
    /* p, m, random trials: 5, 42 and 462 orders per rank for m = 2, 3, 4 */
    static const int shapes[][3] = { { 2, 2, 20 }, { 3, 2, 20 }, { 4, 2, 10 },
                                     { 2, 3, 20 }, { 3, 3, 3 }, { 2, 4, 2 } };
    static struct seqs q;
    unsigned seed = 7;
    int tight = 0, cases = 0;

    for (size_t c = 0; c < sizeof(shapes) / sizeof(shapes[0]); c++) {
        int p = shapes[c][0], m = shapes[c][1];
        enum zb_op_kind k[MAX_LEN];
        int mb[MAX_LEN];

        q.n = 0;
        q.len = 3 * m;
        enumerate(&q, m, 0, 0, 0, k, mb, 0);
        for (int trial = 0; trial < shapes[c][2]; trial++) {
            struct shape sh = unit_shape(p, m);
            struct zb_profile prof;
            sh.comm = (rand_r(&seed) % 4) * 0.1;
            sh.m_w = (rand_r(&seed) % 3) * 0.5;
            sh.limit = 1 + rand_r(&seed) % (2 * m);
            make_profile(&sh, &prof);
            for (int s = 0; s < p; s++)
                prof.stage[s] = (struct zb_stage_times){
                    0.5 + (rand_r(&seed) % 4) * 0.5,
                    0.5 + (rand_r(&seed) % 4) * 0.5,
                    (rand_r(&seed) % 4) * 0.5 };
            double lb = zb_bound_cost(&prof), opt = best_cost(&prof, &q);
            cr_assert(isfinite(opt), "no order fits (p %d m %d)", p, m);
            cr_assert_leq(lb, opt + 1e-9, "p %d m %d trial %d: bound %g "
                          "above the best order %g", p, m, trial, lb, opt);
            tight += fabs(lb - opt) < 1e-9;
            cases++;
            zb_profile_release(&prof);
        }
    }
    /* Not a requirement, but a bound that is never tight is useless. */
    cr_log_info("bound tight in %d of %d cases", tight, cases);
    cr_assert_gt(tight, cases / 4, "tight in %d of %d", tight, cases);
}
