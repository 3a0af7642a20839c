/* xalloc.c - allocation wrappers that abort on exhaustion (see xalloc.h). */
#define _GNU_SOURCE     /* program_invocation_short_name */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "zbsched/xalloc.h"

/* The message names the program that ran out (zbsched, zbexec, a test),
 * not the library. */
static void die_oom(size_t size)
{
    fprintf(stderr, "%s: out of memory allocating %zu bytes\n",
            program_invocation_short_name, size);
    abort();
}

void *zb_xmalloc(size_t size)
{
    void *p = malloc(size ? size : 1);
    if (!p)
        die_oom(size);
    return p;
}

void *zb_xcalloc(size_t count, size_t size)
{
    void *p = calloc(count ? count : 1, size ? size : 1);
    if (!p)
        die_oom(count * size);
    return p;
}

void *zb_xrealloc(void *ptr, size_t size)
{
    void *p = realloc(ptr, size ? size : 1);
    if (!p)
        die_oom(size);
    return p;
}

char *zb_xstrdup(const char *s)
{
    size_t n = strlen(s) + 1;
    return memcpy(zb_xmalloc(n), s, n);
}

void zb_xgrow(void **items, int *cap, int need, size_t elem_size)
{
    int c = *cap;

    if (need <= c)
        return;
    while (c < need)
        c = c ? c * 2 : 16;
    *items = zb_xrealloc(*items, (size_t)c * elem_size);
    *cap = c;
}
