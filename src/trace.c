/* trace.c - the predicted timeline as Chrome trace-event JSON, in the
 * track layout zbexec's --trace uses (docs/guide.md, "Trace layout"), so
 * predicted and realized runs open the same way in Perfetto. */
#include <math.h>
#include <stdlib.h>
#include "strbuf.h"
#include "zbsched/pass.h"
#include "zbsched/trace.h"
#include "zbsched/xalloc.h"

struct transfer {
    double start;       /* profile units */
    int op;             /* index in the rank's list */
    int lane;           /* thread id - 1 */
    long flow;          /* id shared by the SEND and its RECV */
};

static void add_time(struct strbuf *sb, const char *key, double t)
{
    sb_addf(sb, ", \"%s\": ", key);
    sb_add_num(sb, t);
}

static void add_metadata(struct strbuf *sb, int r, int lanes)
{
    sb_addf(sb, "  {\"ph\": \"M\", \"name\": \"process_name\", \"pid\": %d, "
            "\"tid\": 0, \"args\": {\"name\": \"rank %d\"}},\n"
            "  {\"ph\": \"M\", \"name\": \"process_sort_index\", \"pid\": %d, "
            "\"tid\": 0, \"args\": {\"sort_index\": %d}},\n"
            "  {\"ph\": \"M\", \"name\": \"thread_name\", \"pid\": %d, "
            "\"tid\": 0, \"args\": {\"name\": \"compute\"}}", r, r, r, r, r);
    for (int k = 0; k < lanes; k++)
        sb_addf(sb, ",\n  {\"ph\": \"M\", \"name\": \"thread_name\", "
                "\"pid\": %d, \"tid\": %d, \"args\": {\"name\": \"comm%s\"}}",
                r, k + 1, k ? " (overlapping)" : "");
}

/* The end of the pass a transfer carries and the flow id naming it: a
 * transfer is identified by its producer's pass. */
static void transfer_of(const struct zb_profile *p, const double *end,
                        const struct zb_op *op, double *start, long *flow)
{
    enum zb_pass k = op->kind == ZB_OP_SEND_F || op->kind == ZB_OP_RECV_F
                         ? ZB_PASS_F : ZB_PASS_B;
    int producer = op->stage;

    if (op->kind == ZB_OP_RECV_F)
        producer = op->stage - 1;
    else if (op->kind == ZB_OP_RECV_B)
        producer = op->stage + 1;
    *flow = zb_pass_index(p, k, producer, op->mb) + 1;
    *start = end[*flow - 1];
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
static int assign_lanes(struct transfer *t, int n, double dur)
{
    double *lane_end = NULL;
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
        lane_end[k] = t[i].start + dur;
        t[i].lane = k;
    }
    free(lane_end);
    return lanes;
}

static void add_compute(struct strbuf *sb, const struct zb_profile *p,
                        int r, const struct zb_op *op, double us)
{
    const char *kind = zb_op_kind_name(op->kind);

    sb_addf(sb, ",\n  {\"ph\": \"X\", \"name\": \"%s s%d mb%d\", \"cat\": "
            "\"compute\", \"pid\": %d, \"tid\": 0", kind, op->stage, op->mb,
            r);
    add_time(sb, "ts", op->start * us);
    add_time(sb, "dur", (op->end - op->start) * us);
    sb_addf(sb, ", \"args\": {\"op\": \"%s\", \"stage\": %d, \"mb\": %d, "
            "\"chunk\": %d", kind, op->stage, op->mb,
            zb_profile_stage_chunk(p, op->stage));
    if (op->kind == ZB_OP_FB)
        sb_addf(sb, ", \"b_stage\": %d, \"b_mb\": %d", op->b_stage,
                op->b_mb);
    sb_addf(sb, "}}");
}

static void add_transfer(struct strbuf *sb, const struct zb_profile *p,
                         int r, const struct zb_op *op,
                         const struct transfer *t, double us)
{
    const char *kind = zb_op_kind_name(op->kind);
    bool send = op->kind == ZB_OP_SEND_F || op->kind == ZB_OP_SEND_B;

    sb_addf(sb, ",\n  {\"ph\": \"X\", \"name\": \"%s s%d mb%d\", \"cat\": "
            "\"comm\", \"pid\": %d, \"tid\": %d", kind, op->stage, op->mb, r,
            t->lane + 1);
    add_time(sb, "ts", t->start * us);
    add_time(sb, "dur", p->comm * us);
    sb_addf(sb, ", \"args\": {\"op\": \"%s\", \"stage\": %d, \"mb\": %d, "
            "\"peer\": %d}}", kind, op->stage, op->mb, op->peer);
    /* The arrow starts in the SEND slice and ends in the RECV slice. */
    sb_addf(sb, ",\n  {\"ph\": \"%s\", %s\"name\": \"transfer\", \"cat\": "
            "\"transfer\", \"id\": %ld, \"pid\": %d, \"tid\": %d",
            send ? "s" : "f", send ? "" : "\"bp\": \"e\", ", t->flow, r,
            t->lane + 1);
    add_time(sb, "ts", t->start * us);
    sb_addf(sb, "}");
}

char *zb_trace_format(const struct zb_schedule *s, double us_per_unit)
{
    const struct zb_profile *p = &s->profile;
    long npass = zb_pass_count(p);
    double *end = zb_xmalloc((size_t)npass * sizeof(double));
    struct strbuf sb;

    for (int r = 0; r < p->pp; r++)
        for (int i = 0; i < s->ranks[r].n; i++) {
            const struct zb_op *op = &s->ranks[r].ops[i];
            struct zb_op part[2];
            int np = zb_op_is_compute(op->kind) ? zb_op_split(op, part) : 0;
            for (int h = 0; h < np; h++)
                end[zb_pass_index(p, zb_pass_of(part[h].kind),
                                  part[h].stage, part[h].mb)] = op->end;
        }
    sb_init(&sb);
    sb_addf(&sb, "{\"displayTimeUnit\": \"ms\",\n \"otherData\": "
            "{\"format\": \"zbsched-trace\", \"version\": 1, \"source\": "
            "\"predicted\", \"schedule\": ");
    sb_add_str(&sb, s->name);
    add_time(&sb, "us_per_unit", us_per_unit);
    sb_addf(&sb, "},\n \"traceEvents\": [\n");
    for (int r = 0; r < p->pp; r++) {
        const struct zb_op_list *l = &s->ranks[r];
        struct transfer *t = zb_xmalloc((size_t)(l->n + 1) * sizeof(*t));
        int nt = 0, lanes;

        for (int i = 0; i < l->n; i++)
            if (zb_op_is_comm(l->ops[i].kind)) {
                t[nt].op = i;
                transfer_of(p, end, &l->ops[i], &t[nt].start, &t[nt].flow);
                nt++;
            }
        lanes = assign_lanes(t, nt, p->comm);
        if (r)
            sb_addf(&sb, ",\n");
        add_metadata(&sb, r, lanes);
        for (int i = 0; i < l->n; i++)
            if (zb_op_is_compute(l->ops[i].kind))
                add_compute(&sb, p, r, &l->ops[i], us_per_unit);
        for (int k = 0; k < nt; k++)
            add_transfer(&sb, p, r, &l->ops[t[k].op], &t[k], us_per_unit);
        free(t);
    }
    sb_addf(&sb, "\n]}\n");
    free(end);
    return sb_detach(&sb);
}
