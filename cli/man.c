/* man.c - `zbsched help --man`: the manual page (roff) written from the
 * command table and each command's option rows, the same rows that its
 * parser and --help read, so docs/zbsched.1 (make man) cannot drift. */
#include <stdio.h>
#include <string.h>
#include "cli.h"
#include "zbsched/version.h"

/* Text for roff: backslashes escaped, minus signs literal (\-), a line
 * that would start with a control character guarded; a newline of the
 * help text becomes a space, or a line break with keep_lines. */
static void put_text(FILE *out, const char *s, bool keep_lines)
{
    bool bol = true;

    for (; *s; s++) {
        if (bol && (*s == '.' || *s == '\''))
            fputs("\\&", out);
        bol = false;
        if (*s == '\\')
            fputs("\\e", out);
        else if (*s == '-')
            fputs("\\-", out);
        else if (*s == '\n') {
            if (!keep_lines) {
                fputc(' ', out);
                continue;
            }
            fputc('\n', out);
            bol = true;
        } else
            fputc(*s, out);
    }
}

static void put_opt(FILE *out, const struct cli_opt *o)
{
    fputs(".TP\n", out);
    if (o->letter)
        fprintf(out, "\\fB\\-%c\\fR, ", o->letter);
    fputs("\\fB\\-\\-", out);
    put_text(out, o->name, false);
    fputs("\\fR", out);
    if (o->arg) {
        fputs(" \\fI", out);
        put_text(out, o->arg, false);
        fputs("\\fR", out);
    }
    fputc('\n', out);
    put_text(out, o->help, false);
    fputc('\n', out);
}

static void put_command(FILE *out, const struct cli_command *cmd)
{
    static const struct cli_opt help = { "help", 'h', NULL, "this text" };

    fprintf(out, ".SS \"zbsched %s [options]%s", cmd->name,
            cmd->args ? " " : "");
    if (cmd->args)
        put_text(out, cmd->args, false);
    fputs("\"\n", out);
    put_text(out, cmd->summary, false);
    fputs(".\n", out);
    for (int g = 0; g < CLI_MAX_GROUPS && cmd->groups[g].opts; g++) {
        fputs(".PP\n\\fI", out);
        put_text(out, cmd->groups[g].title, false);
        fputs(":\\fR\n", out);
        for (const struct cli_opt *o = cmd->groups[g].opts; o->name; o++)
            put_opt(out, o);
    }
    if (!cmd->groups[0].opts)
        fputs(".PP\n\\fIoptions:\\fR\n", out);
    put_opt(out, &help);
    if (cmd->notes) {
        fputs(".PP\n.nf\n", out);
        put_text(out, cmd->notes, true);
        fputs(".fi\n", out);
    }
}

void cli_man(FILE *out)
{
    fputs(".\\\" Written by `zbsched help --man` (make man): edit cli/.\n",
          out);
    fputs(".TH ZBSCHED 1 \"\" \"zbsched " ZB_VERSION "\" \"User Commands\"\n"
          ".SH NAME\nzbsched \\- pipeline\\-parallel schedule generator\n"
          ".SH SYNOPSIS\n.B zbsched\n.I command\n[\\fIoptions\\fR] "
          "[\\fIFILE\\fR...]\n.br\n.B zbsched\n\\fB\\-\\-help\\fR | "
          "\\fB\\-\\-version\\fR | \\fBhelp\\fR [\\fIcommand\\fR]\n"
          ".SH DESCRIPTION\nPipeline\\-parallel schedules: generate, "
          "simulate, validate, compare.\nResults go to stdout (or "
          "\\fB\\-o\\fR \\fIFILE\\fR, written whole or not at all),\n"
          "everything else to stderr.\n.SH COMMANDS\n", out);
    for (int i = 0; cli_commands[i]; i++)
        put_command(out, cli_commands[i]);
    fputs(".SH EXIT STATUS\n0 ok, 1 failure (bad input, illegal schedule, "
          "nothing fits the limit,\nstdout that cannot be written), 2 usage "
          "error.\n.SH FILES\n.TP\n.I tools/zbsched\\-completion.bash\n"
          "bash completion: commands, each command's options, \\fB\\-\\-"
          "schedule\\fR names.\n.SH SEE ALSO\n\\fBzbexec\\fR, "
          "docs/guide.md, docs/formats.md\n", out);
}
