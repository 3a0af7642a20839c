/* memory_model.c - bytes per rank (memory_model.h): model state, the
 * exact activation replay of a schedule's order, and boundary buffers. */
#include "zbsched/memory_model.h"
#include "zbsched/op.h"

void zb_memory_stage_bytes(const struct zb_model *m, int first, int count,
                           struct zb_stage_bytes *out)
{
    int last = first + count - 1;

    *out = (struct zb_stage_bytes){ 0 };
    for (int i = first; i <= last; i++) {
        out->act += m->layers[i].act_bytes;
        out->act_w += m->layers[i].act_w_bytes;
        out->params += m->layers[i].params;
    }
    out->in_bytes = first > 0 ? m->layers[first - 1].out_bytes : 0;
    out->out_bytes = last < m->n - 1 ? m->layers[last].out_bytes : 0;
}

double zb_memory_state_per_param(const struct zb_model *m, int dp, int zero)
{
    double optim = m->bytes_optim;

    if (zero >= 1 && dp > 1)
        optim /= dp;
    return m->bytes_weight + m->bytes_grad + optim;
}

double zb_memory_buffers(const struct zb_profile *p,
                         const struct zb_stage_bytes *st, int r)
{
    int n = zb_profile_stages(p);
    double sum = 0;

    for (int s = 0; s < n; s++) {
        if (zb_profile_stage_rank(p, s) != r)
            continue;
        if (s > 0 && zb_profile_stage_rank(p, s - 1) != r)
            sum += 2 * st[s].in_bytes;
        if (s < n - 1 && zb_profile_stage_rank(p, s + 1) != r)
            sum += 2 * st[s].out_bytes;
    }
    return sum;
}

static double delta(const struct zb_stage_bytes *st, const struct zb_op *op)
{
    const struct zb_stage_bytes *b = &st[op->stage];

    switch (op->kind) {
    case ZB_OP_F: return b->act;
    case ZB_OP_B: return -(b->act - b->act_w);
    case ZB_OP_W: return -b->act_w;
    case ZB_OP_BW: return -b->act;
    default: return 0;
    }
}

void zb_memory_replay(const struct zb_schedule *s,
                      const struct zb_stage_bytes *st, double *peak)
{
    for (int r = 0; r < s->profile.pp; r++) {
        const struct zb_op_list *l = &s->ranks[r];
        double mem = 0;

        peak[r] = 0;
        for (int i = 0; i < l->n; i++) {
            struct zb_op part[2];
            int k;

            if (!zb_op_is_compute(l->ops[i].kind))
                continue;
            k = zb_op_split(&l->ops[i], part);
            for (int j = 0; j < k; j++) {
                mem += delta(st, &part[j]);
                if (mem > peak[r])
                    peak[r] = mem;
            }
        }
    }
}
