// The CUDA heat solver: buffers (kept on the context between calls), the pass plan, and the iteration loop
// that enqueues batches of passes and reads the device state back once per batch (never once per
// iteration). What a call costs beside its iterations is kept small: device inputs are read in place by
// the first pass, which also checks them (a flag; the first bad cell is looked for only once it is set);
// the pass that ends the run writes a device tfinal directly, or else the final row statistics copy the
// grid into it as they read it; each pass finishes itself in its last block (no kernel between passes); no
// allocation once the context holds buffers of the size. A resumed run (job.start_iteration,
// job.fixed_rows) counts its iterations on from the checkpoint; batches and passes end at checkpoints, and
// no batch is enqueued past one. Kernels: kernels.cuh, blocked.cuh, launched through pass.cu
// (which libgpk_mpi's slabs share, slab.cu).
#include "cuda/heat/heat.cuh"

#include "cuda/heat/kernels.cuh"
#include "cuda/heat/pass.cuh"
#include "cuda/pointer.cuh"
#include "engine/error.hpp"
#include "engine/heat_rules.hpp"
#include "engine/test_hooks.hpp"
#include "engine/validate.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <new>
#include <string>
#include <vector>

namespace gpk::cuda {
namespace {

using heat::DeviceState;
using heat::PassChoice;
using heat::PassKernel;
using heat::PassShape;
using heat::Views;

constexpr unsigned kLogCapacity = 4096;
constexpr size_t kMaxBatch = 1024; // iterations enqueued before the host looks at the state
// Cell updates a batch of a run with callbacks holds at most: a stop, which takes effect at the end of
// the batch in flight, comes within a fraction of a second on any grid.
constexpr size_t kMaxBatchCells = size_t(1) << 36;

// Free device memory as the heat solver may use it: cudaMemGetInfo plus what it holds already, capped by
// the test hook GPK_TEST_DEVICE_MEMORY_LIMIT=bytes (NOTES.md).
size_t usable_device_memory(size_t held, size_t limit) {
    size_t free_b = 0, total_b = 0;
    check(cudaMemGetInfo(&free_b, &total_b), "cudaMemGetInfo");
    const size_t usable = free_b + held;
    return limit ? std::min(limit, usable) : usable;
}

std::string cell_name(const char *array, size_t k, size_t cols) {
    return std::string(array) + "[" + std::to_string(k) + "] (row " + std::to_string(k / cols) + ", column " +
           std::to_string(k % cols) + ")";
}

size_t round_up(size_t n, size_t to) {
    return (n + to - 1) / to * to;
}

// The device work area: the state, the maxdiff log and the rows' statistics (min, max and sum of each row,
// N each); and its pinned mirror for what the host reads back (two state slots: two batches may be in
// flight). The state comes first in both, so that one copy starts a run.
struct WorkLayout {
    static constexpr size_t state = 0, log = 512, row_stats = log + kLogCapacity * sizeof(double);
    static size_t bytes(size_t rows) { return row_stats + round_up(3 * rows * sizeof(double), 256); }
};
constexpr size_t kHostState[2] = {0, 256}, kHostLog = 512;
constexpr size_t kHostRowStats = kHostLog + kLogCapacity * sizeof(double);
static_assert(sizeof(DeviceState) <= 256, "work area layout");

// A pass kernel as a run launches it: the choice (pass.cuh; kernel null: none), its grid and shape.
struct PassPlan {
    PassChoice choice{};
    dim3 grid;
    PassShape shape{};
};

class HeatRun {
public:
    HeatRun(DeviceContext &ctx, const HeatJob &job) : ctx_(ctx), job_(job), stream_(ctx.main()) {}
    void run();

private:
    void plan_passes();
    void allocate();
    void upload();
    void plan_shape(PassPlan &pass, HeatBuffers::Plan &plan);
    void enqueue_pass(int levels, bool checking, bool to_final, bool tail);
    void enqueue_iterations(size_t count, bool first_batch, bool ends_run);
    void enqueue_stats(bool periodic, double *copy_to_final = nullptr, bool copy_unless_final = false);
    void enqueue_readback(int slot, size_t begin, size_t end);
    bool callback_due(size_t it) const;
    [[noreturn]] void report_bad_inputs();
    size_t batch_end(size_t done, size_t batch) const;
    HeatCallback deliver_callbacks(size_t done, size_t last, const DeviceState &st);
    bool checkpoint(size_t iter, double maxdiff, int buffer);
    gpk_heat_report report(size_t niter, double maxdiff, double seconds) const;
    double seconds() const;

    DeviceState &host_state(int slot) const {
        return *reinterpret_cast<DeviceState *>(host_ + kHostState[slot]);
    }
    const double *host_row_stats() const { return reinterpret_cast<const double *>(host_ + kHostRowStats); }
    double host_log(size_t iter) const {
        return reinterpret_cast<const double *>(host_ + kHostLog)[(iter - 1) % kLogCapacity];
    }
    template <class T> T *work(size_t offset) const { return reinterpret_cast<T *>(work_ + offset); }

    DeviceContext &ctx_;
    const HeatJob &job_;
    cudaStream_t stream_;
    // tinit is read in place where it is device memory and no fixed rows replace its edge rows.
    bool tinit_on_device_ = false, tinit_in_place_ = false, cond_on_device_ = false, tfinal_direct_ = false;
    // The recomputation of a pass that converged inside is launched after every batch of a run that can
    // converge (threshold > 0); a run of threshold 0 cannot (maxdiff < 0 never holds).
    bool recompute_launch_ = true;
    // Someone takes the final report (job_.final or on_report): else the final grid's statistics, a read of
    // the whole grid, are not made (a copy to tfinal still is, where one is due).
    bool report_wanted_ = true;
    Views views_{};
    const double *cond_ = nullptr;
    char *work_ = nullptr, *host_ = nullptr;
    // The run's pass kernel, and the kernel of a batch's shorter passes (heat::choose_tail_kernel).
    PassPlan run_{}, tail_{};
    std::unique_ptr<double[]> checkpoint_; // N*M where checkpoints are asked for
    std::chrono::steady_clock::time_point start_;
};

// The pass kernels (pass.cuh: the one chosen, or the first that fits; the tail kernel of shorter
// passes) and their geometry: strips of W columns, the blocks sharing their rows (plan_pass_blocks),
// remembered on the context for the next call of the same shape.
void HeatRun::plan_passes() {
    run_.choice = heat::choose_pass_kernel(ctx_);
    plan_shape(run_, ctx_.heat().plan);
    tail_.choice = heat::choose_tail_kernel(ctx_, run_.choice);
    if (tail_.choice.kernel) plan_shape(tail_, ctx_.heat().tail_plan);
}

void HeatRun::plan_shape(PassPlan &pass, HeatBuffers::Plan &plan) {
    const PassChoice &choice = pass.choice;
    PassShape &shape = pass.shape;
    const PassKernel &k = *choice.kernel;
    const size_t N = job_.rows, M = job_.cols;
    const int T = k.levels;
    shape.strip = k.threads - 2 * T;
    shape.row_begin = 1;
    shape.row_end = (long long)N + 1;
    const void *fn = reinterpret_cast<const void *>(k.plain);
    if (plan.rows != N || plan.cols != M || plan.kernel != fn || plan.per_sm != choice.per_sm)
        plan = {N, M, fn, choice.per_sm, heat::plan_pass_blocks(choice, N, M, ctx_.limits().multiprocessors)};
    pass.grid = dim3(plan.blocks);
    // The test hook GPK_TEST_HEAT_ROWS=H (NOTES.md): blocks of H rows (at least 2T), which cross strips
    // where H does not divide N, so that tests see blocks of every kind (lean steps, several blocks down a
    // strip, a block's two segments) on small grids.
    if (const size_t rows = test_hooks().heat_rows) {
        const size_t strips = heat::pass_strips(choice, M), h = std::max<size_t>(rows, 2 * (size_t)T);
        pass.grid = dim3((unsigned)std::max(strips, (strips * N + h - 1) / h));
    }
}

// The context's buffers, grown where this run needs more; the device's free memory is asked only then
// (or when the test knob caps it).
void HeatRun::allocate() {
    const size_t N = job_.rows, M = job_.cols;
    const size_t pitch = (M + 31) / 32 * 32; // 256-byte rows
    HeatBuffers &hb = ctx_.heat();
    const size_t work_bytes = WorkLayout::bytes(N);
    // The C boundary checked that (N+2)*(M+2) fits; the padded rows may not.
    if (N + 2 > SIZE_MAX / (2 * sizeof(double)) / pitch)
        fail(GPK_ERR_OUT_OF_MEMORY, "heat: a " + std::to_string(N) + " x " + std::to_string(M) +
                                        " grid needs more than SIZE_MAX bytes of device memory");
    const size_t grid_bytes = 2 * (N + 2) * pitch * sizeof(double);
    const size_t cond_bytes = cond_on_device_ ? 0 : N * M * sizeof(double);
    const size_t knob = test_hooks().device_memory_limit;  // GPK_TEST_DEVICE_MEMORY_LIMIT
    const bool new_work = work_bytes > hb.work.capacity(); // grow() allocates it anew below
    const bool grows = grid_bytes > hb.grids.capacity() || cond_bytes > hb.cond.capacity() || new_work;
    if (grows || knob) {
        const size_t need = grid_bytes + cond_bytes + work_bytes + (1 << 16);
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
    // tinit read in place: its halo rows are its edge rows (lo = 1, hi = N), which is what they hold unless
    // fixed rows replace them; then tinit is copied to grid 0 as host data is.
    views_.v[heat::kInitial] = {const_cast<double *>(job_.tinit), (long long)M, 1, NN};
    views_.v[heat::kFinal] = {job_.tfinal, (long long)M, 1, NN};
    cond_ = cond_on_device_ ? job_.conductivity : static_cast<double *>(ctx_.grow(hb.cond, cond_bytes));
    work_ = static_cast<char *>(ctx_.grow(hb.work, work_bytes));
    // A new work area's maxdiff log is zeroed once: a batch's read-back copies its whole range of the log,
    // and passes after a bad input or after convergence write none of it (finish_pass), so that copy would
    // read bytes never written (compute-sanitizer initcheck on a context's first run); the host never uses
    // those entries.
    if (new_work)
        check(cudaMemsetAsync(work_ + WorkLayout::log, 0, kLogCapacity * sizeof(double), stream_),
              "cudaMemsetAsync (maxdiff log)");
    host_ = ctx_.grow(hb.host, kHostRowStats + 3 * N * sizeof(double));
    if (job_.on_checkpoint) {
        checkpoint_.reset(new (std::nothrow) double[N * M]);
        if (!checkpoint_)
            fail(GPK_ERR_OUT_OF_MEMORY, "heat: out of host memory allocating " +
                                            std::to_string(N * M * sizeof(double)) +
                                            " bytes for checkpoints");
    }
}

// Host inputs go to grid 0 and the conductivity buffer; device inputs stay where they are (tinit: unless
// fixed rows are given). The halo rows of both grids (fixed for the run) come from job_.fixed_rows (host or
// device memory, checked on the host first, as the CPU backend does) or from tinit's edge rows. The run
// state starts at the initial grid and at job_.start_iteration: one copy. Periodic reports that
// convergence skips copy the rows' statistics back unwritten: they are zeroed where reports are asked for.
void HeatRun::upload() {
    const size_t N = job_.rows, M = job_.cols;
    std::vector<double> fixed;
    if (job_.fixed_rows) {
        fixed.resize(2 * M);
        check(cudaMemcpy(fixed.data(), job_.fixed_rows, 2 * M * sizeof(double), cudaMemcpyDefault),
              "cudaMemcpy (fixed_rows)");
        check_fixed_rows(fixed.data(), M);
    }
    if (!tinit_in_place_)
        check(cudaMemcpy2DAsync(views_.v[heat::kGrid0].base, views_.v[heat::kGrid0].pitch * sizeof(double),
                                job_.tinit, M * sizeof(double), M * sizeof(double), N, cudaMemcpyDefault,
                                stream_),
              "cudaMemcpy2DAsync (tinit)");
    if (!cond_on_device_)
        check(cudaMemcpyAsync(const_cast<double *>(cond_), job_.conductivity, N * M * sizeof(double),
                              cudaMemcpyDefault, stream_),
              "cudaMemcpyAsync (conductivity)");
    const int initial = tinit_in_place_ ? heat::kInitial : heat::kGrid0;
    DeviceState s{};
    s.iter = job_.start_iteration;
    s.first_bad_t = s.first_bad_c = ~0ull;
    s.buffer = initial;
    s.threshold = job_.threshold;
    s.log = work<double>(WorkLayout::log);
    s.log_capacity = kLogCapacity;
    s.redo_to_final = tfinal_direct_;
    host_state(0) = s;
    // The halo kernel writes the state, unless fixed rows replace it.
    if (fixed.empty()) {
        heat::halo_rows_kernel<<<(unsigned)std::min<size_t>((M + 255) / 256, 1024), 256, 0, stream_>>>(
            views_, initial, work<DeviceState>(WorkLayout::state), s);
        check_launch("heat halo_rows_kernel");
    } else {
        for (int b = heat::kGrid0; b <= heat::kGrid1; ++b)
            for (int side = 0; side < 2; ++side)
                check(cudaMemcpyAsync(views_.v[b].base + (side ? (long long)N : -1) * views_.v[b].pitch,
                                      fixed.data() + side * M, M * sizeof(double), cudaMemcpyHostToDevice,
                                      stream_),
                      "cudaMemcpyAsync (fixed rows)");
        // The copies read pageable memory that goes out of scope here.
        check(cudaStreamSynchronize(stream_), "cudaStreamSynchronize (fixed rows)");
    }
    if (job_.on_report && job_.period)
        check(cudaMemsetAsync(work_ + WorkLayout::row_stats, 0, 3 * N * sizeof(double), stream_),
              "cudaMemsetAsync (row statistics)");
    if (!fixed.empty())
        check(cudaMemcpyAsync(work_, host_, sizeof(DeviceState), cudaMemcpyHostToDevice, stream_),
              "cudaMemcpyAsync (state)");
}

// A pass of `levels` iterations, on the tail kernel where `tail`; it finishes itself in its last block.
void HeatRun::enqueue_pass(int levels, bool checking, bool to_final, bool tail) {
    const PassPlan &pass = tail ? tail_ : run_;
    heat::launch_pass(*pass.choice.kernel, checking, pass.grid, stream_, views_, cond_,
                      work<DeviceState>(WorkLayout::state), pass.shape, levels, to_final, false, nullptr,
                      true, "heat pass_kernel");
}

// `count` iterations in whole passes and the rest in one or two shorter ones (heat::split_passes; a pass of
// every level takes the lean steps, blocked.cuh), then, where the run can converge (threshold > 0), the
// recomputation that runs only when the run converged inside one of them (on the run's kernel, whichever
// kernel ran that pass: the same bits). The run's first pass checks the inputs; the pass that ends the run
// writes a device tfinal, unless it is the checking one (nothing may be written to the outputs before the
// inputs are known good).
void HeatRun::enqueue_iterations(size_t count, bool first_batch, bool ends_run) {
    const heat::PassSplit split = heat::split_passes(count, run_.choice.levels, tail_.choice.levels);
    const size_t passes = split.whole + (split.rest[0] > 0) + (split.rest[1] > 0);
    for (size_t i = 0; i < passes; ++i) {
        const bool whole = i < split.whole;
        const int levels = whole ? run_.choice.levels : split.rest[i - split.whole];
        const bool checking = first_batch && i == 0, last = ends_run && i + 1 == passes;
        enqueue_pass(levels, checking, last && tfinal_direct_ && !checking, !whole && split.tail);
    }
    if (!recompute_launch_) return;
    heat::launch_pass(*run_.choice.kernel, false, run_.grid, stream_, views_, cond_,
                      work<DeviceState>(WorkLayout::state), run_.shape, 0, false, true, nullptr, false,
                      "heat pass_kernel (recomputation)");
}

// Statistics of the newest grid's rows, copied to the host; a periodic one is skipped once the run has
// converged. The final one may also copy the grid to a device tfinal (`copy_to_final`; with
// `copy_unless_final`, the kernel itself leaves it out where the run ended on tfinal or found a bad input).
// A final report nobody takes (report_wanted_ false) leaves out the statistics: only the copy, if any.
void HeatRun::enqueue_stats(bool periodic, double *copy_to_final, bool copy_unless_final) {
    const size_t N = job_.rows;
    const bool stats = periodic || report_wanted_;
    if (!stats && !copy_to_final) return;
    double *rs = stats ? work<double>(WorkLayout::row_stats) : nullptr;
    heat::launch_row_stats(stream_, views_, work<DeviceState>(WorkLayout::state), periodic, 1, N, rs,
                           stats ? rs + N : nullptr, stats ? rs + 2 * N : nullptr, copy_to_final, job_.cols,
                           copy_unless_final);
    if (stats)
        check(cudaMemcpyAsync(host_ + kHostRowStats, rs, 3 * N * sizeof(double), cudaMemcpyDeviceToHost,
                              stream_),
              "cudaMemcpyAsync (row statistics)");
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

// The first pass flagged a bad input (nothing is in flight any more): find the first one of each kind on
// the device (first_bad_kernel, over the cells as uploaded or read in place) and name it, temperatures
// first, as the CPU backend does.
void HeatRun::report_bad_inputs() {
    const size_t M = job_.cols;
    DeviceState &st = host_state(0);
    const int initial = tinit_in_place_ ? heat::kInitial : heat::kGrid0;
    const unsigned blocks =
        (unsigned)std::min<size_t>((job_.rows * M + 255) / 256, (size_t)ctx_.limits().multiprocessors * 8);
    heat::first_bad_kernel<<<blocks, 256, 0, stream_>>>(views_, initial, cond_,
                                                        work<DeviceState>(WorkLayout::state));
    check_launch("heat first_bad_kernel");
    check(
        cudaMemcpyAsync(&st, work_ + WorkLayout::state, sizeof(DeviceState), cudaMemcpyDeviceToHost, stream_),
        "cudaMemcpyAsync (state)");
    check(cudaStreamSynchronize(stream_), "cudaStreamSynchronize (bad input)");
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
    if (st.first_bad_c == ~0ull)
        fail(GPK_ERR_INTERNAL, "heat: the first pass flagged a bad input that the scan did not find");
    invalid(cell_name("conductivity", st.first_bad_c, M) + " is " +
            format_value(value(job_.conductivity, cond_on_device_, st.first_bad_c)) +
            "; it must lie in [0, 1]");
}

// A periodic report or a checkpoint is due at the end of a batch at `it`: no batch is enqueued beyond it
// (each reads that batch's grid, and may cancel). Progress is no barrier.
bool HeatRun::callback_due(size_t it) const {
    return (job_.on_report && job_.period && it % job_.period == 0) || heat_checkpoint_due(job_, it);
}

// The batch ends at maxiter, after `batch` iterations, or at the next periodic report or checkpoint (whose
// iteration's grid must be whole); never for progress, which comes at batch ends (heat_progress_due).
size_t HeatRun::batch_end(size_t done, size_t batch) const {
    size_t end = std::min(job_.maxiter, done + batch);
    auto next_multiple = [&](size_t every) { return (done / every + 1) * every; };
    if (job_.on_report && job_.period) end = std::min(end, next_multiple(job_.period));
    if (job_.on_checkpoint && job_.checkpoint_interval)
        end = std::min(end, next_multiple(job_.checkpoint_interval));
    return end;
}

// The report from the rows' statistics last copied back: the mean from the rows' sums added in row order
// (heat_mean), the CPU backend's and libgpk_mpi's order.
gpk_heat_report HeatRun::report(size_t niter, double maxdiff, double secs) const {
    const size_t N = job_.rows;
    const double *mins = host_row_stats(), *maxs = mins + N, *sums = mins + 2 * N;
    gpk_heat_report r{niter, mins[0], maxs[0], maxdiff, 0.0, secs};
    for (size_t i = 0; i < N; ++i) {
        r.tmin = std::min(r.tmin, mins[i]);
        r.tmax = std::max(r.tmax, maxs[i]);
    }
    r.tavg = heat_mean(N, job_.cols, [&](size_t i) { return sums[i]; });
    return r;
}

// Hands the newest grid (view `buffer`; batches end at checkpoints and none is in flight beyond one) to the
// checkpoint callback; true to stop.
bool HeatRun::checkpoint(size_t iter, double maxdiff, int buffer) {
    const heat::GridView &g = views_.v[buffer];
    check(cudaMemcpy2DAsync(checkpoint_.get(), job_.cols * sizeof(double), g.base, g.pitch * sizeof(double),
                            job_.cols * sizeof(double), job_.rows, cudaMemcpyDeviceToHost, stream_),
          "cudaMemcpy2DAsync (checkpoint)");
    check(cudaStreamSynchronize(stream_), "cudaStreamSynchronize (checkpoint)");
    return job_.on_checkpoint(iter, maxdiff, checkpoint_.get(), job_.user_data) != 0;
}

double HeatRun::seconds() const {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
}

// The callbacks due at the batch's boundary `last` (its end, or the iteration it converged at), reached
// from `done`, by the rules of heat_deliver; batches end at reports and checkpoints. Returns the callback
// that asked to stop, or none.
HeatCallback HeatRun::deliver_callbacks(size_t done, size_t last, const DeviceState &st) {
    const double maxdiff = host_log(last);
    return heat_deliver(
        job_, done, last, st.converged != 0,
        [&] {
            if (!job_.on_report) return false;
            gpk_heat_report r = report(last, maxdiff, seconds()); // stats of the batch's last grid
            return job_.on_report(&r, 0, job_.user_data) != 0;
        },
        [&] { return job_.on_progress && job_.on_progress(last, maxdiff, seconds(), job_.user_data) != 0; },
        [&] { return checkpoint(last, maxdiff, st.buffer); });
}

void HeatRun::run() {
    tinit_on_device_ = on_device(job_.tinit);
    cond_on_device_ = on_device(job_.conductivity);
    tfinal_direct_ = job_.tfinal && reinterpret_cast<uintptr_t>(job_.tfinal) % alignof(double) == 0 &&
                     on_device(job_.tfinal);
    tinit_in_place_ = tinit_on_device_ && !job_.fixed_rows;
    recompute_launch_ = job_.threshold > 0;
    report_wanted_ = job_.final || job_.on_report;
    plan_passes();
    allocate();
    upload();
    start_ = std::chrono::steady_clock::now();
    // Batches of whole passes, doubling; up to two in flight, so that the device works on the next while the
    // host reads one back. No batch is enqueued past one that ends at a periodic report or a checkpoint
    // (each reads that batch's grid and may cancel). Progress comes at batch ends; a stop it asks for ends
    // the run at the end of the batch in flight, if any, else there. Iterations count on from
    // job_.start_iteration. Convergence stops the work on the device: the kernels of a batch enqueued
    // beyond it return at once.
    struct Batch {
        size_t begin, end;
        int slot;
        bool first;
    };
    Batch flight[2];
    int in_flight = 0, next_slot = 0;
    const size_t start = job_.start_iteration;
    // A quiet run (no report, progress or checkpoint callback: nothing can stop it or look into it before it
    // ends) needs no early look at the state where it cannot converge either (threshold 0): its batches are
    // all as long as any (each batch costs two read-back copies, and where the threshold is positive a
    // recomputation launch). A run with callbacks keeps its batches to kMaxBatchCells.
    const bool quiet = !job_.on_report && !job_.on_progress && !job_.on_checkpoint;
    const size_t L = (size_t)run_.choice.levels, cells = job_.rows * job_.cols;
    const size_t longest =
        quiet ? kMaxBatch : std::min(kMaxBatch, std::max<size_t>(1, kMaxBatchCells / cells));
    const size_t max_batch = std::max<size_t>(L, longest / L * L);
    size_t done = start, enqueued = start, batch = quiet && !(job_.threshold > 0) ? max_batch : L;
    bool final_stats = false;
    DeviceState st{};
    HeatCallback stopped_by = HeatCallback::none;
    for (;;) {
        while (stopped_by == HeatCallback::none && in_flight < 2 && enqueued < job_.maxiter &&
               (in_flight == 0 || !callback_due(flight[in_flight - 1].end))) {
            const size_t end = batch_end(enqueued, batch);
            enqueue_iterations(end - enqueued, enqueued == start, end == job_.maxiter);
            if (job_.on_report && job_.period && end % job_.period == 0) enqueue_stats(true);
            // The final statistics go right behind the passes that end at maxiter, ahead of the read-back
            // copies, so that the stream turns from kernels to copies once: the run ends with this batch
            // (at its end, or where it converges; a stop asked before it lands at its end, no cancellation).
            final_stats = end == job_.maxiter;
            if (final_stats) enqueue_stats(false, tfinal_direct_ ? job_.tfinal : nullptr, true);
            enqueue_readback(next_slot, enqueued, end);
            flight[in_flight++] = {enqueued, end, next_slot, enqueued == start};
            next_slot ^= 1;
            enqueued = end;
            batch = std::min(batch * 2, max_batch);
        }
        const Batch b = flight[0];
        flight[0] = flight[1];
        --in_flight;
        ctx_.heat().batch_done(b.slot).wait_host();
        st = host_state(b.slot);
        if (b.first && st.bad_input) {
            check(cudaStreamSynchronize(stream_), "cudaStreamSynchronize (heat)"); // nothing left in flight
            report_bad_inputs();
        }
        const size_t last = st.converged ? (size_t)st.niter : b.end;
        const bool ends = st.converged || last == job_.maxiter;
        if (stopped_by == HeatCallback::none)
            stopped_by = deliver_callbacks(done, last, st);
        else if (ends) // asked before this batch, which ends the run anyway
            stopped_by = HeatCallback::none;
        done = last;
        if (ends || (stopped_by != HeatCallback::none && in_flight == 0)) break;
    }
    // After any batch still in flight, whose kernels return at once. A device tfinal that the run did not
    // end on gets the newest grid from the statistics kernel, which reads it anyway.
    const int newest = st.buffer;
    const bool copy = job_.tfinal && newest != heat::kFinal;
    if (!final_stats) enqueue_stats(false, copy && tfinal_direct_ ? job_.tfinal : nullptr);
    if (copy && !tfinal_direct_) {
        const heat::GridView &g = views_.v[newest];
        check(cudaMemcpy2DAsync(job_.tfinal, job_.cols * sizeof(double), g.base, g.pitch * sizeof(double),
                                job_.cols * sizeof(double), job_.rows, cudaMemcpyDefault, stream_),
              "cudaMemcpy2DAsync (tfinal)");
    }
    check(cudaStreamSynchronize(stream_), "cudaStreamSynchronize (heat final)");
    if (report_wanted_) heat_final_report(job_, report(done, host_log(done), seconds()));
    if (stopped_by != HeatCallback::none) heat_cancelled(stopped_by, done);
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
