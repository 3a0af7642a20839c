/* vblock_best.c - v-half's and v-min's order: the best of several built
 * for one building block, none holding more than the block's memory: the
 * most any rank holds in the block's order or the paper's squeeze of it
 * (timed with the real durations and memory; the squeeze keeps the
 * block's peak at unit memory, which the real M_W can shift either way).
 *
 * The block repeated (vblock.c), optionally compacted (vblock_compact.c),
 * the paper's own squeeze and reorder (vblock_squeeze.c), and the list
 * scheduler on the real times with every rank held to the block's memory
 * (build/build.h), with and without its in-flight caps' search. The grid
 * orders are right where stages are even; the list scheduler sees the
 * real durations, so it wins where the grid's unit times are far off.
 * The best by cost (then makespan, then memory) is kept: never worse than
 * the block or the paper's squeeze, within the memory of either. */
#include <math.h>
#include "build/build.h"
#include "families/families.h"
#include "plan/plan.h"
#include "zbsched/measures.h"
#include "zbsched/sim.h"

/* The builders run where p m is at most these: the list scheduler's
 * policies are cheap (a few ms at p 16), its in-flight caps' search wins
 * more often but takes 0.2 s at p 32 (docs/tuning.md, "V-Half and V-Min
 * builders"); `zb` builds both at the user's limit itself. */
#define GREEDY_UP_TO 4096
#define CAPPED_UP_TO 128

/* Keep c in best where it fits the block's peak and beats best. */
static void consider(struct zb_schedule *best, bool *have,
                     const struct zb_schedule *c, double cap)
{
    double peak = zb_measures_max_peak(&c->predicted, c->profile.pp);

    if (peak > cap * (1 + 1e-9))
        return;
    if (!*have || zbi_pick_better(c, best)) {
        zb_schedule_copy_order(best, c);
        zb_measures_copy(&best->predicted, &c->predicted, c->profile.pp);
        *have = true;
    }
}

/* The list scheduler's order on the capped profile (capped: with its
 * in-flight caps searched), timed, weighed. */
static void builder(const struct zb_profile *capped, bool caps,
                    struct zb_schedule *best, bool *have, double cap)
{
    struct zb_schedule c;
    int rc;

    zb_schedule_init(&c, best->name, capped);
    rc = caps ? zbi_greedy_capped(capped, &c, NULL)
              : zbi_greedy_best(capped, &c, NULL);
    if (rc == 0 && zb_sim_measure(&c, NULL) == 0)
        consider(best, have, &c, cap);
    zb_schedule_release(&c);
}

/* The paper's squeeze, built and timed on the side thread (at p 64,
 * m 1024 it takes about as long as the block and its compaction). */
struct squeeze_job {
    const struct zb_profile *p;
    void (*offsets)(int pp, int rank, int off[4]);
    struct zb_schedule s;
    int rc;
};

static void *squeeze_run(void *arg)
{
    struct squeeze_job *j = arg;

    j->rc = zbi_vblock_squeezed(j->p, j->offsets, &j->s, NULL);
    if (j->rc == 0)
        j->rc = zb_sim_run(&j->s, NULL);
    return NULL;
}

int zbi_vblock_best(const struct zb_profile *p,
                    void (*offsets)(int pp, int rank, int off[4]),
                    bool compact, struct zb_schedule *s,
                    struct zb_error *err)
{
    struct squeeze_job sq = { .p = p, .offsets = offsets };
    struct side_thread helper;
    struct zb_schedule best, plain, packed;
    struct zb_profile capped;
    bool have = false, packed_ok = false;
    double cap;
    int rc;

    zb_schedule_init(&best, s->name, p);
    zb_schedule_init(&plain, s->name, p);
    zb_schedule_init(&packed, s->name, p);
    zb_schedule_init(&sq.s, s->name, p);
    zbi_side_thread_start(&helper, squeeze_run, &sq);
    rc = zbi_vblock_order(p, offsets, false, &plain, err);
    if (rc == 0)
        rc = zb_sim_run(&plain, err);
    if (rc == 0 && compact)
        packed_ok = zbi_vblock_order(p, offsets, true, &packed, NULL) == 0 &&
                    zb_sim_run(&packed, NULL) == 0;
    zbi_side_thread_join(&helper);
    if (rc < 0)
        goto out;
    cap = zb_measures_max_peak(&plain.predicted, p->pp);
    if (sq.rc == 0) {
        cap = fmax(cap, zb_measures_max_peak(&sq.s.predicted, p->pp));
        consider(&best, &have, &sq.s, cap);
    }
    consider(&best, &have, &plain, cap);
    if (packed_ok)
        consider(&best, &have, &packed, cap);
    zb_profile_copy(&capped, p);
    for (int r = 0; r < p->pp; r++)
        capped.mem_limit[r] = cap;
    if ((double)p->pp * p->microbatches <= GREEDY_UP_TO)
        builder(&capped, false, &best, &have, cap);
    if ((double)p->pp * p->microbatches <= CAPPED_UP_TO)
        builder(&capped, true, &best, &have, cap);
    zb_profile_release(&capped);
    zb_schedule_copy_order(s, &best);
out:
    zb_schedule_release(&sq.s);
    zb_schedule_release(&packed);
    zb_schedule_release(&plain);
    zb_schedule_release(&best);
    return rc;
}
