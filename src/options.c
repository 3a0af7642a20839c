/* options.c - the defaults of struct zb_options (options.h). */
#include "zbsched/options.h"

void zb_options_init(struct zb_options *opt)
{
    *opt = (struct zb_options){ .time_limit = 60, .gap = 0,
                                .objective = ZB_OBJECTIVE_COST,
                                .threads = 2 };
}

const struct zb_options *zb_options_or_default(const struct zb_options *opt,
                                               struct zb_options *def)
{
    if (opt)
        return opt;
    zb_options_init(def);
    return def;
}
