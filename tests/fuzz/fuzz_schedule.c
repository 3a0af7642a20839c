/* fuzz_schedule.c - libFuzzer target: the schedule reader, then what
 * `eval` and `render` do with a file that parses (check the order,
 * simulate, measure, write back, draw). */
#include <stdlib.h>
#include "fuzz.h"
#include "zbsched/json.h"
#include "zbsched/render.h"
#include "zbsched/sim.h"
#include "zbsched/validate.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = fuzz_text(data, size);
    struct zb_schedule s;

    if (zb_json_parse_schedule(text, &s, NULL) == 0) {
        if (zb_validate_order(&s, NULL) == 0 && zb_sim_run(&s, NULL) == 0) {
            struct zb_panel pn = { NULL, &s, s.ranks, &s.predicted };
            zb_validate_schedule(&s, NULL);
            free(zb_json_format_schedule(&s));
            if (zb_render_check(&pn, 1, NULL) == 0) {
                free(zb_render_ascii(&pn, 1, 80));
                free(zb_render_svg(&pn, 1, 600));
            }
        }
        zb_schedule_release(&s);
    }
    free(text);
    return 0;
}
