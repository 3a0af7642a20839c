/* error.h - error codes and the caller-owned error detail buffer.
 *
 * A function that can fail returns 0 or a negative ZB_E* code and, when the
 * caller passed a struct zb_error, writes a one-line message into it.
 * Library code never prints: commands print err->msg through cli.c. */
#ifndef ZBSCHED_ERROR_H
#define ZBSCHED_ERROR_H

/* X-macro: name, message. Generates the enum and zb_strerror(). */
#define ZB_ERRNO_MAP(X)                                              \
    X(EINVAL, "invalid argument")                                    \
    X(EIO, "input/output error")                                     \
    X(EPARSE, "malformed input")                                     \
    X(ENOMEM_LIMIT, "memory limit too small")                        \
    X(EUNSUPPORTED, "not supported for this profile")                \
    X(EILLEGAL, "illegal schedule")                                  \
    X(EDEADLOCK, "schedule deadlocks")                               \
    X(EDEVICE, "device or communication failure")                    \
    X(ESOLVER, "solver failure")

enum zb_errno {
    ZB_OK = 0,
#define ZB_ERRNO_ENUM(name, msg) ZB_##name,
    ZB_ERRNO_FIRST_ = -1000,
    ZB_ERRNO_MAP(ZB_ERRNO_ENUM)
#undef ZB_ERRNO_ENUM
};

#define ZB_ERROR_MSG_MAX 512

struct zb_error {
    int code;                     /* last code set, 0 if none */
    char msg[ZB_ERROR_MSG_MAX];   /* one line, no trailing newline */
};

/* Short fixed description of a ZB_E* code. */
const char *zb_strerror(int code);

/* Fill err (if not NULL) with code and a printf-style message; returns code
 * so callers can write `return zb_error_set(err, ZB_EINVAL, "...")`. */
int zb_error_set(struct zb_error *err, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Prefix the message already in err with "prefix: " (context from callers). */
void zb_error_prefix(struct zb_error *err, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

#endif
