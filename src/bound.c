/* bound.c - closed-form lower bounds on cost and makespan (the LB2
 * bound of the ILP model, generalised to per-stage times, chunks,
 * placements and per-rank limits, plus a round-trip bound).
 *
 * Every argument assumes the passes of one kind on one stage run in
 * microbatch order. That loses nothing: microbatches are identical, and
 * relabelling the i-th pass of each kind on each stage as microbatch i
 * keeps every dependency (the i-th F of stage s+1 starts after i F's of
 * stage s have ended and arrived, so after the i-th one; likely for B
 * and W) and every rank's memory (which counts passes, not labels).
 * Times below are relative to t0, the start of rank r's first pass.
 *
 * 1. Idle bound: span[r] >= busy[r] + head idle + tail idle.
 *
 * Head. The first pass on r is F(lo, 0), lo its lowest stage (any other
 * pass needs one). A B on r cannot start before a microbatch has gone
 * forward through every later stage and back to r's highest stage hi:
 * H = sum F[lo..S-1] + sum B[hi+1..S-1] + comm on every cross-rank edge
 * of that path. In [t0, t0 + H] only F passes run on r, and since
 * nothing is released before a B or W ends, at most k = floor(limit /
 * M_B) of them (and at most m per stage). Chunk-aware fill: an F of r's
 * stage s cannot start before d_s = the forward path from lo to s (its
 * microbatch's F(lo) starts at t0 or later), so stage s fills at most
 * H - d_s of the window and in [t0, t0 + d_j] only the stages with
 * d_s < d_j run. The F work in the window is thus at most
 *   min(k * P, sum_s min(a_s, H - d_s),
 *       min_j [min(d_j, sum_{d_s < d_j} a_s) + H - d_j]),
 * P = the largest mean F over r's first j stages (j = 1..v): an F of a
 * stage runs only after the same microbatch's F of r's stages below it,
 * so the k F's form columns, each the F's of one microbatch on a
 * prefix of r's stages, and no column's mean exceeds P;
 * a_s = min(m, k) F_s, and the rest of H is idle. The last term alone,
 * gap = max over d_j <= H of (d_j - sum_{d_s < d_j} a_s), is idle that
 * comes before r's last F starts (F(hi, m-1) starts after t0 + d_j).
 *
 * Tail. The last F on r is F(hi, m-1) (an F of a lower stage would be
 * followed by the same microbatch's F at hi). B(hi, m-1) waits for the
 * round trip through the later stages. In that window r can only run
 * B and W passes of other microbatches; memory right after the last F
 * (every F done) forces nB B's and nW W's to be done already:
 * m*v*M_B - nB*(M_B - M_W) - nW*M_W <= limit, nW <= nB. So the window is
 * filled with at most (mv - v - nB) B's and (mv - v - nW) W's (minimised
 * over feasible nB, nW), and the rest of it is idle.
 *
 * If more F passes exist than fit before the first B (mv > k), the
 * (k+1)-th F waits for a release, after the head window, so the two
 * windows are disjoint and their idle times add up. Otherwise the last
 * F may end inside the head window, and the idle is the larger of the
 * head idle and gap + tail (the gap lies before the last F starts, the
 * tail after it ends).
 *
 * Back window (lo < hi). B(lo, m-1) starts no earlier than the end of
 * B(hi, m-1) plus the backward path sum B[lo+1..hi-1] + comm between
 * them. In that window every F of r is done (all precede F(hi, m-1),
 * which precedes B(hi, m-1)), every B of hi too, and B(lo, m-1), W(lo,
 * m-1) are still to come: at most m sum_{s != hi} B_s + m sum_s W_s -
 * B_lo - W_lo of work fills it, the rest is idle. It starts after
 * B(hi, 0) could (after the head window) and after the tail window
 * ends, so its idle adds to theirs.
 *
 * 2. Round-trip bound. Pick a stage g >= lo on rank q (q may be r). From
 * t0, F(g, 0) starts no earlier than the forward path lo -> g. Between
 * the start of F(g, 0) and the end of B(g, m-1), rank q runs every F and
 * every B of its stages g' >= g (F(g', i) follows F(g, i), B(g', i)
 * precedes B(g, m-1)), one at a time. It also runs every W it does
 * before its last F, F(hi_q, m-1), which lies in that interval: every
 * B or W on q starts after F(g, 0) (a stage >= g needs its own F, a
 * lower one the B of g), and at that F all m*v forwards are allocated
 * while at most mv - v B's are done (the B's of microbatch m-1 follow
 * it), so nW >= (m v M_B - (mv - v)(M_B - M_W) - limit_q) / M_W of
 * them ran. Then B(g, m-1) travels back down to B(lo, m-1) and W(lo,
 * m-1) follows on r. The sum of these is a chain r must span. With
 * q = the last rank it is the classic "one microbatch there, all of
 * them at the turn, the last one back" bound that dominates when m is
 * close to p and the stages are unequal (comm > 0, B != F).
 *
 * 3. Turn idle. With g = lo_q the turn interval [start of F(lo_q, 0) =
 * t0_q, end of B(lo_q, m-1)] contains q's head window, its tail window
 * (it ends at B(hi_q, m-1) start) and its back window (it ends at B(lo_q,
 * m-1) start), so all of q's section-1 idle; idle overlaps no pass, so
 * it adds to the turn's F, B and forced W work.
 *
 * 4. Memory chain. An F allocates M_B and a B with its W frees at most
 * M_B (nW <= nB), so when r's j-th F (from 0) starts, at least c = j +
 * 1 - k of r's B's have ended, k = floor(limit / M_B). F(lo, x) is at
 * least r's x-th F; of the c ended B's some chunk has ceil(c / v), so
 * some B(s, x') ended, x' = ceil(c / v) - 1, and that is no earlier
 * than F(lo, x') start + trip, trip = the least over r's stages s of F
 * up from lo plus B back down to s (with comm). From x = m-1, n such
 * steps reach x' < 0 without crossing; then F(lo, m-1) goes up and back
 * down to B(lo, m-1), and W(lo, m-1) follows: span >= n trip + that.
 * With one chunk, if limit - k M_B < M_W, c B's free c M_B only with
 * all c W's: F(lo, x) also waits for W(lo, x') or for B(lo, x' + 1),
 * which follows F(lo, x' + 1) start >= F(lo, x') start + F_lo; each
 * step then adds min(W_lo, F_lo).
 *
 * 5. Forward turn. Pick g in [lo, hi] on rank q and let top be q's
 * highest stage <= hi. F(g, 0) starts no earlier than fwd(lo -> g).
 * Every F(g', i), g <= g' <= top on q, starts after F(g, 0) starts and
 * ends by the end of F(top, m-1): q runs m sum F_g' there one at a time.
 * If g = lo_q and top = hi_q, F(g, 0) is q's first pass and F(top, m-1)
 * its last F, so that interval also holds q's idle before its last F
 * (the head idle if q has more F's than fit before a B, else the chunk
 * gap) and the B and W work forced before the last F by memory (as in
 * the tail, with q's shortest B and W). Then microbatch m-1 goes on up
 * to the last stage, back down to lo, and W(lo, m-1) ends r's span.
 * In V placement this is the V turn's throughput: rank q runs both of
 * its chunks' forwards (and, at a low limit, the B's that make room for
 * them) before the last microbatch can come back to rank r.
 *
 * 6. Backward turn, the mirror. Pick g in [lo, hi] on rank q and let bot
 * be q's lowest stage >= lo. B(g, 0) starts no earlier than fwd(lo ->
 * S-1) + bwd(S-1 -> g). Every B(g', i), bot <= g' <= g on q, starts
 * after B(g, 0) starts (it needs B(g, i)) and ends by the end of B(bot,
 * m-1): q runs m sum B_g' in between. If g = hi_q and bot = lo_q, B(g,
 * 0) is q's first B; before it only F's ran, at most k, so at least
 * mv - k of q's F's (each at least q's shortest F) run in the interval,
 * and so does q's back window. Then B(bot, m-1) goes on down to lo and
 * W(lo, m-1) follows.
 *
 * 7. Memory turn: sections 3 and 5 coupled through the B's that memory
 * forces before q's last F. Pick rank q with lo_q >= lo; F(lo_q, 0)
 * starts no earlier than fwd(lo -> lo_q), and every pass of q starts
 * after it. Let nB B's and nW W's of q end before its last F, F(hi_q,
 * m-1), starts: memory there needs m v M_B - nB (M_B - M_W) - nW M_W <=
 * limit_q, with nW <= nB <= mv - v. Two bounds on the end E of B(lo_q,
 * m-1), from F(lo_q, 0) start:
 *   X1 = m sum (F + B) + nW W + idle_q: q runs every F and every B (each
 *        B of q precedes B(lo_q, m-1)), the nW W's and all its section-1
 *        idle in that interval (section 3);
 *   X2 = m sum F - F_hi + nB B + nW W + pre-idle_q, up to the start of
 *        the last F, then F(hi_q, m-1) up to the last stage and back
 *        down to B(lo_q, m-1) (section 5).
 * Before the last F a stage has run at most m - 1 B's and W's, and
 * B(s, i) follows B(s', i) on q's stages s' above s, so the nB B's form
 * at most m - 1 columns on suffixes of q's stages: their least work is
 * m - 1 times the lower convex hull of the column costs (a column of
 * the top j stages costs their B's) at nB / (m - 1), the bound of that
 * linear program; the W's count at q's cheapest stages, m - 1 each.
 * Sections 3 and 5 each take the
 * (nB, nW) that suits them; here one pair must serve both: many B's
 * before the last F delay it, few force W's. So E >= min over feasible
 * pairs of max(X1, X2); then B(lo_q, m-1) goes on down to lo and W(lo,
 * m-1) ends r's span. In V placement at 1F1B's memory a middle rank
 * must free memory before its last forwards, and the B's that do it sit
 * on the turn of every rank below.
 *
 * 8. Memory tail: the same pairs against the tail window and the round
 * trips. With nB B's ended before the last F, some chunk has ceil(nB /
 * v) of them, so some B(s, x), x = ceil(nB / v) - 1, ended before it:
 * F(lo, x) went up and came back down to s first (trip, as in section
 * 4), and then F(hi, m-1) makes its own round trip to B(lo, m-1) (X3).
 * F(lo, x) starts no earlier than start(x), the same argument one level
 * down: memory for x + 1 F's needs some pair (nb, nw) of earlier
 * microbatches ended, so F(lo, x) starts after x F's of lo, those B's
 * and W's and, if x + 1 > k, the head window with its idle; and after
 * F(lo, ceil(nb / v) - 1) started (start() of it) and came back. Few
 * B's before the last F leave the tail window to the W's, whose count
 * memory also caps (section 1's tail with this pair's fill); many B's
 * chain round trips. So r's span is at
 * least the least over pairs of max(busy + idle with the pair's tail,
 * X2 + W_lo, X3 + W_lo), and section 7's turn takes max(X1, X2, X3)
 * with X1's idle also the pair's. On a loop pipeline at 1F1B's memory
 * it proves zb optimal on bench_quality's instance 1 (p 6, m 14) and on
 * its copy at p 4, m 9 (sections 1-7: 1.8 % below both; the ILP does
 * not close either gap in 80-90 s).
 *
 * 9. Paced returns (one chunk per rank). B(r, x) ends no earlier than
 * B(q, x) of every later rank q has ended and come back down, and q
 * works at its own pace: from F(q, 0) start, B(q, x) ends no earlier
 * than E_q(x) = max((x + 1)(F + B), H_q + (x + 1) B + max(0, x + 1 -
 * k_q) F) + W_q times the W's q's memory forces before F(q, x) starts
 * (x + 1 F's allocated, at most x B's ended; section 2's count): q runs
 * F(q, 0..x) and B(q, 0..x) in between, and before B(q, 0), which waits
 * for the head window H_q, at most k_q F's. F(q, 0) starts fwd(r -> q)
 * after t0 and B(q, x) returns to r through bwd(q-1 -> r), so B(r, x)
 * ends at least at the most over q >= r of fwd + E_q(x) + bwd. Section
 * 8's round trips (c and X3) take this too: where a later rank is
 * slower than r's own trips, r's F's wait for its pace at tight
 * memory. Raises bounds at m close to p (grid: up to 0.6 %) and at
 * limits of a few microbatches (random p 2-5: up to 4 %). */
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include "zbsched/bound.h"
#include "zbsched/dp.h"
#include "zbsched/op.h"
#include "zbsched/timing.h"

/* Comm on the cross-rank edges between consecutive stages in [a, b]. */
static double path_comm(const struct zb_profile *p, int a, int b)
{
    double c = 0;
    for (int s = a; s < b; s++)
        c += zb_timing_lag(p, s, s + 1, zb_profile_stage_rank(p, s + 1));
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

/* The cost of the edge from stage s to s + 1 (0 on the same rank or
 * past the last stage). */
static double edge(const struct zb_profile *p, int s)
{
    return s + 1 < zb_profile_stages(p)
               ? zb_timing_lag(p, s, s + 1, zb_profile_stage_rank(p, s + 1))
               : 0;
}

struct rank_shape {
    int lo, hi;                 /* lowest and highest stage of the rank */
    double work;                /* busy time */
    double max_b, max_w;        /* longest B and W on the rank */
    double min_b, min_w;        /* shortest B and W on the rank */
};

static void rank_shape(const struct zb_profile *p, int r,
                       struct rank_shape *rs)
{
    *rs = (struct rank_shape){ .lo = -1, .hi = -1, .min_b = INFINITY,
                             .min_w = INFINITY };
    for (int c = 0; c < p->vpp; c++) {
        int s = zb_profile_rank_stage(p, r, c);
        const struct zb_stage_times *t = &p->stage[s];
        if (rs->lo < 0 || s < rs->lo)
            rs->lo = s;
        if (s > rs->hi)
            rs->hi = s;
        rs->work += p->microbatches * (t->f + t->b + t->w);
        rs->max_b = fmax(rs->max_b, t->b);
        rs->max_w = fmax(rs->max_w, t->w);
        rs->min_b = fmin(rs->min_b, t->b);
        rs->min_w = fmin(rs->min_w, t->w);
    }
}

/* The fewest W's that, with nb B's, free at least need of memory (a B
 * frees M_B - M_W, a W M_W); -1 when none up to nb do (a W needs its B). */
static long ws_to_free(const struct zb_profile *p, double need, long nb)
{
    double rest = need - nb * (p->m_b - p->m_w);
    long nw;

    if (rest <= 1e-12)
        return 0;
    if (p->m_w <= 0)
        return -1;
    nw = (long)ceil(rest / p->m_w - 1e-9);
    return nw > nb ? -1 : nw;
}

/* Least B and W work that must be done before the last F for memory. */
static double forced_done(const struct zb_profile *p, double limit,
                          double tb, double tw, long total, long own)
{
    double need = total * p->m_b - limit;
    double best = INFINITY;

    if (need <= 0)
        return 0;
    for (long nb = 0; nb <= total - own; nb++) {
        long nw = ws_to_free(p, need, nb);
        if (nw < 0)
            continue;
        best = fmin(best, nb * tb + nw * tw);
        if (nw == 0)
            break;          /* more B's only add work */
    }
    return best;
}

/* The least work of n B's and of n W's that rank q runs before its last
 * F (section 7's pairs). A stage has at most m - 1 of each there (those
 * of microbatch m-1 follow that F); the B's form at most m - 1 columns
 * on suffixes of q's stages, so their least work is m - 1 times the
 * lower convex hull of (j, B work of q's top j stages) at n / (m - 1);
 * the W's take q's cheapest stages first. Up to n = m - 1 that is n
 * times the least column mean and n times the shortest W. */
struct pass_work {
    long cap;                   /* a stage's passes of one kind: m - 1 */
    int v, hull_n;
    double *hull_x, *hull_y;    /* the hull's corners, j increasing */
    double *w, *w_sum;          /* q's W's ascending; sums of the first k */
};

/* scratch: room for 4 (v + 1) values. */
static void pass_work_init(struct pass_work *pw, const struct zb_profile *p,
                           int q, const struct rank_shape *rs,
                           double *scratch)
{
    const int v = p->vpp;
    double col = 0;
    int j = 0;

    *pw = (struct pass_work){ .cap = p->microbatches - 1, .v = v,
                              .hull_x = scratch, .hull_y = scratch + v + 1,
                              .w = scratch + 2 * (v + 1),
                              .w_sum = scratch + 3 * (v + 1) };
    /* The lower hull of (j, col) by Andrew's monotone chain, from (0, 0)
     * on: a corner stays while the turn to the next point is to the
     * left. */
    pw->hull_x[0] = pw->hull_y[0] = 0;
    pw->hull_n = 1;
    for (int s = rs->hi; s >= rs->lo; s--) {
        double *x = pw->hull_x, *y = pw->hull_y;
        if (zb_profile_stage_rank(p, s) != q)
            continue;
        col += p->stage[s].b;
        j++;
        while (pw->hull_n >= 2) {
            int a = pw->hull_n - 2, b = pw->hull_n - 1;
            if ((x[b] - x[a]) * (col - y[a]) - (y[b] - y[a]) * (j - x[a]) > 0)
                break;
            pw->hull_n--;
        }
        x[pw->hull_n] = j;
        y[pw->hull_n++] = col;
    }
    for (int c = 0; c < v; c++) {
        double w = p->stage[zb_profile_rank_stage(p, q, c)].w;
        int k = c;
        for (; k > 0 && pw->w[k - 1] > w; k--)
            pw->w[k] = pw->w[k - 1];
        pw->w[k] = w;
    }
    pw->w_sum[0] = 0;
    for (int c = 0; c < v; c++)
        pw->w_sum[c + 1] = pw->w_sum[c] + pw->w[c];
}

static double b_work(const struct pass_work *pw, long n)
{
    const double *x = pw->hull_x, *y = pw->hull_y;
    int i = 1;

    while (i < pw->hull_n - 1 && n > pw->cap * x[i])
        i++;
    return pw->cap * y[i - 1] +
           (n - pw->cap * x[i - 1]) * (y[i] - y[i - 1]) / (x[i] - x[i - 1]);
}

static double w_work(const struct pass_work *pw, long n)
{
    long k = pw->cap > 0 ? n / pw->cap : pw->v;   /* stages filled */

    if (k >= pw->v)
        return pw->cap * pw->w_sum[pw->v];
    return pw->cap * pw->w_sum[k] + (n - k * pw->cap) * pw->w[k];
}

/* Least number of W's a rank with this limit has run when an F starts
 * with fs F's allocated (that one included) and at most bs B's ended:
 * before its last F (section 2) and before F(q, x) (section 9). */
static double forced_w(const struct zb_profile *p, double limit, long fs,
                       long bs)
{
    double need;

    if (!isfinite(limit) || p->m_w <= 0)
        return 0;
    /* A B that allocates (M_W > M_B) frees only with its W: then a W and
     * its B together free M_B, and no B runs without need. */
    if (p->m_w > p->m_b) {
        need = fs * p->m_b - limit;
        return need > 1e-12 ? ceil(need / p->m_b - 1e-9) : 0;
    }
    need = fs * p->m_b - bs * (p->m_b - p->m_w) - limit;
    return need > 1e-12 ? ceil(need / p->m_w - 1e-9) : 0;
}

/* Upper bound on the F work rank r does in its head window [t0, t0 + h]
 * (section 1); *gap gets the idle that chunk releases force before its
 * last F starts. */
static double head_fill(const struct zb_profile *p, int r,
                        const struct rank_shape *rs, double k, double h,
                        double *gap)
{
    const double per_stage = fmin(p->microbatches, k);
    double fill = 0, sum = 0, before = 0, d = 0, prefix = 0;
    int n = 0;

    /* k F's in columns of prefixes of r's stages (section 1). */
    for (int s = rs->lo; s <= rs->hi; s++)
        if (zb_profile_stage_rank(p, s) == r) {
            prefix += p->stage[s].f;
            fill = fmax(fill, k * prefix / ++n);
        }
    *gap = 0;
    /* r's stages by increasing stage, hence increasing release d. */
    for (int s = rs->lo; s <= rs->hi; d += p->stage[s].f + edge(p, s),
                                      s++) {
        if (zb_profile_stage_rank(p, s) != r)
            continue;
        double a = per_stage * p->stage[s].f;
        if (d > 0 && d <= h) {
            fill = fmin(fill, fmin(d, before) + h - d);
            *gap = fmax(*gap, d - before);
        }
        sum += fmax(0, fmin(a, h - d));
        before += a;
    }
    return fmin(fill, sum);
}

/* Section 2: the longest round trip from r's first pass through some
 * stage g >= lo and back to r's last W. */
static double round_trip(const struct zb_profile *p,
                         const struct rank_shape *rs, const double *idle)
{
    const int n = zb_profile_stages(p);
    const double m = p->microbatches;
    const long total = (long)p->microbatches * p->vpp;
    double best = 0, there = 0, back = 0;

    /* there: F(lo) start to F(g) start; back: B(g) end to B(lo) end. */
    for (int g = rs->lo; g < n; there += p->stage[g].f + edge(p, g),
                                back += p->stage[g].b + edge(p, g), g++) {
        int q = zb_profile_stage_rank(p, g);
        double turn = 0, min_w = INFINITY;
        for (int c = 0; c < p->vpp; c++) {
            int s = zb_profile_rank_stage(p, q, c);
            if (s >= g)
                turn += m * (p->stage[s].f + p->stage[s].b);
            min_w = fmin(min_w, p->stage[s].w);
        }
        turn += forced_w(p, p->mem_limit[q], total, total - p->vpp) * min_w;
        if (g == zb_profile_rank_stage(p, q, 0))
            turn += idle[q];    /* g = lo_q: all of q's idle (3.) */
        best = fmax(best, there + turn + back + p->stage[rs->lo].w);
    }
    return best;
}

/* Section 4: the chain of round trips that the memory limit forces
 * through r's lowest stage. */
static double memory_chain(const struct zb_profile *p, int r,
                           const struct rank_shape *rs)
{
    const int last = zb_profile_stages(p) - 1, v = p->vpp;
    double limit = p->mem_limit[r], k, trip = INFINITY, full, n = 0;
    long x = p->microbatches - 1;

    if (!isfinite(limit) || p->m_b <= 0)
        return 0;
    /* More than m microbatches' room is as good as m (and keeps k, cast
     * to long below, in range for any limit). */
    k = fmin(floor(limit / p->m_b + 1e-9), p->microbatches);
    if (k < 1)
        return 0;           /* infeasible; rank_idle says so */
    for (int c = 0; c < v; c++) {
        int s = zb_profile_rank_stage(p, r, c);
        trip = fmin(trip, sum_f(p, rs->lo, last) + path_comm(p, rs->lo, last) +
                              sum_b(p, s, last) + path_comm(p, s, last));
    }
    /* One chunk: if the c = x + 1 - k B's free too little without all
     * their W's, F(lo, x) also waits for W(lo, x') or for F(lo, x'+1). */
    if (v == 1 && p->m_w > 0 && limit - k * p->m_b < p->m_w - 1e-9)
        trip += fmin(p->stage[rs->lo].w, p->stage[rs->lo].f);
    /* F(lo, x) is at least r's x-th F: it needs x + 1 - k B's ended, so
     * some chunk's B of microbatch ceil((x + 1 - k) / v) - 1. */
    while (x + 1 - (long)k >= 1) {
        x = (x + 1 - (long)k + v - 1) / v - 1;
        n++;
    }
    full = sum_f(p, rs->lo, last) + sum_b(p, rs->lo, last) +
           2 * path_comm(p, rs->lo, last) + p->stage[rs->lo].w;
    return n * trip + full;
}

/* Section 5: microbatch 0 to some stage g on rank q, every F of q's
 * stages from g to top (its highest stage <= hi) there, microbatch m-1 on
 * up and back down to lo, then W(lo, m-1). pre[q]: idle and least B/W
 * work that q has before its last F; sf[s], sb[s]: F (B) from s to the
 * last stage with comm. */
static double forward_turn(const struct zb_profile *p,
                           const struct rank_shape *rs, const double *pre,
                           const double *sf, const double *sb)
{
    const double m = p->microbatches;
    double best = 0, there = 0;

    for (int g = rs->lo; g <= rs->hi; there += p->stage[g].f + edge(p, g),
                                     g++) {
        int q = zb_profile_stage_rank(p, g), top = -1, hi_q = -1;
        double fs = 0;
        for (int c = 0; c < p->vpp; c++) {
            int t = zb_profile_rank_stage(p, q, c);
            hi_q = t > hi_q ? t : hi_q;
            if (t >= g && t <= rs->hi) {
                fs += m * p->stage[t].f;
                top = t > top ? t : top;
            }
        }
        if (g == zb_profile_rank_stage(p, q, 0) && top == hi_q)
            fs += pre[q];
        best = fmax(best, there + fs + edge(p, top) + sf[top + 1] +
                              sb[rs->lo] + p->stage[rs->lo].w);
    }
    return best;
}

/* Section 6: microbatch 0 up to the last stage and down to g on rank
 * q, every B of q's stages from bot (its lowest stage >= lo) to g there,
 * microbatch m-1 on down to lo, then W(lo, m-1). post[q]: the F work and
 * idle that q has after its first B starts and before B(lo_q, m-1)
 * ends. */
static double backward_turn(const struct zb_profile *p,
                            const struct rank_shape *rs, const double *post,
                            const double *sf, const double *sb)
{
    const double m = p->microbatches;
    double best = 0;

    for (int g = rs->lo; g <= rs->hi; g++) {
        int q = zb_profile_stage_rank(p, g), bot = -1, lo_q = -1, hi_q = -1;
        double bs = 0;
        for (int c = 0; c < p->vpp; c++) {
            int t = zb_profile_rank_stage(p, q, c);
            lo_q = lo_q < 0 || t < lo_q ? t : lo_q;
            hi_q = t > hi_q ? t : hi_q;
            if (t >= rs->lo && t <= g) {
                bs += m * p->stage[t].b;
                bot = bot < 0 || t < bot ? t : bot;
            }
        }
        if (g == hi_q && bot == lo_q)
            bs += post[q];
        best = fmax(best, sf[rs->lo] + sb[g + 1] + edge(p, g) + bs +
                              sb[rs->lo] - sb[bot] + p->stage[rs->lo].w);
    }
    return best;
}

/* Section 7 for rank r: fwd(lo -> lo_q), q's memory turn, then
 * B(lo_q, m-1) down to B(lo, m-1) and W(lo, m-1), at best over ranks q
 * with lo_q >= lo (fwd and bwd are differences of sf and sb). */
static double turn_from(const struct zb_profile *p,
                        const struct rank_shape *rs, const double *sf,
                        const double *sb, const double *tail)
{
    return sf[rs->lo] + sb[rs->lo] + tail[rs->lo] + p->stage[rs->lo].w;
}

/* tail[s]: the largest turn[q] - sf[lo_q] - sb[lo_q] over ranks q with
 * lo_q >= s, so that turn_from() takes O(1) a rank. */
static void turn_tails(const struct zb_profile *p, const double *turn,
                       const double *sf, const double *sb, double *tail)
{
    const int n = zb_profile_stages(p);

    for (int s = 0; s <= n; s++)
        tail[s] = -INFINITY;
    for (int q = 0; q < p->pp; q++) {
        int lo_q = zb_profile_rank_stage(p, q, 0);
        for (int c = 1; c < p->vpp; c++)
            if (zb_profile_rank_stage(p, q, c) < lo_q)
                lo_q = zb_profile_rank_stage(p, q, c);
        tail[lo_q] = fmax(tail[lo_q], turn[q] - sf[lo_q] - sb[lo_q]);
    }
    for (int s = n - 1; s >= 0; s--)
        tail[s] = fmax(tail[s], tail[s + 1]);
}

/* Back window (section 1): from the end of B(hi, m-1) to the start of
 * B(lo, m-1) the backward path through the stages between them; every
 * F and every B of hi is done, B(lo, m-1) and W(lo, m-1) are not, so
 * at most the rest of r's B and W work fills it. */
static double back_idle(const struct zb_profile *p, int r,
                        const struct rank_shape *rs)
{
    const double m = p->microbatches;
    double len, fill = 0;

    if (rs->lo == rs->hi)
        return 0;
    len = sum_b(p, rs->lo + 1, rs->hi - 1) + path_comm(p, rs->lo, rs->hi);
    for (int c = 0; c < p->vpp; c++) {
        int s = zb_profile_rank_stage(p, r, c);
        fill += m * p->stage[s].w + (s != rs->hi ? m * p->stage[s].b : 0);
    }
    fill -= p->stage[rs->lo].b + p->stage[rs->lo].w;
    return fmax(0, len - fill);
}

/* The pieces of rank r's section-1 idle: head idle, chunk gap, the tail
 * window before it is filled, back idle; k = F's that fit before a B;
 * h = the head window's length. */
struct idle_parts {
    double k, h, head, gap, window, back;
};

static void idle_parts(const struct zb_profile *p, int r,
                       const struct rank_shape *rs, struct idle_parts *ip)
{
    const int last = zb_profile_stages(p) - 1;
    long total = (long)p->microbatches * p->vpp;
    double limit = p->mem_limit[r];

    ip->k = isfinite(limit) ? floor(limit / p->m_b + 1e-9) : (double)total;
    ip->k = fmin(ip->k, (double)total);

    /* F(lo, i) start to B(hi + 1, i) end, then comm to hi: every F
     * from lo up and every B above hi. */
    ip->h = sum_f(p, rs->lo, last) + path_comm(p, rs->lo, last) +
            sum_b(p, rs->hi + 1, last) + path_comm(p, rs->hi, last);
    ip->head = fmax(0, ip->h - head_fill(p, r, rs, ip->k, ip->h, &ip->gap));

    /* F(hi, m-1) end to B(hi, m-1) start: the stages above hi and back. */
    ip->window = sum_f(p, rs->hi + 1, last) + sum_b(p, rs->hi + 1, last) +
                 2 * path_comm(p, rs->hi, last);
    ip->back = back_idle(p, r, rs);
}

/* Section 1's sum of the pieces with the tail idle given: the head and
 * tail windows are disjoint when r has more F's than fit before a B. */
static double idle_sum(const struct zb_profile *p,
                       const struct idle_parts *ip, double tail)
{
    long total = (long)p->microbatches * p->vpp;

    return (total > ip->k ? ip->head + tail : fmax(ip->head, ip->gap + tail)) +
           ip->back;
}

/* Section-1 idle when nb B's and nw W's end before r's last F: the
 * tail window holds at most the other mv - v - nb B's and mv - v - nw
 * W's. */
static double idle_with(const struct zb_profile *p,
                        const struct rank_shape *rs,
                        const struct idle_parts *ip, long nb, long nw)
{
    long rest = (long)p->microbatches * p->vpp - p->vpp;

    return idle_sum(p, ip, fmax(0, ip->window - (rest - nb) * rs->max_b -
                                       (rest - nw) * rs->max_w));
}

/* Forced idle of rank r within [t0, end of B(lo, m-1)] (section 1);
 * INFINITY when no order keeps r within its limit. */
static double rank_idle(const struct zb_profile *p, int r,
                        const struct rank_shape *rs, double *pre)
{
    long total = (long)p->microbatches * p->vpp;
    double limit = p->mem_limit[r], forced, tail;
    struct idle_parts ip;

    idle_parts(p, r, rs, &ip);
    forced = isfinite(limit) ? forced_done(p, limit, rs->max_b, rs->max_w,
                                           total, p->vpp)
                             : 0;
    if (!isfinite(forced))
        return INFINITY;    /* no order keeps this rank within its limit */
    tail = fmax(0, ip.window - ((double)(total - p->vpp) *
                                    (rs->max_b + rs->max_w) - forced));

    /* Idle before r's last F starts (section 5). */
    *pre = total > ip.k ? ip.head : ip.gap;
    return idle_sum(p, &ip, tail);
}

/* Section 8's starts: start[x] bounds when F(lo, x) starts, from rank
 * q's first pass. Memory for x + 1 F's needs nb B's and nw W's ended
 * first (nb <= v x: they are of earlier microbatches), so F(lo, x)
 * starts after x F's of lo, those B's and W's and, past k F's, the head
 * idle (a(nb)); and after some B(s, ceil(nb / v) - 1) ended, whose F(lo)
 * started no earlier than its own start[], then went up and came back,
 * and no earlier than section 9's pace (c(nb), nondecreasing in nb).
 * start[x] >= min over nb of max(a, c). */
struct starts {
    const struct zb_profile *p;
    const double *start;        /* start[] of earlier microbatches */
    const double *paced;        /* section 9's B(lo, x) ends, or NULL */
    double need, base, trip;    /* memory to free; a without the B, W */
    double b, w;                /* the rank's shortest B and W */
    bool falls;                 /* a W costs more than the B's it spares */
};

static double starts_a(const struct starts *st, long nb)
{
    long nw = ws_to_free(st->p, st->need, nb);

    return nw < 0 ? INFINITY : st->base + nb * st->b + nw * st->w;
}

/* a with the W count real-valued: a convex lower bound on a, linear
 * until the B's alone free enough. */
static double starts_lin(const struct starts *st, long nb)
{
    const struct zb_profile *p = st->p;
    double rest = fmax(0, st->need - nb * (p->m_b - p->m_w));

    return st->base + nb * st->b + (p->m_w > 0 ? rest / p->m_w * st->w : 0);
}

/* When some B(s, x) of q has ended, at the earliest (from q's first
 * pass): F(lo, x) started, went up and came back, and (one chunk) the
 * later ranks' pace let it (section 9). */
static double b_ended(const double *start, const double *paced,
                      double trip, long x)
{
    return paced ? fmax(start[x] + trip, paced[x]) : start[x] + trip;
}

static double starts_c(const struct starts *st, long nb)
{
    return b_ended(st->start, st->paced, st->trip,
                   (nb + st->p->vpp - 1) / st->p->vpp - 1);
}

/* The least over nb in [lo, hi] of max(a, c), or a lower bound on it:
 * exact from where a's bound meets c (a bisection while a falls),
 * until c alone reaches the best so far; a few steps at most, then the
 * rest bounded by a's bound. */
static double starts_min(const struct starts *st, long lo, long hi,
                         long kink)
{
    const int steps = 2;
    double best = INFINITY;
    long nb = lo, l = lo, r = kink < hi ? kink : hi;

    if (st->falls) {
        while (l < r) {             /* first nb with lin <= c */
            long mid = l + (r - l) / 2;
            if (starts_lin(st, mid) <= starts_c(st, mid))
                r = mid;
            else
                l = mid + 1;
        }
        if (l - 2 >= lo)            /* before it lin falls: f >= lin */
            best = starts_lin(st, l - 2);
        nb = l - 1 > lo ? l - 1 : lo;
    }
    for (int i = 0; nb <= hi && i < steps; nb++, i++) {
        double c = starts_c(st, nb);
        if (c >= best)
            return best;            /* c only rises from here */
        best = fmin(best, fmax(starts_a(st, nb), c));
    }
    if (nb <= hi) {                 /* the rest: lin is convex */
        double lin = fmin(starts_lin(st, nb), starts_lin(st, hi));
        if (kink > nb && kink < hi)
            lin = fmin(lin, starts_lin(st, kink));
        best = fmin(best, fmax(lin, starts_c(st, nb)));
    }
    return best;
}

/* start[x] for x = 0..m-1, each at least the one before plus F(lo):
 * F(lo, x) follows F(lo, x - 1). */
static void chain_starts(const struct zb_profile *p,
                         const struct rank_shape *rs,
                         const struct idle_parts *ip, double limit,
                         double trip, const double *paced, double *start)
{
    const double f_lo = p->stage[rs->lo].f, frees = p->m_b - p->m_w;
    struct starts st = { p, start, paced, 0, 0, trip, rs->min_b, rs->min_w,
                         p->m_w > 0 && rs->min_b * p->m_w < rs->min_w * frees };

    for (long x = 0; x < p->microbatches; x++) {
        long lo, hi = p->vpp * x, kink;
        double best = x * f_lo;

        st.need = (x + 1) * p->m_b - limit;
        st.base = x * f_lo + (x + 1 > ip->k ? ip->head : 0);
        lo = (long)ceil(st.need / p->m_b - 1e-9);
        lo = lo > 1 ? lo : 1;
        /* From kink + 1 B's on no W is needed: a rises by B, and c
         * never falls. */
        kink = frees > 0 ? (long)floor(st.need / frees + 1e-9) : hi;
        if (st.need > 0 && lo <= hi)
            best = starts_min(&st, lo, kink + 1 < hi ? kink + 1 : hi, kink);
        start[x] = x > 0 ? fmax(best, start[x - 1] + f_lo) : best;
    }
}

/* Sections 7 and 8 for rank q, over the memory-feasible pairs (nB B's,
 * nW W's ended before q's last F; nW the fewest for nB). From q's first
 * pass, the end of B(lo_q, m-1) is at least
 *   X1 = m sum (F + B) + nW W + q's section-1 idle with this pair's tail,
 *   X2 = m sum F - F_hi + nB B + nW W + pre_idle + the last F's round
 *        trip (section 7),
 *   X3 = when some B(s, x) ended (b_ended) + the last F's round trip
 *        (sections 8 and 9);
 * turn: the least over pairs of max(X1, X2, X3); own: the least of
 * max(busy + idle with the pair's tail, X2 + W_lo, X3 + W_lo), a bound
 * on q's own span; forced: the least B and W work of a pair (section
 * 5's pre). The B and W work of a pair: pass_work. paced: section 9's
 * bounds on the ends of B(lo_q, x), or NULL; start: room for m values
 * (chain_starts). */
struct pair_bounds {
    double turn, own, forced;
};

static struct pair_bounds memory_pairs(const struct zb_profile *p, int q,
                                       const struct rank_shape *rs,
                                       const struct pass_work *pw,
                                       double pre_idle, const double *sf,
                                       const double *sb, const double *paced,
                                       double *start)
{
    const int v = p->vpp;
    const long total = (long)p->microbatches * v;
    const double m = p->microbatches, limit = p->mem_limit[q];
    const double w_lo = p->stage[rs->lo].w;
    double fs = 0, bs = 0, need, chain, trip = INFINITY;
    struct pair_bounds pb = { INFINITY, INFINITY, INFINITY };
    struct idle_parts ip;

    for (int c = 0; c < v; c++) {
        int s = zb_profile_rank_stage(p, q, c);
        fs += m * p->stage[s].f;
        bs += m * p->stage[s].b;
        trip = fmin(trip, sf[rs->lo] + sb[s]);
    }
    idle_parts(p, q, rs, &ip);
    /* F(hi_q, m-1) start up to the last stage and down to B(lo_q). */
    chain = sf[rs->hi] + sb[rs->lo];
    need = isfinite(limit) ? total * p->m_b - limit : 0;
    if (need > 0)
        chain_starts(p, rs, &ip, limit, trip, paced, start);
    /* Below need / M_B B's even as many W's free too little. */
    for (long nb = need > 0 ? (long)(need / p->m_b) : 0; nb <= total - v;
         nb++) {
        long nw = ws_to_free(p, need, nb), x = (nb + v - 1) / v - 1;
        if (nw < 0)
            continue;
        double idle = idle_with(p, rs, &ip, nb, nw);
        double b = b_work(pw, nb), w = w_work(pw, nw);
        double x1 = fs + bs + w + idle;
        double x2 = fs - p->stage[rs->hi].f + b + w + pre_idle + chain;
        /* Some B(s, x) ended before the last F: F(lo, x) started no
         * earlier than start[x], then went up and back (b_ended). */
        double x3 = x < 0 ? 0 : b_ended(start, paced, trip, x) + chain;
        pb.turn = fmin(pb.turn, fmax(x1, fmax(x2, x3)));
        pb.own = fmin(pb.own, fmax(rs->work + idle, fmax(x2, x3) + w_lo));
        pb.forced = fmin(pb.forced, b + w);
        if (nw == 0)
            break;          /* more B's only delay the last F */
    }
    return pb;
}

/* Section 9 at rank r, one chunk per rank (stage q on rank q), the
 * ranks visited from the last down: pace[x] holds the most of E_q(x) -
 * sf[q] - sb[q] over the ranks q visited so far, r now included, and
 * paced[x] gets r's bound on the end of B(r, x) from t0, sf[r] + sb[r] +
 * pace[x] (sf[r] - sf[q] is fwd(r -> q), sb[r] - sb[q] the way back
 * from B(q, x)). */
static void paced_returns(const struct zb_profile *p, int r,
                          const struct rank_shape *rs, const double *sf,
                          const double *sb, double *pace, double *paced)
{
    const int s = rs->lo;           /* r's one stage */
    const struct zb_stage_times *t = &p->stage[s];
    struct idle_parts ip;

    idle_parts(p, r, rs, &ip);
    for (long x = 0; x < p->microbatches; x++) {
        double e = fmax((x + 1) * (t->f + t->b),
                        ip.h + (x + 1) * t->b +
                            fmax(0, x + 1 - ip.k) * t->f) +
                   forced_w(p, p->mem_limit[r], x + 1, x) * t->w;
        pace[x] = fmax(pace[x], e - sf[s] - sb[s]);
        paced[x] = sf[s] + sb[s] + pace[x];
    }
}

/* Per-rank span bounds; start[r] gets the earliest start of r's first
 * pass. Returns 0, or -1 when out of memory. */
static int uniform_rank_bounds(const struct zb_profile *p, double *span,
                               double *start)
{
    const int n = zb_profile_stages(p);
    const size_t m = (size_t)p->microbatches;
    double *idle = malloc(((size_t)5 * p->pp + 3 * (size_t)n + 3 + 3 * m +
                           4 * ((size_t)p->vpp + 1)) * sizeof *idle);
    double *pre = idle + p->pp, *post = pre + p->pp, *turn = post + p->pp;
    double *own = turn + p->pp, *sf = own + p->pp, *sb = sf + n + 1;
    double *tail = sb + n + 1, *f_start = tail + n + 1;
    double *pace = f_start + m, *paced = pace + m;  /* section 9's */
    double *scratch = paced + m;                    /* pass_work's */
    long total = (long)p->microbatches * p->vpp;
    struct rank_shape rs;

    if (!idle)
        return -1;
    sf[n] = sb[n] = 0;
    for (int s = n - 1; s >= 0; s--) {
        sf[s] = p->stage[s].f + edge(p, s) + sf[s + 1];
        sb[s] = p->stage[s].b + edge(p, s) + sb[s + 1];
    }
    for (size_t x = 0; x < m; x++)
        pace[x] = -INFINITY;
    /* From the last rank down: section 9 paces each rank by those after
     * it. */
    for (int r = p->pp - 1; r >= 0; r--) {
        double limit = p->mem_limit[r];
        rank_shape(p, r, &rs);
        if (p->vpp == 1)
            paced_returns(p, r, &rs, sf, sb, pace, paced);
        idle[r] = rank_idle(p, r, &rs, &pre[r]);
        post[r] = back_idle(p, r, &rs);
        if (isfinite(limit)) {
            double k = floor(limit / p->m_b + 1e-9), f = INFINITY;
            for (int c = 0; c < p->vpp; c++)
                f = fmin(f, p->stage[zb_profile_rank_stage(p, r, c)].f);
            post[r] += fmax(0, (double)total - k) * f;
        }
        own[r] = turn[r] = INFINITY;
        if (isfinite(idle[r])) {
            struct pass_work pw;
            struct pair_bounds pb;
            pass_work_init(&pw, p, r, &rs, scratch);
            pb = memory_pairs(p, r, &rs, &pw, pre[r], sf, sb,
                              p->vpp == 1 ? paced : NULL, f_start);
            turn[r] = pb.turn;
            own[r] = pb.own;
            pre[r] += pb.forced;
        }
    }
    turn_tails(p, turn, sf, sb, tail);
    for (int r = 0; r < p->pp; r++) {
        rank_shape(p, r, &rs);
        start[r] = sum_f(p, 0, rs.lo - 1) + path_comm(p, 0, rs.lo);
        span[r] = isfinite(idle[r])
                      ? fmax(fmax(rs.work + idle[r],
                                  round_trip(p, &rs, idle)),
                             fmax(fmax(fmax(memory_chain(p, r, &rs), own[r]),
                                       turn_from(p, &rs, sf, sb, tail)),
                                  fmax(forward_turn(p, &rs, pre, sf, sb),
                                       backward_turn(p, &rs, post, sf,
                                                     sb))))
                      : INFINITY;
    }
    free(idle);
    return 0;
}

/* The memory sections count microbatches of one M_B. Where stages
 * differ, bound a relaxation of p in those terms: rank r holds at least
 * a_r per microbatch after its F and w_r after its B (the least M_B and
 * M_W of its stages), so p's schedules all keep within one M_B = 1,
 * M_W = the least w_r / a_r, and a limit of limit_r / a_r; every
 * schedule of p is one of it, and its bound holds for p. Where every
 * rank's stages agree (one chunk a rank) and the ratios too, it is p. */
static int rank_bounds(const struct zb_profile *p, double *span,
                       double *start)
{
    struct zb_profile q;
    double rho = INFINITY;
    int rc;

    if (!p->stage_mem || !zb_profile_has_limit(p))
        return uniform_rank_bounds(p, span, start);
    zb_profile_copy(&q, p);
    free(q.stage_mem);
    q.stage_mem = NULL;
    for (int r = 0; r < q.pp; r++) {
        double a = INFINITY, w = INFINITY;
        for (int c = 0; c < p->vpp; c++) {
            int s = zb_profile_rank_stage(p, r, c);
            a = fmin(a, zb_profile_m_b(p, s));
            w = fmin(w, zb_profile_m_w(p, s));
        }
        q.mem_limit[r] = p->mem_limit[r] / a;
        rho = fmin(rho, w / a);
    }
    q.m_b = 1;
    q.m_w = rho;
    rc = uniform_rank_bounds(&q, span, start);
    zb_profile_release(&q);
    return rc;
}

/* Bounds for every rank; on allocation failure 0 (a valid bound). */
static double bound(const struct zb_profile *p, bool makespan)
{
    double *span = malloc(2 * (size_t)p->pp * sizeof *span), lb = 0;

    if (!span || rank_bounds(p, span, span + p->pp) != 0) {
        free(span);
        return 0;
    }
    for (int r = 0; r < p->pp; r++)
        lb = fmax(lb, span[r] + (makespan ? span[p->pp + r] : 0));
    free(span);
    return lb;
}

double zb_bound_cost(const struct zb_profile *p)
{
    return bound(p, false);
}

double zb_bound_makespan(const struct zb_profile *p)
{
    return bound(p, true);
}

/* The step (docs/zero.md) begins at 0 with the first pass or, for ZeRO-3,
 * with the gather that rank 0's first pass waits for, and every pass
 * comes after that pass: `lead` shifts the whole compute. On each rank
 * the last compute op is a W (or BW): any F or B is followed on its rank
 * by its own B or W. So the rank's last REDUCE_GRAD starts at or after
 * its compute ends, and takes at least the least of its stages' times. */
double zb_bound_step(const struct zb_profile *p)
{
    double *span, lb = 0, lead;

    if (!zb_dp_active(p))
        return zb_bound_makespan(p);
    span = malloc(2 * (size_t)p->pp * sizeof *span);
    if (!span || rank_bounds(p, span, span + p->pp) != 0) {
        free(span);
        return 0;
    }
    lead = p->dp.zero >= 3 ? zb_dp_op_time(p, ZB_OP_UNSHARD, 0) : 0;
    for (int r = 0; r < p->pp; r++) {
        double reduce = INFINITY;
        for (int c = 0; c < p->vpp; c++)
            reduce = fmin(reduce,
                          zb_dp_op_time(p, ZB_OP_REDUCE_GRAD,
                                        zb_profile_rank_stage(p, r, c)));
        lb = fmax(lb, lead + span[r] + span[p->pp + r] + reduce);
    }
    free(span);
    return lb;
}

void zb_bound_both(const struct zb_profile *p, double *cost, double *makespan)
{
    double *span = malloc(2 * (size_t)p->pp * sizeof *span);

    *cost = *makespan = 0;
    if (!span || rank_bounds(p, span, span + p->pp) != 0) {
        free(span);
        return;
    }
    for (int r = 0; r < p->pp; r++) {
        *cost = fmax(*cost, span[r]);
        *makespan = fmax(*makespan, span[r] + span[p->pp + r]);
    }
    free(span);
}

/* The closed-form bounds assume every pass takes its own time; an FB op
 * that runs shorter than its F plus its B breaks that. Then bound a copy
 * of p whose F and B times are scaled by k, the smallest such ratio: every
 * op takes at least as long there (an FB as its F then its B), and timing
 * is monotone in durations, so those bounds hold. */
static void scaled(const struct zb_profile *p, double k, double *cost,
                   double *makespan)
{
    struct zb_profile q;

    if (k >= 1) {
        zb_bound_both(p, cost, makespan);
        return;
    }
    zb_profile_copy(&q, p);
    for (int st = 0; st < zb_profile_stages(p); st++) {
        q.stage[st].f *= k;
        q.stage[st].b *= k;
    }
    zb_bound_both(&q, cost, makespan);
    zb_profile_release(&q);
}

void zb_bound_set(struct zb_schedule *s)
{
    const struct zb_profile *p = &s->profile;
    double k = 1;

    for (int r = 0; r < p->pp; r++)
        for (int i = 0; i < s->ranks[r].n; i++) {
            const struct zb_op *op = &s->ranks[r].ops[i];
            if (op->kind == ZB_OP_FB)
                k = fmin(k, zb_op_duration(p, op) /
                                (p->stage[op->stage].f +
                                 p->stage[op->b_stage].b));
        }
    scaled(p, k, &s->predicted.lower_bound, &s->predicted.makespan_bound);
}

double zb_bound_cost_any(const struct zb_profile *p)
{
    double k = 1, cost, makespan;

    /* An FB op runs an F and a B of stages on one rank (its own list). */
    for (int r = 0; p->fb > 0 && r < p->pp; r++)
        for (int a = 0; a < p->vpp; a++)
            for (int b = 0; b < p->vpp; b++) {
                int sa = zb_profile_rank_stage(p, r, a);
                int sb = zb_profile_rank_stage(p, r, b);
                k = fmin(k, p->fb / (p->stage[sa].f + p->stage[sb].b));
            }
    scaled(p, k, &cost, &makespan);
    return cost;
}
