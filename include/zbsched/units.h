/* units.h - quantities as users write them: sizes ("80GiB", "1.9GB"),
 * bandwidths ("50GB/s") and times ("5us"), read with one-line errors that
 * name the flag or field, and printed back with their unit.
 *
 * Sizes: B, KB, MB, GB, TB (powers of 1000), KiB, MiB, GiB, TiB (powers
 * of 1024); a plain number is bytes. Bandwidths: a size per second
 * ("/s"); a plain number is bytes per second. Times: us, ms, s; a plain
 * number is in the caller's default unit. Shared by `zbsched plan` and the
 * profile reader (--m-b 1.9GiB, --mem-limit 80GiB). */
#ifndef ZBSCHED_UNITS_H
#define ZBSCHED_UNITS_H

#include <stddef.h>
#include "zbsched/error.h"

/* A decimal number at the start of s ("12", "-1.5", "2e-3", ".5"):
 * optional sign, digits with an optional point, optional exponent. Hex
 * ("0x10"), "nan" and "inf" are not numbers to a user, so they are
 * refused here, the one number reader of flags and unit texts. *end is
 * the first character after it; -1 when s does not start with one or it
 * overflows. */
int zb_units_scan_number(const char *s, double *out, const char **end);

/* The whole of s is one such number; -1 otherwise ("", "12abc", "0x10"). */
int zb_units_parse_number(const char *s, double *out);

/* The time units a model or profile may name ("time_unit"). */
enum zb_time_unit {
    ZB_TIME_US,
    ZB_TIME_MS,
    ZB_TIME_S
};

/* "us", "ms" or "s" into *out; ZB_EINVAL naming what otherwise
 * ("time_unit must be us, ms or s, got 'min'"). */
int zb_time_unit_parse(const char *what, const char *s,
                       enum zb_time_unit *out, struct zb_error *err);
const char *zb_time_unit_name(enum zb_time_unit u);
/* Seconds in one unit (1e-6, 1e-3, 1). */
double zb_time_unit_seconds(enum zb_time_unit u);

/* A size in bytes, >= 0 and finite. what names the flag or field in the
 * error: "--gpu-mem: '80GX' is not a size (a number with B, KB, MB, GB,
 * TB, KiB, MiB, GiB or TiB)". */
int zb_units_parse_size(const char *what, const char *s, double *bytes,
                        struct zb_error *err);

/* A bandwidth in bytes per second, > 0 ("50GB/s", "400GiB/s", "1e10"). */
int zb_units_parse_bandwidth(const char *what, const char *s,
                             double *bytes_per_s, struct zb_error *err);

/* A time >= 0 in seconds ("5us", "0.01ms", "2s"); a plain number is in
 * dflt. */
int zb_units_parse_time(const char *what, const char *s,
                        enum zb_time_unit dflt, double *seconds,
                        struct zb_error *err);

/* Bytes as GiB with one decimal and no unit ("71.2"), the form of the
 * memory summaries ("71.2 GiB of 80 GiB (model state 40.0, ...)"). */
const char *zb_units_gib(double bytes, char *buf, size_t size);

/* A size with the binary unit that fits it ("512 MiB", "71.2 GiB",
 * "4096 B"): three significant digits at most, no exponent. */
const char *zb_units_format_size(double bytes, char *buf, size_t size);

/* A time in unit u with four significant digits and the unit
 * ("1234 ms", "1.262 s", "0.5 us"): never an exponent. */
const char *zb_units_format_time(double t, enum zb_time_unit u, char *buf,
                                 size_t size);

#endif
