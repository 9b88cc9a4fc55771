// The CUDA heat solver: buffers (kept on the context between calls), the pass plan, and the iteration loop
// that enqueues batches of passes and reads the device state back once per batch (never once per
// iteration). What a call costs beside its iterations is kept small: device inputs are read in place by
// the first pass, which also checks them; the pass that ends the run writes a device tfinal directly; no
// allocation once the context holds buffers of the size. Kernels: heat_kernels.cuh, heat_blocked.cuh.
#include "cuda/heat.cuh"

#include "cuda/heat_blocked.cuh"
#include "cuda/heat_kernels.cuh"
#include "cuda/pointer.cuh"
#include "engine/error.hpp"
#include "engine/validate.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

namespace gpk::cuda {
namespace {

using heat::DeviceState;
using heat::GridStats;
using heat::PassShape;
using heat::Views;

constexpr int kFinishThreads = 256;
constexpr int kStatsThreads = 256;
constexpr int kStatsBlocks = 1024; // fixed: the sum's order depends on it
constexpr unsigned kLogCapacity = 4096;
constexpr size_t kMaxBatch = 1024; // iterations enqueued before the host looks at the state

using PassFn = void (*)(Views, const double *, DeviceState *, PassShape, int, bool, bool, double *);

// A pass kernel: up to T iterations a pass, `threads` threads a block, MinBlocks resident per SM (which caps
// its registers).
struct PassKernel {
    int levels, threads, min_blocks;
    PassFn plain, checking; // checking: the run's first pass, which also checks the inputs
    size_t smem;
};

template <int T, int Threads, int B, bool Lean = true> constexpr PassKernel pass_kernel_of() {
    return {T,
            Threads,
            B,
            heat::pass_kernel<T, Threads, B, false, Lean>,
            heat::pass_kernel<T, Threads, B, true, Lean>,
            sizeof(heat::PassShared<T, Threads>)};
}

// The kernels built, the default first; the first one that fits the device runs (the last, of 128-thread
// blocks and 32 KiB of shared memory, fits any device gpk builds for). The internal knobs
// GPK_TEST_HEAT_PASS_LEVELS=L (iterations per pass: the first kernel of at least L levels runs passes of at
// most L) and GPK_TEST_HEAT_KERNEL=T/B (the kernel of T levels, B blocks per SM) exist for tests and
// benchmarks: every choice gives the same bits. 6 levels is the deepest pass whose lean steps
// (heat_blocked.cuh) fit 128 registers without spilling (ptxas, sm_90); 7 spills; 8/2 takes general steps
// only (with lean ones it spilled 304 bytes; round 1's default, 0.807 ms an iteration at 16384² on the
// H100); 8/1 and 12/1 have a whole SM's registers for 8 warps.
constexpr PassKernel kPassKernels[] = {pass_kernel_of<6, 256, 2>(), pass_kernel_of<4, 256, 2>(),
                                       pass_kernel_of<7, 256, 2>(), pass_kernel_of<8, 256, 2, false>(),
                                       pass_kernel_of<8, 256, 1>(), pass_kernel_of<12, 256, 1>(),
                                       pass_kernel_of<4, 128, 4>()};

struct PassChoice {
    const PassKernel *kernel;
    int levels;
};

// The kernel the knobs ask for (the default without them).
PassChoice choose_pass_kernel() {
    PassChoice c{&kPassKernels[0], kPassKernels[0].levels};
    if (const char *knob = std::getenv("GPK_TEST_HEAT_KERNEL")) {
        int t = 0, b = 0;
        if (std::sscanf(knob, "%d/%d", &t, &b) == 2)
            for (const PassKernel &k : kPassKernels)
                if (k.levels == t && k.min_blocks == b) {
                    c = {&k, t};
                    break;
                }
    }
    if (const char *knob = std::getenv("GPK_TEST_HEAT_PASS_LEVELS")) {
        int v = std::atoi(knob);
        if (v >= 1 && v <= c.kernel->levels) {
            c.levels = v;
        } else if (v >= 1) {
            for (const PassKernel &k : kPassKernels)
                if (k.levels >= v && (c.kernel->levels < v || k.levels < c.kernel->levels)) c = {&k, v};
        }
    }
    return c;
}

// Free device memory as the heat solver may use it: cudaMemGetInfo plus what it holds already, capped by
// the test knob GPK_TEST_DEVICE_MEMORY_LIMIT=bytes (NOTES.md, internal knobs).
size_t usable_device_memory(size_t held, const char *knob) {
    size_t free_b = 0, total_b = 0;
    check(cudaMemGetInfo(&free_b, &total_b), "cudaMemGetInfo");
    size_t usable = free_b + held;
    if (knob) {
        char *end = nullptr;
        unsigned long long limit = std::strtoull(knob, &end, 10);
        if (end != knob && limit < usable) usable = (size_t)limit;
    }
    return usable;
}

std::string cell_name(const char *array, size_t k, size_t cols) {
    return std::string(array) + "[" + std::to_string(k) + "] (row " + std::to_string(k / cols) + ", column " +
           std::to_string(k % cols) + ")";
}

size_t round_up(size_t n, size_t to) {
    return (n + to - 1) / to * to;
}

// The device work area: the state, the report, the maxdiff log, per-block maxima and report partials; and
// its pinned mirror for what the host reads back (two state slots: two batches may be in flight). State
// and report come first in both, so that one copy starts a run.
struct WorkLayout {
    static constexpr size_t state = 0, stats = 256, log = 512;
    size_t level_partials, stats_partials, bytes;
    WorkLayout(size_t level_parts) {
        level_partials = log + round_up(kLogCapacity * sizeof(double), 256);
        stats_partials = level_partials + round_up(level_parts * sizeof(double), 256);
        bytes = stats_partials + round_up(kStatsBlocks * sizeof(GridStats), 256);
    }
};
constexpr size_t kHostState[2] = {0, 128}, kHostStats = 256, kHostLog = 512;
constexpr size_t kHostBytes = kHostLog + kLogCapacity * sizeof(double);
static_assert(sizeof(DeviceState) <= 128 && sizeof(GridStats) <= 256, "work area layout");

class HeatRun {
public:
    HeatRun(DeviceContext &ctx, const HeatJob &job) : ctx_(ctx), job_(job), stream_(ctx.main()) {}
    void run();

private:
    void plan_passes();
    void allocate();
    void upload();
    void enqueue_pass(int levels, bool checking, bool to_final);
    void enqueue_iterations(size_t count, bool first_batch, bool ends_run);
    void enqueue_stats(bool periodic);
    void enqueue_readback(int slot, size_t begin, size_t end);
    bool callback_due(size_t it) const;
    void report_bad_inputs(const DeviceState &st) const;
    size_t batch_end(size_t done, size_t batch) const;
    const char *deliver_callbacks(size_t done, size_t last, bool converged);
    gpk_heat_report report(size_t niter, double maxdiff, double seconds) const;
    double seconds() const;

    DeviceState &host_state(int slot) const {
        return *reinterpret_cast<DeviceState *>(host_ + kHostState[slot]);
    }
    GridStats &host_stats() const { return *reinterpret_cast<GridStats *>(host_ + kHostStats); }
    double host_log(size_t iter) const {
        return reinterpret_cast<const double *>(host_ + kHostLog)[(iter - 1) % kLogCapacity];
    }
    template <class T> T *work(size_t offset) const { return reinterpret_cast<T *>(work_ + offset); }

    DeviceContext &ctx_;
    const HeatJob &job_;
    cudaStream_t stream_;
    PassChoice pass_{};
    bool tinit_on_device_ = false, cond_on_device_ = false, tfinal_direct_ = false;
    Views views_{};
    const double *cond_ = nullptr;
    char *work_ = nullptr, *host_ = nullptr;
    size_t level_parts_ = 0;
    WorkLayout layout_{0};
    dim3 pass_grid_;
    PassShape shape_{};
    int stats_blocks_ = 1;
    std::chrono::steady_clock::time_point start_;
};

// Blocks of both forms of a pass kernel resident per SM; 0 where it does not fit the device.
int resident(DeviceContext &ctx, const PassKernel &k) {
    return std::min(ctx.resident_blocks(reinterpret_cast<const void *>(k.plain), k.threads, k.smem),
                    ctx.resident_blocks(reinterpret_cast<const void *>(k.checking), k.threads, k.smem));
}

// The pass kernel: the one chosen, or where that one does not fit the device (shared memory, registers), the
// first of the list that does (the same bits either way). Pass geometry: strips of W columns; H rows per
// block chosen to minimise the modelled time, (waves of resident blocks) x (steps of one block: H plus the
// T-row overlaps and the pipeline's fill), so that neither a partly filled last wave nor the overlaps cost
// much. Remembered on the context for the next call of the same shape.
void HeatRun::plan_passes() {
    int per_sm = resident(ctx_, *pass_.kernel);
    for (const PassKernel &k : kPassKernels) {
        if (per_sm >= 1) break;
        if ((per_sm = resident(ctx_, k)) >= 1) pass_ = {&k, std::min(pass_.levels, k.levels)};
    }
    if (per_sm < 1) fail(GPK_ERR_UNSUPPORTED, "heat: no pass kernel fits this device's shared memory");
    const PassKernel &k = *pass_.kernel;
    const size_t N = job_.rows, M = job_.cols;
    const int T = k.levels;
    shape_.strip = k.threads - 2 * T;
    const size_t nx = (M + shape_.strip - 1) / shape_.strip;
    HeatBuffers::Plan &plan = ctx_.heat().plan;
    const void *fn = reinterpret_cast<const void *>(k.plain);
    if (plan.rows != N || plan.cols != M || plan.kernel != fn || plan.per_sm != per_sm) {
        const size_t slots = (size_t)ctx_.limits().multiprocessors * (size_t)per_sm;
        const size_t h_min = std::max<size_t>(2 * T, (N + 65534) / 65535);
        size_t best = N;
        double best_cost = INFINITY;
        for (size_t h = h_min; h <= std::min(N, std::max<size_t>(h_min, 4096)); ++h) {
            size_t blocks = nx * ((N + h - 1) / h);
            double cost = (double)((blocks + slots - 1) / slots) * ((double)h + 2.5 * T);
            if (cost < best_cost) best_cost = cost, best = h;
        }
        plan = {N, M, fn, per_sm, (int)best, (unsigned)nx, (unsigned)((N + best - 1) / best)};
    }
    shape_.rows_per_block = plan.rows_per_block;
    pass_grid_ = dim3(plan.grid_x, plan.grid_y);
    // GPK_TEST_HEAT_ROWS=H (NOTES.md, internal knobs): H rows per block (at least 2T, at most 65535 blocks
    // down), so that tests see blocks of every kind (lean steps, several row blocks) on small grids.
    if (const char *knob = std::getenv("GPK_TEST_HEAT_ROWS")) {
        const size_t h =
            std::max<size_t>({(size_t)std::max(0L, std::atol(knob)), 2 * (size_t)T, (N + 65534) / 65535});
        shape_.rows_per_block = (int)std::min(h, N);
        pass_grid_.y = (unsigned)((N + shape_.rows_per_block - 1) / shape_.rows_per_block);
    }
}

// The context's buffers, grown where this run needs more; the device's free memory is asked only then
// (or when the test knob caps it).
void HeatRun::allocate() {
    const size_t N = job_.rows, M = job_.cols;
    const size_t pitch = (M + 31) / 32 * 32; // 256-byte rows
    HeatBuffers &hb = ctx_.heat();
    level_parts_ = (size_t)pass_grid_.x * pass_grid_.y * pass_.kernel->levels;
    layout_ = WorkLayout(level_parts_);
    // The C boundary checked that (N+2)*(M+2) fits; the padded rows may not.
    if (N + 2 > SIZE_MAX / (2 * sizeof(double)) / pitch)
        fail(GPK_ERR_OUT_OF_MEMORY, "heat: a " + std::to_string(N) + " x " + std::to_string(M) +
                                        " grid needs more than SIZE_MAX bytes of device memory");
    const size_t grid_bytes = 2 * (N + 2) * pitch * sizeof(double);
    const size_t cond_bytes = cond_on_device_ ? 0 : N * M * sizeof(double);
    const char *knob = std::getenv("GPK_TEST_DEVICE_MEMORY_LIMIT");
    if (knob && !*knob) knob = nullptr;
    const bool grows = grid_bytes > hb.grids.capacity() || cond_bytes > hb.cond.capacity() ||
                       layout_.bytes > hb.work.capacity();
    if (grows || knob) {
        const size_t need = grid_bytes + cond_bytes + layout_.bytes + (1 << 16);
        size_t usable = usable_device_memory(hb.held(), knob);
        if (need > usable && !knob) { // band buffers of earlier convolutions and histograms may be in the way
            ctx_.release_lane_buffers();
            usable = usable_device_memory(hb.held(), knob);
        }
        if (need > usable)
            fail(GPK_ERR_OUT_OF_MEMORY, "heat: a " + std::to_string(N) + " x " + std::to_string(M) +
                                            " grid needs " + std::to_string(need) +
                                            " bytes of device memory; " + std::to_string(usable) +
                                            " bytes are free");
    }
    auto *cells = static_cast<double *>(ctx_.grow(hb.grids, grid_bytes));
    const long long P = (long long)pitch, NN = (long long)N;
    views_.rows = N;
    views_.cols = M;
    views_.v[heat::kGrid0] = {cells + P, P, 0, NN + 1};
    views_.v[heat::kGrid1] = {cells + (N + 2) * pitch + P, P, 0, NN + 1};
    views_.v[heat::kInitial] = {const_cast<double *>(job_.tinit), (long long)M, 1, NN};
    views_.v[heat::kFinal] = {job_.tfinal, (long long)M, 1, NN};
    cond_ = cond_on_device_ ? job_.conductivity : static_cast<double *>(ctx_.grow(hb.cond, cond_bytes));
    work_ = static_cast<char *>(ctx_.grow(hb.work, layout_.bytes));
    host_ = ctx_.grow(hb.host, kHostBytes);
    stats_blocks_ = (int)std::min<size_t>(N, kStatsBlocks);
}

// Host inputs go to grid 0 and the conductivity buffer; device inputs stay where they are. The halo rows of
// both grids come from tinit's edge rows (fixed for the run); the run state starts at the initial grid, the
// report zeroed (a periodic one that convergence skips is copied back unwritten): one copy.
void HeatRun::upload() {
    const size_t N = job_.rows, M = job_.cols;
    if (!tinit_on_device_)
        check(cudaMemcpy2DAsync(views_.v[heat::kGrid0].base, views_.v[heat::kGrid0].pitch * sizeof(double),
                                job_.tinit, M * sizeof(double), M * sizeof(double), N, cudaMemcpyDefault,
                                stream_),
              "cudaMemcpy2DAsync (tinit)");
    if (!cond_on_device_)
        check(cudaMemcpyAsync(const_cast<double *>(cond_), job_.conductivity, N * M * sizeof(double),
                              cudaMemcpyDefault, stream_),
              "cudaMemcpyAsync (conductivity)");
    const int initial = tinit_on_device_ ? heat::kInitial : heat::kGrid0;
    heat::halo_rows_kernel<<<(unsigned)std::min<size_t>((M + 255) / 256, 1024), 256, 0, stream_>>>(views_,
                                                                                                   initial);
    check_launch("heat halo_rows_kernel");
    DeviceState s{};
    s.first_bad_t = s.first_bad_c = ~0ull;
    s.buffer = initial;
    host_state(0) = s;
    host_stats() = GridStats{};
    check(
        cudaMemcpyAsync(work_, host_, WorkLayout::stats + sizeof(GridStats), cudaMemcpyHostToDevice, stream_),
        "cudaMemcpyAsync (state)");
}

// A pass of `levels` iterations and the bookkeeping of its maxdiffs.
void HeatRun::enqueue_pass(int levels, bool checking, bool to_final) {
    const PassKernel &k = *pass_.kernel;
    (checking ? k.checking : k.plain)<<<pass_grid_, k.threads, k.smem, stream_>>>(
        views_, cond_, work<DeviceState>(WorkLayout::state), shape_, levels, to_final, false,
        work<double>(layout_.level_partials));
    check_launch("heat pass_kernel");
    heat::finish_pass_kernel<kFinishThreads><<<1, kFinishThreads, 0, stream_>>>(
        work<double>(layout_.level_partials), (int)(pass_grid_.x * pass_grid_.y), levels, job_.threshold,
        work<DeviceState>(WorkLayout::state), work<double>(WorkLayout::log), kLogCapacity, to_final,
        tfinal_direct_);
    check_launch("heat finish_pass_kernel");
}

// `count` iterations in whole passes and the rest in one shorter pass (a pass of every level takes the lean
// steps, heat_blocked.cuh), then the recomputation that runs only when the run converged inside one of them.
// The run's first pass checks the inputs; the pass that ends the run writes a device tfinal, unless it is the
// checking one (nothing may be written to the outputs before the inputs are known good).
void HeatRun::enqueue_iterations(size_t count, bool first_batch, bool ends_run) {
    const size_t L = (size_t)pass_.levels, passes = (count + L - 1) / L;
    for (size_t i = 0; i < passes; ++i) {
        const int levels = (int)std::min(L, count - i * L);
        const bool checking = first_batch && i == 0, last = ends_run && i + 1 == passes;
        enqueue_pass(levels, checking, last && tfinal_direct_ && !checking);
    }
    const PassKernel &k = *pass_.kernel;
    k.plain<<<pass_grid_, k.threads, k.smem, stream_>>>(views_, cond_, work<DeviceState>(WorkLayout::state),
                                                        shape_, 0, false, true, nullptr);
    check_launch("heat pass_kernel (recomputation)");
}

// Statistics of the newest grid into the report; a periodic one is skipped once the run has converged.
void HeatRun::enqueue_stats(bool periodic) {
    heat::stats_kernel<kStatsThreads><<<stats_blocks_, kStatsThreads, 0, stream_>>>(
        views_, work<DeviceState>(WorkLayout::state), periodic, work<GridStats>(layout_.stats_partials));
    check_launch("heat stats_kernel");
    heat::stats_finish_kernel<kStatsThreads><<<1, kStatsThreads, 0, stream_>>>(
        work<GridStats>(layout_.stats_partials), stats_blocks_, work<DeviceState>(WorkLayout::state),
        periodic, work<GridStats>(WorkLayout::stats));
    check_launch("heat stats_finish_kernel");
    check(cudaMemcpyAsync(&host_stats(), work_ + WorkLayout::stats, sizeof(GridStats), cudaMemcpyDeviceToHost,
                          stream_),
          "cudaMemcpyAsync (report)");
}

// After a batch: the state into host slot `slot`, the maxdiffs of iterations begin+1..end into the host log
// (the same ring positions), and the slot's event.
void HeatRun::enqueue_readback(int slot, size_t begin, size_t end) {
    check(cudaMemcpyAsync(&host_state(slot), work_ + WorkLayout::state, sizeof(DeviceState),
                          cudaMemcpyDeviceToHost, stream_),
          "cudaMemcpyAsync (state)");
    for (size_t i = begin; i < end;) { // at most two pieces: the log is a ring
        const size_t at = i % kLogCapacity, n = std::min(end - i, kLogCapacity - at);
        check(cudaMemcpyAsync(host_ + kHostLog + at * sizeof(double),
                              work_ + WorkLayout::log + at * sizeof(double), n * sizeof(double),
                              cudaMemcpyDeviceToHost, stream_),
              "cudaMemcpyAsync (maxdiff log)");
        i += n;
    }
    ctx_.heat().batch_done(slot).record(stream_);
}

// The first pass found a bad input: name the first one (temperatures first, as the CPU backend does).
void HeatRun::report_bad_inputs(const DeviceState &st) const {
    const size_t M = job_.cols;
    auto value = [&](const double *base, bool on_device, size_t k) {
        double v = 0;
        if (!on_device) return base[k];
        check(cudaMemcpy(&v, base + k, sizeof v, cudaMemcpyDeviceToHost), "cudaMemcpy (bad input)");
        return v;
    };
    if (st.first_bad_t != ~0ull)
        invalid(cell_name("tinit", st.first_bad_t, M) + " is " +
                format_value(value(job_.tinit, tinit_on_device_, st.first_bad_t)) +
                "; temperatures must be finite");
    invalid(cell_name("conductivity", st.first_bad_c, M) + " is " +
            format_value(value(job_.conductivity, cond_on_device_, st.first_bad_c)) +
            "; it must lie in [0, 1]");
}

bool HeatRun::callback_due(size_t it) const {
    return (job_.on_progress && job_.progress_interval && it % job_.progress_interval == 0) ||
           (job_.on_report && job_.period && it % job_.period == 0);
}

// The batch ends at maxiter, after `batch` iterations, or at the next iteration where a callback is due
// (a callback may cancel, and then the grid of that iteration is the result).
size_t HeatRun::batch_end(size_t done, size_t batch) const {
    size_t end = std::min(job_.maxiter, done + batch);
    auto next_multiple = [&](size_t every) { return (done / every + 1) * every; };
    if (job_.on_progress && job_.progress_interval)
        end = std::min(end, next_multiple(job_.progress_interval));
    if (job_.on_report && job_.period) end = std::min(end, next_multiple(job_.period));
    return end;
}

gpk_heat_report HeatRun::report(size_t niter, double maxdiff, double secs) const {
    const GridStats &s = host_stats();
    return gpk_heat_report{niter, s.tmin, s.tmax, maxdiff, s.sum / ((double)job_.rows * (double)job_.cols),
                           secs};
}

double HeatRun::seconds() const {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
}

// The callbacks due in iterations done+1..last of a batch (batches end where one is due), in the CPU
// backend's order (periodic report, then progress). Returns the callback that asked to stop, or null. A stop
// asked on the iteration that ends the run anyway (convergence, maxiter) is no cancellation.
const char *HeatRun::deliver_callbacks(size_t done, size_t last, bool converged) {
    const char *stopped_by = nullptr;
    for (size_t it = done + 1; it <= last; ++it) {
        const double maxdiff = host_log(it);
        const bool converged_here = converged && it == last;
        if (!converged_here && job_.on_report && job_.period && it % job_.period == 0) {
            gpk_heat_report r = report(it, maxdiff, seconds()); // stats of the batch's last grid
            if (job_.on_report(&r, 0, job_.user_data) && !stopped_by) stopped_by = "report";
        }
        if (job_.on_progress && job_.progress_interval && it % job_.progress_interval == 0 &&
            job_.on_progress(it, maxdiff, seconds(), job_.user_data) && !stopped_by)
            stopped_by = "progress";
        if (stopped_by && (converged_here || it == job_.maxiter)) stopped_by = nullptr;
        if (stopped_by) return stopped_by;
    }
    return nullptr;
}

void HeatRun::run() {
    tinit_on_device_ = on_device(job_.tinit);
    cond_on_device_ = on_device(job_.conductivity);
    tfinal_direct_ = job_.tfinal && reinterpret_cast<uintptr_t>(job_.tfinal) % alignof(double) == 0 &&
                     on_device(job_.tfinal);
    pass_ = choose_pass_kernel();
    plan_passes();
    allocate();
    upload();
    start_ = std::chrono::steady_clock::now();
    // Batches of whole passes, doubling; up to two in flight, so that the device works on the next while the
    // host reads one back. No batch is enqueued past one that ends where a callback is due (it may cancel).
    // Convergence stops the work on the device: the kernels of a batch enqueued beyond it return at once.
    struct Batch {
        size_t begin, end;
        int slot;
        bool first;
    };
    Batch flight[2];
    int in_flight = 0, next_slot = 0;
    const size_t L = (size_t)pass_.levels, max_batch = std::max<size_t>(L, kMaxBatch / L * L);
    size_t done = 0, enqueued = 0, batch = L;
    DeviceState st{};
    const char *stopped_by = nullptr;
    for (;;) {
        while (in_flight < 2 && enqueued < job_.maxiter &&
               (in_flight == 0 || !callback_due(flight[in_flight - 1].end))) {
            const size_t end = batch_end(enqueued, batch);
            enqueue_iterations(end - enqueued, enqueued == 0, end == job_.maxiter);
            if (job_.on_report && job_.period && end % job_.period == 0) enqueue_stats(true);
            enqueue_readback(next_slot, enqueued, end);
            flight[in_flight++] = {enqueued, end, next_slot, enqueued == 0};
            next_slot ^= 1;
            enqueued = end;
            batch = std::min(batch * 2, max_batch);
        }
        const Batch b = flight[0];
        flight[0] = flight[1];
        --in_flight;
        ctx_.heat().batch_done(b.slot).wait_host();
        st = host_state(b.slot);
        if (b.first && (st.first_bad_t != ~0ull || st.first_bad_c != ~0ull)) {
            check(cudaStreamSynchronize(stream_), "cudaStreamSynchronize (heat)"); // nothing left in flight
            report_bad_inputs(st);
        }
        const size_t last = st.converged ? (size_t)st.niter : b.end;
        stopped_by = deliver_callbacks(done, last, st.converged != 0);
        done = last;
        if (st.converged || stopped_by || done == job_.maxiter) break;
    }
    enqueue_stats(false); // after any batch still in flight, whose kernels return at once
    const int newest = st.buffer;
    if (job_.tfinal && newest != heat::kFinal) {
        const heat::GridView &g = views_.v[newest];
        check(cudaMemcpy2DAsync(job_.tfinal, job_.cols * sizeof(double), g.base, g.pitch * sizeof(double),
                                job_.cols * sizeof(double), job_.rows, cudaMemcpyDefault, stream_),
              "cudaMemcpy2DAsync (tfinal)");
    }
    check(cudaStreamSynchronize(stream_), "cudaStreamSynchronize (heat final)");
    gpk_heat_report r = report(done, host_log(done), seconds());
    if (job_.final) *job_.final = r;
    if (job_.on_report) job_.on_report(&r, 1, job_.user_data);
    if (stopped_by)
        fail(GPK_ERR_CANCELLED, std::string("heat: cancelled by the ") + stopped_by +
                                    " callback at iteration " + std::to_string(done));
}

} // namespace

void heat_run(DeviceContext &ctx, const HeatJob &job) {
    try {
        HeatRun(ctx, job).run();
    } catch (...) {
        // A batch may still be in flight, its read-back bound for the pinned room the next call reuses.
        cudaStreamSynchronize(ctx.main());
        throw;
    }
}

} // namespace gpk::cuda
