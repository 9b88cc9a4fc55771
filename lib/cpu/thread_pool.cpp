#include "cpu/thread_pool.hpp"

#include <algorithm>
#include <exception>

namespace gpk::cpu {

ThreadPool::ThreadPool(unsigned threads) {
    if (threads == 0) threads = std::max(1u, std::thread::hardware_concurrency());
    for (unsigned i = 1; i < threads; ++i) workers_.emplace_back([this, i] { worker_loop(i); });
}

ThreadPool::~ThreadPool() {
    {
        std::lock_guard<std::mutex> lock(mutex_);
        stop_ = true;
    }
    start_cv_.notify_all();
    for (auto &w : workers_) w.join();
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
    if (mine) std::rethrow_exception(mine);
    if (error_) std::rethrow_exception(error_);
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

} // namespace gpk::cpu
