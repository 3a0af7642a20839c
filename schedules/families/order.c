/* order.c - transforms on compute orders shared by several families. */
#include <stdlib.h>
#include <string.h>
#include "families/families.h"
#include "zbsched/xalloc.h"

void zbi_split_deferred(struct zb_schedule *s, int cap)
{
    for (int r = 0; r < s->profile.pp; r++) {
        struct zb_op_list old = s->ranks[r];
        struct zb_op_list *l = &s->ranks[r];
        struct zb_op *fifo = zb_xmalloc((size_t)(old.n + 1) * sizeof(*fifo));
        int head = 0, tail = 0, in_flight = 0, hold = 0, last_f = -1;

        for (int i = 0; i < old.n; i++)
            if (old.ops[i].kind == ZB_OP_F)
                last_f = i;
        memset(l, 0, sizeof(*l));
        for (int i = 0; i < old.n; i++) {
            struct zb_op op = old.ops[i];
            if (op.kind == ZB_OP_F) {
                while (in_flight + 1 > cap && head < tail) {
                    zb_op_list_push(l, &fifo[head++]);
                    in_flight--;
                }
                zb_op_list_push(l, &op);
                in_flight++;
                hold = tail - head;
                continue;
            }
            if (op.kind == ZB_OP_BW) {
                op.kind = ZB_OP_B;
                zb_op_list_push(l, &op);
                op.kind = ZB_OP_W;
                fifo[tail++] = op;
            } else {
                zb_op_list_push(l, &op);
                if (op.kind == ZB_OP_W)
                    in_flight--;
            }
            while (i > last_f && tail - head > hold) {
                zb_op_list_push(l, &fifo[head++]);
                in_flight--;
            }
        }
        while (head < tail)
            zb_op_list_push(l, &fifo[head++]);
        free(fifo);
        free(old.ops);
    }
}

int zbi_max_in_flight(const struct zb_schedule *s)
{
    int best = 0;

    for (int r = 0; r < s->profile.pp; r++) {
        int n = 0;
        for (int i = 0; i < s->ranks[r].n; i++) {
            enum zb_op_kind k = s->ranks[r].ops[i].kind;
            n += k == ZB_OP_F ? 1 : k == ZB_OP_W || k == ZB_OP_BW ? -1 : 0;
            if (n > best)
                best = n;
        }
    }
    return best;
}

void zbi_unit_profile(const struct zb_profile *p, struct zb_profile *out,
                      double limit)
{
    zb_profile_copy(out, p);
    for (int s = 0; s < zb_profile_stages(p); s++)
        out->stage[s] = (struct zb_stage_times){ 1, 1, 1 };
    out->comm = 0;
    out->m_b = out->m_w = 1;
    for (int r = 0; r < p->pp; r++)
        out->mem_limit[r] = limit;
}
