// Host emulation of the parts of the CUDA runtime and device built-ins that gpk's heat solver and fused
// separable kernel use (tools/emulate: verification on machines without a GPU; see README.md there).
#pragma once
#include <cmath>
#include <cstddef>
#include <cstring>
#include <cstdint>
#include <algorithm>
#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __launch_bounds__(...)
#define __shared__ static
#define __align__(n) alignas(n)
#define __restrict__
using std::fabs;
using std::fmax;
using std::fmin;
using std::isfinite;
struct dim3 {
    unsigned x = 1, y = 1, z = 1;
    dim3(unsigned a = 1, unsigned b = 1, unsigned c = 1) : x(a), y(b), z(c) {}
};
extern thread_local dim3 threadIdx, blockIdx;
extern dim3 gridDim, blockDim;
enum cudaError_t {
    cudaSuccess = 0,
    cudaErrorInvalidValue = 1,
    cudaErrorMemoryAllocation = 2,
    cudaErrorLaunchFailure = 719,
    cudaErrorDevicesUnavailable = 46
};
typedef struct CUstream_st *cudaStream_t;
typedef struct CUevent_st *cudaEvent_t;
enum cudaMemcpyKind {
    cudaMemcpyHostToHost,
    cudaMemcpyHostToDevice,
    cudaMemcpyDeviceToHost,
    cudaMemcpyDeviceToDevice,
    cudaMemcpyDefault
};
enum cudaMemoryType {
    cudaMemoryTypeUnregistered,
    cudaMemoryTypeHost,
    cudaMemoryTypeDevice,
    cudaMemoryTypeManaged
};
struct cudaPointerAttributes {
    cudaMemoryType type;
    int device;
    void *devicePointer, *hostPointer;
};
enum cudaFuncAttribute { cudaFuncAttributeMaxDynamicSharedMemorySize = 8 };
struct cudaFuncAttributes {
    size_t sharedSizeBytes;
    int maxDynamicSharedSizeBytes;
};
struct cudaDeviceProp {
    int multiProcessorCount, major, minor;
    size_t sharedMemPerBlockOptin;
    char name[256];
};
#define cudaStreamDefault 0
#define cudaStreamNonBlocking 1
#define cudaEventDisableTiming 2
const char *cudaGetErrorName(cudaError_t);
const char *cudaGetErrorString(cudaError_t);
cudaError_t cudaGetLastError();
cudaError_t cudaPeekAtLastError();
cudaError_t cudaGetDevice(int *);
cudaError_t cudaSetDevice(int);
cudaError_t cudaGetDeviceProperties(cudaDeviceProp *, int);
cudaError_t cudaMalloc(void **, size_t);
cudaError_t cudaMallocHost(void **, size_t);
cudaError_t cudaFree(void *);
cudaError_t cudaFreeHost(void *);
cudaError_t cudaMemGetInfo(size_t *, size_t *);
cudaError_t cudaMemcpy(void *, const void *, size_t, cudaMemcpyKind);
cudaError_t cudaMemcpyAsync(void *, const void *, size_t, cudaMemcpyKind, cudaStream_t = 0);
cudaError_t cudaMemcpy2DAsync(void *, size_t, const void *, size_t, size_t, size_t, cudaMemcpyKind,
                              cudaStream_t = 0);
cudaError_t cudaMemsetAsync(void *, int, size_t, cudaStream_t = 0);
cudaError_t cudaStreamSynchronize(cudaStream_t);
cudaError_t cudaStreamCreateWithFlags(cudaStream_t *, unsigned);
cudaError_t cudaStreamDestroy(cudaStream_t);
cudaError_t cudaStreamWaitEvent(cudaStream_t, cudaEvent_t, unsigned);
cudaError_t cudaEventCreateWithFlags(cudaEvent_t *, unsigned);
cudaError_t cudaEventDestroy(cudaEvent_t);
cudaError_t cudaEventRecord(cudaEvent_t, cudaStream_t);
cudaError_t cudaEventSynchronize(cudaEvent_t);
cudaError_t cudaPointerGetAttributes(cudaPointerAttributes *, const void *);
cudaError_t cudaFuncSetAttribute(const void *, cudaFuncAttribute, int);
cudaError_t cudaFuncGetAttributes(cudaFuncAttributes *, const void *);
cudaError_t cudaOccupancyMaxActiveBlocksPerMultiprocessor(int *, const void *, int, size_t);
template <class F> cudaError_t cudaFuncSetAttribute(F f, cudaFuncAttribute a, int v) {
    return cudaFuncSetAttribute((const void *)f, a, v);
}
inline double __dadd_rn(double a, double b) {
    return a + b;
}
inline double __dsub_rn(double a, double b) {
    return a - b;
}
inline double __dmul_rn(double a, double b) {
    return a * b;
}
inline double __fma_rn(double a, double b, double c) {
    return std::fma(a, b, c);
}
void __syncthreads();
double emu_shfl(double v, int o);
template <class T> T __shfl_xor_sync(unsigned, T v, int o) {
    return (T)emu_shfl((double)v, o);
}
unsigned long long atomicMin(unsigned long long *p, unsigned long long v);
extern unsigned char emu_shared[];
// launch: one block at a time, one host thread per CUDA thread
void emu_run_block(dim3 grid, dim3 block, void (*body)(void *), void *ctx);
template <class K, class... A>
void emu_launch(K kernel, dim3 grid, dim3 block, size_t, cudaStream_t, A... args) {
    auto call = [&]() { kernel(args...); };
    using C = decltype(call);
    emu_run_block(
        grid, block, [](void *c) { (*static_cast<C *>(c))(); }, &call);
}
struct float4 {
    float x, y, z, w;
};
inline double __longlong_as_double(long long v) {
    double d;
    std::memcpy(&d, &v, 8);
    return d;
}
inline long long __double_as_longlong(double d) {
    long long v;
    std::memcpy(&v, &d, 8);
    return v;
}
unsigned long long atomicCAS(unsigned long long *p, unsigned long long c, unsigned long long v);
long long atomicMin(long long *p, long long v);
long long atomicMax(long long *p, long long v);
inline unsigned __umulhi(unsigned a, unsigned b) {
    return unsigned((unsigned long long)a * b >> 32);
}
template <class T> T __ldg(const T *p) {
    return *p;
}
using std::max;
using std::min;
inline unsigned __funnelshift_r(unsigned lo, unsigned hi, unsigned s) {
    unsigned long long v = ((unsigned long long)hi << 32) | lo;
    return unsigned(v >> (s & 31));
}
inline int __dp4a(int a, int b, int c) {
    for (int i = 0; i < 4; ++i) c += (signed char)(a >> 8 * i) * (signed char)(b >> 8 * i);
    return c;
}
