/* torch.h - schedules in the CSV format of PyTorch's pipelining runtime
 * (torch.distributed.pipelining, `_load_csv` / `_dump_csv`; torchtitan's
 * pipeline_parallel_schedule_csv), both ways. docs/guide.md has the
 * grammar; in short, one row per rank, one action per cell:
 *   [stage][type][microbatch]   e.g. 0F0, 2I3, 1W1, 0B0, 0SEND_F1, 1RECV_B0
 * where PyTorch's I is our B (input gradient) and its B our BW (full
 * backward). Ownership: returned strings and parsed files are the
 * caller's; const pointer arguments are borrowed. */
#ifndef ZBSCHED_TORCH_H
#define ZBSCHED_TORCH_H

#include <stdbool.h>
#include "zbsched/error.h"
#include "zbsched/profile.h"
#include "zbsched/schedule.h"

enum zb_torch_form {
    ZB_TORCH_COMPUTE_ONLY,   /* compute actions on a grid of time steps,
                                idle steps as empty cells; PyTorch adds
                                the communication itself */
    ZB_TORCH_COMPUTE_COMMS   /* our lowered lists: SEND/RECV in our order,
                                with the actions PyTorch's lowering adds
                                (UNSHARD, RESHARD for FSDP; REDUCE_GRAD
                                after a stage's last backward) */
};

/* CSV text of a simulated, lowered schedule (compute_only places each op
 * one step after every op it depends on, in the simulator's order, so
 * PyTorch's step-locked runtime posts each receive in time). */
char *zb_torch_csv_format(const struct zb_schedule *s,
                          enum zb_torch_form form);

/* A CSV read back. Idle cells and the actions we have no op for (UNSHARD,
 * RESHARD, REDUCE_GRAD: FSDP and data-parallel steps, which the
 * compute_comms writer derives again) are dropped; OVERLAP_F_B cells are
 * expanded into their sub-actions in order. A blank line is an error, as
 * a rank without actions would be to PyTorch. */
struct zb_torch_csv {
    int pp;                       /* rows = ranks */
    struct zb_op_list *rows;      /* pp lists, file order, peers set */
    bool comms;                   /* SEND/RECV present: compute_comms */
    int stages, microbatches;     /* highest index seen + 1 */
    int vpp;                      /* stages / pp */
    enum zb_placement placement;  /* inferred from the stage-to-rank map */
    bool reduce_per_mb;           /* a REDUCE_GRAD names a microbatch */
    bool reduce_per_step;         /* a REDUCE_GRAD names none */
};

/* Parse and infer the stage-to-rank map as PyTorch does (the rank whose
 * row names a stage holds it; a stage on two rows is an error), which
 * must be our loop or v placement. Errors name rank and step. On failure
 * *out is still safe to release. */
int zb_torch_csv_parse(const char *text, struct zb_torch_csv *out,
                       struct zb_error *err);
void zb_torch_csv_release(struct zb_torch_csv *c);

/* The schedule of c for profile p (same pp, vpp, microbatches and
 * placement; REDUCE_GRADs per microbatch only for a profile that reduces
 * per microbatch, and the other way round): compute_only is lowered by
 * zb_lower_run(), compute_comms keeps its transfers in file order and
 * gains the final STEP. Simulated and
 * checked by zb_validate_order(); memory is left to the caller. */
int zb_torch_csv_schedule(const struct zb_torch_csv *c,
                          const struct zb_profile *p, const char *name,
                          struct zb_schedule *out, struct zb_error *err);

#endif
