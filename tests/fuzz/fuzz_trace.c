/* fuzz_trace.c - libFuzzer target: the realized-trace reader
 * (zb_timeline_parse, Chrome trace or zbexec report) against a small
 * profile, then its measures and the terminal picture, as `render
 * --realized` does. */
#include <stdlib.h>
#include "fuzz.h"
#include "zbsched/measures.h"
#include "zbsched/render.h"
#include "zbsched/timeline.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = fuzz_text(data, size);
    struct zb_profile p;
    struct zb_timeline t = { 0 };
    struct zb_schedule s;

    fuzz_profile(&p);
    zb_schedule_init(&s, "fuzz", &p);
    if (zb_timeline_parse(text, &p, 1000, -1, &t, NULL) == 0) {
        struct zb_panel pn = { "realized", &s, t.ranks, &s.predicted };
        zb_measures_from_times(&p, t.ranks, &s.predicted);
        if (zb_render_check(&pn, 1, NULL) == 0)
            free(zb_render_ascii(&pn, 1, 80));
    }
    zb_timeline_release(&t);
    zb_schedule_release(&s);
    zb_profile_release(&p);
    free(text);
    return 0;
}
