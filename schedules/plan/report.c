/* report.c - zb's plan tells the caller's progress callback as each of
 * its steps ends (how long a huge profile's collection or search took),
 * from the calling thread, as options.h promises. */
#include <math.h>
#include "plan/plan.h"
#include "zbsched/clock.h"

void zbi_plan_report(const struct zb_options *opt, const char *step,
                     int done, double best, double since)
{
    double took = zb_clock_now() - since;

    /* A step of a second or more: reports keep a second apart. */
    if (!opt || !opt->progress || took < 1.0)
        return;
    opt->progress(&(struct zb_progress){
                      .phase = ZB_PROGRESS_STEP, .step = step,
                      .done = done, .objective = best,
                      .elapsed = took },
                  opt->progress_ctx);
}
