/* profile_int.h - the value checks of profile.c, shared with
 * profile_stages.c (the stage-by-stage memory and comm). */
#ifndef ZBSCHED_PROFILE_INT_H
#define ZBSCHED_PROFILE_INT_H

#include "zbsched/profile.h"

/* A time or memory size that is not 0 lies within ZB_VALUE_MIN and
 * ZB_VALUE_MAX (profile.h says why); ZB_EINVAL naming field if not. */
int zbi_profile_in_range(double v, const char *field, double *out,
                         struct zb_error *err);

/* A time: o's value or dflt, finite, and > 0 (positive) or >= 0. */
int zbi_profile_get_time(const struct zb_opt *o, double dflt, bool positive,
                         const char *field, double *out,
                         struct zb_error *err);

/* Whether any "stages" entry gives its own M_B (M_W) that no flag
 * overrides. */
bool zbi_profile_stage_memory_given(const struct zb_profile_draft *d);

/* Every "stages" entry gives M_B: the common M_B is not needed. */
bool zbi_profile_every_stage_m_b(const struct zb_profile_draft *d);

/* The first stage memory that is a plain number where sizes are used
 * ("stages[2].M_B"), its value in *v; NULL when there is none. */
const char *zbi_profile_plain_stage_memory(const struct zb_profile_draft *d,
                                           double *v, char *buf, int size);

/* p->stage_mem and p->stage_comm from d's "stages" entries, after the
 * common M_B, M_W and comm are in p (then p->m_b, p->m_w and p->comm
 * become the largest entries). Arrays whose entries all agree are not
 * kept. ZB_EINVAL naming the entry's field. */
int zbi_profile_build_stages(const struct zb_profile_draft *d,
                             struct zb_profile *p, struct zb_error *err);

#endif
