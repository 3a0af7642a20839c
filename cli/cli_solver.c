/* cli_solver.c - what generate and compare share to drive a search row
 * (ilp): --time-limit, --gap, --objective, --export-lp, Ctrl-C and the
 * progress line. The library never prints; these callbacks do, on stderr. */
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include "cli.h"
#include "report.h"
#include "zbsched/dp.h"
#include "zbsched/schedule.h"
#include "zbsched/options.h"

static volatile sig_atomic_t interrupted;

static void on_sigint(int sig)
{
    (void)sig;
    interrupted = 1;
}

/* The search's lines as ever; the warm start's one line, and a line as
 * each step of zb's plan ends, only on a terminal and past a second
 * (pipes and tests see no change). */
static void print_progress(const struct zb_progress *pr, void *ctx)
{
    (void)ctx;
    if (pr->phase != ZB_PROGRESS_SEARCH &&
        (pr->elapsed < 1.0 || !isatty(STDERR_FILENO)))
        return;
    if (pr->phase == ZB_PROGRESS_WARM_START) {
        fprintf(stderr, "zbsched: ilp warm start %.1f s\n", pr->elapsed);
        return;
    }
    if (pr->phase == ZB_PROGRESS_STEP) {
        fprintf(stderr, "zbsched: zb: %s (%d) in %.1f s, best cost %.6g\n",
                pr->step, pr->done, pr->elapsed, pr->objective);
        return;
    }
    fprintf(stderr, "zbsched: ilp search %.1f s, %.1f s in all  "
            "incumbent %.6g  bound %.6g  gap %.2f%%  nodes %ld\n",
            pr->elapsed, pr->wall, pr->objective, pr->bound, 100 * pr->gap,
            pr->nodes);
}

/* Ctrl-C stops the search and keeps the best schedule found; the handler
 * stays installed (no SA_RESETHAND), so a second SIGINT, such as the one
 * a shell sends to the whole group, does not kill the write. */
static void catch_sigint(struct zb_options *opt)
{
    struct sigaction sa;

    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = on_sigint;
    sigemptyset(&sa.sa_mask);
    interrupted = 0;
    sigaction(SIGINT, &sa, NULL);
    opt->interrupt = &interrupted;
}

int cli_generator_options(const struct cli_args *a, double default_time,
                          bool search, struct zb_options *opt)
{
    const char *obj = cli_get(a, "objective");
    const char *cmd = a->cmd->name;
    int rc;

    zb_options_init(opt);
    if ((rc = cli_number(a, "time-limit", default_time,
                         &opt->time_limit)) != CLI_OK ||
        (rc = cli_number(a, "gap", 0, &opt->gap)) != CLI_OK ||
        (rc = cli_number(a, "effort", 0, &opt->effort)) != CLI_OK)
        return rc;
    if (!(opt->time_limit >= 0) || !(opt->gap >= 0)) {
        cli_error("%s: --time-limit and --gap must be >= 0", cmd);
        return CLI_USAGE;
    }
    /* cli_number() reads decimal numbers only: every value is finite
     * (the solver clamps GLPK's int milliseconds). */
    if (obj && !strcmp(obj, "makespan"))
        opt->objective = ZB_OBJECTIVE_MAKESPAN;
    else if (obj && strcmp(obj, "cost")) {
        cli_error("%s: --objective must be 'cost' or 'makespan', got '%s'",
                  cmd, obj);
        return CLI_USAGE;
    }
    opt->export_lp = cli_get(a, "export-lp");
    if (search)
        catch_sigint(opt);
    /* Any row may take seconds on a huge profile (zb's steps report). */
    if (!cli_has(a, "quiet"))
        opt->progress = print_progress;
    return CLI_OK;
}

void cli_search_summary(const struct zb_options *opt,
                        const struct zb_schedule *s)
{
    const struct zb_solver_info *si = &s->solver;

    /* A weakened search is worth a word even with -q. */
    if (si->present && si->warning[0])
        fprintf(stderr, "zbsched: warning: %s (the search went on without "
                "that model)\n", si->warning);
    if (si->present && opt->progress)
        fprintf(stderr, "zbsched: ilp: %s, %s %s, bound %s, gap %.2f%%, "
                "%.1f s, %ld nodes\n", si->status,
                zb_dp_active(&s->profile) ? "step"
                : opt->objective == ZB_OBJECTIVE_MAKESPAN ? "makespan"
                                                          : "cost",
                report_time(&s->profile, si->objective).s,
                report_time(&s->profile,
                            report_bound_of(si->objective, si->bound)).s,
                si->gap > 0 ? 100 * si->gap : 0, si->seconds, si->nodes);
}
