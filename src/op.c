/* op.c - the small facts about ops (names, durations, memory deltas) that
 * every other module shares, and op list storage. */
#include <stdio.h>
#include <string.h>
#include "zbsched/op.h"
#include "zbsched/xalloc.h"

static const char *const kind_names[ZB_OP_KIND_COUNT] = {
    [ZB_OP_F] = "F",           [ZB_OP_B] = "B",
    [ZB_OP_W] = "W",           [ZB_OP_BW] = "BW",
    [ZB_OP_FB] = "FB",
    [ZB_OP_SEND_F] = "SEND_F", [ZB_OP_RECV_F] = "RECV_F",
    [ZB_OP_SEND_B] = "SEND_B", [ZB_OP_RECV_B] = "RECV_B",
    [ZB_OP_STEP] = "STEP",         [ZB_OP_REDUCE_GRAD] = "REDUCE_GRAD",
    [ZB_OP_UNSHARD] = "UNSHARD",   [ZB_OP_RESHARD] = "RESHARD",
};

void zb_op_list_push(struct zb_op_list *l, const struct zb_op *op)
{
    zb_xgrow((void **)&l->ops, &l->cap, l->n + 1, sizeof(*l->ops));
    l->ops[l->n++] = *op;
}

const char *zb_op_kind_name(enum zb_op_kind k)
{
    return k >= 0 && k < ZB_OP_KIND_COUNT ? kind_names[k] : "?";
}

int zb_op_kind_parse(const char *s, enum zb_op_kind *out)
{
    for (int k = 0; k < ZB_OP_KIND_COUNT; k++)
        if (!strcmp(s, kind_names[k])) {
            *out = (enum zb_op_kind)k;
            return 0;
        }
    return -1;
}

bool zb_op_is_compute(enum zb_op_kind k)
{
    return k == ZB_OP_F || k == ZB_OP_B || k == ZB_OP_W || k == ZB_OP_BW ||
           k == ZB_OP_FB;
}

int zb_op_split(const struct zb_op *op, struct zb_op out[2])
{
    out[0] = *op;
    if (op->kind != ZB_OP_FB)
        return 1;
    out[0].kind = ZB_OP_F;
    out[1] = *op;
    out[1].kind = ZB_OP_B;
    out[1].stage = op->b_stage;
    out[1].mb = op->b_mb;
    return 2;
}

bool zb_op_is_comm(enum zb_op_kind k)
{
    return k >= ZB_OP_SEND_F && k <= ZB_OP_RECV_B;
}

bool zb_op_is_collective(enum zb_op_kind k)
{
    return k >= ZB_OP_REDUCE_GRAD && k <= ZB_OP_RESHARD;
}

double zb_op_duration(const struct zb_profile *p, const struct zb_op *op)
{
    const struct zb_stage_times *t = &p->stage[op->stage];

    switch (op->kind) {
    case ZB_OP_F: return t->f;
    case ZB_OP_B: return t->b;
    case ZB_OP_W: return t->w;
    case ZB_OP_BW: return t->b + t->w;
    case ZB_OP_FB:
        return p->fb > 0 ? p->fb : t->f + p->stage[op->b_stage].b;
    default: return 0;
    }
}

double zb_op_memory_delta(const struct zb_profile *p, enum zb_op_kind k)
{
    switch (k) {
    case ZB_OP_F: return p->m_b;
    case ZB_OP_B: return -(p->m_b - p->m_w);
    case ZB_OP_W: return -p->m_w;
    case ZB_OP_BW: return -p->m_b;
    case ZB_OP_FB: return p->m_w;
    default: return 0;
    }
}

const char *zb_op_describe(const struct zb_op *op, char *buf, int size)
{
    if (op->kind == ZB_OP_STEP)
        snprintf(buf, (size_t)size, "STEP");
    else if (zb_op_is_collective(op->kind) && op->mb >= 0)
        snprintf(buf, (size_t)size, "%s stage %d mb %d",
                 zb_op_kind_name(op->kind), op->stage, op->mb);
    else if (zb_op_is_collective(op->kind))
        snprintf(buf, (size_t)size, "%s stage %d",
                 zb_op_kind_name(op->kind), op->stage);
    else if (zb_op_is_comm(op->kind))
        snprintf(buf, (size_t)size, "%s stage %d mb %d %s %d",
                 zb_op_kind_name(op->kind), op->stage, op->mb,
                 op->kind == ZB_OP_SEND_F || op->kind == ZB_OP_SEND_B
                     ? "to" : "from", op->peer);
    else if (op->kind == ZB_OP_FB)
        snprintf(buf, (size_t)size, "FB stage %d mb %d + B stage %d mb %d",
                 op->stage, op->mb, op->b_stage, op->b_mb);
    else
        snprintf(buf, (size_t)size, "%s stage %d mb %d",
                 zb_op_kind_name(op->kind), op->stage, op->mb);
    return buf;
}
