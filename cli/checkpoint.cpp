// Heat checkpoint files (checkpoint.hpp).
#include "checkpoint.hpp"

#include "common.hpp"
#include "ranks.hpp"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace gpkcli {

namespace {

constexpr char kMagic[8] = {'G', 'P', 'K', 'H', 'E', 'A', 'T', '1'};
constexpr size_t kHeaderBytes = 8 + 6 * 8;

[[noreturn]] void bad(const std::string &path, const std::string &what) {
    throw Failure(path + ": " + what);
}

// FNV-1a over the row's 8-byte words, seeded by the row index, then finalised (splitmix64) so that
// sums of rows do not cancel by accident.
uint64_t row_hash(const double *row, size_t cols, uint64_t index) {
    uint64_t h = 0xcbf29ce484222325ull ^ (index * 0x9e3779b97f4a7c15ull);
    for (size_t j = 0; j < cols; ++j) {
        uint64_t w;
        std::memcpy(&w, &row[j], sizeof w);
        h = (h ^ w) * 0x100000001b3ull;
    }
    h ^= h >> 30;
    h *= 0xbf58476d1ce4e5b9ull;
    h ^= h >> 27;
    h *= 0x94d049bb133111ebull;
    return h ^ (h >> 31);
}

uint64_t payload_checksum(const double *fixed_rows, const double *grid, size_t rows, size_t cols) {
    return field_checksum(fixed_rows, 2, cols, ~uint64_t(1)) + field_checksum(grid, rows, cols, 0);
}

// Moves all of `bytes` through read or write (op), retrying on EINTR; false with errno on failure or at the
// end of the file.
template <class Byte, class Op> bool all_bytes(int fd, Byte *data, size_t bytes, Op op) {
    while (bytes > 0) {
        ssize_t n = op(fd, data, bytes);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) return false;
        data += n;
        bytes -= size_t(n);
    }
    return true;
}

bool write_all(int fd, const void *data, size_t bytes) {
    return all_bytes(fd, static_cast<const char *>(data), bytes, ::write);
}

bool read_all(int fd, void *data, size_t bytes) {
    return all_bytes(fd, static_cast<char *>(data), bytes, ::read);
}

struct FileCloser {
    int fd;
    ~FileCloser() {
        if (fd >= 0) close(fd);
    }
};

} // namespace

uint64_t field_checksum(const double *values, size_t rows, size_t cols, uint64_t first_row) {
    uint64_t sum = 0;
    for (size_t i = 0; i < rows; ++i) sum += row_hash(values + i * cols, cols, first_row + i);
    return sum;
}

void write_checkpoint(const std::string &path, const CheckpointHeader &h, const double *fixed_rows,
                      const double *grid) {
    const uint64_t words[6] = {h.rows,
                               h.cols,
                               h.iteration,
                               0,
                               h.conductivity_checksum,
                               payload_checksum(fixed_rows, grid, h.rows, h.cols)};
    char header[kHeaderBytes];
    std::memcpy(header, kMagic, 8);
    std::memcpy(header + 8, words, sizeof words);
    std::memcpy(header + 8 + 3 * 8, &h.maxdiff, 8);
    std::string temp = path + ".tmp-XXXXXX";
    int fd = mkstemp(&temp[0]);
    if (fd < 0) bad(path, std::string("cannot write the checkpoint: ") + std::strerror(errno));
    mode_t mask = umask(0);
    umask(mask);
    fchmod(fd, 0666 & ~mask);
    bool ok = write_all(fd, header, sizeof header) &&
              write_all(fd, fixed_rows, 2 * h.cols * sizeof(double)) &&
              write_all(fd, grid, h.rows * h.cols * sizeof(double)) && fsync(fd) == 0;
    int err = ok ? 0 : errno;
    if (close(fd) != 0 && err == 0) err = errno;
    if (err == 0 && std::rename(temp.c_str(), path.c_str()) != 0) err = errno;
    if (err != 0) {
        unlink(temp.c_str());
        bad(path, std::string("cannot write the checkpoint: ") + std::strerror(err));
    }
}

Checkpoint read_checkpoint(const std::string &path) {
    FileCloser file{open(path.c_str(), O_RDONLY)};
    if (file.fd < 0) bad(path, std::string("cannot read the checkpoint: ") + std::strerror(errno));
    char header[kHeaderBytes];
    if (!read_all(file.fd, header, sizeof header) || std::memcmp(header, kMagic, 8) != 0)
        bad(path, "not a gpk heat checkpoint (it does not start with GPKHEAT1)");
    uint64_t words[6];
    std::memcpy(words, header + 8, sizeof words);
    Checkpoint cp;
    cp.header.rows = words[0];
    cp.header.cols = words[1];
    cp.header.iteration = words[2];
    std::memcpy(&cp.header.maxdiff, header + 8 + 3 * 8, 8);
    cp.header.conductivity_checksum = words[4];
    const size_t rows = cp.header.rows, cols = cp.header.cols;
    struct stat st {};
    const bool sized = rows > 0 && cols > 0 && rows < (size_t(1) << 40) && cols < (size_t(1) << 40) &&
                       rows <= (SIZE_MAX / sizeof(double) - 2 * cols) / cols && fstat(file.fd, &st) == 0 &&
                       uint64_t(st.st_size) == kHeaderBytes + (rows + 2) * cols * sizeof(double);
    if (!sized)
        bad(path, "the checkpoint's size does not match its header (" + std::to_string(rows) + " x " +
                      std::to_string(cols) + "): the file is truncated or damaged");
    cp.fixed_rows.resize(2 * cols);
    cp.grid.resize(rows * cols);
    if (!read_all(file.fd, cp.fixed_rows.data(), cp.fixed_rows.size() * sizeof(double)) ||
        !read_all(file.fd, cp.grid.data(), cp.grid.size() * sizeof(double)))
        bad(path, std::string("cannot read the checkpoint: ") + std::strerror(errno));
    if (payload_checksum(cp.fixed_rows.data(), cp.grid.data(), rows, cols) != words[5])
        bad(path, "the checkpoint's checksum does not match its contents: the file is damaged");
    return cp;
}

void check_checkpoint_fits(const std::string &path, const CheckpointHeader &h, size_t rows, size_t cols,
                           uint64_t conductivity_checksum, size_t maxiter) {
    if (h.rows != rows || h.cols != cols)
        bad(path, "the checkpoint is of a " + std::to_string(h.rows) + " x " + std::to_string(h.cols) +
                      " grid but -n " + std::to_string(rows) + " -m " + std::to_string(cols) + " were given");
    if (h.conductivity_checksum != conductivity_checksum)
        bad(path, "the checkpoint was made with other conductivities than this run's (-c)");
    if (h.iteration >= maxiter)
        bad(path, "the checkpoint is at iteration " + std::to_string(h.iteration) + " and -i " +
                      std::to_string(maxiter) + " leaves nothing to do");
}

void HeatCheckpoints::prepare(size_t rows, size_t cols, size_t maxiter,
                              const std::vector<double> &conductivity, std::vector<double> &temperature,
                              gpk_heat_params &params) {
    if (!writing() && resume_path_.empty()) return;
    header_.rows = rows;
    header_.cols = cols;
    header_.conductivity_checksum = field_checksum(conductivity.data(), rows, cols, 0);
    if (!resume_path_.empty()) {
        Checkpoint cp = read_checkpoint(resume_path_);
        check_checkpoint_fits(resume_path_, cp.header, rows, cols, header_.conductivity_checksum, maxiter);
        temperature = std::move(cp.grid);
        fixed_rows_ = std::move(cp.fixed_rows);
        params.start_iteration = cp.header.iteration;
    } else {
        fixed_rows_.assign(temperature.begin(), temperature.begin() + long(cols));
        fixed_rows_.insert(fixed_rows_.end(), temperature.end() - long(cols), temperature.end());
    }
    params.fixed_rows = fixed_rows_.data();
    if (writing()) params.checkpoint_interval = every_;
}

int HeatCheckpoints::save(size_t niter, double maxdiff, const double *grid) {
    grid = ranks::whole_grid(grid, header_.rows, header_.cols, gathered_); // a rank's block under mpirun
    if (!grid) return 0;                                                   // rank 0 writes the file
    CheckpointHeader h = header_;
    h.iteration = niter;
    h.maxdiff = maxdiff;
    try {
        write_checkpoint(path_, h, fixed_rows_.data(), grid);
        return 0;
    } catch (const Failure &e) {
        error_ = e.what();
        return 1;
    }
}

void HeatCheckpoints::rethrow() const {
    if (!error_.empty()) throw Failure(error_);
}

} // namespace gpkcli
