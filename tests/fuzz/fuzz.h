/* fuzz.h - what the libFuzzer targets share: the input as the readers
 * get it from zb_io_slurp() (NUL-terminated, no NUL inside), and the
 * small profile the trace and CSV targets read against. */
#ifndef ZBSCHED_FUZZ_H
#define ZBSCHED_FUZZ_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "zbsched/profile.h"

/* A copy of the input ending at its first NUL, as text; free() it. */
static inline char *fuzz_text(const uint8_t *data, size_t size)
{
    size_t n = strnlen((const char *)data, size);
    char *text = malloc(n + 1);

    memcpy(text, data, n);
    text[n] = '\0';
    return text;
}

/* pp 2, vpp 2 (loop), 2 microbatches, unit times: small enough that
 * mutated events often name a real pass. */
static inline void fuzz_profile(struct zb_profile *p)
{
    struct zb_profile_draft d;

    zb_profile_draft_init(&d);
    zb_profile_draft_set_shape(&d, 2, 2, 2, ZB_PLACEMENT_LOOP);
    if (zb_profile_build(&d, p, NULL) < 0)
        abort();
    zb_profile_draft_release(&d);
}

#endif
