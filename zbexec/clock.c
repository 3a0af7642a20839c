/* clock.c - the host clock of zbexec: monotonic milliseconds, the run's
 * epoch shared by every rank, sleeping to an absolute deadline (synthetic
 * passes) and the back-off of wait loops. */
#include <errno.h>
#include <math.h>
#include <sched.h>
#include <time.h>
#include "exec.h"

double exec_now(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}

/* An absolute deadline, not a relative sleep: a late wake-up does not
 * push back the next pass's deadline computation. */
void exec_sleep_until(double ms)
{
    struct timespec ts;

    if (ms <= 0)
        return;
    ts.tv_sec = (time_t)(ms / 1e3);
    ts.tv_nsec = (long)((ms - (double)ts.tv_sec * 1e3) * 1e6);
    if (ts.tv_nsec >= 1000000000L) {
        ts.tv_sec++;
        ts.tv_nsec -= 1000000000L;
    }
    while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) ==
           EINTR)
        ;
}

/* Wait loops poll (MPI_Test, cudaEventQuery). Yield at first for a quick
 * answer, then sleep briefly: with more ranks than cores (the tests run 8
 * on 2) a spinning rank would steal the core its peer needs. */
void exec_pause(int spins)
{
    if (spins < 200) {
        sched_yield();
        return;
    }
    struct timespec ts = { 0, 20000 };
    nanosleep(&ts, NULL);
}

/* Whether this rank shares rank 0's node, and so its clock: one
 * CLOCK_MONOTONIC serves every process of a machine. */
static bool on_rank0_node(void)
{
    MPI_Comm node;
    int world, first;

    MPI_Comm_rank(MPI_COMM_WORLD, &world);
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0,
                        MPI_INFO_NULL, &node);
    MPI_Allreduce(&world, &first, 1, MPI_INT, MPI_MIN, node);
    MPI_Comm_free(&node);
    return first == 0;
}

/* One instant on every rank's clock: rank 0's reading, carried to each
 * rank's clock by that clock's offset from rank 0's. On rank 0's node the
 * clock is the same and the offset 0; elsewhere it is estimated as NTP
 * does, from the ping-pong of least round trip (off by under half of it).
 * A barrier alone leaves its exit skew, milliseconds on a loaded machine,
 * and a trace then shows messages used before they were sent.
 * Collective; nothing else may be in flight. */
double exec_common_epoch(int rank, int nranks)
{
    enum { ROUNDS = 8, TAG = 0x2b };
    double offset = 0, best = INFINITY, epoch;

    for (int r = 1; r < nranks; r++)
        for (int k = 0; k < ROUNDS; k++) {
            double t0, t1, t2;
            if (rank == 0) {
                MPI_Recv(&t0, 1, MPI_DOUBLE, r, TAG, MPI_COMM_WORLD,
                         MPI_STATUS_IGNORE);
                t1 = exec_now();
                MPI_Send(&t1, 1, MPI_DOUBLE, r, TAG, MPI_COMM_WORLD);
            } else if (rank == r) {
                t0 = exec_now();
                MPI_Send(&t0, 1, MPI_DOUBLE, 0, TAG, MPI_COMM_WORLD);
                MPI_Recv(&t1, 1, MPI_DOUBLE, 0, TAG, MPI_COMM_WORLD,
                         MPI_STATUS_IGNORE);
                t2 = exec_now();
                if (t2 - t0 < best) {
                    best = t2 - t0;
                    offset = t1 - (t0 + t2) / 2;
                }
            }
        }
    if (on_rank0_node())
        offset = 0;
    epoch = exec_now();
    MPI_Bcast(&epoch, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD);
    return epoch - offset;
}
