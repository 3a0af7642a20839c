/* lower.c - lowering: compute order -> ops with SEND/RECV and STEP.
 *
 * Rules we must satisfy (NCCL point-to-point): a send may block until the
 * peer posts the matching receive, and pairs match in order per rank pair
 * with no tags. We make the per-rank lists a projection of one global
 * sequence: walk all compute ops in the simulator's commit order (`seq`, a
 * topological order of the schedule); after each op that feeds another
 * rank, append its SEND to the producer's list and the matching RECV to the
 * consumer's list at the same point. Then every rank sees its transfers in
 * the same global order, the consumer's RECV precedes the consumer (its
 * seq is larger than the producer's), and executing the global sequence
 * step by step is a run in which each SEND meets its RECV at the heads of
 * both lists. Rank programs are deterministic and matching is fixed, so if
 * one run completes, every run does: no deadlock, under blocking or
 * non-blocking semantics alike. The validator re-checks this by
 * simulation. Posting the receive early also lets an executor overlap the
 * transfer with compute. Same-rank edges (V placement) need no ops. */
#include <stdlib.h>
#include "zbsched/lower.h"
#include "zbsched/schedule.h"
#include "zbsched/xalloc.h"

struct ref {
    int rank, index;
};

static void push_comm(struct zb_op_list *l, enum zb_op_kind kind, int stage,
                      int mb, int peer)
{
    struct zb_op op = { .kind = kind, .stage = stage, .mb = mb,
                        .peer = peer, .seq = -1 };
    zb_op_list_push(l, &op);
}

int zb_lower_run(struct zb_schedule *s, struct zb_error *err)
{
    const struct zb_profile *p = &s->profile;
    const int nstages = zb_profile_stages(p);
    struct zb_op_list *out = zb_xcalloc((size_t)p->pp, sizeof(*out));
    struct ref *by_seq;
    int total = 0;

    for (int r = 0; r < p->pp; r++)
        total += s->ranks[r].n;
    by_seq = zb_xmalloc((size_t)(total ? total : 1) * sizeof(*by_seq));
    for (int r = 0; r < p->pp; r++)
        for (int i = 0; i < s->ranks[r].n; i++) {
            const struct zb_op *op = &s->ranks[r].ops[i];
            if (!zb_op_is_compute(op->kind) || op->seq < 0 ||
                op->seq >= total) {
                free(by_seq);
                free(out);
                return zb_error_set(err, ZB_EINVAL,
                                    "lowering needs a simulated compute "
                                    "order (rank %d op %d)", r, i);
            }
            by_seq[op->seq] = (struct ref){ r, i };
        }

    for (int k = 0; k < total; k++) {
        int r = by_seq[k].rank;
        const struct zb_op *op = &s->ranks[r].ops[by_seq[k].index];
        struct zb_op part[2];
        int np = zb_op_split(op, part);

        zb_op_list_push(&out[r], op);
        /* An FB sends what both its halves produce, F's first. */
        for (int h = 0; h < np; h++) {
            const struct zb_op *x = &part[h];
            int st = x->stage;
            if (x->kind == ZB_OP_F && st + 1 < nstages) {
                int q = zb_profile_stage_rank(p, st + 1);
                if (q != r) {
                    push_comm(&out[r], ZB_OP_SEND_F, st, x->mb, q);
                    push_comm(&out[q], ZB_OP_RECV_F, st + 1, x->mb, r);
                }
            } else if ((x->kind == ZB_OP_B || x->kind == ZB_OP_BW) &&
                       st > 0) {
                int q = zb_profile_stage_rank(p, st - 1);
                if (q != r) {
                    push_comm(&out[r], ZB_OP_SEND_B, st, x->mb, q);
                    push_comm(&out[q], ZB_OP_RECV_B, st - 1, x->mb, r);
                }
            }
        }
    }
    for (int r = 0; r < p->pp; r++) {
        struct zb_op step = { .kind = ZB_OP_STEP, .stage = -1, .mb = -1,
                              .peer = -1, .seq = -1 };
        zb_op_list_push(&out[r], &step);
        free(s->ranks[r].ops);
        s->ranks[r] = out[r];
    }
    free(out);
    free(by_seq);
    return 0;
}
