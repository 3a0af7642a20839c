/* pass.c - dependencies of the pass graph (see pass.h). */
#include "zbsched/pass.h"

int zb_pass_deps(const struct zb_profile *p, enum zb_op_kind kind, int stage,
               int mb, struct zb_dep out[2])
{
    int n = 0;

    switch (kind) {
    case ZB_OP_F:
        if (stage > 0)
            out[n++] = (struct zb_dep){ ZB_PASS_F, stage - 1, mb };
        break;
    case ZB_OP_B:
    case ZB_OP_BW:
        out[n++] = (struct zb_dep){ ZB_PASS_F, stage, mb };
        if (stage < zb_profile_stages(p) - 1)
            out[n++] = (struct zb_dep){ ZB_PASS_B, stage + 1, mb };
        break;
    case ZB_OP_W:
        out[n++] = (struct zb_dep){ ZB_PASS_B, stage, mb };
        break;
    default:
        break;
    }
    return n;
}
