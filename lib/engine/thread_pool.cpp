#include "engine/thread_pool.hpp"

#include "engine/error.hpp"
#include "engine/fault.hpp"

#include <algorithm>
#include <cerrno>
#include <exception>
#include <string>
#include <system_error>

#if defined(__linux__)
#include <pthread.h>
#endif

namespace gpk {
namespace {

// The stack a new thread asks for, in bytes (0 where unknown).
size_t default_stack_bytes() {
    size_t bytes = 0;
#if defined(__linux__)
    pthread_attr_t attr;
    if (pthread_attr_init(&attr) == 0) {
        if (pthread_attr_getstacksize(&attr, &bytes) != 0) bytes = 0;
        pthread_attr_destroy(&attr);
    }
#endif
    return bytes;
}

} // namespace

// A worker that cannot start (no memory for its stack, the process's thread limit) fails the creation
// with the workers started so far stopped and joined: a std::thread destroyed while joinable would end
// the process. GPK_TEST_FAULT=host:N fails the Nth start the same way.
ThreadPool::ThreadPool(unsigned threads) {
    if (threads == 0) threads = std::max(1u, std::thread::hardware_concurrency());
    workers_.reserve(threads - 1);
    try {
        for (unsigned i = 1; i < threads; ++i) {
            if (fault::inject(fault::Point::host)) throw std::system_error(EAGAIN, std::generic_category());
            workers_.emplace_back([this, i] { worker_loop(i); });
        }
    } catch (const std::system_error &e) {
        const size_t failed = workers_.size() + 1;
        stop();
        fail(GPK_ERR_OUT_OF_MEMORY, "cannot start CPU worker thread " + std::to_string(failed) + " of " +
                                        std::to_string(threads - 1) + " (allocating " +
                                        std::to_string(default_stack_bytes()) +
                                        " bytes for its stack): " + e.what());
    } catch (...) { // std::bad_alloc for a thread's own state
        stop();
        throw;
    }
}

ThreadPool::~ThreadPool() {
    stop();
}

void ThreadPool::stop() {
    {
        std::lock_guard<std::mutex> lock(mutex_);
        stop_ = true;
    }
    start_cv_.notify_all();
    for (auto &w : workers_) w.join();
    workers_.clear();
}

void ThreadPool::worker_loop(unsigned index) {
    unsigned long long seen = 0;
    for (;;) {
        const std::function<void(unsigned, unsigned)> *body;
        unsigned parts;
        {
            std::unique_lock<std::mutex> lock(mutex_);
            start_cv_.wait(lock, [&] { return stop_ || generation_ != seen; });
            if (stop_) return;
            seen = generation_;
            body = body_;
            parts = parts_;
        }
        if (index < parts) {
            try {
                (*body)(index, parts);
            } catch (...) {
                std::lock_guard<std::mutex> lock(mutex_);
                if (!error_) error_ = std::current_exception();
            }
        }
        std::lock_guard<std::mutex> lock(mutex_);
        if (--pending_ == 0) done_cv_.notify_one();
    }
}

void ThreadPool::run(const std::function<void(unsigned, unsigned)> &body, unsigned max_parts) {
    unsigned parts = std::max(1u, std::min(size(), max_parts));
    if (parts == 1) {
        body(0, 1);
        return;
    }
    {
        std::lock_guard<std::mutex> lock(mutex_);
        body_ = &body;
        parts_ = parts;
        pending_ = unsigned(workers_.size());
        error_ = nullptr;
        ++generation_;
    }
    start_cv_.notify_all();
    std::exception_ptr mine;
    try {
        body(0, parts);
    } catch (...) {
        mine = std::current_exception();
    }
    std::unique_lock<std::mutex> lock(mutex_);
    done_cv_.wait(lock, [&] { return pending_ == 0; });
    // The pool keeps no exception after the call: it is the caller's to handle (or free).
    std::exception_ptr theirs = std::move(error_);
    error_ = nullptr;
    if (mine) std::rethrow_exception(mine);
    if (theirs) std::rethrow_exception(theirs);
}

void ThreadPool::parallel_for(size_t n, const std::function<void(size_t, size_t)> &body, size_t grain) {
    if (n == 0) return;
    size_t max_parts = std::max<size_t>(1, n / std::max<size_t>(1, grain));
    run(
        [&](unsigned part, unsigned parts) {
            size_t begin = n * part / parts, end = n * (part + 1) / parts;
            if (begin < end) body(begin, end);
        },
        unsigned(std::min<size_t>(max_parts, size())));
}

} // namespace gpk
