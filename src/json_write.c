/* json_write.c - JSON values for programs that write to a FILE (zbsched's
 * reports, zbexec's report and trace): the same spelling as the library's
 * own writers, which share strbuf.c's zbi_sb_add_str() and
 * zbi_sb_add_num(). */
#include <stdlib.h>
#include "strbuf.h"
#include "zbsched/json.h"

void zb_json_fput_str(FILE *f, const char *s)
{
    struct strbuf sb;

    zbi_sb_init(&sb);
    zbi_sb_add_str(&sb, s);
    fputs(sb.buf, f);
    zbi_sb_release(&sb);
}

void zb_json_fput_num(FILE *f, double v)
{
    struct strbuf sb;

    zbi_sb_init(&sb);
    zbi_sb_add_num(&sb, v);
    fputs(sb.buf, f);
    zbi_sb_release(&sb);
}
