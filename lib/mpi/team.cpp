// Agreement between the ranks of a libgpk_mpi call (team.hpp).
#include "mpi/team.hpp"

#include "engine/validate.hpp"

#include <algorithm>
#include <cstring>
#include <map>
#include <memory>

namespace gpk::mpi {

Outcome outcome_of(gpk_status status, const gpk_context *ctx) {
    if (status == GPK_OK) return {};
    return {status, gpk_context_last_error(ctx)};
}

void check_ok(gpk_status status, const gpk_context *ctx) {
    if (status != GPK_OK) throw Error(status, gpk_context_last_error(ctx));
}

Field field(const std::string &name, uint64_t value) {
    return Field{name, value, false};
}

Field field(const std::string &name, double value) {
    uint64_t bits;
    std::memcpy(&bits, &value, sizeof bits);
    return Field{name, bits, true};
}

namespace {

// The duplicate of a caller's communicator is kept as an attribute of it (MPI_Comm_dup is itself a
// collective of some cost, on every call otherwise), freed when the caller frees theirs.
extern "C" int free_duplicate(MPI_Comm, int, void *value, void *) {
    auto *dup = static_cast<MPI_Comm *>(value);
    MPI_Comm_free(dup);
    delete dup;
    return MPI_SUCCESS;
}

int duplicate_key() {
    static const int key = [] {
        int k = MPI_KEYVAL_INVALID;
        MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, free_duplicate, &k, nullptr);
        return k;
    }();
    return key;
}

} // namespace

Team::Team(MPI_Comm comm) {
    int initialized = 0, finalized = 0;
    MPI_Initialized(&initialized);
    MPI_Finalized(&finalized);
    if (!initialized || finalized) invalid("MPI is not initialised (call MPI_Init first)");
    if (comm == MPI_COMM_NULL) invalid("comm is MPI_COMM_NULL");
    // Every rank finds the attribute or none does: it is set in the same collective call on every rank.
    void *value = nullptr;
    int found = 0;
    MPI_Comm_get_attr(comm, duplicate_key(), &value, &found);
    if (found) {
        comm_ = *static_cast<MPI_Comm *>(value);
    } else {
        auto dup = std::make_unique<MPI_Comm>(MPI_COMM_NULL);
        MPI_Comm_dup(comm, dup.get());
        comm_ = *dup;
        MPI_Comm_set_attr(comm, duplicate_key(), dup.release());
    }
    MPI_Comm_rank(comm_, &rank_);
    MPI_Comm_size(comm_, &size_);
}

Team::~Team() = default;

void Team::agree(const Outcome &mine) {
    int first = mine.failed() ? rank_ : size_;
    MPI_Allreduce(MPI_IN_PLACE, &first, 1, MPI_INT, MPI_MIN, comm_);
    if (first < size_) fail_from(first, mine);
}

void Team::fail_from(int first, const Outcome &mine) {
    int status = int(mine.status);
    std::string message = mine.message;
    unsigned long long length = message.size();
    MPI_Bcast(&status, 1, MPI_INT, first, comm_);
    MPI_Bcast(&length, 1, MPI_UNSIGNED_LONG_LONG, first, comm_);
    message.resize(size_t(length));
    MPI_Bcast(&message[0], int(length), MPI_CHAR, first, comm_);
    if (size_ > 1) message = "rank " + std::to_string(first) + ": " + message;
    throw Error(gpk_status(status), message);
}

std::string rank_list(const std::vector<int> &ranks) {
    std::string out;
    size_t groups = 0, i = 0;
    for (; i < ranks.size() && groups < 6; ++groups) {
        size_t j = i;
        while (j + 1 < ranks.size() && ranks[j + 1] == ranks[j] + 1) ++j;
        if (!out.empty()) out += ", ";
        out += std::to_string(ranks[i]);
        if (j > i) out += "-" + std::to_string(ranks[j]);
        i = j + 1;
    }
    if (i < ranks.size()) out += " and " + std::to_string(ranks.size() - i) + " more";
    return out;
}

namespace {

std::string shown(const Field &f, uint64_t bits) {
    if (!f.is_double) return std::to_string(bits);
    double v;
    std::memcpy(&v, &bits, sizeof v);
    return format_value(v);
}

} // namespace

std::vector<uint64_t> Team::open(const Outcome &mine, const std::vector<Field> &fields,
                                 const std::vector<uint64_t> &extra) {
    // A row a rank: failed (0 or 1), the fields' bits, the extra values.
    const size_t n = fields.size(), w = 1 + n + extra.size();
    std::vector<uint64_t> row(w), all(w * size_t(size_));
    row[0] = mine.failed() ? 1 : 0;
    for (size_t k = 0; k < n; ++k) row[1 + k] = fields[k].bits;
    std::copy(extra.begin(), extra.end(), row.begin() + 1 + std::ptrdiff_t(n));
    MPI_Allgather(row.data(), int(w), MPI_UINT64_T, all.data(), int(w), MPI_UINT64_T, comm_);
    for (int r = 0; r < size_; ++r)
        if (all[size_t(r) * w] != 0) fail_from(r, mine);
    for (size_t k = 0; k < n; ++k) {
        std::map<uint64_t, std::vector<int>> holders; // value -> ranks, in value order (same on every rank)
        for (int r = 0; r < size_; ++r) holders[all[size_t(r) * w + 1 + k]].push_back(r);
        if (holders.size() < 2) continue;
        std::vector<std::pair<uint64_t, std::vector<int>>> groups(holders.begin(), holders.end());
        std::sort(groups.begin(), groups.end(),
                  [](const auto &a, const auto &b) { return a.second < b.second; });
        std::string message = fields[k].name + " differs between ranks:";
        for (size_t g = 0; g < groups.size() && g < 4; ++g)
            message += std::string(g ? ";" : "") + " " + shown(fields[k], groups[g].first) + " on rank" +
                       (groups[g].second.size() > 1 ? "s " : " ") + rank_list(groups[g].second);
        if (groups.size() > 4) message += "; and " + std::to_string(groups.size() - 4) + " other values";
        invalid(message + "; it must be the same on every rank");
    }
    std::vector<uint64_t> extras;
    extras.reserve(extra.size() * size_t(size_));
    for (int r = 0; r < size_; ++r)
        extras.insert(extras.end(), all.begin() + std::ptrdiff_t(size_t(r) * w + 1 + n),
                      all.begin() + std::ptrdiff_t(size_t(r + 1) * w));
    return extras;
}

} // namespace gpk::mpi
