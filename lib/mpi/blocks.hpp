// Blocks of whole rows held by the ranks, in rank order.
#pragma once

#include "mpi/team.hpp"

#include <cstddef>
#include <vector>

namespace gpk::mpi {

struct Block {
    size_t begin = 0, count = 0;        // this rank's rows
    std::vector<size_t> begins, counts; // every rank's, in rank order
};

// Every rank's block (`all`: each rank's first row and count, rank after rank, as Team::open gathers them)
// and this rank's, checked to tile rows [0, rows) in rank order, each of at least one row; otherwise throws
// GPK_ERR_INVALID_ARGUMENT naming the ranks, the same on every rank (`rows_name`: how the row total is
// called in messages, e.g. "params->rows").
Block check_blocks(const Team &team, size_t rows, const std::vector<uint64_t> &all,
                   const std::string &rows_name);

} // namespace gpk::mpi
