/* strbuf.h - a growable string for building output text (internal to the
 * library), and the one spelling of JSON numbers and strings. */
#ifndef ZBSCHED_STRBUF_H
#define ZBSCHED_STRBUF_H

#include <stddef.h>

struct strbuf {
    char *buf;      /* NUL-terminated, owned */
    size_t len, cap;
};

void zbi_sb_init(struct strbuf *sb);
void zbi_sb_addf(struct strbuf *sb, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* Append s as it is / the decimal of v: what zbi_sb_addf("%s") and "%d"
 * would, without a format to read (a schedule's JSON has one per op). */
void zbi_sb_add(struct strbuf *sb, const char *s);
void zbi_sb_add_int(struct strbuf *sb, int v);
/* The JSON spelling of values (json.h): the shortest "%.15g"/"%.17g" text
 * that reads back as v, null for NaN and infinity, which JSON cannot
 * hold; s quoted, with ", \\, control characters and bytes that are not
 * UTF-8 escaped (\u00XX). */
void zbi_sb_add_num(struct strbuf *sb, double v);
void zbi_sb_add_str(struct strbuf *sb, const char *s);
/* s for people (terminals, SVG text): control characters and bytes that
 * are not UTF-8 written as \xNN. */
void zbi_sb_add_visible(struct strbuf *sb, const char *s);
/* s as XML text or attribute value (the SVG pictures): visible as above,
 * then & < > " escaped. */
void zbi_sb_add_xml(struct strbuf *sb, const char *s);
/* Hand over the buffer (caller frees); sb is empty afterwards. */
char *zbi_sb_detach(struct strbuf *sb);
void zbi_sb_release(struct strbuf *sb);

#endif
