// gpk convolve: filters a PNG, PGM or .npy array with a named filter or one read from a file of taps,
// keeping the sample type and channels unless --out-type says otherwise.
#include "args.hpp"
#include "commands.hpp"
#include "common.hpp"
#include "image_io.hpp"
#include "npy.hpp"
#include "ranks.hpp"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <sys/stat.h>

namespace gpkcli {

namespace {

const std::vector<OptionSpec> kConvolveOptions = {
    {'f', "filter", "SPEC",
     "identity, lp3, lp5, log9, smooth5, box:K, gauss:SIGMA, or a FILE of taps (required)"},
    {'b', "border", "RULE", "zero, clamp, mirror, reflect or wrap (default clamp)"},
    {0, "normalize", "MODE", "none, sum or minmax (default none)"},
    {0, "accumulate", "PREC", "f32 or f64, for non-integer taps (default f32, f64 for f64 output)"},
    {0, "out-type", "TYPE", "u8 or u16 (PNG, PGM, .npy), f32 or f64 (.npy, .raw) (default: the input's)"},
    {0, "ascii", nullptr, "write PGM output as plain text (P2) instead of binary (P5)"},
    {0, "backend", "NAME", "auto, cpu or cuda (default auto)"},
    {'h', "help", nullptr, "show this help"},
};

const char *kConvolveHelp =
    "Usage: gpk convolve [OPTION]... --filter SPEC IN OUT\n"
    "Correlates IN (PNG, PGM, or a NumPy .npy array of uint8, uint16, float32 or float64 with shape\n"
    "(H, W) or (H, W, C), C = 1..4) with a filter and writes OUT (.png, .pgm, .npy, or .raw for float\n"
    "output).\n"
    "Every channel is filtered, alpha included. Integer images with integer taps are computed exactly.\n"
    "Output samples round to nearest and saturate to the output type. When the output type is the\n"
    "input's, the input's maxval is kept (a PGM's own maxval; samples above it are clamped to it).\n"
    "A FILE of taps holds one row of numbers per line (odd sizes; '#' starts a comment), or two lines\n"
    "'row: ...' and 'col: ...' for a separable filter (the row filter runs first).\n"
    ".npy output has the input's shape ((H, W) for a gray image, (H, W, C) otherwise); .raw output is\n"
    "packed samples in host byte order, channels interleaved.\n\nOptions:\n";

bool is_named_filter(const std::string &spec) {
    for (const char *name : {"identity", "lp3", "lp5", "log9", "smooth5"})
        if (spec == name) return true;
    return spec.rfind("box:", 0) == 0 || spec.rfind("gauss:", 0) == 0;
}

// The numbers on one line of a filter file; `where` ("FILE:LINE") names it in errors.
std::vector<double> parse_taps(const std::string &text, const std::string &where) {
    std::vector<double> taps;
    const char *p = text.c_str();
    while (*p) {
        if (std::strchr(" \t\r,", *p)) {
            ++p;
            continue;
        }
        char *end = nullptr;
        double v = std::strtod(p, &end);
        size_t len = std::strcspn(p, " \t\r,");
        if (end != p + len) throw Failure(where + ": '" + std::string(p, len) + "' is not a number");
        taps.push_back(v);
        p = end;
    }
    return taps;
}

// The taps of a filter file: rows of a 2D filter, or the two halves of a separable one.
struct FilterText {
    std::vector<std::vector<double>> rows;
    std::vector<double> row_taps, col_taps;
    bool has_row = false, has_col = false;
};

// Adds one line (comment and leading blanks removed) to `ft`; `where` names it in errors.
void add_filter_line(FilterText &ft, const std::string &line, const std::string &where) {
    if (line.rfind("row:", 0) == 0 || line.rfind("col:", 0) == 0) {
        bool is_row = line[0] == 'r';
        if (is_row ? ft.has_row : ft.has_col)
            throw Failure(where + ": a second '" + line.substr(0, 4) + "' line");
        (is_row ? ft.row_taps : ft.col_taps) = parse_taps(line.substr(4), where);
        (is_row ? ft.has_row : ft.has_col) = true;
        return;
    }
    ft.rows.push_back(parse_taps(line, where));
    if (ft.rows.back().size() != ft.rows.front().size())
        throw Failure(where + ": " + std::to_string(ft.rows.back().size()) + " taps, but the first row has " +
                      std::to_string(ft.rows.front().size()));
}

FilterText read_filter_text(const std::string &path) {
    std::vector<uint8_t> bytes = read_file(path);
    std::string text(bytes.begin(), bytes.end());
    FilterText ft;
    size_t line_no = 0, start = 0;
    while (start < text.size()) {
        size_t end = std::min(text.find('\n', start), text.size());
        std::string line = text.substr(start, end - start);
        start = end + 1;
        ++line_no;
        line = line.substr(0, line.find('#'));
        size_t first = line.find_first_not_of(" \t\r");
        if (first != std::string::npos)
            add_filter_line(ft, line.substr(first), path + ":" + std::to_string(line_no));
    }
    if ((ft.has_row || ft.has_col) && !ft.rows.empty())
        throw Failure(path + ": mixes rows of a 2D filter with 'row:'/'col:' lines");
    if (ft.has_row != ft.has_col)
        throw Failure(path + ": a separable filter needs both a 'row:' and a 'col:' line");
    if (!ft.has_row && ft.rows.empty()) throw Failure(path + ": no taps in the filter file");
    return ft;
}

// Reads a filter file: rows of taps, or "row:" and "col:" lines for a separable pair.
Filter read_filter_file(const std::string &path) {
    FilterText ft = read_filter_text(path);
    gpk_filter *f = nullptr;
    gpk_status status;
    if (ft.has_row) {
        status = gpk_filter_create_separable(&f, ft.row_taps.size(), ft.row_taps.data(), ft.col_taps.size(),
                                             ft.col_taps.data());
    } else {
        std::vector<double> taps;
        for (const auto &r : ft.rows) taps.insert(taps.end(), r.begin(), r.end());
        status = gpk_filter_create_2d(&f, ft.rows.size(), ft.rows.front().size(), taps.data());
    }
    if (status != GPK_OK) throw Failure(path + ": " + gpk_context_last_error(nullptr));
    return Filter(f);
}

Filter make_filter(const std::string &spec) {
    if (is_named_filter(spec)) {
        gpk_filter *f = nullptr;
        if (gpk_filter_create_named(&f, spec.c_str()) != GPK_OK)
            throw UsageError("--filter " + spec + ": " + gpk_context_last_error(nullptr));
        return Filter(f);
    }
    struct stat st;
    if (stat(spec.c_str(), &st) != 0)
        throw UsageError("unknown filter '" + spec +
                         "': not identity, lp3, lp5, log9, smooth5, box:K or "
                         "gauss:SIGMA, and no file of that name");
    return read_filter_file(spec);
}

struct ConvolveSetup {
    std::string in_path, out_path;
    gpk_convolve_params params;
    std::string out_type; // "" = the input's
    bool ascii = false;
    gpk_backend backend = GPK_BACKEND_AUTO;
};

ConvolveSetup convolve_setup(const ParsedArgs &p) {
    ConvolveSetup s;
    if (p.positional().size() != 2) throw UsageError("IN and OUT are needed");
    s.in_path = p.positional()[0];
    s.out_path = p.positional()[1];
    gpk_convolve_params_init(&s.params);
    s.params.border = gpk_border(
        parse_choice(p.text("border", "clamp"), "--border", {"zero", "clamp", "mirror", "reflect", "wrap"}));
    s.params.normalize =
        gpk_normalize(parse_choice(p.text("normalize", "none"), "--normalize", {"none", "sum", "minmax"}));
    if (p.has("accumulate"))
        s.params.accumulate =
            gpk_accumulate(1 + parse_choice(p.text("accumulate", ""), "--accumulate", {"f32", "f64"}));
    if (p.has("out-type")) {
        s.out_type = p.text("out-type", "");
        parse_choice(s.out_type, "--out-type", {"u8", "u16", "f32", "f64"});
    }
    s.ascii = p.has("ascii");
    s.backend = parse_backend(p.text("backend", "auto"));
    if (!p.has("filter")) throw UsageError("--filter is needed");
    return s;
}

// The samples to filter: a decoded image, or an .npy array in host byte order and C order.
struct Input {
    gpk_dtype dtype = GPK_U8;
    size_t width = 0, height = 0;
    unsigned channels = 1;
    unsigned maxval = 255; // integer samples: the image's maxval, the type's largest value for arrays
    std::vector<uint8_t> samples;
    bool channel_axis = false; // an .npy of shape (H, W, C), also for C = 1
};

Input npy_input(const MappedFile &file, const std::string &path) {
    NpyArray array = parse_npy(file.data(), file.size(), path);
    const NpyHeader &h = array.header;
    if (h.dtype != GPK_U8 && h.dtype != GPK_U16 && h.dtype != GPK_F32 && h.dtype != GPK_F64)
        throw Failure(path + ": convolve reads uint8, uint16, float32 and float64 arrays, not '" + h.descr +
                      "'");
    size_t dims = h.shape.size();
    if (dims < 2 || dims > 3 || (dims == 3 && (h.shape[2] < 1 || h.shape[2] > 4)))
        throw Failure(path + ": the array's shape is " + h.shape_text() +
                      "; convolve reads (H, W) or (H, W, C) with C = 1..4 channels");
    if (h.count == 0) throw Failure(path + ": the array " + h.shape_text() + " has no samples");
    Input in;
    in.dtype = h.dtype;
    in.height = h.shape[0];
    in.width = h.shape[1];
    in.channels = dims == 3 ? unsigned(h.shape[2]) : 1;
    in.maxval = h.dtype == GPK_U16 ? 65535 : 255;
    in.samples = npy_c_order_samples(array);
    in.channel_axis = dims == 3;
    return in;
}

Input read_input(const std::string &path) {
    MappedFile file(path);
    if (is_npy(file.data(), file.size())) return npy_input(file, path);
    Image image = decode_image(file.data(), file.size(), path);
    Input in;
    in.dtype = image.bit_depth == 16 ? GPK_U16 : GPK_U8;
    in.width = image.width;
    in.height = image.height;
    in.channels = image.channels;
    in.maxval = image.maxval;
    in.samples = std::move(image.pixels);
    return in;
}

gpk_dtype output_dtype(const ConvolveSetup &s, const Input &in) {
    if (s.out_type.empty()) return in.dtype;
    const char *names[] = {"u8", "u16", "u32", "i32", "f32", "f64"};
    for (int t = 0; t < 6; ++t)
        if (s.out_type == names[t]) return gpk_dtype(t);
    throw UsageError("--out-type " + s.out_type);
}

// The output as an image file: the input's maxval when the type is kept, else the type's full range.
Image output_image(const Input &in, gpk_dtype dtype, std::vector<uint8_t> samples) {
    Image out;
    out.width = in.width;
    out.height = in.height;
    out.channels = in.channels;
    out.bit_depth = dtype == GPK_U16 ? 16 : 8;
    bool kept = dtype == in.dtype;
    out.maxval = kept ? in.maxval : (dtype == GPK_U16 ? 65535 : 255);
    out.pixels = std::move(samples);
    for (size_t i = 0; kept && out.maxval < (1u << out.bit_depth) - 1 && i < out.sample_count(); ++i)
        if (out.sample(i) > out.maxval) out.set_sample(i, out.maxval);
    return out;
}

} // namespace

int run_convolve(const Args &args) {
    ParsedArgs p = parse_args(args, kConvolveOptions);
    if (p.has("help")) {
        std::printf("%s%s", kConvolveHelp, options_help(kConvolveOptions).c_str());
        return kExitOk;
    }
    ConvolveSetup s = convolve_setup(p);
    Filter filter = make_filter(p.text("filter", ""));
    s.params.filter = filter.get();
    Input in = read_input(s.in_path);
    gpk_dtype out_dtype = output_dtype(s, in);
    bool float_out = out_dtype == GPK_F32 || out_dtype == GPK_F64;
    size_t dot = s.out_path.find_last_of('.');
    std::string ext = dot == std::string::npos ? "" : s.out_path.substr(dot);
    bool raw_out = ext == ".raw", npy_out = ext == ".npy", image_out = !raw_out && !npy_out;
    if (raw_out && !float_out) throw UsageError("a .raw OUT needs --out-type f32 or f64");
    if (image_out && float_out) throw UsageError("f32 and f64 output go to a .npy or .raw file");
    ImageFormat format = image_out ? format_for_path(s.out_path, s.ascii) : ImageFormat::Png;
    if (image_out && format != ImageFormat::Png && in.channels != 1)
        throw Failure(s.out_path + ": PGM holds one gray channel and " + s.in_path + " has " +
                      std::to_string(in.channels) + "; write a .png instead");

    gpk_image in_desc, out_desc;
    gpk_image_init(&in_desc, in.dtype, in.width, in.height, in.channels);
    gpk_image_init(&out_desc, out_dtype, in.width, in.height, in.channels);
    std::vector<uint8_t> out(in.width * in.height * in.channels * gpk_dtype_size(out_dtype));
    Context ctx = ranks::open_context(s.backend);
    check_status(ranks::convolve(ctx.get(), &s.params, &in_desc, in.samples.data(), &out_desc, out.data()),
                 ctx.get(), "convolve");
    if (!ranks::root()) return kExitOk; // under mpirun rank 0 holds the gathered output
    if (raw_out) {
        write_file_atomically(s.out_path, out);
    } else if (npy_out) {
        std::vector<size_t> shape = {in.height, in.width};
        if (in.channels > 1 || in.channel_axis) shape.push_back(in.channels);
        write_npy(s.out_path, out_dtype, shape, out.data());
    } else {
        write_image(s.out_path, output_image(in, out_dtype, std::move(out)), format);
    }
    return kExitOk;
}

} // namespace gpkcli
