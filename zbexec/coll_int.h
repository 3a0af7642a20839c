/* coll_int.h - what the files of the data-parallel collectives share,
 * private to them: coll.c posts the list's ops, coll_shard.c lays the
 * shards out, coll_units.c runs FSDP units, coll_progress.c completes
 * what is in flight. The engine's side of the module is in exec.h. */
#ifndef ZBEXEC_COLL_INT_H
#define ZBEXEC_COLL_INT_H

#include "exec.h"

/* A unit's weights between two steps (struct stage_state's ustate). */
enum unit_state {
    U_SHARD,        /* sharded */
    U_LISTED,       /* its UNSHARD reached, its all-gather not issued */
    U_GATHERED,
    U_FREED         /* its pass freed it, its RESHARD not reached */
};

/* ---- What the run shards (coll_shard.c) ---------------------------------- */

/* ZeRO-3: a stage keeps only its weight shard between steps. */
bool coll_zero3(const struct exec *x);
/* ZeRO >= 1: the gradient is reduced into this replica's shard. */
bool coll_sharded_grad(const struct exec *x);
/* FSDP units (data_parallel.units K > 1). */
bool coll_units(const struct exec *x);
/* Whether each unit is sharded by itself (ZeRO-3 on units); else the
 * shards are dp contiguous ranges of the stage (shard_n, shard_off). */
bool coll_unit_shards(const struct exec *x);

/* ---- Layout (coll_shard.c) ----------------------------------------------- */

/* Unit u of a stage: its layers [*l0, *l1). */
void coll_unit_layers(const struct exec *x, int u, int *l0, int *l1);
/* Unit u of a stage: [*a, *b) of its parameters; into cnt and dsp (dp
 * entries, NULL: skipped) each replica's part of it and where that starts
 * in the unit. */
void coll_unit_range(const struct exec *x, int u, size_t *a, size_t *b,
                     int *cnt, int *dsp);
/* Where replica r's part of unit u starts in its shard. */
size_t coll_shard_pos(const struct exec *x, int u, int r);
/* Floats in replica r's shard. */
size_t coll_shard_len(const struct exec *x, int r);

/* ---- FSDP units (coll_units.c) ------------------------------------------- */

/* ZeRO-3 on units: the shard buffer into one piece per unit (split) or
 * back (join), both counted, so a gathered unit can take its piece. */
void coll_split_shard(struct exec *x, struct stage_state *st, bool join);
/* A unit's collective, op i, where the list puts it (the top of
 * coll_units.c). */
int coll_post_unit(struct exec *x, int i, struct stage_state *st,
                   struct zb_error *err);
/* A unit's collective that its pass ran (coll_seg_end): the list
 * reaches it. */
void coll_unit_early(struct exec *x, int i, struct stage_state *st);
/* Reducing per step with ZeRO-3 on units: a reduce-scatter of each
 * unit's range of the gradient into its part of the shard. */
int coll_reduce_step_units(struct exec *x, int i, struct stage_state *st,
                           struct zb_error *err);

/* ---- Completion (coll_progress.c) ---------------------------------------- */

/* Wait on the host for *req, posted by op `op`, under the watchdog; 0
 * when done (*req is then NULL). */
int coll_wait_req(struct exec *x, void **req, int op, struct zb_error *err);
/* The stage's UNSHARD is complete for the compute timeline: on the
 * device where the backend can (consumed once), else on the host. */
int coll_await_unshard(struct exec *x, struct stage_state *st,
                       struct zb_error *err);

/* ---- Errors (coll.c) ----------------------------------------------------- */

/* ZB_EILLEGAL: "op i (its description) why". */
int coll_op_error(struct exec *x, int i, const char *why,
                  struct zb_error *err);

#endif
