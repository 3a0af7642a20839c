/* interleaved.c - interleaved 1F1B (Megatron-LM, Narayanan et al. 2021):
 * v chunks per rank in loop placement; microbatches go in groups of p
 * through chunk 0, then the same group through chunk 1, and so on;
 * backwards take the chunks in reverse. Rank r warms up with
 * 2(p-r-1) + (v-1)p forwards, then alternates one forward and one fused
 * backward. When p does not divide m, the last group is short, and so
 * many forwards may not be enough for a backward to find its inputs: the
 * generator then takes the smallest extra warm-up, the same on every rank,
 * with which the order runs (what Megatron's table with a short group
 * would need). */
#include "families/families.h"
#include "zbsched/pass.h"
#include "zbsched/xalloc.h"
#include <stdbool.h>
#include <stdlib.h>

struct vmb {
    int chunk, mb;
};

/* Megatron's virtual-microbatch table: k -> (chunk, microbatch). */
static struct vmb *virtual_order(const struct zb_profile *p, bool backward)
{
    const int m = p->microbatches, v = p->vpp, P = p->pp;
    struct vmb *t = zb_xmalloc((size_t)m * v * sizeof(*t));
    int k = 0;

    for (int g0 = 0; g0 < m; g0 += P) {
        int g1 = g0 + P < m ? g0 + P : m;
        for (int c = 0; c < v; c++)
            for (int mb = g0; mb < g1; mb++)
                t[k++] = (struct vmb){ backward ? v - 1 - c : c, mb };
    }
    return t;
}

/* Megatron's warm-up of rank r, before any extra. */
static int base_warmup(const struct zb_profile *p, int r)
{
    return 2 * (p->pp - r - 1) + (p->vpp - 1) * p->pp;
}

/* Rank r's warm-up: forwards before its first backward. */
static int warmup_of(const struct zb_profile *p, int r, int extra)
{
    int w = base_warmup(p, r) + extra;
    int total = p->microbatches * p->vpp;

    return w < total ? w : total;
}

void zbi_order_interleaved_warmup(const struct zb_profile *p,
                                  struct zb_schedule *s, int extra)
{
    const int total = p->microbatches * p->vpp;
    struct vmb *fwd = virtual_order(p, false), *bwd = virtual_order(p, true);

    for (int r = 0; r < p->pp; r++) {
        int warmup = warmup_of(p, r, extra);
        s->ranks[r].n = 0;
#define STAGE(x) zb_profile_rank_stage(p, r, (x).chunk)
        for (int k = 0; k < warmup; k++)
            zb_schedule_push(s, r, ZB_OP_F, STAGE(fwd[k]), fwd[k].mb);
        for (int k = 0; k < total - warmup; k++) {
            zb_schedule_push(s, r, ZB_OP_F, STAGE(fwd[warmup + k]),
                             fwd[warmup + k].mb);
            zb_schedule_push(s, r, ZB_OP_BW, STAGE(bwd[k]), bwd[k].mb);
        }
        for (int k = total - warmup; k < total; k++)
            zb_schedule_push(s, r, ZB_OP_BW, STAGE(bwd[k]), bwd[k].mb);
#undef STAGE
    }
    free(fwd);
    free(bwd);
}

/* Whether the order with a given extra warm-up runs, without building or
 * timing it. Runnability is timing-free: a rank runs its list in order,
 * and an op whose inputs exist stays runnable, so the order runs iff
 * repeatedly running every runnable op finishes every list (the
 * simulator's stall test, zb_sim_run(), without times). Every rank takes
 * the forward and backward tables in the same order whatever its
 * warm-up, so a rank's progress is two counts (nf forwards, nb
 * backwards) and a pass is done iff its table position is below its
 * rank's count: O(ops) per try, no schedule, no per-pass state. */
struct runs {
    const struct zb_profile *p;
    int total, extra;
    struct vmb *fwd, *bwd;  /* the tables */
    int *fpos, *bpos;  /* [chunk * m + mb]: position in the table */
    int *nf, *nb;      /* per rank */
    int *stack;
    bool *queued;
    int *mark;             /* next_extra(): per rank, when visited */
    struct zb_dep *wait;   /* next_extra(): per rank, what it waits on */
};

static bool pass_done(const struct runs *x, const struct zb_dep *d)
{
    const struct zb_profile *p = x->p;
    int r = zb_profile_stage_rank(p, d->stage);
    int i = zb_profile_stage_chunk(p, d->stage) * p->microbatches + d->mb;

    return d->pass == ZB_PASS_F ? x->nf[r] > x->fpos[i]
                                : x->nb[r] > x->bpos[i];
}

/* Whether rank r's next op is a forward (false: a backward), in the list
 * zbi_order_interleaved_warmup() writes: warm-up forwards, then
 * forward/backward pairs, then the remaining backwards. */
static bool next_is_forward(const struct runs *x, int r)
{
    int w = warmup_of(x->p, r, x->extra), pos = x->nf[r] + x->nb[r];

    return pos < w || (pos < 2 * x->total - w && (pos - w) % 2 == 0);
}

/* An input of rank r's next op (a forward or not) that is not done, into
 * out; false when there is none (or r's list is finished). */
static bool missing_input(const struct runs *x, int r, bool forward,
                          struct zb_dep *out)
{
    const struct zb_profile *p = x->p;
    struct vmb op;
    struct zb_dep deps[2];
    int n;

    if (x->nf[r] + x->nb[r] == 2 * x->total)
        return false;
    op = forward ? x->fwd[x->nf[r]] : x->bwd[x->nb[r]];
    n = zb_pass_deps(p, forward ? ZB_OP_F : ZB_OP_BW,
                     zb_profile_rank_stage(p, r, op.chunk), op.mb, deps);
    for (int i = 0; i < n; i++)
        if (!pass_done(x, &deps[i])) {
            *out = deps[i];
            return true;
        }
    return false;
}

/* Run rank r's next op if its inputs are done; false when it cannot (or
 * its list is finished). */
static bool step(struct runs *x, int r)
{
    bool forward = next_is_forward(x, r);
    struct zb_dep d;

    if (x->nf[r] + x->nb[r] == 2 * x->total ||
        missing_input(x, r, forward, &d))
        return false;
    if (forward)
        x->nf[r]++;
    else
        x->nb[r]++;
    return true;
}

static bool order_runs(struct runs *x, int extra)
{
    const int P = x->p->pp;
    int n = 0;
    bool ok = true;

    x->extra = extra;
    for (int r = 0; r < P; r++) {
        x->nf[r] = x->nb[r] = 0;
        x->stack[n++] = r;
        x->queued[r] = true;
    }
    /* A rank's progress can only unblock its neighbours in the ring of
     * ranks (stages s-1 and s+1 of a loop placement). */
    while (n > 0) {
        int r = x->stack[--n];
        bool moved = false;
        x->queued[r] = false;
        while (step(x, r))
            moved = true;
        int next[2] = { (r + 1) % P, (r + P - 1) % P };
        for (int i = 0; moved && i < 2; i++)
            if (!x->queued[next[i]]) {
                x->queued[next[i]] = true;
                x->stack[n++] = next[i];
            }
    }
    for (int r = 0; r < P; r++)
        ok = ok && x->nf[r] + x->nb[r] == 2 * x->total;
    return ok;
}

/* After order_runs(x, e) stalled: the next extra that may run; every one
 * between e and it stalls too, so the search skips them. The stalled
 * ranks wait on one another around a cycle: each one's next op needs a
 * pass of the next rank on the cycle that is not done, so that pass
 * comes at or after that rank's next op in its list. The passes an op
 * needs do not depend on the extra, and neither does the order of two
 * forwards or two backwards on a rank; a backward j before a forward a on
 * rank q (q's next op a backward that waits, around the cycle, on its own
 * forward a) holds iff a > w_q + j, i.e. while extra < a - j - base_q.
 * While every edge holds the cycle is a deadlock, so the first extra
 * that may run is where the first such edge flips. */
static int next_extra(struct runs *x, int e)
{
    const struct zb_profile *p = x->p;
    const int P = p->pp;
    int r = 0, q, flip = -1;

    for (q = 0; q < P; q++)
        x->mark[q] = -1;
    while (r < P && x->nf[r] + x->nb[r] == 2 * x->total)
        r++;
    /* Walk the waits from a stalled rank until one repeats. */
    for (int i = 0; r < P && x->mark[r] < 0; i++) {
        x->mark[r] = i;
        if (!missing_input(x, r, next_is_forward(x, r), &x->wait[r]))
            return e + 1;
        r = zb_profile_stage_rank(p, x->wait[r].stage);
    }
    if (r == P)
        return e + 1;
    /* r is on the cycle; around it, q waits on pass d of rank t. */
    q = r;
    do {
        const struct zb_dep *d = &x->wait[q];
        int t = zb_profile_stage_rank(p, d->stage);
        if (!next_is_forward(x, t) && d->pass == ZB_PASS_F) {
            int a = x->fpos[zb_profile_stage_chunk(p, d->stage) *
                                p->microbatches + d->mb];
            int edge = a - x->nb[t] - base_warmup(p, t);
            if (flip < 0 || edge < flip)
                flip = edge;
        }
        q = t;
    } while (q != r);
    return flip > e ? flip : e + 1;
}

void zbi_order_interleaved(const struct zb_profile *p, struct zb_schedule *s)
{
    const int m = p->microbatches, P = p->pp;
    struct runs x = { .p = p, .total = m * p->vpp };
    int extra = 0;

    if (m % P != 0) {
        x.fwd = virtual_order(p, false);
        x.bwd = virtual_order(p, true);
        x.fpos = zb_xmalloc((size_t)x.total * sizeof(int));
        x.bpos = zb_xmalloc((size_t)x.total * sizeof(int));
        x.nf = zb_xmalloc((size_t)P * sizeof(int));
        x.nb = zb_xmalloc((size_t)P * sizeof(int));
        x.stack = zb_xmalloc((size_t)P * sizeof(int));
        x.queued = zb_xmalloc((size_t)P * sizeof(bool));
        x.mark = zb_xmalloc((size_t)P * sizeof(int));
        x.wait = zb_xmalloc((size_t)P * sizeof(*x.wait));
        for (int k = 0; k < x.total; k++) {
            x.fpos[x.fwd[k].chunk * m + x.fwd[k].mb] = k;
            x.bpos[x.bwd[k].chunk * m + x.bwd[k].mb] = k;
        }
        /* Terminates: with the warm-up at every forward the order is
         * GPipe's per chunk, which always runs. */
        while (!order_runs(&x, extra))
            extra = next_extra(&x, extra);
        free(x.fpos);
        free(x.bpos);
        free(x.nf);
        free(x.nb);
        free(x.stack);
        free(x.queued);
        free(x.mark);
        free(x.wait);
        free(x.fwd);
        free(x.bwd);
    }
    zbi_order_interleaved_warmup(p, s, extra);
}

/* The warm-up search tries up to m * vpp extras, each an O(pp * vpp * m)
 * check; where pp is small the skips do not help and every extra is
 * tried. Beyond this many steps (about half a minute) the search is
 * refused rather than left running for minutes without a word
 * (docs/tuning.md, "Interleaved warm-up search limit"). */
#define MAX_WARMUP_SEARCH_STEPS 2e9

int zbi_interleaved_check_size(const struct zb_profile *p,
                               struct zb_error *err)
{
    double steps = 2.0 * p->pp * p->vpp * p->vpp * (double)p->microbatches *
                   p->microbatches;

    if (p->microbatches % p->pp == 0 || steps <= MAX_WARMUP_SEARCH_STEPS)
        return 0;
    return zb_error_set(err, ZB_EUNSUPPORTED,
                        "interleaved with %d microbatches on pp %d (not a "
                        "multiple) would search its warm-up in up to %.2g "
                        "steps (limit %.2g): use a multiple of pp, as "
                        "Megatron requires, or fewer microbatches",
                        p->microbatches, p->pp, steps,
                        MAX_WARMUP_SEARCH_STEPS);
}

static int gen_interleaved(const struct zb_profile *p,
                           const struct zb_options *opt, struct zb_schedule *s,
                           struct zb_error *err)
{
    int rc = zbi_interleaved_check_size(p, err);

    (void)opt;
    if (rc == 0)
        zbi_order_interleaved(p, s);
    return rc;
}

const struct zb_generator zb_gen_interleaved = {
    .name = "interleaved",
    .summary = "interleaved 1F1B (Megatron order), loop placement, vpp >= 2",
    .placements = ZB_PLACES_LOOP, .min_vpp = 2, .max_vpp = 64,
    .shape_placement = ZB_PLACEMENT_LOOP, .shape_vpp = 2,
    .generate = gen_interleaved,
};
