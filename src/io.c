/* io.c - whole-file reads and atomic writes: a failed command never leaves
 * a half-written output behind. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "zbsched/io.h"
#include "zbsched/xalloc.h"

int zb_io_slurp(const char *path, char **out, struct zb_error *err)
{
    FILE *f = strcmp(path, "-") ? fopen(path, "rb") : stdin;
    size_t len = 0, cap = 1 << 16, n;
    char *buf;

    *out = NULL;
    if (!f)
        return zb_error_set(err, ZB_EIO, "cannot open '%s': %s", path,
                            strerror(errno));
    buf = xmalloc(cap);
    while ((n = fread(buf + len, 1, cap - len - 1, f)) > 0) {
        len += n;
        if (cap - len - 1 == 0)
            buf = xrealloc(buf, cap *= 2);
    }
    if (ferror(f)) {
        int e = errno;
        free(buf);
        if (f != stdin)
            fclose(f);
        return zb_error_set(err, ZB_EIO, "cannot read '%s': %s", path,
                            strerror(e));
    }
    if (f != stdin)
        fclose(f);
    buf[len] = '\0';
    if (strlen(buf) != len) {
        free(buf);
        return zb_error_set(err, ZB_EPARSE, "'%s' contains a NUL byte", path);
    }
    *out = buf;
    return 0;
}

int zb_io_write_file(const char *path, const char *data, size_t len,
                     struct zb_error *err)
{
    char *tmp;
    FILE *f;
    int ok;

    if (!strcmp(path, "-")) {
        if (fwrite(data, 1, len, stdout) != len || fflush(stdout) != 0)
            return zb_error_set(err, ZB_EIO, "cannot write to stdout: %s",
                                strerror(errno));
        return 0;
    }
    tmp = xmalloc(strlen(path) + 16);
    sprintf(tmp, "%s.tmp%ld", path, (long)getpid());
    f = fopen(tmp, "wb");
    if (!f) {
        int e = errno;
        free(tmp);
        return zb_error_set(err, ZB_EIO, "cannot create '%s': %s", path,
                            strerror(e));
    }
    ok = fwrite(data, 1, len, f) == len;
    ok = (fclose(f) == 0) && ok;
    if (!ok || rename(tmp, path) != 0) {
        int e = errno;
        remove(tmp);
        free(tmp);
        return zb_error_set(err, ZB_EIO, "cannot write '%s': %s", path,
                            strerror(e));
    }
    free(tmp);
    return 0;
}
