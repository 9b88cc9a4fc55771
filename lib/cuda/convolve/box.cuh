// K x K box filters (K = 3, 5, 7, 9: every tap the same integer t, 2D or as a separable pair) on
// one-channel u8 images, as a sliding window down strips of rows. Each thread owns 8 consecutive columns
// and keeps their vertical sums of the last K - 1 padded rows as four pairs of 16-bit halves (a column's sum
// of K bytes is at most 9 * 255); a step adds the incoming row's 8 bytes, which gives the output row's
// vertical sums, and takes away the row that leaves the window (held in registers at K <= 5, read again
// at K >= 7). The horizontal sum of K vertical sums is made on the pairs too (two outputs an addition; a
// window sum of K * K bytes is at most 20655 and never leaves its half), the R columns beyond the thread's
// 8 coming from its neighbouring lanes by shuffle. Lanes 0 and 31 of each warp only serve their
// neighbours; the other 30 write. Rows go in chunks of N output rows whose loads are issued first (at K <=
// 5 with the sums written, the next chunk's loads before the current chunk's steps: walk_chunks). The sum
// n = t * S (+ half the divisor) is finished as the rank-1 kernel finishes it (StripFinish), and integer
// sums are exact in any order, so the output is the 2D filter's, bit for bit. Where the rank-1 kernel sums K
// rows an output, this one makes the same outputs with a constant number of additions whatever K. The
// columns whose window leaves the row are the rank-1 kernel's edge block's.
#pragma once

#include "cuda/convolve/rank1.cuh"

namespace gpk::cuda::conv {

constexpr int kBoxWarpGroups = 30;                                   // writing lanes a warp
constexpr int kBoxBlockGroups = kBoxWarpGroups * kStripThreads / 32; // 120 groups of 8 columns a block

// The 8 bytes of a row as four pairs of 16-bit halves: bytes (0, 1), (2, 3), (4, 5), (6, 7).
__device__ __forceinline__ void box_unpack(const uint2 &w, unsigned (&p)[4]) {
    p[0] = __byte_perm(w.x, 0u, 0x4140);
    p[1] = __byte_perm(w.x, 0u, 0x4342);
    p[2] = __byte_perm(w.y, 0u, 0x4140);
    p[3] = __byte_perm(w.y, 0u, 0x4342);
}

// The pair of columns (o, o + 1) of the window q: q[i] holds columns (2 i - 4, 2 i - 3), o in -4 .. 10.
template <int O> __device__ __forceinline__ unsigned box_pair(const unsigned (&q)[8]) {
    static_assert(O >= -4 && O <= 10, "columns -4 .. 11");
    if constexpr ((O & 1) == 0)
        return q[(O + 4) / 2];
    else
        return __byte_perm(q[(O + 3) / 2], q[(O + 5) / 2], 0x5432);
}

// The sum of the pairs at offsets O .. O + N - 1.
template <int O, int N> __device__ __forceinline__ unsigned box_pairs(const unsigned (&q)[8]) {
    if constexpr (N == 1)
        return box_pair<O>(q);
    else
        return box_pair<O>(q) + box_pairs<O + 1, N - 1>(q);
}

// Output rows y .. y_end - 1 walked in whole chunks of N: `load_chunk(in, y)` loads the N incoming rows of
// the chunk at y, `steps(in, y)` makes its N output rows. Without P each chunk's loads are issued just
// before its steps; with P the next chunk's loads are issued before the current chunk's steps, so that a
// thread always has a chunk of loads in flight (twice the rows held in registers). Returns the first row
// not made (fewer than N rows left).
// `first()` runs once before the first steps: with P after the first chunk's loads are issued (so that the
// rows above the strip, loaded before, are waited for with the chunk's loads already in flight).
template <int N, bool P, class Load, class Steps, class First>
__device__ __forceinline__ int walk_chunks(int y, int y_end, Load &&load_chunk, Steps &&steps,
                                           First &&first) {
    if constexpr (P) {
        if (y + N > y_end) {
            first();
            return y;
        }
        uint2 cur[N];
        load_chunk(cur, y);
        first();
#pragma unroll 1
        for (;;) {
            uint2 nxt[N];
            const bool more = y + 2 * N <= y_end;
            if (more) load_chunk(nxt, y + N);
            steps(cur, y);
            y += N;
            if (!more) break;
#pragma unroll
            for (int a = 0; a < N; ++a) cur[a] = nxt[a];
        }
    } else {
        first();
#pragma unroll 1
        for (; y + N <= y_end; y += N) {
            uint2 in[N];
            load_chunk(in, y);
            steps(in, y);
        }
    }
    return y;
}

// A lane of the layout that the box and pair kernels share: lanes 1 .. 30 of a warp own groups of 8
// columns (g, counted over the grid's x blocks from group 1), lanes 0 and 31 only serve their neighbours.
struct BoxLane {
    long long g;
    bool active; // a writing lane of an interior group
    // What the lane reads of a row: its 8 bytes (2), or past the last group only the 4 that the last
    // group's window needs (1: 8 (groups + 1) + 3 < width, rank1_groups), or nothing (0).
    int reads;
    const unsigned char *column; // the lane's bytes in source row 0

    __device__ __forceinline__ BoxLane(const SourceRows &src, long long bx, long long groups) {
        const int lane = threadIdx.x % 32;
        g = (bx * (kStripThreads / 32) + threadIdx.x / 32) * kBoxWarpGroups + lane;
        active = lane >= 1 && lane <= kBoxWarpGroups && g >= 1 && g <= groups;
        reads = g <= groups ? 2 : g == groups + 1 ? 1 : 0;
        column = reinterpret_cast<const unsigned char *>(src.base) + kStripCols * (reads ? g : 0);
    }

    // Source row r, after the border rule (negative: a row of zeros).
    __device__ __forceinline__ uint2 load(long long r, size_t pitch) const {
        uint2 w = make_uint2(0u, 0u);
        if (r >= 0 && reads) {
            const unsigned char *p = column + size_t(r) * pitch;
            if (reads == 2)
                w = __ldg(reinterpret_cast<const uint2 *>(p));
            else
                w.x = __ldg(reinterpret_cast<const unsigned *>(p));
        }
        return w;
    }

    // Padded rows y .. y + N - 1: straight down one pointer where they all lie inside the source and the
    // lane reads its 8 bytes, else each through `load_padded` (the border rule).
    template <int N, class LoadPadded>
    __device__ __forceinline__ void load_rows(uint2 (&in)[N], const SourceRows &src, int y,
                                              LoadPadded &&load_padded) const {
        const long long first = src.row0 + y;
        if (reads == 2 && first >= 0 && first + N <= src.rows) {
            const unsigned char *p = column + size_t(first) * src.pitch;
#pragma unroll
            for (int a = 0; a < N; ++a) in[a] = __ldg(reinterpret_cast<const uint2 *>(p + a * src.pitch));
        } else {
#pragma unroll
            for (int a = 0; a < N; ++a) in[a] = load_padded(y + a);
        }
    }
};

template <int K, int N, bool P, class F>
__device__ __forceinline__ void box_interior(F &f, const SourceRows &src, const Shape &sh, const Output &out,
                                             int t, int y0, int y_end, long long groups, bool out_aligned) {
    constexpr int R = K / 2;
    const BoxLane bl(src, blockIdx.x, groups);
    const bool active = bl.active;
    const long long g = bl.g;
    const int reads = bl.reads;
    const unsigned char *column = bl.column;
    auto load = [&](int y) { return bl.load(border_index(src.row0 + y, src.rows, sh.border), src.pitch); };
    // One output row: `in` the incoming padded row y + K - 1, `gone` padded row y, which leaves the window;
    // v holds the vertical sums of rows y .. y + K - 2 before and y + 1 .. y + K - 1 after.
    unsigned v[4] = {0u, 0u, 0u, 0u};
    auto step = [&](const uint2 &in, const uint2 &gone, int y) {
        unsigned p[4], o[4], q[8];
        box_unpack(in, p);
        box_unpack(gone, o);
#pragma unroll
        for (int j = 0; j < 4; ++j) {
            q[2 + j] = v[j] + p[j]; // the output row's vertical sums
            v[j] = q[2 + j] - o[j];
        }
        q[1] = __shfl_up_sync(0xFFFFFFFFu, q[5], 1);
        q[6] = __shfl_down_sync(0xFFFFFFFFu, q[2], 1);
        if constexpr (R > 2) {
            q[0] = __shfl_up_sync(0xFFFFFFFFu, q[4], 1);
            q[7] = __shfl_down_sync(0xFFFFFFFFu, q[3], 1);
        } else {
            q[0] = q[7] = 0u;
        }
        const unsigned s[4] = {box_pairs<0 - R, K>(q), box_pairs<2 - R, K>(q), box_pairs<4 - R, K>(q),
                               box_pairs<6 - R, K>(q)};
        int sums[kStripCols];
#pragma unroll
        for (int j = 0; j < 4; ++j) {
            sums[2 * j] = f.init() + t * int(s[j] & 0xFFFFu);
            sums[2 * j + 1] = f.init() + t * int(s[j] >> 16);
        }
        finish_strip_row(f, sums, active, out, y, kStripCols * g, out_aligned);
    };
    // Whole chunks of N output rows (N >= K - 1), their rows loaded first so that a thread has many loads in
    // flight (one at a time, each step waited for its row). The row that leaves the window at step a is held
    // in registers from its own step as the incoming row (K <= 5: held[a], or for a >= K - 1 the chunk's own
    // incoming row a - (K - 1)), or read again (K >= 7, whose held rows would spill under 64 registers; it
    // was read K rows before, so the read is served by L1 or L2).
    constexpr bool kHold = K <= 5;
    uint2 held[kHold ? K - 1 : 1];
#pragma unroll
    for (int i = 0; i < K - 1; ++i) {
        const uint2 w = load(y0 + i);
        if constexpr (kHold) {
            held[i] = w;
        } else {
            unsigned p[4];
            box_unpack(w, p);
#pragma unroll
            for (int j = 0; j < 4; ++j) v[j] += p[j];
        }
    }
    static_assert(!P || kHold, "prefetched chunks hold their leaving rows");
    static_assert(!kHold || N >= K - 1, "a chunk's rows replace every held row");
    int y = y0;
    if constexpr (kHold) {
        // The vertical sums of the K - 1 rows above the first output.
        auto absorb = [&]() {
#pragma unroll
            for (int i = 0; i < K - 1; ++i) {
                unsigned p[4];
                box_unpack(held[i], p);
#pragma unroll
                for (int j = 0; j < 4; ++j) v[j] += p[j];
            }
        };
        // The chunk's N incoming rows (padded rows y + K - 1 ..).
        auto load_in = [&](uint2(&in)[N], int yc) { bl.load_rows(in, src, yc + K - 1, load); };
        y = walk_chunks<N, P>(
            y, y_end, load_in,
            [&](const uint2(&in)[N], int yc) {
#pragma unroll
                for (int a = 0; a < N; ++a) step(in[a], a < K - 1 ? held[a] : in[a - (K - 1)], yc + a);
#pragma unroll
                for (int i = 0; i < K - 1; ++i) held[i] = in[N - (K - 1) + i];
            },
            absorb);
    } else {
#pragma unroll 1
        for (; y + N <= y_end; y += N) {
            uint2 in[N], gone[N];
            const long long first = src.row0 + y; // the chunk's first padded row, before the border rule
            if (reads == 2 && first >= 0 && first + N + K - 1 <= src.rows) {
                // Every row inside the source: no border rule, one pointer walked down.
                const unsigned char *p = column + size_t(first) * src.pitch;
#pragma unroll
                for (int a = 0; a < N; ++a) {
                    gone[a] = __ldg(reinterpret_cast<const uint2 *>(p + a * src.pitch));
                    in[a] = __ldg(reinterpret_cast<const uint2 *>(p + (a + K - 1) * src.pitch));
                }
            } else {
#pragma unroll
                for (int a = 0; a < N; ++a) {
                    in[a] = load(y + a + K - 1);
                    gone[a] = load(y + a);
                }
            }
#pragma unroll
            for (int a = 0; a < N; ++a) step(in[a], gone[a], y + a);
        }
    }
    // The strip's last rows, fewer than N, one at a time.
#pragma unroll 1
    for (; y < y_end; ++y) {
        const uint2 in = load(y + K - 1);
        if constexpr (kHold) {
            step(in, held[0], y);
#pragma unroll
            for (int i = 0; i < K - 2; ++i) held[i] = held[i + 1];
            held[K - 2] = in;
        } else {
            step(in, load(y), y);
        }
    }
}

// Grid: x covers the interior groups in blocks of 120 (4 warps of 30 writing lanes), then one edge block
// (the rank-1 kernel's); y the band's output rows in strips of `strip_rows`. The source base and pitch are
// multiples of 8; `out_aligned`: so are the output's. `t`: every tap.
template <int K, StripMode M, bool Signed, StripDiv D, int N, bool P = false>
__global__ void __launch_bounds__(kStripThreads, strip_blocks_cap(8))
    conv_box_u8_kernel(SourceRows src, Shape sh, Output out, Rank1Taps<K> taps, int t, U8Divider dv,
                       int strip_rows, long long groups, bool out_aligned) {
    StripFinish<M, Signed, D> f = make_strip_finish<M, Signed, D>(dv, out);
    rank1_strip_body<K>(f, src, sh, out, taps, strip_rows, groups, [&](auto &fin, int y0, int y_end) {
        box_interior<K, N, P>(fin, src, sh, out, t, y0, y_end, groups, out_aligned);
    });
}

} // namespace gpk::cuda::conv
