/* strbuf.c - growable string (see strbuf.h). */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include "strbuf.h"
#include "zbsched/xalloc.h"

void sb_init(struct strbuf *sb)
{
    sb->cap = 256;
    sb->len = 0;
    sb->buf = zb_xmalloc(sb->cap);
    sb->buf[0] = '\0';
}

void sb_addf(struct strbuf *sb, const char *fmt, ...)
{
    va_list ap;
    int n;

    va_start(ap, fmt);
    n = vsnprintf(sb->buf + sb->len, sb->cap - sb->len, fmt, ap);
    va_end(ap);
    if ((size_t)n >= sb->cap - sb->len) {
        while (sb->cap - sb->len <= (size_t)n)
            sb->cap *= 2;
        sb->buf = zb_xrealloc(sb->buf, sb->cap);
        va_start(ap, fmt);
        vsnprintf(sb->buf + sb->len, sb->cap - sb->len, fmt, ap);
        va_end(ap);
    }
    sb->len += (size_t)n;
}

void sb_add_num(struct strbuf *sb, double v)
{
    char tmp[32];

    if (!isfinite(v)) {         /* JSON has no infinity or NaN */
        sb_addf(sb, "null");
        return;
    }
    if (v == 0)
        v = 0;      /* no "-0" */
    snprintf(tmp, sizeof(tmp), "%.15g", v);
    if (strtod(tmp, NULL) != v)
        snprintf(tmp, sizeof(tmp), "%.17g", v);
    sb_addf(sb, "%s", tmp);
}

void sb_add_str(struct strbuf *sb, const char *s)
{
    sb_addf(sb, "\"");
    for (; *s; s++) {
        unsigned char ch = (unsigned char)*s;
        if (ch == '"' || ch == '\\')
            sb_addf(sb, "\\%c", ch);
        else if (ch < 0x20)
            sb_addf(sb, "\\u%04x", ch);
        else
            sb_addf(sb, "%c", ch);
    }
    sb_addf(sb, "\"");
}

char *sb_detach(struct strbuf *sb)
{
    char *b = sb->buf;
    sb->buf = NULL;
    sb->len = sb->cap = 0;
    return b;
}

void sb_release(struct strbuf *sb)
{
    free(sb->buf);
    sb->buf = NULL;
}
