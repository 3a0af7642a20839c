/* suggest.h - "did you mean": the known name closest to a mistyped one
 * (flags, commands, schedule names, profile keys), defined once. */
#ifndef ZBSCHED_SUGGEST_H
#define ZBSCHED_SUGGEST_H

#include <stddef.h>

/* Edit distance between a and b, ignoring case, where swapping two
 * neighbours counts as one edit ("mem-limt" and "mem-limit": 1). */
int zb_suggest_distance(const char *a, const char *b);

/* The name among names[0..n-1] (NULL entries skipped) closest to word,
 * or NULL when none is close: at most 1 edit for a name of up to 4
 * characters, 2 up to 8, 3 beyond (a far guess would mislead more than
 * no guess). */
const char *zb_suggest(const char *word, const char *const *names, size_t n);

#endif
