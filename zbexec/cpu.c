/* cpu.c - the cpu backend: OpenBLAS for the math, MPI point-to-point for
 * the messages, MPI's collectives on host memory for data parallelism,
 * the host clock for timing. Its math table is also the
 * sequential reference's, which is what makes --check exact. */
#include <cblas.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "exec.h"
#include "zbsched/xalloc.h"

/* ---- Math ------------------------------------------------------------- */

/* MPI moves a message only inside MPI calls (Open MPI has no progress
 * thread for shared memory or TCP), so a receive posted early would wait
 * for the end of the pass that runs meanwhile. The GEMMs therefore run in
 * row blocks of about GEMM_BLOCK_FLOPS (a few ms of one core), never
 * under GEMM_BLOCK_ROWS rows (thinner calls cost OpenBLAS its blocking,
 * several times the time), and poke MPI's progress between blocks. The
 * blocks depend on the shape only, so the sequential reference, which
 * calls the same table, splits alike and --check stays exact. */
#define GEMM_BLOCK_FLOPS (1L << 26)
#define GEMM_BLOCK_ROWS 64

static MPI_Comm progress_comm = MPI_COMM_NULL;   /* set by cpu_init */

static void cpu_progress(void)
{
    int flag;

    if (progress_comm != MPI_COMM_NULL)
        MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, progress_comm, &flag,
                   MPI_STATUS_IGNORE);
}

static float *cpu_alloc(void *dev, size_t n)
{
    (void)dev;
    return zb_xcalloc(n ? n : 1, sizeof(float));
}

static void cpu_release(void *dev, float *p)
{
    (void)dev;
    free(p);
}

static void cpu_copy(void *dev, float *dst, const float *src, size_t n)
{
    (void)dev;
    memcpy(dst, src, n * sizeof(float));
}

static void cpu_gemm(void *dev, bool ta, bool tb, int m, int n, int k,
                     const float *a, const float *b, float beta, float *c)
{
    const long per_row = 2L * n * k + 1;
    const int rows = GEMM_BLOCK_FLOPS / per_row > GEMM_BLOCK_ROWS
                         ? (int)(GEMM_BLOCK_FLOPS / per_row)
                         : GEMM_BLOCK_ROWS;

    (void)dev;
    for (int r = 0; r < m; r += rows) {
        int mb = m - r < rows ? m - r : rows;
        /* Rows r.. of op(A): rows of A, or columns when transposed. */
        const float *ar = ta ? a + r : a + (size_t)r * k;
        cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans,
                    tb ? CblasTrans : CblasNoTrans, mb, n, k, 1.0f, ar,
                    ta ? m : k, b, tb ? k : n, beta, c + (size_t)r * n, n);
        if (r + mb < m)
            cpu_progress();
    }
}

static void cpu_bias_act(void *dev, float *z, const float *bias, int rows,
                         int cols, bool tanh_act)
{
    (void)dev;
    for (int i = 0; i < rows; i++)
        for (int j = 0; j < cols; j++) {
            float v = z[(size_t)i * cols + j] + bias[j];
            z[(size_t)i * cols + j] = tanh_act ? tanhf(v) : v;
        }
}

static void cpu_act_grad(void *dev, float *dz, const float *dy,
                         const float *y, size_t n)
{
    (void)dev;
    for (size_t i = 0; i < n; i++)
        dz[i] = dy[i] * (1.0f - y[i] * y[i]);
}

static void cpu_colsum(void *dev, float *out, const float *x, int rows,
                       int cols)
{
    (void)dev;
    for (int j = 0; j < cols; j++)
        out[j] = 0;
    for (int i = 0; i < rows; i++)
        for (int j = 0; j < cols; j++)
            out[j] += x[(size_t)i * cols + j];
}

static void cpu_axpy(void *dev, float *y, float a, const float *x, size_t n)
{
    (void)dev;
    for (size_t i = 0; i < n; i++)
        y[i] += a * x[i];
}

static void cpu_mse(void *dev, float *dy, float *loss, const float *y,
                    const float *t, size_t n, float scale)
{
    double sum = 0;

    (void)dev;
    for (size_t i = 0; i < n; i++) {
        float d = y[i] - t[i];
        dy[i] = scale * d;
        sum += (double)d * d;
    }
    *loss = (float)(0.5 * scale * sum);
}

/* One matrix with its natural leading dimensions takes cpu_gemm's row
 * blocks; batches of small ones (attention's heads) poke MPI between
 * matrices instead. Either way the calls depend on the shapes only. */
static void cpu_bgemm(void *dev, bool ta, bool tb, int m, int n, int k,
                      const float *a, int lda, size_t sa, const float *b,
                      int ldb, size_t sb, float beta, float *c, int ldc,
                      size_t sc, int count)
{
    if (count == 1 && lda == (ta ? m : k) && ldb == (tb ? k : n) &&
        ldc == n) {
        cpu_gemm(dev, ta, tb, m, n, k, a, b, beta, c);
        return;
    }
    for (int i = 0; i < count; i++) {
        cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans,
                    tb ? CblasTrans : CblasNoTrans, m, n, k, 1.0f,
                    a + i * sa, lda, b + i * sb, ldb, beta, c + i * sc,
                    ldc);
        cpu_progress();
    }
}

static void cpu_rmsnorm(void *dev, float *y, float *rstd, const float *x,
                        int rows, int cols)
{
    (void)dev;
    tfk_rmsnorm(y, rstd, x, rows, cols);
}

static void cpu_rmsnorm_grad(void *dev, float *dx, const float *dy,
                             const float *y, const float *rstd, int rows,
                             int cols)
{
    (void)dev;
    tfk_rmsnorm_grad(dx, dy, y, rstd, rows, cols);
}

static void cpu_gelu(void *dev, float *y, const float *x, size_t n)
{
    (void)dev;
    tfk_gelu(y, x, n);
}

static void cpu_gelu_grad(void *dev, float *dx, const float *dy,
                          const float *x, size_t n)
{
    (void)dev;
    tfk_gelu_grad(dx, dy, x, n);
}

static void cpu_softmax(void *dev, float *p, int s, int mats, float scale)
{
    (void)dev;
    tfk_softmax(p, s, mats, scale);
}

static void cpu_softmax_grad(void *dev, float *dp, const float *p, int s,
                             int mats, float scale)
{
    (void)dev;
    tfk_softmax_grad(dp, p, s, mats, scale);
}

static void cpu_heads(void *dev, float *dst, const float *src, int b, int s,
                      int h, int d, int parts, bool split)
{
    (void)dev;
    tfk_heads(dst, src, b, s, h, d, parts, split);
}

const struct zb_math zb_math_cpu = {
    .alloc = cpu_alloc,
    .release = cpu_release,
    .upload = cpu_copy,
    .download = cpu_copy,
    .copy = cpu_copy,
    .gemm = cpu_gemm,
    .bias_act = cpu_bias_act,
    .act_grad = cpu_act_grad,
    .colsum = cpu_colsum,
    .axpy = cpu_axpy,
    .mse = cpu_mse,
    .bgemm = cpu_bgemm,
    .rmsnorm = cpu_rmsnorm,
    .rmsnorm_grad = cpu_rmsnorm_grad,
    .gelu = cpu_gelu,
    .gelu_grad = cpu_gelu_grad,
    .softmax = cpu_softmax,
    .softmax_grad = cpu_softmax_grad,
    .heads = cpu_heads,
};

/* ---- Transport and timing -------------------------------------------- */

struct cpu_dev {
    double *marks;          /* host ms since the epoch, by slot */
    int nmarks;
};

static int cpu_init(struct exec *x, struct zb_error *err)
{
    struct cpu_dev *d;

    if (x->opt.transport && strcmp(x->opt.transport, "mpi"))
        return zb_error_set(err, ZB_EINVAL, "--transport %s: the cpu "
                            "backend's transport is mpi",
                            x->opt.transport);
    d = zb_xcalloc(1, sizeof(*d));
    d->nmarks = 3 * x->ops->n + 1;
    d->marks = zb_xcalloc((size_t)d->nmarks, sizeof(double));
    x->dev = d;
    progress_comm = x->comm;
    return 0;
}

static void cpu_fini(struct exec *x)
{
    struct cpu_dev *d = x->dev;

    if (!d)
        return;
    progress_comm = MPI_COMM_NULL;
    free(d->marks);
    free(d);
    x->dev = NULL;
}

/* One tag for every message: pairs match in posting order, as in NCCL,
 * and the header check catches an order mismatch. */
static int cpu_post(struct exec *x, struct xmsg *m, struct zb_error *err)
{
    MPI_Request *req = zb_xmalloc(sizeof(*req));
    int rc;

    if (!m->send)
        m->buf = zb_math_cpu.alloc(NULL, m->n);
    else
        memcpy(m->buf, &m->hdr, sizeof(m->hdr));
    if (m->send)
        rc = MPI_Isend(m->buf, (int)m->n, MPI_FLOAT, m->peer, 0, x->comm,
                       req);
    else
        rc = MPI_Irecv(m->buf, (int)m->n, MPI_FLOAT, m->peer, 0, x->comm,
                       req);
    if (rc != MPI_SUCCESS) {
        free(req);
        if (!m->send)
            free(m->buf);
        return exec_mpi_error(rc, m->send ? "MPI_Isend" : "MPI_Irecv", err);
    }
    m->priv = req;
    return 0;
}

static int cpu_flush(struct exec *x, struct zb_error *err)
{
    (void)x;
    (void)err;
    return 0;
}

static int cpu_test(struct exec *x, struct xmsg *m, bool *done,
                    struct zb_error *err)
{
    MPI_Status status;
    int flag = 0, count = 0, rc;

    (void)x;
    rc = MPI_Test(m->priv, &flag, &status);
    if (rc != MPI_SUCCESS)
        return exec_mpi_error(rc, "MPI_Test", err);
    *done = flag;
    if (!flag)
        return 0;
    free(m->priv);
    m->priv = NULL;
    if (m->send)
        return 0;
    MPI_Get_count(&status, MPI_FLOAT, &count);
    if ((size_t)count < MSG_HDR_FLOATS)
        return zb_error_set(err, ZB_EILLEGAL, "a %d-float message from "
                            "rank %d is too short for its header", count,
                            m->peer);
    memcpy(&m->got, m->buf, sizeof(m->got));
    return 0;
}

static int cpu_coll_post(struct exec *x, enum coll_kind k, int op,
                         float *buf, float *shard, void **req,
                         struct zb_error *err)
{
    MPI_Request *r = zb_xmalloc(sizeof(*r));
    int rc = coll_mpi_post(x, k, buf, shard, r, err);

    (void)op;
    if (rc < 0) {
        free(r);
        return rc;
    }
    *req = r;
    return 0;
}

static int cpu_coll_test(struct exec *x, void *req, bool *done,
                         struct zb_error *err)
{
    int flag = 0, rc;

    (void)x;
    rc = MPI_Test(req, &flag, MPI_STATUS_IGNORE);
    if (rc != MPI_SUCCESS)
        return exec_mpi_error(rc, "MPI_Test", err);
    *done = flag;
    if (flag)
        free(req);
    return 0;
}

static void cpu_mark(struct exec *x, int slot)
{
    struct cpu_dev *d = x->dev;

    d->marks[slot] = exec_now() - x->epoch;
}

static int cpu_marks(struct exec *x, int n, double *ms, struct zb_error *err)
{
    struct cpu_dev *d = x->dev;

    (void)err;
    memcpy(ms, d->marks, (size_t)n * sizeof(double));
    return 0;
}

const struct zb_executor zb_executor_cpu = {
    .name = "cpu",
    .math = &zb_math_cpu,
    .init = cpu_init,
    .fini = cpu_fini,
    .post = cpu_post,
    .flush = cpu_flush,
    .test = cpu_test,
    .consume = NULL,        /* MPI moves data only when the host calls it */
    .coll_post = cpu_coll_post,
    .coll_test = cpu_coll_test,
    .coll_consume = NULL,   /* likewise */
    .mark = cpu_mark,
    .marks = cpu_marks,
};
