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

constexpr int kPassThreads = 256;
constexpr int kFinishThreads = 256;
constexpr int kStatsThreads = 256;
constexpr int kStatsBlocks = 1024; // fixed: the sum's order depends on it
constexpr unsigned kLogCapacity = 4096;
constexpr size_t kMaxBatch = 1024; // iterations enqueued before the host looks at the state

using PassFn = void (*)(Views, const double *, DeviceState *, PassShape, int, bool, bool, double *);

// A pass kernel: up to T iterations a pass, MinBlocks resident per SM (which caps its registers).
struct PassKernel {
    int levels, min_blocks;
    PassFn plain, checking; // checking: the run's first pass, which also checks the inputs
    size_t smem;
};

template <int T, int B> constexpr PassKernel pass_kernel_of() {
    return {T, B, heat::pass_kernel<T, kPassThreads, B, false>, heat::pass_kernel<T, kPassThreads, B, true>,
            sizeof(heat::PassShared<T, kPassThreads>)};
}

// The kernels built, the default first. The internal knobs GPK_TEST_HEAT_PASS_LEVELS=L (iterations per pass:
// the first kernel of at least L levels runs passes of at most L) and GPK_TEST_HEAT_KERNEL=T/B (that kernel)
// exist for tests and benchmarks: every choice gives the same bits.
constexpr PassKernel kPassKernels[] = {pass_kernel_of<8, 2>(), pass_kernel_of<4, 2>(), pass_kernel_of<6, 2>(),
                                       pass_kernel_of<8, 1>(), pass_kernel_of<12, 1>()};

struct PassChoice {
    const PassKernel *kernel;
    int levels;
};

PassChoice choose_pass_kernel() {
    PassChoice c{&kPassKernels[0], kPassKernels[0].levels};
    if (const char *knob = std::getenv("GPK_TEST_HEAT_KERNEL")) {
        int t = 0, b = 0;
        if (std::sscanf(knob, "%d/%d", &t, &b) == 2)
            for (const PassKernel &k : kPassKernels)
                if (k.levels == t && k.min_blocks == b) c = {&k, t};
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

// The device work area: the state, the maxdiff log, per-block maxima, report partials and the report; and
// its pinned mirror for what the host reads back.
struct WorkLayout {
    size_t state, log, level_partials, stats_partials, stats, bytes;
    WorkLayout(size_t level_parts) {
        state = 0;
        log = round_up(sizeof(DeviceState), 256);
        level_partials = log + round_up(kLogCapacity * sizeof(double), 256);
        stats_partials = level_partials + round_up(level_parts * sizeof(double), 256);
        stats = stats_partials + round_up(kStatsBlocks * sizeof(GridStats), 256);
        bytes = stats + round_up(sizeof(GridStats), 256);
    }
};
constexpr size_t kHostState = 0, kHostStats = 256, kHostLog = 512;
constexpr size_t kHostBytes = kHostLog + kLogCapacity * sizeof(double);

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
    void read_state();
    void report_bad_inputs() const;
    size_t batch_end(size_t done, size_t batch) const;
    const char *deliver_callbacks(size_t done, size_t last, bool converged);
    gpk_heat_report report(size_t niter, double maxdiff, double seconds) const;
    double seconds() const;

    DeviceState &host_state() const { return *reinterpret_cast<DeviceState *>(host_ + kHostState); }
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

// Pass geometry: strips of W columns; H rows per block chosen to minimise the modelled time, (waves of
// resident blocks) x (steps of one block: H plus the T-row overlaps and the pipeline's fill), so that
// neither a partly filled last wave nor the overlaps cost much. Remembered on the context for the next
// call of the same shape.
void HeatRun::plan_passes() {
    const PassKernel &k = *pass_.kernel;
    const size_t N = job_.rows, M = job_.cols;
    const int T = k.levels;
    shape_.strip = kPassThreads - 2 * T;
    const size_t nx = (M + shape_.strip - 1) / shape_.strip;
    HeatBuffers::Plan &plan = ctx_.heat().plan;
    const void *fn = reinterpret_cast<const void *>(k.plain);
    if (plan.rows != N || plan.cols != M || plan.kernel != fn) {
        int per_sm = ctx_.resident_blocks(fn, kPassThreads, k.smem);
        ctx_.resident_blocks(reinterpret_cast<const void *>(k.checking), kPassThreads, k.smem);
        if (per_sm < 1)
            fail(GPK_ERR_UNSUPPORTED, "heat: the pass kernel (" + std::to_string(k.smem) +
                                          " bytes of shared memory) does not fit this device");
        const size_t slots = (size_t)ctx_.limits().multiprocessors * (size_t)per_sm;
        const size_t h_min = std::max<size_t>(2 * T, (N + 65534) / 65535);
        size_t best = N;
        double best_cost = INFINITY;
        for (size_t h = h_min; h <= std::min(N, std::max<size_t>(h_min, 4096)); ++h) {
            size_t blocks = nx * ((N + h - 1) / h);
            double cost = (double)((blocks + slots - 1) / slots) * ((double)h + 2.5 * T);
            if (cost < best_cost) best_cost = cost, best = h;
        }
        plan = {N, M, fn, (int)best, (unsigned)nx, (unsigned)((N + best - 1) / best)};
    }
    shape_.rows_per_block = plan.rows_per_block;
    pass_grid_ = dim3(plan.grid_x, plan.grid_y);
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
// both grids come from tinit's edge rows (fixed for the run); the run state starts at the initial grid.
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
    host_state() = s;
    check(cudaMemcpyAsync(work<DeviceState>(layout_.state), &host_state(), sizeof s, cudaMemcpyHostToDevice,
                          stream_),
          "cudaMemcpyAsync (state)");
    // The whole log is copied back after each batch; entries not yet written must not be garbage. A periodic
    // report that convergence skips leaves the report unwritten, and it is copied back all the same.
    check(cudaMemsetAsync(work_ + layout_.log, 0, kLogCapacity * sizeof(double), stream_),
          "cudaMemsetAsync (maxdiff log)");
    check(cudaMemsetAsync(work_ + layout_.stats, 0, sizeof(GridStats), stream_), "cudaMemsetAsync (report)");
}

// A pass of `levels` iterations and the bookkeeping of its maxdiffs.
void HeatRun::enqueue_pass(int levels, bool checking, bool to_final) {
    const PassKernel &k = *pass_.kernel;
    (checking ? k.checking : k.plain)<<<pass_grid_, kPassThreads, k.smem, stream_>>>(
        views_, cond_, work<DeviceState>(layout_.state), shape_, levels, to_final, false,
        work<double>(layout_.level_partials));
    check_launch("heat pass_kernel");
    heat::finish_pass_kernel<kFinishThreads><<<1, kFinishThreads, 0, stream_>>>(
        work<double>(layout_.level_partials), (int)(pass_grid_.x * pass_grid_.y), levels, job_.threshold,
        work<DeviceState>(layout_.state), work<double>(layout_.log), kLogCapacity, to_final, tfinal_direct_);
    check_launch("heat finish_pass_kernel");
}

// `count` iterations in passes of nearly equal length (a short last pass would cost a whole pass's memory
// traffic for few iterations), then the recomputation that runs only when the run converged inside one of
// them. The run's first pass checks the inputs; the pass that ends the run writes a device tfinal, unless
// it is the checking one (nothing may be written to the outputs before the inputs are known good).
void HeatRun::enqueue_iterations(size_t count, bool first_batch, bool ends_run) {
    const size_t passes = (count + pass_.levels - 1) / pass_.levels;
    for (size_t i = 0; i < passes; ++i) {
        const int levels = (int)(count / passes + (i < count % passes ? 1 : 0));
        const bool checking = first_batch && i == 0, last = ends_run && i + 1 == passes;
        enqueue_pass(levels, checking, last && tfinal_direct_ && !checking);
    }
    const PassKernel &k = *pass_.kernel;
    k.plain<<<pass_grid_, kPassThreads, k.smem, stream_>>>(views_, cond_, work<DeviceState>(layout_.state),
                                                           shape_, 0, false, true, nullptr);
    check_launch("heat pass_kernel (recomputation)");
}

// Statistics of the newest grid into the report; a periodic one is skipped once the run has converged.
void HeatRun::enqueue_stats(bool periodic) {
    heat::stats_kernel<kStatsThreads><<<stats_blocks_, kStatsThreads, 0, stream_>>>(
        views_, work<DeviceState>(layout_.state), periodic, work<GridStats>(layout_.stats_partials));
    check_launch("heat stats_kernel");
    heat::stats_finish_kernel<kStatsThreads><<<1, kStatsThreads, 0, stream_>>>(
        work<GridStats>(layout_.stats_partials), stats_blocks_, work<DeviceState>(layout_.state), periodic,
        work<GridStats>(layout_.stats));
    check_launch("heat stats_finish_kernel");
    check(cudaMemcpyAsync(&host_stats(), work_ + layout_.stats, sizeof(GridStats), cudaMemcpyDeviceToHost,
                          stream_),
          "cudaMemcpyAsync (report)");
}

void HeatRun::read_state() {
    check(cudaMemcpyAsync(&host_state(), work_ + layout_.state, sizeof(DeviceState), cudaMemcpyDeviceToHost,
                          stream_),
          "cudaMemcpyAsync (state)");
    check(cudaMemcpyAsync(host_ + kHostLog, work_ + layout_.log, kLogCapacity * sizeof(double),
                          cudaMemcpyDeviceToHost, stream_),
          "cudaMemcpyAsync (maxdiff log)");
    check(cudaStreamSynchronize(stream_), "cudaStreamSynchronize (heat batch)");
}

// The first pass found a bad input: name the first one (temperatures first, as the CPU backend does).
void HeatRun::report_bad_inputs() const {
    const DeviceState &st = host_state();
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
    size_t done = 0, batch = 8;
    const char *stopped_by = nullptr;
    for (bool first = true;; first = false) {
        const size_t end = batch_end(done, batch);
        enqueue_iterations(end - done, first, end == job_.maxiter);
        if (job_.on_report && job_.period && end % job_.period == 0) enqueue_stats(true);
        read_state();
        const DeviceState &st = host_state();
        if (first && (st.first_bad_t != ~0ull || st.first_bad_c != ~0ull)) report_bad_inputs();
        const size_t last = st.converged ? (size_t)st.niter : end;
        stopped_by = deliver_callbacks(done, last, st.converged != 0);
        done = last;
        if (st.converged || stopped_by || done == job_.maxiter) break;
        batch = std::min(batch * 2, kMaxBatch);
    }
    enqueue_stats(false);
    const int newest = host_state().buffer;
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
    HeatRun(ctx, job).run();
}

} // namespace gpk::cuda
