/* measure_util.h - what the files of profile_import.h share inside the
 * library: a sample set's spread and the output unit. */
#ifndef ZBSCHED_MEASURE_UTIL_H
#define ZBSCHED_MEASURE_UTIL_H

#include "zbsched/profile_import.h"

/* Median, p10 and p90 of v[0..n-1] (sorted here; linear between ranks,
 * as zbexec's --profile-out), each divided by scale. */
struct zb_spread zbi_spread_of(double *v, int n, double scale);

/* Microseconds in one unit ("us", "ms", "s"); 0 for another name. */
double zbi_unit_us(const char *unit);

/* Allocate m's entries (n of them, zeroed) and set its shape. */
void zbi_measured_alloc(struct zb_measured *m, int n);

#endif
