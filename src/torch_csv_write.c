/* torch_csv_write.c - write a schedule as PyTorch's pipelining CSV (see
 * torch.h), in its compute_only and compute_comms forms. */
#include <assert.h>
#include <stdlib.h>
#include "strbuf.h"
#include "torch_csv.h"
#include "zbsched/pass.h"
#include "zbsched/torch.h"
#include "zbsched/xalloc.h"

/* FB is PyTorch's group "(1F1;6I0)OVERLAP_F_B" (its F, then its B). */
static void add_action(struct strbuf *sb, const struct zb_op *op)
{
    if (op->kind == ZB_OP_FB)
        zbi_sb_addf(sb, "(%dF%d;%dI%d)OVERLAP_F_B", op->stage, op->mb,
                op->b_stage, op->b_mb);
    else
        zbi_sb_addf(sb, "%d%s%d", op->stage, zbi_torch_type_name(op->kind),
                    op->mb);
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
        struct zb_op part[2];
        struct zb_dep deps[4];
        int np = zb_op_split(op, part), nd = 0;

        for (int h = 0; h < np; h++)
            nd += zb_pass_deps(p, part[h].kind, part[h].stage, part[h].mb,
                               deps + nd);
        for (int d = 0; d < nd; d++) {
            int t = pass_step[zb_pass_index(p, deps[d].pass, deps[d].stage,
                                            deps[d].mb)] + 1;
            if (t > at)
                at = t;
        }
        step[first[r] + by_seq[k].index] = at;
        for (int h = 0; h < np; h++) {
            const struct zb_op *x = &part[h];
            pass_step[zb_pass_index(p, zb_pass_of(x->kind), x->stage,
                                    x->mb)] = at;
            if (x->kind == ZB_OP_BW)
                pass_step[zb_pass_index(p, ZB_PASS_W, x->stage, x->mb)] = at;
        }
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
                    zbi_sb_addf(sb, ",");
            add_action(sb, &l->ops[i]);
        }
        zbi_sb_addf(sb, "\n");
        base += l->n;
    }
    free(step);
}

/* A stage-only action (UNSHARD, RESHARD, REDUCE_GRAD) as a further cell;
 * a REDUCE_GRAD per microbatch names it (mb >= 0). */
static void add_stage_action(struct strbuf *sb, int stage, const char *type,
                             int mb)
{
    zbi_sb_addf(sb, ",%d%s", stage, type);
    if (mb >= 0)
        zbi_sb_addf(sb, "%d", mb);
}

/* PyTorch's FSDP lowering (`_add_unshard_reshard`), which a
 * compute_comms file must carry itself: its runtime refuses to compute
 * on a sharded stage, and torchtitan shards whenever dp_shard > 1.
 * Before each compute op, the next MAX_ACTIVE distinct stages this rank
 * computes on are unsharded, the stages not among them resharded first;
 * after the last op every stage is resharded. Stages enter the window one
 * at a time, so at most one leaves it per op and the order of RESHARDs
 * matters only at the end, where they go by stage (PyTorch's set order
 * for fewer than 8 stages). Without FSDP the runtime skips them. */
enum { MAX_ACTIVE = 3 };    /* PyTorch's max_active_stages */

static void add_fsdp(struct strbuf *sb, const struct zb_op_list *l, int from,
                     bool *active, int nstages)
{
    int next[MAX_ACTIVE], n = 0;

    for (int i = from; i < l->n && n < MAX_ACTIVE; i++) {
        const struct zb_op *op = &l->ops[i];
        /* An FB computes on its F's stage and then its B's. */
        int stages[2] = { op->stage, op->b_stage };
        int ns = op->kind == ZB_OP_FB ? 2 : 1;
        if (!zb_op_is_compute(op->kind))
            continue;
        for (int h = 0; h < ns && n < MAX_ACTIVE; h++) {
            int k = 0;
            while (k < n && next[k] != stages[h])
                k++;
            if (k == n)
                next[n++] = stages[h];
        }
    }
    for (int s = 0; s < nstages; s++) {
        bool keep = false;
        for (int k = 0; k < n; k++)
            keep = keep || next[k] == s;
        if (active[s] && !keep) {
            add_stage_action(sb, s, TORCH_RESHARD, -1);
            active[s] = false;
        }
    }
    for (int k = 0; k < n; k++)
        if (!active[next[k]]) {
            add_stage_action(sb, next[k], TORCH_UNSHARD, -1);
            active[next[k]] = true;
        }
}

/* Our lowered lists as they are, with the actions PyTorch's own lowering
 * adds where it puts them relative to the compute ops: a REDUCE_GRAD
 * (its runtime scales and reduces a stage's gradients there) after the
 * op that completes the stage's last backward, W or B, and that op's
 * send (reducing per microbatch: after every W or BW, and its send,
 * naming the microbatch, as zero.h places ours); the FSDP actions for
 * the next compute op after the previous one, its sends and REDUCE_GRAD,
 * so that the all-gather overlaps the wait for that op's input. A row
 * starts with an empty cell that the first action's comma fills. */
static void format_compute_comms(const struct zb_schedule *s,
                                 struct strbuf *sb)
{
    const struct zb_profile *p = &s->profile;
    const int nstages = zb_profile_stages(p);
    int *done = zb_xcalloc((size_t)nstages, sizeof(int));
    bool *active = zb_xcalloc((size_t)nstages, sizeof(bool));
    const bool per_mb = zb_dp_per_mb(p);

    for (int r = 0; r < p->pp; r++) {
        const struct zb_op_list *l = &s->ranks[r];
        struct strbuf row;
        bool fsdp_due = true;
        int reduce = -1, reduce_mb = -1;

        zbi_sb_init(&row);
        for (int i = 0; i < l->n; i++) {
            const struct zb_op *op = &l->ops[i];
            /* The writer places PyTorch's own REDUCE_GRAD below; our
             * data-parallel collectives (zero.h) have no cell of theirs. */
            if (op->kind == ZB_OP_STEP || zb_op_is_collective(op->kind))
                continue;
            if (fsdp_due && op->kind != ZB_OP_SEND_F &&
                op->kind != ZB_OP_SEND_B) {
                add_fsdp(&row, l, i, active, nstages);
                fsdp_due = false;
            }
            zbi_sb_addf(&row, ",");
            add_action(&row, op);
            fsdp_due = fsdp_due || zb_op_is_compute(op->kind);
            if ((op->kind == ZB_OP_W || op->kind == ZB_OP_BW) &&
                (++done[op->stage] == p->microbatches || per_mb)) {
                reduce = op->stage;
                reduce_mb = per_mb ? op->mb : -1;
            }
            if (reduce >= 0 && (i + 1 == l->n ||
                                l->ops[i + 1].kind != ZB_OP_SEND_B ||
                                l->ops[i + 1].stage != reduce)) {
                add_stage_action(&row, reduce, TORCH_REDUCE_GRAD, reduce_mb);
                reduce = -1;
            }
        }
        add_fsdp(&row, l, l->n, active, nstages);
        zbi_sb_addf(sb, "%s\n", row.len ? row.buf + 1 : "");
        zbi_sb_release(&row);
    }
    free(active);
    free(done);
}

char *zb_torch_csv_format(const struct zb_schedule *s,
                          enum zb_torch_form form)
{
    struct strbuf sb;

    zbi_sb_init(&sb);
    if (form == ZB_TORCH_COMPUTE_ONLY)
        format_compute_only(s, &sb);
    else
        format_compute_comms(s, &sb);
    return zbi_sb_detach(&sb);
}
