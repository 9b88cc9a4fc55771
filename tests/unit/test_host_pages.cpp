// lib/engine/host_pages.cpp without a GPU: populate() faults in every page of a range (unaligned first and
// last bytes, one byte, pieces of several huge pages) and changes no byte; it asks only for pages that are
// not resident; it stops cleanly where the kernel answers EINVAL (no MADV_POPULATE_*, Linux before 5.14);
// advise_huge() advises exactly the whole huge pages inside a range, and only under THP's "madvise"
// setting; the Populator populates a fresh range whole and a resident one not at all (one probe a piece),
// advises huge pages on outputs under THP "madvise" alone, waits for pieces in flight that the copies claim,
// leaves them the pieces no thread has begun, does nothing after stop(), leaves every page to the copies
// where no thread starts, and falls back where the kernel refuses. Residency is read back with mincore.
#include "check.hpp"
#include "engine/host_pages.hpp"

#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <random>
#include <thread>
#include <vector>

namespace hp = gpk::host_pages;

namespace {

const size_t kPage = size_t(sysconf(_SC_PAGESIZE));
constexpr size_t kMiB = size_t(1) << 20;

// A fresh private anonymous mapping in small pages (so residency counts 4 KiB pages), huge-page aligned.
struct Mapping {
    char *raw = nullptr, *p = nullptr;
    size_t bytes = 0, raw_bytes = 0;
    explicit Mapping(size_t n) : bytes(n), raw_bytes(n + hp::kPieceBytes) {
        void *m = mmap(nullptr, raw_bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (m == MAP_FAILED) check::skip("mmap failed");
        raw = static_cast<char *>(m);
        p = raw + (hp::kPieceBytes - reinterpret_cast<uintptr_t>(raw) % hp::kPieceBytes) % hp::kPieceBytes;
        madvise(raw, raw_bytes, MADV_NOHUGEPAGE);
    }
    ~Mapping() { munmap(raw, raw_bytes); }
    // Resident pages among pages [first, last) of p.
    size_t resident(size_t first, size_t last) const {
        std::vector<unsigned char> v(last - first);
        if (mincore(p + first * kPage, (last - first) * kPage, v.data()) != 0) return ~size_t(0);
        size_t n = 0;
        for (unsigned char c : v) n += c & 1;
        return n;
    }
    bool all(unsigned char value) const {
        for (size_t i = 0; i < bytes; ++i)
            if (static_cast<unsigned char>(p[i]) != value) return false;
        return true;
    }
};

// Waits up to 5 s for pages [first, last) of m to be resident.
bool wait_resident(const Mapping &m, size_t first, size_t last) {
    for (int i = 0; i < 500; ++i) {
        if (m.resident(first, last) == last - first) return true;
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return false;
}

// A system whose madvise answers EINVAL to MADV_POPULATE_* (a kernel before 5.14), counts those calls and
// records the last advice.
std::atomic<int> g_calls{0}, g_last_advice{-1};
int old_kernel_madvise(void *addr, size_t len, int advice) {
    g_last_advice = advice;
    if (advice == 22 || advice == 23) { // MADV_POPULATE_READ, MADV_POPULATE_WRITE
        ++g_calls;
        errno = EINVAL;
        return -1;
    }
    return madvise(addr, len, advice);
}
int real_mincore(void *addr, size_t len, unsigned char *vec) {
    return mincore(addr, len, vec);
}
int failing_mincore(void *, size_t, unsigned char *) {
    errno = ENOMEM;
    return -1;
}
std::string thp_madvise() {
    return "always [madvise] never";
}
std::string thp_always() {
    return "[always] madvise never";
}
std::string thp_never() {
    return "always madvise [never]";
}
const hp::System kOldKernel{old_kernel_madvise, real_mincore, thp_madvise};
const hp::System kUnmapped{old_kernel_madvise, failing_mincore, thp_madvise};

// madvise that only records its last call.
void *g_addr = nullptr;
size_t g_len = 0;
int recording_madvise(void *addr, size_t len, int advice) {
    ++g_calls;
    g_addr = addr;
    g_len = len;
    g_last_advice = advice;
    return 0;
}
const hp::System kRecorder{recording_madvise, real_mincore, thp_madvise};
const hp::System kRecorderThpAlways{recording_madvise, real_mincore, thp_always};

// The real madvise, counting MADV_HUGEPAGE calls.
std::atomic<int> g_huge_calls{0};
int huge_counting_madvise(void *addr, size_t len, int advice) {
    if (advice == MADV_HUGEPAGE) ++g_huge_calls;
    return madvise(addr, len, advice);
}
const hp::System kThpMadvise{huge_counting_madvise, real_mincore, thp_madvise};
const hp::System kThpAlways{huge_counting_madvise, real_mincore, thp_always};

void populate_ranges() {
    Mapping m(8 * kMiB + 3 * kPage);
    // Unaligned first and last bytes: the whole pages that hold them, nothing beyond.
    hp::Outcome o = hp::populate(hp::Access::write, m.p + 100, 3 * kPage + 5 - 100);
    if (o.unsupported) check::skip("this kernel has no MADV_POPULATE_WRITE (before Linux 5.14)");
    CHECK_EQ(o.populated, size_t(4));
    CHECK_EQ(m.resident(0, 4), size_t(4));
    CHECK_EQ(m.resident(4, 64), size_t(0));
    // One byte; no byte.
    o = hp::populate(hp::Access::write, m.p + 10 * kPage + 7, 1);
    CHECK_EQ(o.populated, size_t(1));
    CHECK_EQ(m.resident(9, 12), size_t(1));
    o = hp::populate(hp::Access::write, m.p + 20 * kPage, 0);
    CHECK_EQ(o.populated + o.resident, size_t(0));
    CHECK_EQ(m.resident(19, 22), size_t(0));
    // Across several huge pages, starting and ending inside pages: every page, the resident ones skipped.
    const size_t pages = m.bytes / kPage;
    o = hp::populate(hp::Access::write, m.p + 1, m.bytes - 2);
    CHECK_EQ(o.resident, size_t(5));
    CHECK_EQ(o.populated, pages - 5);
    CHECK_EQ(m.resident(0, pages), pages);
    CHECK(m.all(0));
    // A second time: nothing left to ask for.
    o = hp::populate(hp::Access::write, m.p, m.bytes);
    CHECK_EQ(o.populated, size_t(0));
}

void populate_keeps_bytes() {
    Mapping m(6 * kMiB + 123);
    std::mt19937 rng(7);
    std::vector<char> want(m.bytes);
    for (char &c : want) c = char(rng());
    std::memcpy(m.p, want.data(), m.bytes);
    // Drop some pages in the middle (they read as zeros again and are no longer resident).
    madvise(m.p + 100 * kPage, 7 * kPage, MADV_DONTNEED);
    std::memset(want.data() + 100 * kPage, 0, 7 * kPage);
    const size_t pages = (m.bytes + kPage - 1) / kPage;
    for (hp::Access a : {hp::Access::read, hp::Access::write}) {
        const hp::Outcome o = hp::populate(a, m.p + 3, m.bytes - 3);
        if (o.unsupported) check::skip("this kernel has no MADV_POPULATE_*");
        CHECK_EQ(m.resident(0, pages), pages);
        CHECK(std::memcmp(m.p, want.data(), m.bytes) == 0);
    }
}

void populate_falls_back() {
    Mapping m(4 * kMiB);
    g_calls = 0;
    hp::Outcome o = hp::populate(hp::Access::write, m.p + 5, m.bytes - 10, kOldKernel);
    CHECK(o.unsupported);
    CHECK_EQ(o.populated, size_t(0));
    CHECK_EQ(g_calls.load(), 1); // the first refusal ends the range
    CHECK_EQ(m.resident(0, m.bytes / kPage), size_t(0));
    // Where mincore fails (part of the range unmapped), nothing is asked of madvise.
    g_calls = 0;
    o = hp::populate(hp::Access::read, m.p, m.bytes, kUnmapped);
    CHECK_EQ(g_calls.load(), 0);
    CHECK(!o.unsupported);
}

void huge_advice() {
    char *base = reinterpret_cast<char *>(uintptr_t(64) << 30); // never dereferenced
    g_calls = 0;
    CHECK(hp::advise_huge(base + 100, 7 * kMiB, "always [madvise] never", kRecorder));
    CHECK(g_addr == base + 2 * kMiB);
    CHECK_EQ(g_len, 4 * kMiB);
    CHECK_EQ(g_last_advice.load(), MADV_HUGEPAGE);
    CHECK(hp::advise_huge(base, 4 * kMiB, "always [madvise] never", kRecorder));
    CHECK(g_addr == base);
    CHECK_EQ(g_len, 4 * kMiB);
    CHECK_EQ(g_calls.load(), 2);
    // No whole huge page inside; THP always or never (the advice would change nothing, or nothing allowed).
    CHECK(!hp::advise_huge(base + 1, 4 * kMiB - 2, "always [madvise] never", kRecorder));
    CHECK(!hp::advise_huge(base, 64 * kMiB, "[always] madvise never", kRecorder));
    CHECK(!hp::advise_huge(base, 64 * kMiB, "always madvise [never]", kRecorder));
    CHECK(!hp::advise_huge(base, 64 * kMiB, "", kRecorder));
    CHECK_EQ(g_calls.load(), 2);
}

// A madvise that takes its time over MADV_POPULATE_WRITE (a piece of 8 huge pages stays in flight for
// 320 ms) and counts every call; THP "never", so that the mappings keep their small pages.
std::atomic<int> g_slow_calls{0};
int slow_madvise(void *addr, size_t len, int advice) {
    ++g_slow_calls;
    if (advice == 23) std::this_thread::sleep_for(std::chrono::milliseconds(40));
    return madvise(addr, len, advice);
}
std::atomic<int> g_probes{0};
int counting_mincore(void *addr, size_t len, unsigned char *vec) {
    ++g_probes;
    return mincore(addr, len, vec);
}
const hp::System kSlow{slow_madvise, counting_mincore, thp_never};

// Fresh memory: the threads populate the whole range without being asked, and change no byte.
void populator_whole_range() {
    CHECK_EQ(hp::Populator::threads_for(1), 1u);
    CHECK_EQ(hp::Populator::threads_for(2), 1u);
    CHECK_EQ(hp::Populator::threads_for(32), 16u);
    hp::Populator pop(hp::Populator::threads_for(4)); // the system's own calls and THP setting

    Mapping m(4 * hp::kPieceBytes);
    const size_t pages = m.bytes / kPage;
    pop.start(hp::Access::write, m.p + 1, m.bytes - 2);
    CHECK(wait_resident(m, 0, pages));
    pop.stop();
    const hp::RangeStats s = pop.stats(hp::Access::write);
    CHECK_EQ(s.pieces, size_t(4));
    CHECK_EQ(s.resident, size_t(0));
    CHECK_EQ(s.populated, size_t(4));
    CHECK_EQ(s.to_copies, size_t(0));
    CHECK(m.all(0));
    // A source, unaligned, across five pieces; then again, now resident: probed only, no advice, no thread.
    Mapping src(4 * hp::kPieceBytes + kMiB);
    pop.start(hp::Access::read, src.p + 3 * kMiB, src.bytes - 3 * kMiB);
    CHECK(wait_resident(src, 3 * kMiB / kPage, src.bytes / kPage));
    pop.stop();
    CHECK_EQ(pop.stats(hp::Access::read).populated, size_t(5));
    CHECK_EQ(src.resident(0, 3 * kMiB / kPage), size_t(0));
    hp::Populator counted(2, kSlow);
    g_slow_calls = 0;
    g_probes = 0;
    counted.start(hp::Access::write, m.p, m.bytes);
    counted.claim(hp::Access::write, m.p, m.bytes);
    counted.stop();
    CHECK_EQ(g_probes.load(), 4); // one page a piece
    CHECK_EQ(g_slow_calls.load(), 0);
    CHECK_EQ(counted.stats(hp::Access::write).resident, size_t(4));
}

// The copies' claims: a piece in flight is waited for, pieces not begun are the copies' (the threads skip
// them), and after stop() nothing more is touched.
void populator_claims() {
    hp::Populator pop(1, kSlow);
    Mapping m(6 * hp::kPieceBytes);
    const size_t per_piece = hp::kPieceBytes / kPage;
    pop.start(hp::Access::write, m.p, m.bytes);
    for (int i = 0; i < 5000 && pop.busy() == 0; ++i)
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
    CHECK_EQ(pop.busy(), 1u);
    // Piece 0 is in flight (the one thread sleeps in it): the claim returns once it is resident.
    pop.claim(hp::Access::write, m.p + 100, 10);
    CHECK_EQ(m.resident(0, per_piece), per_piece);
    // Pieces 3 and 4 are the copies' now; the thread goes on with 1, 2 and 5.
    pop.claim(hp::Access::write, m.p + 3 * hp::kPieceBytes + 5, hp::kPieceBytes);
    CHECK(wait_resident(m, 5 * per_piece, 6 * per_piece));
    pop.stop();
    CHECK_EQ(m.resident(3 * per_piece, 5 * per_piece), size_t(0));
    CHECK_EQ(m.resident(0, 3 * per_piece), 3 * per_piece);
    hp::RangeStats s = pop.stats(hp::Access::write);
    CHECK_EQ(s.populated, size_t(4));
    CHECK_EQ(s.to_copies, size_t(2));
    CHECK(s.wait_s > 0);
    // Stopped in the middle: the piece in flight ends, the rest stays as it was.
    Mapping n(6 * hp::kPieceBytes);
    pop.start(hp::Access::write, n.p, n.bytes);
    for (int i = 0; i < 5000 && pop.busy() == 0; ++i)
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
    pop.stop();
    const size_t after = n.resident(0, n.bytes / kPage);
    CHECK(after < n.bytes / kPage);
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    CHECK_EQ(n.resident(0, n.bytes / kPage), after);
    CHECK(n.all(0));
}

// Huge-page advice on outputs under THP "madvise" only (under "always" it would change nothing), once a
// call; sources never.
void populator_thp_settings() {
    for (const hp::System *sys : {&kThpMadvise, &kThpAlways}) {
        hp::Populator pop(1, *sys);
        Mapping m(2 * hp::kPieceBytes), src(2 * hp::kPieceBytes);
        g_huge_calls = 0;
        pop.start(hp::Access::write, m.p, m.bytes);
        pop.start(hp::Access::read, src.p, src.bytes);
        CHECK(wait_resident(m, 0, m.bytes / kPage));
        CHECK(wait_resident(src, 0, src.bytes / kPage));
        pop.stop();
        CHECK_EQ(g_huge_calls.load(), sys == &kThpMadvise ? 1 : 0);
        CHECK_EQ(pop.stats(hp::Access::write).populated, size_t(2));
        CHECK(m.all(0));
    }
}

// No thread started (none could be): the output is advised, and every piece is the copies'.
void populator_without_threads() {
    for (const hp::System *sys : {&kRecorder, &kRecorderThpAlways}) {
        Mapping m(2 * hp::kPieceBytes);
        hp::Populator none(0, *sys);
        g_calls = 0;
        none.start(hp::Access::write, m.p, m.bytes);
        none.claim(hp::Access::write, m.p, m.bytes);
        none.stop();
        CHECK_EQ(g_calls.load(), sys == &kRecorder ? 1 : 0);
        if (sys == &kRecorder) CHECK_EQ(g_last_advice.load(), MADV_HUGEPAGE);
        CHECK_EQ(none.stats(hp::Access::write).to_copies, size_t(2));
        CHECK_EQ(none.stats(hp::Access::write).populated, size_t(0));
        CHECK_EQ(m.resident(0, m.bytes / kPage), size_t(0));
    }
}

void populator_old_kernel() {
    hp::Populator pop(1, kOldKernel);
    Mapping m(2 * hp::kPieceBytes);
    g_calls = 0;
    g_last_advice = -1;
    pop.start(hp::Access::write, m.p, m.bytes); // one refused populate, then the rest is the copies'
    for (int i = 0; i < 500 && g_calls == 0; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    pop.claim(hp::Access::write, m.p, m.bytes);
    pop.stop();
    CHECK_EQ(g_calls.load(), 1);
    CHECK_EQ(m.resident(0, m.bytes / kPage), size_t(0));
    pop.start(hp::Access::read, m.p, m.bytes); // sources fall back to readahead advice
    for (int i = 0; i < 500 && g_last_advice != MADV_WILLNEED; ++i)
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
    CHECK_EQ(g_last_advice.load(), MADV_WILLNEED);
    pop.stop();
    CHECK(m.all(0));
}

} // namespace

int main() {
    populate_ranges();
    populate_keeps_bytes();
    populate_falls_back();
    huge_advice();
    populator_whole_range();
    populator_claims();
    populator_thp_settings();
    populator_without_threads();
    populator_old_kernel();
    return check::finish("test_host_pages");
}
