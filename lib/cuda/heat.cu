// The CUDA heat solver: buffers, input checks, and the iteration loop that enqueues batches of iterations
// and reads the device state back once per batch (never once per iteration). Kernels: heat_kernels.cuh.
#include "cuda/heat.cuh"

#include "cuda/check.cuh"
#include "cuda/heat_blocked.cuh"
#include "cuda/heat_kernels.cuh"
#include "cuda/heat_pass.cuh"
#include "cuda/pointer.cuh"
#include "engine/error.hpp"
#include "engine/heat_rules.hpp"
#include "engine/validate.hpp"

#include <algorithm>
#include <cstdint>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <memory>
#include <new>
#include <string>
#include <vector>

namespace gpk::cuda {
namespace {

using heat::DeviceState;
using heat::Grids;
using heat::PassShape;

using heat::kMaxLevels;
using heat::kPassShared;
using heat::kPassThreads;
using heat::pass_kernel_;
constexpr int kFinishThreads = 256;
constexpr int kStatsThreads = 256;
constexpr int kStatsBlocks = 2048; // at most; each row's sum is the same whatever the count
constexpr unsigned kLogCapacity = 4096;
constexpr size_t kMaxBatch = 1024; // iterations enqueued before the host looks at the state

struct DeviceFree {
    void operator()(void *p) const { cudaFree(p); }
};
struct PinnedFree {
    void operator()(void *p) const { cudaFreeHost(p); }
};
template <class T> using DeviceArray = std::unique_ptr<T[], DeviceFree>;
template <class T> using PinnedArray = std::unique_ptr<T[], PinnedFree>;

template <class T> DeviceArray<T> device_alloc(size_t n, const char *what) {
    void *p = nullptr;
    cudaError_t e =
        fault::inject(fault::Point::alloc) ? cudaErrorMemoryAllocation : cudaMalloc(&p, n * sizeof(T));
    if (e == cudaErrorMemoryAllocation) {
        cudaGetLastError();
        fail(GPK_ERR_OUT_OF_MEMORY, std::string("heat: cudaMalloc of ") + std::to_string(n * sizeof(T)) +
                                        " bytes for " + what + " failed");
    }
    check(e, "cudaMalloc");
    return DeviceArray<T>(static_cast<T *>(p));
}

template <class T> PinnedArray<T> pinned_alloc(size_t n) {
    void *p = nullptr;
    cudaError_t e =
        fault::inject(fault::Point::alloc) ? cudaErrorMemoryAllocation : cudaMallocHost(&p, n * sizeof(T));
    if (e == cudaErrorMemoryAllocation)
        fail(GPK_ERR_OUT_OF_MEMORY,
             "heat: cudaMallocHost of " + std::to_string(n * sizeof(T)) + " bytes failed");
    check(e, "cudaMallocHost");
    return PinnedArray<T>(static_cast<T *>(p));
}

// Free device memory as gpk may use it: cudaMemGetInfo, capped by the test knob
// GPK_TEST_DEVICE_MEMORY_LIMIT=bytes (NOTES.md, internal knobs).
size_t usable_device_memory() {
    size_t free_b = 0, total_b = 0;
    check(cudaMemGetInfo(&free_b, &total_b), "cudaMemGetInfo");
    if (const char *knob = std::getenv("GPK_TEST_DEVICE_MEMORY_LIMIT")) {
        char *end = nullptr;
        unsigned long long limit = std::strtoull(knob, &end, 10);
        if (end != knob && limit < free_b) free_b = (size_t)limit;
    }
    return free_b;
}

std::string cell_name(const char *array, size_t k, size_t cols) {
    return std::string(array) + "[" + std::to_string(k) + "] (row " + std::to_string(k / cols) + ", column " +
           std::to_string(k % cols) + ")";
}

class HeatRun {
public:
    HeatRun(const HeatJob &job, cudaStream_t stream) : job_(job), stream_(stream) {}
    void run();

private:
    void allocate();
    void upload();
    void check_device_inputs();
    void plan_passes();
    void enqueue_pass(int levels);
    void enqueue_iterations(size_t count);
    void enqueue_stats(bool periodic);
    void read_state();
    size_t batch_end(size_t done, size_t batch) const;
    const char *deliver_callbacks(size_t done, size_t last, bool converged);
    bool checkpoint(size_t iter, double maxdiff);
    gpk_heat_report report(size_t niter, double maxdiff, double seconds) const;
    double seconds() const;

    const HeatJob &job_;
    cudaStream_t stream_;
    Grids grids_{};
    const double *cond_ = nullptr;
    DeviceArray<double> cells_, cond_copy_, level_partials_, log_;
    DeviceArray<DeviceState> state_;
    DeviceArray<double> row_stats_; // min, max and sum of each row, N each
    DeviceArray<unsigned long long> first_bad_;
    PinnedArray<DeviceState> host_state_;
    PinnedArray<double> host_row_stats_;
    PinnedArray<double> host_log_;
    std::unique_ptr<double[]> checkpoint_; // N*M where checkpoints are asked for
    dim3 pass_grid_;
    PassShape shape_{};
    int max_levels_ = kMaxLevels;
    int stats_blocks_ = 1;
    std::chrono::steady_clock::time_point start_;
};

void HeatRun::allocate() {
    const size_t N = job_.rows, M = job_.cols;
    const size_t pitch = (M + 31) / 32 * 32; // 256-byte rows
    const bool cond_on_device = on_device(job_.conductivity);
    plan_passes();
    const size_t nparts = (size_t)pass_grid_.x * pass_grid_.y * kMaxLevels;
    // The C boundary checked that (N+2)*(M+2) fits; the padded rows may not.
    if (N + 2 > SIZE_MAX / (2 * sizeof(double)) / pitch)
        fail(GPK_ERR_OUT_OF_MEMORY, "heat: a " + std::to_string(N) + " x " + std::to_string(M) +
                                        " grid needs more than SIZE_MAX bytes of device memory");
    size_t grid_bytes = 2 * (N + 2) * pitch * sizeof(double);
    size_t need = grid_bytes + (cond_on_device ? 0 : N * M * sizeof(double)) + nparts * sizeof(double) +
                  kLogCapacity * sizeof(double) + 3 * N * sizeof(double) + (1 << 16);
    size_t usable = usable_device_memory();
    if (need > usable)
        fail(GPK_ERR_OUT_OF_MEMORY, "heat: a " + std::to_string(N) + " x " + std::to_string(M) +
                                        " grid needs " + std::to_string(need) + " bytes of device memory; " +
                                        std::to_string(usable) + " bytes are free");
    cells_ = device_alloc<double>(2 * (N + 2) * pitch, "the grids");
    grids_ = Grids{{cells_.get(), cells_.get() + (N + 2) * pitch}, pitch, N, M};
    if (!cond_on_device) {
        cond_copy_ = device_alloc<double>(N * M, "the conductivities");
        cond_ = cond_copy_.get();
    } else {
        cond_ = job_.conductivity;
    }
    level_partials_ = device_alloc<double>(nparts, "maxdiff partials");
    log_ = device_alloc<double>(kLogCapacity, "the maxdiff log");
    // The whole log is copied back after each batch; entries not yet written must not be garbage.
    check(cudaMemsetAsync(log_.get(), 0, kLogCapacity * sizeof(double), stream_),
          "cudaMemsetAsync (maxdiff log)");
    state_ = device_alloc<DeviceState>(1, "the run state");
    stats_blocks_ = (int)std::min<size_t>((N + kStatsThreads / 32 - 1) / (kStatsThreads / 32), kStatsBlocks);
    row_stats_ = device_alloc<double>(3 * N, "the rows' statistics");
    // A periodic report that convergence skips leaves the statistics unwritten, and they are copied back
    // all the same (the host then ignores them): they must not be garbage either.
    check(cudaMemsetAsync(row_stats_.get(), 0, 3 * N * sizeof(double), stream_),
          "cudaMemsetAsync (row statistics)");
    first_bad_ = device_alloc<unsigned long long>(1, "the input check");
    host_state_ = pinned_alloc<DeviceState>(1);
    host_row_stats_ = pinned_alloc<double>(3 * N);
    host_log_ = pinned_alloc<double>(kLogCapacity);
    if (job_.on_checkpoint) {
        checkpoint_.reset(new (std::nothrow) double[N * M]);
        if (!checkpoint_)
            fail(GPK_ERR_OUT_OF_MEMORY, "heat: out of host memory allocating " +
                                            std::to_string(N * M * sizeof(double)) +
                                            " bytes for checkpoints");
    }
}

// Interior rows 1..N of both grids from tinit; halo rows 0 and N+1 (fixed for the run) from
// job_.fixed_rows, or copies of rows 1 and N.
void HeatRun::upload() {
    const size_t N = job_.rows, M = job_.cols, P = grids_.pitch;
    std::vector<double> fixed;
    if (job_.fixed_rows) { // host or device memory: checked on the host, 2 * M values
        fixed.resize(2 * M);
        check(cudaMemcpy(fixed.data(), job_.fixed_rows, 2 * M * sizeof(double), cudaMemcpyDefault),
              "cudaMemcpy (fixed_rows)");
        check_fixed_rows(fixed.data(), M);
    }
    for (double *cells : grids_.cells) {
        check(cudaMemcpy2DAsync(cells + P, P * sizeof(double), job_.tinit, M * sizeof(double),
                                M * sizeof(double), N, cudaMemcpyDefault, stream_),
              "cudaMemcpy2DAsync (tinit)");
        const double *top = fixed.empty() ? cells + P : fixed.data();
        const double *bottom = fixed.empty() ? cells + N * P : fixed.data() + M;
        check(cudaMemcpyAsync(cells, top, M * sizeof(double), cudaMemcpyDefault, stream_),
              "cudaMemcpyAsync (top halo)");
        check(cudaMemcpyAsync(cells + (N + 1) * P, bottom, M * sizeof(double), cudaMemcpyDefault, stream_),
              "cudaMemcpyAsync (bottom halo)");
    }
    if (cond_copy_)
        check(cudaMemcpyAsync(cond_copy_.get(), job_.conductivity, N * M * sizeof(double), cudaMemcpyDefault,
                              stream_),
              "cudaMemcpyAsync (conductivity)");
    DeviceState s{};
    s.iter = job_.start_iteration;
    *host_state_.get() = s;
    check(cudaMemcpyAsync(state_.get(), host_state_.get(), sizeof s, cudaMemcpyHostToDevice, stream_),
          "cudaMemcpyAsync (state)");
}

// The same checks as check_heat_inputs, on the device copies, before anything is written to the outputs.
void HeatRun::check_device_inputs() {
    const size_t N = job_.rows, M = job_.cols;
    unsigned long long first = 0;
    auto find = [&](auto launch) {
        check(cudaMemsetAsync(first_bad_.get(), 0xff, sizeof first, stream_), "cudaMemsetAsync");
        launch();
        check(cudaMemcpyAsync(&first, first_bad_.get(), sizeof first, cudaMemcpyDeviceToHost, stream_),
              "cudaMemcpyAsync (input check)");
        check(cudaStreamSynchronize(stream_), "cudaStreamSynchronize (input check)");
        return first < N * M;
    };
    dim3 tgrid((unsigned)std::min<size_t>((M + 255) / 256, 64), (unsigned)std::min<size_t>(N, 4096));
    if (find([&] {
            heat::first_bad_temperature_kernel<<<tgrid, 256, 0, stream_>>>(grids_, 0, first_bad_.get());
            check_launch("first_bad_temperature_kernel");
        })) {
        double v = 0;
        check(cudaMemcpy(&v, grids_.cells[0] + (first / M + 1) * grids_.pitch + first % M, sizeof v,
                         cudaMemcpyDeviceToHost),
              "cudaMemcpy (bad temperature)");
        invalid(cell_name("tinit", first, M) + " is " + format_value(v) + "; temperatures must be finite");
    }
    if (find([&] {
            heat::first_bad_conductivity_kernel<<<2048, 256, 0, stream_>>>(cond_, N * M, first_bad_.get());
            check_launch("first_bad_conductivity_kernel");
        })) {
        double v = 0;
        check(cudaMemcpy(&v, cond_ + first, sizeof v, cudaMemcpyDeviceToHost),
              "cudaMemcpy (bad conductivity)");
        invalid(cell_name("conductivity", first, M) + " is " + format_value(v) + "; it must lie in [0, 1]");
    }
}

void HeatRun::plan_passes() {
    if (const char *knob = std::getenv("GPK_TEST_HEAT_PASS_LEVELS")) {
        int v = std::atoi(knob);
        if (v >= 1 && v <= kMaxLevels) max_levels_ = v;
    }
    shape_ = heat::plan_pass_shape(job_.rows, job_.cols);
    shape_.row_begin = 1;
    shape_.row_end = (long long)job_.rows + 1;
    pass_grid_ = heat::pass_grid(shape_, job_.cols, job_.rows);
}

// A pass of `levels` iterations, the bookkeeping of its maxdiffs, and the recomputation that runs only
// when the run converged inside this pass.
void HeatRun::enqueue_pass(int levels) {
    const int nparts = (int)(pass_grid_.x * pass_grid_.y);
    auto launch = [&](bool recompute) {
        pass_kernel_<<<pass_grid_, kPassThreads, kPassShared, stream_>>>(
            grids_, cond_, state_.get(), shape_, levels, recompute, level_partials_.get());
        check_launch("heat pass_kernel");
    };
    launch(false);
    heat::finish_pass_kernel<kFinishThreads><<<1, kFinishThreads, 0, stream_>>>(
        level_partials_.get(), nparts, levels, job_.threshold, state_.get(), log_.get(), kLogCapacity);
    check_launch("heat finish_pass_kernel");
    if (levels > 1) launch(true);
}

void HeatRun::enqueue_iterations(size_t count) {
    while (count > 0) {
        int levels = (int)std::min<size_t>(count, (size_t)max_levels_);
        enqueue_pass(levels);
        count -= levels;
    }
}

// Statistics of the newest grid's rows into row_stats_, copied to the host; a periodic one is skipped once
// the run has converged.
void HeatRun::enqueue_stats(bool periodic) {
    const size_t N = job_.rows;
    double *rs = row_stats_.get();
    heat::row_stats_kernel<kStatsThreads><<<stats_blocks_, kStatsThreads, 0, stream_>>>(
        grids_, state_.get(), periodic, 1, N, rs, rs + N, rs + 2 * N);
    check_launch("heat row_stats_kernel");
    check(cudaMemcpyAsync(host_row_stats_.get(), rs, 3 * N * sizeof(double), cudaMemcpyDeviceToHost, stream_),
          "cudaMemcpyAsync (row statistics)");
}

void HeatRun::read_state() {
    check(cudaMemcpyAsync(host_state_.get(), state_.get(), sizeof(DeviceState), cudaMemcpyDeviceToHost,
                          stream_),
          "cudaMemcpyAsync (state)");
    check(cudaMemcpyAsync(host_log_.get(), log_.get(), kLogCapacity * sizeof(double), cudaMemcpyDeviceToHost,
                          stream_),
          "cudaMemcpyAsync (maxdiff log)");
    check(cudaStreamSynchronize(stream_), "cudaStreamSynchronize (heat batch)");
}

// The batch ends at maxiter, after `batch` iterations, or at the next iteration where a callback is due
// (a callback may cancel, and then the grid of that iteration is the result).
size_t HeatRun::batch_end(size_t done, size_t batch) const {
    size_t end = std::min(job_.maxiter, done + batch);
    auto next_multiple = [&](size_t every) { return (done / every + 1) * every; };
    if (job_.on_progress && job_.progress_interval)
        end = std::min(end, next_multiple(job_.progress_interval));
    if (job_.on_report && job_.period) end = std::min(end, next_multiple(job_.period));
    if (job_.on_checkpoint && job_.checkpoint_interval)
        end = std::min(end, next_multiple(job_.checkpoint_interval));
    return end;
}

// The report from the rows' statistics last copied back.
gpk_heat_report HeatRun::report(size_t niter, double maxdiff, double secs) const {
    const size_t N = job_.rows;
    const double *mins = host_row_stats_.get(), *maxs = mins + N, *sums = mins + 2 * N;
    gpk_heat_report r{niter, mins[0], maxs[0], maxdiff, 0.0, secs};
    for (size_t i = 0; i < N; ++i) {
        r.tmin = std::min(r.tmin, mins[i]);
        r.tmax = std::max(r.tmax, maxs[i]);
    }
    r.tavg = heat_mean(N, job_.cols, [&](size_t i) { return sums[i]; });
    return r;
}

// Hands the newest grid (batches end at checkpoints) to the checkpoint callback; true to stop.
bool HeatRun::checkpoint(size_t iter, double maxdiff) {
    check(cudaMemcpy2DAsync(checkpoint_.get(), job_.cols * sizeof(double),
                            grids_.cells[host_state_[0].buffer] + grids_.pitch, grids_.pitch * sizeof(double),
                            job_.cols * sizeof(double), job_.rows, cudaMemcpyDeviceToHost, stream_),
          "cudaMemcpy2DAsync (checkpoint)");
    check(cudaStreamSynchronize(stream_), "cudaStreamSynchronize (checkpoint)");
    return job_.on_checkpoint(iter, maxdiff, checkpoint_.get(), job_.user_data) != 0;
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
        const double maxdiff = host_log_[(it - 1) % kLogCapacity];
        const bool converged_here = converged && it == last;
        if (!converged_here && job_.on_report && job_.period && it % job_.period == 0) {
            gpk_heat_report r = report(it, maxdiff, seconds()); // stats of the batch's last grid
            if (job_.on_report(&r, 0, job_.user_data) && !stopped_by) stopped_by = "report";
        }
        if (job_.on_progress && job_.progress_interval && it % job_.progress_interval == 0 &&
            job_.on_progress(it, maxdiff, seconds(), job_.user_data) && !stopped_by)
            stopped_by = "progress";
        if (!converged_here && heat_checkpoint_due(job_, it) && checkpoint(it, maxdiff) && !stopped_by)
            stopped_by = "checkpoint";
        if (stopped_by && (converged_here || it == job_.maxiter)) stopped_by = nullptr;
        if (stopped_by) return stopped_by;
    }
    return nullptr;
}

void HeatRun::run() {
    const bool host_inputs = !on_device(job_.tinit) && !on_device(job_.conductivity);
    if (host_inputs) check_heat_inputs(job_.tinit, job_.conductivity, job_.rows, job_.cols);
    allocate();
    upload();
    if (!host_inputs) check_device_inputs();
    start_ = std::chrono::steady_clock::now();
    size_t done = job_.start_iteration, batch = 8;
    const char *stopped_by = nullptr;
    for (;;) {
        const size_t end = batch_end(done, batch);
        enqueue_iterations(end - done);
        if (job_.on_report && job_.period && end % job_.period == 0) enqueue_stats(true);
        read_state();
        const DeviceState &st = *host_state_.get();
        const size_t last = st.converged ? (size_t)st.niter : end;
        stopped_by = deliver_callbacks(done, last, st.converged != 0);
        done = last;
        if (st.converged || stopped_by || done == job_.maxiter) break;
        batch = std::min(batch * 2, kMaxBatch);
    }
    enqueue_stats(false);
    if (job_.tfinal)
        check(cudaMemcpy2DAsync(job_.tfinal, job_.cols * sizeof(double),
                                grids_.cells[host_state_[0].buffer] + grids_.pitch,
                                grids_.pitch * sizeof(double), job_.cols * sizeof(double), job_.rows,
                                cudaMemcpyDefault, stream_),
              "cudaMemcpy2DAsync (tfinal)");
    check(cudaStreamSynchronize(stream_), "cudaStreamSynchronize (heat final)");
    gpk_heat_report r = report(done, host_log_[(done - 1) % kLogCapacity], seconds());
    if (job_.final) *job_.final = r;
    if (job_.on_report) job_.on_report(&r, 1, job_.user_data);
    if (stopped_by)
        fail(GPK_ERR_CANCELLED, std::string("heat: cancelled by the ") + stopped_by +
                                    " callback at iteration " + std::to_string(done));
}

} // namespace

// Pass geometry: strips of W columns; H rows per block chosen to minimise the modelled time, (waves of
// resident blocks) x (steps of one block: H plus the T-row overlaps and the pipeline's fill), so that
// neither a partly filled last wave nor the overlaps cost much.
heat::PassShape heat::plan_pass_shape(size_t N, size_t M) {
    PassShape shape{};
    shape.strip = kPassThreads - 2 * kMaxLevels;
    const size_t nx = (M + shape.strip - 1) / shape.strip;
    int device = 0, sms = 1, per_sm = 1;
    check(cudaGetDevice(&device), "cudaGetDevice");
    check(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device), "cudaDeviceGetAttribute");
    check(cudaFuncSetAttribute(pass_kernel_, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)kPassShared),
          "cudaFuncSetAttribute (heat pass_kernel)");
    check(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, pass_kernel_, kPassThreads, kPassShared),
          "cudaOccupancyMaxActiveBlocksPerMultiprocessor");
    const size_t slots = (size_t)sms * (size_t)std::max(per_sm, 1);
    const size_t h_min = std::max<size_t>(2 * kMaxLevels, (N + 65534) / 65535);
    size_t best = N;
    double best_cost = INFINITY;
    for (size_t h = h_min; h <= std::min(N, std::max<size_t>(h_min, 4096)); ++h) {
        size_t blocks = nx * ((N + h - 1) / h);
        double cost = (double)((blocks + slots - 1) / slots) * ((double)h + 2.5 * kMaxLevels);
        if (cost < best_cost) best_cost = cost, best = h;
    }
    shape.rows_per_block = (int)std::max<size_t>(best, 1);
    return shape;
}

void heat_run(const HeatJob &job, cudaStream_t stream) {
    HeatRun(job, stream).run();
}

} // namespace gpk::cuda
