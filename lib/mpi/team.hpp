// How the ranks of one libgpk_mpi call agree: a private duplicate of the caller's communicator (made on the
// first call on it and kept as its attribute until it is freed), one
// outcome for every rank (the first failing rank's, named), and parameters checked to be the same on every
// rank. Every collective step is taken by every rank in the same order whatever happened locally; only
// what the ranks agreed on changes the path, so no rank is ever left waiting.
#pragma once

#include "engine/error.hpp"
#include "gpk.h"

#include <mpi.h>

#include <cstdint>
#include <string>
#include <vector>

namespace gpk::mpi {

// What one rank's local work came to.
struct Outcome {
    gpk_status status = GPK_OK;
    std::string message;
    bool failed() const { return status != GPK_OK; }
};

// Runs body, turning what it throws into an Outcome (nothing escapes).
template <class F> Outcome capture(F &&body) noexcept {
    try {
        body();
        return {};
    } catch (const Error &e) {
        return {e.status(), e.what()};
    } catch (const std::bad_alloc &) {
        return {GPK_ERR_OUT_OF_MEMORY, "out of host memory"};
    } catch (const std::exception &e) {
        return {GPK_ERR_INTERNAL, std::string("internal error: ") + e.what()};
    } catch (...) {
        return {GPK_ERR_INTERNAL, "internal error: unknown exception"};
    }
}

// A status from libgpk as an Outcome carrying the context's message.
Outcome outcome_of(gpk_status status, const gpk_context *ctx);
// The same thrown as a gpk::Error, where it is not GPK_OK.
void check_ok(gpk_status status, const gpk_context *ctx);

// One parameter that must be the same on every rank, as 64 bits (doubles by their bits).
struct Field {
    std::string name;
    uint64_t bits;
    bool is_double = false;
};
Field field(const std::string &name, uint64_t value);
Field field(const std::string &name, double value);

class Team {
public:
    // Duplicates `comm` on the first call on it (collective). Throws GPK_ERR_INVALID_ARGUMENT, the same on
    // every rank, where MPI is not initialised or comm is MPI_COMM_NULL.
    explicit Team(MPI_Comm comm);
    ~Team();
    Team(const Team &) = delete;
    Team &operator=(const Team &) = delete;

    MPI_Comm comm() const { return comm_; }
    int rank() const { return rank_; }
    int size() const { return size_; }

    // Every rank passes its outcome; where any rank failed, every rank throws the failure of the lowest
    // failing rank, its message prefixed with "rank R: " when there is more than one rank.
    void agree(const Outcome &mine);

    // Runs body (local work, no MPI), then agree.
    template <class F> void step(F &&body) { agree(capture(std::forward<F>(body))); }

    // A call's opening, in one collective: every rank's outcome of its local checks, as agree(); then, where
    // none failed, throws on every rank GPK_ERR_INVALID_ARGUMENT naming the first of `fields` whose value
    // differs between ranks, with the values and the ranks holding each (every rank passes the same names
    // in the same order); else returns every rank's `extra` (as many values on every rank), rank after
    // rank.
    std::vector<uint64_t> open(const Outcome &mine, const std::vector<Field> &fields,
                               const std::vector<uint64_t> &extra = {});

private:
    // Throws on every rank the outcome of rank `first`, which failed (collective).
    [[noreturn]] void fail_from(int first, const Outcome &mine);

    MPI_Comm comm_ = MPI_COMM_NULL;
    int rank_ = 0, size_ = 1;
};

// "0-2, 5, 7" for sorted ranks (at most a few groups, then "and N more").
std::string rank_list(const std::vector<int> &ranks);

} // namespace gpk::mpi
