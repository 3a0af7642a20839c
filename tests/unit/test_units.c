/* test_units.c - sizes, bandwidths and times with units (units.h): the
 * powers of 1000 and 1024, plain numbers, and one-line errors naming the
 * flag. */
#include <criterion/criterion.h>
#include <math.h>
#include <string.h>
#include "zbsched/units.h"

static double size(const char *s)
{
    struct zb_error err = { 0 };
    double v = -1;

    cr_assert_eq(zb_units_parse_size("--gpu-mem", s, &v, &err), 0, "%s: %s",
                 s, err.msg);
    return v;
}

Test(units, sizes_take_decimal_and_binary_units)
{
    cr_assert_eq(size("80GiB"), 80.0 * 1073741824.0);
    cr_assert_eq(size("1.9GB"), 1.9e9);
    cr_assert_eq(size("512MiB"), 512.0 * 1048576.0);
    cr_assert_eq(size("4KB"), 4000);
    cr_assert_eq(size("4KiB"), 4096);
    cr_assert_eq(size("2TB"), 2e12);
    cr_assert_eq(size("1 GiB"), 1073741824.0);
    cr_assert_eq(size("3B"), 3);
}

Test(units, a_plain_number_is_bytes)
{
    cr_assert_eq(size("1024"), 1024);
    cr_assert_eq(size("6.7e7"), 6.7e7);
}

Test(units, a_bad_size_names_the_flag)
{
    struct zb_error err = { 0 };
    double v;

    cr_assert_lt(zb_units_parse_size("--gpu-mem", "80GX", &v, &err), 0);
    cr_assert(strstr(err.msg, "--gpu-mem: '80GX' is not a size"), "%s",
              err.msg);
    cr_assert_lt(zb_units_parse_size("--m-b", "80gib", &v, &err), 0);
    cr_assert_lt(zb_units_parse_size("--m-b", "", &v, &err), 0);
    cr_assert_lt(zb_units_parse_size("--m-b", "GiB", &v, &err), 0);
    cr_assert_lt(zb_units_parse_size("--m-b", "-1GiB", &v, &err), 0);
    cr_assert(strstr(err.msg, "--m-b must be >= 0"), "%s", err.msg);
    cr_assert_null(strchr(err.msg, '\n'));
}

Test(units, bandwidths_are_sizes_per_second)
{
    struct zb_error err = { 0 };
    double v;

    cr_assert_eq(zb_units_parse_bandwidth("--link-bw", "50GB/s", &v, &err),
                 0);
    cr_assert_eq(v, 5e10);
    cr_assert_eq(zb_units_parse_bandwidth("--link-bw", "1GiB/s", &v, &err),
                 0);
    cr_assert_eq(v, 1073741824.0);
    cr_assert_eq(zb_units_parse_bandwidth("--link-bw", "1e9", &v, &err), 0);
    cr_assert_eq(v, 1e9);
    cr_assert_lt(zb_units_parse_bandwidth("--link-bw", "50GB", &v, &err), 0);
    cr_assert(strstr(err.msg, "--link-bw: '50GB' is not a bandwidth"), "%s",
              err.msg);
    cr_assert_lt(zb_units_parse_bandwidth("--inter-bw", "0GB/s", &v, &err),
                 0);
    cr_assert(strstr(err.msg, "--inter-bw must be > 0"), "%s", err.msg);
}

Test(units, times_take_us_ms_s_or_the_default_unit)
{
    struct zb_error err = { 0 };
    double v;

    cr_assert_eq(zb_units_parse_time("--link-latency", "5us", ZB_TIME_MS, &v,
                                     &err), 0);
    cr_assert_float_eq(v, 5e-6, 1e-18);
    cr_assert_eq(zb_units_parse_time("--link-latency", "2", ZB_TIME_MS, &v,
                                     &err), 0);
    cr_assert_float_eq(v, 2e-3, 1e-15);
    cr_assert_eq(zb_units_parse_time("--link-latency", "1.5s", ZB_TIME_US,
                                     &v, &err), 0);
    cr_assert_eq(v, 1.5);
    cr_assert_lt(zb_units_parse_time("--link-latency", "5min", ZB_TIME_MS,
                                     &v, &err), 0);
    cr_assert(strstr(err.msg, "--link-latency: '5min' is not a time"), "%s",
              err.msg);
}

Test(units, time_units_parse_and_name)
{
    enum zb_time_unit u;
    struct zb_error err = { 0 };

    cr_assert_eq(zb_time_unit_parse("time_unit", "us", &u, &err), 0);
    cr_assert_eq(u, ZB_TIME_US);
    cr_assert_str_eq(zb_time_unit_name(ZB_TIME_S), "s");
    cr_assert_eq(zb_time_unit_seconds(ZB_TIME_MS), 1e-3);
    cr_assert_lt(zb_time_unit_parse("time_unit", "min", &u, &err), 0);
    cr_assert_str_eq(err.msg, "time_unit must be us, ms or s, got 'min'");
}

Test(units, formats_keep_the_unit_and_no_exponent)
{
    char b[48];

    cr_assert_str_eq(zb_units_gib(71.2 * 1073741824.0, b, sizeof(b)),
                     "71.2");
    cr_assert_str_eq(zb_units_format_size(512 * 1048576.0, b, sizeof(b)),
                     "512 MiB");
    cr_assert_str_eq(zb_units_format_size(4096, b, sizeof(b)), "4.00 KiB");
    cr_assert_str_eq(zb_units_format_size(100, b, sizeof(b)), "100 B");
    cr_assert_str_eq(zb_units_format_time(1261340, ZB_TIME_US, b, sizeof(b)),
                     "1261340 us");
    cr_assert_str_eq(zb_units_format_time(1.26134, ZB_TIME_S, b, sizeof(b)),
                     "1.261 s");
    cr_assert_str_eq(zb_units_format_time(39.7, ZB_TIME_MS, b, sizeof(b)),
                     "39.70 ms");
    cr_assert_null(strchr(zb_units_format_time(1e-5, ZB_TIME_MS, b,
                                               sizeof(b)), 'e'));
}
