/* cmd_validate.c - `zbsched validate FILE`: the validator on a file. */
#include <stdio.h>
#include "cli.h"
#include "commands.h"
#include "zbsched/schedule.h"
#include "zbsched/validate.h"

static int run(const struct cli_args *a)
{
    struct zb_schedule s;
    struct zb_error err = { 0 };
    int rc;

    if ((rc = cli_read_schedule(a->pos[0], &s)) != CLI_OK)
        return rc;
    if (zb_validate_schedule(&s, &err) < 0) {
        rc = cli_fail_file(a->pos[0], &err);
    } else {
        printf("ok: '%s' is a legal %s schedule (pp %d, vpp %d, %d "
               "microbatches)\n", a->pos[0], s.name, s.profile.pp,
               s.profile.vpp, s.profile.microbatches);
    }
    zb_schedule_release(&s);
    return rc;
}

const struct cli_command cmd_validate = {
    .name = "validate", .run = run,
    .summary = "check that a schedule file is legal, memory included",
    .args = "FILE", .min_args = 1, .max_args = 1,
};
