/* test_torch_csv.c - PyTorch pipelining CSV: the action grammar, the
 * stage-to-rank inference, round trips of every family in both forms,
 * and PyTorch's own 1F1B and Interleaved1F1B written in its grammar. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "helpers.h"
#include "zbsched/pass.h"
#include "zbsched/torch.h"

/* Parse text and build the schedule for sh; fails the test on error. */
static void import(const char *text, const struct shape *sh,
                   struct zb_schedule *out)
{
    struct zb_torch_csv c;
    struct zb_profile p;
    struct zb_error err = { 0 };

    cr_assert_eq(zb_torch_csv_parse(text, &c, &err), 0, "%s", err.msg);
    make_profile(sh, &p);
    cr_assert_eq(zb_torch_csv_schedule(&c, &p, "torch", out, &err), 0, "%s",
                 err.msg);
    zb_profile_release(&p);
    zb_torch_csv_release(&c);
}

static void assert_same_ops_and_peers(const struct zb_schedule *a,
                                      const struct zb_schedule *b,
                                      const char *what)
{
    for (int r = 0; r < a->profile.pp; r++) {
        cr_assert_eq(a->ranks[r].n, b->ranks[r].n, "%s: rank %d", what, r);
        for (int i = 0; i < a->ranks[r].n; i++) {
            const struct zb_op *x = &a->ranks[r].ops[i];
            const struct zb_op *y = &b->ranks[r].ops[i];
            cr_assert(x->kind == y->kind && x->stage == y->stage &&
                      x->mb == y->mb && x->peer == y->peer,
                      "%s: rank %d op %d", what, r, i);
        }
    }
}

/* I is our B, B our BW; spaces around cells and idle cells vanish. */
Test(torch_csv, reads_each_action_type)
{
    static const enum zb_op_kind want[] = {
        ZB_OP_F, ZB_OP_F, ZB_OP_B, ZB_OP_W, ZB_OP_BW,
    };
    struct zb_torch_csv c;
    struct zb_error err = { 0 };

    cr_assert_eq(zb_torch_csv_parse("0F0, 0F1 ,,0I0,0W0,0B1\r\n", &c, &err),
                 0, "%s", err.msg);
    cr_assert_eq(c.pp, 1);
    cr_assert_eq(c.microbatches, 2);
    cr_assert_eq(c.rows[0].n, 5);
    for (int i = 0; i < 5; i++)
        cr_assert_eq(c.rows[0].ops[i].kind, want[i], "op %d", i);
    cr_assert_eq(c.rows[0].ops[4].mb, 1);
    zb_torch_csv_release(&c);
}

Test(torch_csv, reads_transfers_and_sets_their_peers)
{
    struct zb_torch_csv c;
    struct zb_error err = { 0 };

    cr_assert_eq(zb_torch_csv_parse(
                     "0F0,0SEND_F0,0RECV_B0,0I0,0W0\n"
                     "1RECV_F0,1F0,1I0,1SEND_B0,1W0\n", &c, &err), 0, "%s",
                 err.msg);
    cr_assert(c.comms);
    cr_assert_eq(c.rows[0].ops[1].kind, ZB_OP_SEND_F);
    cr_assert_eq(c.rows[0].ops[1].peer, 1);
    cr_assert_eq(c.rows[0].ops[2].kind, ZB_OP_RECV_B);
    cr_assert_eq(c.rows[1].ops[0].kind, ZB_OP_RECV_F);
    cr_assert_eq(c.rows[1].ops[0].peer, 0);
    cr_assert_eq(c.rows[1].ops[3].kind, ZB_OP_SEND_B);
    zb_torch_csv_release(&c);
}

/* FSDP and data-parallel actions have no op of ours; OVERLAP_F_B runs
 * its sub-actions in order. */
Test(torch_csv, drops_fsdp_actions_and_expands_overlap)
{
    struct zb_torch_csv c;
    struct zb_error err = { 0 };

    cr_assert_eq(zb_torch_csv_parse("0UNSHARD,0F0,0F1,(0B0;0I1)OVERLAP_F_B,"
                                    "0W1,0REDUCE_GRAD,0RESHARD\n", &c, &err),
                 0, "%s", err.msg);
    cr_assert_eq(c.rows[0].n, 5);
    cr_assert_eq(c.rows[0].ops[2].kind, ZB_OP_BW);
    cr_assert_eq(c.rows[0].ops[3].kind, ZB_OP_B);
    cr_assert_eq(c.rows[0].ops[3].mb, 1);
    zb_torch_csv_release(&c);
}

/* PyTorch strips the spaces around each sub-action of a group and skips
 * an empty one, so a hand-written cell with spaces means what it says. */
Test(torch_csv, reads_overlap_cells_with_spaces_as_pytorch_does)
{
    static const char *const cells[] = {
        "(0F1;0I0)OVERLAP_F_B", "(0F1 ; 0I0)OVERLAP_F_B",
        "( 0F1\t;  0I0 )OVERLAP_F_B", "(;0F1;;0I0; )OVERLAP_F_B",
        " (0F1 ;0I0)OVERLAP_F_B ",
    };

    for (size_t k = 0; k < sizeof(cells) / sizeof(cells[0]); k++) {
        struct zb_torch_csv c;
        struct zb_error err = { 0 };
        char csv[128];

        snprintf(csv, sizeof(csv), "0F0,%s,0W0,0I1,0W1\n", cells[k]);
        cr_assert_eq(zb_torch_csv_parse(csv, &c, &err), 0, "'%s': %s",
                     cells[k], err.msg);
        cr_assert_eq(c.rows[0].n, 5, "'%s'", cells[k]);
        cr_assert_eq(c.rows[0].ops[1].kind, ZB_OP_FB, "'%s'", cells[k]);
        cr_assert_eq(c.rows[0].ops[1].mb, 1);
        cr_assert_eq(c.rows[0].ops[1].b_mb, 0);
        zb_torch_csv_release(&c);
    }
}

static const struct {
    const char *csv, *msg;
} bad[] = {
    { "0F0,0X0\n", "rank 0, step 1: '0X0': unknown action type" },
    { "F0\n", "rank 0, step 0: 'F0': expected [stage][type][microbatch], "
              "e.g. 2F0" },
    { "0F0,0B0x\n", "rank 0, step 1: '0B0x': unexpected text after the "
                    "microbatch" },
    { "0F\n", "rank 0, step 0: '0F': needs a microbatch" },
    { "0F0,(0B0)SWAP\n", "rank 0, step 1: '(0B0)SWAP': a group of actions "
                         "must read (A;B;...)OVERLAP_F_B" },
    { "0F0,( ; )OVERLAP_F_B,0B0\n", "rank 0, step 1: 'OVERLAP_F_B': a "
                                    "group holds no action" },
    { "0F0,(0B0 x)OVERLAP_F_B\n", "rank 0, step 1: '0B0 x': unexpected "
                                  "text after the microbatch" },
    { "0F0,0B0\n0F1\n", "rank 1, step 0: '0F1': stage 0 is already on "
                        "rank 0" },
    { "0UNSHARD\n", "no compute actions (F, I, B, W)" },
    { "0F0,0B0,2F0,2B0\n1F0,1B0\n", "3 stages do not divide among 2 "
                                    "ranks" },
    { "0F0,0B0\n1F0,1B0,3F0,3B0\n", "stage 2 appears on no rank (stages "
                                    "0 to 3 are named)" },
    { "1F0,1B0\n0F0,0B0\n", "the stage-to-rank map is neither loop (stage "
                            "s on rank s % 2) nor v placement" },
    { "0F0,0F1,0B1\n", "stage 0 microbatch 0 needs exactly one B or "
                       "exactly one I (microbatches 0 to 1 are named)" },
    { "0F0,0I0\n", "stage 0 microbatch 0 needs exactly one W after its I "
                   "(microbatches 0 to 0 are named)" },
    { "0F0,0F0,0B0\n", "stage 0 microbatch 0 needs exactly one F "
                       "(microbatches 0 to 0 are named)" },
    { "0F0,0B0,0W0\n", "stage 0 microbatch 0 has a W, but its B computes "
                       "the weight gradient already (microbatches 0 to 0 "
                       "are named)" },
    /* PyTorch's csv.reader makes a blank line a rank without actions. */
    { "0F0,0B0\n\n", "line 2 is blank: PyTorch reads every line as a "
                     "rank" },
    { "0F0,0B0\n \r\n1F0,1B0\n", "line 2 is blank: PyTorch reads every "
                                 "line as a rank" },
    { "\n", "line 1 is blank: PyTorch reads every line as a rank" },
    { "0F0,0SEND_F0,0B0\n", "rank 0: SEND_F stage 0 mb 0: no stage 1 to "
                            "transfer with" },
};

Test(torch_csv, rejects_what_pytorch_would_reject)
{
    for (size_t k = 0; k < sizeof(bad) / sizeof(bad[0]); k++) {
        struct zb_torch_csv c;
        struct zb_error err = { 0 };

        cr_assert_lt(zb_torch_csv_parse(bad[k].csv, &c, &err), 0, "case %zu",
                     k);
        cr_assert_str_eq(err.msg, bad[k].msg, "case %zu", k);
        zb_torch_csv_release(&c);
    }
}

Test(torch_csv, infers_the_placement)
{
    struct shape sh = unit_shape(4, 8);
    struct zb_profile p;
    struct zb_schedule s;
    struct zb_torch_csv c;
    struct zb_error err = { 0 };
    char *text;

    sh.vpp = 2;
    sh.placement = ZB_PLACEMENT_V;
    make_profile(&sh, &p);
    gen("zb-v", &p, &s);
    text = zb_torch_csv_format(&s, ZB_TORCH_COMPUTE_ONLY);
    cr_assert_eq(zb_torch_csv_parse(text, &c, &err), 0, "%s", err.msg);
    cr_assert_eq(c.placement, ZB_PLACEMENT_V);
    cr_assert_eq(c.vpp, 2);
    cr_assert_eq(c.stages, 8);
    cr_assert_eq(c.microbatches, 8);
    zb_torch_csv_release(&c);
    free(text);
    zb_schedule_release(&s);
    zb_profile_release(&p);
}

Test(torch_csv, refuses_a_profile_of_another_shape)
{
    struct shape sh = unit_shape(2, 2);
    struct zb_torch_csv c;
    struct zb_profile p;
    struct zb_schedule s;
    struct zb_error err = { 0 };

    cr_assert_eq(zb_torch_csv_parse("0F0,0F1,0B0,0B1\n1F0,1B0,1F1,1B1\n",
                                    &c, &err), 0);
    sh.mb = 3;
    make_profile(&sh, &p);
    cr_assert_lt(zb_torch_csv_schedule(&c, &p, "x", &s, &err), 0);
    cr_assert_str_eq(err.msg, "the profile (pp 2, vpp 1, 3 microbatches, "
                     "placement loop) does not match the CSV (pp 2, vpp 1, 2 "
                     "microbatches, placement loop)");
    zb_profile_release(&p);
    zb_torch_csv_release(&c);
}

struct family {
    const char *name;
    int vpp;
    enum zb_placement placement;
};

static const struct family families[] = {
    { "gpipe", 1, ZB_PLACEMENT_LOOP },   { "1f1b", 1, ZB_PLACEMENT_LOOP },
    { "zb-h1", 1, ZB_PLACEMENT_LOOP },   { "zb-h2", 1, ZB_PLACEMENT_LOOP },
    { "zb", 1, ZB_PLACEMENT_LOOP },      { "interleaved", 2,
                                           ZB_PLACEMENT_LOOP },
    { "zb-v", 2, ZB_PLACEMENT_V },       { "interleaved-zb", 2,
                                           ZB_PLACEMENT_LOOP },
};

/* Export, import with the same profile: the same lists, op for op (the
 * compute_only form is lowered again, which gives back our own
 * transfers), so the same times and measures. */
Test(torch_csv, every_family_round_trips_in_both_forms)
{
    for (size_t k = 0; k < sizeof(families) / sizeof(families[0]); k++)
        for (int form = 0; form < 2; form++) {
            struct shape sh = unit_shape(4, 8);
            struct zb_profile p;
            struct zb_schedule s, back;
            char *text;

            sh.vpp = families[k].vpp;
            sh.placement = families[k].placement;
            sh.b = 1.5;
            sh.comm = 0.2;
            make_profile(&sh, &p);
            gen(families[k].name, &p, &s);
            text = zb_torch_csv_format(&s, (enum zb_torch_form)form);
            import(text, &sh, &back);
            assert_same_ops_and_peers(&s, &back, families[k].name);
            assert_near(s.predicted.cost, back.predicted.cost, "%s",
                        families[k].name);
            free(text);
            zb_schedule_release(&back);
            zb_schedule_release(&s);
            zb_profile_release(&p);
        }
}

/* A cell's step is its column; "" cells are idle steps. */
static int cell_step(const char *text, int rank, const struct zb_op *op)
{
    char want[32];
    const char *line = text;
    int step = 0;

    snprintf(want, sizeof(want), "%d%s%d", op->stage,
             op->kind == ZB_OP_B ? "I" : op->kind == ZB_OP_BW ? "B"
             : op->kind == ZB_OP_W ? "W" : "F", op->mb);
    for (int r = 0; r < rank; r++)
        line = strchr(line, '\n') + 1;
    for (const char *c = line; *c && *c != '\n'; step++) {
        size_t len = strcspn(c, ",\n");
        if (len == strlen(want) && !strncmp(c, want, len))
            return step;
        c += len + (c[len] == ',');
    }
    return -1;
}

/* PyTorch's step-locked runtime receives in the producer's step, so every
 * consumer sits in a later column than each pass it needs. */
Test(torch_csv, compute_only_steps_follow_dependencies)
{
    for (size_t k = 0; k < sizeof(families) / sizeof(families[0]); k++) {
        struct shape sh = unit_shape(4, 8);
        struct zb_profile p;
        struct zb_schedule s;
        char *text;

        sh.vpp = families[k].vpp;
        sh.placement = families[k].placement;
        make_profile(&sh, &p);
        gen(families[k].name, &p, &s);
        text = zb_torch_csv_format(&s, ZB_TORCH_COMPUTE_ONLY);
        for (int r = 0; r < 4; r++)
            for (int i = 0; i < s.ranks[r].n; i++) {
                const struct zb_op *op = &s.ranks[r].ops[i];
                struct zb_dep deps[2];
                int n, at;
                if (!zb_op_is_compute(op->kind))
                    continue;
                at = cell_step(text, r, op);
                cr_assert_geq(at, 0, "%s rank %d op %d", families[k].name,
                              r, i);
                n = zb_pass_deps(&p, op->kind, op->stage, op->mb, deps);
                for (int d = 0; d < n; d++) {
                    int q = zb_profile_stage_rank(&p, deps[d].stage);
                    for (int j = 0; j < s.ranks[q].n; j++) {
                        const struct zb_op *x = &s.ranks[q].ops[j];
                        if (zb_op_is_compute(x->kind) &&
                            x->stage == deps[d].stage &&
                            x->mb == deps[d].mb &&
                            (zb_pass_of(x->kind) == deps[d].pass ||
                             (x->kind == ZB_OP_BW &&
                              deps[d].pass == ZB_PASS_W)))
                            cr_assert_lt(cell_step(text, q, x), at,
                                         "%s rank %d op %d",
                                         families[k].name, r, i);
                    }
                }
            }
        free(text);
        zb_schedule_release(&s);
        zb_profile_release(&p);
    }
}

/* One REDUCE_GRAD per stage, after its last backward (and its send);
 * the stage unsharded before anything else and resharded at the end. */
Test(torch_csv, compute_comms_reduces_each_stage_once)
{
    struct shape sh = unit_shape(2, 2);
    struct zb_profile p;
    struct zb_schedule s;
    char *text;

    make_profile(&sh, &p);
    gen("1f1b", &p, &s);
    text = zb_torch_csv_format(&s, ZB_TORCH_COMPUTE_COMMS);
    cr_assert_str_eq(text,
                     "0UNSHARD,0F0,0SEND_F0,0F1,0SEND_F1,0RECV_B0,0B0,"
                     "0RECV_B1,0B1,0REDUCE_GRAD,0RESHARD\n"
                     "1UNSHARD,1RECV_F0,1RECV_F1,1F0,1B0,1SEND_B0,1F1,1B1,"
                     "1SEND_B1,1REDUCE_GRAD,1RESHARD\n");
    free(text);
    zb_schedule_release(&s);
    zb_profile_release(&p);
}

/* PyTorch's Schedule1F1B (pp 4, 8 microbatches) and ScheduleInterleaved1F1B
 * (pp 4, 2 stages per rank, 8 microbatches) as its step grid shows them:
 * rank r waits r steps, two idle steps per hop before its first backward,
 * full backwards (B). They are our 1f1b and interleaved, op for op. */
static const char torch_1f1b[] =
    "0F0,0F1,0F2,,,,,,,0F3,0B0,0F4,0B1,0F5,0B2,0F6,0B3,0F7,0B4,,0B5,,0B6,"
    ",0B7\n"
    ",1F0,1F1,,,,,1F2,1B0,1F3,1B1,1F4,1B2,1F5,1B3,1F6,1B4,1F7,1B5,,1B6,,"
    "1B7\n"
    ",,2F0,,,2F1,2B0,2F2,2B1,2F3,2B2,2F4,2B3,2F5,2B4,2F6,2B5,2F7,2B6,,2B7\n"
    ",,,3F0,3B0,3F1,3B1,3F2,3B2,3F3,3B3,3F4,3B4,3F5,3B5,3F6,3B6,3F7,3B7\n";

static const char torch_interleaved[] =
    "0F0,0F1,0F2,0F3,4F0,4F1,4F2,4F3,0F4,0F5,,,,,0F6,4B0,0F7,4B1,4F4,4B2,"
    "4F5,4B3,4F6,0B0,4F7,0B1,,0B2,,0B3,,4B4,,4B5,,4B6,,4B7,,0B4,,0B5,,0B6,"
    ",0B7\n"
    ",1F0,1F1,1F2,1F3,5F0,5F1,5F2,5F3,,,,1F4,5B0,1F5,5B1,1F6,5B2,1F7,5B3,"
    "5F4,1B0,5F5,1B1,5F6,1B2,5F7,1B3,,5B4,,5B5,,5B6,,5B7,,1B4,,1B5,,1B6,,"
    "1B7\n"
    ",,2F0,2F1,2F2,2F3,6F0,6F1,,,6F2,6B0,6F3,6B1,2F4,6B2,2F5,6B3,2F6,2B0,"
    "2F7,2B1,6F4,2B2,6F5,2B3,6F6,6B4,6F7,6B5,,6B6,,6B7,,2B4,,2B5,,2B6,,"
    "2B7\n"
    ",,,3F0,3F1,3F2,3F3,,7F0,7B0,7F1,7B1,7F2,7B2,7F3,7B3,3F4,3B0,3F5,3B1,"
    "3F6,3B2,3F7,3B3,7F4,7B4,7F5,7B5,7F6,7B6,7F7,7B7,,3B4,,3B5,,3B6,,3B7\n";

/* Its compute_comms form, as its lowering (_add_unshard_reshard,
 * _add_reduce_grad, then _add_send_recv) writes 1F1B for pp 2 and 4
 * microbatches: receives come from the sender's side, UNSHARD before the
 * first action and RESHARD after the last. */
static const char torch_1f1b_comms[] =
    "0UNSHARD,0F0,0SEND_F0,0F1,0SEND_F1,0RECV_B0,0B0,0F2,0SEND_F2,0RECV_B1,"
    "0B1,0F3,0SEND_F3,0RECV_B2,0B2,0RECV_B3,0B3,0REDUCE_GRAD,0RESHARD\n"
    "1UNSHARD,1RECV_F0,1F0,1RECV_F1,1B0,1SEND_B0,1F1,1RECV_F2,1B1,1SEND_B1,"
    "1F2,1RECV_F3,1B2,1SEND_B2,1F3,1B3,1SEND_B3,1REDUCE_GRAD,1RESHARD\n";

static void assert_family(const char *csv, const char *name, int vpp)
{
    struct shape sh = unit_shape(4, 8);
    struct zb_profile p;
    struct zb_schedule ours, theirs;

    sh.vpp = vpp;
    make_profile(&sh, &p);
    gen(name, &p, &ours);
    import(csv, &sh, &theirs);
    zb_schedule_strip_comm(&ours);
    zb_schedule_strip_comm(&theirs);
    assert_same_ops_and_peers(&ours, &theirs, name);
    assert_near(ours.predicted.cost, theirs.predicted.cost, "%s", name);
    zb_schedule_release(&ours);
    zb_schedule_release(&theirs);
    zb_profile_release(&p);
}

Test(torch_csv, reads_pytorch_1f1b)
{
    assert_family(torch_1f1b, "1f1b", 1);
}

Test(torch_csv, reads_pytorch_interleaved_1f1b)
{
    assert_family(torch_interleaved, "interleaved", 2);
}

/* Its own transfer order is kept (and passes our validator), and so are
 * its FSDP and gradient-reduction actions through import and export. */
Test(torch_csv, keeps_pytorch_transfer_order)
{
    struct shape sh = unit_shape(2, 4);
    struct zb_schedule s;
    char *text;

    import(torch_1f1b_comms, &sh, &s);
    cr_assert_eq(s.ranks[1].ops[0].kind, ZB_OP_RECV_F);
    cr_assert_eq(s.ranks[1].ops[2].kind, ZB_OP_RECV_F);
    cr_assert_eq(s.ranks[1].ops[s.ranks[1].n - 1].kind, ZB_OP_STEP);
    assert_near(s.predicted.cost, 3.0 * (4 + 2 - 1), "1f1b cost");
    text = zb_torch_csv_format(&s, ZB_TORCH_COMPUTE_COMMS);
    cr_assert_str_eq(text, torch_1f1b_comms);
    free(text);
    zb_schedule_release(&s);
}

/* PyTorch's runtime, as far as FSDP goes: UNSHARD a sharded stage,
 * compute only on an unsharded one, RESHARD only an unsharded one; and
 * its lowering's window of at most 3 stages, all resharded at the end.
 * Returns how many UNSHARDs fetch a stage again. */
static int assert_fsdp_row(const char *row, size_t len, const char *what)
{
    bool active[64] = { false }, seen[64] = { false };
    int nactive = 0, again = 0, cell = 0;
    char *text = strndup(row, len), *save = NULL;

    for (char *c = strtok_r(text, ",", &save); c;
         c = strtok_r(NULL, ",", &save), cell++) {
        char *type = c + strspn(c, "0123456789");
        int stage = atoi(c);
        cr_assert_lt(stage, 64);
        if (!strcmp(type, "UNSHARD")) {
            cr_assert(!active[stage], "%s: cell %d unshards twice", what,
                      cell);
            active[stage] = true;
            again += seen[stage];
            seen[stage] = true;
            cr_assert_leq(++nactive, 3, "%s: cell %d", what, cell);
        } else if (!strcmp(type, "RESHARD")) {
            cr_assert(active[stage], "%s: cell %d reshards a sharded stage",
                      what, cell);
            active[stage] = false;
            nactive--;
        } else if (strncmp(type, "SEND", 4) && strncmp(type, "RECV", 4) &&
                   strcmp(type, "REDUCE_GRAD")) {
            cr_assert(active[stage], "%s: cell %d (%s) computes on a "
                      "sharded stage", what, cell, c);
        }
    }
    cr_assert_eq(nactive, 0, "%s: stages left unsharded", what);
    free(text);
    return again;
}

static const struct family fsdp_families[] = {
    { "1f1b", 1, ZB_PLACEMENT_LOOP },    { "zb-h1", 1, ZB_PLACEMENT_LOOP },
    { "interleaved", 2, ZB_PLACEMENT_LOOP },
    { "zb-v", 2, ZB_PLACEMENT_V },       { "interleaved", 4,
                                           ZB_PLACEMENT_LOOP },
    { "interleaved-zb", 4, ZB_PLACEMENT_LOOP },
};

/* Every family's compute_comms file runs on FSDP-sharded stages; with 4
 * stages a rank must evict one to fetch the next and fetch it again
 * later; import and export give the file back as it was. */
Test(torch_csv, compute_comms_unshards_as_pytorch_lowers)
{
    for (size_t k = 0; k < sizeof(fsdp_families) / sizeof(fsdp_families[0]);
         k++) {
        struct shape sh = unit_shape(4, 8);
        struct zb_profile p;
        struct zb_schedule s, back;
        const char *row;
        char *text, *again;
        int refetch = 0;

        sh.vpp = fsdp_families[k].vpp;
        sh.placement = fsdp_families[k].placement;
        make_profile(&sh, &p);
        gen(fsdp_families[k].name, &p, &s);
        text = zb_torch_csv_format(&s, ZB_TORCH_COMPUTE_COMMS);
        row = text;
        for (int r = 0; r < 4; r++) {
            size_t len = strcspn(row, "\n");
            refetch += assert_fsdp_row(row, len, fsdp_families[k].name);
            row += len + 1;
        }
        cr_assert_eq(refetch > 0, sh.vpp > 3, "%s vpp %d: %d UNSHARDs "
                     "fetch again", fsdp_families[k].name, sh.vpp, refetch);
        import(text, &sh, &back);
        again = zb_torch_csv_format(&back, ZB_TORCH_COMPUTE_COMMS);
        cr_assert_str_eq(again, text, "%s", fsdp_families[k].name);
        free(again);
        free(text);
        zb_schedule_release(&back);
        zb_schedule_release(&s);
        zb_profile_release(&p);
    }
}
