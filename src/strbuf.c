/* strbuf.c - growable string (see strbuf.h). */
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "strbuf.h"
#include "zbsched/xalloc.h"

void zbi_sb_init(struct strbuf *sb)
{
    sb->cap = 256;
    sb->len = 0;
    sb->buf = zb_xmalloc(sb->cap);
    sb->buf[0] = '\0';
}

/* Room for n more bytes and the NUL. */
static void reserve(struct strbuf *sb, size_t n)
{
    if (sb->cap - sb->len > n)
        return;
    while (sb->cap - sb->len <= n)
        sb->cap *= 2;
    sb->buf = zb_xrealloc(sb->buf, sb->cap);
}

void zbi_sb_addf(struct strbuf *sb, const char *fmt, ...)
{
    va_list ap;
    int n;

    va_start(ap, fmt);
    n = vsnprintf(sb->buf + sb->len, sb->cap - sb->len, fmt, ap);
    va_end(ap);
    if ((size_t)n >= sb->cap - sb->len) {
        reserve(sb, (size_t)n);
        va_start(ap, fmt);
        vsnprintf(sb->buf + sb->len, sb->cap - sb->len, fmt, ap);
        va_end(ap);
    }
    sb->len += (size_t)n;
}

void zbi_sb_add(struct strbuf *sb, const char *s)
{
    size_t n = strlen(s);

    reserve(sb, n);
    memcpy(sb->buf + sb->len, s, n + 1);
    sb->len += n;
}

/* v in decimal, as printf's %lld writes it. */
static void add_integer(struct strbuf *sb, long long v)
{
    char tmp[24], *d = tmp + sizeof(tmp);
    unsigned long long u = v < 0 ? 0ull - (unsigned long long)v
                                 : (unsigned long long)v;

    *--d = '\0';
    do
        *--d = (char)('0' + u % 10);
    while ((u /= 10) != 0);
    if (v < 0)
        *--d = '-';
    zbi_sb_add(sb, d);
}

void zbi_sb_add_int(struct strbuf *sb, int v)
{
    add_integer(sb, v);
}

void zbi_sb_add_num(struct strbuf *sb, double v)
{
    char tmp[32];

    if (!isfinite(v)) {         /* JSON has no infinity or NaN */
        zbi_sb_addf(sb, "null");
        return;
    }
    if (v == 0)
        v = 0;      /* no "-0" */
    /* Whole numbers below 1e15 (every time of a profile in whole units,
     * as the paper's are) come out as %.15g writes them, without the
     * formatting and round-trip check below: a schedule at p 64, m 1024
     * writes 1.6 million times. */
    if (fabs(v) < 1e15 && v == (double)(long long)v) {
        add_integer(sb, (long long)v);
        return;
    }
    snprintf(tmp, sizeof(tmp), "%.15g", v);
    if (strtod(tmp, NULL) != v)
        snprintf(tmp, sizeof(tmp), "%.17g", v);
    zbi_sb_add(sb, tmp);
}

/* Length of the well-formed UTF-8 sequence at s (1 to 4), 0 if the bytes
 * there are not one (RFC 3629: no overlong forms, nothing past U+10FFFF,
 * no surrogates). */
static int utf8_len(const unsigned char *s)
{
    int n = s[0] < 0x80 ? 1 : s[0] >= 0xc2 && s[0] <= 0xdf ? 2
          : s[0] >= 0xe0 && s[0] <= 0xef ? 3
          : s[0] >= 0xf0 && s[0] <= 0xf4 ? 4 : 0;

    for (int i = 1; i < n; i++)
        if ((s[i] & 0xc0) != 0x80)
            return 0;
    if ((s[0] == 0xe0 && s[1] < 0xa0) || (s[0] == 0xed && s[1] > 0x9f) ||
        (s[0] == 0xf0 && s[1] < 0x90) || (s[0] == 0xf4 && s[1] > 0x8f))
        return 0;
    return n;
}

/* A byte that is a control character or not UTF-8: each writer below
 * spells it escaped, so no name reaches a terminal, JSON or SVG raw. */
static bool escaped_byte(const unsigned char *s, int *len)
{
    *len = utf8_len(s);
    if (*len == 0 || s[0] < 0x20 || s[0] == 0x7f) {
        *len = 1;
        return true;
    }
    return false;
}

void zbi_sb_add_str(struct strbuf *sb, const char *s)
{
    const unsigned char *u = (const unsigned char *)s;
    int len;

    zbi_sb_addf(sb, "\"");
    for (; *u; u += len) {
        bool esc = escaped_byte(u, &len);
        if (*u == '"' || *u == '\\')
            zbi_sb_addf(sb, "\\%c", *u);
        else if (esc)
            zbi_sb_addf(sb, "\\u%04x", *u);   /* a stray byte as Latin-1 */
        else
            zbi_sb_addf(sb, "%.*s", len, (const char *)u);
    }
    zbi_sb_addf(sb, "\"");
}

void zbi_sb_add_visible(struct strbuf *sb, const char *s)
{
    const unsigned char *u = (const unsigned char *)s;
    int len;

    for (; *u; u += len)
        if (escaped_byte(u, &len))
            zbi_sb_addf(sb, "\\x%02x", *u);
        else
            zbi_sb_addf(sb, "%.*s", len, (const char *)u);
}

void zbi_sb_add_xml(struct strbuf *sb, const char *s)
{
    struct strbuf vis;

    zbi_sb_init(&vis);
    zbi_sb_add_visible(&vis, s);
    for (const char *c = vis.buf; *c; c++)
        switch (*c) {
        case '&': zbi_sb_add(sb, "&amp;"); break;
        case '<': zbi_sb_add(sb, "&lt;"); break;
        case '>': zbi_sb_add(sb, "&gt;"); break;
        case '"': zbi_sb_add(sb, "&quot;"); break;
        default: zbi_sb_addf(sb, "%c", *c);
        }
    zbi_sb_release(&vis);
}

char *zbi_sb_detach(struct strbuf *sb)
{
    char *b = sb->buf;
    sb->buf = NULL;
    sb->len = sb->cap = 0;
    return b;
}

void zbi_sb_release(struct strbuf *sb)
{
    free(sb->buf);
    sb->buf = NULL;
}
