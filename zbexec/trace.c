/* trace.c - --trace and --trace-predicted: Chrome trace-event JSON (opens
 * in Perfetto), for a run or for the simulator's timeline of the schedule,
 * so the two open side by side.
 *
 * A process per rank with a compute thread and a communication thread,
 * slices named by op, stage and microbatch, each message as an async span
 * from post to completion and a flow arrow from the pass that made the
 * data to the pass that used it (none where both ends fall on one
 * microsecond: tied_flows()). Timestamps are whole microseconds, for the
 * reason src/trace.c gives. */
#include <assert.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "exec.h"
#include "zbsched/io.h"
#include "zbsched/json.h"
#include "zbsched/trace.h"
#include "zbsched/xalloc.h"

enum { TID_COMPUTE, TID_COMM };

static void metadata(FILE *f, int rank, const char *what)
{
    fprintf(f, "{\"ph\": \"M\", \"name\": \"process_name\", \"pid\": %d, "
            "\"args\": {\"name\": \"rank %d%s\"}},\n", rank, rank, what);
    fprintf(f, "{\"ph\": \"M\", \"name\": \"process_sort_index\", "
            "\"pid\": %d, \"args\": {\"sort_index\": %d}},\n", rank, rank);
    fprintf(f, "{\"ph\": \"M\", \"name\": \"thread_name\", \"pid\": %d, "
            "\"tid\": %d, \"args\": {\"name\": \"compute\"}},\n", rank,
            TID_COMPUTE);
    fprintf(f, "{\"ph\": \"M\", \"name\": \"thread_name\", \"pid\": %d, "
            "\"tid\": %d, \"args\": {\"name\": \"communication\"}},\n",
            rank, TID_COMM);
}

/* Host milliseconds to whole microseconds: a slice's ts and end are each
 * rounded, so slices that keep apart on the clock keep apart here. */
static long long tick(double ms)
{
    return llround(ms * 1e3);
}

/* The args name the op as zbsched's predicted trace does (op, stage, mb,
 * chunk; iter counts from 0), so `zbsched render --realized` reads it. */
static void slice(FILE *f, const struct exec *x, int tid, const char *name,
                  const char *cat, double start_ms, double end_ms, int i)
{
    const struct zb_op *op = &x->ops->ops[i];
    long long ts = tick(start_ms);

    fprintf(f, "{\"ph\": \"X\", \"name\": \"%s\", \"cat\": \"%s\", "
            "\"pid\": %d, \"tid\": %d, \"ts\": %lld, \"dur\": %lld, "
            "\"args\": {\"op\": \"%s\", \"stage\": %d, \"mb\": %d, "
            "\"chunk\": %d, \"iter\": %d, \"index\": %d}},\n", name, cat,
            x->rank, tid, ts, tick(end_ms) - ts, zb_op_kind_name(op->kind),
            op->stage, op->mb, zb_profile_stage_chunk(x->p, op->stage),
            x->iter, i);
}

/* Each event is one line; flow events open with these, which is how
 * trace_write() finds them to put every start before every end. */
#define FLOW_START "{\"ph\": \"s\""
#define FLOW_END "{\"ph\": \"f\""

/* One end of a transfer's arrow, at the start of the compute slice that
 * made the data (start) or used it (end: it runs once the wait for the
 * message is over), in that slice's thread and category, which is where
 * DevTools binds it; "bp": "e" binds the end to that slice elsewhere. */
static void flow(FILE *f, bool start, long id, int rank, const char *name,
                 double ms)
{
    fprintf(f, "%s, \"id\": %ld, \"name\": \"%s\", \"cat\": \"compute\", "
            "\"pid\": %d, \"tid\": %d, \"ts\": %lld%s},\n",
            start ? FLOW_START : FLOW_END, id, name, rank, TID_COMPUTE,
            tick(ms), start ? "" : ", \"bp\": \"e\"");
}

static void async_span(FILE *f, long id, int rank, const char *name,
                       double start_ms, double end_ms)
{
    fprintf(f, "{\"ph\": \"b\", \"id\": %ld, \"name\": \"%s\", \"cat\": "
            "\"in flight\", \"pid\": %d, \"tid\": %d, \"ts\": %lld},\n", id,
            name, rank, TID_COMM, tick(start_ms));
    fprintf(f, "{\"ph\": \"e\", \"id\": %ld, \"name\": \"%s\", \"cat\": "
            "\"in flight\", \"pid\": %d, \"tid\": %d, \"ts\": %lld},\n", id,
            name, rank, TID_COMM, tick(end_ms));
}

static void op_name(const struct zb_op *op, char *buf, size_t size)
{
    static const char *const arrow[] = { "to", "from" };
    bool recv = op->kind == ZB_OP_RECV_F || op->kind == ZB_OP_RECV_B;

    if (zb_op_is_comm(op->kind))
        snprintf(buf, size, "%s s%d mb%d %s %d", zb_op_kind_name(op->kind),
                 op->stage, op->mb, arrow[recv], op->peer);
    else if (zb_op_is_collective(op->kind))
        snprintf(buf, size, "%s s%d", zb_op_kind_name(op->kind), op->stage);
    else
        snprintf(buf, size, "%s s%d mb%d", zb_op_kind_name(op->kind),
                 op->stage, op->mb);
}

/* One id per transfer and iteration: both ends compute the same. */
static long transfer_id(const struct zb_profile *p, int iter, int dir,
                        int stage, int mb)
{
    return ((long)(iter * 2 + dir) * (p->pp * p->vpp) + stage) *
               p->microbatches + mb;
}

/* The compute op of this rank that performs pass F (dir MSG_F) or B (a B
 * or a BW) of stage and mb: the schedule was validated, so it is there. */
static int pass_op(const struct exec *x, int dir, int stage, int mb)
{
    for (int j = 0; j < x->ops->n; j++) {
        const struct zb_op *op = &x->ops->ops[j];
        if (op->stage == stage && op->mb == mb &&
            (dir == MSG_F ? op->kind == ZB_OP_F
                          : op->kind == ZB_OP_B || op->kind == ZB_OP_BW))
            return j;
    }
    assert(!"a validated schedule computes every pass it transfers");
    return 0;
}

static void comm_events(struct exec *x, int i)
{
    static const char *const dirs[] = { "F", "B" };
    const struct zb_op *op = &x->ops->ops[i];
    const struct op_time *t = &x->t[i];
    const bool send = op->kind == ZB_OP_SEND_F || op->kind == ZB_OP_SEND_B;
    const int dir = op->kind == ZB_OP_SEND_F || op->kind == ZB_OP_RECV_F
                        ? MSG_F : MSG_B;
    const int from = send ? op->stage
                          : dir == MSG_F ? op->stage - 1 : op->stage + 1;
    const long id = transfer_id(x->p, x->iter, dir, from, op->mb);
    char name[96], what[96];

    /* Both ends of an arrow carry the transfer's name: viewers match
     * flow events by id, category and name. */
    snprintf(what, sizeof(what), "%s s%d mb%d", dirs[dir], from, op->mb);
    op_name(op, name, sizeof(name));
    async_span(x->trace, 2 * id + !send, x->rank, name, t->start, t->done);
    slice(x->trace, x, TID_COMM, name, "post", t->start, t->end, i);
    if (send) {
        flow(x->trace, true, id, x->rank, what,
             x->t[pass_op(x, dir, op->stage, op->mb)].start);
        return;
    }
    char wait[112];
    snprintf(wait, sizeof(wait), "wait %s", name);
    slice(x->trace, x, TID_COMM, wait, "wait", t->wait, t->done, i);
    flow(x->trace, false, id, x->rank, what,
         x->t[pass_op(x, dir, op->stage, op->mb)].start);
}

/* A collective as a message is drawn: its post, its time in flight (an
 * async span: two stages' collectives may be in flight together) and the
 * consumer's wait, if it waited. Async ids follow every transfer's; a
 * stage's reduces per microbatch share one, their spans one after the
 * other (the stage's next W waits for the previous reduce). */
static void collective_events(struct exec *x, int i)
{
    const struct zb_op *op = &x->ops->ops[i];
    const struct op_time *t = &x->t[i];
    const long transfers = 2L * x->opt.iters * 2 * x->nstages *
                           x->p->microbatches;
    const long id = transfers + ((long)x->iter * x->nstages + op->stage) * 3 +
                    (op->kind - ZB_OP_REDUCE_GRAD);
    char name[96], wait[112];

    op_name(op, name, sizeof(name));
    slice(x->trace, x, TID_COMM, name, "post", t->start, t->end, i);
    if (op->kind == ZB_OP_RESHARD)
        return;
    async_span(x->trace, id, x->rank, name, t->start, t->done);
    if (t->wait > 0) {
        snprintf(wait, sizeof(wait), "wait %s", name);
        slice(x->trace, x, TID_COMM, wait, "wait", t->wait, t->done, i);
    }
}

void trace_iteration(struct exec *x)
{
    char name[96];

    if (!x->opt.trace || x->replica != 0)   /* replica 0's trace only */
        return;
    if (!x->trace) {
        x->trace = open_memstream(&x->trace_buf, &x->trace_len);
        if (!x->trace) {
            /* Out of memory, like zb_xmalloc: not recoverable mid-run, and
             * the other ranks expect this one at the trace gather. */
            exec_error(x->rank, "cannot buffer the trace");
            MPI_Abort(MPI_COMM_WORLD, 1);
        }
        metadata(x->trace, x->rank, "");
    }
    for (int i = 0; i < x->ops->n; i++) {
        const struct zb_op *op = &x->ops->ops[i];
        if (zb_op_is_comm(op->kind)) {
            comm_events(x, i);
        } else if (zb_op_is_collective(op->kind)) {
            collective_events(x, i);
        } else if (op->kind != ZB_OP_STEP) {
            op_name(op, name, sizeof(name));
            slice(x->trace, x, TID_COMPUTE, name, "compute", x->t[i].start,
                  x->t[i].end, i);
        }
    }
}

/* A number a flow event's line carries after key ("\"id\": ", "\"ts\": "):
 * every flow line has both, so the first match is on that line. */
static long long field(const char *line, const char *key)
{
    return strtoll(strstr(line, key) + strlen(key), NULL, 10);
}

/* One end of a transfer's arrow: its id and ts. */
struct flow_ts {
    long long id, ts;
};

static int by_flow_id(const void *a, const void *b)
{
    long long x = ((const struct flow_ts *)a)->id;
    long long y = ((const struct flow_ts *)b)->id;

    return (x > y) - (x < y);
}

static bool is_line(const char *s, const char *prefix)
{
    return !strncmp(s, prefix, strlen(prefix));
}

/* The line after s's in text ending at end (end if s's is the last). */
static const char *next_line(const char *s, const char *end)
{
    const char *e = memchr(s, '\n', (size_t)(end - s));

    return e ? e + 1 : end;
}

/* The transfers (sorted by id) whose arrow would end at or before
 * its start's ts: times are whole microseconds, and between passes that
 * take less than one a transfer can too. Viewers key a flow's events by
 * ts and drop such an arrow, so the file leaves it out. */
static struct flow_ts *tied_flows(const char *text, size_t len, int *n)
{
    struct flow_ts *start = NULL, *tied;
    int ns = 0, cap = 0;

    *n = 0;
    for (const char *s = text; s < text + len; s = next_line(s, text + len))
        if (is_line(s, FLOW_START)) {
            zb_xgrow((void **)&start, &cap, ns + 1, sizeof(*start));
            start[ns++] = (struct flow_ts){ field(s, "\"id\": "),
                                            field(s, "\"ts\": ") };
        }
    qsort(start, (size_t)ns, sizeof(*start), by_flow_id);
    tied = zb_xcalloc((size_t)ns + 1, sizeof(*tied));
    for (const char *s = text; s < text + len;
         s = next_line(s, text + len)) {
        struct flow_ts end, *st;
        if (!is_line(s, FLOW_END))
            continue;
        end = (struct flow_ts){ field(s, "\"id\": "), field(s, "\"ts\": ") };
        st = bsearch(&end, start, (size_t)ns, sizeof(*start), by_flow_id);
        if (st && end.ts <= st->ts)
            tied[(*n)++] = end;
    }
    free(start);
    /* Ends come in rank order, not by id. */
    qsort(tied, (size_t)*n, sizeof(*tied), by_flow_id);
    return tied;
}

/* Writes the events of text (one a line) that open with prefix, except
 * the flows of the tied transfers, or with keep false those that open
 * with neither flow prefix. */
static void put_lines(FILE *f, const char *text, size_t len,
                      const char *prefix, bool keep,
                      const struct flow_ts *tied, int ntied)
{
    for (const char *s = text, *e; s < text + len; s = e) {
        bool flow = is_line(s, FLOW_START) || is_line(s, FLOW_END);
        e = next_line(s, text + len);
        if (keep && is_line(s, prefix)) {
            struct flow_ts key = { field(s, "\"id\": "), 0 };
            if (!bsearch(&key, tied, (size_t)ntied, sizeof(*tied),
                         by_flow_id))
                fwrite(s, 1, (size_t)(e - s), f);
        } else if (!keep && !flow) {
            fwrite(s, 1, (size_t)(e - s), f);
        }
    }
}

static const char *const tail =
    "{\"ph\": \"M\", \"name\": \"process_sort_index\", \"pid\": 0, "
    "\"args\": {\"sort_index\": 0}}\n]}\n";

static void head(FILE *f, const struct exec *x, const char *kind)
{
    fputs("{\"displayTimeUnit\": \"ms\", \"otherData\": {\"schedule\": ", f);
    zb_json_fput_str(f, x->sched.name);
    fprintf(f, ", \"timeline\": \"%s\", \"pp\": %d, \"microbatches\": "
            "%d},\n\"traceEvents\": [\n", kind, x->p->pp,
            x->p->microbatches);
}

int trace_write(struct exec *x, struct zb_error *err)
{
    int len, *lens = NULL, *offs = NULL, total = 0, rc;
    char *all = NULL, *text = NULL;
    size_t tlen = 0;
    FILE *f;

    watchdog_phase("gathering the trace");
    fflush(x->trace);
    len = (int)x->trace_len;
    if (x->rank == 0) {
        lens = zb_xcalloc((size_t)x->p->pp, sizeof(int));
        offs = zb_xcalloc((size_t)x->p->pp, sizeof(int));
    }
    MPI_Gather(&len, 1, MPI_INT, lens, 1, MPI_INT, 0, x->comm);
    if (x->rank == 0)
        for (int r = 0; r < x->p->pp; r++) {
            offs[r] = total;
            total += lens[r];
        }
    if (x->rank == 0) {
        all = zb_xmalloc((size_t)total + 1);
        all[total] = '\0';     /* field()'s strstr() stops here at worst */
    }
    rc = MPI_Gatherv(x->trace_buf, len, MPI_CHAR, all, lens, offs, MPI_CHAR,
                     0, x->comm);
    if (rc != MPI_SUCCESS)
        rc = exec_mpi_error(rc, "MPI_Gatherv", err);
    else if (x->rank == 0 && (f = open_memstream(&text, &tlen)) != NULL) {
        /* Slices, then every flow start, then every end: ranks are
         * gathered in order, and chrome://tracing drops an end it reads
         * before its start (a transfer to a lower rank). */
        int ntied;
        struct flow_ts *tied = tied_flows(all, (size_t)total, &ntied);

        head(f, x, "realized");
        put_lines(f, all, (size_t)total, NULL, false, tied, ntied);
        put_lines(f, all, (size_t)total, FLOW_START, true, tied, ntied);
        put_lines(f, all, (size_t)total, FLOW_END, true, tied, ntied);
        fputs(tail, f);
        free(tied);
        fclose(f);
        rc = zb_io_write_file(x->opt.trace, text, tlen, err);
    } else if (x->rank == 0) {
        rc = zb_error_set(err, ZB_EIO, "cannot buffer the trace");
    }
    free(text);
    free(all);
    free(lens);
    free(offs);
    return rc;
}

/* The simulator's timeline comes from the library's writer (the one
 * `zbsched render --trace` uses), so the two layouts cannot drift. */
int trace_write_predicted(const struct exec *x, const char *path,
                          struct zb_error *err)
{
    char *text = zb_trace_format(&x->sched, x->opt.time_unit * 1e3);
    int rc = zb_io_write_file(path, text, strlen(text), err);

    free(text);
    return rc;
}
