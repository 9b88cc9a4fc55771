// The CUDA backend's heat slab (engine/heat_slab.hpp) for libgpk_mpi: the rank's rows stay on the device
// between passes and are advanced by the whole-grid solver's own pass kernel, chosen the same way
// (pass.cuh: the one instantiation of each kernel, its shared memory limit set on the pointer
// launched), launched on a range of rows. With a halo exchange, a pass launches the edge rows first (the
// first and last `depth` own rows), copies them to pinned buffers on a second stream while the rows between
// compute, hands them to the exchange on the host, and copies the received rows into the result's halo rows
// while the kernel still runs (other rows of the same grid). Every iteration's maxdiff over the own rows
// comes back in one small copy per pass.
#include "cuda/device_context.cuh"
#include "cuda/heat/pass.cuh"
#include "cuda/heat/slab.cuh"
#include "engine/error.hpp"

#include <algorithm>
#include <string>
#include <utility>

namespace gpk::cuda {
namespace {

constexpr int kLaunches = 3; // top edge, rows between, bottom edge

// A launch's per-level block maxima: partials[level * blocks + b], `blocks` of them.
struct Partials {
    const double *at;
    int blocks;
};

// The largest of every launch's maxima for each level: out[level]. One block.
static __global__ void level_max_kernel(Partials a, Partials b, Partials c, int levels, double *out) {
    __shared__ double scratch[256 / 32];
    for (int k = 0; k < levels; ++k) {
        double m = 0.0;
        for (const Partials &p : {a, b, c})
            for (int i = threadIdx.x; i < p.blocks; i += blockDim.x)
                m = fmax(m, p.at[(size_t)k * p.blocks + i]);
        m = heat::block_max<256>(m, scratch);
        if (threadIdx.x == 0) out[k] = m;
        __syncthreads();
    }
}

class CudaHeatSlab final : public HeatSlab {
public:
    CudaHeatSlab(DeviceContext &ctx, const HeatSlabJob &job);
    unsigned max_levels() const override { return unsigned(pass_.levels); }
    void pass(unsigned levels, size_t own_begin, size_t own_end, const HaloExchange *exchange,
              double *maxdiff) override;
    void swap() override {
        std::swap(grid_[0], grid_[1]);
        std::swap(views_.v[heat::kGrid0], views_.v[heat::kGrid1]);
    }
    void read_rows(size_t first, size_t count, double *out) override;
    void row_stats(size_t first, size_t count, double *mins, double *maxs, double *sums) override;

private:
    // Launches rows [r0, r1) on `s` with its maxima in partial slot `slot`; an empty range launches nothing.
    void launch(size_t r0, size_t r1, int levels, int slot, cudaStream_t s);
    void copy_rows(double *host, const double *grid, size_t first, size_t count, cudaStream_t s,
                   bool to_host);
    void exchanged_pass(int levels, size_t own_begin, size_t own_end, const HaloExchange &x,
                        double *const *send, double *const *recv, ExchangeOnce &once);
    void finish_pass(int levels, double *maxdiff);

    DeviceContext &ctx_;
    int device_;
    size_t rows_, cols_;
    // Slab rows 0..rows-1 of grid b start at grid_[b] + row * pitch; views_ (current grid at kGrid0, the
    // state's buffer) names them for the kernels: row r of view b is grid_[b] + r * pitch.
    double *grid_[2] = {nullptr, nullptr};
    size_t pitch_ = 0;
    heat::Views views_{};
    heat::PassChoice pass_{};
    heat::PassShape shape_{};
    DeviceBuffer cells_, cond_, partials_, level_max_, state_, row_stats_;
    PinnedBuffer halo_, host_level_max_;
    Stream copies_;
    Event edges_done_, sent_;
    Partials slots_[kLaunches]{};
    size_t slot_capacity_ = 0; // doubles per slot
};

CudaHeatSlab::CudaHeatSlab(DeviceContext &ctx, const HeatSlabJob &job)
    : ctx_(ctx), device_(ctx.device()), rows_(job.rows), cols_(job.cols) {
    pitch_ = (cols_ + 31) / 32 * 32;
    cells_.reserve(2 * rows_ * pitch_ * sizeof(double));
    cond_.reserve((rows_ - 2) * cols_ * sizeof(double));
    grid_[0] = static_cast<double *>(cells_.get());
    grid_[1] = grid_[0] + rows_ * pitch_;
    const long long P = (long long)pitch_, last = (long long)rows_ - 1;
    views_.rows = rows_ - 2;
    views_.cols = cols_;
    for (int b : {heat::kGrid0, heat::kGrid1, heat::kInitial, heat::kFinal}) // no pass reads or writes 2, 3
        views_.v[b] = heat::GridView{grid_[b & 1] + P, P, 0, last};
    // The whole-grid solver's choice (and its shared memory limit set on the kernels launched), and block
    // heights planned for the slab's rows; every kernel and height gives a cell the same bits.
    pass_ = heat::choose_pass_kernel(ctx_);
    const int T = pass_.kernel->levels;
    const size_t levels = size_t(pass_.levels);
    shape_.strip = pass_.kernel->threads - 2 * T;
    shape_.rows_per_block = heat::plan_rows_per_block(pass_, rows_ - 2, cols_, ctx_.limits().multiprocessors);
    const dim3 whole = heat::pass_grid(shape_, cols_, rows_ - 2);
    // Each slot holds the maxima (T levels a block) of a launch of at most the whole slab's blocks plus one
    // row of blocks.
    slot_capacity_ = (size_t)whole.x * (whole.y + 1) * (size_t)T;
    partials_.reserve(kLaunches * slot_capacity_ * sizeof(double));
    level_max_.reserve(levels * sizeof(double));
    host_level_max_.reserve(levels * sizeof(double));
    state_.reserve(sizeof(heat::DeviceState));
    row_stats_.reserve(3 * rows_ * sizeof(double));
    halo_.reserve(4 * levels * cols_ * sizeof(double));
    const cudaStream_t s = ctx_.main();
    // The state: buffer kGrid0 (the current grid; swap() exchanges the views), never converged.
    check(cudaMemsetAsync(state_.get(), 0, sizeof(heat::DeviceState), s), "cudaMemsetAsync (slab state)");
    job.cells.each([&](size_t first, size_t count, const double *values) {
        copy_rows(const_cast<double *>(values), grid_[0], first, count, s, false);
    });
    for (size_t row : {size_t(0), rows_ - 1}) // the rows a pass keeps, in the other grid too
        check(cudaMemcpyAsync(grid_[1] + row * pitch_, grid_[0] + row * pitch_, cols_ * sizeof(double),
                              cudaMemcpyDeviceToDevice, s),
              "cudaMemcpyAsync (slab)");
    job.conductivity.each([&](size_t first, size_t count, const double *values) {
        check(cudaMemcpyAsync(static_cast<double *>(cond_.get()) + first * cols_, values,
                              count * cols_ * sizeof(double), cudaMemcpyHostToDevice, s),
              "cudaMemcpyAsync (slab conductivity)");
    });
    ctx_.synchronize_main();
}

void CudaHeatSlab::launch(size_t r0, size_t r1, int levels, int slot, cudaStream_t s) {
    heat::PassShape shape = shape_;
    shape.row_begin = (long long)r0;
    shape.row_end = (long long)r1;
    const dim3 grid = heat::pass_grid(shape, cols_, r1 - r0);
    double *partials = static_cast<double *>(partials_.get()) + slot * slot_capacity_;
    slots_[slot] = Partials{partials, r1 > r0 ? int(grid.x * grid.y) : 0};
    if (r1 <= r0) return;
    if ((size_t)grid.x * grid.y * (size_t)pass_.kernel->levels > slot_capacity_)
        fail(GPK_ERR_INTERNAL, "heat slab: more blocks than the partials hold");
    heat::launch_pass(*pass_.kernel, false, grid, s, views_, static_cast<const double *>(cond_.get()),
                      static_cast<heat::DeviceState *>(state_.get()), shape, levels, false, false, partials,
                      false, "heat pass_kernel (slab)");
}

// Rows [first, first + count) of a grid from or to count * cols_ packed doubles of host memory.
void CudaHeatSlab::copy_rows(double *host, const double *grid, size_t first, size_t count, cudaStream_t s,
                             bool to_host) {
    const size_t row = cols_ * sizeof(double), pitch = pitch_ * sizeof(double);
    double *device = const_cast<double *>(grid) + first * pitch_;
    check(to_host ? cudaMemcpy2DAsync(host, row, device, pitch, row, count, cudaMemcpyDeviceToHost, s)
                  : cudaMemcpy2DAsync(device, pitch, host, row, row, count, cudaMemcpyHostToDevice, s),
          "cudaMemcpy2DAsync (slab rows)");
}

void CudaHeatSlab::pass(unsigned levels, size_t own_begin, size_t own_end, const HaloExchange *exchange,
                        double *maxdiff) {
    const bool exchanging = exchange && exchange->run;
    const size_t d = exchanging ? exchange->depth : 0;
    double *halo = reinterpret_cast<double *>(halo_.get());
    const size_t n = size_t(pass_.levels) * cols_;
    double *const send[2] = {halo, halo + n};
    double *const recv[2] = {halo + 2 * n, halo + 3 * n};
    ExchangeOnce once(exchange, send, recv);
    try {
        DeviceScope scope(device_);
        if (levels < 1 || levels > unsigned(pass_.levels) || own_begin < 1 || own_end > rows_ - 1 ||
            own_begin >= own_end ||
            (exchanging && (d < levels || d > size_t(pass_.levels) || d > own_end - own_begin ||
                            (exchange->up && own_begin < d) || (exchange->down && own_end + d > rows_))))
            fail(GPK_ERR_INTERNAL, "heat slab: a pass of " + std::to_string(levels) + " levels over rows " +
                                       std::to_string(own_begin) + ".." + std::to_string(own_end));
        if (exchanging) {
            exchanged_pass(int(levels), own_begin, own_end, *exchange, send, recv, once);
        } else {
            launch(own_begin, own_end, int(levels), 0, ctx_.main());
            slots_[1] = slots_[2] = Partials{nullptr, 0};
        }
        finish_pass(int(levels), maxdiff);
    } catch (...) {
        once.run(); // the neighbours are waiting for this rank's rows
        throw;
    }
}

// The edges, their rows to the host on the copy stream while the rows between compute, the exchange, and
// the received rows into the result grid's halo rows, also while the kernel runs.
void CudaHeatSlab::exchanged_pass(int levels, size_t own_begin, size_t own_end, const HaloExchange &x,
                                  double *const *send, double *const *recv, ExchangeOnce &once) {
    const size_t d = x.depth, edge_top = own_begin + d, edge_bottom = std::max(edge_top, own_end - d);
    const cudaStream_t main = ctx_.main(), copies = copies_.get();
    launch(own_begin, edge_top, levels, 0, main);
    launch(edge_bottom, own_end, levels, 2, main);
    edges_done_.record(main);
    edges_done_.make_wait(copies);
    copy_rows(send[0], grid_[1], own_begin, d, copies, true);
    copy_rows(send[1], grid_[1], own_end - d, d, copies, true);
    sent_.record(copies);
    launch(edge_top, edge_bottom, levels, 1, main);
    sent_.wait_host();
    once.run();
    if (x.up) copy_rows(recv[0], grid_[1], own_begin - d, d, copies, false);
    if (x.down) copy_rows(recv[1], grid_[1], own_end, d, copies, false);
    check(cudaStreamSynchronize(copies), "cudaStreamSynchronize (slab halo)");
}

void CudaHeatSlab::finish_pass(int levels, double *maxdiff) {
    const cudaStream_t s = ctx_.main();
    level_max_kernel<<<1, 256, 0, s>>>(slots_[0], slots_[1], slots_[2], levels,
                                       static_cast<double *>(level_max_.get()));
    check_launch("heat level_max_kernel");
    check(cudaMemcpyAsync(host_level_max_.get(), level_max_.get(), levels * sizeof(double),
                          cudaMemcpyDeviceToHost, s),
          "cudaMemcpyAsync (slab maxdiff)");
    ctx_.synchronize_main();
    std::copy_n(reinterpret_cast<const double *>(host_level_max_.get()), levels, maxdiff);
}

void CudaHeatSlab::read_rows(size_t first, size_t count, double *out) {
    DeviceScope scope(device_);
    copy_rows(out, grid_[0], first, count, ctx_.main(), true);
    ctx_.synchronize_main();
}

void CudaHeatSlab::row_stats(size_t first, size_t count, double *mins, double *maxs, double *sums) {
    DeviceScope scope(device_);
    double *rs = static_cast<double *>(row_stats_.get());
    heat::launch_row_stats(ctx_.main(), views_, static_cast<const heat::DeviceState *>(state_.get()), false,
                           first, count, rs, rs + count, rs + 2 * count);
    const std::pair<double *, const double *> copies[3] = {
        {mins, rs}, {maxs, rs + count}, {sums, rs + 2 * count}};
    for (auto [to, from] : copies)
        check(cudaMemcpyAsync(to, from, count * sizeof(double), cudaMemcpyDeviceToHost, ctx_.main()),
              "cudaMemcpyAsync (slab row statistics)");
    ctx_.synchronize_main();
}

} // namespace

std::unique_ptr<HeatSlab> make_heat_slab(DeviceContext &ctx, const HeatSlabJob &job) {
    DeviceScope scope(ctx.device());
    return std::make_unique<CudaHeatSlab>(ctx, job);
}

unsigned heat_slab_levels(DeviceContext &ctx) {
    DeviceScope scope(ctx.device());
    return unsigned(heat::choose_pass_kernel(ctx).levels);
}

} // namespace gpk::cuda
