/* main.c - zbexec: read and validate the schedule, start the backend,
 * replay the iterations, then check, profile, trace and report.
 *
 * Errors every rank sees alike are printed once (rank 0) and exit
 * cleanly; a failure during the replay aborts every rank (see fail.c). */
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include "exec.h"
#include "zbsched/io.h"
#include "zbsched/json.h"
#include "zbsched/sim.h"
#include "zbsched/validate.h"
#include "zbsched/version.h"
#include "zbsched/xalloc.h"

enum { EXIT_OK = 0, EXIT_FAIL = 1, EXIT_USAGE = 2, GO_ON = -1 };

/* The engine runs one pass per op, so an overlapped FB runs as its F,
 * then its B. The transfers lowering put after the FB stay after both:
 * the comm sequence is the one the validator proved, and the compute
 * between is local. */
static void split_overlaps(struct zb_op_list *l)
{
    struct zb_op_list out = { 0 };

    for (int i = 0; i < l->n; i++) {
        struct zb_op part[2];
        int np = zb_op_split(&l->ops[i], part);
        for (int h = 0; h < np; h++)
            zb_op_list_push(&out, &part[h]);
    }
    free(l->ops);
    *l = out;
}

/* The schedule's text on every rank: world rank 0 reads the file and
 * sends the bytes to the others, so stdin ("-") works and every rank runs
 * the very same schedule. A rank whose peer failed to read gets
 * ZB_EIO; exec_agree() then reports rank 0's own reason. */
static int read_everywhere(struct exec *x, char **text, struct zb_error *err)
{
    int len = -1, rc = 0;

    *text = NULL;
    if (x->world == 0 &&
        (rc = zb_io_slurp(x->opt.schedule, text, err)) == 0)
        len = (int)strlen(*text);
    MPI_Bcast(&len, 1, MPI_INT, 0, MPI_COMM_WORLD);
    if (len < 0)
        return rc < 0 ? rc : zb_error_set(err, ZB_EIO, "rank 0 could not "
                                          "read '%s'", x->opt.schedule);
    if (x->world != 0)
        *text = zb_xmalloc((size_t)len + 1);
    MPI_Bcast(*text, len + 1, MPI_CHAR, 0, MPI_COMM_WORLD);
    return 0;
}

static int load(struct exec *x, struct zb_error *err)
{
    char *text = NULL;
    int rc;

    if ((rc = exec_backend_find(x->opt.backend, &x->be, err)) < 0)
        return rc;
    if ((rc = read_everywhere(x, &text, err)) < 0)
        return rc;
    rc = zb_json_parse_schedule(text, &x->sched, err);
    free(text);
    if (rc < 0)
        goto fail;
    x->p = &x->sched.profile;
    x->nstages = zb_profile_stages(x->p);
    x->dp = zb_dp_active(x->p) ? x->p->dp.degree : 1;
    if (x->p->pp * x->dp != x->nranks) {
        char shape[64] = "";
        if (x->dp > 1)
            snprintf(shape, sizeof(shape), " x dp %d = %d ranks", x->dp,
                     x->p->pp * x->dp);
        rc = zb_error_set(err, ZB_EINVAL, "the schedule has pp %d%s but %d "
                          "process%s started: run it with mpirun -np %d",
                          x->p->pp, shape, x->nranks,
                          x->nranks == 1 ? " was" : "es were",
                          x->p->pp * x->dp);
        goto fail;
    }
    /* World rank = replica * pp + pipeline rank (docs/zbexec.md). */
    x->rank = x->world % x->p->pp;
    x->replica = x->world / x->p->pp;
    if (x->dp > 1 && x->opt.synthetic) {
        rc = zb_error_set(err, ZB_EUNSUPPORTED, "--synthetic with dp %d: "
                          "synthetic mode does not emulate the "
                          "data-parallel collectives; run the model",
                          x->dp);
        goto fail;
    }
    if (x->opt.nan_stage >= x->nstages ||
        x->opt.nan_mb >= x->p->microbatches * x->dp) {
        rc = zb_error_set(err, ZB_EINVAL, "--inject-nan %d:%d: no such "
                          "stage and microbatch", x->opt.nan_stage,
                          x->opt.nan_mb);
        goto fail;
    }
    /* With --no-validate, only the shape without which the engine would
     * index out of bounds; the rest is left to the run-time checks. */
    rc = x->opt.validate ? zb_validate_schedule(&x->sched, err)
                         : zb_validate_shape(&x->sched, err);
    if (rc < 0)
        goto fail;
    /* Predicted measures; a --no-validate list may not simulate. */
    if ((rc = zb_sim_run(&x->sched, err)) < 0) {
        if (x->opt.validate)
            goto fail;
        if (x->world == 0)
            exec_warn(0, "no prediction: %s", err->msg);
        rc = 0;
    }
    split_overlaps(&x->sched.ranks[x->rank]);
    x->ops = &x->sched.ranks[x->rank];
    x->m = x->be->math;
    x->post_validation = x->sched.post_validation || x->opt.post_validation;
    return 0;
fail:
    zb_error_prefix(err, "'%s'", x->opt.schedule);
    return rc;
}

static void run(struct exec *x)
{
    struct zb_error err = { 0 };

    for (x->iter = 0; x->iter < x->opt.iters; x->iter++) {
        if (exec_iteration(x, &err) < 0)
            exec_abort(x, &err);
        measure_iteration(x);
        trace_iteration(x);
    }
    x->iter = x->opt.iters - 1;
}

/* Everything after the replay; returns the exit status. The replicas
 * run the same list: measures, profile and trace are replica 0's,
 * gathered on its pipeline communicator (x->comm). */
static int finish(struct exec *x)
{
    const bool first = x->replica == 0;
    struct zb_error err = { 0 };
    const char *check = NULL;
    int status = EXIT_OK, rc = 0;
    bool exact = false;

    if (x->opt.check) {
        rc = reference_check(x, &exact, &err);
        if (exec_agree(x->world, rc, &err) < 0) {
            check = "mismatch";
            status = EXIT_FAIL;
        } else {
            check = exact ? "exact" : "within tolerance";
        }
    }
    if (x->opt.profile_out) {
        rc = first ? profile_write(x, &err) : 0;
        if (exec_agree(x->world, rc, &err) < 0)
            status = EXIT_FAIL;
    }
    if (x->opt.trace) {
        rc = first ? trace_write(x, &err) : 0;
        if (exec_agree(x->world, rc, &err) < 0)
            status = EXIT_FAIL;
    }
    rc = first ? measure_report(x, check, &err) : 0;
    if (exec_agree(x->world, rc, &err) < 0)
        status = EXIT_FAIL;
    rc = measure_check_limit(x, &err);
    if (exec_agree(x->world, rc, &err) < 0)
        status = EXIT_FAIL;
    return status;
}

static int start(struct exec *x, int argc, char **argv)
{
    struct zb_error err = { 0 };
    int rc = opts_parse(argc, argv, &x->opt, &err);

    if (rc < 0) {
        if (x->world == 0)
            exec_error(0, "%s", err.msg);
        return EXIT_USAGE;
    }
    if (x->opt.help || x->opt.version) {
        if (x->world == 0 && x->opt.help)
            opts_usage(stdout);
        else if (x->world == 0)
            printf("zbexec %s\n", ZB_VERSION);
        return EXIT_OK;
    }
    rc = load(x, &err);
    if (!rc && x->world == 0 && x->opt.trace_predicted)
        rc = trace_write_predicted(x, x->opt.trace_predicted, &err);
    if (exec_agree(x->world, rc, &err) < 0)
        return EXIT_FAIL;
    /* Point-to-point within this replica's pipeline (ranks there are
     * pipeline ranks); collectives among the replicas of this pipeline
     * rank. With dp 1 the first is WORLD again, in the same order. */
    MPI_Comm_split(MPI_COMM_WORLD, x->replica, x->rank, &x->comm);
    MPI_Comm_set_errhandler(x->comm, MPI_ERRORS_RETURN);
    if (x->dp > 1) {
        MPI_Comm_split(MPI_COMM_WORLD, x->rank, x->replica, &x->dp_comm);
        MPI_Comm_set_errhandler(x->dp_comm, MPI_ERRORS_RETURN);
    }
    /* The watchdog first: a backend's setup may wait on its peers (NCCL's
     * is collective), and a peer that failed there must not hang us. */
    if (exec_agree(x->world, watchdog_start(x, &err), &err) < 0)
        return EXIT_FAIL;
    watchdog_phase("starting the backend");
    rc = x->be->init(x, &err);
    if (exec_agree(x->world, rc, &err) < 0)
        return EXIT_FAIL;
    rc = exec_state_init(x, &err);
    if (!rc)
        rc = coll_init(x, &err);
    if (exec_agree(x->world, rc, &err) < 0)
        return EXIT_FAIL;
    if (x->opt.synthetic)
        prctl(PR_SET_TIMERSLACK, 1UL);   /* wake at the deadline, not 50us
                                            later */
    MPI_Barrier(MPI_COMM_WORLD);
    x->epoch = exec_common_epoch(x->world, x->nranks);
    return GO_ON;
}

int main(int argc, char **argv)
{
    struct exec x = { 0 };
    int provided, status;

    /* MPI_THREAD_MULTIPLE: the watchdog thread may call MPI_Abort. */
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &x.world);
    MPI_Comm_size(MPI_COMM_WORLD, &x.nranks);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    x.rank = x.world;       /* until load() knows pp */
    x.dp = 1;
    x.comm = x.dp_comm = MPI_COMM_NULL;
    status = start(&x, argc, argv);
    if (status == GO_ON) {
        run(&x);
        status = finish(&x);
    }
    watchdog_stop();
    exec_release(&x);
    if (x.comm != MPI_COMM_NULL)
        MPI_Comm_free(&x.comm);
    if (x.dp_comm != MPI_COMM_NULL)
        MPI_Comm_free(&x.dp_comm);
    MPI_Finalize();
    return status;
}
