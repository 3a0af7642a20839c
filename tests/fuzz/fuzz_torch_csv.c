/* fuzz_torch_csv.c - libFuzzer target: the PyTorch CSV importer
 * (zb_torch_csv_parse), then the schedule it makes for the file's own
 * shape, as `import` does. */
#include <stdlib.h>
#include "fuzz.h"
#include "zbsched/torch.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = fuzz_text(data, size);
    struct zb_torch_csv c;

    if (zb_torch_csv_parse(text, &c, NULL) == 0) {
        struct zb_profile_draft d;
        struct zb_profile p;
        struct zb_schedule s;

        zb_profile_draft_init(&d);
        zb_profile_draft_set_shape(&d, c.pp, c.vpp, c.microbatches,
                                   c.placement);
        if (zb_profile_build(&d, &p, NULL) == 0) {
            if (zb_torch_csv_schedule(&c, &p, "fuzz", &s, NULL) == 0) {
                free(zb_torch_csv_format(&s, ZB_TORCH_COMPUTE_COMMS));
                zb_schedule_release(&s);
            }
            zb_profile_release(&p);
        }
        zb_profile_draft_release(&d);
    }
    zb_torch_csv_release(&c);
    free(text);
    return 0;
}
