/* op.c - op names, descriptions and op list storage (op.h; the per-op
 * facts that hot loops ask, durations and memory deltas, are inline
 * there). */
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

const char *zb_op_describe(const struct zb_op *op, char *buf, int size)
{
    if (op->kind == ZB_OP_STEP)
        snprintf(buf, (size_t)size, "STEP");
    else if (zb_op_is_collective(op->kind) && op->unit > 0 && op->mb >= 0)
        snprintf(buf, (size_t)size, "%s stage %d mb %d unit %d",
                 zb_op_kind_name(op->kind), op->stage, op->mb, op->unit);
    else if (zb_op_is_collective(op->kind) && op->unit > 0)
        snprintf(buf, (size_t)size, "%s stage %d unit %d",
                 zb_op_kind_name(op->kind), op->stage, op->unit);
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
