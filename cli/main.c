/* main.c - zbsched: look the subcommand up in the table and run it. */
#include <stdio.h>
#include <string.h>
#include "cli.h"
#include "commands.h"

static const struct command {
    const char *name;
    int (*run)(int argc, char **argv);
} commands[] = {
    { "generate", cmd_generate },
    { "eval", cmd_eval },
    { "validate", cmd_validate },
    { "compare", cmd_compare },
    { "list", cmd_list },
    { "render", cmd_render },
    { "export", cmd_export },
    { "import", cmd_import },
    { NULL, NULL },
};

int main(int argc, char **argv)
{
    if (argc < 2) {
        cli_usage(stderr);
        return CLI_USAGE;
    }
    if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") ||
        !strcmp(argv[1], "help")) {
        cli_usage(stdout);
        return CLI_OK;
    }
    for (const struct command *c = commands; c->name; c++)
        if (!strcmp(argv[1], c->name))
            return c->run(argc - 1, argv + 1);
    cli_error("'%s' is not a command (see 'zbsched --help')", argv[1]);
    return CLI_USAGE;
}
