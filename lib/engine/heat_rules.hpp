// Rules of a heat run that every solver shares (the CPU and CUDA backends and libgpk_mpi's distributed
// one), so that each delivers the same callbacks at the same iterations and reports the same values.
#pragma once

#include "engine/jobs.hpp"

#include <algorithm>
#include <cstddef>

namespace gpk {

// A checkpoint is due after iteration `iter`: a multiple of the interval, and not the last iteration
// (convergence, the other way a run ends there, is the caller's to exclude).
inline bool heat_checkpoint_due(const HeatJob &job, size_t iter) {
    return job.on_checkpoint && job.checkpoint_interval > 0 && iter % job.checkpoint_interval == 0 &&
           iter < job.maxiter;
}

// Iterations of the pass that starts after `done`: at most `max_pass`, ending at maxiter, at the next
// periodic report and at the next checkpoint (whose grids must be whole).
inline size_t heat_pass_length(const HeatJob &job, size_t done, size_t max_pass) {
    size_t length = std::min(max_pass, job.maxiter - done);
    if (job.period > 0) length = std::min(length, job.period - done % job.period);
    if (job.on_checkpoint && job.checkpoint_interval > 0)
        length = std::min(length, job.checkpoint_interval - done % job.checkpoint_interval);
    return length;
}

// The mean temperature from the rows' sums: added in row order, then divided by the cell count. SPEC
// leaves the order open; fixing it by rows lets any split of the grid into row blocks (threads, ranks)
// give the same bits, as long as each row's sum is computed the same way.
template <class RowSum> double heat_mean(size_t rows, size_t cols, RowSum row_sum) {
    double sum = 0;
    for (size_t i = 0; i < rows; ++i) sum += row_sum(i);
    return sum / (double(rows) * double(cols));
}

} // namespace gpk
