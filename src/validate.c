/* validate.c - the one executable definition of a legal schedule.
 *
 * Checks, in order, each failing with a message that names rank, op index
 * and op: ops well formed (stage on its rank, peer the neighbouring
 * stage's rank, one STEP at the end); every pass exactly once; sends and
 * receives paired in the same order on both sides of every rank pair;
 * every op after what it needs in its own list (same-rank producers, the
 * RECV that brings a remote input, the producer before its SEND); no
 * deadlock,
 * proved by running the lists under rendezvous semantics (a SEND and its
 * RECV complete together, each blocks until the other is reached: the
 * strictest NCCL reading, so a pass here holds for any weaker one); the
 * data-parallel collectives well placed (validate_dp.c); memory within
 * each rank's limit (timing.h's tolerance). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "validate_dp.h"
#include "zbsched/pass.h"
#include "zbsched/timing.h"
#include "zbsched/validate.h"
#include "zbsched/xalloc.h"

#define DESC(op) zb_op_describe((op), desc, sizeof(desc))

struct val {
    const struct zb_schedule *s;
    const struct zb_profile *p;
    struct zb_error *err;
};

static bool is_send(enum zb_op_kind k)
{
    return k == ZB_OP_SEND_F || k == ZB_OP_SEND_B;
}

/* The stage on the other side of a comm op. */
static int peer_stage(const struct zb_op *op)
{
    return op->kind == ZB_OP_SEND_F || op->kind == ZB_OP_RECV_B
        ? op->stage + 1 : op->stage - 1;
}

/* One op (not STEP) names stages and microbatches of p (both halves of
 * an FB), on rank r. */
static int check_range(const struct zb_profile *p, int r, int i,
                       const struct zb_op *op, struct zb_error *err)
{
    struct zb_op part[2];
    int n = zb_op_split(op, part);
    char desc[96];

    /* A collective names a whole stage (mb -1) or, reducing per
     * microbatch, a microbatch (validate_dp.c says which). */
    bool no_mb = zb_op_is_collective(op->kind) && op->mb == -1;

    for (int k = 0; k < n; k++) {
        const struct zb_op *x = &part[k];
        if (x->stage < 0 || x->stage >= zb_profile_stages(p) ||
            (!no_mb && (x->mb < 0 || x->mb >= p->microbatches)))
            return zb_error_set(err, ZB_EILLEGAL, "rank %d op %d (%s): stage "
                                "or microbatch out of range", r, i,
                                DESC(op));
        if (zb_profile_stage_rank(p, x->stage) != r)
            return zb_error_set(err, ZB_EILLEGAL, "rank %d op %d (%s): stage "
                                "%d belongs to rank %d", r, i, DESC(op),
                                x->stage, zb_profile_stage_rank(p, x->stage));
    }
    return 0;
}

bool zb_validate_within_limit(const struct zb_profile *p, int r, double mem)
{
    return zb_timing_fits(mem, p->mem_limit[r]);
}

int zb_validate_ranges(const struct zb_schedule *s, struct zb_error *err)
{
    int rc;

    for (int r = 0; r < s->profile.pp; r++)
        for (int i = 0; i < s->ranks[r].n; i++)
            if (s->ranks[r].ops[i].kind != ZB_OP_STEP &&
                (rc = check_range(&s->profile, r, i, &s->ranks[r].ops[i],
                                  err)) < 0)
                return rc;
    return 0;
}

static int check_shape(struct val *v)
{
    const struct zb_profile *p = v->p;
    const int nstages = zb_profile_stages(p);
    char desc[96];
    int rc;

    for (int r = 0; r < p->pp; r++) {
        const struct zb_op_list *l = &v->s->ranks[r];
        if (l->n == 0 || l->ops[l->n - 1].kind != ZB_OP_STEP)
            return zb_error_set(v->err, ZB_EILLEGAL,
                                "rank %d: op list does not end with STEP", r);
        for (int i = 0; i < l->n; i++) {
            const struct zb_op *op = &l->ops[i];
            if (op->kind == ZB_OP_STEP) {
                if (i != l->n - 1)
                    return zb_error_set(v->err, ZB_EILLEGAL,
                                        "rank %d op %d: STEP before the "
                                        "end of the list", r, i);
                continue;
            }
            if ((rc = check_range(p, r, i, op, v->err)) < 0)
                return rc;
            if (zb_op_is_collective(op->kind) && !zb_dp_active(p))
                return zb_error_set(v->err, ZB_EILLEGAL,
                                    "rank %d op %d (%s): a collective, but "
                                    "the profile has no data parallelism "
                                    "(dp < 2)", r, i, DESC(op));
            if (!zb_op_is_comm(op->kind))
                continue;
            int ps = peer_stage(op);
            if (ps < 0 || ps >= nstages ||
                zb_profile_stage_rank(p, ps) != op->peer || op->peer == r)
                return zb_error_set(v->err, ZB_EILLEGAL,
                                    "rank %d op %d (%s): stage %d has no "
                                    "cross-rank neighbour on rank %d", r, i,
                                    DESC(op), op->stage, op->peer);
        }
    }
    return 0;
}

/* Each pass exactly once: BW counts as the B and the W of its stage, FB
 * as its F and its B. */
static int check_once(struct val *v)
{
    static const char *const pass_names[ZB_PASS_COUNT] = { "F", "B", "W" };
    const struct zb_profile *p = v->p;
    long n = zb_pass_count(p);
    int *where = zb_xmalloc((size_t)n * 2 * sizeof(int));
    char desc[96];
    int rc = 0;

    for (long i = 0; i < 2 * n; i++)
        where[i] = -1;
    for (int r = 0; r < p->pp && !rc; r++)
        for (int i = 0; i < v->s->ranks[r].n && !rc; i++) {
            const struct zb_op *op = &v->s->ranks[r].ops[i];
            struct zb_op part[2];
            struct zb_dep ks[3];
            int nk = 0, np;
            if (!zb_op_is_compute(op->kind))
                continue;
            np = zb_op_split(op, part);
            for (int h = 0; h < np; h++) {
                ks[nk++] = (struct zb_dep){ zb_pass_of(part[h].kind),
                                            part[h].stage, part[h].mb };
                if (part[h].kind == ZB_OP_BW)
                    ks[nk++] = (struct zb_dep){ ZB_PASS_W, part[h].stage,
                                                part[h].mb };
            }
            for (int k = 0; k < nk; k++) {
                long x = zb_pass_index(p, ks[k].pass, ks[k].stage,
                                       ks[k].mb);
                if (where[2 * x] >= 0) {
                    rc = zb_error_set(v->err, ZB_EILLEGAL,
                                      "rank %d op %d (%s) duplicates op %d "
                                      "of rank %d", r, i, DESC(op),
                                      where[2 * x + 1], where[2 * x]);
                    break;
                }
                where[2 * x] = r;
                where[2 * x + 1] = i;
            }
        }
    for (int k = 0; k < ZB_PASS_COUNT && !rc; k++)
        for (int st = 0; st < zb_profile_stages(p) && !rc; st++)
            for (int mb = 0; mb < p->microbatches && !rc; mb++)
                if (where[2 * zb_pass_index(p, k, st, mb)] < 0)
                    rc = zb_error_set(v->err, ZB_EILLEGAL,
                                      "rank %d: %s stage %d mb %d is "
                                      "missing", zb_profile_stage_rank(p, st),
                                      pass_names[k], st, mb);
    free(where);
    return rc;
}

/* Order within each list: done[] marks passes run (or received) so far. */
static int check_order(struct val *v)
{
    const struct zb_profile *p = v->p;
    long n = zb_pass_count(p);
    /* stamp[x] == r + 1: pass x is available on rank r (ran there, or its
     * result was received there). */
    int *stamp = zb_xcalloc((size_t)n, sizeof(int));
    char desc[96];
    int rc = 0;

    for (int r = 0; r < p->pp && !rc; r++) {
        for (int i = 0; i < v->s->ranks[r].n && !rc; i++) {
            const struct zb_op *op = &v->s->ranks[r].ops[i];
            struct zb_op part[2];
            struct zb_dep deps[4];
            int nd, np;

            switch (op->kind) {
            case ZB_OP_STEP:
            case ZB_OP_REDUCE_GRAD:     /* checked by validate_dp.c */
            case ZB_OP_UNSHARD:
            case ZB_OP_RESHARD:
                break;
            case ZB_OP_RECV_F:
                stamp[zb_pass_index(p, ZB_PASS_F, op->stage - 1, op->mb)] =
                    r + 1;
                break;
            case ZB_OP_RECV_B:
                stamp[zb_pass_index(p, ZB_PASS_B, op->stage + 1, op->mb)] =
                    r + 1;
                break;
            case ZB_OP_SEND_F:
            case ZB_OP_SEND_B: {
                enum zb_pass k = op->kind == ZB_OP_SEND_F ? ZB_PASS_F
                                                          : ZB_PASS_B;
                if (stamp[zb_pass_index(p, k, op->stage, op->mb)] != r + 1)
                    rc = zb_error_set(v->err, ZB_EILLEGAL,
                                      "rank %d op %d (%s) comes before the "
                                      "%s pass it sends", r, i, DESC(op),
                                      k == ZB_PASS_F ? "F" : "B");
                break;
            }
            default:
                /* Both halves of an FB need their inputs before it starts
                 * (so one half cannot feed the other). */
                np = zb_op_split(op, part);
                nd = 0;
                for (int h = 0; h < np; h++)
                    nd += zb_pass_deps(p, part[h].kind, part[h].stage,
                                       part[h].mb, deps + nd);
                for (int d = 0; d < nd && !rc; d++) {
                    long x = zb_pass_index(p, deps[d].pass, deps[d].stage,
                                           deps[d].mb);
                    bool local =
                        zb_profile_stage_rank(p, deps[d].stage) == r;
                    if (stamp[x] != r + 1)
                        rc = zb_error_set(
                            v->err, ZB_EILLEGAL,
                            "rank %d op %d (%s) comes before %s %s stage "
                            "%d mb %d", r, i, DESC(op),
                            local ? "its" : "the RECV of",
                            deps[d].pass == ZB_PASS_F ? "F" : "B",
                            deps[d].stage, deps[d].mb);
                }
                for (int h = 0; h < np && !rc; h++) {
                    const struct zb_op *x = &part[h];
                    stamp[zb_pass_index(p, zb_pass_of(x->kind), x->stage,
                                        x->mb)] = r + 1;
                    if (x->kind == ZB_OP_BW)
                        stamp[zb_pass_index(p, ZB_PASS_W, x->stage,
                                            x->mb)] = r + 1;
                }
            }
        }
    }
    free(stamp);
    return rc;
}

/* Index of the next comm op in l at or after i that talks to peer. */
static int next_with(const struct zb_op_list *l, int i, int peer, bool send)
{
    for (; i < l->n; i++)
        if (zb_op_is_comm(l->ops[i].kind) && l->ops[i].peer == peer &&
            is_send(l->ops[i].kind) == send)
            return i;
    return -1;
}

/* Walk the stream of ops rank a sends to (send) or receives from (!send)
 * rank b beside the opposite stream on b, op by op. */
static int check_stream(struct val *v, int a, int b, bool send)
{
    const struct zb_op_list *la = &v->s->ranks[a], *lb = &v->s->ranks[b];
    int x = next_with(la, 0, b, send), y = next_with(lb, 0, a, !send);
    char desc[96], desc2[96];

    while (x >= 0 || y >= 0) {
        if (x < 0 || y < 0) {
            const struct zb_op *lone = x >= 0 ? &la->ops[x] : &lb->ops[y];
            return zb_error_set(v->err, ZB_EILLEGAL,
                                "rank %d op %d (%s) has no matching %s on "
                                "rank %d", x >= 0 ? a : b, x >= 0 ? x : y,
                                DESC(lone),
                                is_send(lone->kind) ? "RECV" : "SEND",
                                x >= 0 ? b : a);
        }
        const struct zb_op *ox = &la->ops[x], *oy = &lb->ops[y];
        const struct zb_op *snd = send ? ox : oy, *rcv = send ? oy : ox;
        bool same_kind = (snd->kind == ZB_OP_SEND_F) ==
                         (rcv->kind == ZB_OP_RECV_F);
        if (!same_kind || peer_stage(snd) != rcv->stage ||
            snd->mb != rcv->mb)
            return zb_error_set(v->err, ZB_EILLEGAL,
                                "rank %d op %d (%s) is matched by rank %d "
                                "op %d (%s): send/recv order differs", a, x,
                                DESC(ox), b, y,
                                zb_op_describe(oy, desc2, sizeof(desc2)));
        x = next_with(la, x + 1, b, send);
        y = next_with(lb, y + 1, a, !send);
    }
    return 0;
}

static int check_pairing(struct val *v)
{
    for (int a = 0; a < v->p->pp; a++) {
        const struct zb_op_list *la = &v->s->ranks[a];
        /* Distinct (peer, direction) streams of a: few, neighbours only. */
        int seen[8][2], nseen = 0, rc;
        for (int i = 0; i < la->n; i++) {
            const struct zb_op *op = &la->ops[i];
            int j;
            if (!zb_op_is_comm(op->kind))
                continue;
            for (j = 0; j < nseen; j++)
                if (seen[j][0] == op->peer && seen[j][1] == is_send(op->kind))
                    break;
            if (j < nseen)
                continue;
            /* check_shape limits peers to the ranks of neighbouring
             * stages, r-1 and r+1 under both placements: at most four
             * streams, so the eight slots never fill (if they did, a
             * stream would merely be checked twice). */
            if (nseen < 8) {
                seen[nseen][0] = op->peer;
                seen[nseen][1] = is_send(op->kind);
                nseen++;
            }
            if ((rc = check_stream(v, a, op->peer, is_send(op->kind))) < 0)
                return rc;
        }
    }
    return 0;
}

/* Rendezvous run; pairing already holds, so heads that face each other are
 * a matching pair. */
static int check_deadlock(struct val *v)
{
    const struct zb_profile *p = v->p;
    int *pos = zb_xcalloc((size_t)p->pp, sizeof(int));
    int *work = zb_xmalloc((size_t)p->pp * 2 * sizeof(int));
    bool *listed = zb_xcalloc((size_t)p->pp, sizeof(bool));
    int nwork = 0, rc = 0;
    char desc[96], desc2[96];

    for (int r = 0; r < p->pp; r++) {
        work[nwork++] = r;
        listed[r] = true;
    }
    while (nwork > 0) {
        int r = work[--nwork];
        const struct zb_op_list *l = &v->s->ranks[r];
        listed[r] = false;
        while (pos[r] < l->n && !zb_op_is_comm(l->ops[pos[r]].kind))
            pos[r]++;
        if (pos[r] == l->n)
            continue;
        int q = l->ops[pos[r]].peer;
        const struct zb_op_list *lq = &v->s->ranks[q];
        while (pos[q] < lq->n && !zb_op_is_comm(lq->ops[pos[q]].kind))
            pos[q]++;
        if (pos[q] < lq->n && lq->ops[pos[q]].peer == r &&
            is_send(lq->ops[pos[q]].kind) != is_send(l->ops[pos[r]].kind)) {
            pos[r]++;
            pos[q]++;
            if (!listed[r]) {
                work[nwork++] = r;
                listed[r] = true;
            }
            if (!listed[q]) {
                work[nwork++] = q;
                listed[q] = true;
            }
        }
    }
    for (int r = 0; r < p->pp && !rc; r++) {
        if (pos[r] == v->s->ranks[r].n)
            continue;
        /* Follow the wait-for edges from r to the cycle. */
        int a = r;
        for (int step = 0; step < p->pp; step++)
            a = v->s->ranks[a].ops[pos[a]].peer;
        int b = v->s->ranks[a].ops[pos[a]].peer;
        rc = zb_error_set(v->err, ZB_EDEADLOCK,
                          "deadlock: rank %d op %d (%s) waits for rank %d, "
                          "whose op %d (%s) waits for rank %d", a, pos[a],
                          DESC(&v->s->ranks[a].ops[pos[a]]), b, pos[b],
                          zb_op_describe(&v->s->ranks[b].ops[pos[b]], desc2,
                                         sizeof(desc2)),
                          v->s->ranks[b].ops[pos[b]].peer);
    }
    free(pos);
    free(work);
    free(listed);
    return rc;
}

static int check_memory(struct val *v)
{
    const struct zb_profile *p = v->p;
    char desc[96];

    for (int r = 0; r < p->pp; r++) {
        double mem = 0, limit = p->mem_limit[r];
        for (int i = 0; i < v->s->ranks[r].n; i++) {
            const struct zb_op *op = &v->s->ranks[r].ops[i];
            struct zb_op part[2];
            int np = zb_op_split(op, part);
            /* An FB holds its F's activations before its B frees any. */
            for (int h = 0; h < np; h++) {
                mem += zb_op_memory_delta(p, &part[h]);
                if (!zb_validate_within_limit(p, r, mem))
                    return zb_error_set(v->err, ZB_ENOMEM_LIMIT,
                                        "rank %d op %d (%s): memory %g "
                                        "exceeds the limit %g", r, i,
                                        DESC(op), mem, limit);
            }
        }
    }
    return 0;
}

int zb_validate_shape(const struct zb_schedule *s, struct zb_error *err)
{
    struct val v = { .s = s, .p = &s->profile, .err = err };

    return check_shape(&v);
}

int zb_validate_order(const struct zb_schedule *s, struct zb_error *err)
{
    struct val v = { .s = s, .p = &s->profile, .err = err };
    int rc;

    if ((rc = check_shape(&v)) < 0 || (rc = check_once(&v)) < 0 ||
        (rc = check_pairing(&v)) < 0 || (rc = check_order(&v)) < 0 ||
        (rc = check_deadlock(&v)) < 0 ||
        (rc = zb_validate_collectives(s, err)) < 0)
        return rc;
    return 0;
}

int zb_validate_schedule(const struct zb_schedule *s, struct zb_error *err)
{
    struct val v = { .s = s, .p = &s->profile, .err = err };
    int rc;

    if ((rc = zb_validate_order(s, err)) < 0 ||
        (rc = check_memory(&v)) < 0)
        return rc;
    return 0;
}
