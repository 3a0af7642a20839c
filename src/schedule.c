/* schedule.c - schedule storage: op lists for a copy of the profile (the
 * facts about single ops live in op.c). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "strbuf.h"
#include "zbsched/schedule.h"
#include "zbsched/xalloc.h"

/* Names come from files and flags and end up in terminals, JSON and SVG:
 * control characters and stray bytes are kept visible as \xNN (strbuf.h),
 * and a name cut to fit is cut between UTF-8 sequences. */
static void set_name(char *dst, size_t cap, const char *name)
{
    struct strbuf sb;
    size_t n;

    zbi_sb_init(&sb);
    zbi_sb_add_visible(&sb, name);
    n = sb.len < cap - 1 ? sb.len : cap - 1;
    while (n < sb.len && n > 0 && ((unsigned char)sb.buf[n] & 0xc0) == 0x80)
        n--;
    memcpy(dst, sb.buf, n);
    dst[n] = '\0';
    zbi_sb_release(&sb);
}

int zb_schedule_init(struct zb_schedule *s, const char *name,
                     const struct zb_profile *prof)
{
    memset(s, 0, sizeof(*s));
    set_name(s->name, sizeof(s->name), name);
    zb_profile_copy(&s->profile, prof);
    s->ranks = zb_xcalloc((size_t)prof->pp, sizeof(*s->ranks));
    s->predicted.ranks = zb_xcalloc((size_t)prof->pp,
                                 sizeof(*s->predicted.ranks));
    return 0;
}

void zb_schedule_set_profile(struct zb_schedule *s,
                             const struct zb_profile *prof)
{
    zb_profile_release(&s->profile);
    zb_profile_copy(&s->profile, prof);
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

void zb_schedule_copy_order(struct zb_schedule *dst,
                            const struct zb_schedule *src)
{
    for (int r = 0; r < dst->profile.pp; r++) {
        dst->ranks[r].n = 0;
        for (int i = 0; i < src->ranks[r].n; i++)
            if (zb_op_is_compute(src->ranks[r].ops[i].kind))
                zb_op_list_push(&dst->ranks[r], &src->ranks[r].ops[i]);
    }
}
