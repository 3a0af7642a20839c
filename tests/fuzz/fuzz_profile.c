/* fuzz_profile.c - libFuzzer target: the profile reader and checker
 * (zb_json_parse_profile, zb_profile_build) and the profile writer. */
#include <stdlib.h>
#include "fuzz.h"
#include "zbsched/json.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = fuzz_text(data, size);
    struct zb_profile_draft d;
    struct zb_profile p;

    zb_profile_draft_init(&d);
    if (zb_json_parse_profile(text, &d, NULL) == 0 &&
        zb_profile_build(&d, &p, NULL) == 0) {
        free(zb_json_format_profile(&p));
        zb_profile_release(&p);
    }
    zb_profile_draft_release(&d);
    free(text);
    return 0;
}
