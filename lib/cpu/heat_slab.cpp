// The CPU backend's heat slab (engine/heat_slab.hpp): the rows of one rank of libgpk_mpi's distributed
// solver, advanced by the same band wavefront as the whole-grid solver (heat_band.hpp). With a halo
// exchange, a pass first computes the own rows the neighbours need (the first and last `depth`), hands
// them over, and computes the rows between while the calling thread exchanges: the pool's part 0 runs on
// the calling thread, so MPI is called from the thread that called the library.
#include "cpu/heat_band.hpp"
#include "cpu/host_memory.hpp"
#include "cpu/kernels.hpp"
#include "engine/error.hpp"
#include "engine/heat_slab.hpp"

#include <algorithm>
#include <cstring>
#include <string>

namespace gpk::cpu {
namespace {

constexpr unsigned kSlabLevels = kHeatSlabLevels;

class CpuHeatSlab final : public TwoGridHeatSlab {
public:
    CpuHeatSlab(ThreadPool &pool, const HeatSlabJob &job);
    unsigned max_levels() const override { return kSlabLevels; }
    void pass(unsigned levels, size_t own_begin, size_t own_end, const HaloExchange *exchange,
              double *maxdiff) override;
    void swap() override { std::swap(src_, dst_); }
    void exchange_only(size_t own_begin, size_t own_end, const HaloExchange &exchange) override;
    void read_rows(size_t first, size_t count, double *out) override;
    void row_stats(size_t first, size_t count, double *mins, double *maxs, double *sums) override;

private:
    // Rows [r0, r1) split into `parts` bands; part p's maxima go to band_maxdiff_ row `slot + p`.
    void bands(size_t r0, size_t r1, unsigned levels, unsigned part, unsigned parts, unsigned slot);
    void exchanged_pass(unsigned levels, size_t own_begin, size_t own_end, size_t d, double *const *send,
                        ExchangeOnce &once);

    ThreadPool &pool_;
    size_t rows_, m_, pitch_;
    unsigned threads_;
    HostArray<double> grid_a_, grid_b_, cond_, rings_, band_maxdiff_, buffers_;
    double *src_ = nullptr, *dst_ = nullptr;
};

CpuHeatSlab::CpuHeatSlab(ThreadPool &pool, const HeatSlabJob &job)
    : pool_(pool), rows_(job.rows), m_(job.cols), pitch_(job.cols + 2) {
    threads_ = rows_ * m_ >= kParallelCells ? pool.size() : 1;
    // Rings: one per thread and two for the edges; maxima: one row per thread and per edge.
    const size_t ring = band_ring_doubles(kSlabLevels, pitch_);
    const bool ok = grid_a_.allocate(rows_ * pitch_) && grid_b_.allocate(rows_ * pitch_) &&
                    cond_.allocate((rows_ - 2) * m_, false) && rings_.allocate((threads_ + 2) * ring) &&
                    band_maxdiff_.allocate((threads_ + 2) * kSlabLevels) &&
                    buffers_.allocate(4 * kSlabLevels * m_, false);
    if (!ok)
        out_of_host_memory(
            "heat", (2 * rows_ * pitch_ + (threads_ + 2) * ring + 4 * kSlabLevels * m_) * sizeof(double),
            "a slab of two " + std::to_string(rows_) + " x " + std::to_string(pitch_) +
                " grids and its row buffers");
    job.conductivity.each([&](size_t first, size_t count, const double *values) {
        std::memcpy(cond_.get() + first * m_, values, count * m_ * sizeof(double));
    });
    job.cells.each([&](size_t first, size_t count, const double *values) {
        for (size_t i = 0; i < count; ++i)
            load_padded_row(grid_a_.get() + (first + i) * pitch_, values + i * m_, m_);
    });
    std::memcpy(grid_b_.get(), grid_a_.get(), pitch_ * sizeof(double));
    std::memcpy(grid_b_.get() + (rows_ - 1) * pitch_, grid_a_.get() + (rows_ - 1) * pitch_,
                pitch_ * sizeof(double));
    src_ = grid_a_.get();
    dst_ = grid_b_.get();
}

void CpuHeatSlab::bands(size_t r0, size_t r1, unsigned levels, unsigned part, unsigned parts, unsigned slot) {
    const size_t b0 = r0 + (r1 - r0) * part / parts, b1 = r0 + (r1 - r0) * (part + 1) / parts;
    double *maxdiff = band_maxdiff_.get() + size_t(slot + part) * kSlabLevels;
    std::fill(maxdiff, maxdiff + kSlabLevels, 0.0);
    if (b0 >= b1) return;
    double *ring = rings_.get() + size_t(slot + part) * band_ring_doubles(kSlabLevels, pitch_);
    band_pass(PassGrid{src_, dst_, rows_, m_, pitch_, cond_.get()}, b0, b1, levels, ring, maxdiff);
}

void CpuHeatSlab::pass(unsigned levels, size_t own_begin, size_t own_end, const HaloExchange *exchange,
                       double *maxdiff) {
    const bool exchanging = exchange && exchange->run;
    const size_t d = exchanging ? exchange->depth : 0;
    double *send[2], *recv[2];
    for (int k = 0; k < 2; ++k) {
        send[k] = buffers_.get() + size_t(k) * kSlabLevels * m_;
        recv[k] = buffers_.get() + size_t(2 + k) * kSlabLevels * m_;
    }
    ExchangeOnce once(exchange, send, recv);
    try {
        if (levels < 1 || levels > kSlabLevels || own_begin < 1 || own_end > rows_ - 1 ||
            own_begin >= own_end ||
            (exchanging && (d < levels || d > kSlabLevels || d > own_end - own_begin ||
                            (exchange->up && own_begin < d) || (exchange->down && own_end + d > rows_))))
            fail(GPK_ERR_INTERNAL, "heat slab: a pass of " + std::to_string(levels) + " levels over rows " +
                                       std::to_string(own_begin) + ".." + std::to_string(own_end));
        if (exchanging)
            exchanged_pass(levels, own_begin, own_end, d, send, once);
        else
            pool_.run(
                [&](unsigned part, unsigned parts) { bands(own_begin, own_end, levels, part, parts, 0); },
                threads_);
    } catch (...) {
        once.run(); // the neighbours are waiting for this rank's rows
        throw;
    }
    const unsigned used = threads_ + (exchanging ? 2 : 0);
    for (unsigned s = 0; s < levels; ++s) {
        double md = 0;
        for (unsigned p = 0; p < used; ++p) md = std::max(md, band_maxdiff_[size_t(p) * kSlabLevels + s]);
        maxdiff[s] = md;
    }
    for (size_t i = 0; exchanging && i < d; ++i) {
        if (exchange->up) load_padded_row(dst_ + (own_begin - d + i) * pitch_, recv[0] + i * m_, m_);
        if (exchange->down) load_padded_row(dst_ + (own_end + i) * pitch_, recv[1] + i * m_, m_);
    }
}

// The edges and their rows into the send buffers, then the rows between on every thread while part 0 (the
// calling thread) first runs the exchange.
void CpuHeatSlab::exchanged_pass(unsigned levels, size_t own_begin, size_t own_end, size_t d,
                                 double *const *send, ExchangeOnce &once) {
    const size_t edge_top = own_begin + d, edge_bottom = std::max(edge_top, own_end - d);
    // Slots: threads_ for the rows between, then the top and bottom edges.
    for (unsigned p = 0; p < threads_; ++p)
        std::fill(band_maxdiff_.get() + size_t(p) * kSlabLevels,
                  band_maxdiff_.get() + size_t(p + 1) * kSlabLevels, 0.0);
    pool_.run(
        [&](unsigned part, unsigned) {
            if (part == 0) bands(own_begin, edge_top, levels, 0, 1, threads_);
            if (part == 1 || threads_ == 1) bands(edge_bottom, own_end, levels, 0, 1, threads_ + 1);
        },
        std::min(threads_, 2u));
    for (size_t i = 0; i < d; ++i) {
        std::memcpy(send[0] + i * m_, dst_ + (own_begin + i) * pitch_ + 1, m_ * sizeof(double));
        std::memcpy(send[1] + i * m_, dst_ + (own_end - d + i) * pitch_ + 1, m_ * sizeof(double));
    }
    pool_.run(
        [&](unsigned part, unsigned parts) {
            if (part == 0) once.run();
            bands(edge_top, edge_bottom, levels, part, parts, 0);
        },
        threads_);
}

void CpuHeatSlab::exchange_only(size_t own_begin, size_t own_end, const HaloExchange &x) {
    double *send[2], *recv[2];
    for (int k = 0; k < 2; ++k) {
        send[k] = buffers_.get() + size_t(k) * kSlabLevels * m_;
        recv[k] = buffers_.get() + size_t(2 + k) * kSlabLevels * m_;
    }
    ExchangeOnce once(&x, send, recv);
    const size_t d = x.depth;
    if (d < 1 || d > kSlabLevels || d > own_end - own_begin || (x.up && own_begin < d) ||
        (x.down && own_end + d > rows_)) {
        once.run();
        fail(GPK_ERR_INTERNAL, "heat slab: an exchange of " + std::to_string(d) + " rows");
    }
    for (size_t i = 0; i < d; ++i) {
        std::memcpy(send[0] + i * m_, src_ + (own_begin + i) * pitch_ + 1, m_ * sizeof(double));
        std::memcpy(send[1] + i * m_, src_ + (own_end - d + i) * pitch_ + 1, m_ * sizeof(double));
    }
    once.run();
    for (size_t i = 0; i < d; ++i) {
        if (x.up) load_padded_row(src_ + (own_begin - d + i) * pitch_, recv[0] + i * m_, m_);
        if (x.down) load_padded_row(src_ + (own_end + i) * pitch_, recv[1] + i * m_, m_);
    }
}

void CpuHeatSlab::read_rows(size_t first, size_t count, double *out) {
    for (size_t i = 0; i < count; ++i)
        std::memcpy(out + i * m_, src_ + (first + i) * pitch_ + 1, m_ * sizeof(double));
}

void CpuHeatSlab::row_stats(size_t first, size_t count, double *mins, double *maxs, double *sums) {
    auto rows = [&](size_t begin, size_t end) {
        for (size_t i = begin; i < end; ++i) {
            RowStats s = cpu::row_stats(src_ + (first + i) * pitch_ + 1, m_);
            mins[i] = s.min;
            maxs[i] = s.max;
            sums[i] = s.sum;
        }
    };
    if (threads_ > 1)
        pool_.parallel_for(count, rows, 16);
    else
        rows(0, count);
}

} // namespace

std::unique_ptr<HeatSlab> heat_slab(ThreadPool &pool, const HeatSlabJob &job) {
    return std::make_unique<CpuHeatSlab>(pool, job);
}

} // namespace gpk::cpu
