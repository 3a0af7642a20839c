/* torch_import.c - a parsed PyTorch CSV becomes a schedule by the steps a
 * generator's output takes (generate.c): simulate, lower, simulate,
 * validate; a compute_comms file keeps its own transfers instead. */
#include "zbsched/bound.h"
#include "zbsched/lower.h"
#include "zbsched/sim.h"
#include "zbsched/torch.h"
#include "zbsched/validate.h"
#include "zbsched/zero.h"

static int check_shape(const struct zb_torch_csv *c,
                       const struct zb_profile *p, struct zb_error *err)
{
    if (p->pp != c->pp || p->vpp != c->vpp ||
        p->microbatches != c->microbatches || p->placement != c->placement)
        return zb_error_set(err, ZB_EINVAL, "the profile (pp %d, vpp %d, "
                            "%d microbatches, placement %s) does not match "
                            "the CSV (pp %d, vpp %d, %d microbatches, "
                            "placement %s)", p->pp, p->vpp, p->microbatches,
                            zb_placement_name(p->placement), c->pp, c->vpp,
                            c->microbatches,
                            zb_placement_name(c->placement));
    /* The collectives are placed again from the profile (zero.h): a file
     * that reduces the other way would not come back as written. */
    if (c->reduce_per_mb && !zb_dp_per_mb(p))
        return zb_error_set(err, ZB_EINVAL, "the CSV reduces gradients per "
                            "microbatch, the profile does not (reduce "
                            "microbatch needs dp >= 2 and zero >= 2)");
    if (c->reduce_per_step && zb_dp_per_mb(p))
        return zb_error_set(err, ZB_EINVAL, "the profile reduces gradients "
                            "per microbatch, the CSV once per stage");
    return 0;
}

int zb_torch_csv_schedule(const struct zb_torch_csv *c,
                          const struct zb_profile *p, const char *name,
                          struct zb_schedule *out, struct zb_error *err)
{
    int rc;

    zb_schedule_init(out, name, p);
    if ((rc = check_shape(c, p, err)) < 0)
        goto fail;
    for (int r = 0; r < c->pp; r++) {
        for (int i = 0; i < c->rows[r].n; i++)
            zb_op_list_push(&out->ranks[r], &c->rows[r].ops[i]);
        if (c->comms)
            zb_schedule_push(out, r, ZB_OP_STEP, -1, -1);
    }
    /* As in zb_generator_run(): the simulation orders the compute ops in time
     * for lowering, which keeps their times. */
    if ((rc = zb_sim_run(out, err)) < 0 ||
        (!c->comms && (rc = zb_lower_run(out, err)) < 0) ||
        (rc = zb_zero_place(out, err)) < 0 ||
        (rc = zb_validate_order(out, err)) < 0)
        goto fail;
    zb_bound_set(out);
    return 0;
fail:
    zb_schedule_release(out);
    return rc;
}
