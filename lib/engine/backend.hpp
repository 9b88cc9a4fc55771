// The interface every backend implements. The engine (context.cpp) owns one backend per context.
#pragma once

#include "engine/error.hpp"
#include "engine/heat_slab.hpp"
#include "engine/jobs.hpp"
#include "engine/validate.hpp"

#include <cstring>
#include <memory>

namespace gpk {

class Backend {
public:
    virtual ~Backend() = default;
    virtual gpk_backend kind() const = 0;
    virtual void heat_run(const HeatJob &job) = 0;
    virtual void histogram(const HistogramJob &job) = 0;
    virtual void convolve(const ConvolveJob &job) = 0;
    // A slab of a heat grid kept between calls (libgpk_mpi); the job's data is copied.
    // heat_slab_levels() is its max_levels(), known before a slab exists.
    virtual unsigned heat_slab_levels() const = 0;
    virtual std::unique_ptr<HeatSlab> heat_slab(const HeatSlabJob &job) = 0;
    virtual void set_stream(void *stream) = 0;
    virtual void synchronize() = 0;

    // What libgpk_mpi needs to keep a rank's block where the caller put it (gpk_internal.h). The CPU
    // backend reaches host memory only.
    // Whether p is memory of the backend's device (device or managed), which its calls use in place.
    virtual bool on_device(const void *p) const {
        (void)p;
        return false;
    }
    // `rows` rows of `width` bytes, between host memory and the backend's device in any direction; returns
    // when done.
    virtual void copy_rows(void *dst, size_t dst_pitch, const void *src, size_t src_pitch, size_t width,
                           size_t rows) {
        for (size_t i = 0; i < rows; ++i)
            std::memcpy(static_cast<char *>(dst) + i * dst_pitch,
                        static_cast<const char *>(src) + i * src_pitch, width);
    }
    // copy_rows queued behind the backend's earlier work: it may return before the copy is done
    // (synchronize() waits for it), page-locked host memory being read or written until then. `aside`: on
    // a stream beside the backend's other work, ordered with it by aside() alone.
    virtual void copy_rows_queued(bool aside, void *dst, size_t dst_pitch, const void *src, size_t src_pitch,
                                  size_t width, size_t rows) {
        (void)aside;
        copy_rows(dst, dst_pitch, src, src_pitch, width, rows);
    }
    // fork: the aside work queued from now on comes after the other work queued so far; join: the other
    // work queued from now on comes after the aside work queued so far; wait: returns once the aside work
    // queued so far is done (gpk_internal_aside).
    enum class Aside { fork, join, wait };
    virtual void aside(Aside how) { (void)how; }
    // Host memory kept for the next call (grown where it is smaller than `bytes`, after the pending work;
    // valid until the next call or the backend's end): page-locked where the backend has a device.
    virtual void *host_scratch(size_t bytes) = 0;
    // Device memory of the backend's device (throws GPK_ERR_OUT_OF_MEMORY naming the bytes), and its release.
    virtual void *device_alloc(size_t bytes) {
        (void)bytes;
        fail(GPK_ERR_INVALID_ARGUMENT, "device memory on a context of the CPU backend");
    }
    virtual void device_free(void *p) { (void)p; }
    // Device memory kept for the next call (grown where it is smaller than `bytes`; valid until the next
    // call or the backend's end), so that calls which need some on each call do not allocate it each time.
    virtual void *device_scratch(size_t bytes) {
        (void)bytes;
        fail(GPK_ERR_INVALID_ARGUMENT, "device memory on a context of the CPU backend");
    }
    // check_heat_inputs of a rank's block, which may be in device memory.
    virtual void check_heat_block(const double *tinit, const double *conductivity, size_t rows, size_t cols,
                                  size_t first_row) {
        check_heat_inputs(tinit, conductivity, rows, cols, first_row);
    }
};

} // namespace gpk
