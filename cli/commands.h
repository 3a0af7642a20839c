/* commands.h - the rows of the command table (cli.h: struct cli_command),
 * one per cmd_*.c, listed in main.c. */
#ifndef ZBSCHED_COMMANDS_H
#define ZBSCHED_COMMANDS_H

#include "cli.h"

extern const struct cli_command cmd_generate;
extern const struct cli_command cmd_eval;
extern const struct cli_command cmd_validate;
extern const struct cli_command cmd_compare;
extern const struct cli_command cmd_frontier;
extern const struct cli_command cmd_list;
extern const struct cli_command cmd_render;
extern const struct cli_command cmd_export;
extern const struct cli_command cmd_import;
extern const struct cli_command cmd_plan;
extern const struct cli_command cmd_profile, cmd_check_profile;

#endif
