/* registry.c - the table of schedule families; `zbsched list` prints it.
 *
 * To add a schedule:
 *  1. write schedules/families/foo.c defining
 *     `const struct zb_generator zb_gen_foo`
 *     (name, summary, placements, vpp range, the shape it runs in when
 *     the user gives none, generate());
 *  2. list zb_gen_foo below, in the order `zbsched list` should show;
 *  3. add its cases to tests/unit/test_generators.c (the random-profile test
 *     picks it up from this table by itself) and run `make regen` for its
 *     golden file.
 * A fixed family joins `zb`'s candidates by itself; an order only `zb`
 * weighs is a row of schedules/plan/candidates.c instead. */
#include <string.h>
#include "zbsched/generator.h"

extern const struct zb_generator zb_gen_gpipe, zb_gen_1f1b, zb_gen_zb_h1,
    zb_gen_zb_h2, zb_gen_interleaved, zb_gen_interleaved_zb, zb_gen_zb_v,
    zb_gen_v_half, zb_gen_v_min, zb_gen_dualpipev,
    zb_gen_zb, zb_gen_ilp;

const struct zb_generator *const zb_generators[] = {
    &zb_gen_gpipe,
    &zb_gen_1f1b,
    &zb_gen_interleaved,
    &zb_gen_zb_h1,
    &zb_gen_zb_h2,
    &zb_gen_zb_v,
    &zb_gen_v_half,
    &zb_gen_v_min,
    &zb_gen_dualpipev,
    &zb_gen_interleaved_zb,
    &zb_gen_zb,
    &zb_gen_ilp,
    NULL,
};

const struct zb_generator *zb_generator_find(const char *name)
{
    for (int i = 0; zb_generators[i]; i++)
        if (!strcmp(zb_generators[i]->name, name))
            return zb_generators[i];
    return NULL;
}
