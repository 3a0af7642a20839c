/* test_zero_prefetch.c - ZeRO-3 without prefetch (data_parallel.prefetch
 * 0, FSDP's no-prefetch; docs/zero.md "Units"): each gather is issued
 * when its pass (unit) is reached, so a pass holds one unit at a time;
 * what that saves and costs, for every family, and the validator. */
#include <math.h>
#include <string.h>
#include "helpers.h"
#include "zbsched/dp.h"
#include "zbsched/zero.h"

/* A family and the shape it runs in. */
struct fam {
    const char *name;
    int vpp;
    enum zb_placement placement;
};

static const struct fam fams[] = {
    { "gpipe", 1, ZB_PLACEMENT_LOOP }, { "1f1b", 1, ZB_PLACEMENT_LOOP },
    { "interleaved", 2, ZB_PLACEMENT_LOOP },
    { "zb-h1", 1, ZB_PLACEMENT_LOOP }, { "zb-h2", 1, ZB_PLACEMENT_LOOP },
    { "zb-v", 2, ZB_PLACEMENT_V }, { "v-half", 2, ZB_PLACEMENT_V },
    { "v-min", 2, ZB_PLACEMENT_V }, { "dualpipev", 2, ZB_PLACEMENT_V },
    { "interleaved-zb", 2, ZB_PLACEMENT_LOOP },
    { "zb", 1, ZB_PLACEMENT_LOOP },
};

/* set_test_dp() (d 4, 1e9 parameters a stage: a stage's gathered part
 * is 1.5 GB, 0.75 a unit at K 2) at ZeRO `zero` with k units and the
 * given prefetch, in f's shape, p 4, 8 microbatches. */
static void pf_profile(struct zb_profile *p, const struct fam *f, int zero,
                       enum zb_dp_reduce reduce, int k, int prefetch)
{
    struct shape sh = unit_shape(4, 8);

    sh.vpp = f->vpp;
    sh.placement = f->placement;
    make_profile(&sh, p);
    set_test_dp(p, zero);
    p->dp.reduce = reduce;
    p->dp.units = k;
    p->dp.prefetch = prefetch;
}

static double max_total(const struct zb_schedule *s)
{
    double m = 0;

    for (int r = 0; r < s->profile.pp; r++)
        m = fmax(m, s->predicted.ranks[r].total_memory);
    return m;
}

/* Step time and largest total memory of family f. */
static void run(const struct fam *f, int zero, enum zb_dp_reduce reduce,
                int k, int prefetch, double *step, double *mem)
{
    struct zb_profile p;
    struct zb_schedule s;

    pf_profile(&p, f, zero, reduce, k, prefetch);
    gen(f->name, &p, &s);   /* validates it */
    *step = s.predicted.step_time;
    *mem = max_total(&s);
    zb_schedule_release(&s);
    zb_profile_release(&p);
}

/* Two units with prefetch 1 hold a pass's unit and the next, the whole
 * stage; without prefetch one, so 0.75 GB less, below ZeRO-1 too, and
 * the passes wait for every gather, so the step is no shorter. */
Test(zero_prefetch, two_units_without_prefetch_save_a_unit_at_a_time_cost)
{
    for (size_t i = 0; i < sizeof(fams) / sizeof(fams[0]); i++) {
        const struct fam *f = &fams[i];
        double s1, m1, s0, m0, sz, mz;
        run(f, 1, ZB_DP_REDUCE_STEP, 1, 1, &sz, &mz);
        run(f, 3, ZB_DP_REDUCE_STEP, 2, 1, &s1, &m1);
        run(f, 3, ZB_DP_REDUCE_STEP, 2, 0, &s0, &m0);
        cr_assert_lt(m0, m1 - 0.7, "%s: prefetch 0 %g, 1 %g", f->name, m0,
                     m1);
        cr_assert_lt(m0, mz - 0.7, "%s: prefetch 0 %g, ZeRO-1 %g",
                     f->name, m0, mz);
        cr_assert_geq(s0, s1 - 1e-9, "%s: step %g below %g", f->name, s0,
                      s1);
    }
}

/* Every family and K: legal (gen() validates), no step shorter than
 * with prefetch 1 and, reducing per step in the same order, no more
 * memory (zb chooses its order by the step, which prefetch changes;
 * reducing per microbatch, a unit's gradient buffer can wait longer
 * for its reduce-scatter behind the later gathers). */
Test(zero_prefetch, every_family_and_k_is_legal_and_no_faster)
{
    const int ks[] = { 1, 2, 4 };

    for (size_t i = 0; i < sizeof(fams) / sizeof(fams[0]); i++)
        for (int j = 0; j < 3; j++)
            for (int red = 0; red < 2; red++) {
                enum zb_dp_reduce rd = red ? ZB_DP_REDUCE_MICROBATCH
                                           : ZB_DP_REDUCE_STEP;
                double s1, m1, s0, m0;
                run(&fams[i], 3, rd, ks[j], 1, &s1, &m1);
                run(&fams[i], 3, rd, ks[j], 0, &s0, &m0);
                cr_assert_geq(s0, s1 - 1e-9, "%s K %d reduce %d: %g < %g",
                              fams[i].name, ks[j], red, s0, s1);
                cr_assert(red || !strcmp(fams[i].name, "zb") ||
                              m0 <= m1 + 1e-9, "%s K %d reduce %d: %g > %g",
                              fams[i].name, ks[j], red, m0, m1);
            }
}

/* A unit gathered from start to end. */
struct span {
    double start, end;
};

static int span_cmp(const void *a, const void *b)
{
    double x = ((const struct span *)a)->start;
    double y = ((const struct span *)b)->start;

    return (x > y) - (x < y);
}

/* Without prefetch no two gathered units of a rank overlap in time (from
 * an UNSHARD's start to its RESHARD's end), and a pass starts once its
 * first unit is gathered; with prefetch 1 some do. */
Test(zero_prefetch, a_rank_holds_one_unit_at_a_time)
{
    const int k = 4;

    for (int pf = 0; pf < 2; pf++) {
        struct zb_profile p;
        struct zb_schedule s;
        int overlaps = 0;

        pf_profile(&p, &fams[3], 3, ZB_DP_REDUCE_STEP, k, pf);
        gen("zb-h1", &p, &s);
        for (int r = 0; r < p.pp; r++) {
            const struct zb_op_list *l = &s.ranks[r];
            struct span *sp = malloc((size_t)l->n * sizeof(*sp));
            double open[4];
            int n = 0;
            for (int i = 0; i < l->n; i++) {
                const struct zb_op *op = &l->ops[i];
                if (op->kind == ZB_OP_UNSHARD)
                    open[op->unit] = op->start;
                else if (op->kind == ZB_OP_RESHARD)
                    sp[n++] = (struct span){ open[op->unit], op->end };
                else if (pf == 0 && zb_op_is_compute(op->kind) &&
                         op->kind != ZB_OP_W)
                    cr_assert_geq(op->start, l->ops[i - k].end - 1e-9,
                                  "r%d op %d", r, i);
            }
            cr_assert_eq(n, 2 * p.microbatches * k);
            qsort(sp, (size_t)n, sizeof(*sp), span_cmp);
            for (int j = 1; j < n; j++)
                overlaps += sp[j].start < sp[j - 1].end - 1e-9;
            free(sp);
        }
        if (pf == 0)
            cr_assert_eq(overlaps, 0);
        else
            cr_assert_gt(overlaps, 0);
        zb_schedule_release(&s);
        zb_profile_release(&p);
    }
}

/* K 1: the stage's UNSHARD stands right before its first pass (nothing
 * but receives between), not a pass ahead. */
Test(zero_prefetch, one_unit_gathers_right_before_the_first_pass)
{
    struct zb_profile p;
    struct zb_schedule s;

    pf_profile(&p, &fams[1], 3, ZB_DP_REDUCE_STEP, 1, 0);
    gen("1f1b", &p, &s);
    for (int r = 0; r < p.pp; r++) {
        const struct zb_op_list *l = &s.ranks[r];
        int u = -1, first = -1;
        for (int i = 0; i < l->n && first < 0; i++)
            if (l->ops[i].kind == ZB_OP_UNSHARD)
                u = i;
            else if (zb_op_is_compute(l->ops[i].kind))
                first = i;
        cr_assert_geq(u, 0, "rank %d", r);
        cr_assert_lt(u, first, "rank %d", r);
        for (int i = u + 1; i < first; i++)
            cr_assert(!zb_op_is_collective(l->ops[i].kind) &&
                      !zb_op_is_compute(l->ops[i].kind), "rank %d", r);
        /* The gather starts when the rank starts: it has no pass before. */
        cr_assert_geq(l->ops[first].start, l->ops[u].end - 1e-9);
    }
    zb_schedule_release(&s);
    zb_profile_release(&p);
}

Test(zero_prefetch, validator_wants_the_units_gathered_without_prefetch)
{
    struct zb_profile p;
    struct zb_schedule s;
    struct zb_error err = { 0 };

    pf_profile(&p, &fams[3], 3, ZB_DP_REDUCE_STEP, 2, 0);
    gen("zb-h1", &p, &s);
    drop_op(&s, 2, ZB_OP_UNSHARD, 0);
    cr_assert_eq(zb_validate_schedule(&s, &err), ZB_EILLEGAL);
    cr_assert(strstr(err.msg, "runs on a sharded unit: unit 0 of stage 2"),
              "%s", err.msg);
    zb_schedule_release(&s);
    p.dp.units = 1;
    gen("zb-h1", &p, &s);
    drop_op(&s, 1, ZB_OP_UNSHARD, 0);
    cr_assert_eq(zb_validate_schedule(&s, &err), ZB_EILLEGAL);
    cr_assert(strstr(err.msg, "runs on a sharded stage: no UNSHARD"), "%s",
              err.msg);
    zb_schedule_release(&s);
    zb_profile_release(&p);
}

Test(zero_prefetch, the_profile_takes_0_and_refuses_below)
{
    struct zb_dp_draft d;
    struct zb_dp dp;
    struct zb_error err = { 0 };

    zb_dp_draft_init(&d);
    d.degree = 4;
    d.zero = 3;
    d.prefetch = 0;
    cr_assert_eq(zb_dp_build(&d, 4, &dp, &err), 0, "%s", err.msg);
    cr_assert_eq(dp.prefetch, 0);
    zb_dp_release(&dp);
    d.prefetch = -1;
    cr_assert_eq(zb_dp_build(&d, 4, &dp, &err), ZB_EINVAL);
    cr_assert(strstr(err.msg, "data_parallel.prefetch must be an integer "
                              "from 0 to"), "%s", err.msg);
    zb_dp_draft_release(&d);
}
