/* candidates.c - the candidate table: every order `zb` (and the ilp warm
 * start, and generate's pick) chooses from, each built and timed once
 * (see plan.h). To add a candidate, add a row to rows[]. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "plan/plan.h"
#include "build/build.h"
#include "families/families.h"
#include "zbsched/bound.h"
#include "zbsched/clock.h"
#include "zbsched/dp.h"
#include "zbsched/generator.h"
#include "zbsched/pass.h"
#include "zbsched/sim.h"
#include "zbsched/xalloc.h"

/* The largest profile (passes) on which `zb` also builds ZB-V with full
 * ranks making room with a B: that second construction is dear, so the
 * largest pipelines keep the paper's alone (docs/tuning.md, "B-room
 * size"). */
#define B_ROOM_MAX_PASSES 200000L

/* What a candidate's builder leaves besides the order. */
enum came {
    CAME_ORDER,     /* the order alone: simulated here */
    CAME_TIMED,     /* with the simulator's times: measured here
                       (zb_sim_measure()) */
    CAME_SIMULATED  /* simulated */
};

/* A row of the table: a candidate built where `applies` says so (asked
 * after the rows before it were kept, so it may read them), by `build`
 * into s (initialised for p, named after the row). */
struct plan_row {
    const char *name;
    bool (*applies)(const struct zb_profile *p,
                    const struct plan_candidates *c);
    int (*build)(const struct zb_profile *p, struct zb_schedule *s,
                 struct zb_error *err);
    enum came came;
    enum plan_role role;
};

static bool always(const struct zb_profile *p,
                   const struct plan_candidates *c)
{
    (void)p, (void)c;
    return true;
}

/* Whether no candidate so far meets the cost bound, or at the default
 * effort is close to it (plan.h): a dear start could then win no more
 * than the close gap (docs/tuning.md, "Close to the bound"). */
static bool far(const struct plan_candidates *c)
{
    for (int i = 0; i < c->n; i++)
        if (c->eager ? zbi_pick_meets_bound(&c->s[i])
                     : zbi_pick_close(&c->s[i]))
            return false;
    return true;
}

/* The caps could only save memory once a candidate meets the cost bound,
 * which an unlimited rank (so not settled) does not ask for, and their
 * search is dear (docs/tuning.md, "Capped list"). */
static bool short_of_bound(const struct zb_profile *p,
                           const struct plan_candidates *c)
{
    (void)p;
    return far(c);
}

static bool loop_one_chunk(const struct zb_profile *p,
                           const struct plan_candidates *c)
{
    (void)c;
    return p->placement == ZB_PLACEMENT_LOOP && p->vpp == 1;
}

static bool v_two_chunks(const struct zb_profile *p,
                         const struct plan_candidates *c)
{
    (void)c;
    return p->placement == ZB_PLACEMENT_V && p->vpp == 2;
}

/* The warm-up depths' descent is dear: not where a candidate is close. */
static bool loop_one_chunk_far(const struct zb_profile *p,
                               const struct plan_candidates *c)
{
    return loop_one_chunk(p, c) && far(c);
}

static bool v_small(const struct zb_profile *p,
                    const struct plan_candidates *c)
{
    return v_two_chunks(p, c) && zb_pass_count(p) <= B_ROOM_MAX_PASSES &&
           far(c);
}

/* Under V below 1F1B's memory, the controllable-memory paper's search
 * over building blocks (build.h): where few microbatches meet a tight
 * limit its orders beat the list scheduler's. Its work budget keeps it
 * to the sizes where it is cheap, and grows where the user asks for
 * more effort (docs/tuning.md, "Building-block search"). */
static bool v_below_1f1b(const struct zb_profile *p,
                         const struct plan_candidates *c)
{
    bool below = false;

    for (int r = 0; r < p->pp; r++)
        below = below || p->mem_limit[r] < zb_profile_1f1b_peak(p);
    return v_two_chunks(p, c) && below && far(c);
}

static bool v_below_1f1b_default(const struct zb_profile *p,
                                 const struct plan_candidates *c)
{
    return !c->eager && v_below_1f1b(p, c);
}

static bool v_below_1f1b_eager(const struct zb_profile *p,
                               const struct plan_candidates *c)
{
    return c->eager && v_below_1f1b(p, c);
}

static int blocks_default(const struct zb_profile *p, struct zb_schedule *s,
                          struct zb_error *err)
{
    return zbi_block_search(p, false, s, err);
}

static int blocks_eager(const struct zb_profile *p, struct zb_schedule *s,
                        struct zb_error *err)
{
    return zbi_block_search(p, true, s, err);
}

static int zb_v_paper(const struct zb_profile *p, struct zb_schedule *s,
                      struct zb_error *err)
{
    return zbi_construct_v(p, CONSTRUCT_V_PAPER, s, err);
}

static int zb_v_b_room(const struct zb_profile *p, struct zb_schedule *s,
                       struct zb_error *err)
{
    return zbi_construct_v(p, CONSTRUCT_V_B_ROOM, s, err);
}

/* The table, in the order the candidates are built (the first of equals
 * is chosen): the paper's construction (loop, one chunk: first, since
 * where it settles the list scheduler's eight policies are not run,
 * docs/tuning.md, "Close to the bound"); the list scheduler's best
 * policy; under V below 1F1B's memory and under interleaved placement the
 * same with searched in-flight caps (build.h; elsewhere it declines); the
 * list scheduler braked by a warm-up depth per stage (loop, one chunk);
 * ZB-V built the paper's way and with full ranks making room with a B
 * (build.h); under V below 1F1B's memory the paper's building-block
 * search, at the default budget or an eager one. The fixed families
 * follow (collect()). */
static const struct plan_row rows[] = {
    { "zb-construct", loop_one_chunk, zbi_construct_loop, CAME_SIMULATED,
      PLAN_CHOSEN },
    { "list-scheduler", always, zbi_greedy_best, CAME_TIMED, PLAN_CHOSEN },
    { "capped-list", short_of_bound, zbi_greedy_capped, CAME_TIMED,
      PLAN_CAPPED_START },
    { "warm-depth", loop_one_chunk_far, zbi_warm_depth_loop, CAME_TIMED,
      PLAN_DEPTH_START },
    { "zb-v-construct", v_two_chunks, zb_v_paper, CAME_TIMED, PLAN_CHOSEN },
    { "zb-v-b-room", v_small, zb_v_b_room, CAME_TIMED, PLAN_ROOM_START },
    { "building-blocks", v_below_1f1b_default, blocks_default, CAME_ORDER,
      PLAN_FINISHED },
    { "building-blocks", v_below_1f1b_eager, blocks_eager, CAME_ORDER,
      PLAN_FINISHED },
};
#define N_ROWS (int)(sizeof(rows) / sizeof(rows[0]))

/* Whether s meets both its lower bounds (cost, then makespan: the first
 * two keys of the comparison) within the memory a user would give it:
 * its own limit on a limited rank, 1F1B's peak on an unlimited one
 * (there the list scheduler, optimal, can hold many times 1F1B's peak
 * where the ZB-V construction at 1F1B's memory is optimal too). */
static bool settles(const struct zb_schedule *s)
{
    const struct zb_measures *m = &s->predicted;
    const struct zb_profile *p = &s->profile;

    if (!m->fits_memory || !zbi_pick_meets_bound(s) ||
        m->makespan > m->makespan_bound * (1 + 1e-9))
        return false;
    for (int r = 0; r < p->pp; r++)
        if (!isfinite(p->mem_limit[r]) &&
            m->ranks[r].peak_memory > zb_profile_1f1b_peak(p) * (1 + 1e-9))
            return false;
    return true;
}

/* Keep the order in out->s[out->n] with role `role`, timed as it came,
 * when rc says it built; else drop it. No candidate runs FB ops (the
 * overlapping families are left out), so the profile's bounds are each
 * candidate's. A kept candidate that settles settles the collection:
 * without data parallelism (where the step decides, which the bounds do
 * not cover) a later one could at best tie it on cost and makespan and
 * win only on memory, which the limit already caps; and the rest is
 * dear (docs/tuning.md, "Settled"). */
static void keep(struct plan_candidates *out, int rc, enum came how,
                 enum plan_role role)
{
    struct zb_schedule *c = &out->s[out->n];

    if (rc == 0 && (how == CAME_SIMULATED ||
                    (how == CAME_TIMED ? zb_sim_measure(c, NULL)
                                       : zb_sim_run(c, NULL)) == 0)) {
        c->predicted.lower_bound = out->cost_bound;
        c->predicted.makespan_bound = out->makespan_bound;
        out->role[out->n] = role;
        out->simulated[out->n] = how != CAME_TIMED;
        out->settled = out->settled ||
                       (!zb_dp_active(&c->profile) && settles(c));
        out->n++;
    } else {
        zb_schedule_release(c);
    }
}

/* Whether the fixed family g cannot beat the candidates kept so far: it
 * never holds more than g->peak_cap times 1F1B's peak on a rank, and one
 * of them that fits costs less than the lower bound at that memory (each
 * rank's limit, or the cap where lower), so g would cost more, and cost
 * decides first. Not with data parallelism, where the step decides. The
 * V families are dear to build (docs/tuning.md, "Outclassed"); the bound
 * at a cap is worked out once per cap (they share 1F1B's), and is the
 * profile's own where no rank's limit is above the cap. */
static bool outclassed(struct plan_candidates *c, const struct zb_generator *g,
                       const struct zb_profile *p)
{
    struct zb_profile q;
    double least = INFINITY, cap = g->peak_cap * zb_profile_1f1b_peak(p);

    if (!(g->peak_cap > 0) || zb_dp_active(p))
        return false;
    for (int i = 0; i < c->n; i++)
        if (c->s[i].predicted.fits_memory)
            least = fmin(least, c->s[i].predicted.cost);
    if (!isfinite(least))
        return false;
    if (c->cap != cap) {
        bool below = true;
        for (int r = 0; r < p->pp; r++)
            below = below && p->mem_limit[r] <= cap;
        c->cap = cap;
        c->cap_bound = c->cost_bound;   /* below: the cap changes nothing */
        if (!below) {
            zb_profile_copy(&q, p);
            for (int r = 0; r < p->pp; r++)
                q.mem_limit[r] = fmin(p->mem_limit[r], cap);
            c->cap_bound = zb_bound_cost(&q);
            zb_profile_release(&q);
        }
    }
    return least < c->cap_bound * (1 - 1e-9);
}

/* The fixed family g's order on p into s. `zb-v` builds the ZB-V
 * construction and the list scheduler at 1F1B's memory: where that is
 * p's own limit on every rank, both are candidates already, and the
 * family's choice is made from them instead of building them twice. */
static int build_family(const struct plan_candidates *c,
                        const struct zb_generator *g,
                        const struct zb_profile *p,
                        const struct zb_options *opt, struct zb_schedule *s)
{
    bool at_1f1b = true;
    int con, list;

    for (int r = 0; r < p->pp; r++)
        at_1f1b = at_1f1b && p->mem_limit[r] == zb_profile_1f1b_peak(p);
    if (strcmp(g->name, "zb-v") || !at_1f1b)
        return g->generate(p, opt, s, NULL);
    con = zbi_plan_find(c, "zb-v-construct", PLAN_CHOSEN);
    list = zbi_plan_find(c, "list-scheduler", PLAN_CHOSEN);
    return zbi_zb_v_choose(con >= 0 ? &c->s[con] : NULL,
                           list >= 0 ? &c->s[list] : NULL, s)
               ? 0
               : ZB_EILLEGAL;
}

static void collect(const struct zb_profile *p, const struct zb_options *opt,
                    struct plan_candidates *out)
{
    int families = 0, slots;

    while (zb_generators[families])
        families++;
    slots = N_ROWS + families;
    out->s = zb_xcalloc((size_t)slots, sizeof(*out->s));
    out->role = zb_xcalloc((size_t)slots, sizeof(*out->role));
    out->simulated = zb_xcalloc((size_t)slots, sizeof(bool));
    out->outclassed = zb_xcalloc((size_t)families, sizeof(bool));
    out->n = 0;
    out->settled = false;
    out->eager = zbi_pick_eager(opt, p);
    out->cap = out->cap_bound = 0;
    zb_bound_both(p, &out->cost_bound, &out->makespan_bound);
    /* Timing an order is enough to compare; the winner is lowered and
     * validated by the pipeline like any generator's order. */
    for (int k = 0; k < N_ROWS && !out->settled; k++) {
        if (!rows[k].applies(p, out))
            continue;
        zb_schedule_init(&out->s[out->n], rows[k].name, p);
        keep(out, rows[k].build(p, &out->s[out->n], NULL), rows[k].came,
             rows[k].role);
    }
    /* The fixed families, their order timed. After Ctrl-C (ilp) the
     * candidates so far must do. */
    for (int i = 0; zb_generators[i]; i++) {
        const struct zb_generator *g = zb_generators[i];
        if ((opt && opt->interrupt && *opt->interrupt) || out->settled)
            break;
        if (g->memory_aware || g->overlaps ||
            zb_generator_accepts(g, p, NULL) < 0)
            continue;
        if (outclassed(out, g, p)) {
            out->outclassed[i] = true;
            continue;
        }
        zb_schedule_init(&out->s[out->n], g->name, p);
        keep(out, build_family(out, g, p, opt, &out->s[out->n]), CAME_ORDER,
             PLAN_FIXED);
    }
}

/* Stages that differ in memory: the builders count microbatches, so the
 * candidates are built on the uniform view, whose orders hold within the
 * real limits (profile.h), then timed and measured on p itself, where
 * the search moves passes with each stage's own memory. */
static void collect_stages(const struct zb_profile *p,
                           const struct zb_options *opt,
                           struct plan_candidates *out)
{
    struct zb_profile view;
    int kept = 0;

    zb_profile_uniform_memory(p, &view);
    collect(&view, opt, out);
    zb_profile_release(&view);
    zb_bound_both(p, &out->cost_bound, &out->makespan_bound);
    out->cap = out->cap_bound = 0;
    out->settled = false;
    for (int i = 0; i < out->n; i++) {
        struct zb_schedule *c = &out->s[i];
        zb_schedule_set_profile(c, p);
        if (zb_sim_run(c, NULL) < 0) {
            zb_schedule_release(c);     /* not expected: the view holds */
            continue;
        }
        c->predicted.lower_bound = out->cost_bound;
        c->predicted.makespan_bound = out->makespan_bound;
        out->settled = out->settled ||
                       (!zb_dp_active(p) && settles(c));
        out->s[kept] = *c;
        out->role[kept] = out->role[i];
        out->simulated[kept++] = true;
    }
    out->n = kept;
}

void zbi_plan_collect(const struct zb_profile *p,
                      const struct zb_options *opt,
                      struct plan_candidates *out)
{
    double t0 = zb_clock_now(), best = INFINITY;

    if (p->stage_mem)
        collect_stages(p, opt, out);
    else
        collect(p, opt, out);
    for (int i = 0; i < out->n; i++)
        if (out->s[i].predicted.fits_memory)
            best = fmin(best, out->s[i].predicted.cost);
    zbi_plan_report(opt, "candidates", out->n, best, t0);
}

void zbi_plan_release(struct plan_candidates *c)
{
    for (int i = 0; i < c->n; i++)
        zb_schedule_release(&c->s[i]);
    free(c->s);
    free(c->role);
    free(c->simulated);
    free(c->outclassed);
    c->s = NULL;
    c->role = NULL;
    c->simulated = NULL;
    c->outclassed = NULL;
    c->n = 0;
}

int zbi_plan_find(const struct plan_candidates *c, const char *name,
                  enum plan_role r)
{
    for (int i = 0; i < c->n; i++)
        if (c->role[i] == r && !strcmp(c->s[i].name, name))
            return i;
    return -1;
}
