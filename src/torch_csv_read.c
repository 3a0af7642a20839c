/* torch_csv_read.c - parse PyTorch's pipelining CSV (see torch.h): the
 * action grammar of `_Action.from_str`, then the stage-to-rank map
 * inferred from which row names each stage, as `_validate_schedule` does. */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "zbsched/torch.h"
#include "zbsched/xalloc.h"

/* PyTorch's computation types; `skip` ones have no op of ours. */
static const struct {
    const char *name;
    enum zb_op_kind kind;
    bool skip;
} types[] = {
    { "F", ZB_OP_F, false },           { "I", ZB_OP_B, false },
    { "B", ZB_OP_BW, false },          { "W", ZB_OP_W, false },
    { "SEND_F", ZB_OP_SEND_F, false }, { "RECV_F", ZB_OP_RECV_F, false },
    { "SEND_B", ZB_OP_SEND_B, false }, { "RECV_B", ZB_OP_RECV_B, false },
    { "UNSHARD", 0, true },            { "RESHARD", 0, true },
    { "REDUCE_GRAD", 0, true },
};

#define MAX_INDEX 1000000

struct parser {
    struct zb_torch_csv *c;
    int *stage_rank;            /* grows with the highest stage seen */
    int stage_cap;
    int rank, step;             /* where we are, for messages */
    struct zb_error *err;
};

static int fail(struct parser *ps, const char *cell, const char *why)
{
    return zb_error_set(ps->err, ZB_EPARSE, "rank %d, step %d: '%s': %s",
                        ps->rank, ps->step, cell, why);
}

static int read_index(const char **s, int *out)
{
    long v = 0;

    if (!isdigit((unsigned char)**s))
        return -1;
    for (; isdigit((unsigned char)**s); (*s)++)
        if ((v = v * 10 + (**s - '0')) > MAX_INDEX)
            return -1;
    *out = (int)v;
    return 0;
}

/* PyTorch's own map check: a stage belongs to the one row that names it. */
static int note_stage(struct parser *ps, const char *cell, int stage)
{
    char why[96];

    if (stage >= ps->stage_cap) {
        int old = ps->stage_cap;
        zb_xgrow((void **)&ps->stage_rank, &ps->stage_cap, stage + 1,
              sizeof(int));
        for (int s = old; s < ps->stage_cap; s++)
            ps->stage_rank[s] = -1;
    }
    if (ps->stage_rank[stage] >= 0 && ps->stage_rank[stage] != ps->rank) {
        snprintf(why, sizeof(why), "stage %d is already on rank %d", stage,
                 ps->stage_rank[stage]);
        return fail(ps, cell, why);
    }
    ps->stage_rank[stage] = ps->rank;
    if (stage + 1 > ps->c->stages)
        ps->c->stages = stage + 1;
    return 0;
}

/* [stage][type][microbatch]; the whole text must match (PyTorch's regex
 * only anchors the start: trailing text there is silently ignored). */
static int parse_action(struct parser *ps, const char *cell, const char *s)
{
    struct zb_op op = { .peer = -1, .seq = -1, .mb = -1 };
    size_t k, len = 0;

    if (read_index(&s, &op.stage) < 0)
        return fail(ps, cell, "expected [stage][type][microbatch], e.g. 2F0");
    for (k = 0; k < sizeof(types) / sizeof(types[0]); k++) {
        len = strlen(types[k].name);
        if (!strncmp(s, types[k].name, len))
            break;
    }
    if (k == sizeof(types) / sizeof(types[0]))
        return fail(ps, cell, "unknown action type");
    s += len;
    if (*s && read_index(&s, &op.mb) < 0)
        return fail(ps, cell, "microbatch is not a number");
    if (*s)
        return fail(ps, cell, "unexpected text after the microbatch");
    if (note_stage(ps, cell, op.stage) < 0)
        return -1;
    if (types[k].skip)
        return 0;
    if (op.mb < 0)
        return fail(ps, cell, "needs a microbatch");
    op.kind = types[k].kind;
    if (zb_op_is_comm(op.kind))
        ps->c->comms = true;
    else if (op.mb + 1 > ps->c->microbatches)
        ps->c->microbatches = op.mb + 1;
    zb_op_list_push(&ps->c->rows[ps->rank], &op);
    return 0;
}

/* "(0F1;1I0)OVERLAP_F_B": sub-actions run in order on this rank. */
static int parse_cell(struct parser *ps, char *cell)
{
    char *close, *sub, *save = NULL;

    if (cell[0] != '(')
        return parse_action(ps, cell, cell);
    if (!(close = strchr(cell, ')')) || strcmp(close + 1, "OVERLAP_F_B"))
        return fail(ps, cell, "a group of actions must read "
                              "(A;B;...)OVERLAP_F_B");
    *close = '\0';
    for (sub = strtok_r(cell + 1, ";", &save); sub;
         sub = strtok_r(NULL, ";", &save)) {
        while (isspace((unsigned char)*sub))
            sub++;
        if (parse_action(ps, sub, sub) < 0)
            return -1;
    }
    return 0;
}

/* One CSV field starting at *s: plain, or quoted with "" for a quote
 * (Python's csv module quotes only when needed). Leaves *s after it. */
static char *next_field(const char **s)
{
    const char *p = *s;
    /* An unquoted field ends at the next comma or newline; measuring only
     * that keeps a file of many cells linear. */
    size_t cap = (*p == '"' ? strlen(p) : strcspn(p, ",\n")) + 1, n = 0;
    char *f = zb_xmalloc(cap);

    if (*p == '"') {
        for (p++; *p && !(*p == '"' && p[1] != '"'); p++) {
            if (*p == '"')
                p++;
            f[n++] = *p;
        }
        if (*p == '"')
            p++;
    }
    for (; *p && *p != ',' && *p != '\n'; p++)
        if (*p != '\r')
            f[n++] = *p;
    f[n] = '\0';
    *s = p;
    return f;
}

static char *trim(char *s)
{
    char *e = s + strlen(s);

    while (isspace((unsigned char)*s))
        s++;
    while (e > s && isspace((unsigned char)e[-1]))
        *--e = '\0';
    return s;
}

static int parse_rows(struct parser *ps, const char *text)
{
    const char *s = text;
    int cap = 0;

    while (*s) {
        ps->rank = ps->c->pp;
        zb_xgrow((void **)&ps->c->rows, &cap, ps->c->pp + 1,
              sizeof(*ps->c->rows));
        memset(&ps->c->rows[ps->c->pp++], 0, sizeof(*ps->c->rows));
        for (ps->step = 0;; ps->step++) {
            char *field = next_field(&s);
            char *cell = trim(field);
            int rc = *cell ? parse_cell(ps, cell) : 0;
            free(field);
            if (rc < 0)
                return rc;
            if (*s != ',')
                break;
            s++;
        }
        if (*s == '\n')
            s++;
        /* Blank lines at the end are not ranks. */
        if (strspn(s, "\r\n \t") == strlen(s))
            break;
    }
    if (ps->c->pp == 0)
        return zb_error_set(ps->err, ZB_EPARSE, "no rows");
    return 0;
}

/* Our placements are the only stage-to-rank maps a profile can state. */
static int infer_placement(struct parser *ps)
{
    struct zb_torch_csv *c = ps->c;
    struct zb_profile probe = { .pp = c->pp };
    bool loop = true, v = c->vpp == 2;

    for (int s = 0; s < c->stages; s++)
        if (ps->stage_rank[s] < 0)
            return zb_error_set(ps->err, ZB_EPARSE, "stage %d appears on no "
                                "rank (stages 0 to %d are named)", s,
                                c->stages - 1);
    for (int s = 0; s < c->stages; s++) {
        probe.placement = ZB_PLACEMENT_LOOP;
        loop = loop && zb_profile_stage_rank(&probe, s) == ps->stage_rank[s];
        probe.placement = ZB_PLACEMENT_V;
        v = v && zb_profile_stage_rank(&probe, s) == ps->stage_rank[s];
    }
    if (!loop && !v)
        return zb_error_set(ps->err, ZB_EUNSUPPORTED, "the stage-to-rank map "
                            "is neither loop (stage s on rank s %% %d) nor v "
                            "placement", c->pp);
    c->placement = loop ? ZB_PLACEMENT_LOOP : ZB_PLACEMENT_V;
    return 0;
}

/* PyTorch's own count check, per pass: one F, and one B (full backward)
 * or one I and one W, for every stage and microbatch. Said here in the
 * file's terms; the simulator would only see a pass that never comes. */
static int check_passes(struct parser *ps)
{
    struct zb_torch_csv *c = ps->c;
    size_t n = (size_t)c->stages * (size_t)c->microbatches;
    int (*seen)[4] = zb_xcalloc(n, sizeof(*seen));
    int rc = 0;

    for (int r = 0; r < c->pp; r++)
        for (int i = 0; i < c->rows[r].n; i++) {
            const struct zb_op *op = &c->rows[r].ops[i];
            if (zb_op_is_compute(op->kind))
                seen[(size_t)op->stage * (size_t)c->microbatches +
                     (size_t)op->mb][op->kind]++;
        }
    for (size_t k = 0; k < n && !rc; k++) {
        const int *x = seen[k];
        const char *why = x[ZB_OP_F] != 1 ? "needs one F"
            : x[ZB_OP_BW] + x[ZB_OP_B] != 1 ? "needs one B or one I"
            : x[ZB_OP_W] != x[ZB_OP_B] ? "needs one W after its I" : NULL;
        if (why)
            rc = zb_error_set(ps->err, ZB_EPARSE, "stage %d microbatch %d "
                              "%s (microbatches 0 to %d are named)",
                              (int)(k / (size_t)c->microbatches),
                              (int)(k % (size_t)c->microbatches), why,
                              c->microbatches - 1);
    }
    free(seen);
    return rc;
}

/* A transfer's peer holds the neighbouring stage it names. */
static int set_peers(struct parser *ps)
{
    struct zb_torch_csv *c = ps->c;

    for (int r = 0; r < c->pp; r++)
        for (int i = 0; i < c->rows[r].n; i++) {
            struct zb_op *op = &c->rows[r].ops[i];
            int other = op->kind == ZB_OP_SEND_F || op->kind == ZB_OP_RECV_B
                            ? op->stage + 1 : op->stage - 1;
            if (!zb_op_is_comm(op->kind))
                continue;
            if (other < 0 || other >= c->stages)
                return zb_error_set(ps->err, ZB_EPARSE, "rank %d: %s stage "
                                    "%d mb %d: no stage %d to transfer with",
                                    r, zb_op_kind_name(op->kind), op->stage,
                                    op->mb, other);
            op->peer = ps->stage_rank[other];
        }
    return 0;
}

int zb_torch_csv_parse(const char *text, struct zb_torch_csv *out,
                       struct zb_error *err)
{
    struct parser ps = { .c = out, .err = err };
    int rc;

    memset(out, 0, sizeof(*out));
    if ((rc = parse_rows(&ps, text)) < 0)
        goto done;
    if (out->stages == 0 || out->microbatches == 0) {
        rc = zb_error_set(err, ZB_EPARSE, "no compute actions (F, I, B, W)");
        goto done;
    }
    if (out->stages % out->pp) {
        rc = zb_error_set(err, ZB_EPARSE, "%d stages do not divide among "
                          "%d ranks", out->stages, out->pp);
        goto done;
    }
    /* check_passes() counts every pass in a table: the profile's cap
     * first, so a small file cannot ask for a huge one. */
    if (3.0 * out->stages * out->microbatches > ZB_MAX_PASSES) {
        rc = zb_error_set(err, ZB_EPARSE, "%d stages by %d microbatches is "
                          "too large (at most %d passes)", out->stages,
                          out->microbatches, ZB_MAX_PASSES);
        goto done;
    }
    out->vpp = out->stages / out->pp;
    if ((rc = infer_placement(&ps)) == 0 && (rc = check_passes(&ps)) == 0)
        rc = set_peers(&ps);
done:
    free(ps.stage_rank);
    return rc;
}

void zb_torch_csv_release(struct zb_torch_csv *c)
{
    if (!c || !c->rows)
        return;
    for (int r = 0; r < c->pp; r++)
        free(c->rows[r].ops);
    free(c->rows);
    c->rows = NULL;
}
