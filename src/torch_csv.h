/* torch_csv.h - PyTorch's pipelining action types, one table for the CSV
 * reader and writer (internal to the library; the format is in torch.h).
 * To add an action type: a row in torch_csv.c, then what the reader does
 * with it (torch_csv_read.c) and where the writer puts it. */
#ifndef ZBSCHED_TORCH_CSV_H
#define ZBSCHED_TORCH_CSV_H

#include <stddef.h>
#include "zbsched/op.h"

enum torch_role {
    TORCH_OP,       /* one op of ours, `kind` */
    TORCH_DERIVED   /* FSDP and data-parallel steps (UNSHARD, RESHARD,
                       REDUCE_GRAD): no op of ours; the writer derives
                       them from the lists as PyTorch's lowering does */
};

struct torch_type {
    const char *name;           /* as PyTorch spells it */
    enum torch_role role;
    enum zb_op_kind kind;       /* TORCH_OP only */
};

#define TORCH_UNSHARD "UNSHARD"
#define TORCH_RESHARD "RESHARD"
#define TORCH_REDUCE_GRAD "REDUCE_GRAD"

/* The type whose name starts s, or NULL. */
const struct torch_type *zbi_torch_type_at(const char *s);

/* PyTorch's name of an op kind of ours: I is our B, B our fused BW. */
const char *zbi_torch_type_name(enum zb_op_kind k);

#endif
