/* cmd_validate.c - `zbsched validate FILE`: the validator on a file. */
#include <stdio.h>
#include "cli.h"
#include "commands.h"
#include "zbsched/schedule.h"
#include "zbsched/validate.h"

int cmd_validate(int argc, char **argv)
{
    static const struct cli_opt opts[] = { { "help", false }, { NULL, 0 } };
    struct zb_schedule s;
    struct zb_error err = { 0 };
    struct cli_args a;
    int rc;

    if ((rc = cli_parse(argc, argv, "validate", opts, &a)) != CLI_OK)
        return rc;
    if (a.npos != 1) {
        cli_error("validate: expected one schedule file");
        return CLI_USAGE;
    }
    if ((rc = cli_read_schedule(a.pos[0], &s)) != CLI_OK)
        return rc;
    if (zb_validate_schedule(&s, &err) < 0) {
        zb_error_prefix(&err, "'%s'", a.pos[0]);
        rc = cli_fail(&err);
    } else {
        printf("ok: '%s' is a legal %s schedule (pp %d, vpp %d, %d "
               "microbatches)\n", a.pos[0], s.name, s.profile.pp,
               s.profile.vpp, s.profile.microbatches);
    }
    zb_schedule_release(&s);
    return rc;
}
