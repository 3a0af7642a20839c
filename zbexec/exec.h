/* exec.h - zbexec, the executor: replays a schedule's per-rank op lists
 * with one MPI process per rank (docs/design.md, "Commands"). The one header of
 * zbexec/: options, the backend table, the model and the engine state.
 *
 * Ownership: struct exec owns everything it points to; exec_release()
 * frees it. Const pointer arguments are borrowed, never kept. Functions
 * that can fail return 0 or a negative ZB_E* code with detail in err. */
#ifndef ZBEXEC_EXEC_H
#define ZBEXEC_EXEC_H

/* The CUDA backend is C++ (cuda.cu): keep this header valid C++ too. */
#define OMPI_SKIP_MPICXX 1
#define MPICH_SKIP_MPICXX 1
#include <mpi.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

#include "zbsched/error.h"
#include "zbsched/profile.h"
#include "zbsched/schedule.h"

/* ---- Options (opts.c) ---------------------------------------------------- */

struct exec_opts {
    const char *schedule;       /* SCHEDULE.json */
    const char *backend;        /* --backend; NULL: the table's first */
    const char *transport;      /* --transport nccl|mpi (cuda); NULL:
                                   the backend's default */
    int layers, hidden, batch;  /* --model mlp:layers=,hidden=,batch= */
    bool transformer;           /* --model transformer:... (else mlp) */
    int heads, seq, ffn;        /* transformer:heads=,seq=,ffn= */
    bool version;               /* --version */
    int iters;                  /* --iters; iteration 1 is the warm-up */
    uint64_t seed;              /* --seed: weights and data */
    bool check;                 /* --check against the sequential run */
    double timeout;             /* --timeout seconds per op; 0 = off */
    bool synthetic;             /* --synthetic: sleep, no model */
    double time_unit;           /* --time-unit: ms per profile time unit */
    double lr, clip;            /* --lr; --clip global norm, 0 = off */
    bool post_validation;       /* --post-validation (or the JSON's STEP) */
    bool validate;              /* false with --no-validate (tests only) */
    int nan_stage, nan_mb;      /* --inject-nan STAGE:MB; -1 = none */
    const char *report;         /* --report FILE */
    const char *trace;          /* --trace FILE */
    const char *trace_predicted;/* --trace-predicted FILE */
    const char *profile_out;    /* --profile-out FILE */
    bool help;
};

/* Fill o from argv; ZB_EINVAL with a one-line message on a usage error. */
int opts_parse(int argc, char **argv, struct exec_opts *o,
               struct zb_error *err);
void opts_usage(FILE *out);

/* ---- Tensor math (one table per device) ---------------------------------- */

/* Row-major float matrices on one device. Calls are queued in order on
 * the device's compute stream; a failure is sticky and reported by the
 * backend's next sync point (CUDA's own error model), so model code stays
 * a plain sequence of calls. The CPU table ignores dev (NULL is fine). */
struct zb_math {
    /* Contents undefined: every caller writes a buffer before reading
     * it (no needless memset on a device). */
    float *(*alloc)(void *dev, size_t n);
    void (*release)(void *dev, float *p);            /* NULL is fine */
    void (*upload)(void *dev, float *dst, const float *host, size_t n);
    /* Waits for the compute stream, then copies to the host. */
    void (*download)(void *dev, float *host, const float *src, size_t n);
    void (*copy)(void *dev, float *dst, const float *src, size_t n);
    /* C (m x n) = op(A) op(B) + beta C; op(A) is m x k. */
    void (*gemm)(void *dev, bool ta, bool tb, int m, int n, int k,
                 const float *a, const float *b, float beta, float *c);
    /* z = act(z + bias) row by row; act is tanh or the identity. */
    void (*bias_act)(void *dev, float *z, const float *bias, int rows,
                     int cols, bool tanh_act);
    /* dz = dy * (1 - y^2), the tanh derivative (dz may alias dy). */
    void (*act_grad)(void *dev, float *dz, const float *dy, const float *y,
                     size_t n);
    /* out[j] = sum over rows of x[i][j], rows in order. */
    void (*colsum)(void *dev, float *out, const float *x, int rows,
                   int cols);
    /* y += a * x */
    void (*axpy)(void *dev, float *y, float a, const float *x, size_t n);
    /* dy = scale (y - t); *loss = scale / 2 * sum (y - t)^2 (on device). */
    void (*mse)(void *dev, float *dy, float *loss, const float *y,
                const float *t, size_t n, float scale);
    /* The transformer's steps (transformer.c; the mlp calls none).
     * count GEMMs C_i = op(A_i) op(B_i) + beta C_i, row-major with
     * leading dimensions lda, ldb, ldc, X_i = X + i * stride_x; the cuda
     * backend rounds A and B to bf16 and accumulates in fp32. */
    void (*bgemm)(void *dev, bool ta, bool tb, int m, int n, int k,
                  const float *a, int lda, size_t sa, const float *b,
                  int ldb, size_t sb, float beta, float *c, int ldc,
                  size_t sc, int count);
    /* y = x / rms(x) row by row (no learnable gain), rstd = 1 / rms. */
    void (*rmsnorm)(void *dev, float *y, float *rstd, const float *x,
                    int rows, int cols);
    /* dx += rstd (dy - y mean(dy y)) row by row: the gradient through
     * rmsnorm (y its output) added to the residual's in dx. */
    void (*rmsnorm_grad)(void *dev, float *dx, const float *dy,
                         const float *y, const float *rstd, int rows,
                         int cols);
    /* y = gelu(x), the tanh form; dx = dy gelu'(x) (dx may alias dy). */
    void (*gelu)(void *dev, float *y, const float *x, size_t n);
    void (*gelu_grad)(void *dev, float *dx, const float *dy, const float *x,
                      size_t n);
    /* Causal softmax in place over rows of s x s score matrices:
     * p[i][j] = softmax_j(scale p[i][j]) for j <= i, 0 beyond. */
    void (*softmax)(void *dev, float *p, int s, int mats, float scale);
    /* dp = scale p (dp - sum_j dp p) in place, the gradient of the
     * scores from that of the probabilities. */
    void (*softmax_grad)(void *dev, float *dp, const float *p, int s,
                         int mats, float scale);
    /* Heads apart: src [b][s][parts][h][d] -> dst [parts][b][h][s][d];
     * split false is the inverse. */
    void (*heads)(void *dev, float *dst, const float *src, int b, int s,
                  int h, int d, int parts, bool split);
    /* Typed buffers, optional (NULL in the cpu table, whose buffers are
     * all float). A buffer keeps the type it was allocated with: alloc's
     * are float, alloc_act's the model's activation type (the cuda
     * backend's transformer: bf16); every step above reads and writes
     * each operand in its own type and computes in float. alloc_act: n
     * entries, the first hdr of them floats (a message's header), the
     * rest activations (NULL: alloc). */
    float *(*alloc_act)(void *dev, size_t n, size_t hdr);
    /* Entry i of the buffer at p, in p's type (NULL: p + i). */
    float *(*at)(void *dev, const float *p, size_t i);
    /* The n float weights at w as the GEMMs read them: a copy in the
     * activation type, made again whenever w was written since (NULL,
     * or a float activation type: w itself). */
    const float *(*weights)(void *dev, const float *w, size_t n);
};

extern const struct zb_math zb_math_cpu;

/* ---- Messages ------------------------------------------------------------ */

/* Every message starts with this header, checked on receipt: pairs match
 * in order (no tags, as in NCCL), so a send/recv order mismatch shows up
 * as the wrong header instead of silently wrong numbers. */
#define MSG_MAGIC 0x7a626578    /* "zbex" */
#define MSG_HDR_FLOATS 8
enum msg_dir { MSG_F, MSG_B, MSG_PING };

struct msg_header {
    int32_t magic;
    int32_t dir;                /* enum msg_dir */
    int32_t stage;              /* producer stage */
    int32_t mb;
    int32_t iter;
    int32_t count;              /* payload floats */
    int32_t sent_us;            /* sender's post, us since the run's epoch
                                   (synthetic mode's emulated link) */
    int32_t pad;
};

struct xmsg {
    bool send;
    int peer;
    int op;                     /* index of the posting op, -1 for pings */
    struct msg_header hdr;      /* sent, or expected on receipt */
    struct msg_header got;      /* received (filled by test when done) */
    float *buf;                 /* header + payload on the device */
    size_t n;                   /* floats in buf */
    void *priv;                 /* backend request state */
};

/* ---- Backend table (backends.c) ------------------------------------------ */

struct exec;
struct dev_memory;              /* below, with the engine state */

/* A data-parallel collective (coll.c): a sum over the replicas of this
 * pipeline rank (x->dp_comm), on the backend's device buffers; the shards
 * are x->shard_n / x->shard_off. */
enum coll_kind {
    COLL_ALLREDUCE,         /* buf (nparam floats), in place */
    COLL_REDUCE_SCATTER,    /* buf (nparam) -> shard (this replica's) */
    COLL_ALLGATHER          /* every replica's shard -> buf; shard may be
                               buf + this replica's offset (in place) */
};

/* A backend: tensor math, point-to-point transport and the data-parallel
 * collectives for one rank. Host-side collectives (step check, measures)
 * use MPI directly in the engine. */
struct zb_executor {
    const char *name;
    const struct zb_math *math;
    /* Set x->dev; x->sched, x->rank and x->comm are ready. */
    int (*init)(struct exec *x, struct zb_error *err);
    void (*fini)(struct exec *x);
    /* Post m non-blocking; it may wait for flush() to be issued. A send
     * first writes m->hdr into the first MSG_HDR_FLOATS floats of m->buf
     * (after the pass that made the payload). A receive's buffer (m->n
     * floats, freed with the math table's release) is allocated here, on
     * the transport's own timeline, so the receive never waits for
     * compute queued before it. */
    int (*post)(struct exec *x, struct xmsg *m, struct zb_error *err);
    /* Issue what post() queued (one NCCL group per run of comm ops). */
    int (*flush)(struct exec *x, struct zb_error *err);
    /* *done when m completed (m->got filled for a receive); then the
     * backend has released m->priv. */
    int (*test)(struct exec *x, struct xmsg *m, bool *done,
                struct zb_error *err);
    /* Optional: make the compute timeline wait for the receive m without
     * the host waiting (a device-side wait); the engine then keeps m in
     * flight and test() later checks its header. NULL: the host waits. */
    int (*consume)(struct exec *x, struct xmsg *m, struct zb_error *err);
    /* Post collective k non-blocking, after the compute work queued so
     * far, for op `op` of the list (-1: none, the step's all-gather);
     * *req is the backend's handle until coll_test says done. */
    int (*coll_post)(struct exec *x, enum coll_kind k, int op, float *buf,
                     float *shard, void **req, struct zb_error *err);
    /* *done when req completed; then the backend has released it. */
    int (*coll_test)(struct exec *x, void *req, bool *done,
                     struct zb_error *err);
    /* Optional: make the compute timeline wait for req without the host
     * waiting; coll_test later completes it. NULL: the host waits. */
    int (*coll_consume)(struct exec *x, void *req, struct zb_error *err);
    /* Timestamp slot on the compute timeline; slot 0 opens an iteration. */
    void (*mark)(struct exec *x, int slot);
    /* Slots 0..n-1 in host-clock ms since x->epoch (waits for the
     * device); also the sticky-error sync point of the math table. */
    int (*marks)(struct exec *x, int n, double *ms, struct zb_error *err);
    /* Optional, after marks(): the device times of the comm ops (x->t's
     * start, wait and done), replacing the host's enqueue times. */
    void (*comm_times)(struct exec *x);
    /* Optional, after marks(): the iteration's device memory; the
     * high-water marks restart with the next slot 0. NULL: host memory,
     * the engine's count is the measure. */
    void (*memory)(struct exec *x, struct dev_memory *out);
};

extern const struct zb_executor *const zb_executors[];
extern const struct zb_executor zb_executor_cpu;
extern const struct zb_executor zb_executor_cuda;

/* The backend called name (NULL: the program's default, the table's
 * first); ZB_EINVAL naming the built-in ones when there is none. */
int exec_backend_find(const char *name, const struct zb_executor **out,
                      struct zb_error *err);

/* ---- Model (model.c) ----------------------------------------------------- */

/* Each stage is `layers` Linear(hidden, hidden) layers with tanh, the last
 * layer of the last stage linear, and a mean squared error loss. */
struct mlp {
    int layers, hidden, batch;
};

size_t mlp_nparam(const struct mlp *n);     /* per stage: weights, biases */
size_t mlp_nact(const struct mlp *n);       /* batch * hidden */
size_t mlp_param_offset(const struct mlp *n, int layer);  /* W_l; b_l after */

/* A uniform value in [-1, 1) from a counter-based generator: value i of
 * stream, the same on any rank in any order. */
float model_uniform(uint64_t seed, uint64_t stream, uint64_t i);
/* Deterministic from the seed alone, whatever the rank or order. */
void mlp_init_params(const struct mlp *n, uint64_t seed, int stage,
                     float *host);
void mlp_data(const struct mlp *n, uint64_t seed, bool target, int iter,
              int mb, float *host);

/* F: y[l] = act(y[l-1] W_l + b_l), y[-1] = x; y[layers-1] is the output. */
void mlp_forward(const struct zb_math *m, void *dev, const struct mlp *n,
                 const float *w, const float *x, float *const *y, bool last);
/* B, the input gradient only: dz[l] (kept for W) and dx (NULL: skipped,
 * stage 0). On the last stage dy is NULL and the loss provides it. */
void mlp_backward_input(const struct zb_math *m, void *dev,
                        const struct mlp *n, const float *w,
                        const float *const *y, const float *dy,
                        float *const *dz, float *dx, const float *target,
                        float scale, float *loss);
/* W, the weight gradient only: dw (mlp_nparam floats) from the layer
 * inputs (x, y[0..layers-2]) and dz. */
void mlp_backward_weight(const struct zb_math *m, void *dev,
                         const struct mlp *n, const float *x,
                         const float *const *y, const float *const *dz,
                         float *dw);

/* ---- Transformer (transformer.c, tf_pass.c) ------------------------------ */

/* Each stage is `layers` pre-norm blocks on batch x seq tokens of width
 * hidden: rmsnorm (no gain), causal multi-head attention (QKV, heads of
 * hidden / heads, output projection), residual, rmsnorm, MLP hidden ->
 * ffn -> hidden with tanh-GELU, residual; no biases; the same mean
 * squared error loss as the mlp on the last stage's output. */
struct tf {
    int layers, hidden, heads, seq, ffn, batch;
};

/* What F keeps per block for B and W (TF_OUT: the stage's output, last
 * block only), and what B keeps for W: each Linear's input and output
 * gradient. */
enum tf_keep { TF_N1, TF_RSTD1, TF_QKV, TF_P, TF_CTX, TF_N2, TF_RSTD2,
               TF_U, TF_G, TF_NKEEP };
enum tf_grad { TF_DQKV, TF_DH, TF_DU, TF_DOUT, TF_NGRAD };

size_t tf_nparam(const struct tf *n);       /* per stage */
size_t tf_nact(const struct tf *n);         /* batch * seq * hidden */
size_t tf_keep_floats(const struct tf *n, enum tf_keep k);
size_t tf_grad_floats(const struct tf *n, enum tf_grad g);
/* Floats one microbatch keeps from F to W at most (memory floor). */
double tf_mb_floats(const struct tf *n);
/* Whether keep k stays float when activations are of a narrower type
 * (1 / rms: a value a row, as fused norm kernels keep it). */
bool tf_keep_float(enum tf_keep k);
/* Bytes one F keeps (exec_mem_unit's entries) with act-byte activations. */
double tf_mb_bytes(const struct tf *n, size_t act);
/* Name parameter i of a stage: its block, tensor and index in it. */
void tf_param_name(const struct tf *n, size_t i, int *layer,
                   const char **tensor, size_t *index);
/* Offset and size of tensor t (0..3: Wqkv, Wo, W1, W2) of block l. */
size_t tf_tensor(const struct tf *n, int l, int t, size_t *len);
void tf_init_params(const struct tf *n, uint64_t seed, int stage,
                    float *host);
/* F: keep[l * TF_NKEEP + k] filled for every block, out the output. */
void tf_forward(const struct zb_math *m, void *dev, const struct tf *n,
                const float *w, const float *x, float *const *keep,
                float *out);
/* B, input gradients only: grad[l * TF_NGRAD + g] kept for W, dx the
 * input's (NULL: skipped, stage 0); dy NULL on the last stage, where the
 * loss against target gives it from out. */
void tf_backward_input(const struct zb_math *m, void *dev,
                       const struct tf *n, const float *w,
                       const float *const *keep, const float *out,
                       const float *dy, float *const *grad, float *dx,
                       const float *target, float scale, float *loss);
/* W, the weight gradients only: dw = X^T dY of each Linear. */
void tf_backward_weight(const struct zb_math *m, void *dev,
                        const struct tf *n, const float *const *keep,
                        const float *const *grad, float *dw);

struct stage_state;             /* below, with the engine state */

/* One segment of a pass (coll_units.c): the stage's layers [l0, l1)
 * with their weights w (layer l0's first parameter at w[0]; F and B)
 * and, for a W on FSDP units reducing per microbatch, the unit's
 * gradient buffer g (NULL: the stage's dw). Without units a pass is one
 * segment. */
struct pass_seg {
    int l0, l1;
    const float *w;
    float *g;
    bool first, last;           /* the pass's first and last segment */
};

/* The passes of one stage and microbatch with their buffers counted
 * (pass.c's for the mlp), one segment at a time: in the stage input, dy
 * the output gradient. */
void tf_pass_forward(struct exec *x, struct stage_state *st, int mb,
                     float *in, const struct pass_seg *sg);
void tf_pass_backward_input(struct exec *x, struct stage_state *st, int mb,
                            float *dy, const struct pass_seg *sg);
void tf_pass_backward_weight(struct exec *x, struct stage_state *st,
                             int mb, const struct pass_seg *sg);

/* The host loops of the transformer's steps: the cpu table's, and the
 * emulated device's (tests/emu/kernels.cc), one arithmetic for both. */
void tfk_rmsnorm(float *y, float *rstd, const float *x, int rows,
                 int cols);
void tfk_rmsnorm_grad(float *dx, const float *dy, const float *y,
                      const float *rstd, int rows, int cols);
void tfk_gelu(float *y, const float *x, size_t n);
void tfk_gelu_grad(float *dx, const float *dy, const float *x, size_t n);
void tfk_softmax(float *p, int s, int mats, float scale);
void tfk_softmax_grad(float *dp, const float *p, int s, int mats,
                      float scale);
void tfk_heads(float *dst, const float *src, int b, int s, int h, int d,
               int parts, bool split);

/* ---- Engine state -------------------------------------------------------- */

/* A boundary tensor (dir, producer stage, mb) as this rank sees it. */
enum xfer_state {
    XF_EMPTY,        /* nothing yet */
    XF_PRODUCED,     /* made here, waits for its SEND or local consumer */
    XF_SENDING,      /* posted send, buffer freed on completion */
    XF_RECEIVING,    /* posted receive, waits for its consumer */
    XF_USED          /* sent or consumed */
};

struct xfer {
    enum xfer_state state;
    float *buf;                 /* header + payload */
    struct xmsg *msg;           /* while sending or receiving */
};

struct mb_state {               /* one microbatch on one local stage */
    float *x0;                  /* stage input, header + payload (mlp) */
    float **y, **dz;            /* exec_nkeep, exec_ngrad entries: the
                                   mlp's outputs and dz per layer, the
                                   transformer's tf_keep and tf_grad */
    bool f, b, w;               /* passes run (STEP checks all three) */
};

struct stage_state {
    int stage;
    float *w, *g;               /* parameters, gradient accumulator */
    float *saved;               /* copy for a post-validation rollback */
    float *dw;                  /* one microbatch's weight gradient */
    float **pending;            /* m: W results that ran out of mb order */
    int next_w;                 /* next microbatch to accumulate */
    struct mb_state *mbs;       /* m entries */
    float *input;               /* stage 0: m microbatches of data */
    float *target;              /* last stage: m targets */
    float *loss;                /* last stage: m losses on the device */
    /* Data parallelism (coll.c): this replica's shard of the reduced
     * gradient (ZeRO >= 1) and of the weights (ZeRO-3, whose full w
     * exists only from UNSHARD to RESHARD); the collectives in flight. */
    float *gshard, *wshard;
    void *reduce_req, *unshard_req;     /* backend handles, NULL: none */
    int reduce_op, unshard_op;  /* list index of the posting op */
    bool reduced;               /* every REDUCE_GRAD of the iteration
                                   posted (one, or one per microbatch) */
    int nreduced;               /* reduce microbatch: REDUCE_GRADs posted
                                   this iteration */
    int grad_mb;                /* reduce microbatch: the microbatch whose
                                   gradient g holds, not yet posted; -1 */
    bool unshard_consumed;      /* the compute timeline waits for it */
    /* FSDP units (data_parallel.units K > 1; coll_units.c): K entries
     * each. */
    float **uw;                 /* unit u's gathered weights, or NULL */
    float **upiece;             /* ZeRO-3: this replica's part of unit u
                                   while not gathered (none while wshard
                                   holds them all, from STEP on) */
    float **ug;                 /* reduce microbatch: unit u's gradient
                                   waiting for its REDUCE_GRAD, or NULL */
    int *ustate;                /* coll_int.h's enum unit_state */
    int *uop;                   /* list index of unit u's last UNSHARD */
};

struct op_time {                /* host-clock ms since the run's epoch */
    double start, mid, end;     /* compute: pass (mid splits BW); comm:
                                   the post call */
    double wait, done;          /* comm: consumer starts waiting; seen done */
};

struct rank_sample {            /* one rank in one iteration */
    double busy, first, last;
    double peak;                /* activations, profile units */
    double peak_buffers;        /* every live buffer, profile units */
    /* Data parallelism (model mode): the step's first start and its end
     * with the collectives' completions as observed (measure.c); the
     * peaks of the model state and of it plus the activations, in the
     * profile's memory unit. */
    double step_first, step_last;
    double model_state, total_memory;
    /* A device backend's memory (backend memory(), bytes; 0 without):
     * the prediction (the schedule's peak activations plus the model
     * state), the allocator's used and reserved high-water marks this
     * iteration, and the device's memory in use (cudaMemGetInfo) when
     * the backend started and at this iteration's end. */
    double dev_predicted, dev_used_high, dev_reserved_high;
    double dev_used_start, dev_used_now;
};

/* What a device backend measures of its memory after an iteration. */
struct dev_memory {
    double predicted;                   /* bytes: the schedule's peak
                                           activations in their types,
                                           plus the model state */
    double used_high, reserved_high;    /* the allocator's, bytes */
    double used_start, used_now;        /* the device's, bytes */
};

struct step_info {
    bool nonfinite, clipped, rolled_back;
    double norm, loss;
};

struct exec {
    struct exec_opts opt;
    struct zb_schedule sched;       /* validated and simulated */
    const struct zb_profile *p;
    const struct zb_op_list *ops;   /* this rank's list */
    const struct zb_executor *be;
    const struct zb_math *m;
    void *dev;                      /* backend state */
    /* World rank w = replica * pp + pipeline rank (docs/zbexec.md). */
    MPI_Comm comm;                  /* point-to-point: this replica's
                                       pipeline, ranks = pipeline ranks */
    MPI_Comm dp_comm;               /* collectives: the dp replicas of this
                                       pipeline rank (NULL when dp is 1) */
    int rank;                       /* pipeline rank: the op list run */
    int world, nranks;              /* world rank and size */
    int dp, replica;                /* degree, this rank's replica */
    int *shard_n, *shard_off;       /* dp entries: each replica's shard
                                       of a stage's parameters */
    int nstages, iter;
    bool post_validation;
    struct mlp net;                 /* the mlp; with the transformer its
                                       boundary: batch * seq rows of
                                       hidden (data, loss scale) */
    const struct tf *tf;            /* the transformer, NULL: the mlp */
    struct tf tf_shape;             /* what tf points to */
    size_t nact, nparam;
    struct stage_state *st;         /* vpp entries, by chunk */
    struct xfer *xf;                /* 2 * stages * m */
    /* In flight: sends, and receives a pass already consumed on the
     * device (backend consume()) whose header is checked on completion. */
    struct xmsg **sending;
    int nsending, capsending;
    struct op_time *t;              /* per op, this iteration */
    double *marks;                  /* 3 * ops + 1 slots */
    double epoch;                   /* host ms of the run's start */
    /* Activations: what the passes keep for later passes (the profile's
     * memory model), floats in model mode, profile units in synthetic
     * mode; the peak is taken where passes end, as the simulator does. */
    double mem, mem_peak;
    /* Model mode: every live per-microbatch buffer (activations, receives
     * posted early, sends in flight, W results waiting for their turn),
     * floats, peak at every allocation. */
    double live, live_peak;
    /* Model mode: the floats of the model state the rank holds (its
     * stages' weights, gradients and their shards; SGD keeps no optimizer
     * state), peaks of it and, in profile units, of it plus the
     * activations, taken where mem_peak is (exec_mem_sample). */
    double state, state_peak, total_peak;
    double state_win;               /* the most state since the last
                                       sample (exec_state_sample) */
    bool *coll_early;               /* units: per op, a collective its
                                       pass already ran (coll_units.c) */
    float *seg_carry;               /* the transformer's boundary tensor
                                       between two segments of a pass */
    /* ZeRO-1/2: when the host saw the all-gather of the updated weights
     * done (REDUCE_GRAD's second half in the model); 0 without one. */
    double gather_done;
    /* Model mode: floats the first F, B and W of each chunk added to mem
     * ([chunk][F, B, W]): the measured M_B, M_W - M_B and -M_W. */
    double *mem_delta;
    struct rank_sample *samples;    /* per iteration, this rank */
    double *durations;              /* [chunk][F,B,W][iter * m] (ms) */
    struct step_info *steps;        /* per iteration */
    FILE *trace;                    /* this rank's trace events, */
    char *trace_buf;                /* buffered in memory */
    size_t trace_len;
};

/* ---- Engine (engine.c, pass.c, xfer.c, state.c) -------------------------- */

int exec_state_init(struct exec *x, struct zb_error *err);
void exec_release(struct exec *x);
/* Counted allocation of per-microbatch buffers: all of them count as
 * live, activations (act) also as mem. */
float *exec_alloc(struct exec *x, size_t n, bool act);
void exec_free(struct exec *x, float *p, size_t n, bool act);
/* Count a live buffer the backend allocated (a receive's); returns p. */
float *exec_counted(struct exec *x, float *p, size_t n);
/* Counted allocation of model state (weights, gradients, shards). */
float *exec_state_alloc(struct exec *x, size_t n);
void exec_state_free(struct exec *x, float *p, size_t n);
/* Take the memory peaks at a point of the simulator's model: where a
 * pass ends or a collective is posted. */
void exec_mem_sample(struct exec *x);
/* Within a pass (units): note the model state, which the pass's end
 * sample adds to the activations it leaves, as the model does. */
void exec_state_sample(struct exec *x);
/* A pass keeps a buffer it was handed (F its input): n floats of live
 * memory become activations too. */
void exec_keep(struct exec *x, size_t n);
/* Floats of activations per unit of the profile's memory: one F's. */
double exec_mem_unit(const struct exec *x);
struct stage_state *exec_stage(struct exec *x, int stage);
/* Entries of a microbatch's y and dz arrays (mlp: layers each). */
int exec_nkeep(const struct exec *x);
int exec_ngrad(const struct exec *x);
/* The model as --model names it. */
void exec_model_name(const struct exec *x, char *buf, size_t n);
/* A stage's initial parameters, whichever the model. */
void exec_init_params(const struct exec *x, int stage, float *host);

/* One pass over this rank's list; x->iter is the iteration. A failure
 * (ZB_EILLEGAL for a list the run-time checks refuse, ZB_EDEVICE for the
 * transport) leaves peers waiting: the caller aborts every rank. */
int exec_iteration(struct exec *x, struct zb_error *err);

/* Compute op i (F, B, W or BW), its input taken first. */
int pass_run(struct exec *x, int i, struct zb_error *err);
/* A pass's output buf is ready for its SEND or same-rank consumer. */
void pass_produce(struct exec *x, enum msg_dir dir, int stage, int mb,
                  float *buf);
/* After a W segment wrote its dW into dw (either model): the stage's
 * first segment takes an injected fault, the last joins st->dw to the
 * gradient in microbatch order (unless it wrote a unit's own buffer).
 * Whether it was the last: then the caller frees what the microbatch
 * kept for W. */
bool pass_weight_done(struct exec *x, struct stage_state *st, int mb,
                      const struct pass_seg *sg, float *dw);

struct xfer *xfer_at(struct exec *x, enum msg_dir dir, int stage, int mb);
/* Comm op i: post its send or receive, non-blocking. */
int xfer_post(struct exec *x, int i, struct zb_error *err);
/* The input buffer of op i from (dir, stage, mb): local or received
 * (waited for here); ownership passes to the caller. */
int xfer_take(struct exec *x, int i, enum msg_dir dir, int stage, int mb,
              float **out, struct zb_error *err);
/* Complete the sends that are done (and drive MPI's progress). */
int xfer_progress(struct exec *x, struct zb_error *err);
/* Wait for every send; then nothing may be left unsent or unconsumed. */
int xfer_drain(struct exec *x, struct zb_error *err);
size_t xfer_floats(const struct exec *x);   /* header + payload */
/* Wait for m (callers tell the watchdog first); checks a receive's
 * header against m->hdr. */
int xfer_wait(struct exec *x, struct xmsg *m, struct zb_error *err);

/* Microbatch mb of this replica in the global batch (replica r runs
 * r*m .. r*m+m-1), and the loss scale 1 / (dp m batch) (the
 * transformer's 1 / (dp m batch seq hidden)) that makes the
 * sum of the replicas' gradients the mean over the global batch. */
int exec_global_mb(const struct exec *x, int mb);
float exec_loss_scale(const struct exec *x);

/* ---- Data-parallel collectives (coll.c and coll_*.c) --------------------- */

/* After exec_state_init: the shard sizes, and with ZeRO-3 each stage
 * keeps only its weight shard (the first UNSHARD gathers). */
int coll_init(struct exec *x, struct zb_error *err);
/* REDUCE_GRAD, UNSHARD or RESHARD at op i, non-blocking. */
int coll_post(struct exec *x, int i, struct zb_error *err);
/* Whether REDUCE_GRAD reduce-scatters each microbatch's gradient. */
bool coll_per_mb(const struct exec *x);
/* Before pass i on stage st: its UNSHARD completed (ZeRO-3); reducing
 * per microbatch, before a W the stage's previous reduce-scatter too,
 * which frees the gradient buffer the W writes. */
int coll_before_pass(struct exec *x, int i, struct stage_state *st,
                     struct zb_error *err);
/* Drive MPI's progress on the collectives in flight. */
int coll_progress(struct exec *x, struct zb_error *err);
/* STEP: every REDUCE_GRAD ran and completed. */
int coll_drain(struct exec *x, struct zb_error *err);
/* The part of stage st that this rank's optimizer updates: weights,
 * gradient, count and offset in the stage's parameters (ZeRO-3 on units:
 * 0, the shard being coll_shard_pieces's pieces). */
void coll_view(const struct exec *x, struct stage_state *st, float **w,
               float **g, size_t *n, size_t *off);
/* This replica's shard of stage st's reduced gradient (shard_n floats;
 * the whole gradient without data parallelism). */
const float *coll_grad_shard(const struct exec *x, struct stage_state *st,
                             size_t *n);
/* FSDP units: the segments of part (F, B or W; a BW runs its B, then
 * its W) of a pass, 1 or K; before segment j, gather what the prefetch
 * says and fill sg; after it, free the unit its RESHARD names or reduce
 * its gradient, ahead of the list's op (docs/zero.md, "Units"). */
int coll_segments(const struct exec *x, enum zb_op_kind part);
int coll_seg_begin(struct exec *x, int i, enum zb_op_kind part, int j,
                   struct pass_seg *sg, struct zb_error *err);
int coll_seg_end(struct exec *x, int i, enum zb_op_kind part, int j,
                 const struct pass_seg *sg, struct zb_error *err);
/* Replica r's shard as pieces of a stage's parameters, in the shard's
 * order: their offsets and lengths (K entries at most); returns how
 * many. One piece but with ZeRO-3 on units, which shards each unit. */
int coll_shard_pieces(const struct exec *x, int r, size_t *off,
                      size_t *len);
/* step_stats() of replica r's shard of the stage gradient g (all of it),
 * in the order that replica sums its own. */
void coll_shard_stats(const struct exec *x, const float *g, int r,
                      double *sumsq, int *bad);
/* ZeRO-1/2 after the step: all-gather the updated weight shards. */
int coll_gather_weights(struct exec *x, struct zb_error *err);
/* Collective k as MPI's non-blocking call on host memory (the cpu
 * backend's buffers, the cuda backend's staging under --transport mpi). */
int coll_mpi_post(const struct exec *x, enum coll_kind k, float *buf,
                  float *shard, MPI_Request *req, struct zb_error *err);

/* ---- Optimizer step (step.c) and the reference (reference.c) ------------- */

/* STEP: all passes ran, then the checked (and maybe rolled back) SGD. */
int step_run(struct exec *x, struct zb_error *err);

/* Replace a weight gradient element by NaN where --inject-nan says. */
void step_inject(const struct exec *x, const struct zb_math *m, void *dev,
                 int stage, int mb, int iter, float *dw);

/* SGD with the global check shared by the pipeline and the reference:
 * sums[s] = squared norm of stage s's gradient, bad if non-finite. */
void step_decide(const struct exec *x, const double *sums, const int *bad,
                 struct step_info *out, float *factor);
void step_stats(const float *g, size_t n, double *sumsq, int *bad);
/* A whole stage gradient's squared norm as the replicas compute it: the
 * sum of their shards' (exec's shard_n), in replica order. */
void step_stage_stats(const struct exec *x, const float *g, double *sumsq,
                      int *bad);

/* Every rank runs the whole model sequentially on the CPU and compares its
 * own stages; ZB_EILLEGAL with the first difference. */
int reference_check(struct exec *x, bool *exact, struct zb_error *err);

/* ---- Measures, report, trace, profile ------------------------------------ */

/* Realized measures (docs/design.md names), in profile time units: the mean
 * over the measured iterations (all but the warm-up), peaks their max. */
struct realized {
    double cost, makespan, bubble_ratio, sync_bubble_ratio;
    double step_time;                       /* data parallelism */
    double *busy, *span, *peak_memory;      /* pp entries */
    double *peak_buffers;                   /* pp entries, model mode */
    double *model_state, *total_memory;     /* pp entries, dp >= 2 */
    /* A device backend's memory, bytes, per rank (NULL without): its
     * rank_sample dev_* figures, the worst measured iteration (the
     * device's use at the end: the last iteration's). */
    double *dev_predicted, *dev_used_high, *dev_reserved_high;
    double *dev_used_start, *dev_used_end;
    int first, last;                        /* measured iterations, 0-based */
};

void measure_iteration(struct exec *x);
/* Rank 0 prints predicted vs realized on stdout and writes --report;
 * collective. check: "exact", "within tolerance", "mismatch" or NULL. */
int measure_report(struct exec *x, const char *check, struct zb_error *err);
/* This rank's realized peak_memory (every iteration) within the
 * schedule's limit; ZB_EILLEGAL naming both when not. */
int measure_check_limit(const struct exec *x, struct zb_error *err);
int report_write(const struct exec *x, const struct realized *r,
                 const char *check, struct zb_error *err);

void trace_iteration(struct exec *x);
int trace_write(struct exec *x, struct zb_error *err);   /* collective */
int trace_write_predicted(const struct exec *x, const char *path,
                          struct zb_error *err);

int profile_write(struct exec *x, struct zb_error *err); /* collective */

/* ---- Process helpers (fail.c, clock.c, watchdog.c) ----------------------- */

/* "zbexec: rank R: ..." on stderr. */
void exec_error(int rank, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
void exec_warn(int rank, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* A failure on one rank while the others may wait for it: print, abort
 * every rank. */
void exec_abort(const struct exec *x, const struct zb_error *err)
    __attribute__((noreturn));
/* Collective: the worst rc of all ranks; the lowest failing rank prints. */
int exec_agree(int rank, int rc, const struct zb_error *err);
/* An MPI return code as a ZB_EDEVICE error naming the call. */
int exec_mpi_error(int rc, const char *call, struct zb_error *err);

double exec_now(void);                  /* host ms, monotonic */
double exec_common_epoch(int rank, int nranks); /* collective: one instant,
                                                    this rank's clock */
void exec_sleep_until(double ms);       /* absolute, exec_now() clock */
void exec_pause(int spins);             /* polling back-off */

/* The watchdog aborts every rank when one activity lasts over --timeout:
 * op i of the list (waiting or running), or a phase named by `what`. */
enum wd_phase { WD_RUN, WD_WAIT };
int watchdog_start(struct exec *x, struct zb_error *err);
void watchdog_op(int op, enum wd_phase phase);
void watchdog_phase(const char *what);  /* static string */
void watchdog_stop(void);

#ifdef __cplusplus
}
#endif

#endif
