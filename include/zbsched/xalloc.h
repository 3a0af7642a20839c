/* xalloc.h - allocation that cannot fail: out of memory is not recoverable
 * in a command-line tool, so these print one line and abort (git, tmux).
 * Module prefix zb_x (zb_xmalloc is xmalloc). */
#ifndef ZBSCHED_XALLOC_H
#define ZBSCHED_XALLOC_H

#include <stddef.h>

void *zb_xmalloc(size_t size);
void *zb_xcalloc(size_t count, size_t size);
void *zb_xrealloc(void *ptr, size_t size);
char *zb_xstrdup(const char *s);

/* Grow *items (of elem_size) so that it holds at least need elements. */
void zb_xgrow(void **items, int *cap, int need, size_t elem_size);

#endif
