/* cmd_check_profile.c - `zbsched check-profile FILE`: warnings a user can
 * act on, one line each on stderr (a B timer that holds W, noisy or
 * unbalanced stages, memory that cannot be); exit 0 unless the file is
 * not a valid profile (docs/profiles.md, "check-profile"). */
#include <stdio.h>
#include <stdlib.h>
#include "cli.h"
#include "commands.h"
#include "zbsched/generator.h"
#include "zbsched/io.h"
#include "zbsched/json.h"
#include "zbsched/profile_import.h"

/* The warnings as the result (-o, --json): one line each, or
 * {"file": ..., "warnings": [...]}; the reader's own come first. */
static int report(const struct cli_args *a, const char *path,
                  const char *reader, const struct zb_check *c)
{
    struct cli_out out;
    bool json = cli_has(a, "json");

    cli_out_open(a, &out);
    if (json) {
        fputs("{\"file\": ", out.f);
        zb_json_fput_str(out.f, path);
        fputs(", \"warnings\": [", out.f);
        if (reader[0])
            zb_json_fput_str(out.f, reader);
        for (int i = 0; i < c->n; i++) {
            fputs(i || reader[0] ? ", " : "", out.f);
            zb_json_fput_str(out.f, c->msg[i]);
        }
        fputs("]}\n", out.f);
    } else {
        if (reader[0])
            fprintf(out.f, "warning: '%s': %s\n", path, reader);
        for (int i = 0; i < c->n; i++)
            fprintf(out.f, "warning: %s\n", c->msg[i]);
    }
    return cli_out_close(&out, CLI_OK);
}

static int run(const struct cli_args *a)
{
    const char *path = a->pos[0], *family = cli_get(a, "schedule");
    struct zb_profile_draft d;
    struct zb_profile p = { 0 };
    struct zb_measured m;
    struct zb_check c;
    struct zb_error err = { 0 };
    struct zb_check_dims dims = { 0, 0 };
    char *text = NULL;
    int rc = CLI_OK;

    if ((rc = cli_number(a, "hidden", 0, &dims.hidden)) != CLI_OK ||
        (rc = cli_number(a, "seq", 0, &dims.seq)) != CLI_OK)
        return rc;
    if (!(dims.hidden >= 0 && dims.seq >= 0 && dims.hidden < 1e9 &&
          dims.seq < 1e9) || (dims.hidden > 0) != (dims.seq > 0)) {
        cli_error("check-profile: --hidden and --seq go together, each a "
                  "number > 0");
        return CLI_USAGE;
    }
    if (family) {
        const struct zb_generator *g = zb_generator_lookup(family, &err);
        if (!g) {
            cli_error("check-profile: %s", err.msg);
            return CLI_USAGE;
        }
        family = g->name;       /* an alias names its family */
    }
    zb_profile_draft_init(&d);
    zb_measured_init(&m);
    zb_check_init(&c);
    if (zb_io_slurp(path, &text, &err) < 0 ||
        zb_json_parse_profile(text, &d, &err) < 0 ||
        zb_profile_build(&d, &p, &err) < 0 ||
        zb_json_parse_measured(text, &m, &err) < 0) {
        rc = cli_fail_file(path, &err);
        goto out;
    }
    zb_check_profile(&p, &m, family, dims.hidden > 0 ? &dims : NULL, &c);
    if (cli_has(a, "json") || cli_has(a, "output")) {
        rc = report(a, path, d.warnings, &c);
        goto out;
    }
    if (d.warnings[0])
        cli_warn("'%s': %s", path, d.warnings);
    for (int i = 0; i < c.n; i++)
        cli_warn("%s", c.msg[i]);
out:
    free(text);
    zb_check_release(&c);
    zb_measured_release(&m);
    zb_profile_release(&p);
    zb_profile_draft_release(&d);
    return rc;
}

static const struct cli_opt opts[] = {
    { "schedule", 0, "NAME", "the family it is for (default: any, so W = 0\n"
      "is warned about)" },
    { "hidden", 0, "H", "a transformer layer's hidden size: compare B/F\n"
      "and W/F with its FLOPs" },
    { "seq", 0, "S", "its sequence length (with --hidden)" },
    CLI_OPT_OUTPUT("the warnings"),
    CLI_OPT_JSON("the warnings"),
    { NULL, 0, NULL, NULL },
};

const struct cli_command cmd_check_profile = {
    .name = "check-profile", .run = run,
    .summary = "warn about a profile that does not look like its passes",
    .args = "FILE", .min_args = 1, .max_args = 1,
    .groups = { { "options", opts } },
    .notes = "Warnings go to stderr, one line each (with -o or --json, "
             "to the result\ninstead); the exit status is 0 unless FILE is "
             "not a valid profile.\nThresholds: docs/profiles.md.\n",
};
