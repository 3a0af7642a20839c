/* trace.h - Chrome trace-event JSON (Perfetto) of a schedule's predicted
 * timeline. Ownership: the returned string is the caller's. */
#ifndef ZBSCHED_TRACE_H
#define ZBSCHED_TRACE_H

#include "zbsched/schedule.h"

/* Chrome trace-event JSON of a simulated, lowered schedule's predicted
 * timeline: process (pid) = rank, thread 0 = compute, thread 1 (and 2, 3,
 * ... where transfers overlap, since a thread's slices must nest) =
 * communication, with flow arrows from each SEND to its RECV. One profile
 * time unit lasts us_per_unit microseconds. */
char *zb_trace_format(const struct zb_schedule *s, double us_per_unit);

#endif
