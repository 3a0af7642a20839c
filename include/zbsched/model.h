/* model.h - a per-layer model, the input of `zbsched plan` (docs/formats.md,
 * "Model"): each layer's F/B/W times, activation bytes, parameters
 * and output bytes, as one pipeline rank's GPU sees them (after tensor
 * parallelism), and the bytes of model state per parameter.
 *
 * The reader is strict: unknown or repeated keys, wrong types, negative
 * values and bad `count` entries are errors naming the field
 * ("layers[3].F must be >= 0, got -1"). Entries with `count` are expanded
 * here, so a model holds one zb_layer per layer. Ownership: a model owns
 * its names and arrays; zb_model_release() frees them. */
#ifndef ZBSCHED_MODEL_H
#define ZBSCHED_MODEL_H

#include "zbsched/error.h"
#include "zbsched/units.h"

/* At most this many expanded layers: far above any model (DeepSeek-V3
 * has 64 entries), low enough that a typo in `count` is caught. */
#define ZB_MODEL_MAX_LAYERS 4096

enum zb_layer_kind {
    ZB_LAYER_EMBEDDING,
    ZB_LAYER_LAYER,     /* a transformer block */
    ZB_LAYER_MTP,       /* a multi-token-prediction layer */
    ZB_LAYER_HEAD,      /* final norm, output projection, loss */
    ZB_LAYER_OTHER
};

struct zb_layer {
    char *name;             /* expanded: "layers.7" */
    enum zb_layer_kind kind;
    double f, b, w;         /* one microbatch, in the model's time unit */
    double act_bytes;       /* what F keeps until B, per microbatch */
    double act_w_bytes;     /* what B keeps until W, per microbatch */
    double params;          /* parameters held on this GPU */
    double out_bytes;       /* output sent downstream per microbatch (the
                               gradient sent back has the same size) */
};

struct zb_model {
    char *name;
    enum zb_time_unit time_unit;
    struct zb_layer *layers;    /* n, in model order */
    int n;
    double bytes_weight, bytes_grad, bytes_optim;  /* per parameter */
};

/* Defaults of state_bytes: bf16 weights, fp32 gradients, Adam with fp32
 * master weights, m and v. */
#define ZB_MODEL_BYTES_WEIGHT 2.0
#define ZB_MODEL_BYTES_GRAD 4.0
#define ZB_MODEL_BYTES_OPTIM 12.0

/* Parse model JSON text. On failure *out holds nothing to release. */
int zb_model_parse(const char *text, struct zb_model *out,
                   struct zb_error *err);
void zb_model_release(struct zb_model *m);

const char *zb_layer_kind_name(enum zb_layer_kind k);

/* F + B + W of layer i: its work per microbatch. */
static inline double zb_model_work(const struct zb_model *m, int i)
{
    return m->layers[i].f + m->layers[i].b + m->layers[i].w;
}

#endif
