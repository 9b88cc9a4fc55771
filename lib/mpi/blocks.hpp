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

// Gathers every rank's block and checks that the blocks tile rows [0, rows) in rank order, each of at
// least one row; otherwise throws on every rank GPK_ERR_INVALID_ARGUMENT naming the ranks (`rows_name`:
// how the row total is called in messages, e.g. "params->rows").
Block check_blocks(Team &team, size_t rows, size_t begin, size_t count, const std::string &rows_name);

} // namespace gpk::mpi
