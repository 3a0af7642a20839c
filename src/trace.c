/* trace.c - the predicted timeline as Chrome trace-event JSON, in the
 * track layout zbexec's --trace uses (docs/guide.md, "Trace layout"), so
 * predicted and realized runs open the same way in every viewer; with
 * data parallelism, the collectives on their own thread. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include "strbuf.h"
#include "zbsched/pass.h"
#include "zbsched/timing.h"
#include "zbsched/trace.h"
#include "zbsched/xalloc.h"

/* Times are written in whole microseconds, each slice's ts and end
 * rounded from the profile's times: viewers add ts and dur in doubles, so
 * fractional times let one slice end an ulp after the next one starts,
 * and DevTools drops one of the two. Rounding is monotonic, so slices
 * that touch or keep apart in profile time still do. */
static long long tick(double t, double us)
{
    return llround(t * us);
}

/* A slice of a communication thread: a transfer or a collective. */
struct transfer {
    long long start, end;   /* ticks */
    int op;                 /* index in the rank's list */
    int lane;               /* its lane among its kind's threads */
};

/* The passes a transfer joins: SEND_F(s) carries F(s) to F(s+1), SEND_B(s)
 * carries B(s) to B(s-1) (a BW performs the B pass); a RECV names the
 * stage on its own rank, the consumer's. */
static void transfer_passes(const struct zb_profile *p, const struct zb_op *op,
                            long *from, long *to)
{
    switch (op->kind) {
    case ZB_OP_SEND_F:
        *from = zb_pass_index(p, ZB_PASS_F, op->stage, op->mb);
        *to = zb_pass_index(p, ZB_PASS_F, op->stage + 1, op->mb);
        break;
    case ZB_OP_RECV_F:
        *from = zb_pass_index(p, ZB_PASS_F, op->stage - 1, op->mb);
        *to = zb_pass_index(p, ZB_PASS_F, op->stage, op->mb);
        break;
    case ZB_OP_SEND_B:
        *from = zb_pass_index(p, ZB_PASS_B, op->stage, op->mb);
        *to = zb_pass_index(p, ZB_PASS_B, op->stage - 1, op->mb);
        break;
    default:
        *from = zb_pass_index(p, ZB_PASS_B, op->stage + 1, op->mb);
        *to = zb_pass_index(p, ZB_PASS_B, op->stage, op->mb);
        break;
    }
}

/* How long a transfer op's edge takes: SEND_F(s) and RECV_B(s) cross
 * the boundary below stage s, RECV_F(s) and SEND_B(s) the one above. */
static double transfer_time(const struct zb_profile *p, const struct zb_op *op)
{
    bool down = op->kind == ZB_OP_SEND_F || op->kind == ZB_OP_RECV_B;
    int lo = down ? op->stage : op->stage - 1;

    return zb_timing_comm(p, lo, lo + 1);
}

static void add_metadata(struct strbuf *sb, int r, int lanes, int coll)
{
    zbi_sb_addf(sb, "  {\"ph\": \"M\", \"name\": \"process_name\", "
            "\"pid\": %d, \"tid\": 0, \"args\": {\"name\": \"rank %d\"}},\n"
            "  {\"ph\": \"M\", \"name\": \"process_sort_index\", \"pid\": %d, "
            "\"tid\": 0, \"args\": {\"sort_index\": %d}},\n"
            "  {\"ph\": \"M\", \"name\": \"thread_name\", \"pid\": %d, "
            "\"tid\": 0, \"args\": {\"name\": \"compute\"}}", r, r, r, r, r);
    for (int k = 0; k < lanes; k++)
        zbi_sb_addf(sb, ",\n  {\"ph\": \"M\", \"name\": \"thread_name\", "
                "\"pid\": %d, \"tid\": %d, \"args\": {\"name\": \"comm%s\"}}",
                r, k + 1, k ? " (overlapping)" : "");
    for (int k = 0; k < coll; k++)
        zbi_sb_addf(sb, ",\n  {\"ph\": \"M\", \"name\": \"thread_name\", "
                "\"pid\": %d, \"tid\": %d, \"args\": {\"name\": "
                "\"collectives%s\"}}", r, lanes + k + 1,
                k ? " (overlapping)" : "");
}

static int by_start(const void *a, const void *b)
{
    const struct transfer *x = a, *y = b;

    if (x->start != y->start)
        return x->start < y->start ? -1 : 1;
    return x->op - y->op;
}

/* Slices on one thread must nest; transfers that overlap in time go to
 * further lanes (threads 2, 3, ...), first fit in start order. */
static int assign_lanes(struct transfer *t, int n)
{
    long long *lane_end = NULL;
    int lanes = 0, cap = 0;

    qsort(t, (size_t)n, sizeof(*t), by_start);
    for (int i = 0; i < n; i++) {
        int k = 0;
        while (k < lanes && lane_end[k] > t[i].start)
            k++;
        if (k == lanes) {
            zb_xgrow((void **)&lane_end, &cap, lanes + 1, sizeof(*lane_end));
            lanes++;
        }
        lane_end[k] = t[i].end;
        t[i].lane = k;
    }
    free(lane_end);
    return lanes;
}

static void add_compute(struct strbuf *sb, const struct zb_profile *p,
                        int r, const struct zb_op *op, double us)
{
    const char *kind = zb_op_kind_name(op->kind);
    long long ts = tick(op->start, us);

    zbi_sb_addf(sb, ",\n  {\"ph\": \"X\", \"name\": \"%s s%d mb%d\", \"cat\": "
            "\"compute\", \"pid\": %d, \"tid\": 0, \"ts\": %lld, \"dur\": "
            "%lld, \"args\": {\"op\": \"%s\", \"stage\": %d, \"mb\": %d, "
            "\"chunk\": %d", kind, op->stage, op->mb, r, ts,
            tick(op->end, us) - ts, kind, op->stage, op->mb,
            zb_profile_stage_chunk(p, op->stage));
    if (op->kind == ZB_OP_FB)
        zbi_sb_addf(sb, ", \"b_stage\": %d, \"b_mb\": %d", op->b_stage,
                op->b_mb);
    zbi_sb_addf(sb, "}}");
}

static void add_transfer(struct strbuf *sb, int r, const struct zb_op *op,
                         const struct transfer *t)
{
    const char *kind = zb_op_kind_name(op->kind);

    zbi_sb_addf(sb, ",\n  {\"ph\": \"X\", \"name\": \"%s s%d mb%d\", \"cat\": "
            "\"comm\", \"pid\": %d, \"tid\": %d, \"ts\": %lld, \"dur\": %lld, "
            "\"args\": {\"op\": \"%s\", \"stage\": %d, \"mb\": %d, \"peer\": "
            "%d}}", kind, op->stage, op->mb, r, t->lane + 1, t->start,
            t->end - t->start, kind, op->stage, op->mb, op->peer);
}

/* A data-parallel collective at the times the simulator gave it (its
 * own stream, sim.h), on a collectives thread after the transfers'. */
static void add_collective(struct strbuf *sb, int r, const struct zb_op *op,
                           const struct transfer *t, int first_tid)
{
    const char *kind = zb_op_kind_name(op->kind);
    char mb[24] = "";

    if (op->mb >= 0)
        snprintf(mb, sizeof(mb), " mb%d", op->mb);
    zbi_sb_addf(sb, ",\n  {\"ph\": \"X\", \"name\": \"%s s%d%s\", \"cat\": "
            "\"collective\", \"pid\": %d, \"tid\": %d, \"ts\": %lld, "
            "\"dur\": %lld, \"args\": {\"op\": \"%s\", \"stage\": %d",
            kind, op->stage, mb, r, first_tid + t->lane, t->start,
            t->end - t->start, kind, op->stage);
    if (op->mb >= 0)
        zbi_sb_addf(sb, ", \"mb\": %d", op->mb);
    zbi_sb_addf(sb, ", \"unit\": %d}}", op->unit);
}

/* One end of the arrow from the pass that makes a transfer's data to the
 * pass that consumes it: at the start of that pass's slice, in its
 * thread and category, which is where DevTools looks for it ("bp": "e"
 * binds the end to that slice, not to the next one, elsewhere). */
static void add_flow(struct strbuf *sb, bool start, const struct zb_op *send,
                     long id, int pid, long long ts)
{
    zbi_sb_addf(sb, ",\n  {\"ph\": \"%s\", %s\"name\": \"%s s%d mb%d\", "
            "\"cat\": \"compute\", \"id\": %ld, \"pid\": %d, \"tid\": 0, "
            "\"ts\": %lld}",
            start ? "s" : "f", start ? "" : "\"bp\": \"e\", ",
            send->kind == ZB_OP_SEND_F ? "F" : "B", send->stage, send->mb,
            id, pid, ts);
}

/* All flow starts, then all ends: chrome://tracing drops an end it reads
 * before its start, whatever the times. A flow is named by the pass that
 * makes its data; its id is that pass's index + 1. */
static void add_flows(struct strbuf *sb, const struct zb_schedule *s,
                      const double *start, double us)
{
    const struct zb_profile *p = &s->profile;

    for (int end = 0; end < 2; end++)
        for (int r = 0; r < p->pp; r++)
            for (int i = 0; i < s->ranks[r].n; i++) {
                const struct zb_op *op = &s->ranks[r].ops[i];
                long from, to;
                if (op->kind != ZB_OP_SEND_F && op->kind != ZB_OP_SEND_B)
                    continue;
                transfer_passes(p, op, &from, &to);
                add_flow(sb, !end, op, from + 1, end ? op->peer : r,
                         tick(start[end ? to : from], us));
            }
}

char *zb_trace_format(const struct zb_schedule *s, double us_per_unit)
{
    const struct zb_profile *p = &s->profile;
    long npass = zb_pass_count(p);
    double *start = zb_xmalloc((size_t)npass * sizeof(double));
    double *end = zb_xmalloc((size_t)npass * sizeof(double));
    struct strbuf sb;

    for (int r = 0; r < p->pp; r++)
        for (int i = 0; i < s->ranks[r].n; i++) {
            const struct zb_op *op = &s->ranks[r].ops[i];
            struct zb_op part[2];
            int np = zb_op_is_compute(op->kind) ? zb_op_split(op, part) : 0;
            for (int h = 0; h < np; h++) {
                long k = zb_pass_index(p, zb_pass_of(part[h].kind),
                                       part[h].stage, part[h].mb);
                start[k] = op->start;
                end[k] = op->end;
            }
        }
    zbi_sb_init(&sb);
    zbi_sb_addf(&sb, "{\"displayTimeUnit\": \"ms\",\n \"otherData\": "
            "{\"format\": \"zbsched-trace\", \"version\": 1, \"source\": "
            "\"predicted\", \"schedule\": ");
    zbi_sb_add_str(&sb, s->name);
    zbi_sb_addf(&sb, ", \"us_per_unit\": ");
    zbi_sb_add_num(&sb, us_per_unit);
    zbi_sb_addf(&sb, "},\n \"traceEvents\": [\n");
    for (int r = 0; r < p->pp; r++) {
        const struct zb_op_list *l = &s->ranks[r];
        struct transfer *t = zb_xmalloc((size_t)(l->n + 1) * sizeof(*t));
        struct transfer *c = zb_xmalloc((size_t)(l->n + 1) * sizeof(*c));
        int nt = 0, nc = 0, lanes, coll_lanes;

        for (int i = 0; i < l->n; i++)
            if (zb_op_is_comm(l->ops[i].kind)) {
                long from, to;
                transfer_passes(p, &l->ops[i], &from, &to);
                t[nt].op = i;
                t[nt].start = tick(end[from], us_per_unit);
                t[nt].end = tick(end[from] + transfer_time(p, &l->ops[i]),
                                 us_per_unit);
                nt++;
            } else if (zb_op_is_collective(l->ops[i].kind)) {
                c[nc].op = i;
                c[nc].start = tick(l->ops[i].start, us_per_unit);
                c[nc].end = tick(l->ops[i].end, us_per_unit);
                nc++;
            }
        lanes = assign_lanes(t, nt);
        coll_lanes = assign_lanes(c, nc);
        if (r)
            zbi_sb_addf(&sb, ",\n");
        add_metadata(&sb, r, lanes, coll_lanes);
        for (int i = 0; i < l->n; i++)
            if (zb_op_is_compute(l->ops[i].kind))
                add_compute(&sb, p, r, &l->ops[i], us_per_unit);
        for (int k = 0; k < nt; k++)
            add_transfer(&sb, r, &l->ops[t[k].op], &t[k]);
        for (int k = 0; k < nc; k++)
            add_collective(&sb, r, &l->ops[c[k].op], &c[k], lanes + 1);
        free(t);
        free(c);
    }
    add_flows(&sb, s, start, us_per_unit);
    zbi_sb_addf(&sb, "\n]}\n");
    free(start);
    free(end);
    return zbi_sb_detach(&sb);
}
