// gpk histogram: per-channel histograms of a PNG, a PGM, an .npy or a raw array, as a table, CSV, JSON or a
// plot. Arrays are counted where they lie in the mapped file; .npy samples that cannot be (another byte
// order, misaligned, channels stored as planes) are copied in pieces of bounded size.
#include "args.hpp"
#include "commands.hpp"
#include "common.hpp"
#include "image_io.hpp"
#include "npy.hpp"
#include "plot.hpp"
#include "ranks.hpp"

#include <algorithm>
#include <cinttypes>
#include <cstdint>
#include <cstdio>
#include <optional>

namespace gpkcli {

namespace {

const std::vector<OptionSpec> kHistogramOptions = {
    {0, "bins", "N", "bins per channel (default 256)"},
    {0, "range", "LO:HI", "count samples v with LO <= v < HI (default: see above)"},
    {0, "saturate", "N", "clamp every count at N after counting (255: 8-bit saturating counters)"},
    {0, "raw", "WxH", "read IMAGE as a raw array of W samples by H rows"},
    {0, "dtype", "TYPE", "raw sample type: u8, u16, u32, i32, f32 or f64 (default u8)"},
    {0, "channels", "N", "raw interleaved channels, 1..4 (default 1)"},
    {0, "stride", "BYTES", "raw row pitch in bytes (default W * channels * sample size)"},
    {0, "csv", nullptr, "print CSV: bin,lower,upper and a column per channel"},
    {0, "json", nullptr, "print JSON"},
    {0, "plot", "FILE.png", "draw a bar chart, one colour per channel"},
    {0, "backend", "NAME", "auto, cpu or cuda (default auto)"},
    {'h', "help", nullptr, "show this help"},
};

const char *kHistogramHelp =
    "Usage: gpk histogram [OPTION]... IMAGE\n"
    "Counts the samples of each channel of IMAGE into equal bins over [LO, HI).\n"
    "IMAGE is a PNG (8/16-bit gray, gray+alpha, RGB, RGBA; palettes and transparency expanded), a PGM\n"
    "(P2/P5, maxval up to 65535), a NumPy .npy array (uint8, uint16, uint32, int32, float32, float64;\n"
    "a last axis of 1 to 4 after two or more is the channels) or, with --raw, an array of samples in\n"
    "host byte order.\n"
    "Default range: 8-bit images [0, 256); 16-bit images [0, maxval+1); arrays of u8 [0, 256), u16\n"
    "[0, 65536), u32 and i32 [0, bins) (one bin per value: bin IDs), f32 and f64 [0, 1).\n"
    "Samples outside the range (and NaN) are not counted; the table and JSON say how many.\n\nOptions:\n";

// The samples to count, whatever file they came from.
struct Samples {
    std::vector<uint8_t> bytes;     // a decoded image
    std::optional<MappedFile> file; // the file of an array, counted in place
    const uint8_t *data = nullptr;  // the first sample
    gpk_dtype dtype = GPK_U8;
    size_t width = 0, height = 0, stride = 0;
    unsigned channels = 1;
    unsigned maxval = 0; // images only
    bool raw = false;    // an array (--raw or .npy), not an image
    std::optional<NpyArray> npy;
};

Samples load_raw(const std::string &path, const ParsedArgs &p) {
    Samples s;
    s.raw = true;
    parse_size_pair(p.text("raw", ""), "--raw", &s.width, &s.height);
    s.dtype =
        gpk_dtype(parse_choice(p.text("dtype", "u8"), "--dtype", {"u8", "u16", "u32", "i32", "f32", "f64"}));
    size_t channels = p.whole("channels", 1);
    if (channels < 1 || channels > 4) throw UsageError("--channels must be 1, 2, 3 or 4");
    s.channels = unsigned(channels);
    size_t sample = gpk_dtype_size(s.dtype) * s.channels;
    if (s.width > SIZE_MAX / sample / s.height)
        throw UsageError("--raw " + p.text("raw", "") + " is too large");
    size_t row = s.width * sample;
    s.stride = p.whole("stride", row);
    if (s.stride > SIZE_MAX / s.height) throw UsageError("--stride is too large");
    if (s.stride < row)
        throw UsageError("--stride is " + std::to_string(s.stride) + " bytes; a row needs " +
                         std::to_string(row));
    s.file.emplace(path);
    s.data = s.file->data();
    size_t need = s.stride * (s.height - 1) + row, size = s.file->size();
    if (size < need || size > s.stride * s.height)
        throw Failure(path + ": the file has " + std::to_string(size) + " bytes; " + std::to_string(s.width) +
                      "x" + std::to_string(s.height) + " " + gpk_dtype_name(s.dtype) +
                      " samples with a stride of " + std::to_string(s.stride) + " need " +
                      std::to_string(need) +
                      (need == s.stride * s.height ? "" : " to " + std::to_string(s.stride * s.height)));
    return s;
}

// An .npy array's shape as rows of pixels: two or more axes whose last has 1 to 4 entries are rows ×
// width × channels; otherwise the last axis is the width and the others the rows (0 or 1 axis: 1 row).
void npy_layout(const NpyHeader &h, Samples &s) {
    size_t dims = h.shape.size();
    bool channel_axis = dims >= 3 && h.shape[dims - 1] >= 1 && h.shape[dims - 1] <= 4;
    s.channels = channel_axis ? unsigned(h.shape[dims - 1]) : 1;
    size_t width_axis = channel_axis ? dims - 2 : dims - 1;
    s.width = dims == 0 ? 1 : h.shape[width_axis];
    s.height = 1;
    for (size_t d = 0; d + 1 <= width_axis && dims > 0; ++d) s.height *= h.shape[d];
    s.stride = s.width * s.channels * h.item_size;
}

Samples load_npy(MappedFile file, const std::string &path) {
    Samples s;
    s.raw = true;
    s.npy = parse_npy(file.data(), file.size(), path);
    const NpyHeader &h = s.npy->header;
    if (h.count == 0) throw Failure(path + ": the array " + h.shape_text() + " has no samples");
    s.dtype = h.dtype;
    npy_layout(h, s);
    s.file.emplace(std::move(file));
    s.data = s.npy->data;
    return s;
}

Samples load_file_samples(const std::string &path) {
    MappedFile file(path);
    if (is_npy(file.data(), file.size())) return load_npy(std::move(file), path);
    Image image = decode_image(file.data(), file.size(), path);
    Samples s;
    s.dtype = image.bit_depth == 16 ? GPK_U16 : GPK_U8;
    s.width = image.width;
    s.height = image.height;
    s.channels = image.channels;
    s.stride = image.width * image.channels * image.bytes_per_sample();
    s.maxval = image.maxval;
    s.bytes = std::move(image.pixels);
    s.data = s.bytes.data();
    return s;
}

std::vector<std::string> channel_names(const Samples &s) {
    static const std::vector<std::string> kImage[] = {
        {"gray"}, {"gray", "alpha"}, {"red", "green", "blue"}, {"red", "green", "blue", "alpha"}};
    if (!s.raw) return kImage[s.channels - 1];
    if (s.channels == 1) return {"count"};
    std::vector<std::string> names;
    for (unsigned c = 0; c < s.channels; ++c) names.push_back("c" + std::to_string(c));
    return names;
}

void default_range(const Samples &s, size_t bins, double *lo, double *hi) {
    *lo = 0;
    switch (s.dtype) {
    case GPK_U8:
        *hi = 256;
        break;
    case GPK_U16:
        *hi = s.raw ? 65536.0 : s.maxval + 1.0;
        break;
    case GPK_U32:
    case GPK_I32:
        *hi = double(bins);
        break;
    default:
        *hi = 1;
        break;
    }
}

struct Counts {
    gpk_histogram_params params;
    std::vector<uint64_t> hist, uncounted;
    std::vector<std::string> names;
};

// Whether an .npy array is counted where it lies: host byte order, samples aligned, channels interleaved
// (C order, or a single channel in any order, since order does not change counts).
bool counted_in_place(const NpyArray &a, unsigned channels) {
    const NpyHeader &h = a.header;
    return !h.swap_bytes && h.data_offset % h.item_size == 0 && (!h.fortran_order || channels == 1);
}

void add_counts(const std::vector<uint64_t> &from, uint64_t *to) {
    for (size_t k = 0; k < from.size(); ++k) to[k] += from[k];
}

// Counts an .npy array in pieces of at most 16 MiB copied to host order: whole pixels, or with channels
// stored as planes (Fortran order), one plane after another as a single channel. Counts are exact and
// saturate at the end.
void count_in_pieces(gpk_context *ctx, const Samples &s, Counts &c) {
    const NpyHeader &h = s.npy->header;
    size_t planes = h.fortran_order ? s.channels : 1, per_plane = h.count / planes;
    size_t pixel = h.fortran_order ? 1 : s.channels; // samples per pixel in a piece
    size_t piece = std::max<size_t>(1, (size_t(16) << 20) / h.item_size / pixel) * pixel;
    std::vector<uint8_t> buffer(std::min(piece, per_plane) * h.item_size);
    gpk_histogram_params params = c.params;
    params.channels = pixel;
    params.height = 1;
    params.stride = 0;
    params.saturate = 0;
    std::vector<uint64_t> hist(params.bins * pixel), uncounted(pixel);
    for (size_t plane = 0; plane < planes; ++plane) {
        for (size_t first = 0; first < per_plane; first += piece) {
            size_t samples = std::min(piece, per_plane - first);
            npy_copy_samples(*s.npy, plane * per_plane + first, samples, buffer.data());
            params.width = samples / pixel;
            check_status(gpk_histogram(ctx, &params, buffer.data(), hist.data(), uncounted.data()), ctx,
                         "histogram");
            add_counts(hist, &c.hist[plane * params.bins]);
            add_counts(uncounted, &c.uncounted[plane]);
        }
    }
    if (c.params.saturate)
        for (auto &count : c.hist) count = std::min(count, c.params.saturate);
}

Counts count_samples(const Samples &s, const ParsedArgs &p) {
    Counts c;
    gpk_histogram_params_init(&c.params);
    c.params.dtype = s.dtype;
    c.params.width = s.width;
    c.params.height = s.height;
    c.params.channels = s.channels;
    c.params.stride = s.stride;
    c.params.bins = p.whole("bins", 256);
    if (c.params.bins == 0) throw UsageError("--bins must be at least 1");
    default_range(s, c.params.bins, &c.params.lower, &c.params.upper);
    if (p.has("range")) parse_range(p.text("range", ""), "--range", &c.params.lower, &c.params.upper);
    c.params.saturate = p.whole("saturate", 0);
    c.names = channel_names(s);
    c.hist.resize(c.params.bins * s.channels);
    c.uncounted.resize(s.channels);
    Context ctx = ranks::open_context(parse_backend(p.text("backend", "auto")));
    if (s.npy && !counted_in_place(*s.npy, s.channels)) {
        count_in_pieces(ctx.get(), s, c);
        return c;
    }
    if (s.npy && s.npy->header.fortran_order) // one channel: counted as a single row in stored order
        c.params.width = s.width * s.height, c.params.height = 1, c.params.stride = 0;
    check_status(ranks::histogram(ctx.get(), &c.params, s.data, c.hist.data(), c.uncounted.data()), ctx.get(),
                 "histogram");
    return c;
}

double bin_edge(const gpk_histogram_params &p, size_t b) {
    return p.lower + (p.upper - p.lower) * double(b) / double(p.bins);
}

void print_table(const std::string &path, const Samples &s, const Counts &c) {
    std::printf("# %s: %zux%zu, %s, %u channel%s; %zu bins over [%g, %g)%s\n", path.c_str(), s.width,
                s.height, gpk_dtype_name(s.dtype), s.channels, s.channels > 1 ? "s" : "", c.params.bins,
                c.params.lower, c.params.upper,
                c.params.saturate ? (", saturating at " + std::to_string(c.params.saturate)).c_str() : "");
    std::printf("%8s %14s", "bin", "lower");
    for (const auto &name : c.names) std::printf(" %14s", name.c_str());
    std::printf("\n");
    for (size_t b = 0; b < c.params.bins; ++b) {
        std::printf("%8zu %14.8g", b, bin_edge(c.params, b));
        for (unsigned ch = 0; ch < s.channels; ++ch)
            std::printf(" %14" PRIu64, c.hist[ch * c.params.bins + b]);
        std::printf("\n");
    }
    std::printf("%-23s", "# not counted");
    for (uint64_t u : c.uncounted) std::printf(" %14" PRIu64, u);
    std::printf("\n");
}

void print_csv(const Samples &s, const Counts &c) {
    std::printf("bin,lower,upper");
    for (const auto &name : c.names) std::printf(",%s", name.c_str());
    std::printf("\n");
    for (size_t b = 0; b < c.params.bins; ++b) {
        std::printf("%zu,%s,%s", b, json_number(bin_edge(c.params, b)).c_str(),
                    json_number(bin_edge(c.params, b + 1)).c_str());
        for (unsigned ch = 0; ch < s.channels; ++ch) std::printf(",%" PRIu64, c.hist[ch * c.params.bins + b]);
        std::printf("\n");
    }
}

void print_json(const std::string &path, const Samples &s, const Counts &c) {
    std::printf("{\n  \"file\": %s,\n  \"width\": %zu,\n  \"height\": %zu,\n  \"dtype\": \"%s\",\n"
                "  \"bins\": %zu,\n  \"lower\": %s,\n  \"upper\": %s,\n  \"saturate\": %" PRIu64 ",\n"
                "  \"channels\": [",
                json_string(path).c_str(), s.width, s.height, gpk_dtype_name(s.dtype), c.params.bins,
                json_number(c.params.lower).c_str(), json_number(c.params.upper).c_str(), c.params.saturate);
    for (unsigned ch = 0; ch < s.channels; ++ch) {
        std::printf("%s\n    {\"name\": %s, \"uncounted\": %" PRIu64 ", \"counts\": [", ch ? "," : "",
                    json_string(c.names[ch]).c_str(), c.uncounted[ch]);
        for (size_t b = 0; b < c.params.bins; ++b)
            std::printf("%s%" PRIu64, b ? ", " : "", c.hist[ch * c.params.bins + b]);
        std::printf("]}");
    }
    std::printf("\n  ]\n}\n");
}

void write_plot(const std::string &plot_path, const std::string &path, const Samples &s, const Counts &c) {
    std::vector<PlotSeries> series;
    for (unsigned ch = 0; ch < s.channels; ++ch) series.push_back({c.names[ch], &c.hist[ch * c.params.bins]});
    size_t slash = path.find_last_of('/');
    std::string title = "Histogram of " + (slash == std::string::npos ? path : path.substr(slash + 1));
    char range[128];
    std::snprintf(range, sizeof range, "%zu bins over [%g, %g)", c.params.bins, c.params.lower,
                  c.params.upper);
    std::string subtitle =
        std::to_string(s.width) + " x " + std::to_string(s.height) + ", " + gpk_dtype_name(s.dtype) + ", " +
        std::to_string(s.channels) + " channel" + (s.channels > 1 ? "s" : "") + "; " + range +
        (c.params.saturate ? "; counts saturate at " + std::to_string(c.params.saturate) : "");
    write_file_atomically(plot_path, draw_histogram(series, c.params.bins, c.params.lower, c.params.upper,
                                                    title, subtitle, "sample value"));
}

} // namespace

int run_histogram(const Args &args) {
    ParsedArgs p = parse_args(args, kHistogramOptions);
    if (p.has("help")) {
        std::printf("%s%s", kHistogramHelp, options_help(kHistogramOptions).c_str());
        return kExitOk;
    }
    if (p.positional().size() != 1)
        throw UsageError(p.positional().empty() ? "an IMAGE is needed" : "one IMAGE only");
    if (p.has("csv") && p.has("json")) throw UsageError("--csv and --json exclude each other");
    for (const char *raw_only : {"dtype", "channels", "stride"})
        if (p.has(raw_only) && !p.has("raw")) throw UsageError(std::string("--") + raw_only + " needs --raw");
    std::string plot_path = p.text("plot", "");
    if (p.has("plot")) check_png_output_path(plot_path, "--plot");
    const std::string &path = p.positional()[0];
    Samples s = p.has("raw") ? load_raw(path, p) : load_file_samples(path);
    Counts c = count_samples(s, p);
    if (p.has("json"))
        print_json(path, s, c);
    else if (p.has("csv"))
        print_csv(s, c);
    else
        print_table(path, s, c);
    if (p.has("plot") && ranks::root()) write_plot(plot_path, path, s, c);
    return kExitOk;
}

} // namespace gpkcli
