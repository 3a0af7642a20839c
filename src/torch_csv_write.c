/* torch_csv_write.c - write a schedule as PyTorch's pipelining CSV (see
 * torch.h), in its compute_only and compute_comms forms. */
#include <assert.h>
#include <stdlib.h>
#include "strbuf.h"
#include "zbsched/pass.h"
#include "zbsched/torch.h"
#include "zbsched/xalloc.h"

/* PyTorch names: I is our B (input gradient), B our fused BW. */
static const char *torch_type(enum zb_op_kind k)
{
    switch (k) {
    case ZB_OP_F: return "F";
    case ZB_OP_B: return "I";
    case ZB_OP_W: return "W";
    case ZB_OP_BW: return "B";
    default: return zb_op_kind_name(k);   /* SEND_F ... RECV_B */
    }
}

static void add_action(struct strbuf *sb, const struct zb_op *op)
{
    sb_addf(sb, "%d%s%d", op->stage, torch_type(op->kind), op->mb);
}

struct ref {
    int rank, index;
};

/* Time steps: in the simulator's order (a topological order), each op
 * takes the first step after its rank's previous op and after every op it
 * depends on. PyTorch's step-locked runtime (PipelineScheduleMulti) posts
 * a receive in the step where the producer runs, so a consumer in the
 * same step would wait for a message not yet received. */
static int *grid_steps(const struct zb_schedule *s, int *nsteps)
{
    const struct zb_profile *p = &s->profile;
    int total = 0, *next = zb_xcalloc((size_t)p->pp, sizeof(int));
    int *pass_step = zb_xmalloc((size_t)zb_pass_count(p) * sizeof(int));
    int *step, *first;
    struct ref *by_seq;

    first = zb_xmalloc(((size_t)p->pp + 1) * sizeof(int));
    for (int r = 0; r < p->pp; r++) {
        first[r] = total;
        total += s->ranks[r].n;
    }
    first[p->pp] = total;
    step = zb_xmalloc((size_t)(total ? total : 1) * sizeof(int));
    by_seq = zb_xmalloc((size_t)(total ? total : 1) * sizeof(*by_seq));
    for (int k = 0; k < total; k++)
        by_seq[k].rank = -1;
    for (int r = 0; r < p->pp; r++)
        for (int i = 0; i < s->ranks[r].n; i++) {
            const struct zb_op *op = &s->ranks[r].ops[i];
            step[first[r] + i] = -1;
            if (zb_op_is_compute(op->kind)) {
                assert(op->seq >= 0 && op->seq < total);
                by_seq[op->seq] = (struct ref){ r, i };
            }
        }
    *nsteps = 0;
    for (int k = 0; k < total && by_seq[k].rank >= 0; k++) {
        int r = by_seq[k].rank, at = next[r];
        const struct zb_op *op = &s->ranks[r].ops[by_seq[k].index];
        struct zb_dep deps[2];
        int nd = zb_pass_deps(p, op->kind, op->stage, op->mb, deps);

        for (int d = 0; d < nd; d++) {
            int t = pass_step[zb_pass_index(p, deps[d].pass, deps[d].stage,
                                            deps[d].mb)] + 1;
            if (t > at)
                at = t;
        }
        step[first[r] + by_seq[k].index] = at;
        pass_step[zb_pass_index(p, zb_pass_of(op->kind), op->stage,
                                op->mb)] = at;
        if (op->kind == ZB_OP_BW)
            pass_step[zb_pass_index(p, ZB_PASS_W, op->stage, op->mb)] = at;
        next[r] = at + 1;
        if (at + 1 > *nsteps)
            *nsteps = at + 1;
    }
    free(by_seq);
    free(pass_step);
    free(next);
    free(first);
    return step;
}

static void format_compute_only(const struct zb_schedule *s,
                                struct strbuf *sb)
{
    int nsteps, base = 0;
    int *step = grid_steps(s, &nsteps);

    for (int r = 0; r < s->profile.pp; r++) {
        const struct zb_op_list *l = &s->ranks[r];
        int col = 0;
        for (int i = 0; i < l->n; i++) {
            int at = step[base + i];
            if (at < 0)
                continue;
            /* Empty cells are idle steps; a comma precedes every cell
             * but the first. */
            for (; col <= at; col++)
                if (col)
                    sb_addf(sb, ",");
            add_action(sb, &l->ops[i]);
        }
        sb_addf(sb, "\n");
        base += l->n;
    }
    free(step);
}

/* PyTorch's runtime scales and reduces a stage's gradients at its
 * REDUCE_GRAD, placed (as its own lowering does) after the op that
 * completes the stage's last backward, W or B, and that op's send. */
static void format_compute_comms(const struct zb_schedule *s,
                                 struct strbuf *sb)
{
    const struct zb_profile *p = &s->profile;
    int *done = zb_xcalloc((size_t)zb_profile_stages(p), sizeof(int));

    for (int r = 0; r < p->pp; r++) {
        const struct zb_op_list *l = &s->ranks[r];
        int cells = 0, reduce = -1;

        for (int i = 0; i < l->n; i++) {
            const struct zb_op *op = &l->ops[i];
            /* The writer places PyTorch's own REDUCE_GRAD below; our
             * data-parallel collectives (zero.h) have no cell of theirs. */
            if (op->kind == ZB_OP_STEP || zb_op_is_collective(op->kind))
                continue;
            if (cells++)
                sb_addf(sb, ",");
            add_action(sb, op);
            if ((op->kind == ZB_OP_W || op->kind == ZB_OP_BW) &&
                ++done[op->stage] == p->microbatches)
                reduce = op->stage;
            if (reduce >= 0 && (i + 1 == l->n ||
                                l->ops[i + 1].kind != ZB_OP_SEND_B ||
                                l->ops[i + 1].stage != reduce)) {
                sb_addf(sb, ",%dREDUCE_GRAD", reduce);
                reduce = -1;
            }
        }
        sb_addf(sb, "\n");
    }
    free(done);
}

char *zb_torch_csv_format(const struct zb_schedule *s,
                          enum zb_torch_form form)
{
    struct strbuf sb;

    sb_init(&sb);
    if (form == ZB_TORCH_COMPUTE_ONLY)
        format_compute_only(s, &sb);
    else
        format_compute_comms(s, &sb);
    return sb_detach(&sb);
}
