#include "engine/host_pages.hpp"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <fstream>
#include <system_error>

#if defined(__linux__)
#include <sys/mman.h>
#include <unistd.h>
#endif

namespace gpk::host_pages {
namespace {

#if defined(__linux__)
// Older C libraries lack the names; the values are the kernel's (include/uapi/asm-generic/mman-common.h).
#ifndef MADV_POPULATE_READ
#define MADV_POPULATE_READ 22
#endif
#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23
#endif

int sys_madvise(void *addr, size_t len, int advice) {
    return ::madvise(addr, len, advice);
}
int sys_mincore(void *addr, size_t len, unsigned char *vec) {
    return ::mincore(addr, len, vec);
}
std::string sys_thp_setting() {
    std::ifstream f("/sys/kernel/mm/transparent_hugepage/enabled");
    std::string line;
    std::getline(f, line);
    return line;
}
size_t page_bytes() {
    static const size_t bytes = size_t(sysconf(_SC_PAGESIZE));
    return bytes;
}
#else
int sys_madvise(void *, size_t, int) {
    errno = EINVAL;
    return -1;
}
int sys_mincore(void *, size_t, unsigned char *) {
    errno = ENOSYS;
    return -1;
}
std::string sys_thp_setting() {
    return {};
}
size_t page_bytes() {
    return 4096;
}
constexpr int MADV_POPULATE_READ = 22, MADV_POPULATE_WRITE = 23, MADV_WILLNEED = 3, MADV_HUGEPAGE = 14;
#endif

uintptr_t down(uintptr_t v, size_t to) {
    return v - v % to;
}
uintptr_t up(uintptr_t v, size_t to) {
    return down(v + to - 1, to);
}

// Populates pages [a, b) (page-aligned, at most a piece) where mincore finds them absent.
void populate_piece(Access access, uintptr_t a, uintptr_t b, const System &sys, Outcome &out) {
    const size_t page = page_bytes();
    const size_t pages = (b - a) / page;
    unsigned char vec[kHugeBytes / 4096 + 1];
    if (pages > sizeof vec || sys.mincore(reinterpret_cast<void *>(a), b - a, vec) != 0)
        return; // not mapped (the copy will meet it), or pages of another size: left to the copy
    const int advice = access == Access::write ? MADV_POPULATE_WRITE : MADV_POPULATE_READ;
    size_t i = 0;
    while (i < pages && !out.unsupported) {
        if (vec[i] & 1) {
            ++out.resident;
            ++i;
            continue;
        }
        size_t j = i;
        while (j < pages && !(vec[j] & 1)) ++j;
        if (sys.madvise(reinterpret_cast<void *>(a + i * page), (j - i) * page, advice) == 0)
            out.populated += j - i;
        else if (errno == EINVAL)
            out.unsupported = true; // no such advice here (Linux before 5.14), or a mapping it does not serve
        i = j;
    }
}

} // namespace

const System &linux_system() {
    static const System sys{sys_madvise, sys_mincore, sys_thp_setting};
    return sys;
}

Outcome populate(Access access, void *p, size_t n, const System &sys) {
    Outcome out;
    if (n == 0) return out;
    const size_t page = page_bytes();
    const uintptr_t lo = down(reinterpret_cast<uintptr_t>(p), page);
    const uintptr_t hi = up(reinterpret_cast<uintptr_t>(p) + n, page);
    for (uintptr_t a = lo; a < hi && !out.unsupported;) {
        const uintptr_t b = std::min<uintptr_t>(hi, down(a, kHugeBytes) + kHugeBytes);
        populate_piece(access, a, b, sys, out);
        a = b;
    }
    return out;
}

bool advise_huge(void *p, size_t n, const std::string &thp_setting, const System &sys) {
    if (thp_setting.find("[madvise]") == std::string::npos) return false;
    const uintptr_t lo = up(reinterpret_cast<uintptr_t>(p), kHugeBytes);
    const uintptr_t hi = down(reinterpret_cast<uintptr_t>(p) + n, kHugeBytes);
    if (hi <= lo) return false;
    return sys.madvise(reinterpret_cast<void *>(lo), hi - lo, MADV_HUGEPAGE) == 0;
}

Populator::Populator(unsigned threads, const System &sys)
    : threads_wanted_(threads), sys_(sys), thp_(sys.thp_setting()) {}

Populator::~Populator() {
    {
        std::lock_guard<std::mutex> lock(mutex_);
        quit_ = true;
        for (Range &r : ranges_) r.active = false;
    }
    work_cv_.notify_all();
    for (auto &t : threads_) t.join();
}

bool Populator::start_threads() {
    try {
        while (threads_.size() < threads_wanted_) threads_.emplace_back([this] { worker(); });
    } catch (const std::system_error &) {
        // Fewer threads than asked (none: the copies fault the pages in themselves, as without them).
    }
    return !threads_.empty();
}

void Populator::start(Access access, const char *p, size_t n) {
    Range &r = ranges_[int(access)];
    {
        std::unique_lock<std::mutex> lock(mutex_);
        ++waiters_; // a range is replaced only once no thread is inside it
        done_cv_.wait(lock, [&] { return r.in_flight == 0; });
        --waiters_;
        r = Range{};
    }
    char *base = const_cast<char *>(p); // populating changes no byte; the advice needs a non-const pointer
    const size_t page = page_bytes();
    const uintptr_t lo = reinterpret_cast<uintptr_t>(base), hi = lo + n;
    const uintptr_t first = down(lo, kPieceBytes);
    const size_t pieces = n ? size_t(up(hi, kPieceBytes) - first) / kPieceBytes : 0;
    std::vector<unsigned char> state(pieces, kSkip);
    size_t pending = 0;
    for (size_t i = 0; i < pieces; ++i) {
        // One page in the middle of the piece's part of the range: resident there means used before.
        const uintptr_t a = std::max<uintptr_t>(lo, first + i * kPieceBytes);
        const uintptr_t b = std::min<uintptr_t>(hi, first + (i + 1) * kPieceBytes);
        unsigned char v = 1;
        if (sys_.mincore(reinterpret_cast<void *>(down(a + (b - a) / 2, page)), page, &v) == 0 && !(v & 1)) {
            state[i] = kPending;
            ++pending;
        }
    }
    r.base = base;
    r.first = first;
    r.live = pending > 0;
    r.stats.bytes = n;
    r.stats.pieces = pieces;
    r.stats.resident = pieces - pending;
    if (!r.live) return;
    if (access == Access::write) advise_huge(base, n, thp_, sys_);
    const bool threads = threads_wanted_ > 0 && !(access == Access::write && unsupported_) && start_threads();
    {
        std::lock_guard<std::mutex> lock(mutex_);
        r.state = std::move(state);
        r.active = threads;
    }
    if (threads) work_cv_.notify_all();
}

void Populator::claim(Access access, const char *p, size_t n) {
    Range &r = ranges_[int(access)];
    if (!r.live || n == 0) return;
    const uintptr_t lo = std::max(reinterpret_cast<uintptr_t>(p), reinterpret_cast<uintptr_t>(r.base));
    const uintptr_t hi =
        std::min(reinterpret_cast<uintptr_t>(p) + n, reinterpret_cast<uintptr_t>(r.base) + r.stats.bytes);
    if (hi <= lo) return;
    const size_t i0 = (lo - r.first) / kPieceBytes, i1 = (hi - 1 - r.first) / kPieceBytes + 1;
    std::unique_lock<std::mutex> lock(mutex_);
    bool flying = false;
    for (size_t i = i0; i < i1; ++i) {
        if (r.state[i] == kPending) {
            r.state[i] = kSkip;
            ++r.stats.to_copies;
        }
        flying = flying || r.state[i] == kInFlight;
    }
    if (!flying) return;
    const auto t0 = std::chrono::steady_clock::now();
    ++waiters_;
    done_cv_.wait(lock, [&] {
        for (size_t i = i0; i < i1; ++i)
            if (r.state[i] == kInFlight) return false;
        return true;
    });
    --waiters_;
    r.stats.wait_s += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

void Populator::stop() noexcept {
    std::unique_lock<std::mutex> lock(mutex_);
    for (Range &r : ranges_) r.active = false;
    ++waiters_;
    done_cv_.wait(lock, [&] { return ranges_[0].in_flight == 0 && ranges_[1].in_flight == 0; });
    --waiters_;
    for (Range &r : ranges_) r.live = false;
}

RangeStats Populator::stats(Access access) {
    std::lock_guard<std::mutex> lock(mutex_);
    return ranges_[int(access)].stats;
}

// The pending piece of the range whose threads are least far along it.
bool Populator::take(Piece &piece) {
    int best = -1;
    double best_at = 0;
    for (int i = 0; i < 2; ++i) {
        Range &r = ranges_[i];
        if (!r.active) continue;
        while (r.next < r.state.size() && r.state[r.next] != kPending) ++r.next;
        if (r.next == r.state.size() || (i == int(Access::write) && unsupported_)) {
            r.active = false; // nothing that changes no byte is left to do
            continue;
        }
        const double at = double(r.next) / double(r.state.size());
        if (best < 0 || at < best_at) best = i, best_at = at;
    }
    if (best < 0) return false;
    Range &r = ranges_[best];
    const size_t i = r.next++;
    const uintptr_t lo = std::max<uintptr_t>(reinterpret_cast<uintptr_t>(r.base), r.first + i * kPieceBytes);
    const uintptr_t hi = std::min<uintptr_t>(reinterpret_cast<uintptr_t>(r.base) + r.stats.bytes,
                                             r.first + (i + 1) * kPieceBytes);
    r.state[i] = kInFlight;
    ++r.in_flight;
    piece = Piece{best, i, reinterpret_cast<char *>(lo), size_t(hi - lo)};
    return true;
}

void Populator::worker() {
    std::unique_lock<std::mutex> lock(mutex_);
    for (;;) {
        Piece piece{};
        work_cv_.wait(lock, [&] { return quit_ || take(piece); });
        if (quit_) return;
        const bool fallback = unsupported_; // a source where the kernel lacks MADV_POPULATE_READ
        busy_.fetch_add(1, std::memory_order_relaxed);
        lock.unlock();
        bool unsupported = false;
        if (fallback) {
#if defined(__linux__)
            const size_t page = page_bytes();
            const uintptr_t a = down(reinterpret_cast<uintptr_t>(piece.p), page);
            sys_.madvise(reinterpret_cast<void *>(a), up(uintptr_t(piece.p) + piece.n, page) - a,
                         MADV_WILLNEED);
#endif
        } else {
            unsupported = populate(Access(piece.range), piece.p, piece.n, sys_).unsupported;
        }
        busy_.fetch_sub(1, std::memory_order_relaxed);
        lock.lock();
        Range &r = ranges_[piece.range];
        r.state[piece.index] = kSkip;
        --r.in_flight;
        if (unsupported) {
            unsupported_ = true;
            if (piece.range == int(Access::write)) r.state[piece.index] = kPending; // the copies' own
        } else {
            ++r.stats.populated;
        }
        if (waiters_) done_cv_.notify_all();
    }
}

} // namespace gpk::host_pages
