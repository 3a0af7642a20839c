/* fake_cuda.h - the part of the CUDA runtime, cuBLAS and NCCL that the
 * cuda backend calls, faked on the host (fake_cuda.cc) so that its
 * transport and stream logic (zbexec/cuda_host.cu and the files
 * zbexec/cuda_int.h lists) runs without a GPU.
 * zbexec/cuda_api.h includes this instead of the real headers when
 * ZB_CUDA_EMU is defined; the names and signatures are CUDA's own. */
#ifndef ZBEXEC_FAKE_CUDA_H
#define ZBEXEC_FAKE_CUDA_H

#include <stddef.h>
#include <stdint.h>
#include <functional>

/* ---- Runtime ------------------------------------------------------------ */

enum cudaError_t {
    cudaSuccess = 0,
    cudaErrorInvalidValue = 1,
    cudaErrorMemoryAllocation = 2,
    cudaErrorInvalidResourceHandle = 400,
    cudaErrorNotReady = 600,
};
enum cudaMemcpyKind {
    cudaMemcpyHostToDevice = 1,
    cudaMemcpyDeviceToHost = 2,
    cudaMemcpyDeviceToDevice = 3,
};
enum cudaMemPoolAttr {
    cudaMemPoolAttrReleaseThreshold = 4,
    cudaMemPoolAttrReservedMemCurrent = 5,
    cudaMemPoolAttrReservedMemHigh = 6,
    cudaMemPoolAttrUsedMemCurrent = 7,
    cudaMemPoolAttrUsedMemHigh = 8,
};
#define cudaStreamNonBlocking 0x01
#define cudaEventDefault 0x00
#define cudaEventDisableTiming 0x02

typedef struct emu_stream *cudaStream_t;
typedef struct emu_event *cudaEvent_t;
typedef struct emu_pool *cudaMemPool_t;

const char *cudaGetErrorString(cudaError_t e);
cudaError_t cudaGetLastError(void);
cudaError_t cudaGetDeviceCount(int *count);
cudaError_t cudaSetDevice(int dev);
cudaError_t cudaGetDevice(int *dev);
cudaError_t cudaDeviceGetPCIBusId(char *id, int len, int dev);
cudaError_t cudaDeviceGetDefaultMemPool(cudaMemPool_t *pool, int dev);
cudaError_t cudaMemPoolSetAttribute(cudaMemPool_t pool, cudaMemPoolAttr a,
                                    void *value);
cudaError_t cudaMemPoolGetAttribute(cudaMemPool_t pool, cudaMemPoolAttr a,
                                    void *value);
cudaError_t cudaMemGetInfo(size_t *free_bytes, size_t *total_bytes);
cudaError_t cudaStreamCreateWithFlags(cudaStream_t *s, unsigned flags);
cudaError_t cudaStreamDestroy(cudaStream_t s);
cudaError_t cudaStreamSynchronize(cudaStream_t s);
cudaError_t cudaStreamWaitEvent(cudaStream_t s, cudaEvent_t e,
                                unsigned flags);
cudaError_t cudaEventCreate(cudaEvent_t *e);
cudaError_t cudaEventCreateWithFlags(cudaEvent_t *e, unsigned flags);
cudaError_t cudaEventDestroy(cudaEvent_t e);
cudaError_t cudaEventRecord(cudaEvent_t e, cudaStream_t s);
cudaError_t cudaEventQuery(cudaEvent_t e);
cudaError_t cudaEventSynchronize(cudaEvent_t e);
cudaError_t cudaEventElapsedTime(float *ms, cudaEvent_t a, cudaEvent_t b);
cudaError_t cudaMallocAsync(void **p, size_t bytes, cudaStream_t s);
cudaError_t cudaFreeAsync(void *p, cudaStream_t s);
cudaError_t cudaMallocHost(void **p, size_t bytes);
cudaError_t cudaFreeHost(void *p);
cudaError_t cudaMemcpyAsync(void *dst, const void *src, size_t bytes,
                            cudaMemcpyKind kind, cudaStream_t s);
cudaError_t cudaMemsetAsync(void *p, int value, size_t bytes,
                            cudaStream_t s);

/* A kernel launch: fn runs on the host when the stream reaches it. */
void emu_launch(cudaStream_t s, std::function<void()> fn);

/* bf16 as the device stores it: a float's upper half, rounded to nearest
 * even (__float2bfloat16_rn; NaN stays NaN), and back, exactly. */
uint16_t emu_bf16(float v);
float emu_float(uint16_t h);

/* ---- cuBLAS ------------------------------------------------------------- */

enum cublasStatus_t {
    CUBLAS_STATUS_SUCCESS = 0,
    CUBLAS_STATUS_NOT_INITIALIZED = 1,
};
enum cublasOperation_t { CUBLAS_OP_N = 0, CUBLAS_OP_T = 1 };
typedef struct emu_blas *cublasHandle_t;

const char *cublasGetStatusString(cublasStatus_t s);
cublasStatus_t cublasCreate(cublasHandle_t *h);
cublasStatus_t cublasDestroy(cublasHandle_t h);
cublasStatus_t cublasSetStream(cublasHandle_t h, cudaStream_t s);
/* Column-major, as cuBLAS: computed by OpenBLAS on the stream. */
cublasStatus_t cublasSgemm(cublasHandle_t h, cublasOperation_t ta,
                           cublasOperation_t tb, int m, int n, int k,
                           const float *alpha, const float *a, int lda,
                           const float *b, int ldb, const float *beta,
                           float *c, int ldc);

/* Batched GEMM of float or bf16 matrices (A and B of one type) with
 * float accumulation: the products of bf16 entries are exact in float,
 * and a bf16 C is rounded once, when stored, as cuBLAS does. */
enum cudaDataType { CUDA_R_32F = 0, CUDA_R_16BF = 14 };
enum cublasComputeType_t { CUBLAS_COMPUTE_32F = 68 };
enum cublasGemmAlgo_t { CUBLAS_GEMM_DEFAULT = -1 };
cublasStatus_t cublasGemmStridedBatchedEx(
    cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m,
    int n, int k, const void *alpha, const void *a, cudaDataType at,
    int lda, long long sa, const void *b, cudaDataType bt, int ldb,
    long long sb, const void *beta, void *c, cudaDataType ct, int ldc,
    long long sc, int count, cublasComputeType_t compute,
    cublasGemmAlgo_t algo);

/* ---- NCCL --------------------------------------------------------------- */

enum ncclResult_t {
    ncclSuccess = 0,
    ncclUnhandledCudaError = 1,
    ncclSystemError = 2,
    ncclInternalError = 3,
    ncclInvalidArgument = 4,
    ncclInvalidUsage = 5,
    ncclRemoteError = 6,
    ncclInProgress = 7,
};
/* Point-to-point ops move count entries of the type's size; the
 * collectives sum floats only. */
enum ncclDataType_t { ncclFloat = 7, ncclBfloat16 = 9 };
enum ncclRedOp_t { ncclSum = 0 };
typedef struct emu_comm *ncclComm_t;
typedef struct { char internal[128]; } ncclUniqueId;
typedef struct { int blocking; } ncclConfig_t;
#define NCCL_CONFIG_INITIALIZER { 1 }

const char *ncclGetErrorString(ncclResult_t r);
const char *ncclGetLastError(ncclComm_t c);
ncclResult_t ncclGetUniqueId(ncclUniqueId *id);
ncclResult_t ncclCommInitRankConfig(ncclComm_t *c, int nranks,
                                    ncclUniqueId id, int rank,
                                    ncclConfig_t *cfg);
ncclResult_t ncclCommGetAsyncError(ncclComm_t c, ncclResult_t *state);
ncclResult_t ncclCommFinalize(ncclComm_t c);
ncclResult_t ncclCommDestroy(ncclComm_t c);
ncclResult_t ncclCommAbort(ncclComm_t c);
ncclResult_t ncclGroupStart(void);
ncclResult_t ncclGroupEnd(void);
ncclResult_t ncclSend(const void *buf, size_t count, ncclDataType_t type,
                      int peer, ncclComm_t c, cudaStream_t s);
ncclResult_t ncclRecv(void *buf, size_t count, ncclDataType_t type,
                      int peer, ncclComm_t c, cudaStream_t s);
ncclResult_t ncclAllReduce(const void *send, void *recv, size_t count,
                           ncclDataType_t type, ncclRedOp_t op,
                           ncclComm_t c, cudaStream_t s);
ncclResult_t ncclReduceScatter(const void *send, void *recv,
                               size_t recvcount, ncclDataType_t type,
                               ncclRedOp_t op, ncclComm_t c,
                               cudaStream_t s);
ncclResult_t ncclAllGather(const void *send, void *recv, size_t sendcount,
                           ncclDataType_t type, ncclComm_t c,
                           cudaStream_t s);

#endif
