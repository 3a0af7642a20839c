/* onef1b.h - the 1F1B and interleaved 1F1B orders, which the ZB-H1 and
 * interleaved-ZB families reuse with the backward split. */
#ifndef ZBSCHED_ONEF1B_H
#define ZBSCHED_ONEF1B_H

#include "zbsched/generator.h"

void zbi_order_1f1b(const struct zb_profile *p, struct zb_schedule *s);
/* Interleaved 1F1B with the smallest extra warm-up that runs. */
void zbi_order_interleaved(const struct zb_profile *p, struct zb_schedule *s);
/* 0 when zbi_order_interleaved() finishes in reasonable time for p; else
 * ZB_EUNSUPPORTED saying why (its warm-up search when pp does not divide
 * m grows as pp * vpp^2 * m^2 at small pp). */
int zbi_interleaved_check_size(const struct zb_profile *p, struct zb_error *err);
/* The interleaved order with extra forwards added to every rank's
 * warm-up (zbi_order_interleaved() picks extra; tests compare). */
void zbi_order_interleaved_warmup(const struct zb_profile *p,
                              struct zb_schedule *s, int extra);

#endif
