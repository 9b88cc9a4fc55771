// gpk_mpi_convolve: each rank convolves its block of rows; the rows of the others within the filter's
// reach (the halo) come from their owners in one all-to-all (neighbours, or several ranks where blocks are
// thinner than the reach; for wrap, the rows of the image's other end). Rows beyond the image's top and
// bottom are not made up: a block that reaches an edge of the image starts or ends there, so the backend
// applies the border rule there as it does to the whole image. The bookkeeping is of the halo rows alone
// (at most 2 * reach a rank), never of the block's rows, so that a call costs no more than its backend
// call whatever the block's height.
//
// A block at least 2 * reach rows high, without min/max normalisation, is convolved where it is
// (convolve_in_place): the block as an image of its own, whose rows but the first and last `reach` read
// only rows of the block, then those rows again from one small image stacking the halo above with the
// block's first 2 * reach rows, and the block's last 2 * reach rows with the halo below. On the device the
// block's call is queued and the exchange runs on the host meanwhile. Otherwise (min/max takes its range
// over the own rows of every rank, agreed on in an all-reduce while the backend waits between its two
// passes: gpk_internal_convolve's range callback) the block widened by its halo is convolved whole.
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

// The rows of the whole image just outside a block [begin, begin + count), `reach` above it and below it in
// order, clipped to the image, or taken around it for wrap (rows of the block itself where the image is
// shorter than the block and its reach).
struct Halo {
    std::vector<size_t> above, below;
};

Halo halo_of(size_t begin, size_t count, size_t height, size_t reach, bool wrap) {
    Halo h;
    const long long h_ = (long long)height;
    auto add = [&](std::vector<size_t> &rows, long long lo, long long hi) {
        for (long long i = lo; i < hi; ++i) {
            if (wrap)
                rows.push_back(size_t(((i % h_) + h_) % h_));
            else if (i >= 0 && i < h_)
                rows.push_back(size_t(i));
        }
    };
    add(h.above, (long long)begin - (long long)reach, (long long)begin);
    add(h.below, (long long)(begin + count), (long long)(begin + count + reach));
    return h;
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

// The context's scratch memory kept between calls: device (gpk_internal_device_scratch) or host,
// page-locked on a device's context (gpk_internal_host_scratch).
unsigned char *scratch(gpk_context *ctx, bool device, size_t bytes) {
    void *p = nullptr;
    check_ok(device ? gpk_internal_device_scratch(ctx, bytes, &p) : gpk_internal_host_scratch(ctx, bytes, &p),
             ctx);
    return static_cast<unsigned char *>(p);
}

// How rows move: by memcpy between host rows, or through the context where either side is in device
// memory: the copy done on return (device), queued behind the context's work (queued), or queued on the
// context's stream beside it (aside: gpk_internal_aside orders it).
enum class Move { host, device, queued, aside };

void copy_rows(gpk_context *ctx, Move how, void *dst, size_t dst_pitch, const void *src, size_t src_pitch,
               size_t width, size_t rows) {
    if (rows == 0) return;
    if (how == Move::host) {
        if (dst_pitch == width && src_pitch == width) {
            std::memcpy(dst, src, width * rows);
            return;
        }
        for (size_t i = 0; i < rows; ++i)
            std::memcpy(static_cast<unsigned char *>(dst) + i * dst_pitch,
                        static_cast<const unsigned char *>(src) + i * src_pitch, width);
        return;
    }
    check_ok(how == Move::device ? gpk_internal_copy_rows(ctx, dst, dst_pitch, src, src_pitch, width, rows)
                                 : gpk_internal_copy_rows_queued(ctx, how == Move::aside, dst, dst_pitch, src,
                                                                 src_pitch, width, rows),
             ctx);
}

// Buffers placed one after another in one allocation start on 256-byte boundaries, as allocations do.
size_t aligned(size_t bytes) {
    return (bytes + 255) / 256 * 256;
}

struct RowType {
    MPI_Datatype type = MPI_DATATYPE_NULL;
    explicit RowType(size_t bytes) {
        MPI_Type_contiguous(int(bytes), MPI_BYTE, &type);
        MPI_Type_commit(&type);
    }
    ~RowType() { MPI_Type_free(&type); }
};

// One rank's part of the call once the parameters are agreed on: the block, its halo, where each halo row
// comes from and goes to.
class Convolution {
public:
    Convolution(Team &team, gpk_context *ctx, const gpk_convolve_params &params, size_t height,
                const Block &block, const gpk_image &in, const void *in_data, const gpk_image &out,
                void *out_data, size_t reach)
        : team_(team), ctx_(ctx), params_(params), block_(block), in_(in), out_(out),
          src_(static_cast<const unsigned char *>(in_data)), dst_(static_cast<unsigned char *>(out_data)),
          reach_(reach), in_row_(in.width * in.channels * gpk_dtype_size(in.dtype)),
          out_row_(out.width * out.channels * gpk_dtype_size(out.dtype)),
          in_stride_(in.stride ? in.stride : in_row_), out_stride_(out.stride ? out.stride : out_row_) {
        const bool wrap = params.border == GPK_BORDER_WRAP;
        halo_ = halo_of(block.begin, block.count, height, reach, wrap);
        above_ = halo_.above.size();
        below_ = halo_.below.size();
        // Rows of this block in the others' halos, grouped by destination in the order of their halos; and
        // how many of this block's halo rows each rank sends, in the order of this block's halo.
        const int size = team.size(), me = team.rank();
        send_counts_.assign(size_t(size), 0);
        recv_counts_.assign(size_t(size), 0);
        for (int r = 0; r < size; ++r) {
            if (r == me) continue;
            const Halo theirs =
                halo_of(block.begins[size_t(r)], block.counts[size_t(r)], height, reach, wrap);
            for (const auto *side : {&theirs.above, &theirs.below})
                for (size_t g : *side)
                    if (own(g)) {
                        send_rows_.push_back(g);
                        ++send_counts_[size_t(r)];
                    }
        }
        for (const auto *side : {&halo_.above, &halo_.below})
            for (size_t g : *side)
                if (!own(g)) ++recv_counts_[size_t(owner(block, g))];
        send_displs_.assign(size_t(size), 0);
        recv_displs_.assign(size_t(size), 0);
        for (size_t r = 1; r < size_t(size); ++r) {
            send_displs_[r] = send_displs_[r - 1] + send_counts_[r - 1];
            recv_displs_[r] = recv_displs_[r - 1] + recv_counts_[r - 1];
        }
        in_dev_ = gpk_internal_on_device(ctx, in_data) != 0;
        out_dev_ = gpk_internal_on_device(ctx, out_data) != 0;
    }

    void run() {
        const bool minmax = params_.normalize == GPK_NORMALIZE_MINMAX;
        const size_t sent = send_rows_.size() * in_row_,
                     received = size_t(recv_displs_.back() + recv_counts_.back()) * in_row_;
        const bool in_place = !minmax && block_.count >= 2 * reach_;
        // The stacked image of convolve_in_place (rows above, then below).
        stack_top_ = in_place && above_ ? above_ + 2 * reach_ : 0;
        stack_bottom_ = in_place && below_ ? below_ + 2 * reach_ : 0;
        const size_t stack_rows = stack_top_ + stack_bottom_;
        const size_t stack = aligned(stack_rows * in_row_) + stack_rows * out_row_;
        // The rows sent are copied out beside the block's call, so that the exchange runs while the block is
        // convolved. Where both images are in device memory the block's call is queued first (its copies
        // aside wait only for what the caller queued before); a call on host memory returns once done, so
        // the rows go out before it.
        Outcome o = capture([&] {
            if (in_row_ > size_t(INT_MAX)) fail(GPK_ERR_UNSUPPORTED, "a row of more than 2^31 - 1 bytes");
            // Host scratch: the rows sent, the rows received, and the stacked image of host blocks.
            const size_t host_bytes = aligned(sent + received) + (dev() ? 0 : stack);
            unsigned char *host = host_bytes ? scratch(ctx_, false, host_bytes) : nullptr;
            sent_ = host;
            received_ = host + sent;
            stack_in_ = host + aligned(sent + received);
            if (dev()) aside(0); // after what the caller queued on the context
            auto block_call = [&] {
                queued_ = true;
                check_ok(gpk_internal_convolve_queued(ctx_, &params_, &in_, src_, &out_, dst_), ctx_);
            };
            const bool call_first = in_place && in_dev_ && out_dev_;
            if (call_first) block_call();
            // Runs of consecutive rows in one copy each.
            for (size_t k = 0; k < send_rows_.size();) {
                size_t run = 1;
                while (k + run < send_rows_.size() && send_rows_[k + run] == send_rows_[k] + run) ++run;
                copy_rows(ctx_, in_dev_ ? Move::aside : Move::host, sent_ + k * in_row_, in_row_,
                          src_ + (send_rows_[k] - block_.begin) * in_stride_, in_stride_, in_row_, run);
                k += run;
            }
            if (in_place && !call_first) block_call();
            if (in_dev_ && !send_rows_.empty()) aside(2);
        });
        try {
            team_.agree(o);
        } catch (...) {
            settle(); // nothing of this call runs on once it has returned
            throw;
        }
        if (in_place)
            convolve_in_place();
        else
            convolve_widened(minmax);
    }

private:
    bool own(size_t g) const { return g >= block_.begin && g < block_.begin + block_.count; }
    bool dev() const { return in_dev_ || out_dev_; }
    void aside(int how) { check_ok(gpk_internal_aside(ctx_, how), ctx_); }
    // Waits for what this call queued; its outcome.
    Outcome settle() {
        return queued_ || dev() ? outcome_of(gpk_context_synchronize(ctx_), ctx_) : Outcome{};
    }

    void exchange() {
        RowType row(in_row_);
        MPI_Alltoallv(sent_, send_counts_.data(), send_displs_.data(), row.type, received_,
                      recv_counts_.data(), recv_displs_.data(), row.type, team_.comm());
        // Where each halo row is: the block's own row (where wrap repeats it), or its place among the rows
        // that arrived, source by source.
        std::vector<size_t> next(size_t(team_.size()), 0);
        where_.clear();
        for (const auto *side : {&halo_.above, &halo_.below})
            for (size_t g : *side) {
                if (own(g)) {
                    where_.push_back({src_ + (g - block_.begin) * in_stride_, true});
                } else {
                    const size_t r = size_t(owner(block_, g));
                    where_.push_back({received_ + (size_t(recv_displs_[r]) + next[r]++) * in_row_, false});
                }
            }
    }

    // Rows [k0, k1) of the block widened by its halo (the rows above, the block's, the rows below) packed
    // at `to` (device memory where a side of the call is, else host), runs of rows consecutive at their
    // source in one copy each; on the device, queued aside (the caller joins them).
    void place(size_t k0, size_t k1, unsigned char *to) {
        const Move how = dev() ? Move::aside : Move::host;
        const size_t first_own = above_, end_own = above_ + block_.count;
        for (size_t k = k0; k < k1;) {
            const unsigned char *from;
            size_t pitch, run = 1;
            if (k >= first_own && k < end_own) { // the block's rows: one run
                from = src_ + (k - first_own) * in_stride_;
                pitch = in_stride_;
                run = std::min(k1, end_own) - k;
            } else {
                const size_t e = k < first_own ? k : k - block_.count, end = k < first_own ? first_own : k1;
                from = where_[e].at;
                pitch = where_[e].own ? in_stride_ : in_row_;
                while (k + run < std::min(k1, end) && where_[e + run].own == where_[e].own &&
                       where_[e + run].at == from + run * pitch)
                    ++run;
            }
            copy_rows(ctx_, how, to + (k - k0) * in_row_, in_row_, from, pitch, in_row_, run);
            k += run;
        }
    }

    // The block convolved where it is, as an image of its own (queued in run(), where it is in device
    // memory); while it runs, the exchange; then the one stacked image: the rows above with the block's first
    // 2 * reach rows, and the block's last 2 * reach rows with the rows below, each part's middle `reach`
    // output rows read only rows of its own part (where a part ends at the image's top or bottom, the border
    // rule applies there as in the whole image), and are copied over the block's first and last `reach` rows.
    // Every output row is made from the same input rows as in the whole image, by the same pass
    // functions, so it has the same bits. Rows the block's call has written wrong are written again
    // after it (in the order of the context's stream); the output's other rows are not touched again.
    void convolve_in_place() {
        exchange();
        Outcome o = capture([&] { edges(); });
        // Nothing is left queued on return, failed or not: the caller's memory and the scratch are free.
        const Outcome done = settle();
        team_.agree(o.failed() ? o : done);
    }

    void edges() {
        const size_t rows = stack_top_ + stack_bottom_;
        if (!rows) return;
        unsigned char *stack_in =
            dev() ? scratch(ctx_, true, aligned(rows * in_row_) + rows * out_row_) : stack_in_;
        unsigned char *stack_out = stack_in + aligned(rows * in_row_);
        if (stack_top_) place(0, stack_top_, stack_in);
        if (stack_bottom_) {
            const size_t first = above_ + block_.count - 2 * reach_;
            place(first, first + stack_bottom_, stack_in + stack_top_ * in_row_);
        }
        if (dev()) aside(1);
        gpk_image stack_in_image = in_, stack_out_image = out_;
        stack_in_image.height = stack_out_image.height = rows;
        stack_in_image.stride = stack_out_image.stride = 0;
        check_ok(gpk_internal_convolve_queued(ctx_, &params_, &stack_in_image, stack_in, &stack_out_image,
                                              stack_out),
                 ctx_);
        const Move how = dev() ? Move::queued : Move::host;
        if (stack_top_)
            copy_rows(ctx_, how, dst_, out_stride_, stack_out + above_ * out_row_, out_row_, out_row_,
                      reach_);
        if (stack_bottom_)
            copy_rows(ctx_, how, dst_ + (block_.count - reach_) * out_stride_, out_stride_,
                      stack_out + (stack_top_ + reach_) * out_row_, out_row_, out_row_, reach_);
    }

    // The block widened by its halo, convolved whole, its own rows copied out: device buffers (the
    // context's scratch) where either side is in device memory. Min/max normalisation takes the range of
    // the own rows that every rank agrees on. The collectives are those of convolve_in_place but the
    // range's: a rank may take either path.
    void convolve_widened(bool minmax) {
        exchange();
        const size_t rows = above_ + block_.count + below_;
        std::vector<unsigned char> ext_in_host, ext_out_host;
        unsigned char *ext_in = nullptr, *ext_out = nullptr;
        Outcome o = capture([&] {
            if (dev()) {
                ext_in = scratch(ctx_, true, aligned(rows * in_row_) + rows * out_row_);
                ext_out = ext_in + aligned(rows * in_row_);
            } else {
                ext_in_host.resize(rows * in_row_);
                ext_out_host.resize(rows * out_row_);
                ext_in = ext_in_host.data();
                ext_out = ext_out_host.data();
            }
            place(0, rows, ext_in);
            if (dev()) aside(1);
        });
        gpk_image ext_in_image = in_, ext_out_image = out_;
        ext_in_image.height = ext_out_image.height = rows;
        ext_in_image.stride = ext_out_image.stride = 0;
        RangeVote vote{&team_};
        if (!o.failed())
            o = outcome_of(gpk_internal_convolve(ctx_, &params_, &ext_in_image, ext_in, &ext_out_image,
                                                 ext_out, above_, above_ + block_.count,
                                                 minmax ? agree_on_range : nullptr, &vote),
                           ctx_);
        if (minmax && !vote.called) { // failed before the range: the others are waiting for it
            double lo[4] = {}, hi[4] = {};
            long long ilo[4] = {}, ihi[4] = {};
            vote.agree(true, lo, hi, ilo, ihi);
        }
        if (vote.others_failed)
            o = Outcome{}; // stopped for another rank, whose failure agree() reports
        else if (!o.failed())
            o = capture([&] {
                copy_rows(ctx_, dev() ? Move::device : Move::host, dst_, out_stride_,
                          &ext_out[above_ * out_row_], out_row_, out_row_, block_.count);
            });
        const Outcome done = settle();
        team_.agree(o.failed() ? o : done);
    }

    struct Where {
        const unsigned char *at;
        bool own; // a row of the block (rows in_stride_ apart), else one that arrived (in_row_ apart)
    };

    Team &team_;
    gpk_context *ctx_;
    const gpk_convolve_params &params_;
    const Block &block_;
    const gpk_image &in_, &out_;
    const unsigned char *src_;
    unsigned char *dst_;
    const size_t reach_, in_row_, out_row_, in_stride_, out_stride_;
    Halo halo_;
    size_t above_ = 0, below_ = 0, stack_top_ = 0, stack_bottom_ = 0;
    std::vector<size_t> send_rows_;
    std::vector<int> send_counts_, recv_counts_, send_displs_, recv_displs_;
    bool in_dev_ = false, out_dev_ = false, queued_ = false;
    unsigned char *sent_ = nullptr, *received_ = nullptr, *stack_in_ = nullptr;
    std::vector<Where> where_;
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
    gpk_filter_info info{};
    info.struct_size = sizeof info;
    std::vector<double> taps;
    const Outcome read = capture([&] {
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
    // The local checks, the parameters every rank must share and the blocks in one collective, before
    // anything is queued.
    const std::vector<uint64_t> blocks = team.open(
        read,
        {field("height", uint64_t(height)), field("in->width", uint64_t(in->width)),
         field("in->channels", uint64_t(in->channels)), field("in->dtype", uint64_t(in->dtype)),
         field("out->dtype", uint64_t(out->dtype)), field("params->border", uint64_t(params->border)),
         field("params->normalize", uint64_t(params->normalize)),
         field("params->accumulate", uint64_t(params->accumulate)),
         field("params->filter (its shape)", uint64_t(info.kh * 1000003 + info.kw * 2 + info.separable)),
         field("params->filter (its taps)", taps_hash)},
        {uint64_t(row_begin), uint64_t(in->height)});
    const Block block = check_blocks(team, height, blocks, "height");
    if (team.size() == 1) { // the block is the whole image
        team.step([&] {
            check_ok(
                gpk_internal_convolve(ctx, params, in, in_data, out, out_data, 0, SIZE_MAX, nullptr, nullptr),
                ctx);
        });
        return;
    }
    Convolution(team, ctx, *params, height, block, *in, in_data, *out, out_data, info.kh / 2).run();
}

} // namespace gpk::mpi
