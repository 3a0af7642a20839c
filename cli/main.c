/* main.c - zbsched: look the subcommand up in the table, parse its
 * arguments against its own option rows, and run it. To add a command:
 * write cli/cmd_foo.c with its row `cmd_foo` (name, function, summary,
 * arguments, options), declare it in commands.h, list it here, and test
 * it in tests/cli. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include "cli.h"
#include "commands.h"
#include "zbsched/version.h"

const struct cli_command *const cli_commands[] = {
    &cmd_generate, &cmd_eval, &cmd_validate, &cmd_compare, &cmd_frontier,
    &cmd_profile, &cmd_check_profile,
    &cmd_plan,
    &cmd_list, &cmd_render, &cmd_export, &cmd_import, NULL,
};

static const struct cli_command *find_command(const char *name)
{
    for (int i = 0; cli_commands[i]; i++)
        if (!strcmp(cli_commands[i]->name, name))
            return cli_commands[i];
    return NULL;
}

/* `zbsched help [CMD]`: the tool's usage, or CMD's; `help --man`: the
 * manual page. */
static int help(int argc, char **argv)
{
    const struct cli_command *cmd;

    if (argc < 3) {
        cli_usage(stdout);
        return CLI_OK;
    }
    if (!strcmp(argv[2], "--man")) {
        cli_man(stdout);
        return CLI_OK;
    }
    if (!(cmd = find_command(argv[2]))) {
        cli_unknown_command(argv[2]);
        return CLI_USAGE;
    }
    cli_command_usage(cmd, stdout);
    return CLI_OK;
}

/* Output is buffered: a full disk or closed pipe shows only when stdout
 * is flushed and closed, so a command's success waits for that. */
static int close_stdout(int rc)
{
    errno = 0;
    if ((fflush(stdout) != 0 || ferror(stdout) || fclose(stdout) != 0) &&
        rc == CLI_OK) {
        /* A failed command has said why already. */
        cli_error("cannot write to stdout: %s",
                  errno ? strerror(errno) : "write error");
        return CLI_FAIL;
    }
    return rc;
}

static int run(int argc, char **argv)
{
    const struct cli_command *cmd;
    struct cli_args a;
    int rc;

    if (argc < 2) {
        cli_usage(stderr);
        return CLI_USAGE;
    }
    if (!strcmp(argv[1], "--version"))
        return puts("zbsched " ZB_VERSION) < 0 ? CLI_FAIL : CLI_OK;
    if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") ||
        !strcmp(argv[1], "help"))
        return help(argc, argv);
    if (!(cmd = find_command(argv[1]))) {
        cli_unknown_command(argv[1]);
        return CLI_USAGE;
    }
    rc = cli_parse(cmd, argc - 1, argv + 1, &a);
    if (rc == CLI_HELP)
        return CLI_OK;
    return rc == CLI_OK ? cmd->run(&a) : rc;
}

int main(int argc, char **argv)
{
    /* A reader that goes away (`| head`) makes writes fail with EPIPE,
     * which close_stdout() reports with exit 1, instead of a signal that
     * ends the process with no word. */
    signal(SIGPIPE, SIG_IGN);
    return close_stdout(run(argc, argv));
}
