/* torch_csv_read.c - parse PyTorch's pipelining CSV (see torch.h): the
 * action grammar of `_Action.from_str`, then the stage-to-rank map
 * inferred from which row names each stage, as `_validate_schedule` does. */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "torch_csv.h"
#include "zbsched/torch.h"
#include "zbsched/xalloc.h"

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
 * only anchors the start: trailing text there is silently ignored).
 * Returns 1 with *out set for an action we keep as an op, 0 for one we
 * derive instead (UNSHARD, RESHARD, REDUCE_GRAD), or an error. */
static int parse_action(struct parser *ps, const char *cell, const char *s,
                        struct zb_op *out)
{
    struct zb_op op = { .peer = -1, .seq = -1, .mb = -1 };
    const struct torch_type *t;

    if (read_index(&s, &op.stage) < 0)
        return fail(ps, cell, "expected [stage][type][microbatch], e.g. 2F0");
    if (!(t = zbi_torch_type_at(s)))
        return fail(ps, cell, "unknown action type");
    s += strlen(t->name);
    if (*s && read_index(&s, &op.mb) < 0)
        return fail(ps, cell, "microbatch is not a number");
    if (*s)
        return fail(ps, cell, "unexpected text after the microbatch");
    if (note_stage(ps, cell, op.stage) < 0)
        return -1;
    if (t->role == TORCH_DERIVED) {
        /* Which way the file reduces; the importer checks the profile. */
        if (!strcmp(t->name, TORCH_REDUCE_GRAD)) {
            ps->c->reduce_per_mb |= op.mb >= 0;
            ps->c->reduce_per_step |= op.mb < 0;
        }
        return 0;
    }
    if (op.mb < 0)
        return fail(ps, cell, "needs a microbatch");
    op.kind = t->kind;
    *out = op;
    return 1;
}

/* Append op to this rank's row. */
static void add_op(struct parser *ps, const struct zb_op *op)
{
    if (zb_op_is_comm(op->kind))
        ps->c->comms = true;
    else if (op->mb + 1 > ps->c->microbatches)
        ps->c->microbatches = op->mb + 1;
    zb_op_list_push(&ps->c->rows[ps->rank], op);
}

/* OVERLAP_F_B: PyTorch overlaps an F and a B of two microbatches.
 * Exactly an F then an I is our overlapped FB op; any other content runs
 * one after the other, in the cell's order. */
static void add_overlap(struct parser *ps, const struct zb_op *ops, int n)
{
    if (n == 2 && ops[0].kind == ZB_OP_F && ops[1].kind == ZB_OP_B) {
        struct zb_op fb = ops[0];
        fb.kind = ZB_OP_FB;
        fb.b_stage = ops[1].stage;
        fb.b_mb = ops[1].mb;
        if (fb.b_mb + 1 > ps->c->microbatches)
            ps->c->microbatches = fb.b_mb + 1;
        add_op(ps, &fb);
        return;
    }
    for (int i = 0; i < n; i++)
        add_op(ps, &ops[i]);
}

/* The group actions, "(A;B;...)NAME": each NAME and what its kept
 * sub-actions become. */
static const struct {
    const char *name;
    void (*add)(struct parser *ps, const struct zb_op *ops, int n);
} groups[] = {
    { "OVERLAP_F_B", add_overlap },
};

static char *trim(char *s)
{
    char *e = s + strlen(s);

    while (isspace((unsigned char)*s))
        s++;
    while (e > s && isspace((unsigned char)e[-1]))
        *--e = '\0';
    return s;
}

static int parse_group(struct parser *ps, char *cell)
{
    char *close = strchr(cell, ')'), *sub, *save = NULL;
    struct zb_op *ops = NULL;
    int n = 0, cap = 0, given = 0, rc = 0;
    size_t k = 0;

    for (; close && k < sizeof(groups) / sizeof(groups[0]); k++)
        if (!strcmp(close + 1, groups[k].name))
            break;
    if (!close || k == sizeof(groups) / sizeof(groups[0]))
        return fail(ps, cell, "a group of actions must read "
                              "(A;B;...)OVERLAP_F_B");
    *close = '\0';
    /* As PyTorch splits it: each sub-action stripped of its spaces, an
     * empty one (";;", "( )") skipped. */
    for (sub = strtok_r(cell + 1, ";", &save); sub && rc >= 0;
         sub = strtok_r(NULL, ";", &save)) {
        sub = trim(sub);
        if (!*sub)
            continue;
        given++;
        zb_xgrow((void **)&ops, &cap, n + 1, sizeof(*ops));
        if ((rc = parse_action(ps, sub, sub, &ops[n])) > 0)
            n++;
    }
    if (rc >= 0 && given == 0)
        rc = fail(ps, groups[k].name, "a group holds no action");
    if (rc >= 0)
        groups[k].add(ps, ops, n);
    free(ops);
    return rc < 0 ? rc : 0;
}

static int parse_cell(struct parser *ps, char *cell)
{
    struct zb_op op;
    int rc;

    if (cell[0] == '(')
        return parse_group(ps, cell);
    if ((rc = parse_action(ps, cell, cell, &op)) > 0)
        add_op(ps, &op);
    return rc < 0 ? rc : 0;
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

/* Whether the line at s holds nothing but blanks. */
static bool blank_line(const char *s)
{
    s += strspn(s, " \t\r");
    return *s == '\n' || *s == '\0';
}

static int parse_rows(struct parser *ps, const char *text)
{
    const char *s = text;
    int cap = 0;

    for (int line = 1; *s; line++) {
        /* PyTorch's csv.reader makes every line a rank, a blank one a
         * rank without actions, so its rank count no longer matches the
         * world's; only the last line's newline ends no rank. */
        if (blank_line(s))
            return zb_error_set(ps->err, ZB_EPARSE, "line %d is blank: "
                                "PyTorch reads every line as a rank", line);
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

/* PyTorch's own count check, per pass: exactly one F, and exactly one B
 * (full backward) or one I and one W, for every stage and microbatch.
 * Said here in the file's terms; the simulator would only see a pass
 * that never comes. */
static int check_passes(struct parser *ps)
{
    struct zb_torch_csv *c = ps->c;
    size_t n = (size_t)c->stages * (size_t)c->microbatches;
    int (*seen)[4] = zb_xcalloc(n, sizeof(*seen));
    int rc = 0;

    for (int r = 0; r < c->pp; r++)
        for (int i = 0; i < c->rows[r].n; i++) {
            struct zb_op part[2];
            int np = zb_op_is_compute(c->rows[r].ops[i].kind)
                         ? zb_op_split(&c->rows[r].ops[i], part) : 0;
            for (int h = 0; h < np; h++)
                seen[(size_t)part[h].stage * (size_t)c->microbatches +
                     (size_t)part[h].mb][part[h].kind]++;
        }
    for (size_t k = 0; k < n && !rc; k++) {
        const int *x = seen[k];
        const char *why = x[ZB_OP_F] != 1 ? "needs exactly one F"
            : x[ZB_OP_BW] + x[ZB_OP_B] != 1
                ? "needs exactly one B or exactly one I"
            : x[ZB_OP_W] != x[ZB_OP_B]
                ? x[ZB_OP_B] ? "needs exactly one W after its I"
                             : "has a W, but its B computes the weight "
                               "gradient already"
            : NULL;
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
