/* strbuf.h - a growable string for building output text. */
#ifndef ZBSCHED_STRBUF_H
#define ZBSCHED_STRBUF_H

#include <stddef.h>

struct strbuf {
    char *buf;      /* NUL-terminated, owned */
    size_t len, cap;
};

void sb_init(struct strbuf *sb);
void sb_addf(struct strbuf *sb, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* Shortest "%.15g"/"%.17g" text that reads back as v; null for NaN and
 * infinity, which JSON cannot hold. */
void sb_add_num(struct strbuf *sb, double v);
/* Hand over the buffer (caller frees); sb is empty afterwards. */
char *sb_detach(struct strbuf *sb);
void sb_release(struct strbuf *sb);

#endif
