/* error.c - zb_strerror() from the X-macro list and the error buffer. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include "zbsched/error.h"

const char *zb_strerror(int code)
{
    switch (code) {
    case ZB_OK:
        return "success";
#define ZB_ERRNO_CASE(name, msg) case ZB_##name: return msg;
    ZB_ERRNO_MAP(ZB_ERRNO_CASE)
#undef ZB_ERRNO_CASE
    default:
        return "unknown error";
    }
}

int zb_error_set(struct zb_error *err, int code, const char *fmt, ...)
{
    if (err) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err->msg, sizeof(err->msg), fmt, ap);
        va_end(ap);
        err->code = code;
    }
    return code;
}

void zb_error_prefix(struct zb_error *err, const char *fmt, ...)
{
    char prefix[ZB_ERROR_MSG_MAX], old[ZB_ERROR_MSG_MAX];
    va_list ap;

    if (!err)
        return;
    va_start(ap, fmt);
    vsnprintf(prefix, sizeof(prefix), fmt, ap);
    va_end(ap);
    memcpy(old, err->msg, sizeof(old));
    /* Truncation keeps the start of the message, which names the subject. */
    size_t n = strlen(prefix);
    if (n > sizeof(err->msg) - 3)
        n = sizeof(err->msg) - 3;
    memcpy(err->msg, prefix, n);
    memcpy(err->msg + n, ": ", 2);
    size_t m = strlen(old);
    if (m > sizeof(err->msg) - n - 3)
        m = sizeof(err->msg) - n - 3;
    memcpy(err->msg + n + 2, old, m);
    err->msg[n + 2 + m] = '\0';
}
