/* aliases.c - schedule names users know: torch.distributed.pipelining's
 * (get_schedule_class() keys and Schedule* classes, which torchtitan's
 * pipeline_parallel_schedule takes) mapped to the family that runs the
 * same order, and family names in any case. */
#include <stddef.h>
#include <string.h>
#include <strings.h>
#include "zbsched/generator.h"
#include "zbsched/suggest.h"

/* PyTorch name -> family, or NULL where no family runs that order. */
static const struct {
    const char *name;
    const char *family;
} aliases[] = {
    { "1F1B", "1f1b" }, { "Schedule1F1B", "1f1b" },
    { "GPipe", "gpipe" }, { "ScheduleGPipe", "gpipe" },
    /* Megatron's interleaved order; PyTorch's differs when m < p. */
    { "Interleaved1F1B", "interleaved" },
    { "ScheduleInterleaved1F1B", "interleaved" },
    /* Interleaved 1F1B with B/W split and deferred W. */
    { "InterleavedZeroBubble", "interleaved-zb" },
    { "ScheduleInterleavedZeroBubble", "interleaved-zb" },
    { "ZBVZeroBubble", "zb-v" }, { "ScheduleZBVZeroBubble", "zb-v" },
    { "DualPipeV", "dualpipev" }, { "ScheduleDualPipeV", "dualpipev" },
    /* Every chunk's forwards before the next chunk's: no family. */
    { "LoopedBFS", NULL }, { "ScheduleLoopedBFS", NULL },
    /* Base classes that run a CSV: export's torch-csv. */
    { "PipelineScheduleSingle", NULL }, { "PipelineScheduleMulti", NULL },
};
#define NALIASES (sizeof(aliases) / sizeof(aliases[0]))

const char *zb_generator_pytorch_name(const struct zb_generator *g)
{
    /* The first alias of a family is PyTorch's short name. */
    for (size_t i = 0; i < NALIASES; i++)
        if (aliases[i].family && !strcmp(aliases[i].family, g->name))
            return aliases[i].name;
    return NULL;
}

const struct zb_generator *zb_generator_lookup(const char *name,
                                               struct zb_error *err)
{
    const char *names[64], *near;
    size_t n = 0;

    for (int i = 0; zb_generators[i]; i++)
        if (!strcasecmp(zb_generators[i]->name, name))
            return zb_generators[i];
    for (size_t i = 0; i < NALIASES; i++) {
        if (strcasecmp(aliases[i].name, name))
            continue;
        if (aliases[i].family)
            return zb_generator_find(aliases[i].family);
        zb_error_set(err, ZB_EINVAL, "PyTorch's '%s' has no zbsched family "
                     "(see 'zbsched list'); export --to torch-csv runs any "
                     "schedule there", aliases[i].name);
        return NULL;
    }
    for (int i = 0; zb_generators[i] && n < 64 - NALIASES; i++)
        names[n++] = zb_generators[i]->name;
    for (size_t i = 0; i < NALIASES; i++)
        names[n++] = aliases[i].family ? aliases[i].name : NULL;
    if ((near = zb_suggest(name, names, n)))
        zb_error_set(err, ZB_EINVAL, "unknown schedule '%s' (did you mean "
                     "'%s'?)", name, near);
    else
        zb_error_set(err, ZB_EINVAL, "unknown schedule '%s' (see 'zbsched "
                     "list')", name);
    return NULL;
}
