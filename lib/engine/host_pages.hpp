// Caller host memory that the CUDA backend streams through its staging buffers: its pages are faulted in
// ahead of the copies by a few background threads, so that the copy threads do not stop at every fresh page
// of an output that was just allocated (malloc, np.empty_like) or of a source never mapped yet. Nothing here
// writes a byte of caller memory: pages are populated with MADV_POPULATE_WRITE / MADV_POPULATE_READ (Linux
// 5.14 and later; without them outputs fault in as the copies reach them, and sources get MADV_WILLNEED),
// and outputs are advised to use transparent huge pages where the system leaves that to madvise. NOTES.md,
// "Host memory gpk touches", says why. Plain Linux and C++: tests/unit/test_host_pages.cpp tests it
// without a GPU.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <cstddef>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace gpk::host_pages {

enum class Access { read, write };

// The system calls the helpers make (tests substitute their own).
struct System {
    int (*madvise)(void *addr, size_t len, int advice);
    int (*mincore)(void *addr, size_t len, unsigned char *vec);
    // /sys/kernel/mm/transparent_hugepage/enabled, or "" where it cannot be read.
    std::string (*thp_setting)();
};
const System &linux_system();

// populate() works in pieces of this size, aligned to it in the address space (a huge page each).
constexpr size_t kHugeBytes = size_t(2) << 20;
// A call's ranges are handed out in pieces of this size, aligned to it in the address space.
constexpr size_t kPieceBytes = size_t(16) << 20;

struct Outcome {
    size_t populated = 0;     // pages asked for (they were not resident)
    size_t resident = 0;      // pages found resident already
    bool unsupported = false; // the kernel refused the advice (EINVAL): nothing was populated
};

// Faults in the pages of [p, p + n) that are not resident yet (mincore), the whole pages that hold the first
// and last bytes included, without changing a byte: writable for Access::write (MADV_POPULATE_WRITE),
// mapped for Access::read (MADV_POPULATE_READ). Pages the kernel refuses (unmapped, no permission) are left
// to the copy, which meets them as it would have anyway.
Outcome populate(Access access, void *p, size_t n, const System &sys = linux_system());

// madvise(MADV_HUGEPAGE) of the huge pages wholly inside [p, p + n), where `thp_setting` selects
// "[madvise]"; returns whether it advised any. The advice stays on the caller's mapping.
bool advise_huge(void *p, size_t n, const std::string &thp_setting, const System &sys = linux_system());

// Where a call's range stands (the tests read it).
struct RangeStats {
    size_t bytes = 0, pieces = 0;
    size_t resident = 0;  // pieces whose probed page was resident: nobody populates them
    size_t populated = 0; // pieces the threads populated
    size_t to_copies = 0; // pieces the copies reached first (they fault them themselves)
    double wait_s = 0;    // the copies' time waiting for pieces in flight
};

// A call's pageable ranges (a source, an output), populated ahead of the staging copies by a few threads
// of the context. start() probes one page a piece (mincore, the calling thread): a range whose probed pages
// are all resident (a buffer used before) is left alone, no thread woken and no advice given. Otherwise an
// output is advised to use huge pages and the threads take its absent pieces in address order, as fast as
// they can; before the copies touch bytes they claim() them: pieces no thread has begun are theirs (the
// threads skip them), and pieces in flight are waited for. stop() returns once no thread is inside the
// ranges any more: a call stops before it returns, so gpk touches caller memory only during the call.
class Populator {
public:
    // Up to `threads` threads populate, started at the first range that needs them (a context asks for
    // threads_for() its copy threads). Where none starts, outputs still get the huge-page advice and the
    // copies fault every page in themselves, as they would without a populator.
    explicit Populator(unsigned threads, const System &sys = linux_system());
    ~Populator();
    Populator(const Populator &) = delete;
    Populator &operator=(const Populator &) = delete;

    // Half the copy threads (at least one): while they populate, the copies leave them their cores.
    static unsigned threads_for(unsigned copy_threads) { return copy_threads > 2 ? copy_threads / 2 : 1; }

    // Begins on [p, p + n) for `access`, replacing the earlier range of that access.
    void start(Access access, const char *p, size_t n);
    // The copies are about to touch [p, p + n) of the `access` range (bytes outside it are ignored).
    void claim(Access access, const char *p, size_t n);
    // Threads inside a piece now: the copies leave them their cores.
    unsigned busy() const { return busy_.load(std::memory_order_relaxed); }
    // Abandons both ranges and waits until no thread is inside them. Never throws.
    void stop() noexcept;
    // The last range of `access` (valid until the next start() of that access).
    RangeStats stats(Access access);

private:
    enum : unsigned char { kSkip, kPending, kInFlight };
    struct Range {
        char *base = nullptr;
        uintptr_t first = 0; // address of piece 0 (kPieceBytes-aligned, at or below base)
        std::vector<unsigned char> state;
        size_t next = 0;        // the lowest piece that may still be pending
        unsigned in_flight = 0; // pieces a thread is populating
        bool active = false;    // pieces may still be handed out
        bool live = false;      // some pieces were absent at start(): claim() has work (read by the caller
                                // thread alone)
        RangeStats stats;
    };
    struct Piece {
        int range;
        size_t index;
        char *p;
        size_t n;
    };
    bool take(Piece &piece); // under the lock
    void worker();
    bool start_threads();

    unsigned threads_wanted_;
    const System &sys_;
    std::string thp_;
    std::mutex mutex_;
    std::condition_variable work_cv_, done_cv_;
    Range ranges_[2]; // read, write
    unsigned waiters_ = 0;
    std::atomic<unsigned> busy_{0};
    bool unsupported_ = false; // the kernel has no MADV_POPULATE_*: sources get MADV_WILLNEED
    bool quit_ = false;
    std::vector<std::thread> threads_;
};

} // namespace gpk::host_pages
