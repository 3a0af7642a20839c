/* cmd_list.c - `zbsched list`: the generator table, as the code sees it:
 * a table, or with --json one document with the same columns. */
#include <stdio.h>
#include "cli.h"
#include "commands.h"
#include "zbsched/generator.h"
#include "zbsched/json.h"

static const char *placements(const struct zb_generator *g, bool json)
{
    if (g->placements == (ZB_PLACES_LOOP | ZB_PLACES_V))
        return json ? "[\"loop\", \"v\"]" : "loop,v";
    if (g->placements == ZB_PLACES_V)
        return json ? "[\"v\"]" : "v";
    return json ? "[\"loop\"]" : "loop";
}

static void print_table(FILE *f)
{
    fprintf(f, "%-15s %-9s %-6s %-22s %s\n", "name", "placement", "vpp",
            "pytorch", "summary");
    for (int i = 0; zb_generators[i]; i++) {
        const struct zb_generator *g = zb_generators[i];
        const char *torch = zb_generator_pytorch_name(g);
        char vpp[16];
        if (g->min_vpp == g->max_vpp)
            snprintf(vpp, sizeof(vpp), "%d", g->min_vpp);
        else
            snprintf(vpp, sizeof(vpp), "%d-%d", g->min_vpp, g->max_vpp);
        fprintf(f, "%-15s %-9s %-6s %-22s %s\n", g->name,
                placements(g, false), vpp, torch ? torch : "-", g->summary);
    }
}

/* {"schedules": [{"name", "placement": [...], "vpp": [min, max],
 * "pytorch": name or null, "summary"}]}. */
static void print_json(FILE *f)
{
    fputs("{\"schedules\": [", f);
    for (int i = 0; zb_generators[i]; i++) {
        const struct zb_generator *g = zb_generators[i];
        const char *torch = zb_generator_pytorch_name(g);
        fputs(i ? ",\n  {\"name\": " : "\n  {\"name\": ", f);
        zb_json_fput_str(f, g->name);
        fprintf(f, ", \"placement\": %s, \"vpp\": [%d, %d], \"pytorch\": ",
                placements(g, true), g->min_vpp, g->max_vpp);
        if (torch)
            zb_json_fput_str(f, torch);
        else
            fputs("null", f);
        fputs(", \"summary\": ", f);
        zb_json_fput_str(f, g->summary);
        fputc('}', f);
    }
    fputs("\n]}\n", f);
}

static int run(const struct cli_args *a)
{
    struct cli_out out;

    cli_out_open(a, &out);
    if (cli_has(a, "json"))
        print_json(out.f);
    else
        print_table(out.f);
    return cli_out_close(&out, CLI_OK);
}

static const struct cli_opt opts[] = {
    CLI_OPT_OUTPUT("the table"),
    CLI_OPT_JSON("the table"),
    { NULL, 0, NULL, NULL },
};

const struct cli_command cmd_list = {
    .name = "list", .run = run,
    .summary = "the schedule families: name, placements, vpp, PyTorch's "
               "name, summary",
    .groups = { { "options", opts } },
};
