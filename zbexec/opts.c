/* opts.c - zbexec's command line: a table of options, each with the
 * parser of its value, and the usage text. */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "exec.h"
#include "zbsched/units.h"

static int want_int(const char *name, const char *v, long lo, long hi,
                    long *out, struct zb_error *err)
{
    char *end;

    errno = 0;
    *out = strtol(v, &end, 10);
    if (!*v || *end || errno || *out < lo || *out > hi)
        return zb_error_set(err, ZB_EINVAL, "%s must be an integer in "
                            "[%ld, %ld], got '%s'", name, lo, hi, v);
    return 0;
}

static int want_num(const char *name, const char *v, double lo, double *out,
                    struct zb_error *err)
{
    char *end;

    *out = strtod(v, &end);
    if (!*v || *end || !isfinite(*out) || *out < lo)
        return zb_error_set(err, ZB_EINVAL, "%s must be a number >= %g, "
                            "got '%s'", name, lo, v);
    return 0;
}

/* mlp:layers=L,hidden=H,batch=B or transformer:layers=L,hidden=H,
 * heads=N,seq=S,ffn=F,batch=B, any subset in any order; naming a model
 * restores its defaults first. */
enum { K_LAYERS, K_HIDDEN, K_BATCH, K_HEADS, K_SEQ, K_FFN, NKEYS };

static int model_keys(char *spec, struct exec_opts *o, int nkeys,
                      struct zb_error *err)
{
    static const char *const keys[NKEYS] = { "layers", "hidden", "batch",
                                             "heads", "seq", "ffn" };
    static const long max[NKEYS] = { 64, 16384, 65536, 1024, 65536, 65536 };
    int *dst[NKEYS] = { &o->layers, &o->hidden, &o->batch, &o->heads,
                        &o->seq, &o->ffn };
    char *save = NULL;

    for (char *kv = strtok_r(spec, ",", &save); kv;
         kv = strtok_r(NULL, ",", &save)) {
        char *eq = strchr(kv, '=');
        int k = 0, rc;
        long n;
        if (eq)
            *eq = '\0';
        while (k < nkeys && strcmp(kv, keys[k]))
            k++;
        if (!eq || k == nkeys)
            return zb_error_set(err, ZB_EINVAL, "--model %s: unknown key "
                                "'%s' (expected %s)",
                                o->transformer ? "transformer" : "mlp", kv,
                                o->transformer ? "layers, hidden, heads, "
                                "seq, ffn or batch" : "layers, hidden or "
                                "batch");
        if ((rc = want_int(keys[k], eq + 1, 1, max[k], &n, err)) < 0) {
            zb_error_prefix(err, "--model");
            return rc;
        }
        *dst[k] = (int)n;
    }
    return 0;
}

/* The transformer's shapes must split into heads, and each tensor must
 * stay addressable by the int sizes of BLAS and of a message's header. */
static int check_transformer(const struct exec_opts *o,
                             struct zb_error *err)
{
    const double tokens = (double)o->batch * o->seq;
    const double most[] = { tokens * o->hidden * 3, tokens * o->ffn,
                            (double)o->batch * o->heads * o->seq * o->seq,
                            (double)o->hidden * o->ffn };

    if (o->hidden % o->heads)
        return zb_error_set(err, ZB_EINVAL, "--model transformer: hidden "
                            "%d is not divisible by heads %d", o->hidden,
                            o->heads);
    for (size_t i = 0; i < sizeof(most) / sizeof(most[0]); i++)
        if (most[i] > 0x7fffffff)
            return zb_error_set(err, ZB_EINVAL, "--model transformer: a "
                                "tensor of %.3g floats is over the 2^31 "
                                "a buffer may hold (fewer tokens, a "
                                "smaller hidden or ffn)", most[i]);
    return 0;
}

static int parse_model(const char *v, struct exec_opts *o,
                       struct zb_error *err)
{
    const char *colon = strchr(v, ':');
    size_t len = colon ? (size_t)(colon - v) : strlen(v);
    char buf[256];
    int rc;

    if (len == 3 && !strncmp(v, "mlp", 3)) {
        o->transformer = false;
        o->layers = 2, o->hidden = 64, o->batch = 16;
    } else if (len == 11 && !strncmp(v, "transformer", 11)) {
        o->transformer = true;
        o->layers = 1, o->hidden = 64, o->heads = 4, o->seq = 32;
        o->ffn = 256, o->batch = 2;
    } else {
        return zb_error_set(err, ZB_EINVAL, "--model: unknown model '%s' "
                            "(expected mlp:layers=L,hidden=H,batch=B or "
                            "transformer:layers=L,hidden=H,heads=N,seq=S,"
                            "ffn=F,batch=B)", v);
    }
    if (colon && strlen(colon + 1) >= sizeof(buf))
        return zb_error_set(err, ZB_EINVAL, "--model: '%s' is too long", v);
    snprintf(buf, sizeof(buf), "%s", colon ? colon + 1 : "");
    rc = model_keys(buf, o, o->transformer ? NKEYS : K_HEADS, err);
    if (rc == 0 && o->transformer)
        rc = check_transformer(o, err);
    return rc;
}

static int parse_nan(const char *v, struct exec_opts *o,
                     struct zb_error *err)
{
    if (sscanf(v, "%d:%d", &o->nan_stage, &o->nan_mb) != 2 ||
        o->nan_stage < 0 || o->nan_mb < 0)
        return zb_error_set(err, ZB_EINVAL,
                            "--inject-nan must be STAGE:MB, got '%s'", v);
    return 0;
}

enum opt_id {
    O_BACKEND, O_TRANSPORT, O_MODEL, O_ITERS, O_SEED, O_CHECK, O_TIMEOUT,
    O_SYNTHETIC, O_TIME_UNIT, O_LR, O_CLIP, O_POSTVAL, O_NOVAL, O_NAN, O_REPORT,
    O_TRACE, O_TRACE_PRED, O_PROFILE, O_HELP, O_VERSION
};

static const struct {
    const char *name;
    enum opt_id id;
    bool has_arg;
} table[] = {
    { "backend", O_BACKEND, true },
    { "transport", O_TRANSPORT, true },
    { "model", O_MODEL, true },
    { "iters", O_ITERS, true },
    { "seed", O_SEED, true },
    { "check", O_CHECK, false },
    { "timeout", O_TIMEOUT, true },
    { "synthetic", O_SYNTHETIC, false },
    { "time-unit", O_TIME_UNIT, true },
    { "lr", O_LR, true },
    { "clip", O_CLIP, true },
    { "post-validation", O_POSTVAL, false },
    { "no-validate", O_NOVAL, false },
    { "inject-nan", O_NAN, true },
    { "report", O_REPORT, true },
    { "trace", O_TRACE, true },
    { "trace-predicted", O_TRACE_PRED, true },
    { "profile-out", O_PROFILE, true },
    { "help", O_HELP, false },
    { "version", O_VERSION, false },
};

static int apply(struct exec_opts *o, enum opt_id id, const char *v,
                 struct zb_error *err)
{
    long n;

    switch (id) {
    case O_BACKEND: o->backend = v; return 0;
    case O_TRANSPORT:
        if (strcmp(v, "nccl") && strcmp(v, "mpi"))
            return zb_error_set(err, ZB_EINVAL, "--transport: expected "
                                "nccl or mpi, got '%s'", v);
        o->transport = v;
        return 0;
    case O_MODEL: return parse_model(v, o, err);
    case O_ITERS:
        if (want_int("--iters", v, 1, 1000000, &n, err) < 0)
            return ZB_EINVAL;
        o->iters = (int)n;
        return 0;
    case O_SEED:
        if (want_int("--seed", v, 0, 0x7fffffffL, &n, err) < 0)
            return ZB_EINVAL;
        o->seed = (uint64_t)n;
        return 0;
    case O_CHECK: o->check = true; return 0;
    case O_TIMEOUT: return want_num("--timeout", v, 0, &o->timeout, err);
    case O_SYNTHETIC: o->synthetic = true; return 0;
    case O_TIME_UNIT: {
        enum zb_time_unit u;    /* us|ms|s as zbsched, or ms per unit */
        if (zb_time_unit_parse("--time-unit", v, &u, NULL) == 0)
            return o->time_unit = 1e3 * zb_time_unit_seconds(u), 0;
        return want_num("--time-unit", v, 1e-6, &o->time_unit, err);
    }
    case O_LR: return want_num("--lr", v, 0, &o->lr, err);
    case O_CLIP: return want_num("--clip", v, 0, &o->clip, err);
    case O_POSTVAL: o->post_validation = true; return 0;
    case O_NOVAL: o->validate = false; return 0;
    case O_NAN: return parse_nan(v, o, err);
    case O_REPORT: o->report = v; return 0;
    case O_TRACE: o->trace = v; return 0;
    case O_TRACE_PRED: o->trace_predicted = v; return 0;
    case O_PROFILE: o->profile_out = v; return 0;
    case O_HELP: o->help = true; return 0;
    case O_VERSION: o->version = true; return 0;
    }
    return 0;
}

int opts_parse(int argc, char **argv, struct exec_opts *o,
               struct zb_error *err)
{
    *o = (struct exec_opts){
        .backend = NULL, .layers = 2, .hidden = 64, .batch = 16,
        .heads = 4, .seq = 32, .ffn = 256,
        .iters = 2, .seed = 1, .timeout = 300, .time_unit = 1,
        .lr = 0.01, .validate = true, .nan_stage = -1, .nan_mb = -1,
    };
    for (int i = 1; i < argc; i++) {
        const char *arg = argv[i], *eq, *v = NULL;
        size_t len, k = 0, nopts = sizeof(table) / sizeof(table[0]);
        int rc;

        if (strncmp(arg, "--", 2)) {
            if (o->schedule)
                return zb_error_set(err, ZB_EINVAL, "one schedule file "
                                    "expected, got '%s' and '%s'",
                                    o->schedule, arg);
            o->schedule = arg;
            continue;
        }
        arg += 2;
        eq = strchr(arg, '=');
        len = eq ? (size_t)(eq - arg) : strlen(arg);
        while (k < nopts && (strlen(table[k].name) != len ||
                             strncmp(table[k].name, arg, len)))
            k++;
        if (k == nopts)
            return zb_error_set(err, ZB_EINVAL, "unknown option '%s' (see "
                                "'zbexec --help')", argv[i]);
        if (table[k].has_arg) {
            if (eq)
                v = eq + 1;
            else if (i + 1 < argc)
                v = argv[++i];
            else
                return zb_error_set(err, ZB_EINVAL, "option '--%s' needs "
                                    "a value", table[k].name);
        } else if (eq) {
            return zb_error_set(err, ZB_EINVAL, "option '--%s' takes no "
                                "value", table[k].name);
        }
        if ((rc = apply(o, table[k].id, v, err)) < 0)
            return rc;
    }
    if (o->help || o->version)
        return 0;
    if (!o->schedule)
        return zb_error_set(err, ZB_EINVAL, "no schedule file (usage: "
                            "mpirun -np P zbexec SCHEDULE.json [options])");
    if (o->synthetic && (o->check || o->nan_stage >= 0))
        return zb_error_set(err, ZB_EINVAL, "--synthetic runs no model: "
                            "--check and --inject-nan need one");
    return 0;
}

void opts_usage(FILE *out)
{
    fputs(
"usage: mpirun -np P zbexec SCHEDULE.json [options]\n"
"\n"
"Replay a zbsched schedule, one process per rank: P = the schedule's pp,\n"
"times its dp with data parallelism (world rank = replica * pp + pipeline\n"
"rank; each replica trains its own microbatches).\n"
"\n"
"  --backend cpu|cuda     MPI + OpenBLAS (zbexec's only one) or NCCL +\n"
"                         cuBLAS (zbexec-cuda's default)\n"
"  --transport nccl|mpi   cuda: NCCL between GPUs (default; one GPU per\n"
"                         rank) or MPI through pinned host buffers (ranks\n"
"                         may share a GPU); cpu: mpi only\n"
"  --model mlp:layers=L,hidden=H,batch=B\n"
"                         per stage: L tanh Linear(H, H) layers; B rows per\n"
"                         microbatch (default layers=2,hidden=64,batch=16)\n"
"  --model transformer:layers=L,hidden=H,heads=N,seq=S,ffn=F,batch=B\n"
"                         per stage: L pre-norm blocks (causal attention of\n"
"                         N heads, MLP H -> F -> H, GELU) on B sequences of\n"
"                         S tokens of width H (default layers=1,hidden=64,\n"
"                         heads=4,seq=32,ffn=256,batch=2); cuda: bf16\n"
"                         tensors (fp32 master weights and gradients, fp32\n"
"                         accumulation), --check within 4 x 2^-8 x\n"
"                         (1 + blocks of the model) of each tensor's\n"
"                         largest magnitude\n"
"  --iters N              iterations (default 2; the first is the warm-up)\n"
"  --seed S               weights and data (default 1)\n"
"  --check                compare loss, gradients and weights with a\n"
"                         sequential single-process run\n"
"  --timeout SEC          abort every rank when one op waits or runs\n"
"                         longer (default 300, 0 = off)\n"
"  --synthetic            no model: each pass sleeps its profiled duration,\n"
"                         each message is usable comm after its send\n"
"  --time-unit us|ms|s|MS the profile's time unit, or milliseconds per\n"
"                         unit (default 1)\n"
"  --lr X --clip NORM     SGD step size; global gradient norm clip (0 = off)\n"
"  --post-validation      step at once, check after, roll back on failure\n"
"  --report FILE          predicted and realized measures as JSON\n"
"  --trace FILE           Chrome trace-event JSON of the run (Perfetto)\n"
"  --trace-predicted FILE the simulator's timeline in the same format\n"
"  --profile-out FILE     measured profile JSON for zbsched --profile (F, B,\n"
"                         W medians, comm, M_B, M_W); spread on stdout\n"
"\n"
"testing: --no-validate (skip the validator to exercise the run-time\n"
"checks), --inject-nan STAGE:MB (NaN in that weight gradient, iteration 1)\n"
"\n"
"  --version              print the version and exit\n"
"\n"
"exit status: 0 ok, 1 failure, 2 usage error\n", out);
}
