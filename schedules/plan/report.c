/* report.c - zb's plan tells the caller's progress callback as each of
 * its steps ends (how long a huge profile's collection or search took),
 * from the calling thread, as options.h promises. */
#include <math.h>
#include "plan/plan.h"
#include "zbsched/clock.h"

void zbi_plan_report(const struct zb_options *opt, const char *step,
                     int done, double best, double since)
{
    if (!opt || !opt->progress)
        return;
    opt->progress(&(struct zb_progress){
                      .phase = ZB_PROGRESS_STEP, .step = step,
                      .done = done, .objective = best,
                      .elapsed = zb_clock_now() - since },
                  opt->progress_ctx);
}
