/* bound.c - closed-form lower bounds on cost and makespan (LB2 of
 * ../shared/notes/ilp.md, generalised to per-stage times, chunks,
 * placements and per-rank limits).
 *
 * For each rank r, span[r] >= busy[r] + head idle + tail idle:
 *
 * Head. The first pass on r is an F of its lowest stage s_lo (any other
 * pass needs one). A B on r cannot start before that microbatch has gone
 * forward through every later stage and back to r's highest stage s_hi:
 * sum F[s_lo..S-1] + sum B[s_hi+1..S-1] + comm on every cross-rank edge of
 * that path. In that window only F passes can run on r, and since nothing
 * is released before a B, at most k = floor(limit / M_B) of them; so the
 * rank idles at least window - k * max F on r.
 *
 * Tail. The last F on r is F(s_hi, i) (an F of a lower stage of r would
 * be followed by the same microbatch's F at s_hi). B(s_hi, i) waits for
 * the round trip through the later stages. In that window r can only run
 * B and W passes of other microbatches; memory right after the last F
 * (every F done) forces nB B's and nW W's to be done already:
 * m*v*M_B - nB*(M_B - M_W) - nW*M_W <= limit, nW <= nB. So the window is
 * filled with at most (mv - v - nB) B's and (mv - v - nW) W's (minimised
 * over feasible nB, nW), and the rest of it is idle.
 *
 * If more F passes exist than fit before the first B (mv > k), the last F
 * starts after the head window ends, so the two windows are disjoint and
 * their idle times add up; otherwise only the larger one counts. */
#include <math.h>
#include "zbsched/bound.h"

struct rank_shape {
    int lo, hi;                 /* lowest and highest stage of the rank */
    double work;                /* busy time */
    double max_f, max_b, max_w; /* longest pass of each kind on the rank */
};

static void rank_shape(const struct zb_profile *p, int r,
                       struct rank_shape *rs)
{
    *rs = (struct rank_shape){ .lo = -1, .hi = -1 };
    for (int c = 0; c < p->vpp; c++) {
        int s = zb_profile_rank_stage(p, r, c);
        const struct zb_stage_times *t = &p->stage[s];
        if (rs->lo < 0 || s < rs->lo)
            rs->lo = s;
        if (s > rs->hi)
            rs->hi = s;
        rs->work += p->microbatches * (t->f + t->b + t->w);
        rs->max_f = fmax(rs->max_f, t->f);
        rs->max_b = fmax(rs->max_b, t->b);
        rs->max_w = fmax(rs->max_w, t->w);
    }
}

/* Comm on the cross-rank edges between consecutive stages in [a, b]. */
static double path_comm(const struct zb_profile *p, int a, int b)
{
    double c = 0;
    for (int s = a; s < b; s++)
        if (zb_profile_stage_rank(p, s) != zb_profile_stage_rank(p, s + 1))
            c += p->comm;
    return c;
}

static double sum_f(const struct zb_profile *p, int a, int b)
{
    double t = 0;
    for (int s = a; s <= b; s++)
        t += p->stage[s].f;
    return t;
}

static double sum_b(const struct zb_profile *p, int a, int b)
{
    double t = 0;
    for (int s = a; s <= b; s++)
        t += p->stage[s].b;
    return t;
}

/* Least B and W work that must be done before the last F for memory. */
static double forced_done(const struct zb_profile *p, double limit,
                          const struct rank_shape *rs, long total, long own)
{
    double need = total * p->m_b - limit;
    double best = INFINITY;
    double free_b = p->m_b - p->m_w;

    if (need <= 0)
        return 0;
    for (long nb = 0; nb <= total - own; nb++) {
        double rest = need - nb * free_b;
        long nw = 0;
        if (rest > 1e-12) {
            if (p->m_w <= 0)
                continue;
            nw = (long)ceil(rest / p->m_w - 1e-9);
        }
        if (nw > nb)
            continue;
        best = fmin(best, nb * rs->max_b + nw * rs->max_w);
        if (nw == 0)
            break;          /* more B's only add work */
    }
    return best;
}

static double rank_bound(const struct zb_profile *p, int r, double *start)
{
    const int last = zb_profile_stages(p) - 1;
    struct rank_shape rs;
    long total = (long)p->microbatches * p->vpp;
    double limit = p->mem_limit[r], k, head, tail, fill, forced;

    rank_shape(p, r, &rs);
    k = isfinite(limit) ? floor(limit / p->m_b + 1e-9) : (double)total;
    k = fmin(k, (double)total);

    head = sum_f(p, rs.lo, last) + path_comm(p, rs.lo, last) +
           sum_b(p, rs.hi + 1, last) + path_comm(p, rs.hi, last);
    head = fmax(0, head - k * rs.max_f);

    tail = sum_f(p, rs.hi + 1, last) + sum_b(p, rs.hi + 1, last) +
           2 * path_comm(p, rs.hi, last);
    forced = isfinite(limit) ? forced_done(p, limit, &rs, total, p->vpp) : 0;
    if (!isfinite(forced))
        return INFINITY;    /* no order keeps this rank within its limit */
    fill = (double)(total - p->vpp) * (rs.max_b + rs.max_w) - forced;
    tail = fmax(0, tail - fill);

    *start = sum_f(p, 0, rs.lo - 1) + path_comm(p, 0, rs.lo);
    return rs.work + (total > k ? head + tail : fmax(head, tail));
}

double zb_bound_cost(const struct zb_profile *p)
{
    double lb = 0, start;
    for (int r = 0; r < p->pp; r++)
        lb = fmax(lb, rank_bound(p, r, &start));
    return lb;
}

double zb_bound_makespan(const struct zb_profile *p)
{
    double lb = 0, start;
    for (int r = 0; r < p->pp; r++) {
        double span = rank_bound(p, r, &start);
        lb = fmax(lb, start + span);
    }
    return lb;
}
