/* cmd_validate.c - `zbsched validate FILE`: the validator on a file; the
 * verdict as a line or, with --json, as one JSON document. */
#include <stdio.h>
#include "cli.h"
#include "commands.h"
#include "zbsched/json.h"
#include "zbsched/schedule.h"
#include "zbsched/validate.h"

/* {"file": ..., "valid": true, "schedule": ..., "pp": ...} or
 * {"file": ..., "valid": false, "error": ...}. */
static void verdict_json(FILE *f, const char *path,
                         const struct zb_schedule *s, const char *error)
{
    fputs("{\"file\": ", f);
    zb_json_fput_str(f, path);
    if (error) {
        fputs(", \"valid\": false, \"error\": ", f);
        zb_json_fput_str(f, error);
        fputs("}\n", f);
        return;
    }
    fputs(", \"valid\": true, \"schedule\": ", f);
    zb_json_fput_str(f, s->name);
    fprintf(f, ", \"pp\": %d, \"vpp\": %d, \"microbatches\": %d, "
            "\"placement\": \"%s\"}\n", s->profile.pp, s->profile.vpp,
            s->profile.microbatches, zb_placement_name(s->profile.placement));
}

static int run(const struct cli_args *a)
{
    struct zb_schedule s;
    struct zb_error err = { 0 };
    struct cli_out out;
    bool json = cli_has(a, "json");
    int rc;

    if ((rc = cli_read_schedule(a->pos[0], &s)) != CLI_OK)
        return rc;
    cli_out_open(a, &out);
    if (zb_validate_schedule(&s, &err) < 0) {
        if (json)
            verdict_json(out.f, a->pos[0], NULL, err.msg[0] ? err.msg
                                              : zb_strerror(err.code));
        /* The verdict is written; the exit status and stderr say it too. */
        cli_out_close(&out, CLI_OK);
        rc = cli_fail_file(a->pos[0], &err);
    } else {
        if (json)
            verdict_json(out.f, a->pos[0], &s, NULL);
        else
            fprintf(out.f, "ok: '%s' is a legal %s schedule (pp %d, vpp %d, "
                    "%d microbatches)\n", a->pos[0], s.name, s.profile.pp,
                    s.profile.vpp, s.profile.microbatches);
        rc = cli_out_close(&out, CLI_OK);
    }
    zb_schedule_release(&s);
    return rc;
}

static const struct cli_opt opts[] = {
    CLI_OPT_OUTPUT("the verdict"),
    CLI_OPT_JSON("the verdict"),
    { NULL, 0, NULL, NULL },
};

const struct cli_command cmd_validate = {
    .name = "validate", .run = run,
    .summary = "check that a schedule file is legal, memory included",
    .args = "FILE", .min_args = 1, .max_args = 1,
    .groups = { { "options", opts } },
    .notes = "An illegal schedule: the reason on stderr (and in --json's "
             "\"error\"), exit 1.\nA file that cannot be read or parsed "
             "writes no verdict.\n",
};
