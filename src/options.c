/* options.c - the defaults of struct zb_options (options.h). */
#include "zbsched/options.h"

void zb_options_init(struct zb_options *opt)
{
    *opt = (struct zb_options){ .time_limit = 60, .gap = 0,
                                .objective = ZB_OBJECTIVE_COST,
                                .threads = 2 };
}
