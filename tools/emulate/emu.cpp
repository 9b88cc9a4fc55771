// A host emulation of the CUDA runtime and device built-ins that the heat solver and the fused separable
// kernel use (tools/emulate/README.md). Memory from cudaMalloc is host memory remembered as "device" so that
// pointer queries answer as on a GPU; a launch runs its blocks one after another, each on a pool of host
// threads (one per CUDA thread) with real barriers; shared memory starts as NaN bytes so that reads of
// unwritten slots show; asynchronous copies complete at once.
#include "cuda_runtime.h"
#include <atomic>
#include <barrier>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <mutex>
#include <thread>
#include <vector>

thread_local dim3 threadIdx, blockIdx;
dim3 gridDim, blockDim;
alignas(16) unsigned char emu_shared[1 << 18];
static std::barrier<> *g_bar;
static std::vector<std::barrier<> *> g_warp_bars;
static double g_xchg[1024];
static std::mutex g_atomic;
static std::map<uintptr_t, std::pair<size_t, cudaMemoryType>> g_allocs;
static std::mutex g_alloc_mutex;
size_t emu_launches = 0;

void __syncthreads() {
    g_bar->arrive_and_wait();
}
double emu_shfl(double v, int o) {
    unsigned t = threadIdx.x + threadIdx.y * blockDim.x;
    g_xchg[t] = v;
    g_warp_bars[t / 32]->arrive_and_wait();
    double r = g_xchg[(t & ~31u) | ((t & 31u) ^ unsigned(o))];
    g_warp_bars[t / 32]->arrive_and_wait();
    return r;
}
unsigned long long atomicMin(unsigned long long *p, unsigned long long v) {
    std::lock_guard<std::mutex> l(g_atomic);
    unsigned long long old = *p;
    if (v < old) *p = v;
    return old;
}
// A persistent pool of host threads, one per CUDA thread of a block (rebuilt when the block size changes);
// blocks run one after another.
static std::barrier<> *g_start = nullptr, *g_end = nullptr;
static unsigned g_pool_n = 0;
static void (*g_body)(void *);
static void *g_ctx;
static unsigned g_bx, g_by;
static bool g_quit = false;
static std::vector<std::thread> g_pool;

static void worker(unsigned t) {
    for (;;) {
        g_start->arrive_and_wait();
        if (g_quit) return;
        threadIdx = dim3(t % blockDim.x, t / blockDim.x);
        blockIdx = dim3(g_bx, g_by);
        g_body(g_ctx);
        g_end->arrive_and_wait();
    }
}

static void ensure_pool(unsigned n) {
    if (g_pool_n == n) return;
    if (g_pool_n) {
        g_quit = true;
        g_start->arrive_and_wait();
        for (auto &t : g_pool) t.join();
        g_pool.clear();
        delete g_start;
        delete g_end;
        g_quit = false;
    }
    g_start = new std::barrier<>(n + 1);
    g_end = new std::barrier<>(n + 1);
    for (unsigned t = 0; t < n; ++t) g_pool.emplace_back(worker, t);
    g_pool_n = n;
}

void emu_run_block(dim3 grid, dim3 block, void (*body)(void *), void *ctx) {
    ++emu_launches;
    gridDim = grid;
    blockDim = block;
    const unsigned n = block.x * block.y;
    if (n > 1024) std::abort();
    ensure_pool(n);
    g_body = body;
    g_ctx = ctx;
    for (unsigned by = 0; by < grid.y; ++by)
        for (unsigned bx = 0; bx < grid.x; ++bx) {
            std::memset(emu_shared, 0xFF, sizeof emu_shared); // NaN bytes: unwritten reads show
            std::barrier<> bar(n);
            g_bar = &bar;
            std::vector<std::barrier<> *> wb;
            for (unsigned w = 0; w < (n + 31) / 32; ++w) wb.push_back(new std::barrier<>(32));
            g_warp_bars = wb;
            g_bx = bx;
            g_by = by;
            g_start->arrive_and_wait();
            g_end->arrive_and_wait();
            for (auto *b : wb) delete b;
        }
}

static cudaMemoryType kind_of(const void *p) {
    std::lock_guard<std::mutex> l(g_alloc_mutex);
    auto a = reinterpret_cast<uintptr_t>(p);
    auto it = g_allocs.upper_bound(a);
    if (it == g_allocs.begin()) return cudaMemoryTypeUnregistered;
    --it;
    if (a < it->first + it->second.first) return it->second.second;
    return cudaMemoryTypeUnregistered;
}
static void *alloc(size_t n, cudaMemoryType k) {
    void *p = std::malloc(n + 64);
    std::memset(p, 0xCD, n + 64); // garbage
    std::lock_guard<std::mutex> l(g_alloc_mutex);
    g_allocs[reinterpret_cast<uintptr_t>(p)] = {n, k};
    return p;
}
static void release(void *p) {
    if (!p) return;
    std::lock_guard<std::mutex> l(g_alloc_mutex);
    g_allocs.erase(reinterpret_cast<uintptr_t>(p));
    std::free(p);
}
const char *cudaGetErrorName(cudaError_t) {
    return "cudaErrorEmu";
}
const char *cudaGetErrorString(cudaError_t) {
    return "emulated error";
}
cudaError_t cudaGetLastError() {
    return cudaSuccess;
}
cudaError_t cudaPeekAtLastError() {
    return cudaSuccess;
}
cudaError_t cudaGetDevice(int *d) {
    *d = 0;
    return cudaSuccess;
}
cudaError_t cudaSetDevice(int) {
    return cudaSuccess;
}
cudaError_t cudaGetDeviceProperties(cudaDeviceProp *p, int) {
    *p = {};
    p->multiProcessorCount = 2; // few SMs: more waves, more blocks per strip
    p->major = 9;
    p->sharedMemPerBlockOptin = 227 * 1024;
    return cudaSuccess;
}
cudaError_t cudaMalloc(void **p, size_t n) {
    *p = alloc(n, cudaMemoryTypeDevice);
    return cudaSuccess;
}
cudaError_t cudaMallocHost(void **p, size_t n) {
    *p = alloc(n, cudaMemoryTypeHost);
    return cudaSuccess;
}
cudaError_t cudaFree(void *p) {
    release(p);
    return cudaSuccess;
}
cudaError_t cudaFreeHost(void *p) {
    release(p);
    return cudaSuccess;
}
cudaError_t cudaMemGetInfo(size_t *f, size_t *t) {
    *f = size_t(8) << 30;
    *t = size_t(16) << 30;
    return cudaSuccess;
}
cudaError_t cudaMemcpy(void *d, const void *s, size_t n, cudaMemcpyKind) {
    std::memcpy(d, s, n);
    return cudaSuccess;
}
cudaError_t cudaMemcpyAsync(void *d, const void *s, size_t n, cudaMemcpyKind, cudaStream_t) {
    std::memcpy(d, s, n);
    return cudaSuccess;
}
cudaError_t cudaMemcpy2DAsync(void *d, size_t dp, const void *s, size_t sp, size_t w, size_t h,
                              cudaMemcpyKind, cudaStream_t) {
    for (size_t r = 0; r < h; ++r) std::memcpy((char *)d + r * dp, (const char *)s + r * sp, w);
    return cudaSuccess;
}
cudaError_t cudaMemsetAsync(void *d, int v, size_t n, cudaStream_t) {
    std::memset(d, v, n);
    return cudaSuccess;
}
cudaError_t cudaStreamSynchronize(cudaStream_t) {
    return cudaSuccess;
}
cudaError_t cudaStreamCreateWithFlags(cudaStream_t *s, unsigned) {
    *s = reinterpret_cast<cudaStream_t>(new int);
    return cudaSuccess;
}
cudaError_t cudaStreamDestroy(cudaStream_t s) {
    delete reinterpret_cast<int *>(s);
    return cudaSuccess;
}
cudaError_t cudaStreamWaitEvent(cudaStream_t, cudaEvent_t, unsigned) {
    return cudaSuccess;
}
cudaError_t cudaEventCreateWithFlags(cudaEvent_t *e, unsigned) {
    *e = reinterpret_cast<cudaEvent_t>(new int);
    return cudaSuccess;
}
cudaError_t cudaEventDestroy(cudaEvent_t e) {
    delete reinterpret_cast<int *>(e);
    return cudaSuccess;
}
cudaError_t cudaEventRecord(cudaEvent_t, cudaStream_t) {
    return cudaSuccess;
}
cudaError_t cudaEventSynchronize(cudaEvent_t) {
    return cudaSuccess;
}
cudaError_t cudaPointerGetAttributes(cudaPointerAttributes *a, const void *p) {
    *a = {};
    a->type = kind_of(p);
    return cudaSuccess;
}
cudaError_t cudaFuncSetAttribute(const void *, cudaFuncAttribute, int) {
    return cudaSuccess;
}
cudaError_t cudaFuncGetAttributes(cudaFuncAttributes *a, const void *) {
    a->sharedSizeBytes = 0;
    a->maxDynamicSharedSizeBytes = 48 * 1024;
    return cudaSuccess;
}
cudaError_t cudaOccupancyMaxActiveBlocksPerMultiprocessor(int *b, const void *, int, size_t smem) {
    *b = smem <= 113 * 1024 ? 2 : 1;
    return cudaSuccess;
}
unsigned long long atomicCAS(unsigned long long *p, unsigned long long c, unsigned long long v) {
    std::lock_guard<std::mutex> l(g_atomic);
    unsigned long long o = *p;
    if (o == c) *p = v;
    return o;
}
long long atomicMin(long long *p, long long v) {
    std::lock_guard<std::mutex> l(g_atomic);
    long long o = *p;
    if (v < o) *p = v;
    return o;
}
long long atomicMax(long long *p, long long v) {
    std::lock_guard<std::mutex> l(g_atomic);
    long long o = *p;
    if (v > o) *p = v;
    return o;
}
