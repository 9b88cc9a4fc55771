// A small fork-join pool owned by a context (the CPU backend computes on it, the CUDA backend copies
// between pageable and pinned host memory with it): the calling thread plus (threads - 1) workers.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace gpk {

class ThreadPool {
public:
    // 0 = hardware concurrency. A worker that cannot start is GPK_ERR_OUT_OF_MEMORY, nothing kept.
    explicit ThreadPool(unsigned threads);
    ~ThreadPool();
    ThreadPool(const ThreadPool &) = delete;
    ThreadPool &operator=(const ThreadPool &) = delete;

    unsigned size() const { return unsigned(workers_.size()) + 1; }

    // Calls body(part, parts) once for each part in 0..parts-1 (parts = min(size(), max_parts)),
    // spread over the pool, and returns when all are done. The first exception thrown is rethrown.
    void run(const std::function<void(unsigned part, unsigned parts)> &body, unsigned max_parts = ~0u);

    // Splits [0, n) into contiguous ranges, one per part, and calls body(begin, end) for each non-empty
    // one. Ranges below `grain` elements are not split further.
    void parallel_for(size_t n, const std::function<void(size_t begin, size_t end)> &body, size_t grain = 1);

private:
    void worker_loop(unsigned index);
    void stop(); // ends and joins the workers

    std::vector<std::thread> workers_;
    std::mutex mutex_;
    std::condition_variable start_cv_, done_cv_;
    const std::function<void(unsigned, unsigned)> *body_ = nullptr;
    unsigned parts_ = 0;
    unsigned long long generation_ = 0;
    unsigned pending_ = 0;
    bool stop_ = false;
    std::exception_ptr error_;
};

} // namespace gpk
