/* compare_dp.h - `zbsched compare` for a profile with data parallelism:
 * the PP x ZeRO table (cmd_compare.c calls it). */
#ifndef ZBSCHED_CLI_COMPARE_DP_H
#define ZBSCHED_CLI_COMPARE_DP_H

#include <stdbool.h>
#include <stdio.h>
#include "zbsched/options.h"
#include "zbsched/profile.h"

/* One row per family and ZeRO stage (the profile's, or 0-3 with
 * all_zero): step time as placed, step time after the W post-pass,
 * largest per-rank memory; then the fastest row that fits; into f, as a
 * table or one JSON document. Returns a
 * CLI_* status. */
int compare_dp(FILE *f, const struct zb_profile *prof,
               const struct zb_options *opt,
               bool all_zero, bool json);

#endif
