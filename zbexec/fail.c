/* fail.c - how zbexec reports failure: one line "zbexec: rank R: ..." on
 * stderr, then either an agreed exit (every rank saw the problem) or an
 * abort of every rank (one rank failed while others may wait on it). */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include "exec.h"

static void vsay(int rank, const char *kind, const char *fmt, va_list ap)
{
    char line[ZB_ERROR_MSG_MAX + 64];

    /* One write per line: ranks share the terminal. */
    vsnprintf(line, sizeof(line), fmt, ap);
    fprintf(stderr, "zbexec: rank %d: %s%s\n", rank, kind, line);
    fflush(stderr);
}

void exec_error(int rank, const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    vsay(rank, "", fmt, ap);
    va_end(ap);
}

void exec_warn(int rank, const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    vsay(rank, "warning: ", fmt, ap);
    va_end(ap);
}

static const char *message(const struct zb_error *err)
{
    return err->msg[0] ? err->msg : zb_strerror(err->code);
}

void exec_abort(const struct exec *x, const struct zb_error *err)
{
    exec_error(x->world, "%s", message(err));
    MPI_Abort(MPI_COMM_WORLD, 1);
    exit(1);    /* MPI_Abort does not return; this keeps the contract */
}

int exec_agree(int rank, int rc, const struct zb_error *err)
{
    int mine[2] = { rc < 0 ? rank : 1 << 30, rc }, all[2];

    MPI_Allreduce(&mine[0], &all[0], 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    MPI_Allreduce(&mine[1], &all[1], 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    if (rc < 0 && all[0] == rank)
        exec_error(rank, "%s", message(err));
    return all[1];
}

int exec_mpi_error(int rc, const char *call, struct zb_error *err)
{
    char text[MPI_MAX_ERROR_STRING];
    int len = 0;

    MPI_Error_string(rc, text, &len);
    return zb_error_set(err, ZB_EDEVICE, "%s: %.*s", call, len, text);
}
