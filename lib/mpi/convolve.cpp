// gpk_mpi_convolve: each rank convolves its block of rows widened by the filter's reach. The rows it lacks
// come from their owners in one all-to-all (neighbours, or several ranks where blocks are thinner than the
// reach; for wrap, the rows of the image's other end). Rows beyond the image's top and bottom are not
// made up: a block that reaches an edge of the image starts or ends there, so the backend applies the
// border rule there as it does to the whole image. Min/max normalisation takes the range over the own
// rows of every rank, agreed on in an all-reduce while the backend waits between its two passes
// (gpk_internal_convolve's range callback). A block in device memory, without min/max normalisation, is
// convolved where it is (convolve_in_place): only the reach rows and the block's first and last rows move.
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

// The context's device scratch (gpk_internal_device_scratch), kept between calls.
unsigned char *device_scratch(gpk_context *ctx, size_t bytes) {
    void *p = nullptr;
    if (gpk_internal_device_scratch(ctx, bytes, &p) != GPK_OK)
        throw Error(GPK_ERR_OUT_OF_MEMORY, gpk_context_last_error(ctx));
    return static_cast<unsigned char *>(p);
}

// Rows of `width` bytes: through the context (gpk_internal_copy_rows) where either side is in device memory
// (`device`), else by memcpy.
void copy_rows(gpk_context *ctx, bool device, void *dst, size_t dst_pitch, const void *src, size_t src_pitch,
               size_t width, size_t rows) {
    if (!device) {
        for (size_t i = 0; i < rows; ++i)
            std::memcpy(static_cast<unsigned char *>(dst) + i * dst_pitch,
                        static_cast<const unsigned char *>(src) + i * src_pitch, width);
        return;
    }
    if (gpk_internal_copy_rows(ctx, dst, dst_pitch, src, src_pitch, width, rows) != GPK_OK)
        throw Error(GPK_ERR_DEVICE, gpk_context_last_error(ctx));
}

void convolve_call(gpk_context *ctx, const gpk_convolve_params &params, const gpk_image &in,
                   const void *in_data, const gpk_image &out, void *out_data) {
    const gpk_status s =
        gpk_internal_convolve(ctx, &params, &in, in_data, &out, out_data, 0, SIZE_MAX, nullptr, nullptr);
    if (s != GPK_OK) throw Error(s, gpk_context_last_error(ctx));
}

// A block in device memory convolved where it is (without a min/max range over the ranks): the block as an
// image of its own, whose rows but the first and last `reach` read only rows of the block; then those rows
// again from two small images, the `above` reach rows and the block's first 2 * reach rows (the block's
// last 2 * reach rows and the `below` reach rows), their results copied over the block's. Every output
// row is made from the same input rows as in the whole image, by the same pass functions, so it has the
// same bits; nothing of the block is copied but those rows. place(k0, k1, to, true) packs reach rows
// [k0, k1) (`above` rows, the block's, `below` rows) at `to` in device memory.
template <class Place>
void convolve_in_place(Team &team, gpk_context *ctx, const gpk_convolve_params &params, const gpk_image &in,
                       const void *in_data, const gpk_image &out, void *out_data, size_t reach, size_t above,
                       size_t below, Place &&place) {
    const size_t count = in.height;
    const size_t in_row = in.width * in.channels * gpk_dtype_size(in.dtype),
                 out_row = out.width * out.channels * gpk_dtype_size(out.dtype);
    const size_t out_stride = out.stride ? out.stride : out_row;
    team.step([&] {
        convolve_call(ctx, params, in, in_data, out, out_data);
        const size_t top = above ? above + 2 * reach : 0, bottom = below ? below + 2 * reach : 0;
        if (!top && !bottom) return;
        unsigned char *in_top = device_scratch(ctx, (top + bottom) * (in_row + out_row));
        unsigned char *in_bottom = in_top + top * in_row, *out_top = in_bottom + bottom * in_row,
                      *out_bottom = out_top + top * out_row;
        gpk_image edge_in = in, edge_out = out;
        edge_in.stride = edge_out.stride = 0;
        auto *dst = static_cast<unsigned char *>(out_data);
        if (top) {
            place(0, top, in_top, true);
            edge_in.height = edge_out.height = top;
            convolve_call(ctx, params, edge_in, in_top, edge_out, out_top);
            copy_rows(ctx, true, dst, out_stride, out_top + above * out_row, out_row, out_row, reach);
        }
        if (bottom) {
            const size_t first = above + count - 2 * reach;
            place(first, first + bottom, in_bottom, true);
            edge_in.height = edge_out.height = bottom;
            convolve_call(ctx, params, edge_in, in_bottom, edge_out, out_bottom);
            copy_rows(ctx, true, dst + (count - reach) * out_stride, out_stride, out_bottom + reach * out_row,
                      out_row, out_row, reach);
        }
    });
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

    // A block in device memory stays there: only the rows the neighbours need (and theirs) cross to the
    // host for the all-to-all, in runs of consecutive rows.
    const bool in_dev = gpk_internal_on_device(ctx, in_data) != 0,
               out_dev = gpk_internal_on_device(ctx, out_data) != 0;
    const auto *src = static_cast<const unsigned char *>(in_data);
    std::vector<unsigned char> sent, received;
    team.step([&] {
        if (in_row > size_t(INT_MAX)) fail(GPK_ERR_UNSUPPORTED, "a row of more than 2^31 - 1 bytes");
        sent.resize(send_rows.size() * in_row);
        received.resize(size_t(recv_displs.back() + recv_counts.back()) * in_row);
        for (size_t k = 0; k < send_rows.size();) {
            size_t run = 1;
            while (k + run < send_rows.size() && send_rows[k + run] == send_rows[k] + run) ++run;
            const unsigned char *first = src + (send_rows[k] - block.begin) * in_stride;
            copy_rows(ctx, in_dev, &sent[k * in_row], in_row, first, in_stride, in_row, run);
            k += run;
        }
    });
    RowType row(in_row);
    MPI_Alltoallv(sent.data(), send_counts.data(), send_displs.data(), row.type, received.data(),
                  recv_counts.data(), recv_displs.data(), row.type, team.comm());
    // Where each reach row is: the block's own row (also where wrap repeats it), or its place among the
    // rows that arrived, source by source.
    std::vector<const unsigned char *> where(mine.size());
    std::vector<char> own(mine.size());
    {
        std::vector<size_t> next(size_t(size), 0);
        for (size_t k = 0; k < mine.size(); ++k) {
            const size_t g = mine[k];
            own[k] = g >= block.begin && g < block.begin + block.count;
            if (own[k]) {
                where[k] = src + (g - block.begin) * in_stride;
            } else {
                const size_t r = size_t(owner(block, g));
                where[k] = &received[(size_t(recv_displs[r]) + next[r]++) * in_row];
            }
        }
    }
    // Reach rows [k0, k1) packed at `to` (host or device memory), runs of rows consecutive at their source
    // in one copy.
    auto place = [&](size_t k0, size_t k1, unsigned char *to, bool to_device) {
        for (size_t k = k0; k < k1;) {
            const size_t pitch = own[k] ? in_stride : in_row;
            size_t run = 1;
            while (k + run < k1 && own[k + run] == own[k] && where[k + run] == where[k] + run * pitch) ++run;
            copy_rows(ctx, to_device || in_dev, to + (k - k0) * in_row, in_row, where[k], pitch, in_row, run);
            k += run;
        }
    };
    const size_t own_at = wrap ? reach : std::min(block.begin, reach); // the block's first row in `mine`
    const size_t below = mine.size() - own_at - block.count;           // reach rows after the block
    const bool minmax = params->normalize == GPK_NORMALIZE_MINMAX;
    if (in_dev && out_dev && !minmax && block.count >= 2 * reach) {
        convolve_in_place(team, ctx, *params, *in, in_data, *out, out_data, reach, own_at, below, place);
        return;
    }

    // Else the block widened by the reach rows, convolved whole, its own rows copied out: device buffers
    // (the context's scratch) where either side is in device memory.
    std::vector<unsigned char> ext_in_host, ext_out_host;
    unsigned char *ext_in = nullptr, *ext_out = nullptr;
    const bool dev = in_dev || out_dev;
    team.step([&] {
        if (dev) {
            unsigned char *scratch = device_scratch(ctx, mine.size() * (in_row + out_row));
            ext_in = scratch;
            ext_out = scratch + mine.size() * in_row;
        } else {
            ext_in_host.resize(mine.size() * in_row);
            ext_out_host.resize(mine.size() * out_row);
            ext_in = ext_in_host.data();
            ext_out = ext_out_host.data();
        }
        place(0, mine.size(), ext_in, dev);
    });
    gpk_image ext_in_image = *in, ext_out_image = *out;
    ext_in_image.height = ext_out_image.height = mine.size();
    ext_in_image.stride = ext_out_image.stride = 0;
    RangeVote vote{&team};
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
        copy_rows(ctx, dev, out_data, out_stride, &ext_out[own_at * out_row], out_row, out_row, block.count);
    });
}

} // namespace gpk::mpi
