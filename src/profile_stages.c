/* profile_stages.c - stages that differ in memory and communication: the
 * "stages" entries' M_B, M_W and comm, the activations a rank's
 * microbatch holds, and the uniform view for code that counts
 * microbatches in flight. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "profile_int.h"
#include "zbsched/dp.h"
#include "zbsched/xalloc.h"

/* The "stages" entry that describes stage s. */
static int entry_of(const struct zb_profile_draft *d,
                    const struct zb_profile *p, int s)
{
    return d->per_rank ? zb_profile_stage_rank(p, s) : s;
}

bool zbi_profile_stage_memory_given(const struct zb_profile_draft *d)
{
    for (int i = 0; d->stages && i < d->n_stages; i++)
        if ((d->stages[i].m_b.set && !d->flag_memory[0]) ||
            (d->stages[i].m_w.set && !d->flag_memory[1]))
            return true;
    return false;
}

bool zbi_profile_every_stage_m_b(const struct zb_profile_draft *d)
{
    if (!d->stages || d->n_stages == 0 || d->flag_memory[0])
        return false;
    for (int i = 0; i < d->n_stages; i++)
        if (!d->stages[i].m_b.set)
            return false;
    return true;
}

const char *zbi_profile_plain_stage_memory(const struct zb_profile_draft *d,
                                           double *v, char *buf, int size)
{
    for (int i = 0; d->stages && i < d->n_stages; i++) {
        const struct zb_draft_stage *e = &d->stages[i];
        if (e->m_b.set && !e->m_b_sized && !d->flag_memory[0]) {
            *v = e->m_b.value;
            snprintf(buf, (size_t)size, "stages[%d].M_B", i);
            return buf;
        }
        if (e->m_w.set && !e->m_w_sized && e->m_w.value != 0 &&
            !d->flag_memory[1]) {
            *v = e->m_w.value;
            snprintf(buf, (size_t)size, "stages[%d].M_W", i);
            return buf;
        }
    }
    return NULL;
}

/* An entry's own memory: finite, > 0 for M_B (an F keeps something),
 * >= 0 for M_W, within range. */
static int entry_memory(const struct zb_opt *o, int e, const char *key,
                        bool positive, double *out, struct zb_error *err)
{
    char field[40];

    snprintf(field, sizeof(field), "stages[%d].%s", e, key);
    if (!isfinite(o->value) || o->value < 0 || (positive && o->value == 0))
        return zb_error_set(err, ZB_EINVAL, "%s must be a finite number "
                            "%s 0, got %g", field, positive ? ">" : ">=",
                            o->value);
    return zbi_profile_in_range(o->value, field, out, err);
}

static int build_memory(const struct zb_profile_draft *d,
                        struct zb_profile *p, struct zb_error *err)
{
    const int n = zb_profile_stages(p);
    const double split = d->per_rank ? p->vpp : 1;
    const double ratio = p->m_w / p->m_b;     /* the common M_W / M_B */
    bool same = true;
    int rc;

    if (!zbi_profile_stage_memory_given(d))
        return 0;
    p->stage_mem = zb_xcalloc((size_t)n, sizeof(*p->stage_mem));
    for (int s = 0; s < n; s++) {
        const int e = entry_of(d, p, s);
        const struct zb_draft_stage *ds = &d->stages[e];
        struct zb_stage_memory *m = &p->stage_mem[s];

        m->m_b = p->m_b;
        if (ds->m_b.set && !d->flag_memory[0]) {
            if ((rc = entry_memory(&ds->m_b, e, "M_B", true, &m->m_b,
                                   err)) < 0)
                return rc;
            m->m_b /= split;
        }
        /* A stage that names only its M_B keeps the common proportion. */
        m->m_w = d->flag_memory[1] ? p->m_w : m->m_b * ratio;
        if (ds->m_w.set && !d->flag_memory[1]) {
            if ((rc = entry_memory(&ds->m_w, e, "M_W", false, &m->m_w,
                                   err)) < 0)
                return rc;
            m->m_w /= split;
        }
        same &= m->m_b == p->stage_mem[0].m_b &&
                m->m_w == p->stage_mem[0].m_w;
    }
    p->m_b = p->m_w = 0;
    for (int s = 0; s < n; s++) {
        p->m_b = fmax(p->m_b, p->stage_mem[s].m_b);
        p->m_w = fmax(p->m_w, p->stage_mem[s].m_w);
    }
    /* Stages that agree are the plain profile, written and run as one. */
    if (same) {
        p->m_b = p->stage_mem[0].m_b;
        p->m_w = p->stage_mem[0].m_w;
        free(p->stage_mem);
        p->stage_mem = NULL;
    }
    return 0;
}

static int build_comm(const struct zb_profile_draft *d, struct zb_profile *p,
                      struct zb_error *err)
{
    const int n = zb_profile_stages(p);
    bool given = false, same = true;
    int rc;

    for (int i = 0; d->stages && i < d->n_stages && !d->flag_comm; i++)
        given |= d->stages[i].comm.set;
    if (!given)
        return 0;
    /* Per stage, comm is what the stage sends on; per rank each chunk's. */
    if (!d->per_rank && d->stages[n - 1].comm.set)
        return zb_error_set(err, ZB_EINVAL, "stages[%d].comm: the last "
                            "stage sends nothing (comm is the transfer to "
                            "the next stage)", n - 1);
    p->stage_comm = zb_xcalloc((size_t)n, sizeof(double));
    for (int s = 0; s + 1 < n; s++) {
        const int e = entry_of(d, p, s);
        const struct zb_opt *o = &d->stages[e].comm;
        char field[40];

        snprintf(field, sizeof(field), "stages[%d].comm", e);
        if (!o->set)
            p->stage_comm[s] = p->comm;
        else if ((rc = zbi_profile_get_time(o, 0, false, field,
                                            &p->stage_comm[s], err)) < 0)
            return rc;
        same &= p->stage_comm[s] == p->stage_comm[0];
    }
    p->comm = 0;
    for (int s = 0; s + 1 < n; s++)
        p->comm = fmax(p->comm, p->stage_comm[s]);
    if (same) {
        free(p->stage_comm);
        p->stage_comm = NULL;
    }
    return 0;
}

int zbi_profile_build_stages(const struct zb_profile_draft *d,
                             struct zb_profile *p, struct zb_error *err)
{
    int rc = build_memory(d, p, err);

    return rc < 0 ? rc : build_comm(d, p, err);
}

double zb_profile_rank_microbatch(const struct zb_profile *p, int r)
{
    double sum = 0;

    /* The product where stages agree: what every caller computed before
     * stages could differ (a sum of three equal doubles may round). */
    if (!p->stage_mem)
        return p->vpp * p->m_b;
    for (int c = 0; c < p->vpp; c++)
        sum += p->stage_mem[zb_profile_rank_stage(p, r, c)].m_b;
    return sum;
}

double zb_profile_1f1b_peak(const struct zb_profile *p)
{
    double most = 0;

    if (!p->stage_mem)
        return p->pp * p->vpp * p->m_b;
    for (int r = 0; r < p->pp; r++)
        most = fmax(most, zb_profile_rank_microbatch(p, r));
    return p->pp * most;
}

/* The largest M_B among rank r's stages. */
static double rank_largest(const struct zb_profile *p, int r)
{
    double most = 0;

    for (int c = 0; c < p->vpp; c++)
        most = fmax(most, p->stage_mem[zb_profile_rank_stage(p, r, c)].m_b);
    return most;
}

void zb_profile_uniform_memory(const struct zb_profile *p,
                               struct zb_profile *out)
{
    double rho = 0;

    zb_profile_copy(out, p);
    if (!p->stage_mem)
        return;
    free(out->stage_mem);
    out->stage_mem = NULL;
    /* The budgets are set: nothing recounts the model state. */
    free(out->mem_total);
    out->mem_total = NULL;
    /* Data-parallel memory (gathered weights, gradient buffers) counts in
     * the profile's unit beside the activations and must not be scaled:
     * there the largest M_B and M_W stand for every stage. */
    if (zb_dp_active(p))
        return;
    for (int r = 0; r < p->pp; r++) {
        double amax = rank_largest(p, r);
        for (int c = 0; c < p->vpp; c++) {
            int s = zb_profile_rank_stage(p, r, c);
            rho = fmax(rho, p->stage_mem[s].m_w / amax);
        }
        out->mem_limit[r] = p->mem_limit[r] * (p->m_b / amax);
    }
    out->m_w = rho * p->m_b;
}
