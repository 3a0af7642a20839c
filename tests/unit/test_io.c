/* test_io.c - atomic writes (io.h): the temporary file is gone after a
 * success, a failure and a signal, and the target is whole or untouched. */
#include <criterion/criterion.h>
#include <dirent.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include "zbsched/io.h"
#include "zbsched/trace.h"
#include "helpers.h"

/* A fresh folder; entries() counts what is in it. */
static void make_dir(char *dir, size_t n)
{
    snprintf(dir, n, "%s/zbsched-io.XXXXXX",
             getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
    cr_assert_not_null(mkdtemp(dir));
}

static int entries(const char *dir)
{
    DIR *d = opendir(dir);
    struct dirent *e;
    int n = 0;

    cr_assert_not_null(d);
    while ((e = readdir(d)))
        n += strcmp(e->d_name, ".") && strcmp(e->d_name, "..");
    closedir(d);
    return n;
}

static void remove_dir(const char *dir, const char *file)
{
    char path[512];

    snprintf(path, sizeof(path), "%s/%s", dir, file);
    unlink(path);
    rmdir(dir);
}

static int write_then(const char *tmp, void *ctx, struct zb_error *err)
{
    FILE *f = fopen(tmp, "w");
    int sig = *(int *)ctx;

    (void)err;
    fputs("half", f);
    fclose(f);
    if (sig)
        raise(sig);
    return sig ? 0 : ZB_EIO;    /* no signal: a writer that fails */
}

Test(io, writes_whole_files_and_leaves_no_temporary_file)
{
    char dir[256], path[300], *back;
    struct zb_error err = { 0 };

    make_dir(dir, sizeof(dir));
    snprintf(path, sizeof(path), "%s/out.json", dir);
    cr_assert_eq(zb_io_write_file(path, "{}\n", 3, &err), 0, "%s", err.msg);
    cr_assert_eq(zb_io_slurp(path, &back, &err), 0, "%s", err.msg);
    cr_assert_str_eq(back, "{}\n");
    free(back);
    cr_assert_eq(entries(dir), 1, "only the output is there");
    remove_dir(dir, "out.json");
}

Test(io, a_failed_writer_leaves_the_target_untouched)
{
    char dir[256], path[300], *back;
    struct zb_error err = { 0 };
    int no_signal = 0;

    make_dir(dir, sizeof(dir));
    snprintf(path, sizeof(path), "%s/model.lp", dir);
    cr_assert_eq(zb_io_write_file(path, "old", 3, &err), 0);
    cr_assert_lt(zb_io_write_with(path, write_then, &no_signal, &err), 0);
    cr_assert_eq(zb_io_slurp(path, &back, &err), 0);
    cr_assert_str_eq(back, "old");
    free(back);
    cr_assert_eq(entries(dir), 1, "the temporary file was removed");
    remove_dir(dir, "model.lp");
}

Test(io, a_signal_during_a_write_removes_the_temporary_file)
{
    static const int sigs[] = { SIGINT, SIGTERM };

    for (size_t k = 0; k < sizeof(sigs) / sizeof(sigs[0]); k++) {
        char dir[256], path[300];
        int status, sig = sigs[k];
        pid_t pid;

        make_dir(dir, sizeof(dir));
        snprintf(path, sizeof(path), "%s/out.json", dir);
        if ((pid = fork()) == 0) {
            /* The disposition this test needs, not the one inherited: a
             * suite started with `nohup ... &` ignores SIGINT, and the
             * writer keeps an ignored signal ignored. */
            signal(sig, SIG_DFL);
            zb_io_write_with(path, write_then, &sig, NULL);
            _exit(0);       /* not reached: the signal ends the child */
        }
        cr_assert_eq(waitpid(pid, &status, 0), pid);
        cr_assert(WIFSIGNALED(status) && WTERMSIG(status) == sig,
                  "signal %d ends the writer", sig);
        cr_assert_eq(entries(dir), 0, "signal %d: nothing left", sig);
        rmdir(dir);
    }
}

/* The trace of the largest schedule a profile may ask for reads back: a
 * trace's bytes per pass (V placement, every edge between ranks: the most
 * communication events a pass brings), times the pass cap, stay within
 * the trace readers' limit. */
Test(io, the_largest_schedules_trace_fits_the_trace_limit)
{
    struct shape sh = unit_shape(8, 32);
    struct zb_profile p;
    struct zb_schedule s;
    char *trace;
    double per_pass;

    sh.vpp = 2;
    sh.placement = ZB_PLACEMENT_V;
    make_profile(&sh, &p);
    gen("zb-v", &p, &s);
    trace = zb_trace_format(&s, 1000);
    per_pass = (double)strlen(trace) / (3.0 * 8 * 2 * 32);
    cr_assert_lt(per_pass * ZB_MAX_PASSES, (double)ZB_IO_MAX_TRACE,
                 "%.0f bytes a pass", per_pass);
    cr_assert_gt(per_pass * ZB_MAX_PASSES, (double)ZB_IO_MAX_INPUT,
                 "the schedules' limit would not do (%.0f bytes a pass)",
                 per_pass);
    free(trace);
    zb_schedule_release(&s);
    zb_profile_release(&p);
}
