// Device discovery for the engine: which GPUs are usable and what they are.
#include "cuda/check.cuh"
#include "engine/cuda_api.hpp"
#include "engine/error.hpp"

#include <cstdio>
#include <cstring>

namespace gpk::cuda {

int device_count(std::string *why) {
    int n = 0;
    cudaError_t e = cudaGetDeviceCount(&n);
    if (e != cudaSuccess) {
        if (why) {
            int driver = 0;
            cudaDriverGetVersion(&driver);
            *why = std::string(cudaGetErrorName(e)) + ": " + cudaGetErrorString(e);
            if (e == cudaErrorInsufficientDriver)
                *why += " (driver supports CUDA " + std::to_string(driver / 1000) + "." +
                        std::to_string(driver % 1000 / 10) + ", gpk needs " +
                        std::to_string(CUDART_VERSION / 1000) + "." +
                        std::to_string(CUDART_VERSION % 1000 / 10) + ")";
        }
        cudaGetLastError(); // clear
        return 0;
    }
    if (n == 0 && why) *why = "the CUDA driver reports no device";
    return n;
}

void device_info(int index, gpk_device_info *info) {
    cudaDeviceProp p;
    check(cudaGetDeviceProperties(&p, index), "cudaGetDeviceProperties");
    std::snprintf(info->name, sizeof info->name, "%s", p.name);
    info->compute_major = p.major;
    info->compute_minor = p.minor;
    info->total_memory = p.totalGlobalMem;
    info->multiprocessors = p.multiProcessorCount;
    int clock = 0;
    cudaDeviceGetAttribute(&clock, cudaDevAttrClockRate, index);
    info->clock_khz = clock;
    int bus = 0;
    cudaDeviceGetAttribute(&bus, cudaDevAttrGlobalMemoryBusWidth, index);
    info->memory_bus_bits = bus;
    info->l2_bytes = p.l2CacheSize;
    cudaDriverGetVersion(&info->driver_version);
    cudaRuntimeGetVersion(&info->runtime_version);
    int previous = 0;
    check(cudaGetDevice(&previous), "cudaGetDevice");
    check(cudaSetDevice(index), "cudaSetDevice");
    size_t free_b = 0, total_b = 0;
    cudaError_t e = cudaMemGetInfo(&free_b, &total_b);
    cudaSetDevice(previous);
    check(e, "cudaMemGetInfo");
    info->free_memory = free_b;
}

} // namespace gpk::cuda
