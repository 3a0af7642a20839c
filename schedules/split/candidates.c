/* candidates.c - the splits the planner starts from: torchtitan's even
 * split and the min-max compute split, the latter also under a memory
 * constraint per stage (which trades layers for microbatches in flight on
 * the first ranks). */
#include <math.h>
#include <stdlib.h>
#include "split/split_int.h"
#include "zbsched/memory_model.h"
#include "zbsched/xalloc.h"

int zbi_split_even(const struct zb_model *m, int nstages, int *counts)
{
    int first = -1, last = -1, blocks = 0, eff, base, extra, at = 0;

    for (int i = 0; i < m->n; i++)
        if (m->layers[i].kind == ZB_LAYER_LAYER) {
            if (first < 0)
                first = i;
            last = i;
            blocks++;
        }
    if (blocks == 0)
        return -1;
    /* The embedding and the head each count as one block's worth. */
    eff = blocks + 2;
    base = eff / nstages;
    extra = eff % nstages;
    for (int s = 0; s < nstages; s++) {
        int units = base + (s < extra), b = units;
        if (s == 0)
            b--;
        if (s == nstages - 1)
            b--;
        if (b < 0 || (b == 0 && s > 0 && s < nstages - 1))
            return -1;
        counts[s] = b;
        at += b;
    }
    if (at != blocks)
        return -1;
    counts[0] += first;
    counts[nstages - 1] += m->n - 1 - last;
    for (int s = 0; s < nstages; s++)
        if (counts[s] <= 0)
            return -1;
    return 0;
}

void zbi_split_work(const struct zb_model *m, const int *counts,
                    int nstages, double *work)
{
    int at = 0;

    for (int s = 0; s < nstages; s++) {
        work[s] = 0;
        for (int k = 0; k < counts[s]; k++)
            work[s] += zb_model_work(m, at++);
    }
}

/* Whether layers i..j (inclusive) may form stage s. */
static bool part_ok(const struct zb_model *m, int s, int i, int j,
                    double limit, const struct zbi_split_memory *mem)
{
    struct zb_stage_bytes b;
    double work = 0, need;

    for (int k = i; k <= j; k++)
        work += zb_model_work(m, k);
    if (work > limit)
        return false;
    if (!mem || !mem->k)
        return true;
    zb_memory_stage_bytes(m, i, j - i + 1, &b);
    need = b.params * mem->state_per_param + mem->k[s] * b.act +
           2 * (b.in_bytes + b.out_bytes);
    return need <= mem->budget[s];
}

bool zbi_split_cut_ok(const struct zb_model *m, int at)
{
    return at <= 0 || at >= m->n || m->layers[at].kind != ZB_LAYER_HEAD ||
           m->layers[at - 1].kind != ZB_LAYER_HEAD;
}

/* Greedy fill under limit over units (runs of layers between the places
 * a cut may go: unit u is layers at[u] .. at[u+1]-1): each stage as long
 * as it may be while the stages after it keep one unit each; the last
 * takes the rest. Valid because a part within a feasible part is
 * feasible (work, bytes and parameters only grow with a part), so the
 * greedy ends are never before those of any feasible split. */
static bool fill(const struct zb_model *m, const int *at, int nu,
                 int nstages, double limit,
                 const struct zbi_split_memory *mem, bool from_right,
                 int *counts)
{
    int u = from_right ? nu - 1 : 0;

    for (int q = 0; q < nstages; q++) {
        int s = from_right ? nstages - 1 - q : q, left = nstages - 1 - q;
        int len = 0, room = from_right ? u + 1 - left : nu - u - left;

        if (q == nstages - 1)
            len = room;
        else
            while (len < room) {
                int lo = from_right ? u - len : u, hi = from_right ? u
                                                              : u + len;
                if (!part_ok(m, s, at[lo], at[hi + 1] - 1, limit, mem))
                    break;
                len++;
            }
        if (len < 1)
            return false;
        {
            int lo = from_right ? u - len + 1 : u;
            int hi = from_right ? u : u + len - 1;
            if (q == nstages - 1 &&
                !part_ok(m, s, at[lo], at[hi + 1] - 1, limit, mem))
                return false;
            counts[s] = at[hi + 1] - at[lo];
        }
        u += from_right ? -len : len;
    }
    return true;
}

int zbi_split_minmax(const struct zb_model *m, int nstages,
                     const struct zbi_split_memory *mem, bool from_right,
                     int *counts)
{
    int *at = zb_xmalloc(((size_t)m->n + 1) * sizeof(int)), nu = 0, rc = -1;
    double lo = 0, hi = 0;

    for (int i = 0; i < m->n; i++) {
        if (zbi_split_cut_ok(m, i))
            at[nu++] = i;
        hi += zb_model_work(m, i);
    }
    at[nu] = m->n;
    hi = hi * (1 + 1e-12) + 1e-300;
    if (nstages > nu || !fill(m, at, nu, nstages, hi, mem, from_right,
                              counts))
        goto out;
    /* 100 halvings take the interval to the last bit of a double. */
    for (int it = 0; it < 100 && hi - lo > 1e-12 * hi; it++) {
        double mid = 0.5 * (lo + hi);
        if (fill(m, at, nu, nstages, mid, mem, from_right, counts))
            hi = mid;
        else
            lo = mid;
    }
    if (fill(m, at, nu, nstages, hi, mem, from_right, counts))
        rc = 0;
out:
    free(at);
    return rc;
}
