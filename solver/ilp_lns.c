/* ilp_lns.c - window large-neighbourhood search: free the passes of a few
 * adjacent ranks inside a time window of the best order, keep everything
 * else in its order, and let GLPK find the best way to rearrange them.
 *
 * A window's model holds every pass (so everything outside it may still
 * shift in time), but the fixed part is a chain per rank, not a big-M
 * pair per pass pair, and the horizon fixes most pairs inside it: each
 * model is small and built in milliseconds. Windows slide by half their
 * length over time and by one over ranks; a sweep without improvement
 * makes them larger (variable neighbourhood), until one would cover the
 * whole problem (the proving worker's job): then back to the smallest,
 * each sweep with its time grid shifted, so the neighbourhoods differ. */
#include <math.h>
#include <stdlib.h>
#include "ilp_workers.h"
#include "zbsched/xalloc.h"

struct lns {
    struct ilp_shared *sh;
    const struct ilp_inst *in;
    struct ilp_order cur;
    struct ilp_eval ev;
    bool *open;
    double period;          /* longest F+B+W of a stage */
};

struct window {
    int r0, nr;             /* ranks r0 .. r0+nr-1 */
    double t0, len;         /* passes starting in [t0, t0+len) */
};

/* End of the best order's last pass. */
static double order_end(const struct lns *ls)
{
    double end = 0;
    for (int a = 0; a < ls->in->n; a++)
        end = fmax(end, ls->ev.t[a] + ls->in->dur[a]);
    return end;
}

/* Window idx of a level in sweep number `sweep`, and how many windows
 * the sweep has (0: the level's windows would cover everything). */
static int geometry(const struct lns *ls, int level, int sweep, int idx,
                    struct window *w)
{
    const int pp = ls->in->p->pp;
    const double end = order_end(ls);
    int nr = pp < 2 + level ? pp : 2 + level, nt;
    double len = ls->period * (6 + 2 * level), step, shift;

    if (nr == pp && len >= end)
        return 0;
    step = len / 2;
    /* Golden-ratio shifts spread the grids of successive sweeps. */
    shift = step * fmod(sweep * 0.6180339887, 1.0);
    nt = (int)ceil((end - shift) / step) + 1;
    *w = (struct window){ .r0 = idx / nt, .nr = nr,
                          .t0 = shift + (idx % nt - 1) * step, .len = len };
    return (pp - nr + 1) * nt;
}

static int mark(struct lns *ls, const struct window *w)
{
    const struct ilp_inst *in = ls->in;
    int n = 0;

    for (int a = 0; a < in->n; a++) {
        double t = ls->ev.t[a];
        ls->open[a] = in->rank[a] >= w->r0 && in->rank[a] < w->r0 + w->nr &&
                      t >= w->t0 && t < w->t0 + w->len;
        n += ls->open[a];
    }
    return n;
}

/* Solve one window; what it finds goes to the shared best. */
static void solve_window(struct lns *ls, const struct window *w,
                         double seconds)
{
    struct ilp_shared *sh = ls->sh;
    struct ilp_rel rel;
    struct ilp_model *md;
    struct ilp_mip_result res = { 0 };

    if (mark(ls, w) < 2)
        return;
    zbi_ilp_rel_init(&rel, ls->in);
    rel.cancel = zbi_ilp_shared_cancel;
    rel.cancel_arg = sh;
    zbi_ilp_rel_fix_order(&rel, &ls->cur, ls->open);
    zbi_ilp_rel_fix_memory(&rel);
    /* The order meets its own objective as horizon, so failing to prepare
     * would be a bug: skip the window then. */
    if (!zbi_ilp_rel_prepare(&rel, ls->ev.obj) || rel.nfree == 0)
        goto out;
    rel.obj_lb = zbi_ilp_shared_lower(sh);
    md = zbi_ilp_model_build(&rel, false);
    zbi_ilp_mip_solve(md, sh, false, seconds, &res);
    zbi_ilp_model_free(md);
out:
    zbi_ilp_rel_release(&rel);
}

void zbi_ilp_lns_run(struct ilp_shared *sh, int lane, int lanes)
{
    const struct ilp_inst *in = sh->in;
    const struct zb_profile *p = in->p;
    struct lns ls = { .sh = sh, .in = in };
    long version = -1;
    int level = 0, idx = 0, sweep = 0;
    double sweep_obj;       /* best objective when the sweep began */

    zbi_ilp_order_init(&ls.cur, in);
    ls.ev.t = zb_xmalloc((size_t)in->n * sizeof(double));
    ls.open = zb_xcalloc((size_t)in->n, sizeof(bool));
    for (int s = 0; s < in->S; s++)
        ls.period = fmax(ls.period, p->stage[s].f + p->stage[s].b +
                                        p->stage[s].w);
    if (ls.period <= 0)
        ls.period = 1;
    zbi_ilp_shared_fetch(sh, &ls.cur, &version);
    if (zbi_ilp_order_eval(in, &ls.cur, &ls.ev) < 0)
        goto out;           /* the shared best always simulates */
    sweep_obj = ls.ev.obj;

    while (!zbi_ilp_shared_done(sh)) {
        struct window w;
        int total;
        if (zbi_ilp_shared_fetch(sh, &ls.cur, &version) &&
            zbi_ilp_order_eval(in, &ls.cur, &ls.ev) < 0)
            break;
        total = geometry(&ls, level, sweep, idx, &w);
        if (total == 0 && level == 0) {
            /* The whole problem is one small window: solve it once. */
            struct window all = { 0, p->pp, -1, INFINITY };
            if (lane == 0)
                solve_window(&ls, &all, sh->deadline - zb_clock_now());
            break;
        }
        if (total == 0) {
            level = 0;
            continue;
        }
        if (idx >= total) {
            /* A sweep without gain in the objective: look wider. */
            if (ls.ev.obj >= sweep_obj)
                level++;
            idx = 0;
            sweep++;
            sweep_obj = ls.ev.obj;
            continue;
        }
        if (idx++ % lanes != lane)
            continue;
        solve_window(&ls, &w, 2.0 + level);
    }
out:
    zbi_ilp_order_release(&ls.cur, in);
    free(ls.ev.t);
    free(ls.open);
}
