/* torch_csv.c - PyTorch's pipelining action types (`_ComputationType`)
 * and what each is to us: the one table the CSV reader and writer share. */
#include <string.h>
#include "torch_csv.h"

static const struct torch_type types[] = {
    { "F", TORCH_OP, ZB_OP_F },
    { "I", TORCH_OP, ZB_OP_B },
    { "W", TORCH_OP, ZB_OP_W },
    { "B", TORCH_OP, ZB_OP_BW },
    { "SEND_F", TORCH_OP, ZB_OP_SEND_F },
    { "RECV_F", TORCH_OP, ZB_OP_RECV_F },
    { "SEND_B", TORCH_OP, ZB_OP_SEND_B },
    { "RECV_B", TORCH_OP, ZB_OP_RECV_B },
    { TORCH_UNSHARD, TORCH_DERIVED, 0 },
    { TORCH_RESHARD, TORCH_DERIVED, 0 },
    { TORCH_REDUCE_GRAD, TORCH_DERIVED, 0 },
};

#define NTYPES (sizeof(types) / sizeof(types[0]))

/* No name is a prefix of another, so the first match is the match. */
const struct torch_type *zbi_torch_type_at(const char *s)
{
    for (size_t k = 0; k < NTYPES; k++)
        if (!strncmp(s, types[k].name, strlen(types[k].name)))
            return &types[k];
    return NULL;
}

const char *zbi_torch_type_name(enum zb_op_kind k)
{
    for (size_t i = 0; i < NTYPES; i++)
        if (types[i].role == TORCH_OP && types[i].kind == k)
            return types[i].name;
    return NULL;
}
