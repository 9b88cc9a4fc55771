// Blocks of rows (blocks.hpp).
#include "mpi/blocks.hpp"

namespace gpk::mpi {

Block check_blocks(const Team &team, size_t rows, const std::vector<uint64_t> &all,
                   const std::string &rows_name) {
    Block b;
    b.begins.resize(size_t(team.size()));
    b.counts.resize(size_t(team.size()));
    for (size_t r = 0; r < size_t(team.size()); ++r) {
        b.begins[r] = size_t(all[2 * r]);
        b.counts[r] = size_t(all[2 * r + 1]);
    }
    b.begin = b.begins[size_t(team.rank())];
    b.count = b.counts[size_t(team.rank())];
    std::vector<int> empty;
    for (int r = 0; r < team.size(); ++r)
        if (b.counts[size_t(r)] == 0) empty.push_back(r);
    if (!empty.empty())
        invalid("no rows on rank" + std::string(empty.size() > 1 ? "s " : " ") + rank_list(empty) + ": " +
                rows_name + " is " + std::to_string(rows) + " and " + std::to_string(team.size()) +
                " ranks share it; every rank needs at least one row");
    size_t next = 0;
    for (int r = 0; r < team.size(); ++r) {
        if (b.begins[size_t(r)] != next)
            invalid("the ranks' blocks of rows do not follow each other: rank " + std::to_string(r) +
                    " starts at row " + std::to_string(b.begins[size_t(r)]) + " but " +
                    (r ? "rank " + std::to_string(r - 1) + " ends at row " + std::to_string(next)
                       : std::string("the first block must start at row 0")));
        if (b.counts[size_t(r)] > rows - next)
            invalid("rank " + std::to_string(r) + "'s block of rows " + std::to_string(b.begins[size_t(r)]) +
                    ".." + std::to_string(b.begins[size_t(r)] + b.counts[size_t(r)]) + " goes past " +
                    rows_name + " (" + std::to_string(rows) + ")");
        next += b.counts[size_t(r)];
    }
    if (next != rows)
        invalid("the ranks' blocks end at row " + std::to_string(next) + " but " + rows_name + " is " +
                std::to_string(rows));
    return b;
}

} // namespace gpk::mpi
