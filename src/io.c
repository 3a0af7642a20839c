/* io.c - whole-file reads and atomic writes: a failed command never leaves
 * a half-written regular file behind (temporary file, then rename).
 *
 * Reads stop at ZB_IO_MAX_INPUT bytes, so /dev/zero or a runaway file is an
 * error instead of an exhausted memory. The temporary file is created with
 * O_EXCL under an unpredictable name (mkstemp) in the target's folder, so
 * the rename stays on one file system and no other user can plant a link
 * there first; SIGINT, SIGTERM and SIGHUP while it exists remove it. An
 * output path that is a symbolic link is written through to its target
 * (the link stays a link), and a file that exists keeps its mode. */
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "zbsched/io.h"
#include "zbsched/xalloc.h"

int zb_io_slurp(const char *path, char **out, struct zb_error *err)
{
    return zb_io_slurp_limit(path, ZB_IO_MAX_INPUT, out, err);
}

int zb_io_slurp_limit(const char *path, size_t limit, char **out,
                      struct zb_error *err)
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
        if (len > limit)
            break;
        if (cap - len - 1 == 0) {
            /* Room for one byte past the limit, to see it is passed. */
            cap = cap * 2 > limit + 2 ? limit + 2 : cap * 2;
            buf = zb_xrealloc(buf, cap);
        }
    }
    if (ferror(f) || len > limit) {
        int e = errno;
        bool big = !ferror(f);
        free(buf);
        if (f != stdin)
            fclose(f);
        if (big)
            return zb_error_set(err, ZB_EIO, "input is larger than %zu MiB "
                                "(the limit of this reader)", limit >> 20);
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

/* ---- Temporary files removed on a signal ---------------------------- */

/* The one temporary file that exists now (a command writes one output at
 * a time); the handler may only read it, hence a fixed array. */
static char pending[4096];
static volatile sig_atomic_t have_pending;
static const int cleanup_signals[] = { SIGINT, SIGTERM, SIGHUP };
static struct sigaction saved[3];

static void remove_pending(int sig)
{
    if (have_pending)
        unlink(pending);
    signal(sig, SIG_DFL);
    raise(sig);
}

static void guard_begin(void)
{
    struct sigaction sa;

    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = remove_pending;
    sigemptyset(&sa.sa_mask);
    for (int i = 0; i < 3; i++) {
        sigaction(cleanup_signals[i], NULL, &saved[i]);
        /* A signal the caller ignores (nohup) stays ignored. */
        if (saved[i].sa_handler != SIG_IGN)
            sigaction(cleanup_signals[i], &sa, NULL);
    }
}

static void guard_end(void)
{
    have_pending = 0;
    for (int i = 0; i < 3; i++)
        sigaction(cleanup_signals[i], &saved[i], NULL);
}

/* Data goes to the file in pieces of this size, so a signal's handler
 * (which the kernel runs only between system calls) acts within one
 * piece's write, not after the whole output. */
#define WRITE_PIECE (4 << 20)

/* Follow path's symbolic links (a chain, or one whose target does not
 * exist yet) to the file a write should replace, into out. A name that
 * is not a link is itself. */
static int resolve_links(const char *path, char out[PATH_MAX],
                         struct zb_error *err)
{
    char link[PATH_MAX];
    struct stat st;

    if (snprintf(out, PATH_MAX, "%s", path) >= PATH_MAX)
        return zb_error_set(err, ZB_EIO, "cannot write '%s': path too long",
                            path);
    for (int depth = 0; lstat(out, &st) == 0 && S_ISLNK(st.st_mode);
         depth++) {
        ssize_t n = readlink(out, link, sizeof(link) - 1);
        const char *slash = strrchr(out, '/');
        int dir_len = slash && link[0] != '/' ? (int)(slash - out + 1) : 0;

        if (depth == 40 || n < 0)
            return zb_error_set(err, ZB_EIO, "cannot write '%s': %s", path,
                                depth == 40 ? strerror(ELOOP)
                                            : strerror(errno));
        link[n] = '\0';
        if (n > 0 && link[0] == '/')
            dir_len = 0;
        char next[PATH_MAX];
        if (snprintf(next, sizeof(next), "%.*s%s", dir_len, out, link) >=
            (int)sizeof(next))
            return zb_error_set(err, ZB_EIO,
                                "cannot write '%s': path too long", path);
        memcpy(out, next, sizeof(next));
    }
    return 0;
}

/* "DIR/.NAME.XXXXXX" beside path, created and opened: returns the fd. */
static int temp_create(const char *path, struct zb_error *err)
{
    struct stat old;
    const char *slash = strrchr(path, '/');
    int dir_len = slash ? (int)(slash - path + 1) : 0;
    int fd;

    if (snprintf(pending, sizeof(pending), "%.*s.%s.XXXXXX", dir_len, path,
                 path + dir_len) >= (int)sizeof(pending))
        return zb_error_set(err, ZB_EIO, "cannot write '%s': path too long",
                            path);
    guard_begin();
    if ((fd = mkstemp(pending)) < 0) {
        int e = errno;
        guard_end();
        return zb_error_set(err, ZB_EIO, "cannot create '%s': %s", path,
                            strerror(e));
    }
    have_pending = 1;       /* only now does the name hold our file */
    /* mkstemp makes it 0600; a new output file gets the usual mode, one
     * that is replaced keeps its own (a private file stays private). */
    if (stat(path, &old) == 0) {
        fchmod(fd, old.st_mode & 07777);
    } else {
        mode_t mask = umask(0);
        umask(mask);
        fchmod(fd, 0666 & ~mask);
    }
    return fd;
}

/* Rename the temporary file over path (ok) or remove it; ends the guard. */
static int temp_finish(const char *path, bool ok, int e, struct zb_error *err)
{
    if (ok && rename(pending, path) != 0) {
        ok = false;
        e = errno;
    }
    if (!ok)
        unlink(pending);
    guard_end();
    return ok ? 0 : zb_error_set(err, ZB_EIO, "cannot write '%s': %s", path,
                                 strerror(e));
}

/* ---- Writers -------------------------------------------------------- */

static int write_stream(FILE *f, const char *name, const char *data,
                        size_t len, struct zb_error *err)
{
    if (fwrite(data, 1, len, f) != len || fflush(f) != 0)
        return zb_error_set(err, ZB_EIO, "cannot write to %s: %s", name,
                            strerror(errno));
    return 0;
}

/* A device or pipe (/dev/null, /dev/stdout, a FIFO) is written in place:
 * renaming a temporary file over it would replace it. */
static bool in_place(const char *path)
{
    struct stat st;

    return stat(path, &st) == 0 && !S_ISREG(st.st_mode);
}

/* All of data to fd, WRITE_PIECE at a time; false with errno set. */
static bool write_pieces(int fd, const char *data, size_t len)
{
    while (len > 0) {
        ssize_t n = write(fd, data, len < WRITE_PIECE ? len : WRITE_PIECE);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return false;
        data += n;
        len -= (size_t)n;
    }
    return true;
}

int zb_io_write_file(const char *given, const char *data, size_t len,
                     struct zb_error *err)
{
    char path[PATH_MAX];
    FILE *f;
    int fd, rc, e = 0;
    bool ok;

    if (!strcmp(given, "-"))
        return write_stream(stdout, "stdout", data, len, err);
    if ((rc = resolve_links(given, path, err)) < 0)
        return rc;
    if (in_place(path)) {
        if (!(f = fopen(path, "wb")))
            return zb_error_set(err, ZB_EIO, "cannot open '%s': %s", path,
                                strerror(errno));
        rc = write_stream(f, path, data, len, err);
        return fclose(f) != 0 && rc == 0
            ? zb_error_set(err, ZB_EIO, "cannot write '%s': %s", path,
                           strerror(errno))
            : rc;
    }
    if ((fd = temp_create(path, err)) < 0)
        return fd;
    ok = write_pieces(fd, data, len);
    if (!ok)
        e = errno ? errno : EIO;
    if (close(fd) != 0 && ok) {
        ok = false;
        e = errno;
    }
    return temp_finish(path, ok, e, err);
}

/* A writer's error names the file it was handed, the temporary one: say
 * the target instead, which is the name the user gave. */
static void name_target(struct zb_error *err, const char *target)
{
    char *at = err ? strstr(err->msg, pending) : NULL;
    char msg[sizeof(err->msg)];

    if (!at)
        return;
    snprintf(msg, sizeof(msg), "%.*s%s%s", (int)(at - err->msg), err->msg,
             target, at + strlen(pending));
    memcpy(err->msg, msg, sizeof(msg));
}

int zb_io_write_with(const char *given,
                     int (*write)(const char *tmp, void *ctx,
                                  struct zb_error *err),
                     void *ctx, struct zb_error *err)
{
    char path[PATH_MAX];
    int fd, rc;

    if ((rc = resolve_links(given, path, err)) < 0)
        return rc;
    if (in_place(path))
        return write(path, ctx, err);
    if ((fd = temp_create(path, err)) < 0)
        return fd;
    close(fd);
    rc = write(pending, ctx, err);
    if (rc < 0) {
        unlink(pending);
        name_target(err, given);
        guard_end();
        return rc;
    }
    return temp_finish(path, true, 0, err);
}
