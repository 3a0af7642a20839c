/* onef1b.h - the 1F1B and interleaved 1F1B orders, which the ZB-H1 and
 * interleaved-ZB families reuse with the backward split. */
#ifndef ZBSCHED_ONEF1B_H
#define ZBSCHED_ONEF1B_H

#include "zbsched/generator.h"

void order_1f1b(const struct zb_profile *p, struct zb_schedule *s);
void order_interleaved(const struct zb_profile *p, struct zb_schedule *s);

#endif
