// Host memory for the working buffers of a CPU backend call. Every allocation sized by the image, the
// grid or the bins goes through HostArray (or LargeBuffer), so that
// - a failure comes back as a result, never as a throwing operator new: sanitizer allocators abort when
//   that fails, even with allocator_may_return_null=1, while nothrow new returns null there too;
// - a test can fail each of them in turn (GPK_TEST_FAULT=host:N, engine/fault.hpp) and take the path a
//   real failure takes.
#pragma once

#include "engine/error.hpp"
#include "engine/fault.hpp"

#include <cstddef>
#include <limits>
#include <memory>
#include <new>
#include <string>

#if defined(__linux__)
#include <sys/mman.h>
#endif

namespace gpk::cpu {

template <class T> class HostArray {
public:
    // Holds `count` elements (zero-filled unless asked not to) instead of what it held. False, holding
    // nothing, where the memory cannot be had. Zero elements take no memory and cannot fail.
    bool allocate(size_t count, bool zeroed = true) {
        data_.reset();
        size_ = 0;
        if (count == 0) return true;
        if (count > std::numeric_limits<size_t>::max() / sizeof(T) || fault::inject(fault::Point::host))
            return false;
        data_.reset(zeroed ? new (std::nothrow) T[count]() : new (std::nothrow) T[count]);
        if (!data_) return false;
        size_ = count;
        return true;
    }
    T *get() const { return data_.get(); }
    T &operator[](size_t i) const { return data_[i]; }
    T *begin() const { return data_.get(); }
    T *end() const { return data_.get() + size_; }
    size_t size() const { return size_; }

private:
    std::unique_ptr<T[]> data_;
    size_t size_ = 0;
};

// GPK_ERR_OUT_OF_MEMORY naming the bytes: "<op>: out of host memory allocating <bytes> bytes for <what>".
[[noreturn]] inline void out_of_host_memory(const char *op, size_t bytes, const std::string &what) {
    fail(GPK_ERR_OUT_OF_MEMORY,
         std::string(op) + ": out of host memory allocating " + std::to_string(bytes) + " bytes for " + what);
}

// `count` elements of T, or GPK_ERR_OUT_OF_MEMORY naming the bytes.
template <class T>
HostArray<T> host_array(size_t count, const char *op, const char *what, bool zeroed = true) {
    if (count > std::numeric_limits<size_t>::max() / sizeof(T))
        fail(GPK_ERR_OUT_OF_MEMORY, std::string(op) + ": " + what + " of " + std::to_string(count) +
                                        " elements of " + std::to_string(sizeof(T)) + " bytes is too large");
    HostArray<T> a;
    if (!a.allocate(count, zeroed)) out_of_host_memory(op, count * sizeof(T), what);
    return a;
}

// A large buffer of `count` elements, not initialised, in huge pages where the system gives them: the
// convolution's min/max pass fills hundreds of megabytes once, and 4 KiB pages would cost a fault each.
template <class T> class LargeBuffer {
public:
    LargeBuffer(size_t count, const char *op, const char *what) {
        if (count > std::numeric_limits<size_t>::max() / sizeof(T))
            fail(GPK_ERR_OUT_OF_MEMORY,
                 std::string(op) + ": " + what + " of " + std::to_string(count) + " elements is too large");
        bytes_ = count * sizeof(T);
#if defined(__linux__)
        if (bytes_ >= kHugePage) {
            bytes_ = (bytes_ + kHugePage - 1) / kHugePage * kHugePage;
            void *p = fault::inject(fault::Point::host)
                          ? MAP_FAILED
                          : mmap(nullptr, bytes_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
            if (p == MAP_FAILED) out_of_host_memory(op, bytes_, what);
            madvise(p, bytes_, MADV_HUGEPAGE); // advice only: 4 KiB pages still work
            data_ = static_cast<T *>(p);
            mapped_ = true;
            return;
        }
#endif
        owned_ = host_array<T>(count, op, what, false);
        data_ = owned_.get();
    }
    ~LargeBuffer() {
#if defined(__linux__)
        if (mapped_) munmap(data_, bytes_);
#endif
    }
    LargeBuffer(const LargeBuffer &) = delete;
    LargeBuffer &operator=(const LargeBuffer &) = delete;
    T *get() const {
        return data_;
    }

private:
    static constexpr size_t kHugePage = size_t(2) << 20;
    T *data_ = nullptr;
    size_t bytes_ = 0;
    bool mapped_ = false;
    HostArray<T> owned_;
};

// Memory a CPU context keeps from call to call, grown where a call needs more and released with the
// context: a repeated call then touches no new page. A page's first touch is costly, in a virtual machine
// most: fresh heat grids made every call spend many iterations' worth of time in page faults.
class ReusedBuffer {
public:
    // At least `bytes`, not initialised. Growing drops what it held first, so that old and new are never
    // both held; on failure it holds nothing and the call fails as host_array does.
    void *reserve(size_t bytes, const char *op, const std::string &what) {
        if (bytes <= bytes_) return buffer_->get();
        buffer_.reset();
        bytes_ = 0;
        buffer_ = std::make_unique<LargeBuffer<unsigned char>>(bytes, op, what.c_str());
        bytes_ = bytes;
        return buffer_->get();
    }

private:
    std::unique_ptr<LargeBuffer<unsigned char>> buffer_;
    size_t bytes_ = 0;
};

// What a CPU context keeps between calls.
struct Workspace {
    ReusedBuffer heat; // the grids, row rings and per-row results of gpk_heat_run
};

} // namespace gpk::cpu
