/* units.c - sizes, bandwidths and times with units (units.h): one number,
 * then an optional unit, nothing else; every error one line naming the
 * flag or field. */
#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "zbsched/units.h"

struct unit {
    const char *name;
    double scale;
};

/* A unit names the whole rest of the text ("80GiB", not "80GiBs"). */
static const struct unit size_units[] = {
    { "B", 1 }, { "KB", 1e3 }, { "MB", 1e6 }, { "GB", 1e9 }, { "TB", 1e12 },
    { "KiB", 1024.0 }, { "MiB", 1048576.0 }, { "GiB", 1073741824.0 },
    { "TiB", 1099511627776.0 }, { NULL, 0 },
};

static const struct unit time_units[] = {
    { "us", 1e-6 }, { "ms", 1e-3 }, { "s", 1 }, { NULL, 0 },
};

#define SIZE_UNITS "B, KB, MB, GB, TB, KiB, MiB, GiB or TiB"

int zb_time_unit_parse(const char *what, const char *s,
                       enum zb_time_unit *out, struct zb_error *err)
{
    static const enum zb_time_unit all[] = { ZB_TIME_US, ZB_TIME_MS,
                                             ZB_TIME_S };

    for (int i = 0; i < 3; i++)
        if (!strcmp(s, zb_time_unit_name(all[i]))) {
            *out = all[i];
            return 0;
        }
    return zb_error_set(err, ZB_EINVAL, "%s must be us, ms or s, got '%s'",
                        what, s);
}

const char *zb_time_unit_name(enum zb_time_unit u)
{
    return u == ZB_TIME_US ? "us" : u == ZB_TIME_MS ? "ms" : "s";
}

double zb_time_unit_seconds(enum zb_time_unit u)
{
    return u == ZB_TIME_US ? 1e-6 : u == ZB_TIME_MS ? 1e-3 : 1;
}

/* The length of the decimal number at the start of s, 0 if none. */
static size_t decimal_length(const char *s)
{
    size_t i = 0, digits = 0;

    if (s[i] == '+' || s[i] == '-')
        i++;
    for (; isdigit((unsigned char)s[i]); i++)
        digits++;
    if (s[i] == '.')
        for (i++; isdigit((unsigned char)s[i]); i++)
            digits++;
    if (!digits)
        return 0;
    /* An exponent counts only with its digits ("2e" is 2 then "e"). */
    if (s[i] == 'e' || s[i] == 'E') {
        size_t j = i + 1;
        if (s[j] == '+' || s[j] == '-')
            j++;
        if (isdigit((unsigned char)s[j])) {
            while (isdigit((unsigned char)s[j]))
                j++;
            i = j;
        }
    }
    return i;
}

int zb_units_scan_number(const char *s, double *out, const char **end)
{
    size_t n = decimal_length(s);
    char buf[64];

    if (!n || n >= sizeof(buf))
        return -1;
    /* strtod on a copy of just the decimal text: it cannot read on into
     * a hex or inf spelling. */
    memcpy(buf, s, n);
    buf[n] = '\0';
    *out = strtod(buf, NULL);
    if (!isfinite(*out))        /* overflow: 1e999 */
        return -1;
    *end = s + n;
    return 0;
}

int zb_units_parse_number(const char *s, double *out)
{
    const char *end;

    return zb_units_scan_number(s, out, &end) < 0 || *end ? -1 : 0;
}

/* The number at the start of s and the unit after it (optionally one
 * space between): *unit points into s, "" when there is none. */
static int split_number(const char *s, double *v, const char **unit)
{
    const char *end;

    if (zb_units_scan_number(s, v, &end) < 0)
        return -1;
    if (*end == ' ')
        end++;
    *unit = end;
    return 0;
}

static int scale_of(const struct unit *table, const char *name, double *out)
{
    for (int i = 0; table[i].name; i++)
        if (!strcmp(table[i].name, name)) {
            *out = table[i].scale;
            return 0;
        }
    return -1;
}

int zb_units_parse_size(const char *what, const char *s, double *bytes,
                        struct zb_error *err)
{
    const char *unit;
    double v, scale = 1;

    if (split_number(s, &v, &unit) < 0 ||
        (*unit && scale_of(size_units, unit, &scale) < 0))
        return zb_error_set(err, ZB_EINVAL, "%s: '%s' is not a size (a "
                            "number with " SIZE_UNITS ")", what, s);
    if (v < 0)
        return zb_error_set(err, ZB_EINVAL, "%s must be >= 0, got '%s'",
                            what, s);
    *bytes = v * scale;
    return 0;
}

int zb_units_parse_bandwidth(const char *what, const char *s,
                             double *bytes_per_s, struct zb_error *err)
{
    const char *unit;
    double v, scale = 1;
    char name[8];
    size_t n;

    if (split_number(s, &v, &unit) < 0)
        goto bad;
    if (*unit) {
        n = strlen(unit);
        if (n < 3 || n - 2 >= sizeof(name) || strcmp(unit + n - 2, "/s"))
            goto bad;
        memcpy(name, unit, n - 2);
        name[n - 2] = '\0';
        if (scale_of(size_units, name, &scale) < 0)
            goto bad;
    }
    if (!(v > 0))
        return zb_error_set(err, ZB_EINVAL, "%s must be > 0, got '%s'",
                            what, s);
    *bytes_per_s = v * scale;
    return 0;
bad:
    return zb_error_set(err, ZB_EINVAL, "%s: '%s' is not a bandwidth (a "
                        "number with " SIZE_UNITS " per second: 50GB/s)",
                        what, s);
}

int zb_units_parse_time(const char *what, const char *s,
                        enum zb_time_unit dflt, double *seconds,
                        struct zb_error *err)
{
    const char *unit;
    double v, scale = zb_time_unit_seconds(dflt);

    if (split_number(s, &v, &unit) < 0 ||
        (*unit && scale_of(time_units, unit, &scale) < 0))
        return zb_error_set(err, ZB_EINVAL, "%s: '%s' is not a time (a "
                            "number with us, ms or s)", what, s);
    if (v < 0)
        return zb_error_set(err, ZB_EINVAL, "%s must be >= 0, got '%s'",
                            what, s);
    *seconds = v * scale;
    return 0;
}

const char *zb_units_gib(double bytes, char *buf, size_t size)
{
    snprintf(buf, size, "%.1f", bytes / 1073741824.0);
    return buf;
}

/* v with four significant digits and no exponent (v >= 0). */
static void four_digits(double v, char *buf, size_t size)
{
    int decimals = v >= 1000 ? 0 : v >= 100 ? 1 : v >= 10 ? 2 : 3;

    if (v > 0 && v < 1)
        decimals = 3 + (int)-floor(log10(v));
    if (decimals > 12)
        decimals = 12;
    snprintf(buf, size, "%.*f", decimals, v);
}

const char *zb_units_format_size(double bytes, char *buf, size_t size)
{
    static const char *names[] = { "B", "KiB", "MiB", "GiB", "TiB" };
    int k = 0;
    double v = bytes;
    char num[48];

    while (k < 4 && fabs(v) >= 1024) {
        v /= 1024;
        k++;
    }
    if (k == 0)
        snprintf(num, sizeof(num), "%.0f", v);
    else
        snprintf(num, sizeof(num), "%.*f", fabs(v) >= 100 ? 0 :
                 fabs(v) >= 10 ? 1 : 2, v);
    snprintf(buf, size, "%s %s", num, names[k]);
    return buf;
}

const char *zb_units_format_time(double t, enum zb_time_unit u, char *buf,
                                 size_t size)
{
    char num[48];

    four_digits(fabs(t), num, sizeof(num));
    snprintf(buf, size, "%s%s %s", t < 0 ? "-" : "", num,
             zb_time_unit_name(u));
    return buf;
}
