// Filtering a band of rows for the CPU convolution (included by convolve.cpp only). A ring holds the rows
// that the filter's window covers, in the accumulation type A and widened by the border on both sides, so
// that the tap loop (convolve_rows.cpp) runs without a branch. When the input already has type A, the
// interior of each row is read where it is and only two short edge lines are built. A separable filter
// keeps row-filtered rows in the ring instead. A band covers whole rows or a column strip of them (Columns):
// a strip's halo comes from the neighbouring columns, the border rule applies only at the image's edges.
#pragma once

#include "cpu/convolve_rows.hpp"
#include "cpu/host_memory.hpp"

#include "common/semantics.hpp"
#include "engine/error.hpp"
#include "engine/filter.hpp"
#include "engine/jobs.hpp"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <type_traits>
#include <vector>

namespace gpk::cpu::conv {

inline long long positive_mod(long long a, long long m) {
    return ((a % m) + m) % m;
}

// Where a horizontal tap pass reads a source row for one span of samples.
enum class Source { Bordered, LeftEdge, InPlace, RightEdge };

struct Segment {
    Span span;
    Source source;
};

// The filter in accumulation type A and the image geometry.
template <class A> struct Plan {
    const ConvolveJob *job = nullptr;
    size_t width = 0, height = 0, n = 0; // n = samples per image row
    unsigned channels = 1;
    int border = 0;
    bool separable = false;
    int kh = 1, rh = 0;         // window rows (2D rows, or column-filter length)
    int kw = 1, rw = 0;         // 2D columns, or row-filter length
    std::vector<A> window_taps; // the taps applied over the ring: 2D kh*kw, separable the column filter
    std::vector<A> row_taps;    // separable: the row filter
    size_t halo = 0;            // rw * channels: border samples on each side
    bool input_is_a = false;    // the input has type A, aligned: its rows can be read where they are
};

// The columns that one band filters: samples [x0, x0 + n) of each row (the whole row, or a column strip),
// and how their source rows are read. Local sample i is row sample x0 + i; x0 is a whole number of pixels
// and of tap-loop blocks.
struct Columns {
    size_t x0 = 0, n = 0;
    size_t padded = 0;             // padded_length<A>(n): what the tap loop writes per row
    bool in_place = false;         // blocks [first, last) are read in the input row itself
    size_t left_length = 0;        // in place: the left edge line (blocks before first, 0 if none), then the
    size_t right_begin = 0;        // right one for the blocks from `last` (right_begin) on, of right_length
    size_t right_length = 0;       //   (0 if none)
    std::vector<Segment> segments; // the spans a horizontal tap pass is split into
    size_t source_length = 0;      // the lines built for one source row (bordered line, or both edge lines)
    size_t ring_row_length = 0;    // a ring row: those lines (2D) or a row-filtered row (separable)
};

template <class A> std::vector<A> taps_as(const std::vector<double> &taps) {
    std::vector<A> out(taps.size());
    for (size_t i = 0; i < taps.size(); ++i) out[i] = A(taps[i]);
    return out;
}

template <class A> bool input_is_accumulator_type(const ConvolveJob &job) {
    const bool same = (std::is_same_v<A, float> && job.in.dtype == GPK_F32) ||
                      (std::is_same_v<A, double> && job.in.dtype == GPK_F64);
    return same && reinterpret_cast<uintptr_t>(job.in_data) % alignof(A) == 0 &&
           job.in.stride % alignof(A) == 0;
}

// Samples [x0, x0 + n) of each row into c. In place, local blocks [first, last) read only row samples
// (output i reads samples x0 + i - halo to x0 + i + halo); the blocks before and after read edge lines.
template <class A> void set_columns(const Plan<A> &p, size_t x0, size_t n, Columns &c) {
    const size_t block = block_elems<A>();
    c.x0 = x0;
    c.n = n;
    c.padded = padded_length<A>(n);
    const size_t first = x0 >= p.halo ? 0 : (p.halo - x0 + block - 1) / block * block;
    const size_t last = std::min(c.padded, p.n >= x0 + p.halo ? (p.n - x0 - p.halo) / block * block : 0);
    c.in_place = p.input_is_a && last > first;
    c.segments.clear();
    if (!c.in_place) {
        c.segments.push_back({{0, c.padded, 0}, Source::Bordered});
        c.left_length = c.right_begin = c.right_length = 0;
        c.source_length = c.padded + 2 * p.halo;
    } else {
        c.left_length = first > 0 ? first + 2 * p.halo : 0;
        c.right_begin = last;
        c.right_length = last < c.padded ? c.padded - last + 2 * p.halo : 0;
        c.source_length = c.left_length + c.right_length;
        if (first > 0) c.segments.push_back({{0, first, 0}, Source::LeftEdge});
        c.segments.push_back({{first, last, p.halo}, Source::InPlace});
        if (last < c.padded) c.segments.push_back({{last, c.padded, last}, Source::RightEdge});
    }
    c.ring_row_length = p.separable ? c.padded : c.source_length;
}

template <class A> Columns columns(const Plan<A> &p, size_t x0, size_t n) {
    Columns c;
    set_columns(p, x0, n, c);
    return c;
}

template <class A> Plan<A> make_plan(const ConvolveJob &job) {
    const gpk_filter &f = *job.filter;
    Plan<A> p;
    p.job = &job;
    p.width = job.in.width;
    p.height = job.in.height;
    p.channels = job.in.channels;
    p.n = p.width * p.channels;
    p.border = int(job.border);
    p.separable = f.separable;
    p.kh = f.kh;
    p.kw = f.kw;
    p.rh = f.kh / 2;
    p.rw = f.kw / 2;
    if (f.separable) {
        p.window_taps = taps_as<A>(f.col);
        p.row_taps = taps_as<A>(f.row);
        // An all-zero column filter makes every output exactly 0, whatever the row pass gives; its
        // (possibly huge) taps are then not needed and need not fit the accumulator.
        bool zero_col = std::all_of(f.col.begin(), f.col.end(), [](double t) { return t == 0; });
        if (zero_col) std::fill(p.row_taps.begin(), p.row_taps.end(), A(0));
    } else {
        p.window_taps = taps_as<A>(f.taps);
    }
    p.halo = size_t(p.rw) * p.channels;
    p.input_is_a = input_is_accumulator_type<A>(job);
    return p;
}

template <class A> void convert_row(gpk_dtype dtype, const void *src, A *dst, size_t n) {
    switch (dtype) {
    case GPK_U8:
        convert_samples(static_cast<const uint8_t *>(src), dst, n);
        return;
    case GPK_U16:
        convert_samples(static_cast<const uint16_t *>(src), dst, n);
        return;
    default:
        if constexpr (std::is_floating_point_v<A>) {
            if (dtype == GPK_F32)
                convert_samples(static_cast<const float *>(src), dst, n);
            else
                convert_samples(static_cast<const double *>(src), dst, n);
            return;
        }
        fail(GPK_ERR_INTERNAL, "convolve: an integer accumulator for a float image");
    }
}

template <class A> const char *input_row(const Plan<A> &p, size_t sy) {
    return static_cast<const char *>(p.job->in_data) + sy * p.job->in.stride;
}

// Bordered samples [begin, end) of input row `sy` into dst: bordered sample j is row sample j - halo
// (pixel j / channels - rw, channel j % channels), read through the border rule outside the row. Samples
// past the right border are the padding the tap loop reads for outputs it drops: 0.
template <class A> void load_line(const Plan<A> &p, size_t sy, size_t begin, size_t end, A *dst) {
    const gpk_dtype dtype = p.job->in.dtype;
    const size_t sample = gpk_dtype_size(dtype);
    const char *row = input_row(p, sy);
    const size_t inside_begin = std::max(begin, p.halo), inside_end = std::min(end, p.halo + p.n);
    if (inside_begin < inside_end)
        convert_row(dtype, row + (inside_begin - p.halo) * sample, dst + (inside_begin - begin),
                    inside_end - inside_begin);
    auto outside = [&](size_t j) {
        const long long x = (long long)(j / p.channels) - p.rw;
        const long long sx =
            x < (long long)p.width + p.rw ? border_index(x, (long long)p.width, p.border) : -1;
        A v = A(0);
        if (sx >= 0) {
            const size_t k = p.halo + size_t(sx) * p.channels + j % p.channels; // its bordered index
            if (k >= inside_begin && k < inside_end)
                v = dst[k - begin]; // converted above
            else
                convert_row(dtype, row + (k - p.halo) * sample, &v, 1);
        }
        dst[j - begin] = v;
    };
    for (size_t j = begin; j < std::min(end, p.halo); ++j) outside(j);
    for (size_t j = std::max(begin, p.halo + p.n); j < end; ++j) outside(j);
}

// A source row as the horizontal tap pass reads it. `inside` is false for a row outside the image under the
// zero border (every sample 0). It is kept apart from the pointers: with no halo and a row of whole blocks
// read in place, there are no edge lines at all, and `lines` may then be null for a real row.
template <class A> struct SourceRow {
    bool inside = false;
    const A *row = nullptr;   // in place: the input row from the columns' first sample
    const A *lines = nullptr; // the bordered line, or (in place) the left edge line followed by the right
};

// Builds source row `sy` of columns c in `buffer` (c.source_length elements). Local sample i of a line
// built from bordered sample b is row sample c.x0 + b + i - halo, so lines start at bordered sample x0.
template <class A> SourceRow<A> load_source_row(const Plan<A> &p, const Columns &c, size_t sy, A *buffer) {
    if (!c.in_place) {
        load_line(p, sy, c.x0, c.x0 + c.source_length, buffer);
        return {true, nullptr, buffer};
    }
    load_line(p, sy, c.x0, c.x0 + c.left_length, buffer);
    const size_t right = c.x0 + c.right_begin;
    load_line(p, sy, right, right + c.right_length, buffer + c.left_length);
    return {true, reinterpret_cast<const A *>(input_row(p, sy)) + c.x0, buffer};
}

template <class A> const A *segment_line(const Columns &c, const SourceRow<A> &s, Source source) {
    if (!s.inside) return nullptr;
    switch (source) {
    case Source::InPlace:
        return s.row;
    case Source::RightEdge:
        return s.lines + c.left_length;
    default:
        return s.lines;
    }
}

// What one thread needs to filter bands of rows: the ring of window rows and, for a separable filter, the
// lines that the row pass reads; sized for columns of at most `padded` and `source_length` elements
// (Columns), those being filtered in `columns`.
template <class A> struct BandScratch {
    size_t slots;       // window positions kept in the ring
    size_t ring_stride; // elements per ring row
    size_t line_capacity;
    HostArray<A> ring, line;
    Columns columns;
    std::vector<SourceRow<A>> slot_source; // 2D: the window's source rows
    std::vector<const A *> slot_filtered;  // separable: the window's row-filtered rows (null: zero border)
    std::vector<const A *> window;
    BandScratch(const Plan<A> &p, size_t padded, size_t source_length)
        : slots(size_t(p.kh) + kMaxRowsPerPass - 1), ring_stride(p.separable ? padded : source_length),
          line_capacity(p.separable ? source_length : 0),
          ring(host_array<A>(slots * ring_stride, "convolve", "a thread's ring of window rows")),
          line(host_array<A>(line_capacity, "convolve", "a thread's source line")), slot_source(slots),
          slot_filtered(slots), window(slots) {}
    // Makes samples [x0, x0 + n) of each row the columns to filter.
    void set(const Plan<A> &p, size_t x0, size_t n) {
        set_columns(p, x0, n, columns);
        if (columns.ring_row_length > ring_stride || (p.separable && columns.source_length > line_capacity))
            fail(GPK_ERR_INTERNAL, "convolve: columns wider than the scratch made for them");
    }
};

// Fills the ring slot of window position `pos` (an input row index, maybe outside the image).
template <class A> void load_window_row(const Plan<A> &p, BandScratch<A> &s, long long pos) {
    const Columns &c = s.columns;
    const size_t slot = size_t(positive_mod(pos, (long long)s.slots));
    const long long sy = border_index(pos, (long long)p.height, p.border);
    A *ring_row = s.ring.get() + slot * s.ring_stride;
    if (!p.separable) {
        s.slot_source[slot] = sy < 0 ? SourceRow<A>{} : load_source_row(p, c, size_t(sy), ring_row);
        return;
    }
    s.slot_filtered[slot] = sy < 0 ? nullptr : ring_row;
    if (sy < 0) return;
    const SourceRow<A> source = load_source_row(p, c, size_t(sy), s.line.get());
    for (const Segment &seg : c.segments) {
        const A *line = segment_line(c, source, seg.source);
        correlate(&line, p.row_taps.data(), 1, p.kw, p.channels, &ring_row, 1, seg.span);
    }
}

// Where the tap pass puts the values of one output row: samples [0, direct_end) straight into `direct`
// (the output row itself, when it has type A and needs no finishing; direct_end a whole number of blocks
// within the row), the rest into `scratch` (a padded row), at the same local index. The direct part takes
// plain stores whatever the image's size: non-temporal ones, from inside the tap loop or copied out after
// it, were slower (bench/RESULTS.md, variants).
template <class A> struct RowTarget {
    A *direct = nullptr;
    size_t direct_end = 0;
    A *scratch = nullptr;
};

// Runs the tap pass over `span` for `rows` output rows, split where the targets' direct parts end.
template <class A, class Correlate>
void split_pass(const RowTarget<A> *targets, int rows, Span span, Correlate &&correlate_into) {
    A *out[kMaxRowsPerPass] = {};
    const size_t cut = std::clamp(targets[0].direct_end, span.begin, span.end), end = span.end;
    if (span.begin < cut) {
        for (int r = 0; r < rows; ++r) out[r] = targets[r].direct;
        span.end = cut;
        correlate_into(out, span);
    }
    if (cut < end) {
        for (int r = 0; r < rows; ++r) out[r] = targets[r].scratch;
        span.begin = cut;
        span.end = end;
        correlate_into(out, span);
    }
}

// The input rows that the pass after the one for rows [y, y + rows) will load, for `span` to prefetch
// (as bytes from the columns' first sample).
template <class A> void look_ahead(const Plan<A> &p, const Columns &c, size_t y, int rows, Span &span) {
    const size_t sample = gpk_dtype_size(p.job->in.dtype);
    for (int k = 0; k < 2 && k < rows; ++k) {
        const long long sy = border_index((long long)y + rows + k + p.rh, (long long)p.height, p.border);
        span.ahead[k] = sy < 0 ? nullptr : input_row(p, size_t(sy)) + c.x0 * sample;
    }
    span.ahead_sample_bytes = sample;
}

// The window's tap pass for `rows` output rows starting at y (window positions y - rh onwards).
template <class A>
void window_pass(const Plan<A> &p, BandScratch<A> &s, size_t y, int rows, const RowTarget<A> *targets) {
    const Columns &c = s.columns;
    const size_t count = size_t(p.kh + rows - 1);
    auto slot_of = [&](size_t a) {
        return size_t(positive_mod((long long)y - p.rh + (long long)a, (long long)s.slots));
    };
    Span ahead;
    look_ahead(p, c, y, rows, ahead);
    auto with_ahead = [&](Span span) {
        std::copy(std::begin(ahead.ahead), std::end(ahead.ahead), std::begin(span.ahead));
        span.ahead_sample_bytes = ahead.ahead_sample_bytes;
        return span;
    };
    if (p.separable) {
        for (size_t a = 0; a < count; ++a) s.window[a] = s.slot_filtered[slot_of(a)];
        split_pass(targets, rows, with_ahead(Span{0, c.padded, 0}), [&](A *const *out, Span span) {
            correlate(s.window.data(), p.window_taps.data(), p.kh, 1, 0, out, rows, span);
        });
        return;
    }
    for (const Segment &seg : c.segments) {
        for (size_t a = 0; a < count; ++a)
            s.window[a] = segment_line(c, s.slot_source[slot_of(a)], seg.source);
        split_pass(targets, rows, with_ahead(seg.span), [&](A *const *out, Span span) {
            correlate(s.window.data(), p.window_taps.data(), p.kh, p.kw, p.channels, out, rows, span);
        });
    }
}

// Filters rows [y0, y1) of the scratch's columns: target(y) gives the RowTarget of output row y (local
// sample i for row sample columns.x0 + i), then done(y, target) is called.
template <class A, class Target, class Done>
void filter_band(const Plan<A> &p, BandScratch<A> &s, size_t y0, size_t y1, Target &&target, Done &&done) {
    long long next = (long long)y0 - p.rh; // the next window position to load
    for (size_t y = y0; y < y1;) {
        const int rows = int(std::min<size_t>(kMaxRowsPerPass, y1 - y));
        for (; next <= (long long)y + rows - 1 + p.rh; ++next) load_window_row(p, s, next);
        RowTarget<A> targets[kMaxRowsPerPass];
        for (int r = 0; r < rows; ++r) targets[r] = target(y + size_t(r));
        window_pass(p, s, y, rows, targets);
        for (int r = 0; r < rows; ++r) done(y + size_t(r), targets[r]);
        y += size_t(rows);
    }
}

} // namespace gpk::cpu::conv
