/* png.c - an SVG picture as PNG through rsvg-convert (Debian's
 * librsvg2-bin), written atomically as every output is (io.h); render,
 * frontier and plan all call cli_png_write(). */
#include <errno.h>
#include <spawn.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include "cli.h"
#include "png.h"
#include "zbsched/io.h"

struct convert {
    int svg_fd;         /* the SVG, read from its start as stdin */
    const char *cmd;
};

/* rsvg-convert reading svg_fd into out (NULL: our stdout). A missing
 * program is told apart from a failing one: only the first has a fix
 * the user can make without reading rsvg's message. */
static int convert(const char *out, void *ctx, struct zb_error *err)
{
    extern char **environ;
    const struct convert *c = ctx;
    char *argv[] = { "rsvg-convert", "-f", "png", "-o", (char *)out, NULL };
    posix_spawn_file_actions_t fa;
    int rc, status = 0;
    pid_t pid;

    if (!out)
        argv[3] = NULL;
    if (lseek(c->svg_fd, 0, SEEK_SET) < 0)
        return zb_error_set(err, ZB_EIO, "%s: --png: cannot reread the "
                            "picture: %s", c->cmd, strerror(errno));
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, c->svg_fd, STDIN_FILENO);
    rc = posix_spawnp(&pid, "rsvg-convert", &fa, NULL, argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    while (rc == 0 && waitpid(pid, &status, 0) < 0)
        if (errno != EINTR)
            rc = errno;
    if (rc == ENOENT)
        return zb_error_set(err, ZB_EUNSUPPORTED, "%s: --png needs "
                            "rsvg-convert (Debian's librsvg2-bin; "
                            "tools/deps.sh installs it), which is not on "
                            "PATH", c->cmd);
    if (rc)
        return zb_error_set(err, ZB_EIO, "%s: --png: cannot run "
                            "rsvg-convert: %s", c->cmd, strerror(rc));
    if (!WIFEXITED(status) || WEXITSTATUS(status))
        return zb_error_set(err, ZB_EIO, "%s: --png: rsvg-convert failed "
                            "writing '%s'", c->cmd, out ? out : "stdout");
    return 0;
}

int cli_png_write(const char *cmd, const char *path, const char *svg)
{
    struct zb_error err = { 0 };
    struct convert c = { -1, cmd };
    /* An unnamed temporary file: nothing is left behind whatever stops
     * us, and rsvg-convert reads it as a file, so a converter that stops
     * early cannot break a pipe under us. */
    FILE *tmp = tmpfile();
    size_t len = strlen(svg);
    int rc;

    if (!strcmp(path, "-") && isatty(STDOUT_FILENO)) {
        cli_error("%s: --png -: a PNG is not written to a terminal", cmd);
        return CLI_USAGE;
    }
    if (!tmp || fwrite(svg, 1, len, tmp) != len || fflush(tmp) != 0) {
        cli_error("%s: --png: cannot make a temporary file: %s", cmd,
                  strerror(errno));
        if (tmp)
            fclose(tmp);
        return CLI_FAIL;
    }
    c.svg_fd = fileno(tmp);
    rc = !strcmp(path, "-") ? convert(NULL, &c, &err)
                            : zb_io_write_with(path, convert, &c, &err);
    fclose(tmp);
    return rc < 0 ? cli_fail(&err) : CLI_OK;
}
