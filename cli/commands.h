/* commands.h - the subcommands; each returns the exit status. */
#ifndef ZBSCHED_COMMANDS_H
#define ZBSCHED_COMMANDS_H

int cmd_generate(int argc, char **argv);
int cmd_eval(int argc, char **argv);
int cmd_validate(int argc, char **argv);
int cmd_compare(int argc, char **argv);
int cmd_list(int argc, char **argv);
int cmd_render(int argc, char **argv);
int cmd_export(int argc, char **argv);
int cmd_import(int argc, char **argv);

#endif
