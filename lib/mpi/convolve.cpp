// gpk_mpi_convolve: each rank convolves its block of rows widened by the filter's reach. The rows it lacks
// come from their owners in one all-to-all (neighbours, or several ranks where blocks are thinner than the
// reach; for wrap, the rows of the image's other end). Rows beyond the image's top and bottom are not
// made up: a block that reaches an edge of the image starts or ends there, so the backend applies the
// border rule there as it does to the whole image. Min/max normalisation takes the range over the own
// rows of every rank, agreed on in an all-reduce while the backend waits between its two passes
// (gpk_internal_convolve's range callback).
#include "mpi/convolve.hpp"

#include "engine/abi.hpp"
#include "engine/arguments.hpp"
#include "gpk_internal.h"
#include "mpi/blocks.hpp"

#include <algorithm>
#include <climits>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

namespace gpk::mpi {
namespace {

// The rows (of the whole image) a block [begin, begin + count) reads, in order: the block widened by the
// reach, clipped to the image, or taken around it for wrap.
std::vector<size_t> reach_rows(size_t begin, size_t count, size_t height, size_t reach, bool wrap) {
    std::vector<size_t> rows;
    const long long lo = (long long)begin - (long long)reach, hi = (long long)(begin + count + reach);
    const long long h = (long long)height;
    for (long long i = lo; i < hi; ++i) {
        if (wrap)
            rows.push_back(size_t(((i % h) + h) % h));
        else if (i >= 0 && i < h)
            rows.push_back(size_t(i));
    }
    return rows;
}

int owner(const Block &b, size_t row) {
    auto it = std::upper_bound(b.begins.begin(), b.begins.end(), row);
    return int(it - b.begins.begin()) - 1;
}

// The agreement on the min/max range, called by the backend between its passes (or, on a rank that failed
// before reaching it, by the layer afterwards): every rank contributes, and a failure anywhere stops all.
struct RangeVote {
    Team *team;
    bool called = false, others_failed = false;

    bool agree(bool failed, double *lo, double *hi, long long *ilo, long long *ihi) {
        called = true;
        double d[9];
        long long lo_i[4], hi_i[4];
        for (int c = 0; c < 4; ++c) {
            d[c] = lo[c];
            d[4 + c] = -hi[c];
            lo_i[c] = ilo[c];
            hi_i[c] = ihi[c];
        }
        d[8] = failed ? -1.0 : 0.0;
        MPI_Allreduce(MPI_IN_PLACE, d, 9, MPI_DOUBLE, MPI_MIN, team->comm());
        MPI_Allreduce(MPI_IN_PLACE, lo_i, 4, MPI_LONG_LONG, MPI_MIN, team->comm());
        MPI_Allreduce(MPI_IN_PLACE, hi_i, 4, MPI_LONG_LONG, MPI_MAX, team->comm());
        for (int c = 0; c < 4; ++c) {
            lo[c] = d[c];
            hi[c] = -d[4 + c];
            ilo[c] = lo_i[c];
            ihi[c] = hi_i[c];
        }
        others_failed = d[8] < 0 && !failed;
        return d[8] < 0;
    }
};

extern "C" int agree_on_range(void *user, unsigned channels, int, double *lo, double *hi, long long *ilo,
                              long long *ihi) {
    // Channels the image lacks hold the backend's identities; every rank has the same channels.
    (void)channels;
    return static_cast<RangeVote *>(user)->agree(false, lo, hi, ilo, ihi) ? 1 : 0;
}

// The caller's rows are copied here, not handed to the backend: their layout is checked here too.
void check_layout(const gpk_image &im, const void *data, const std::string &name) {
    const size_t sample = gpk_dtype_size(im.dtype), row = im.width * im.channels * sample;
    if (im.stride != 0 && (im.stride < row || im.stride % sample != 0))
        invalid(name + "->stride is " + std::to_string(im.stride) + " bytes; a row needs at least " +
                std::to_string(row) + " and a multiple of the sample size (" + std::to_string(sample) + ")");
    if (reinterpret_cast<uintptr_t>(data) % sample != 0)
        invalid(name + "_data is not aligned to the " + gpk_dtype_name(im.dtype) + " sample size");
}

// Device memory of the rank's context for the block widened by the reach, freed on the way out.
struct DeviceScratch {
    gpk_context *ctx = nullptr;
    void *p = nullptr;
    DeviceScratch(gpk_context *c, size_t bytes) : ctx(c) {
        if (gpk_internal_device_alloc(ctx, bytes, &p) != GPK_OK)
            throw Error(GPK_ERR_OUT_OF_MEMORY, gpk_context_last_error(ctx));
    }
    ~DeviceScratch() { gpk_internal_device_free(ctx, p); }
    DeviceScratch(const DeviceScratch &) = delete;
    DeviceScratch &operator=(const DeviceScratch &) = delete;
    unsigned char *get() const { return static_cast<unsigned char *>(p); }
};

// Rows between host and device memory through the context (gpk_internal_copy_rows).
void copy_rows(gpk_context *ctx, void *dst, size_t dst_pitch, const void *src, size_t src_pitch, size_t width,
               size_t rows) {
    if (gpk_internal_copy_rows(ctx, dst, dst_pitch, src, src_pitch, width, rows) != GPK_OK)
        throw Error(GPK_ERR_DEVICE, gpk_context_last_error(ctx));
}

struct RowType {
    MPI_Datatype type = MPI_DATATYPE_NULL;
    explicit RowType(size_t bytes) {
        MPI_Type_contiguous(int(bytes), MPI_BYTE, &type);
        MPI_Type_commit(&type);
    }
    ~RowType() { MPI_Type_free(&type); }
};

} // namespace

void convolve(Team &team, gpk_context *ctx, const gpk_convolve_params *caller_params, size_t height,
              size_t row_begin, const gpk_image *caller_in, const void *in_data, const gpk_image *caller_out,
              void *out_data) {
    // The caller's structs in this library's layout (engine/abi.hpp).
    gpk_convolve_params params_read{};
    gpk_image in_read{}, out_read{};
    const gpk_convolve_params *params = &params_read;
    const gpk_image *in = &in_read, *out = &out_read;
    gpk_filter_info info;
    info.struct_size = sizeof info;
    std::vector<double> taps;
    team.step([&] {
        require(ctx, "ctx");
        params_read = gpk::abi::read(caller_params, "params");
        require(params->filter, "params->filter");
        in_read = gpk::abi::read(caller_in, "in");
        out_read = gpk::abi::read(caller_out, "out");
        require(in_data, "in_data");
        require(out_data, "out_data");
        if (in->height != out->height)
            invalid("in->height (" + std::to_string(in->height) + ") and out->height (" +
                    std::to_string(out->height) + ") differ; both are this rank's rows");
        if (gpk_dtype_size(in->dtype) == 0 || gpk_dtype_size(out->dtype) == 0) invalid("unknown dtype");
        if (in->width == 0 || in->channels < 1 || in->channels > 4)
            invalid("in->width must be >= 1 and in->channels 1..4");
        check_layout(*in, in_data, "in");
        check_layout(*out, out_data, "out");
        gpk_filter_get_info(&info, params->filter);
        taps.resize(info.separable ? info.kh + info.kw : info.kh * info.kw);
        gpk_filter_get_taps(taps.data(), taps.size(), params->filter);
    });
    uint64_t taps_hash = 0xcbf29ce484222325ull;
    for (double t : taps) {
        uint64_t w;
        std::memcpy(&w, &t, sizeof w);
        taps_hash = (taps_hash ^ w) * 0x100000001b3ull;
    }
    team.check_same(
        {field("height", uint64_t(height)), field("in->width", uint64_t(in->width)),
         field("in->channels", uint64_t(in->channels)), field("in->dtype", uint64_t(in->dtype)),
         field("out->dtype", uint64_t(out->dtype)), field("params->border", uint64_t(params->border)),
         field("params->normalize", uint64_t(params->normalize)),
         field("params->accumulate", uint64_t(params->accumulate)),
         field("params->filter (its shape)", uint64_t(info.kh * 1000003 + info.kw * 2 + info.separable)),
         field("params->filter (its taps)", taps_hash)});
    const Block block = check_blocks(team, height, row_begin, in->height, "height");
    const size_t reach = info.kh / 2;
    const bool wrap = params->border == GPK_BORDER_WRAP;
    const size_t in_row = in->width * in->channels * gpk_dtype_size(in->dtype);
    const size_t out_row = out->width * out->channels * gpk_dtype_size(out->dtype);
    const size_t in_stride = in->stride ? in->stride : in_row,
                 out_stride = out->stride ? out->stride : out_row;

    // Where each rank's reach rows come from: counts and displacements of the all-to-all, in rows.
    const std::vector<size_t> mine = reach_rows(block.begin, block.count, height, reach, wrap);
    const int size = team.size(), me = team.rank();
    std::vector<int> send_counts(size_t(size), 0), recv_counts(size_t(size), 0);
    std::vector<size_t> send_rows; // rows of this rank's block the others need, grouped by destination
    for (int r = 0; r < size; ++r) {
        for (size_t g : reach_rows(block.begins[size_t(r)], block.counts[size_t(r)], height, reach, wrap)) {
            const bool own_of_r =
                g >= block.begins[size_t(r)] && g < block.begins[size_t(r)] + block.counts[size_t(r)];
            if (own_of_r || owner(block, g) != me) continue;
            send_rows.push_back(g);
            ++send_counts[size_t(r)];
        }
    }
    for (size_t g : mine) // rows of other blocks arrive from their owners, in the order `mine` lists them
        if (g < block.begin || g >= block.begin + block.count) ++recv_counts[size_t(owner(block, g))];
    std::vector<int> send_displs(size_t(size), 0), recv_displs(size_t(size), 0);
    for (int r = 0; r < size; ++r) {
        if (r > 0) {
            send_displs[size_t(r)] = send_displs[size_t(r) - 1] + send_counts[size_t(r) - 1];
            recv_displs[size_t(r)] = recv_displs[size_t(r) - 1] + recv_counts[size_t(r) - 1];
        }
    }

    // A block in device memory stays there: the widened block and its result are device buffers, and only
    // the rows the neighbours need (and theirs) cross to the host for the all-to-all.
    const bool in_dev = gpk_internal_on_device(ctx, in_data) != 0,
               out_dev = gpk_internal_on_device(ctx, out_data) != 0;
    std::vector<unsigned char> ext_in_host, ext_out_host, sent, received;
    std::unique_ptr<DeviceScratch> ext_in_dev, ext_out_dev;
    const auto *src = static_cast<const unsigned char *>(in_data);
    team.step([&] {
        if (in_row > size_t(INT_MAX)) fail(GPK_ERR_UNSUPPORTED, "a row of more than 2^31 - 1 bytes");
        if (in_dev)
            ext_in_dev = std::make_unique<DeviceScratch>(ctx, mine.size() * in_row);
        else
            ext_in_host.resize(mine.size() * in_row);
        if (out_dev)
            ext_out_dev = std::make_unique<DeviceScratch>(ctx, mine.size() * out_row);
        else
            ext_out_host.resize(mine.size() * out_row);
        sent.resize(send_rows.size() * in_row);
        received.resize(size_t(recv_displs.back() + recv_counts.back()) * in_row);
        for (size_t k = 0; k < send_rows.size(); ++k) {
            const unsigned char *row = src + (send_rows[k] - block.begin) * in_stride;
            if (in_dev)
                copy_rows(ctx, &sent[k * in_row], in_row, row, in_stride, in_row, 1);
            else
                std::memcpy(&sent[k * in_row], row, in_row);
        }
    });
    unsigned char *ext_in = in_dev ? ext_in_dev->get() : ext_in_host.data();
    unsigned char *ext_out = out_dev ? ext_out_dev->get() : ext_out_host.data();
    RowType row(in_row);
    MPI_Alltoallv(sent.data(), send_counts.data(), send_displs.data(), row.type, received.data(),
                  recv_counts.data(), recv_displs.data(), row.type, team.comm());
    // The reach rows in order: the block's own from the input (also where wrap repeats them), the others
    // as they arrived, source by source; runs of consecutive own rows in one copy.
    team.step([&] {
        std::vector<size_t> next(size_t(size), 0);
        for (size_t k = 0; k < mine.size();) {
            const size_t g = mine[k];
            if (g >= block.begin && g < block.begin + block.count) {
                size_t run = 1;
                while (k + run < mine.size() && mine[k + run] == g + run &&
                       g + run < block.begin + block.count)
                    ++run;
                const unsigned char *first = src + (g - block.begin) * in_stride;
                if (in_dev)
                    copy_rows(ctx, &ext_in[k * in_row], in_row, first, in_stride, in_row, run);
                else
                    for (size_t i = 0; i < run; ++i)
                        std::memcpy(&ext_in[(k + i) * in_row], first + i * in_stride, in_row);
                k += run;
                continue;
            }
            const size_t r = size_t(owner(block, g));
            const unsigned char *arrived = &received[(size_t(recv_displs[r]) + next[r]++) * in_row];
            if (in_dev)
                copy_rows(ctx, &ext_in[k * in_row], in_row, arrived, in_row, in_row, 1);
            else
                std::memcpy(&ext_in[k * in_row], arrived, in_row);
            ++k;
        }
    });
    const size_t own_at = wrap ? reach : std::min(block.begin, reach); // the block's first row in `mine`

    gpk_image ext_in_image = *in, ext_out_image = *out;
    ext_in_image.height = ext_out_image.height = mine.size();
    ext_in_image.stride = ext_out_image.stride = 0;
    RangeVote vote{&team};
    const bool minmax = params->normalize == GPK_NORMALIZE_MINMAX;
    Outcome o =
        outcome_of(gpk_internal_convolve(ctx, params, &ext_in_image, ext_in, &ext_out_image, ext_out, own_at,
                                         own_at + block.count, minmax ? agree_on_range : nullptr, &vote),
                   ctx);
    if (minmax && !vote.called) { // failed before the range: the others are waiting for it
        double lo[4] = {}, hi[4] = {};
        long long ilo[4] = {}, ihi[4] = {};
        vote.agree(true, lo, hi, ilo, ihi);
    }
    if (vote.others_failed) o = Outcome{}; // stopped for another rank, whose failure agree() reports
    team.agree(o);
    team.step([&] {
        if (in_dev || out_dev)
            copy_rows(ctx, out_data, out_stride, &ext_out[own_at * out_row], out_row, out_row, block.count);
        else
            for (size_t i = 0; i < block.count; ++i)
                std::memcpy(static_cast<unsigned char *>(out_data) + i * out_stride,
                            &ext_out[(own_at + i) * out_row], out_row);
    });
}

} // namespace gpk::mpi
