// gpk convolve against the library's own result: every named filter, the border rules and
// normalisations, 8- and 16-bit gray and colour images, other output types, and filter files.
#include "cli_test.hpp"
#include "images.hpp"

#include "gpk.h"

#include <cstring>
#include <memory>

namespace cli {

namespace {

struct Input {
    std::string path;
    gpk_dtype dtype;
    size_t width, height;
    unsigned channels, maxval;
    std::vector<unsigned> samples;
};

Input gray8() {
    images::Pgm p;
    p.width = 41, p.height = 29, p.maxval = 255;
    p.samples = random_values(p.width * p.height, 256, 11);
    images::write_text(tmp("in8.pgm"), images::pgm_text(p));
    return {tmp("in8.pgm"), GPK_U8, p.width, p.height, 1, 255, p.samples};
}

Input gray16(unsigned maxval) {
    images::Pgm p;
    p.width = 19, p.height = 13, p.maxval = maxval;
    p.samples = random_values(p.width * p.height, maxval + 1, 12);
    std::string path = tmp("in16_" + std::to_string(maxval) + ".pgm");
    images::write_text(path, images::pgm_text(p));
    return {path, GPK_U16, p.width, p.height, 1, maxval, p.samples};
}

Input rgba8() {
    images::PngFile f;
    f.width = 23, f.height = 17, f.color_type = PNG_COLOR_TYPE_RGB_ALPHA;
    f.samples = random_values(f.width * f.height * 4, 256, 13);
    images::write_png(tmp("in.png"), f);
    return {tmp("in.png"), GPK_U8, f.width, f.height, 4, 255, f.samples};
}

// The library's result for `in` with the CLI's options; integer outputs as unsigned, floats as doubles.
std::vector<double> library_result(const Input &in, const gpk_filter *filter, gpk_border border,
                                   gpk_normalize normalize, gpk_accumulate accumulate, gpk_dtype out_dtype) {
    size_t n = in.samples.size();
    std::vector<uint8_t> src(n * gpk_dtype_size(in.dtype)), dst(n * gpk_dtype_size(out_dtype));
    for (size_t i = 0; i < n; ++i) {
        if (in.dtype == GPK_U8)
            src[i] = uint8_t(in.samples[i]);
        else
            reinterpret_cast<uint16_t *>(src.data())[i] = uint16_t(in.samples[i]);
    }
    gpk_image in_desc, out_desc;
    gpk_image_init(&in_desc, in.dtype, in.width, in.height, in.channels);
    gpk_image_init(&out_desc, out_dtype, in.width, in.height, in.channels);
    gpk_convolve_params p;
    gpk_convolve_params_init(&p);
    p.filter = filter, p.border = border, p.normalize = normalize, p.accumulate = accumulate;
    gpk_context *ctx = nullptr;
    CHECK_OK(nullptr, gpk_context_create(&ctx, nullptr));
    CHECK_OK(ctx, gpk_convolve(ctx, &p, &in_desc, src.data(), &out_desc, dst.data()));
    gpk_context_destroy(ctx);
    std::vector<double> out(n);
    for (size_t i = 0; i < n; ++i) {
        switch (out_dtype) {
        case GPK_U8:
            out[i] = dst[i];
            break;
        case GPK_U16:
            out[i] = reinterpret_cast<const uint16_t *>(dst.data())[i];
            break;
        case GPK_F32:
            out[i] = reinterpret_cast<const float *>(dst.data())[i];
            break;
        default:
            out[i] = reinterpret_cast<const double *>(dst.data())[i];
            break;
        }
    }
    return out;
}

// What the CLI wrote to `path` (.pgm, .png or .raw of out_dtype).
std::vector<double> cli_result(const std::string &path, gpk_dtype out_dtype) {
    std::vector<double> out;
    if (out_dtype == GPK_F32)
        for (float v : read_raw<float>(path)) out.push_back(v);
    else if (out_dtype == GPK_F64)
        out = read_raw<double>(path);
    else if (path.size() > 4 && path.substr(path.size() - 4) == ".pgm")
        for (unsigned v : images::read_pgm(path).samples) out.push_back(v);
    else
        for (unsigned v : images::read_png(path).samples) out.push_back(v);
    return out;
}

struct Case {
    std::string filter;               // the --filter argument
    std::vector<std::string> options; // more CLI options
    gpk_border border = GPK_BORDER_CLAMP;
    gpk_normalize normalize = GPK_NORMALIZE_NONE;
    gpk_accumulate accumulate = GPK_ACCUMULATE_AUTO;
    gpk_dtype out_dtype; // GPK_I32 here means "the input's"
    std::string out_ext;
};

void run_case(const Input &in, const Case &c, const gpk_filter *filter, size_t index) {
    gpk_dtype out_dtype = c.out_dtype == GPK_I32 ? in.dtype : c.out_dtype;
    std::string out = tmp("out" + std::to_string(index) + c.out_ext);
    std::vector<std::string> args = {"convolve", "--filter", c.filter, in.path, out};
    args.insert(args.end(), c.options.begin(), c.options.end());
    expect_ok(args);
    std::vector<double> want = library_result(in, filter, c.border, c.normalize, c.accumulate, out_dtype);
    if (out_dtype == in.dtype && in.maxval < (in.dtype == GPK_U8 ? 255u : 65535u))
        for (auto &v : want) v = std::min(v, double(in.maxval)); // a PGM keeps its maxval
    CHECK_MSG(cli_result(out, out_dtype) == want, joined(args) + ": differs from the library");
}

gpk_filter *named(const std::string &name) {
    gpk_filter *f = nullptr;
    CHECK_OK(nullptr, gpk_filter_create_named(&f, name.c_str()));
    return f;
}

void check_named_filters(const Input &in, const std::string &ext, size_t &index) {
    const gpk_dtype same = GPK_I32;
    std::vector<Case> cases = {
        {"identity", {}, GPK_BORDER_CLAMP, GPK_NORMALIZE_NONE, GPK_ACCUMULATE_AUTO, same, ext},
        {"lp3", {}, GPK_BORDER_CLAMP, GPK_NORMALIZE_NONE, GPK_ACCUMULATE_AUTO, same, ext},
        {"lp3",
         {"--border", "zero", "--normalize", "minmax"},
         GPK_BORDER_ZERO,
         GPK_NORMALIZE_MINMAX,
         GPK_ACCUMULATE_AUTO,
         same,
         ext},
        {"lp5", {"--border", "wrap"}, GPK_BORDER_WRAP, GPK_NORMALIZE_NONE, GPK_ACCUMULATE_AUTO, same, ext},
        {"log9",
         {"--border", "reflect", "--normalize", "minmax"},
         GPK_BORDER_REFLECT,
         GPK_NORMALIZE_MINMAX,
         GPK_ACCUMULATE_AUTO,
         same,
         ext},
        {"smooth5",
         {"--normalize", "sum", "--border", "mirror"},
         GPK_BORDER_MIRROR,
         GPK_NORMALIZE_SUM,
         GPK_ACCUMULATE_AUTO,
         same,
         ext},
        {"box:5",
         {"--normalize", "sum"},
         GPK_BORDER_CLAMP,
         GPK_NORMALIZE_SUM,
         GPK_ACCUMULATE_AUTO,
         same,
         ext},
        {"gauss:1.5", {}, GPK_BORDER_CLAMP, GPK_NORMALIZE_NONE, GPK_ACCUMULATE_AUTO, same, ext},
        {"gauss:1.5",
         {"--accumulate", "f64", "--border", "mirror"},
         GPK_BORDER_MIRROR,
         GPK_NORMALIZE_NONE,
         GPK_ACCUMULATE_F64,
         same,
         ext},
        {"lp3",
         {"--out-type", "f32"},
         GPK_BORDER_CLAMP,
         GPK_NORMALIZE_NONE,
         GPK_ACCUMULATE_AUTO,
         GPK_F32,
         ".raw"},
        {"gauss:2",
         {"--out-type", "f64", "--accumulate", "f64"},
         GPK_BORDER_CLAMP,
         GPK_NORMALIZE_NONE,
         GPK_ACCUMULATE_F64,
         GPK_F64,
         ".raw"},
        {"smooth5",
         {"--out-type", "u16"},
         GPK_BORDER_CLAMP,
         GPK_NORMALIZE_NONE,
         GPK_ACCUMULATE_AUTO,
         GPK_U16,
         ".png"},
    };
    for (const Case &c : cases) {
        std::unique_ptr<gpk_filter, void (*)(gpk_filter *)> f(named(c.filter), gpk_filter_destroy);
        run_case(in, c, f.get(), index++);
    }
}

void check_filter_files(const Input &in, size_t &index) {
    images::write_text(tmp("blur.txt"), "# a 3x3 blur\n1 2 1\n2, 4, 2\n\n1 2 1   # last row\n");
    const double taps[] = {1, 2, 1, 2, 4, 2, 1, 2, 1};
    gpk_filter *f = nullptr;
    CHECK_OK(nullptr, gpk_filter_create_2d(&f, 3, 3, taps));
    run_case(in,
             {tmp("blur.txt"),
              {"--normalize", "sum"},
              GPK_BORDER_CLAMP,
              GPK_NORMALIZE_SUM,
              GPK_ACCUMULATE_AUTO,
              GPK_I32,
              ".pgm"},
             f, index++);
    gpk_filter_destroy(f);
    images::write_text(tmp("sep.txt"), "row: 1 4 6 4 1\ncol: -1 0 1\n");
    const double row[] = {1, 4, 6, 4, 1}, col[] = {-1, 0, 1};
    CHECK_OK(nullptr, gpk_filter_create_separable(&f, 5, row, 3, col));
    run_case(in,
             {tmp("sep.txt"),
              {"--border", "zero", "--out-type", "f32"},
              GPK_BORDER_ZERO,
              GPK_NORMALIZE_NONE,
              GPK_ACCUMULATE_AUTO,
              GPK_F32,
              ".raw"},
             f, index++);
    gpk_filter_destroy(f);
}

} // namespace

void section_convolve() {
    size_t index = 0;
    check_named_filters(gray8(), ".pgm", index);
    check_named_filters(gray16(65535), ".pgm", index);
    check_named_filters(gray16(1000), ".pgm", index);
    check_named_filters(rgba8(), ".png", index);
    check_filter_files(gray8(), index);
}

} // namespace cli
