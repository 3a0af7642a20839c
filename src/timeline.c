/* timeline.c - realized timelines (read back from a trace or report);
 * their measures come from zb_measures_from_times() like the simulator's. */
#include <stdlib.h>
#include "zbsched/timeline.h"

void zb_timeline_release(struct zb_timeline *t)
{
    if (!t || !t->ranks)
        return;
    for (int r = 0; r < t->pp; r++)
        free(t->ranks[r].ops);
    free(t->ranks);
    t->ranks = NULL;
}
