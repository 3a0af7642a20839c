/* memo.c - one remembered order per construction (see memo.h). The entry
 * owns a copy of its profile, so the key is the whole model: any change
 * of a time, a limit or the shape misses. Kept until the process ends,
 * like any cache of one: at most two orders of the largest profile. */
#include <pthread.h>
#include "build/memo.h"
#include "zbsched/generator.h"

static struct entry {
    bool full;
    struct zb_schedule order;   /* its profile is the key */
} entries[MEMO_KINDS];

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

bool zbi_memo_fetch(enum memo_kind kind, const struct zb_profile *p,
                struct zb_schedule *s)
{
    struct entry *e = &entries[kind];
    bool hit;

    pthread_mutex_lock(&lock);
    hit = e->full && zb_profile_equal(&e->order.profile, p);
    if (hit)
        zb_schedule_copy_order(s, &e->order);
    pthread_mutex_unlock(&lock);
    return hit;
}

void zbi_memo_store(enum memo_kind kind, const struct zb_profile *p,
                const struct zb_schedule *s)
{
    struct entry *e = &entries[kind];

    pthread_mutex_lock(&lock);
    if (e->full)
        zb_schedule_release(&e->order);
    e->full = zb_schedule_init(&e->order, s->name, p) == 0;
    if (e->full)
        zb_schedule_copy_order(&e->order, s);
    pthread_mutex_unlock(&lock);
}

void zb_generator_forget(void)
{
    pthread_mutex_lock(&lock);
    for (int k = 0; k < MEMO_KINDS; k++) {
        if (entries[k].full)
            zb_schedule_release(&entries[k].order);
        entries[k].full = false;
    }
    pthread_mutex_unlock(&lock);
}
