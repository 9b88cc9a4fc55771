// The CUDA backend's heat slab (engine/heat_slab.hpp) for libgpk_mpi: the rank's rows stay on the device
// between passes and are advanced by the whole-grid solver's own pass kernel, chosen the same way
// (pass.cuh: the one instantiation of each kernel, its shared memory limit set on the pointer
// launched), launched on a range of rows. Passes are enqueued, never waited for between them: the host
// reads a pass's maxdiffs (one small copy per pass) while the next one runs, and three grids in turn keep
// the sources of the last two passes, so that the pass launched beyond the end of a run can be dropped
// (back()). With a halo exchange, the edge rows (the first and last `depth` own rows) run on a stream of
// high priority beside the rows between, on the main stream: their blocks go first, and the GPU stays
// full while they are sent on a third stream (copies) and the received rows land in the result's halo
// rows. Between passes only events order the streams: a pass's edges wait for the whole previous
// pass and its received rows, its rows between for the previous pass's edges. The launches leave their
// blocks' per-level maxima in pinned host memory, in a set of the pass's parity, and the host folds them
// once the pass is done: nothing runs on the main stream between two passes' rows.
//
// A side's rows travel by its path (HaloPath). host: to pinned buffers, handed to the exchange on the host
// once copied. device: to device buffers for a CUDA-aware MPI. peer (CUDA IPC): the slab offers its grids
// and two interprocess events; a neighbour that opened them copies its rows straight into the halo rows of
// this slab's grid of the same index (the ranks pass in step, so it is the grid this slab's pass writes)
// and records its event of the pass's parity; the exchange then carries only a notice, after which this
// slab's copy stream waits on that event. The host does not wait for the rows it sends on a peer side.
// The neighbour's rows of pass p land in the grid that was the source of pass p - 2 here; it sends them
// after its edges of pass p, which wait for this slab's rows of pass p - 1, which follow this slab's whole
// pass p - 2: no halo row is overwritten while it is read. On the host paths the host waits for the rows
// it sends, so the copy stream has read the pinned buffers of the pass before when the exchange fills
// them again. The copy stream and the edges' stream have the highest priority: a copy between device
// buffers is a kernel, and the edges' rows and their copies go ahead of the rows between, whose blocks
// fill the device.
#include "cuda/device_context.cuh"
#include "cuda/heat/pass.cuh"
#include "cuda/heat/slab.cuh"
#include "engine/error.hpp"

#include "cuda/pointer.cuh"
#include "engine/test_hooks.hpp"
#include "engine/validate.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

namespace gpk::cuda {
namespace {

constexpr int kLaunches = 3; // top edge, rows between, bottom edge

// What a slab offers its neighbours (peer_offer), read by peer_accept in the neighbour's process.
struct PeerOffer {
    char magic[8];
    char bus_id[32];                // the slab's device (cudaDeviceGetPCIBusId)
    unsigned long long depth, cols; // halos of depth rows of cols doubles
    unsigned long long rows, pitch; // the slab's grids: kGrids of rows x pitch doubles, one after the other
    cudaIpcMemHandle_t grids;
    cudaIpcEventHandle_t events[2]; // recorded after the slab's own copies of a pass of each parity
};
constexpr char kOfferMagic[8] = {'g', 'p', 'k', 's', 'l', 'a', 'b', '2'};

// A CUDA call of the link set-up: false (the error kept in *why, the error state cleared) where it failed.
bool link_call(cudaError_t e, const char *what, std::string *why) {
    if (e == cudaSuccess) return true;
    cudaGetLastError();
    *why = std::string(what) + ": " + cudaGetErrorName(e) + " (" + cudaGetErrorString(e) + ")";
    return false;
}

// An event other processes can open and wait on.
class IpcEvent {
public:
    IpcEvent() = default;
    ~IpcEvent() { reset(); }
    IpcEvent(const IpcEvent &) = delete;
    IpcEvent &operator=(const IpcEvent &) = delete;
    bool create(std::string *why) {
        return link_call(cudaEventCreateWithFlags(&event_, cudaEventDisableTiming | cudaEventInterprocess),
                         "cudaEventCreateWithFlags (interprocess)", why);
    }
    void reset() {
        if (event_) cudaEventDestroy(event_);
        event_ = nullptr;
    }
    cudaEvent_t get() const { return event_; }
    cudaEvent_t *out() { return &event_; }

private:
    cudaEvent_t event_ = nullptr;
};

// A neighbour's grids and events, opened in this process.
struct PeerLink {
    double *grids = nullptr; // the neighbour's cells_
    size_t rows = 0;         // its slab's rows
    IpcEvent events[2];
    void close() {
        if (grids) cudaIpcCloseMemHandle(grids);
        grids = nullptr;
        events[0].reset();
        events[1].reset();
    }
    ~PeerLink() { close(); }
};

// A launch's per-level block maxima: at[level * blocks + b], `blocks` of them (pinned host memory, which
// the kernels write under unified addressing).
struct Partials {
    const double *at;
    int blocks;
};

constexpr int kGrids = 3;

class CudaHeatSlab final : public HeatSlab {
public:
    CudaHeatSlab(DeviceContext &ctx, const HeatSlabJob &job);
    ~CudaHeatSlab() override { settle(); }
    unsigned max_levels() const override { return unsigned(pass_.levels); }
    void launch(unsigned levels, size_t own_begin, size_t own_end, const HaloExchange *exchange) override;
    void collect(double *maxdiff) override;
    unsigned ahead() const override { return kGrids - 1; }
    void back() override;
    void exchange_only(size_t own_begin, size_t own_end, const HaloExchange &exchange) override;
    void read_rows(size_t first, size_t count, double *out) override;
    void row_stats(size_t first, size_t count, double *mins, double *maxs, double *sums) override;
    size_t peer_offer(size_t depth, void *blob, size_t capacity, std::string *why) override;
    bool peer_accept(int side, const void *blob, size_t bytes, std::string *why) override;
    void set_paths(HaloPath up, HaloPath down) override;
    void close_peers() override {
        DeviceScope scope(device_);
        settle(); // nothing of this slab still writes into the neighbours' buffers
        peers_[0].close();
        peers_[1].close();
    }
    bool on_device() const override { return true; }

private:
    // Launches rows [r0, r1) on `s` with its maxima in partial slot `slot`; an empty range launches nothing.
    void launch_rows(size_t r0, size_t r1, int levels, int slot, cudaStream_t s, bool cross = true);
    // The blocks of a launch over `rows` rows (heat::plan_pass_blocks), planned once for each count of rows
    // (a slab launches a few: its own rows, the edges, the rows between) and `cross`.
    unsigned blocks_for(size_t rows, bool cross);
    // Rows [first, first + count) of a grid from or to count * cols_ packed doubles anywhere (host or
    // device memory of any device: the copy kind follows from the pointers).
    void copy_rows(double *packed, const double *grid, size_t first, size_t count, cudaStream_t s,
                   bool to_packed);
    // The buffers each side's rows go through for the exchange's run() (NULL on peer sides).
    void side_buffers(double *send[2], double *recv[2]);
    void check_exchange(size_t own_begin, size_t own_end, const HaloExchange &x, unsigned levels);
    // The first and last `depth` rows of [own_begin, own_end) of grid_[g] on their way (copy stream, after
    // edges_done_): to the buffers of host and device sides, into the halo rows of the neighbours' grid g on
    // peer sides. True where a side's rows went to its buffers: the host waits for sent_ before the exchange.
    bool send_edges(int g, size_t own_begin, size_t own_end, const HaloExchange &x, double *const *send);
    // After run(): the received rows into `grid` beyond [own_begin, own_end) on the copy stream, halos_in_
    // recorded after them.
    void receive_halos(double *grid, size_t own_begin, size_t own_end, const HaloExchange &x,
                       double *const *recv);
    void exchanged_pass(int levels, size_t own_begin, size_t own_end, const HaloExchange &x,
                        double *const *send, double *const *recv, ExchangeOnce &once);
    // The pass just enqueued: its end on the main stream, where collect() waits for it.
    void finish_pass();
    // The main stream after everything of the slab's other streams (what a read of the grid needs).
    void join_main();
    // Waits for all of the slab's work; never throws (destructor, close_peers).
    void settle() noexcept;
    // views_ naming the current grid (kGrid0) and the next pass's destination (kGrid1).
    void point_views();

    DeviceContext &ctx_;
    int device_;
    size_t rows_, cols_;
    // Slab rows 0..rows-1 of grid b start at grid_[b] + row * pitch; cur_ is the current grid, and a pass
    // writes grid (cur_ + 1) % kGrids. views_ (current grid at kGrid0, the state's buffer) names them for
    // the kernels: row r of view b is its grid + r * pitch.
    double *grid_[kGrids] = {nullptr, nullptr, nullptr};
    int cur_ = 0;
    size_t pitch_ = 0;
    heat::Views views_{};
    heat::PassChoice pass_{};
    heat::PassShape shape_{};
    DeviceBuffer cells_, cond_, state_, row_stats_;
    PinnedBuffer halo_, partials_; // partials_: [parity][launch][slot_capacity_]
    Stream copies_{Stream::highest}, edges_{Stream::highest};
    // edges_done_: the edges of the newest exchanged pass (edge stream); halos_in_: its received rows in
    // the grid (copy stream); pass_done_: all of its rows computed (main); collected_[parity]: the same, for
    // the pass that wrote the partials of that parity.
    Event edges_done_, halos_in_, pass_done_, sent_, collected_[2];
    Partials slots_[kLaunches]{};
    size_t slot_capacity_ = 0; // doubles per launch's partials
    struct Planned {
        size_t rows;
        bool cross;
        unsigned blocks;
    };
    std::vector<Planned> planned_; // blocks_for
    // Passes launched and not collected, oldest first: levels, parity and launches' partials; launches_
    // counts the passes kept (a pass's parity).
    struct Pending {
        int levels, parity;
        Partials parts[kLaunches];
    };
    Pending pending_[kGrids - 1]{};
    int in_flight_ = 0;
    unsigned long long launches_ = 0;
    // The pass being launched: its partials' set and the event collect() waits on.
    int parity() const { return int(launches_ & 1); }
    // The links (set_paths): each side's path; the device buffers of device sides ([send up, send down,
    // recv up, recv down]); the events this slab offers with its grids, and the neighbours' opened offers.
    HaloPath paths_[2] = {HaloPath::host, HaloPath::host};
    DeviceBuffer device_halo_;
    IpcEvent offered_events_[2];
    size_t offered_depth_ = 0;
    PeerLink peers_[2];
    unsigned long long exchanges_ = 0; // exchanges made: the parity of the next one's buffers
};

CudaHeatSlab::CudaHeatSlab(DeviceContext &ctx, const HeatSlabJob &job)
    : ctx_(ctx), device_(ctx.device()), rows_(job.rows), cols_(job.cols) {
    pitch_ = (cols_ + 31) / 32 * 32;
    cells_.reserve(kGrids * rows_ * pitch_ * sizeof(double));
    cond_.reserve((rows_ - 2) * cols_ * sizeof(double));
    for (int g = 0; g < kGrids; ++g) grid_[g] = static_cast<double *>(cells_.get()) + g * rows_ * pitch_;
    views_.rows = rows_ - 2;
    views_.cols = cols_;
    point_views();
    // The whole-grid solver's choice (and its shared memory limit set on the kernels launched); each launch
    // planned for its rows (launch_rows); every kernel and plan gives a cell the same bits.
    pass_ = heat::choose_pass_kernel(ctx_);
    const int T = pass_.kernel->levels;
    const size_t levels = size_t(pass_.levels);
    shape_.strip = pass_.kernel->threads - 2 * T;
    // A launch's partials: the maxima (T levels a block) of as many blocks as a plan gives.
    slot_capacity_ = heat::max_pass_blocks(pass_, cols_, ctx_.limits().multiprocessors) * (size_t)T;
    partials_.reserve(2 * kLaunches * slot_capacity_ * sizeof(double));
    state_.reserve(sizeof(heat::DeviceState));
    row_stats_.reserve(3 * rows_ * sizeof(double));
    halo_.reserve(4 * levels * cols_ * sizeof(double));
    const cudaStream_t s = ctx_.main();
    // The state: buffer kGrid0 (the current grid; swap() exchanges the views), never converged.
    check(cudaMemsetAsync(state_.get(), 0, sizeof(heat::DeviceState), s), "cudaMemsetAsync (slab state)");
    job.cells.each([&](size_t first, size_t count, const double *values) {
        copy_rows(const_cast<double *>(values), grid_[0], first, count, s, false);
    });
    // The rows at each end, in the other grids too: the first and last, which a pass keeps, and the halo
    // rows within the deepest exchange. A neighbour overwrites the halo rows before a pass reads them, but
    // from its own process where it writes through CUDA IPC, which this process's sanitizer does not see.
    const size_t ends = std::min(rows_, size_t(pass_.levels));
    for (int g = 1; g < kGrids; ++g)
        for (size_t first : {size_t(0), rows_ - ends})
            check(cudaMemcpy2DAsync(grid_[g] + first * pitch_, pitch_ * sizeof(double),
                                    grid_[0] + first * pitch_, pitch_ * sizeof(double),
                                    cols_ * sizeof(double), ends, cudaMemcpyDeviceToDevice, s),
                  "cudaMemcpy2DAsync (slab)");
    job.conductivity.each([&](size_t first, size_t count, const double *values) {
        check(cudaMemcpyAsync(static_cast<double *>(cond_.get()) + first * cols_, values,
                              count * cols_ * sizeof(double), cudaMemcpyDefault, s),
              "cudaMemcpyAsync (slab conductivity)");
    });
    ctx_.synchronize_main();
}

unsigned CudaHeatSlab::blocks_for(size_t rows, bool cross) {
    for (const Planned &p : planned_)
        if (p.rows == rows && p.cross == cross) return p.blocks;
    const unsigned blocks = heat::plan_pass_blocks(pass_, rows, cols_, ctx_.limits().multiprocessors, cross);
    planned_.push_back({rows, cross, blocks});
    return blocks;
}

void CudaHeatSlab::launch_rows(size_t r0, size_t r1, int levels, int slot, cudaStream_t s, bool cross) {
    heat::PassShape shape = shape_;
    shape.row_begin = (long long)r0;
    shape.row_end = (long long)r1;
    const dim3 grid(r1 > r0 ? blocks_for(r1 - r0, cross) : 0);
    double *partials =
        reinterpret_cast<double *>(partials_.get()) + size_t(parity() * kLaunches + slot) * slot_capacity_;
    slots_[slot] = Partials{partials, int(grid.x)};
    if (r1 <= r0) return;
    if ((size_t)grid.x * (size_t)pass_.kernel->levels > slot_capacity_)
        fail(GPK_ERR_INTERNAL, "heat slab: more blocks than the partials hold");
    heat::launch_pass(*pass_.kernel, false, grid, s, views_, static_cast<const double *>(cond_.get()),
                      static_cast<heat::DeviceState *>(state_.get()), shape, levels, false, false, partials,
                      false, "heat pass_kernel (slab)");
}

void CudaHeatSlab::copy_rows(double *packed, const double *grid, size_t first, size_t count, cudaStream_t s,
                             bool to_packed) {
    const size_t row = cols_ * sizeof(double), pitch = pitch_ * sizeof(double);
    double *device = const_cast<double *>(grid) + first * pitch_;
    check(to_packed ? cudaMemcpy2DAsync(packed, row, device, pitch, row, count, cudaMemcpyDefault, s)
                    : cudaMemcpy2DAsync(device, pitch, packed, row, row, count, cudaMemcpyDefault, s),
          "cudaMemcpy2DAsync (slab rows)");
}

void CudaHeatSlab::side_buffers(double *send[2], double *recv[2]) {
    const size_t n = size_t(pass_.levels) * cols_;
    double *halo = reinterpret_cast<double *>(halo_.get()), *dev = static_cast<double *>(device_halo_.get());
    for (int s = 0; s < 2; ++s) {
        double *base = paths_[s] == HaloPath::host ? halo : paths_[s] == HaloPath::device ? dev : nullptr;
        send[s] = base ? base + size_t(s) * n : nullptr;
        recv[s] = base ? base + size_t(2 + s) * n : nullptr;
    }
}

void CudaHeatSlab::check_exchange(size_t own_begin, size_t own_end, const HaloExchange &x, unsigned levels) {
    const size_t d = x.depth;
    if (d < levels || d > size_t(pass_.levels) || d > own_end - own_begin || (x.up && own_begin < d) ||
        (x.down && own_end + d > rows_) || (paths_[0] == HaloPath::peer && d != offered_depth_) ||
        (paths_[1] == HaloPath::peer && d != offered_depth_))
        fail(GPK_ERR_INTERNAL, "heat slab: an exchange of " + std::to_string(d) + " rows over rows " +
                                   std::to_string(own_begin) + ".." + std::to_string(own_end));
}

void CudaHeatSlab::point_views() {
    const long long P = (long long)pitch_, last = (long long)rows_ - 1;
    const int next = (cur_ + 1) % kGrids;
    for (int b : {heat::kGrid0, heat::kGrid1, heat::kInitial, heat::kFinal}) // no pass reads or writes 2, 3
        views_.v[b] = heat::GridView{grid_[b & 1 ? next : cur_] + P, P, 0, last};
}

void CudaHeatSlab::launch(unsigned levels, size_t own_begin, size_t own_end, const HaloExchange *exchange) {
    const bool exchanging = exchange && exchange->run;
    double *send[2], *recv[2];
    side_buffers(send, recv);
    ExchangeOnce once(exchange, send, recv);
    try {
        DeviceScope scope(device_);
        if (levels < 1 || levels > unsigned(pass_.levels) || own_begin < 1 || own_end > rows_ - 1 ||
            own_begin >= own_end)
            fail(GPK_ERR_INTERNAL, "heat slab: a pass of " + std::to_string(levels) + " levels over rows " +
                                       std::to_string(own_begin) + ".." + std::to_string(own_end));
        if (in_flight_ == kGrids - 1) fail(GPK_ERR_INTERNAL, "heat slab: a pass beyond the grids it keeps");
        if (exchanging) {
            check_exchange(own_begin, own_end, *exchange, levels);
            exchanged_pass(int(levels), own_begin, own_end, *exchange, send, recv, once);
        } else {
            // After everything of the passes before (a pass redone after back() reads a grid whose rows
            // may have come in on the copy stream).
            edges_done_.make_wait(ctx_.main());
            halos_in_.make_wait(ctx_.main());
            launch_rows(own_begin, own_end, int(levels), 1, ctx_.main());
            slots_[0] = slots_[2] = Partials{nullptr, 0};
        }
        finish_pass();
        pending_[in_flight_++] = Pending{int(levels), parity(), {slots_[0], slots_[1], slots_[2]}};
        ++launches_;
        cur_ = (cur_ + 1) % kGrids;
        point_views();
    } catch (...) {
        once.run(); // the neighbours are waiting for this rank's rows
        if (exchanging) ++exchanges_;
        throw;
    }
    if (exchanging) ++exchanges_;
}

void CudaHeatSlab::collect(double *maxdiff) {
    if (in_flight_ == 0) fail(GPK_ERR_INTERNAL, "heat slab: no pass to collect");
    DeviceScope scope(device_);
    const Pending p = pending_[0];
    std::copy(pending_ + 1, pending_ + in_flight_, pending_);
    --in_flight_;
    collected_[p.parity].wait_host();
    for (int k = 0; k < p.levels; ++k) {
        double m = 0.0;
        for (const Partials &l : p.parts)
            for (int b = 0; b < l.blocks; ++b)
                m = std::fmax(m, l.at[size_t(k) * size_t(l.blocks) + size_t(b)]);
        maxdiff[k] = m;
    }
}

void CudaHeatSlab::back() {
    cur_ = (cur_ + kGrids - 1) % kGrids;
    point_views();
    if (in_flight_ > 0) { // its maxima dropped; the next launch takes its slot (after it on main)
        --in_flight_;
        --launches_;
    }
}

bool CudaHeatSlab::send_edges(int g, size_t own_begin, size_t own_end, const HaloExchange &x,
                              double *const *send) {
    const double *grid = grid_[g];
    const size_t d = x.depth, parity = size_t(exchanges_ & 1);
    const cudaStream_t copies = copies_.get();
    const bool has[2] = {x.up, x.down};
    bool staged = false, pushed = false;
    for (int s = 0; s < 2; ++s) {
        if (!has[s]) continue;
        const size_t first = s == 0 ? own_begin : own_end - d;
        if (paths_[s] == HaloPath::peer) {
            // Into the halo rows of the neighbour's grid of the same index, on its other side: its last rows
            // when it is above. The rows are contiguous at pitch_ (one copy, padding included).
            const PeerLink &peer = peers_[s];
            const size_t at = s == 0 ? peer.rows - d : 0;
            check(cudaMemcpyAsync(peer.grids + (size_t(g) * peer.rows + at) * pitch_, grid + first * pitch_,
                                  ((d - 1) * pitch_ + cols_) * sizeof(double), cudaMemcpyDefault, copies),
                  "cudaMemcpyAsync (halo rows to a neighbour)");
            pushed = true;
        } else {
            copy_rows(send[s], grid, first, d, copies, true);
            staged = true;
        }
    }
    if (pushed)
        check(cudaEventRecord(offered_events_[parity].get(), copies), "cudaEventRecord (halo, interprocess)");
    if (staged) sent_.record(copies);
    return staged;
}

void CudaHeatSlab::receive_halos(double *grid, size_t own_begin, size_t own_end, const HaloExchange &x,
                                 double *const *recv) {
    const size_t d = x.depth, parity = size_t(exchanges_ & 1);
    const cudaStream_t copies = copies_.get();
    const bool has[2] = {x.up, x.down};
    for (int s = 0; s < 2; ++s) {
        if (!has[s]) continue;
        if (paths_[s] == HaloPath::peer) { // the rows are in the grid once the neighbour's event is
            check(cudaStreamWaitEvent(copies, peers_[s].events[parity].get(), 0),
                  "cudaStreamWaitEvent (halo, interprocess)");
            continue;
        }
        copy_rows(recv[s], grid, s == 0 ? own_begin - d : own_end, d, copies, false);
    }
    halos_in_.record(copies);
}

// The edges on the stream of high priority once the previous pass is done and its received rows are in
// (their rows on their way on the copy stream as soon as they are computed), the rows between on the main
// stream, the exchange, and the received rows into the result grid's halo rows.
void CudaHeatSlab::exchanged_pass(int levels, size_t own_begin, size_t own_end, const HaloExchange &x,
                                  double *const *send, double *const *recv, ExchangeOnce &once) {
    const size_t d = x.depth, edge_top = own_begin + d, edge_bottom = std::max(edge_top, own_end - d);
    const cudaStream_t main = ctx_.main(), edges = edges_.get();
    const int next = (cur_ + 1) % kGrids;
    double *result = grid_[next];
    pass_done_.make_wait(edges);
    halos_in_.make_wait(edges);
    launch_rows(own_begin, edge_top, levels, 0, edges);
    launch_rows(edge_bottom, own_end, levels, 2, edges);
    edges_done_.record(edges);
    edges_done_.make_wait(copies_.get());
    const bool staged = send_edges(next, own_begin, own_end, x, send);
    // Where a side's rows go through MPI (host staging, or device buffers), the exchange may outlast the rows
    // between, and the next pass's edges must then find slots soon: bands, not a wave of whole-pass shares.
    const bool cross = (!x.up || paths_[0] == HaloPath::peer) && (!x.down || paths_[1] == HaloPath::peer);
    launch_rows(edge_top, edge_bottom, levels, 1, main, cross);
    if (staged) sent_.wait_host();
    once.run();
    receive_halos(result, own_begin, own_end, x, recv);
    edges_done_.make_wait(main); // the pass ends after its edges (finish_pass)
}

void CudaHeatSlab::exchange_only(size_t own_begin, size_t own_end, const HaloExchange &x) {
    double *send[2], *recv[2];
    side_buffers(send, recv);
    ExchangeOnce once(&x, send, recv);
    try {
        DeviceScope scope(device_);
        check_exchange(own_begin, own_end, x, 1);
        // After everything on the main stream, which already follows the last pass's edges; the received
        // rows of that pass came in on the copy stream itself.
        edges_done_.record(ctx_.main());
        edges_done_.make_wait(copies_.get());
        if (send_edges(cur_, own_begin, own_end, x, send)) sent_.wait_host();
        once.run();
        receive_halos(grid_[cur_], own_begin, own_end, x, recv);
        check(cudaStreamSynchronize(copies_.get()), "cudaStreamSynchronize (slab halo)");
    } catch (...) {
        once.run();
        ++exchanges_;
        throw;
    }
    ++exchanges_;
}

size_t CudaHeatSlab::peer_offer(size_t depth, void *blob, size_t capacity, std::string *why) {
    offered_depth_ = depth; // what a neighbour's offer must match, whether or not this one is made
    if (test_hooks().halo_host) {
        *why = "host staging forced (" GPK_HOOK_NAME("GPK_TEST_MPI_HALO=host") ")";
        return 0;
    }
    if (capacity < sizeof(PeerOffer)) {
        *why = "no room for the offer";
        return 0;
    }
    DeviceScope scope(device_);
    PeerOffer o;
    std::memset(&o, 0, sizeof o);
    std::memcpy(o.magic, kOfferMagic, sizeof o.magic);
    o.depth = depth;
    o.cols = cols_;
    o.rows = rows_;
    o.pitch = pitch_;
    if (!link_call(cudaDeviceGetPCIBusId(o.bus_id, int(sizeof o.bus_id), device_), "cudaDeviceGetPCIBusId",
                   why) ||
        !link_call(cudaIpcGetMemHandle(&o.grids, cells_.get()), "cudaIpcGetMemHandle", why))
        return 0;
    for (int p = 0; p < 2; ++p) {
        offered_events_[p].reset();
        if (!offered_events_[p].create(why) ||
            !link_call(cudaIpcGetEventHandle(&o.events[p], offered_events_[p].get()), "cudaIpcGetEventHandle",
                       why))
            return 0;
    }
    std::memcpy(blob, &o, sizeof o);
    return sizeof o;
}

bool CudaHeatSlab::peer_accept(int side, const void *blob, size_t bytes, std::string *why) {
    PeerOffer o;
    if (side < 0 || side > 1 || bytes != sizeof o) {
        *why = "an offer of " + std::to_string(bytes) + " bytes (another build?)";
        return false;
    }
    std::memcpy(&o, blob, sizeof o);
    if (std::memcmp(o.magic, kOfferMagic, sizeof o.magic) != 0 || o.cols != cols_ || o.pitch != pitch_ ||
        o.depth != offered_depth_ || o.rows < 2 * o.depth + 1) {
        *why = "the offer does not match this slab (another build, or other halo depths)";
        return false;
    }
    DeviceScope scope(device_);
    o.bus_id[sizeof o.bus_id - 1] = '\0';
    int peer = -1;
    if (!link_call(cudaDeviceGetByPCIBusId(&peer, o.bus_id), "the neighbour's device is not visible here",
                   why))
        return false;
    if (peer != device_) {
        int can = 0;
        if (!link_call(cudaDeviceCanAccessPeer(&can, device_, peer), "cudaDeviceCanAccessPeer", why))
            return false;
        if (!can) {
            *why = "device " + std::to_string(device_) + " cannot access device " + std::to_string(peer) +
                   " (no peer access)";
            return false;
        }
    }
    PeerLink &link = peers_[side];
    link.close();
    void *mapped = nullptr;
    if (!link_call(cudaIpcOpenMemHandle(&mapped, o.grids, cudaIpcMemLazyEnablePeerAccess),
                   "cudaIpcOpenMemHandle", why))
        return false;
    link.grids = static_cast<double *>(mapped);
    link.rows = size_t(o.rows);
    for (int p = 0; p < 2; ++p)
        if (!link_call(cudaIpcOpenEventHandle(link.events[p].out(), o.events[p]), "cudaIpcOpenEventHandle",
                       why)) {
            link.close();
            return false;
        }
    *why = peer == device_
               ? "the same device " + std::to_string(peer)
               : "device " + std::to_string(device_) + " -> " + std::to_string(peer) + " (peer access)";
    return true;
}

void CudaHeatSlab::set_paths(HaloPath up, HaloPath down) {
    DeviceScope scope(device_);
    const HaloPath paths[2] = {up, down};
    for (int s = 0; s < 2; ++s) {
        if (paths[s] == HaloPath::peer && !peers_[s].grids)
            fail(GPK_ERR_INTERNAL, "heat slab: a peer path without the neighbour's grids");
        if (paths[s] != HaloPath::peer) peers_[s].close();
        paths_[s] = paths[s];
    }
    if (up == HaloPath::device || down == HaloPath::device)
        device_halo_.reserve(4 * size_t(pass_.levels) * cols_ * sizeof(double));
    if (up != HaloPath::peer && down != HaloPath::peer) {
        offered_events_[0].reset();
        offered_events_[1].reset();
    }
}

void CudaHeatSlab::finish_pass() {
    pass_done_.record(ctx_.main());
    collected_[parity()].record(ctx_.main());
}

void CudaHeatSlab::join_main() {
    edges_done_.make_wait(ctx_.main());
    halos_in_.make_wait(ctx_.main());
}

void CudaHeatSlab::settle() noexcept {
    int previous = -1;
    if (cudaGetDevice(&previous) != cudaSuccess) return;
    if (previous != device_ && cudaSetDevice(device_) != cudaSuccess) return;
    for (cudaStream_t s : {edges_.get(), copies_.get(), ctx_.main()}) cudaStreamSynchronize(s);
    if (previous != device_) cudaSetDevice(previous);
}

void CudaHeatSlab::read_rows(size_t first, size_t count, double *out) {
    DeviceScope scope(device_);
    join_main();
    copy_rows(out, grid_[cur_], first, count, ctx_.main(), true);
    ctx_.synchronize_main();
}

void CudaHeatSlab::row_stats(size_t first, size_t count, double *mins, double *maxs, double *sums) {
    DeviceScope scope(device_);
    join_main();
    double *rs = static_cast<double *>(row_stats_.get());
    heat::launch_row_stats(ctx_.main(), views_, static_cast<const heat::DeviceState *>(state_.get()), false,
                           first, count, rs, rs + count, rs + 2 * count);
    const std::pair<double *, const double *> copies[3] = {
        {mins, rs}, {maxs, rs + count}, {sums, rs + 2 * count}};
    for (auto [to, from] : copies)
        check(cudaMemcpyAsync(to, from, count * sizeof(double), cudaMemcpyDeviceToHost, ctx_.main()),
              "cudaMemcpyAsync (slab row statistics)");
    ctx_.synchronize_main();
}

} // namespace

std::unique_ptr<HeatSlab> make_heat_slab(DeviceContext &ctx, const HeatSlabJob &job) {
    DeviceScope scope(ctx.device());
    return std::make_unique<CudaHeatSlab>(ctx, job);
}

namespace {

// The smallest index of a bad value (a non-finite temperature, or a conductivity outside [0, 1]) into
// *first, which starts at all ones.
static __global__ void first_bad_value_kernel(const double *a, size_t n, bool conductivity,
                                              unsigned long long *first) {
    const size_t stride = (size_t)gridDim.x * blockDim.x;
    unsigned long long bad = ~0ull;
    for (size_t k = blockIdx.x * (size_t)blockDim.x + threadIdx.x; k < n && bad == ~0ull; k += stride) {
        const double v = a[k];
        if (conductivity ? !(v >= 0.0 && v <= 1.0) : !isfinite(v)) bad = k;
    }
    for (int o = 16; o > 0; o /= 2) bad = min(bad, __shfl_xor_sync(0xffffffffu, bad, o));
    if (threadIdx.x % 32 == 0 && bad != ~0ull) atomicMin(first, bad);
}

} // namespace

void check_heat_block(DeviceContext &ctx, const double *tinit, const double *conductivity, size_t rows,
                      size_t cols, size_t first_row) {
    const bool t_dev = on_device(tinit), c_dev = on_device(conductivity);
    if (!t_dev && !c_dev) return check_heat_inputs(tinit, conductivity, rows, cols, first_row);
    DeviceScope scope(ctx.device());
    const size_t n = rows * cols;
    const cudaStream_t s = ctx.main();
    DeviceBuffer found;
    found.reserve(2 * sizeof(unsigned long long));
    auto *first = static_cast<unsigned long long *>(found.get());
    check(cudaMemsetAsync(first, 0xff, 2 * sizeof(unsigned long long), s),
          "cudaMemsetAsync (heat block check)");
    const unsigned blocks =
        (unsigned)std::min<size_t>((n + 255) / 256, (size_t)ctx.limits().multiprocessors * 8);
    const double *arrays[2] = {tinit, conductivity};
    const bool device[2] = {t_dev, c_dev};
    for (int k = 0; k < 2; ++k)
        if (device[k]) {
            first_bad_value_kernel<<<blocks, 256, 0, s>>>(arrays[k], n, k == 1, first + k);
            check_launch("heat first_bad_value_kernel");
        }
    unsigned long long bad[2] = {~0ull, ~0ull};
    check(cudaMemcpyAsync(bad, first, sizeof bad, cudaMemcpyDeviceToHost, s),
          "cudaMemcpyAsync (heat block check)");
    ctx.synchronize_main();
    for (int k = 0; k < 2; ++k)
        if (!device[k])
            for (size_t i = 0; i < n && bad[k] == ~0ull; ++i) {
                uint64_t b;
                std::memcpy(&b, &arrays[k][i], sizeof b);
                if (k == 0 ? BadTemperature{}(b) : BadConductivity{}(b)) bad[k] = i;
            }
    // The row holding the first bad value, beside a row of good values of the other kind, named by the host
    // check (temperatures first).
    for (int k = 0; k < 2; ++k) {
        if (bad[k] == ~0ull) continue;
        const size_t row = size_t(bad[k]) / cols;
        std::vector<double> values(cols), good(cols, 0.0);
        check(cudaMemcpy(values.data(), arrays[k] + row * cols, cols * sizeof(double), cudaMemcpyDefault),
              "cudaMemcpy (heat block check)");
        check_heat_inputs(k == 0 ? values.data() : good.data(), k == 1 ? values.data() : good.data(), 1, cols,
                          first_row + row);
        fail(GPK_ERR_INTERNAL, "heat: the block check flagged a value that the host check did not find");
    }
}

unsigned heat_slab_levels(DeviceContext &ctx) {
    DeviceScope scope(ctx.device());
    return unsigned(heat::choose_pass_kernel(ctx).levels);
}

} // namespace gpk::cuda
