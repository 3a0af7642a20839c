/* clock.h - the library's one clock: monotonic seconds, what every
 * wall-clock deadline (the `ilp` row's time limit, the solver's, the
 * local search's stop flag) is measured in. Timing of schedules never
 * reads it: results do not depend on the machine's speed. */
#ifndef ZBSCHED_CLOCK_H
#define ZBSCHED_CLOCK_H

/* Seconds since an arbitrary fixed point (CLOCK_MONOTONIC): only
 * differences mean anything. */
double zb_clock_now(void);

#endif
