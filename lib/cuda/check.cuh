// Every CUDA call and launch goes through check(): a failure becomes a gpk::Error naming the call and
// the CUDA error.
#pragma once

#include "engine/error.hpp"
#include "engine/fault.hpp"

#include <cuda_runtime.h>
#include <cstring>
#include <string>

namespace gpk::cuda {

namespace fault {
// Test-only fault injection (NOTES.md, internal knobs; not API; counted by engine/fault.cpp): with
// GPK_TEST_FAULT=alloc:N, launch:N or copy:N in the environment, the Nth device or pinned allocation,
// kernel launch or copy counted since the variable last changed reports failure; with create:N, the Nth
// CUDA call of each context creation does (see Creation). inject() returns whether this call is the one
// to fail.
using gpk::fault::inject;
using gpk::fault::Point;
using gpk::fault::restart;

// True on a thread that is creating a CUDA backend while GPK_TEST_FAULT names create:N.
extern thread_local bool t_creating;

// Marks the creation of a CUDA backend on this thread. Reads GPK_TEST_FAULT once; with create:N, the
// creation points are counted from 1 again, so that each context creation fails at its Nth point.
class Creation {
public:
    Creation();
    ~Creation() { t_creating = previous_; }
    Creation(const Creation &) = delete;
    Creation &operator=(const Creation &) = delete;

private:
    bool previous_;
};

// Whether the next creation point (a call through check_create, or an allocation made while creating) is
// the one to fail.
inline bool creation_fails() {
    return t_creating && inject(Point::create);
}
} // namespace fault

inline void check(cudaError_t e, const char *what) {
    if (e == cudaSuccess && std::strncmp(what, "cudaMemcpy", 10) == 0 && fault::inject(fault::Point::copy))
        e = cudaErrorInvalidValue;
    if (e == cudaSuccess) return;
    gpk_status s = (e == cudaErrorMemoryAllocation) ? GPK_ERR_OUT_OF_MEMORY : GPK_ERR_DEVICE;
    std::string msg =
        std::string(what) + " failed: " + cudaGetErrorName(e) + " (" + cudaGetErrorString(e) + ")";
    if (e != cudaErrorMemoryAllocation) cudaGetLastError(); // clear non-sticky errors
    throw Error(s, msg);
}

// A CUDA call that creates or sets up what a context keeps (device initialisation, properties, streams,
// events): with GPK_TEST_FAULT=create:N the Nth such call of a context creation is not made and fails
// with cudaErrorDevicesUnavailable instead, as a device taken by another process would.
template <class Call> void check_create(Call &&call, const char *what) {
    check(fault::creation_fails() ? cudaErrorDevicesUnavailable : call(), what);
}

// After a kernel launch: configuration errors show up here, execution errors at the next sync.
inline void check_launch(const char *kernel) {
    cudaError_t e = cudaGetLastError();
    if (e == cudaSuccess && fault::inject(fault::Point::launch)) e = cudaErrorLaunchFailure;
    check(e, kernel);
}

} // namespace gpk::cuda
