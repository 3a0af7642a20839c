/* ilp_glpk.c - the calling thread's GLPK environment: silent, and with an
 * error hook that turns an internal GLPK failure (a failed assertion in the
 * simplex, an invalid call) into an error code instead of abort().
 *
 * GLPK keeps its environment per thread (Debian builds it with
 * _Thread_local), so each search worker arms its own hook. GLPK's manual
 * (glp_error_hook) allows leaving the failing call by longjmp, after which
 * the environment must be freed: every problem object of this thread goes
 * with it, so the caller must drop its models without touching them. */
#include <glpk.h>
#include <limits.h>
#include <setjmp.h>
#include <stdio.h>
#include <string.h>
#include "ilp.h"

/* GLPK's last two lines of output in this thread: on a failure they hold
 * the reason and the place ("Assertion failed: teta_lim >= 0.0", "Error
 * detected in file simplex/spxprim.c at line 663"). */
static _Thread_local char lines[2][ILP_GLPK_MSG_MAX];

static int keep_last(void *info, const char *s)
{
    size_t n = strlen(s);

    (void)info;
    while (n > 0 && (s[n - 1] == '\n' || s[n - 1] == ' '))
        n--;
    if (n > 0) {
        memcpy(lines[0], lines[1], sizeof(lines[0]));
        snprintf(lines[1], sizeof(lines[1]), "%.*s", (int)n, s);
    }
    return 1;               /* nonzero: GLPK prints nothing */
}

void zbi_ilp_glpk_quiet(void)
{
    glp_term_out(GLP_OFF);
    glp_term_hook(keep_last, NULL);
}

void zbi_ilp_glpk_done(void)
{
    glp_free_env();
}

int zbi_ilp_glpk_ms(double seconds)
{
    double ms = seconds * 1000;

    if (!(ms >= 1))             /* NaN too */
        return 1;
    return ms >= INT_MAX ? INT_MAX : (int)ms;
}

static void escape(void *info)
{
    longjmp(*(jmp_buf *)info, 1);
}

int zbi_ilp_glpk_run(int (*fn)(void *), void *arg, char *msg, size_t size)
{
    jmp_buf env;
    int rc;

    lines[0][0] = lines[1][0] = '\0';
    if (setjmp(env)) {
        if (msg && size)
            snprintf(msg, size, "GLPK failed: %s%s%s", lines[0],
                     lines[0][0] ? "; " : "",
                     lines[1][0] ? lines[1] : "internal error");
        glp_free_env();
        /* A new environment starts with output on stdout: mute it. */
        zbi_ilp_glpk_quiet();
        return ZB_ESOLVER;
    }
    glp_error_hook(escape, &env);
    rc = fn(arg);
    glp_error_hook(NULL, NULL);
    return rc;
}
