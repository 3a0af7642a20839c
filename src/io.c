/* io.c - whole-file reads and atomic writes: a failed command never leaves
 * a half-written regular file behind (temporary file, then rename). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
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
    buf = zb_xmalloc(cap);
    while ((n = fread(buf + len, 1, cap - len - 1, f)) > 0) {
        len += n;
        if (cap - len - 1 == 0)
            buf = zb_xrealloc(buf, cap *= 2);
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

static int write_stream(FILE *f, const char *name, const char *data,
                        size_t len, struct zb_error *err)
{
    if (fwrite(data, 1, len, f) != len || fflush(f) != 0)
        return zb_error_set(err, ZB_EIO, "cannot write to %s: %s", name,
                            strerror(errno));
    return 0;
}

int zb_io_write_file(const char *path, const char *data, size_t len,
                     struct zb_error *err)
{
    char *tmp;
    FILE *f;
    int ok;

    struct stat st;

    if (!strcmp(path, "-"))
        return write_stream(stdout, "stdout", data, len, err);
    /* A device or pipe (/dev/null, /dev/stdout, a FIFO) is written in
     * place: renaming a temporary file over it would replace it. */
    if (stat(path, &st) == 0 && !S_ISREG(st.st_mode)) {
        f = fopen(path, "wb");
        if (!f)
            return zb_error_set(err, ZB_EIO, "cannot open '%s': %s", path,
                                strerror(errno));
        int rc = write_stream(f, path, data, len, err);
        return fclose(f) != 0 && rc == 0
            ? zb_error_set(err, ZB_EIO, "cannot write '%s': %s", path,
                           strerror(errno))
            : rc;
    }
    tmp = zb_xmalloc(strlen(path) + 16);
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
