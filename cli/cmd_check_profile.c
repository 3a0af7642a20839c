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
    if (d.warnings[0])
        cli_warn("'%s': %s", path, d.warnings);
    zb_check_profile(&p, &m, family, dims.hidden > 0 ? &dims : NULL, &c);
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
    { NULL, 0, NULL, NULL },
};

const struct cli_command cmd_check_profile = {
    .name = "check-profile", .run = run,
    .summary = "warn about a profile that does not look like its passes",
    .args = "FILE", .min_args = 1, .max_args = 1,
    .groups = { { "options", opts } },
    .notes = "Warnings go to stderr, one line each; the exit status is 0 "
             "unless FILE is not\na valid profile. Thresholds: "
             "docs/profiles.md.\n",
};
