/* render_check.c - whether panels can be drawn (render.h): the axis of
 * both renderers divides the span into columns and tick steps, which a
 * denormal, infinite or runaway end would turn into 0 or inf. */
#include <math.h>
#include "zbsched/render.h"

/* The axis end must leave room for 10 ticks and a column per pixel as
 * normal numbers: the profile's range (profile.h) times every pass. */
#define AXIS_MIN ZB_VALUE_MIN
#define AXIS_MAX (ZB_VALUE_MAX * ZB_MAX_PASSES)

int zb_render_check(const struct zb_panel *panels, int n,
                    struct zb_error *err)
{
    double tmax = 0;

    for (int k = 0; k < n; k++)
        for (int r = 0; r < panels[k].s->profile.pp; r++)
            for (int i = 0; i < panels[k].ranks[r].n; i++) {
                const struct zb_op *op = &panels[k].ranks[r].ops[i];
                if (!zb_op_is_compute(op->kind))
                    continue;
                if (!isfinite(op->start) || !isfinite(op->end))
                    return zb_error_set(err, ZB_EINVAL, "%s: rank %d has "
                                        "an op without finite times",
                                        panels[k].s->name, r);
                tmax = fmax(tmax, op->end);
            }
    if (tmax != 0 && (tmax < AXIS_MIN || tmax > AXIS_MAX))
        return zb_error_set(err, ZB_EINVAL, "a time axis from 0 to %g "
                            "cannot be drawn (its end must lie between %g "
                            "and %g)", tmax, AXIS_MIN, AXIS_MAX);
    return 0;
}
