/* watchdog.c - --timeout: a thread that aborts every rank when one
 * activity (an op of the list, waiting or running, or a named phase such
 * as the step's all-gather) lasts too long, naming the rank and the op.
 *
 * A thread, not checks inside the wait loops, so a rank stuck anywhere
 * (in MPI, NCCL or a pass) is still caught. */
#include <pthread.h>
#include <stdatomic.h>
#include <time.h>
#include "exec.h"

static struct {
    const struct exec *x;
    pthread_t thread;
    bool running;
    atomic_bool stop;
    atomic_long seq;                /* bumped by every change of activity */
    atomic_int op, phase;
    _Atomic(const char *) what;     /* a phase outside the list, or NULL */
} wd;

static void touch(void)
{
    atomic_fetch_add(&wd.seq, 1);
}

void watchdog_op(int op, enum wd_phase phase)
{
    atomic_store(&wd.op, op);
    atomic_store(&wd.phase, (int)phase);
    atomic_store(&wd.what, (const char *)NULL);
    touch();
}

void watchdog_phase(const char *what)
{
    atomic_store(&wd.what, what);
    touch();
}

static void fire(double waited)
{
    const struct exec *x = wd.x;
    const char *what = atomic_load(&wd.what);
    int op = atomic_load(&wd.op);
    char desc[96];

    if (what || op < 0 || op >= x->ops->n)
        exec_error(x->world, "watchdog: no progress for %.3g s (--timeout) "
                   "in iteration %d: %s", waited / 1e3, x->iter + 1,
                   what ? what : "between ops");
    else
        exec_error(x->world, "watchdog: no progress for %.3g s (--timeout) "
                   "in iteration %d: %s op %d (%s)", waited / 1e3,
                   x->iter + 1,
                   atomic_load(&wd.phase) == WD_WAIT ? "waiting for"
                                                     : "running",
                   op, zb_op_describe(&x->ops->ops[op], desc, sizeof(desc)));
    /* Open MPI kills every rank of the job from here (the process asked
     * for MPI_THREAD_MULTIPLE, so calling MPI from this thread is legal). */
    MPI_Abort(MPI_COMM_WORLD, 1);
}

static void *loop(void *arg)
{
    const double limit = wd.x->opt.timeout * 1e3;     /* ms */
    /* Poll at a tenth of the limit, at most every 100 ms. */
    const double poll = limit / 10 < 100 ? limit / 10 : 100;
    const struct timespec ts = { 0, (long)(poll * 1e6) };
    long last = -1;
    double since = exec_now();

    (void)arg;
    while (!atomic_load(&wd.stop)) {
        nanosleep(&ts, NULL);
        long seq = atomic_load(&wd.seq);
        double now = exec_now();
        if (seq != last) {
            last = seq;
            since = now;
        } else if (now - since > limit) {
            fire(now - since);
        }
    }
    return NULL;
}

int watchdog_start(struct exec *x, struct zb_error *err)
{
    wd.x = x;
    atomic_store(&wd.op, -1);
    atomic_store(&wd.what, "starting");
    if (x->opt.timeout <= 0)
        return 0;
    if (pthread_create(&wd.thread, NULL, loop, NULL) != 0)
        return zb_error_set(err, ZB_EDEVICE,
                            "cannot start the watchdog thread");
    wd.running = true;
    return 0;
}

void watchdog_stop(void)
{
    if (!wd.running)
        return;
    atomic_store(&wd.stop, true);
    pthread_join(wd.thread, NULL);
    wd.running = false;
}
