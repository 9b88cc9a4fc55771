// A differential sweep of gpk_convolve over its dispatch space, against the naive reference of
// tests/common/convolve_reference.hpp: filter shapes 1x1, 1xk, kx1 and kxk up to 63x63, separable lengths
// 1..129 each way, image widths (in samples) around every vector width, tap-loop block, strip and tile width
// the backends use, heights around their row chunks, thread splits and kernel tiles, every input and output
// type, accumulation precision, exact-path accumulator, border, normalisation and channel count, padded
// strides. Bit for bit where README says exact (integer images with integer taps), within the accumulation's
// tolerance otherwise; the rows' padding must stay untouched, rejected calls must write nothing.
//
// Seeded (GPK_TEST_SEED=N reproduces a run; the seed is printed). Built twice from this file:
// - the unit suite (CPU backend): contexts of 1 to 4 threads, rows forced into column strips of several
//   widths (GPK_TEST_CONV_CPU_STRIP), and every instruction set the CPU kernels have (GPK_TEST_CPU_ISA,
//   where the library knows it);
// - the GPU suite (GPK_SWEEP_CUDA; CUDA backend, exits 77 without a device): images in pageable, pinned and
//   device memory, bands forced small by a faked device size (GPK_TEST_DEVICE_MEMORY_LIMIT), and the paths
//   the dispatcher takes on other devices or where a kernel's preconditions fail: the pair kernel's min/max
//   in two launches (GPK_TEST_CONV_PAIR=twopass, a device without cooperative launches), the ring kernel
//   (GPK_TEST_CONV_FUSED_KERNEL=ring, a device whose shared memory does not hold the streaming kernel), the
//   tile kernels in place of the f32 sliding-window kernel (GPK_TEST_CONV_F32=off). The u8 strip, box,
//   rank-1 and pair kernels, the fused separable kernels and the sliding-window kernel run where the drawn
//   filters and images suit them (byte, box, outer-product and small taps; aligned rows).
// GPK_TEST_QUICK=1 runs every 8th case (sanitizer runs).
#include "convolve_reference.hpp"
#include "hooks.hpp"

#ifdef GPK_SWEEP_CUDA
#include "gpu_common.hpp"
#endif

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

namespace {

using namespace convref;

#ifdef GPK_SWEEP_CUDA
constexpr bool kCuda = true;
#else
constexpr bool kCuda = false;
#endif

std::mt19937_64 rng;

long long pick(long long lo, long long hi) {
    return std::uniform_int_distribution<long long>(lo, hi)(rng);
}
double real(double lo, double hi) {
    return std::uniform_real_distribution<double>(lo, hi)(rng);
}
template <class T, size_t N> T pick_of(const T (&values)[N]) {
    return values[size_t(pick(0, (long long)N - 1))];
}
template <class T> T pick_of(const std::vector<T> &values) {
    return values[size_t(pick(0, (long long)values.size() - 1))];
}
int odd(int lo, int hi) { // an odd number in [lo, hi] (lo, hi odd)
    return lo + 2 * int(pick(0, (hi - lo) / 2));
}

bool env_flag(const char *name) {
    const char *v = std::getenv(name);
    return v && *v && std::string(v) != "0";
}

// ---- Filters ----

// How the taps are drawn. The integer kinds put the exact path's bound (sum of |taps| times the largest
// sample; for a separable pair the product of both sums) into the range of one accumulator: float sums
// below 2^24, int32 below 2^31, double below 2^53, int64 below 2^54 (CPU; the CUDA backend sums in int32
// below 2^31, else int64).
// `outer`: 2D taps that are an exact product r[a] * c[b] of small integers (the CUDA rank-1 kernel); a
// separable pair of small integers.
enum class TapKind { bytes, signed_bytes, wide31, wide53, wide54, real, positive_real, outer, box, small };
const TapKind kIntegerKinds[] = {TapKind::bytes, TapKind::signed_bytes, TapKind::wide31, TapKind::wide53,
                                 TapKind::wide54};
const TapKind kRealKinds[] = {TapKind::real, TapKind::positive_real};

const char *kind_name(TapKind k) {
    switch (k) {
    case TapKind::bytes:
        return "byte taps";
    case TapKind::signed_bytes:
        return "signed byte taps";
    case TapKind::wide31:
        return "int32-sum taps";
    case TapKind::wide53:
        return "double-sum taps";
    case TapKind::wide54:
        return "int64-sum taps";
    case TapKind::real:
        return "real taps";
    case TapKind::outer:
        return "outer-product taps";
    case TapKind::box:
        return "box taps";
    case TapKind::small:
        return "small taps";
    default:
        return "positive real taps";
    }
}

// n integer taps whose |taps| sum to exactly `total` (n - 1 small ones, the centre takes the rest), signs
// random.
std::vector<double> taps_summing_to(size_t n, double total) {
    std::vector<double> t(n);
    const long long small = std::max(1LL, (long long)(total / double(4 * n)));
    double rest = total;
    for (size_t i = 0; i < n; ++i) {
        if (i == n / 2) continue;
        t[i] = double(pick(-small, small));
        rest -= std::fabs(t[i]);
    }
    t[n / 2] = pick(0, 1) ? rest : -rest;
    return t;
}

std::vector<double> draw_taps(size_t n, TapKind kind) {
    std::vector<double> t(n);
    for (double &v : t) switch (kind) {
        case TapKind::bytes:
            v = double(pick(0, 9));
            break;
        case TapKind::signed_bytes:
        case TapKind::outer:
            v = double(pick(-8, 8));
            break;
        case TapKind::real:
            v = real(-1, 1) + 0.05;
            break;
        default:
            v = real(0.01, 1);
            break;
        }
    return t;
}

// The range [lo, hi) of the exact bound that a wide kind aims at.
void wide_range(TapKind kind, double &lo, double &hi) {
    lo = kind == TapKind::wide31 ? 0x1p24 : kind == TapKind::wide53 ? 0x1p31 : 0x1p53;
    hi = kind == TapKind::wide31 ? 0x1p31 : kind == TapKind::wide53 ? 0x1p53 : 0x1p54;
}

bool is_wide(TapKind k) {
    return k == TapKind::wide31 || k == TapKind::wide53 || k == TapKind::wide54;
}

// A filter and the test's view of its taps; owns the gpk_filter.
struct Filter {
    std::unique_ptr<gpk_filter, void (*)(gpk_filter *)> handle{nullptr, gpk_filter_destroy};
    Taps taps;
    std::string name;
    const gpk_filter *get() const { return handle.get(); }
};

// A 2D filter of kh x kw taps, or (separable) a row filter of kw and a column filter of kh taps. Wide
// integer kinds scale their bound for the input type's largest sample.
Filter make_filter(bool separable, int kh, int kw, TapKind kind, gpk_dtype in) {
    std::vector<double> a, b; // 2D taps, or row and column
    if (is_wide(kind)) {
        double lo, hi;
        wide_range(kind, lo, hi);
        // An integer |taps| total whose bound, times the largest sample, lies in [lo, hi) (log-uniform).
        const double top = type_max(in);
        const double bound = std::exp2(real(std::log2(lo), std::log2(hi)));
        double total = std::floor(bound / top);
        if (!separable) {
            total = std::max(total, double(kh * kw));
            a = taps_summing_to(size_t(kh * kw), total);
        } else {
            const double row_total = std::max(double(kw), std::floor(std::sqrt(total)));
            const double col_total = std::max(double(kh), std::floor(total / row_total));
            a = taps_summing_to(size_t(kw), row_total);
            b = taps_summing_to(size_t(kh), col_total);
        }
    } else if (kind == TapKind::box) {
        // Every tap the same integer (a separable pair: each filter's own), signed a fifth of the time.
        const double box[] = {1, 1, 2, 3, -1};
        a.assign(size_t(separable ? kw : kh * kw), pick_of(box));
        if (separable) b.assign(size_t(kh), pick_of(box));
    } else if (kind == TapKind::small && !separable) {
        // Signed integers whose |taps| sum to at most 16 (the CUDA pair kernel's), corners 0 a third of the
        // time (its cross form), lp3 among them.
        const bool cross = pick(0, 2) == 0;
        do {
            a.clear();
            double abs_sum = 0;
            for (int i = 0; i < kh; ++i)
                for (int j = 0; j < kw; ++j) {
                    const bool corner = (i == 0 || i == kh - 1) && (j == 0 || j == kw - 1);
                    a.push_back(cross && corner ? 0.0 : double(pick(-2, 2)));
                    abs_sum += std::fabs(a.back());
                }
            if (abs_sum >= 1 && abs_sum <= 16) break;
        } while (true);
    } else if (kind == TapKind::outer && !separable) {
        const std::vector<double> r = draw_taps(size_t(kh), kind), c = draw_taps(size_t(kw), kind);
        const bool positive = pick(0, 1); // all taps >= 0 half the time
        for (int i = 0; i < kh; ++i)
            for (int j = 0; j < kw; ++j)
                a.push_back(positive ? std::fabs(r[size_t(i)] * c[size_t(j)]) : r[size_t(i)] * c[size_t(j)]);
    } else {
        a = draw_taps(size_t(separable ? kw : kh * kw), kind);
        if (separable) b = draw_taps(size_t(kh), kind);
    }
    Filter f;
    gpk_filter *raw = nullptr;
    const gpk_status s = separable ? gpk_filter_create_separable(&raw, a.size(), a.data(), b.size(), b.data())
                                   : gpk_filter_create_2d(&raw, size_t(kh), size_t(kw), a.data());
    if (s != GPK_OK) {
        std::fprintf(stderr, "test setup: filter %dx%d: %s\n", kh, kw, gpk_context_last_error(nullptr));
        std::exit(1);
    }
    f.handle.reset(raw);
    f.taps = taps_of(raw);
    f.name = (separable ? "separable " + std::to_string(kw) + "|" + std::to_string(kh)
                        : std::to_string(kh) + "x" + std::to_string(kw)) +
             " " + kind_name(kind);
    return f;
}

// ---- Where a case runs ----

// Everything about a case beyond Case itself: padding, and the knobs of the backend's dispatch.
struct Setup {
    size_t in_pad = 0, out_pad = 0;    // bytes after each row (whole samples)
    bool constant = false;             // every input sample equal (min/max: max == min)
    unsigned threads = 0;              // CPU: 0 is one per core
    std::string cpu_strip;             // GPK_TEST_CONV_CPU_STRIP ("" unset)
    std::string cpu_isa;               // GPK_TEST_CPU_ISA ("" unset)
    std::string gpu_pair;              // GPK_TEST_CONV_PAIR ("" unset)
    std::string gpu_fused;             // GPK_TEST_CONV_FUSED_KERNEL ("" unset)
    std::string gpu_f32;               // GPK_TEST_CONV_F32 ("" unset)
    std::string memory_limit;          // GPK_TEST_DEVICE_MEMORY_LIMIT ("" unset)
    int in_memory = 0, out_memory = 0; // gpu::Memory of each image (CUDA)
};

std::string describe_setup(const Setup &s) {
    std::string d = " pads " + std::to_string(s.in_pad) + "/" + std::to_string(s.out_pad);
    if (s.constant) d += " constant";
    if (!kCuda) d += " threads " + std::to_string(s.threads);
    if (!s.cpu_strip.empty()) d += " cpu-strip " + s.cpu_strip;
    if (!s.cpu_isa.empty()) d += " isa " + s.cpu_isa;
    if (!s.gpu_pair.empty()) d += " gpu-pair " + s.gpu_pair;
    if (!s.gpu_fused.empty()) d += " gpu-fused " + s.gpu_fused;
    if (!s.gpu_f32.empty()) d += " gpu-f32 " + s.gpu_f32;
    if (!s.memory_limit.empty()) d += " device-bytes " + s.memory_limit;
#ifdef GPK_SWEEP_CUDA
    d += std::string(" ") + gpu::memory_name(gpu::Memory(s.in_memory)) + "->" +
         gpu::memory_name(gpu::Memory(s.out_memory));
#endif
    return d;
}

// A setup's hook value: empty for none (the variable unset while the case runs).
const char *hook_value(const std::string &value) {
    return value.empty() ? nullptr : value.c_str();
}

// The contexts of the backend under test, made once: the CPU backend with 1 to 4 threads (0: the default),
// or the CUDA backend.
class Contexts {
public:
    gpk_context *get(unsigned threads) {
        auto it = contexts_.find(threads);
        if (it != contexts_.end()) return it->second;
        gpk_context_options o;
        gpk_context_options_init(&o);
        o.backend = kCuda ? GPK_BACKEND_CUDA : GPK_BACKEND_CPU;
        o.threads = threads;
        gpk_context *ctx = nullptr;
        if (gpk_context_create(&ctx, &o) != GPK_OK) {
            std::fprintf(stderr, "gpk_context_create: %s\n", gpk_context_last_error(nullptr));
            std::exit(1);
        }
        return contexts_[threads] = ctx;
    }
    // Called at the end of main: at static destruction the CUDA runtime may already be torn down, and
    // compute-sanitizer's leak check counted the contexts' buffers as leaked.
    void destroy_all() {
        for (auto &c : contexts_) gpk_context_destroy(c.second);
        contexts_.clear();
    }
    ~Contexts() { destroy_all(); }

private:
    std::map<unsigned, gpk_context *> contexts_;
};

Contexts contexts;

// Runs the case with the setup's knobs and memory; out holds the result as the caller would see it.
gpk_status run(const Case &k, const Setup &s, const Filter &f, const Image &in, Image &out) {
    gpk_context *ctx = contexts.get(kCuda ? 0 : s.threads);
    const hooks::Hook strip("GPK_TEST_CONV_CPU_STRIP", hook_value(s.cpu_strip));
    const hooks::Hook isa("GPK_TEST_CPU_ISA", hook_value(s.cpu_isa));
    const hooks::Hook pair("GPK_TEST_CONV_PAIR", hook_value(s.gpu_pair));
    const hooks::Hook fused("GPK_TEST_CONV_FUSED_KERNEL", hook_value(s.gpu_fused));
    const hooks::Hook f32("GPK_TEST_CONV_F32", hook_value(s.gpu_f32));
    const hooks::Hook memory("GPK_TEST_DEVICE_MEMORY_LIMIT", hook_value(s.memory_limit));
    const gpk_convolve_params p = convolve_params(f.get(), k.border, k.norm, k.acc);
    gpk_status status;
#ifdef GPK_SWEEP_CUDA
    gpu::Block din(gpu::Memory(s.in_memory), in.bytes.size()),
        dout(gpu::Memory(s.out_memory), out.bytes.size());
    din.upload(in.bytes.data());
    dout.upload(out.bytes.data());
    status = gpk_convolve(ctx, &p, &in.desc, din.get(), &out.desc, dout.get());
    dout.download(out.bytes.data());
#else
    status = gpk_convolve(ctx, &p, &in.desc, in.bytes.data(), &out.desc, out.bytes.data());
#endif
    return status;
}

// ---- One case ----

struct Tally {
    const char *sweep;
    size_t cases = 0, failed = 0, skipped = 0;
    std::chrono::steady_clock::time_point start = std::chrono::steady_clock::now();
    explicit Tally(const char *name) : sweep(name) {}
    ~Tally() {
        const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        std::printf("%-22s %6zu cases, %zu failed (%.1f s)\n", sweep, cases, failed, s);
        std::fflush(stdout);
    }
};

bool quick = false;
size_t case_counter = 0;

// Runs case k with filter f and setup s against the reference.
void check_case(Tally &tally, const Case &k, const Filter &f, const Setup &s) {
    if (quick && case_counter++ % 8 != 0) return;
    ++tally.cases;
    const std::string what = std::string(tally.sweep) + ": " + describe(k, f.name) + describe_setup(s);
    Image in = random_image(rng, k.in_type, k.width, k.height, k.channels, s.in_pad);
    if (s.constant)
        for (size_t y = 0; y < k.height; ++y)
            for (size_t x = 0; x < k.width; ++x)
                for (unsigned c = 0; c < k.channels; ++c) in.set(x, y, c, in.get(0, 0, c));
    Image out(k.out_type, k.width, k.height, k.channels, s.out_pad);
    const gpk_status status = run(k, s, f, in, out);
    if (k.norm == GPK_NORMALIZE_SUM && f.taps.sum == 0) {
        const bool ok =
            status == GPK_ERR_INVALID_ARGUMENT &&
            std::all_of(out.bytes.begin(), out.bytes.end(), [](unsigned char b) { return b == kGarbage; });
        CHECK_MSG(ok, what + ": a zero-sum filter with sum normalisation must be refused, output untouched");
        tally.failed += !ok;
        return;
    }
    if (status != GPK_OK) {
        CHECK_MSG(false, what + ": " + gpk_status_string(status) + ": " +
                             gpk_context_last_error(contexts.get(kCuda ? 0 : s.threads)));
        ++tally.failed;
        return;
    }
    tally.failed += !check_output(k, f.taps, in, out, what);
}

// ---- Drawing the rest of a case ----

const gpk_accumulate kAccs[] = {GPK_ACCUMULATE_AUTO, GPK_ACCUMULATE_F32, GPK_ACCUMULATE_F64};

// The CPU instruction sets to force (GPK_TEST_CPU_ISA), "" being the library's own choice. Only where the
// library knows the knob: it must then refuse a name it does not know (GPK_ERR_INVALID_ARGUMENT naming the
// knob); a library that ignores the knob runs its own choice only, and the sweep says so.
std::vector<std::string> isas = {""};

void find_isas() {
    if (kCuda) return;
    const Filter f = make_filter(false, 1, 1, TapKind::bytes, GPK_U8);
    Case k{GPK_U8, GPK_U8, 1, GPK_BORDER_CLAMP, GPK_NORMALIZE_NONE, GPK_ACCUMULATE_AUTO, 3, 2};
    Image in(GPK_U8, 3, 2, 1, 0), out(GPK_U8, 3, 2, 1, 0);
    Setup s;
    s.cpu_isa = "no-such-isa";
    const gpk_status bogus = run(k, s, f, in, out);
    const bool known =
        bogus == GPK_ERR_INVALID_ARGUMENT &&
        std::string(gpk_context_last_error(contexts.get(0))).find("GPK_TEST_CPU_ISA") != std::string::npos;
    if (!known) {
        std::printf("note: this library does not know GPK_TEST_CPU_ISA; only its own instruction set runs\n");
        return;
    }
    for (const char *isa : {"avx512", "avx2", "baseline"}) {
        s.cpu_isa = isa;
        if (run(k, s, f, in, out) == GPK_OK) isas.push_back(isa);
    }
    std::string list;
    for (size_t i = 1; i < isas.size(); ++i) list += " " + isas[i];
    std::printf("instruction sets forced in turn:%s (and the library's own choice)\n", list.c_str());
}

// Sample counts per row (width * channels) at the edges of what the backends cut rows into: the CPU tap
// loop's blocks (128 four-byte or 64 eight-byte samples) and its 64-byte vectors; the CUDA tiles (32
// samples, 128 for the row pass and the four-outputs kernels), the u8 3x3 strip kernel (8 outputs a
// thread after a 1-sample edge, 128 threads a block: 1024 + 9) and the u8 box kernel (warps of 30 groups
// of 8 after an 8-sample edge, blocks of 120 groups: 8 + 240 + 4 and 8 + 960 + 4 where the last group's
// window ends).
const size_t kEdgeSamples[] = {1,    2,    3,    4,    5,    7,    8,    9,    10,   11,  15,   16,   17,
                               18,   24,   31,   32,   33,   40,   63,   64,   65,   96,  127,  128,  129,
                               130,  160,  191,  192,  193,  251,  252,  255,  256,  257, 259,  260,  383,
                               384,  385,  511,  512,  513,  640,  971,  972,  979,  980, 1023, 1024, 1025,
                               1032, 1033, 1034, 1041, 1042, 2047, 2048, 2049, 2057, 2058};
// Heights at the edges of the CUDA kernels' row tiles (8-row strips, 32, 64 and 128 rows a block) and the
// CPU's two rows a tap pass.
const size_t kEdgeRows[] = {1, 2, 3, 4, 5, 7, 8, 9, 15, 16, 17, 31, 32, 33, 63, 64, 65, 127, 128, 129};

// The channel counts that divide n samples into whole pixels.
std::vector<unsigned> channels_dividing(size_t n) {
    std::vector<unsigned> c;
    for (unsigned ch = 1; ch <= 4; ++ch)
        if (n % ch == 0) c.push_back(ch);
    return c;
}

// Row padding in whole samples of the type (0 half the time).
size_t pad_for(gpk_dtype t) {
    return pick(0, 1) ? 0 : size_t(pick(1, 9)) * gpk_dtype_size(t);
}

// A setup drawn at random: threads, strips and ISA on the CPU, memory, bands and strip rows on the GPU.
Setup random_setup(const Case &k) {
    Setup s;
    s.in_pad = pad_for(k.in_type);
    s.out_pad = pad_for(k.out_type);
    s.constant = pick(0, 19) == 0;
    s.threads = unsigned(pick(0, 4));
    if (!kCuda) {
        const char *strips[] = {"", "", "", "1", "100", "300", "700", "1500"};
        s.cpu_strip = pick_of(strips);
        s.cpu_isa = pick_of(isas);
    } else {
        // The pair kernel's min/max in one cooperative launch or two.
        const char *pair[] = {"", "", "twopass"};
        s.gpu_pair = pick_of(pair);
        // The fused separable kernels (f32 sums, one channel, square filters): the streaming kernel, then
        // the ring kernel where it does not fit; the ring kernel alone.
        const char *fused[] = {"", "", "ring"};
        s.gpu_fused = pick_of(fused);
        // The sliding-window f32 kernel, or the tile kernels in its place.
        const char *f32[] = {"", "", "off"};
        s.gpu_f32 = pick_of(f32);
        s.in_memory = int(pick(0, 2));
        s.out_memory = int(pick(0, 2));
        // A device faked small enough to cut a host image into bands of a few rows: room for each of three
        // lanes' band of `rows` rows with a halo of up to 129 rows, in, between and out at 8 bytes a sample.
        const size_t row_bytes = k.width * k.channels * 8 * 3;
        if (pick(0, 3) == 0)
            s.memory_limit =
                std::to_string(3 * row_bytes * size_t(GPK_FILTER_MAX_SEPARABLE + pick(1, 16)) + (1u << 20));
    }
    return s;
}

// A case with everything but the filter drawn at random.
Case random_case(size_t samples, size_t height) {
    Case k{};
    k.in_type = pick_of(kTypes);
    k.out_type = pick_of(kTypes);
    k.channels = pick_of(channels_dividing(samples));
    k.width = samples / k.channels;
    k.height = height;
    k.border = pick_of(kBorders);
    k.norm = pick_of(kNorms);
    k.acc = pick_of(kAccs);
    return k;
}

TapKind kind_for(gpk_dtype in) {
    if (is_integer_type(in) && pick(0, 1)) return pick_of(kIntegerKinds);
    return pick_of(kRealKinds);
}

// Rows that keep the reference's work (samples x taps) near `budget` multiply-adds.
size_t rows_within(size_t samples, size_t taps, size_t budget, size_t wanted) {
    const size_t most = std::max<size_t>(1, budget / std::max<size_t>(1, samples * taps));
    return std::min(wanted, most);
}

// ---- The sweeps ----

// Every input x output type, accumulation, normalisation and border, with random shapes, widths and taps.
void sweep_types() {
    Tally t("types");
    for (gpk_dtype in : kTypes)
        for (gpk_dtype out : kTypes)
            for (gpk_accumulate acc : kAccs)
                for (gpk_normalize nm : kNorms)
                    for (gpk_border b : kBorders) {
                        const size_t n = pick_of(kEdgeSamples);
                        Case k = random_case(n, rows_within(n, 81, 200000, size_t(pick(1, 40))));
                        k.in_type = in, k.out_type = out, k.acc = acc, k.norm = nm, k.border = b;
                        const bool sep = pick(0, 1);
                        const int sizes[] = {1, 3, 5, 9};
                        const Filter f = make_filter(sep, pick_of(sizes), pick_of(sizes), kind_for(in), in);
                        check_case(t, k, f, random_setup(k));
                    }
}

// Every 2D shape from 1x1 to 63x63 (odd sizes), on images from smaller than the filter to several of its
// widths.
void sweep_2d_shapes() {
    Tally t("2D shapes");
    for (int kh = 1; kh <= GPK_FILTER_MAX_2D; kh += 2)
        for (int kw = 1; kw <= GPK_FILTER_MAX_2D; kw += 2) {
            const size_t taps = size_t(kh * kw);
            const size_t n = pick(0, 2) ? size_t(pick(1, 4 * kw + 8)) : pick_of(kEdgeSamples);
            const size_t samples = std::min<size_t>(n, std::max<size_t>(4, 80000 / taps));
            Case k = random_case(samples, 1);
            k.height = rows_within(k.width * k.channels, taps, 80000, size_t(pick(1, kh + 4)));
            const Filter f = make_filter(false, kh, kw, kind_for(k.in_type), k.in_type);
            check_case(t, k, f, random_setup(k));
        }
}

// Every separable row length 1..129 with a random column length, and every column length with a random row
// length; and the four corners (1|1, 1|129, 129|1, 129|129).
void sweep_separable_lengths() {
    Tally t("separable lengths");
    auto one = [&](int row, int col) {
        const size_t n = pick(0, 1) ? size_t(pick(1, 2 * row + 40)) : pick_of(kEdgeSamples);
        Case k = random_case(n, 1);
        k.height = rows_within(k.width * k.channels, size_t(row + col), 200000, size_t(pick(1, col + 6)));
        const Filter f = make_filter(true, col, row, kind_for(k.in_type), k.in_type);
        check_case(t, k, f, random_setup(k));
    };
    for (int len = 1; len <= GPK_FILTER_MAX_SEPARABLE; len += 2) {
        one(len, odd(1, GPK_FILTER_MAX_SEPARABLE));
        one(odd(1, GPK_FILTER_MAX_SEPARABLE), len);
    }
    for (int row : {1, GPK_FILTER_MAX_SEPARABLE})
        for (int col : {1, GPK_FILTER_MAX_SEPARABLE}) one(row, col);
}

// The accumulation paths: the float path in f32 and f64, from an input of its own type (read in place on
// the CPU) or converted, and the exact path in each accumulator.
struct AccPath {
    const char *name;
    gpk_dtype inputs[2];
    gpk_accumulate acc;
    TapKind kinds[2];
};
const AccPath kPaths[] = {
    {"f32 own type", {GPK_F32, GPK_F32}, GPK_ACCUMULATE_F32, {TapKind::real, TapKind::positive_real}},
    {"f64 own type", {GPK_F64, GPK_F64}, GPK_ACCUMULATE_F64, {TapKind::real, TapKind::positive_real}},
    {"f32 converted", {GPK_U8, GPK_F64}, GPK_ACCUMULATE_F32, {TapKind::real, TapKind::positive_real}},
    {"f64 converted", {GPK_U16, GPK_F32}, GPK_ACCUMULATE_F64, {TapKind::real, TapKind::positive_real}},
    {"exact, float sums", {GPK_U8, GPK_U16}, GPK_ACCUMULATE_AUTO, {TapKind::bytes, TapKind::signed_bytes}},
    {"exact, int32 sums", {GPK_U8, GPK_U16}, GPK_ACCUMULATE_AUTO, {TapKind::wide31, TapKind::wide31}},
    {"exact, double sums", {GPK_U8, GPK_U16}, GPK_ACCUMULATE_AUTO, {TapKind::wide53, TapKind::wide53}},
    {"exact, int64 sums", {GPK_U8, GPK_U16}, GPK_ACCUMULATE_AUTO, {TapKind::wide54, TapKind::wide54}},
};

// Every accumulation path x every edge width x the shape classes 1x1, 1xk, kx1, kxk and their separable
// twins (k random), so that no path meets a row length it has not been checked at.
void sweep_widths() {
    Tally t("widths x paths");
    for (const AccPath &path : kPaths)
        for (size_t n : kEdgeSamples)
            for (int shape = 0; shape < 8; ++shape) {
                const bool sep = shape >= 4;
                const int k1 = odd(3, 15), k2 = odd(3, 15);
                const int kh = (shape % 4 == 0 || shape % 4 == 1) ? 1 : k1;
                const int kw = (shape % 4 == 0 || shape % 4 == 2) ? 1 : k2;
                Case k = random_case(n, 1);
                k.in_type = path.inputs[pick(0, 1)];
                k.acc = path.acc;
                k.height = rows_within(n, size_t(sep ? kh + kw : kh * kw), 60000,
                                       pick(0, 3) ? size_t(pick(1, 12)) : pick_of(kEdgeRows));
                const Filter f = make_filter(sep, kh, kw, path.kinds[pick(0, 1)], k.in_type);
                check_case(t, k, f, random_setup(k));
            }
}

// Row chunks and thread splits (CPU: chunks of at least 32 rows, or 8 (kh - 1), taken by 1 to 4 threads;
// with column strips several units a row), and the GPU's row tiles: wide images of heights around those
// boundaries, small filters.
void sweep_rows() {
    Tally t("rows x threads");
    const size_t heights[] = {31, 32, 33, 47, 63, 64, 65, 95, 96, 97, 127, 128, 129, 130, 161};
    for (size_t h : heights)
        for (unsigned threads = 1; threads <= 4; ++threads) {
            const int kh = odd(1, 5), kw = odd(1, 5);
            const bool sep = pick(0, 1);
            const size_t n = size_t(pick(2048, 2600));
            Case k = random_case(n, h);
            k.height = rows_within(k.width * k.channels, size_t(kh * kw), 1000000, h);
            const Filter f = make_filter(sep, kh, kw, kind_for(k.in_type), k.in_type);
            Setup s = random_setup(k);
            s.threads = threads;
            check_case(t, k, f, s);
        }
}

// The CUDA backend's specialised kernels at the edges of their tiles: u8 3x3 byte taps (the strip kernel:
// plain, sum with each divider, signed, min/max), u8 K x K outer-product taps and 5|5 separable pairs (the
// rank-1 strip kernel), u8 K x K box taps and 3|3 and 9|9 pairs of them (the box kernel), u8 3x3 taps
// whose |taps| sum to at most 16 (the pair kernel: every finish, min/max in one launch or two), u8 5x5 and
// 9x9 (four outputs a thread), f32 5x5, 7x7 and 9x9 (the sliding-window kernel, or on unaligned rows and
// with its hook the tile kernels), f32 1x1 and 3x3 (the general and four-outputs kernels), f32 separable
// filters of up to 17 taps (fixed-length row and column kernels), square f32 separable filters of 1..65
// taps (the fused kernels). The CPU backend runs them too.
void sweep_kernels() {
    Tally t("specialised kernels");
    struct Kind {
        gpk_dtype in, out;
        gpk_accumulate acc;
        TapKind taps;
        int k; // 2D k x k; 0: separable of up to 17 taps; -k: separable k|k
    };
    const Kind kinds[] = {
        {GPK_U8, GPK_U8, GPK_ACCUMULATE_AUTO, TapKind::bytes, 3},
        {GPK_U8, GPK_U8, GPK_ACCUMULATE_AUTO, TapKind::signed_bytes, 3},
        {GPK_U8, GPK_U8, GPK_ACCUMULATE_AUTO, TapKind::bytes, 5},
        {GPK_U8, GPK_U8, GPK_ACCUMULATE_AUTO, TapKind::signed_bytes, 9},
        {GPK_U8, GPK_U8, GPK_ACCUMULATE_AUTO, TapKind::outer, 3},
        {GPK_U8, GPK_U8, GPK_ACCUMULATE_AUTO, TapKind::outer, 5},
        {GPK_U8, GPK_U8, GPK_ACCUMULATE_AUTO, TapKind::outer, 7},
        {GPK_U8, GPK_U8, GPK_ACCUMULATE_AUTO, TapKind::outer, 9},
        {GPK_U8, GPK_U8, GPK_ACCUMULATE_AUTO, TapKind::outer, -5},
        {GPK_U8, GPK_U8, GPK_ACCUMULATE_AUTO, TapKind::box, 3},
        {GPK_U8, GPK_U8, GPK_ACCUMULATE_AUTO, TapKind::small, 3},
        {GPK_U8, GPK_U8, GPK_ACCUMULATE_AUTO, TapKind::small, 3},
        {GPK_U8, GPK_U8, GPK_ACCUMULATE_AUTO, TapKind::box, 5},
        {GPK_U8, GPK_U8, GPK_ACCUMULATE_AUTO, TapKind::box, 7},
        {GPK_U8, GPK_U8, GPK_ACCUMULATE_AUTO, TapKind::box, 9},
        {GPK_U8, GPK_U8, GPK_ACCUMULATE_AUTO, TapKind::box, -3},
        {GPK_U8, GPK_U8, GPK_ACCUMULATE_AUTO, TapKind::box, -9},
        {GPK_U8, GPK_F32, GPK_ACCUMULATE_AUTO, TapKind::bytes, 3},
        {GPK_F32, GPK_F32, GPK_ACCUMULATE_F32, TapKind::real, 3},
        {GPK_F32, GPK_F32, GPK_ACCUMULATE_F32, TapKind::positive_real, 5},
        {GPK_F32, GPK_F32, GPK_ACCUMULATE_F32, TapKind::real, 9},
        {GPK_F32, GPK_F32, GPK_ACCUMULATE_F32, TapKind::real, 7},
        {GPK_F32, GPK_F32, GPK_ACCUMULATE_AUTO, TapKind::positive_real, 1},
        {GPK_F32, GPK_U8, GPK_ACCUMULATE_F32, TapKind::positive_real, 3},
        {GPK_F32, GPK_F32, GPK_ACCUMULATE_F32, TapKind::real, 0},
        {GPK_U8, GPK_U8, GPK_ACCUMULATE_AUTO, TapKind::bytes, 0},
    };
    for (const Kind &kd : kinds)
        for (size_t n : kEdgeSamples) {
            const bool sep = kd.k <= 0;
            const int kh = kd.k < 0 ? -kd.k
                           : sep    ? odd(1, 17)
                                    : kd.k,
                      kw = kd.k < 0 ? -kd.k
                           : sep    ? odd(1, 17)
                                    : kd.k;
            Case k = random_case(n, 1);
            k.in_type = kd.in, k.out_type = kd.out, k.acc = kd.acc;
            // Mostly one channel: the specialised kernels take one.
            k.channels = pick(0, 3) ? 1u : pick_of(channels_dividing(n));
            k.width = n / k.channels;
            k.height = rows_within(n, size_t(sep ? kh + kw : kh * kw), 150000, pick_of(kEdgeRows));
            const Filter f = make_filter(sep, kh, kw, kd.taps, kd.in);
            check_case(t, k, f, random_setup(k));
        }
    // The fused separable kernels (CUDA: single-channel f32 sums, square filters; random_setup picks the
    // kernel): every odd length 1..65, widths around their 128- and 256-element strips, heights around their
    // 8- and 16-row batches and runs of rows (a run is at least K - 1 rows, rounded up to whole batches).
    const size_t fused_widths[] = {1, 2, 9, 127, 128, 129, 255, 256, 257, 385, 511, 513};
    for (int len = 1; len <= 65; len += 2)
        for (int c = 0; c < 3; ++c) {
            const size_t n = pick_of(fused_widths);
            Case k = random_case(n, 1);
            k.channels = 1;
            k.width = n;
            k.in_type = GPK_F32, k.out_type = pick(0, 3) ? GPK_F32 : GPK_U8, k.acc = GPK_ACCUMULATE_F32;
            if (pick(0, 3)) k.norm = pick(0, 1) ? GPK_NORMALIZE_NONE : GPK_NORMALIZE_SUM;
            const size_t run = std::max<size_t>(8, (size_t(len - 1) + 7) / 8 * 8);
            const size_t heights[] = {1, 7, 8, 9, 15, 16, 17, 33, run - 1, run, run + 1, 2 * run + 9};
            k.height = rows_within(k.width, size_t(2 * len), 5000000, pick_of(heights));
            const Filter f =
                make_filter(true, len, len, pick(0, 1) ? TapKind::real : TapKind::positive_real, GPK_F32);
            check_case(t, k, f, random_setup(k));
        }
}

} // namespace

int main() {
#ifdef GPK_SWEEP_CUDA
    gpu::require_device();
#endif
    const char *seed_text = std::getenv("GPK_TEST_SEED");
    const unsigned long long seed =
        seed_text && *seed_text ? std::strtoull(seed_text, nullptr, 10) : 20261124;
    rng.seed(seed);
    quick = env_flag("GPK_TEST_QUICK");
    std::printf("convolution sweep on the %s backend, seed %llu (GPK_TEST_SEED)%s\n", kCuda ? "cuda" : "cpu",
                seed, quick ? ", every 8th case" : "");
    if (!hooks::available())
        std::printf(
            "note: this library has no test hooks: forced strips, instruction sets, kernels and device "
            "memory limits all run the library's own choice\n");
    find_isas();
    sweep_types();
    sweep_2d_shapes();
    sweep_separable_lengths();
    sweep_widths();
    sweep_rows();
    sweep_kernels();
    contexts.destroy_all();
    return check::finish(kCuda ? "test_gpu_convolve_sweep" : "test_convolve_sweep");
}
