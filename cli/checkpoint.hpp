// Heat checkpoints of the gpk command (--checkpoint FILE --checkpoint-every K, --resume FILE): the state a
// run needs to continue bit for bit, in one file written atomically (a temporary file, flushed to disk,
// then renamed over FILE), so that a run killed at any moment leaves the previous checkpoint whole.
//
// File layout (native byte order, little-endian on the machines gpk runs on):
//   "GPKHEAT1"  8 bytes
//   u64 rows, u64 cols, u64 iteration, f64 maxdiff (of that iteration),
//   u64 conductivity checksum, u64 payload checksum      (48 bytes of header after the magic)
//   2*cols doubles: the fixed rows above row 0 and below the last row
//   rows*cols doubles: the grid after `iteration` iterations
// Checksums are sums over rows of a hash of each row and its index (field_checksum), so that ranks holding
// blocks of rows can add theirs.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "gpk.h"

namespace gpkcli {

struct CheckpointHeader {
    size_t rows = 0, cols = 0, iteration = 0;
    double maxdiff = 0;
    uint64_t conductivity_checksum = 0;
};

struct Checkpoint {
    CheckpointHeader header;
    std::vector<double> fixed_rows; // 2 * cols
    std::vector<double> grid;       // rows * cols
};

// The checksum of `rows` rows of `cols` values whose first row is row `first_row` of the whole field
// (fixed rows count as rows 2^64-2 and 2^64-1). Sums of blocks of rows add up to the whole's.
uint64_t field_checksum(const double *values, size_t rows, size_t cols, uint64_t first_row);

// Writes the checkpoint atomically; throws Failure naming the path.
void write_checkpoint(const std::string &path, const CheckpointHeader &header, const double *fixed_rows,
                      const double *grid);

// Reads and checks a checkpoint (magic, sizes, checksum); throws Failure naming the path and what is wrong.
Checkpoint read_checkpoint(const std::string &path);

// Checks that a checkpoint fits the run: its size and its conductivity field; throws Failure otherwise.
void check_checkpoint_fits(const std::string &path, const CheckpointHeader &header, size_t rows, size_t cols,
                           uint64_t conductivity_checksum, size_t maxiter);

// What gpk heat does with --checkpoint FILE --checkpoint-every K and --resume FILE.
class HeatCheckpoints {
public:
    // `path` empty: no checkpoints are written; `resume_path` empty: the run starts afresh.
    HeatCheckpoints(std::string path, size_t every, std::string resume_path)
        : path_(std::move(path)), every_(every), resume_path_(std::move(resume_path)) {}

    // Before the run: computes what the checkpoints of this run record (the conductivities' checksum, the
    // fixed rows: tinit's first and last rows), then, resuming, reads the checkpoint, checks that it fits
    // and replaces `temperature` by its grid. Sets in params what the library needs (start_iteration,
    // fixed_rows, checkpoint_interval; on_checkpoint is the caller's). Throws Failure.
    void prepare(size_t rows, size_t cols, size_t maxiter, const std::vector<double> &conductivity,
                 std::vector<double> &temperature, gpk_heat_params &params);

    bool writing() const { return !path_.empty(); }

    // The on_checkpoint callback's work: writes the file (under mpirun `grid` is the rank's block, and
    // rank 0 writes the gathered grid); on failure keeps the message and returns 1 (stop the run), 0
    // otherwise.
    int save(size_t niter, double maxdiff, const double *grid);

    // After the run: throws the failure save() met, if any.
    void rethrow() const;

private:
    std::string path_;
    size_t every_;
    std::string resume_path_, error_;
    CheckpointHeader header_;
    std::vector<double> fixed_rows_;
    std::vector<double> gathered_; // under mpirun, rank 0's copy of the whole grid
};

} // namespace gpkcli
