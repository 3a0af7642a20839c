/* profile_check.c - the warnings of `zbsched check-profile`: signs that a
 * profile does not describe the passes a schedule will run. Each names
 * the stage and the numbers and says what to do; the thresholds are in
 * profile_import.h and argued in docs/profiles.md ("check-profile"). */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "zbsched/profile_import.h"
#include "zbsched/xalloc.h"

void zb_check_init(struct zb_check *c)
{
    memset(c, 0, sizeof(*c));
}

void zb_check_release(struct zb_check *c)
{
    if (c)
        free(c->msg);
}

static void warn(struct zb_check *c, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static void warn(struct zb_check *c, const char *fmt, ...)
{
    va_list ap;

    zb_xgrow((void **)&c->msg, &c->cap, c->n + 1, sizeof(*c->msg));
    va_start(ap, fmt);
    vsnprintf(c->msg[c->n++], ZB_ERROR_MSG_MAX, fmt, ap);
    va_end(ap);
}

/* The families that run B and W apart; the others fuse them (BW). */
static bool splits(const char *family)
{
    static const char *const fused[] = { "gpipe", "1f1b", "interleaved" };

    if (!family)
        return true;
    for (size_t i = 0; i < sizeof(fused) / sizeof(fused[0]); i++)
        if (!strcmp(family, fused[i]))
            return false;
    return true;
}

static void check_times(const struct zb_profile *p, const char *family,
                        struct zb_check *out)
{
    int S = zb_profile_stages(p), zero_w = 0;

    for (int s = 0; s < S; s++) {
        const struct zb_stage_times *t = &p->stage[s];
        if (t->w > 0 && t->w < ZB_CHECK_W_TINY * t->b &&
            t->b > ZB_CHECK_B_FULL * t->f)
            warn(out, "stage %d: B %.4g is %.2f F (%.4g) and W %.4g only "
                 "%.0f %% of B: B's timer holds W (sail-sg/zero-bubble "
                 "issue #22); time W apart: in Megatron's zero-bubble fork "
                 "W is deferred only through the fused weight-gradient GEMM "
                 "(--gradient-accumulation-fusion with APEX's "
                 "fused_weight_gradient_mlp_cuda), else it runs inside B",
                 s, t->b, t->b / t->f, t->f, t->w, 100 * t->w / t->b);
        if (t->b < ZB_CHECK_B_SMALL * t->f && t->w > ZB_CHECK_W_HOLDS_B * t->b)
            warn(out, "stage %d: B %.4g is under %.2g F (%.4g) and W %.4g over "
                 "%.0f B: W's timer seems to hold part of the input gradient; "
                 "check that B and W are not swapped and that B's timer "
                 "covers the whole input gradient", s, t->b,
                 ZB_CHECK_B_SMALL, t->f, t->w, ZB_CHECK_W_HOLDS_B);
        zero_w += t->w == 0;
    }
    if (zero_w && splits(family)) {
        char who[96];
        snprintf(who, sizeof(who), "%s", family ? family
                 : "zb, zb-h1, zb-v and the others that split");
        for (int s = 0; s < S; s++) {
            char where[32];
            if (p->stage[s].w != 0 || (zero_w == S && s > 0))
                continue;
            snprintf(where, sizeof(where), zero_w == S ? "every stage"
                     : "stage %d", s);
            warn(out, "%s: W = 0 (B %.4g is the whole backward): nothing "
                 "is gained by splitting B from W (%s); time W apart "
                 "(PyTorch's I and W actions, the zero-bubble fork's "
                 "timers) or use 1f1b or interleaved", where, p->stage[s].b,
                 who);
        }
    }
}

static void check_spread(const struct zb_measured *m, struct zb_check *out)
{
    static const char *const names[ZB_MEAS_KINDS] = { "F", "B", "W" };

    for (int i = 0; i < m->n; i++)
        for (int k = 0; k < ZB_MEAS_KINDS; k++) {
            const struct zb_spread *x = &m->t[i][k];
            if (x->samples < 2 || x->median <= 0 ||
                x->p90 <= ZB_CHECK_SPREAD * x->median)
                continue;
            warn(out, "%s %d: %s p90/median %.2f (median %.4g, p90 %.4g, %d "
                 "samples) is above %.2f: the time varies from pass to "
                 "pass; measure more iterations, look for a straggler, and "
                 "judge schedules under that noise (eval --jitter)",
                 m->per_rank ? "rank" : "stage", i, names[k],
                 x->p90 / x->median, x->median, x->p90, x->samples,
                 ZB_CHECK_SPREAD);
        }
}

/* Stages 1 to S-2 only: the first and the last hold the embedding, the
 * loss (zbexec's MLP: the input's generation) besides their layers, which
 * `plan` weighs from a model JSON. */
static void check_balance(const struct zb_profile *p, struct zb_check *out)
{
    int S = zb_profile_stages(p), lo = 1, hi = 1;
    double tl, th;

    if (S < 4)
        return;
    for (int s = 2; s < S - 1; s++) {
        const struct zb_stage_times *t = &p->stage[s];
        double x = t->f + t->b + t->w;
        if (x < p->stage[lo].f + p->stage[lo].b + p->stage[lo].w)
            lo = s;
        if (x > p->stage[hi].f + p->stage[hi].b + p->stage[hi].w)
            hi = s;
    }
    tl = p->stage[lo].f + p->stage[lo].b + p->stage[lo].w;
    th = p->stage[hi].f + p->stage[hi].b + p->stage[hi].w;
    if (th > (1 + ZB_CHECK_APART) * tl)
        warn(out, "stages %d and %d are %.0f %% apart (F+B+W %.4g against "
             "%.4g): the layers are split unevenly and the slowest stage "
             "sets the pace; `zbsched plan` chooses a split from a model "
             "JSON", hi, lo, 100 * (th / tl - 1), th, tl);
}

/* A transformer layer per microbatch of b sequences (Megatron-LM's
 * count, FFN 4h): F = 24 b s h^2 + 4 b s^2 h (the GEMMs, then attention's
 * scores and context), B = 24 b s h^2 + 8 b s^2 h (the GEMMs' input
 * gradients and all of attention's backward, which has no weights),
 * W = 24 b s h^2 (the GEMMs' weight gradients). Only the ratios count. */
static void check_flops(const struct zb_profile *p,
                        const struct zb_check_dims *d, struct zb_check *out)
{
    const double h = d->hidden, sq = d->seq;
    const double want[2] = { (24 * h + 8 * sq) / (24 * h + 4 * sq),
                             24 * h / (24 * h + 4 * sq) };
    static const char *const names[2] = { "B/F", "W/F" };

    for (int s = 0; s < zb_profile_stages(p); s++) {
        const struct zb_stage_times *t = &p->stage[s];
        const double got[2] = { t->b / t->f, t->w / t->f };
        for (int k = 0; k < 2; k++)
            if (got[k] > ZB_CHECK_FLOPS_OFF * want[k] ||
                got[k] < want[k] / ZB_CHECK_FLOPS_OFF)
                warn(out, "stage %d: %s %.3g where a transformer layer's "
                     "FLOPs (hidden %g, sequence %g) give %.3g: more than "
                     "%g times off; a pass's timer holds another's work, or "
                     "the stage is mostly not transformer layers", s,
                     names[k], got[k], h, sq, want[k], ZB_CHECK_FLOPS_OFF);
    }
}

/* Each stage's M_W against its own M_B (the first stage that is off,
 * named where stages differ). */
static void check_memory(const struct zb_profile *p, struct zb_check *out)
{
    for (int s = 0; s < zb_profile_stages(p); s++) {
        double m_b = zb_profile_m_b(p, s), m_w = zb_profile_m_w(p, s);
        char who[32] = "";
        if (m_w <= ZB_CHECK_MW_MAX * m_b)
            continue;
        if (p->stage_mem)
            snprintf(who, sizeof(who), "stage %d: ", s);
        warn(out, "%sM_W %.4g is %.2f M_B (%.4g): W can keep at most each "
             "layer's input (what F kept) and its output gradient, 2 M_B; "
             "are M_B and M_W in the same unit, per chunk?", who, m_w,
             m_w / m_b, m_b);
        return;
    }
}

void zb_check_profile(const struct zb_profile *p, const struct zb_measured *m,
                      const char *family, const struct zb_check_dims *dims,
                      struct zb_check *out)
{
    check_times(p, family, out);
    if (dims && dims->hidden > 0 && dims->seq > 0)
        check_flops(p, dims, out);
    if (m && m->n)
        check_spread(m, out);
    check_balance(p, out);
    check_memory(p, out);
}
