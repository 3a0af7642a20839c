/* schedule.c - schedule storage and the small facts about ops (names,
 * durations, memory deltas) that every other module shares. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "zbsched/schedule.h"
#include "zbsched/xalloc.h"

static const char *const kind_names[ZB_OP_KIND_COUNT] = {
    [ZB_OP_F] = "F",           [ZB_OP_B] = "B",
    [ZB_OP_W] = "W",           [ZB_OP_BW] = "BW",
    [ZB_OP_SEND_F] = "SEND_F", [ZB_OP_RECV_F] = "RECV_F",
    [ZB_OP_SEND_B] = "SEND_B", [ZB_OP_RECV_B] = "RECV_B",
    [ZB_OP_STEP] = "STEP",
};

int zb_schedule_init(struct zb_schedule *s, const char *name,
                     const struct zb_profile *prof)
{
    memset(s, 0, sizeof(*s));
    snprintf(s->name, sizeof(s->name), "%s", name);
    zb_profile_copy(&s->profile, prof);
    s->ranks = xcalloc((size_t)prof->pp, sizeof(*s->ranks));
    s->predicted.ranks = xcalloc((size_t)prof->pp,
                                 sizeof(*s->predicted.ranks));
    return 0;
}

void zb_schedule_release(struct zb_schedule *s)
{
    if (!s)
        return;
    if (s->ranks)
        for (int r = 0; r < s->profile.pp; r++)
            free(s->ranks[r].ops);
    free(s->ranks);
    free(s->predicted.ranks);
    zb_profile_release(&s->profile);
    s->ranks = NULL;
    s->predicted.ranks = NULL;
}

void zb_op_list_push(struct zb_op_list *l, const struct zb_op *op)
{
    xgrow((void **)&l->ops, &l->cap, l->n + 1, sizeof(*l->ops));
    l->ops[l->n++] = *op;
}

void zb_schedule_push(struct zb_schedule *s, int rank, enum zb_op_kind kind,
                      int stage, int mb)
{
    struct zb_op op = { .kind = kind, .stage = stage, .mb = mb, .peer = -1,
                        .seq = -1 };
    zb_op_list_push(&s->ranks[rank], &op);
}

void zb_schedule_strip_comm(struct zb_schedule *s)
{
    for (int r = 0; r < s->profile.pp; r++) {
        struct zb_op_list *l = &s->ranks[r];
        int k = 0;
        for (int i = 0; i < l->n; i++)
            if (zb_op_is_compute(l->ops[i].kind))
                l->ops[k++] = l->ops[i];
        l->n = k;
    }
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
    return k == ZB_OP_F || k == ZB_OP_B || k == ZB_OP_W || k == ZB_OP_BW;
}

bool zb_op_is_comm(enum zb_op_kind k)
{
    return k >= ZB_OP_SEND_F && k <= ZB_OP_RECV_B;
}

double zb_op_duration(const struct zb_profile *p, const struct zb_op *op)
{
    const struct zb_stage_times *t = &p->stage[op->stage];

    switch (op->kind) {
    case ZB_OP_F: return t->f;
    case ZB_OP_B: return t->b;
    case ZB_OP_W: return t->w;
    case ZB_OP_BW: return t->b + t->w;
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
    default: return 0;
    }
}

const char *zb_op_describe(const struct zb_op *op, char *buf, int size)
{
    if (op->kind == ZB_OP_STEP)
        snprintf(buf, (size_t)size, "STEP");
    else if (zb_op_is_comm(op->kind))
        snprintf(buf, (size_t)size, "%s stage %d mb %d %s %d",
                 zb_op_kind_name(op->kind), op->stage, op->mb,
                 op->kind == ZB_OP_SEND_F || op->kind == ZB_OP_SEND_B
                     ? "to" : "from", op->peer);
    else
        snprintf(buf, (size_t)size, "%s stage %d mb %d",
                 zb_op_kind_name(op->kind), op->stage, op->mb);
    return buf;
}
