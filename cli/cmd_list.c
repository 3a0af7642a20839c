/* cmd_list.c - `zbsched list`: the generator table, as the code sees it. */
#include <stdio.h>
#include "cli.h"
#include "commands.h"
#include "zbsched/generator.h"

static int run(const struct cli_args *a)
{
    (void)a;
    printf("%-15s %-9s %-6s %-22s %s\n", "name", "placement", "vpp",
           "pytorch", "summary");
    for (int i = 0; zb_generators[i]; i++) {
        const struct zb_generator *g = zb_generators[i];
        char vpp[16];
        if (g->min_vpp == g->max_vpp)
            snprintf(vpp, sizeof(vpp), "%d", g->min_vpp);
        else
            snprintf(vpp, sizeof(vpp), "%d-%d", g->min_vpp, g->max_vpp);
        const char *torch = zb_generator_pytorch_name(g);
        printf("%-15s %-9s %-6s %-22s %s\n", g->name,
               g->placements == (ZB_PLACES_LOOP | ZB_PLACES_V) ? "loop,v"
               : g->placements == ZB_PLACES_V                  ? "v"
                                                               : "loop",
               vpp, torch ? torch : "-", g->summary);
    }
    return CLI_OK;
}

const struct cli_command cmd_list = {
    .name = "list", .run = run,
    .summary = "the schedule families: name, placements, vpp, PyTorch's "
               "name, summary",
};
