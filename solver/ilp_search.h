/* ilp_search.h - the coordinator of the search (ilp_search.c): starts
 * the worker threads (ilp_workers.h) on the blackboard (ilp_shared.h),
 * watches the clock and the interrupt flag, reports progress. */
#ifndef ZBSCHED_SOLVER_ILP_SEARCH_H
#define ZBSCHED_SOLVER_ILP_SEARCH_H

#include "ilp_shared.h"

/* Run the workers (threads) until proven, out of time or interrupted;
 * report progress from the calling thread. */
void zbi_ilp_search(struct ilp_shared *sh, const struct zb_options *opt);

#endif
