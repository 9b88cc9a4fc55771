// gpk heat: the check on the course's pattern, compared line by line; the default run on the
// built-in pattern with its heat map (in every build); Ctrl-C; the progress bar on a terminal only.
#include "cli_test.hpp"
#include "images.hpp"

#include <cmath>
#include <cstdlib>

namespace cli {

namespace {

const char *kHeader =
    "   Iterations        T(min)        T(max)       T(diff)        T(avg)          Time        FLOP/s";

struct Report {
    size_t niter = 0;
    double tmin = 0, tmax = 0, maxdiff = 0, tavg = 0, time = 0, flops = 0;
};

// Parses a report line and checks that it is exactly "%-13zu % .6e % .6e % .6e % .6e % .6e % .6e".
bool parse_report(const std::string &line, Report *r) {
    int used = 0;
    if (std::sscanf(line.c_str(), "%zu %lf %lf %lf %lf %lf %lf%n", &r->niter, &r->tmin, &r->tmax, &r->maxdiff,
                    &r->tavg, &r->time, &r->flops, &used) != 7 ||
        size_t(used) != line.size())
        return false;
    char again[256];
    std::snprintf(again, sizeof again, "%-13zu % .6e % .6e % .6e % .6e % .6e % .6e", r->niter, r->tmin,
                  r->tmax, r->maxdiff, r->tavg, r->time, r->flops);
    return line == again;
}

std::string sci(double v) {
    char text[32];
    std::snprintf(text, sizeof text, "%.6e", v);
    return text;
}

// The published values for 5000 iterations of pat1_100x150.pgm.
void check_spec_final(const Report &r, double period) {
    CHECK_EQ(r.niter, size_t(5000));
    CHECK_MSG(sci(r.tmin) == "-6.818562e+00", sci(r.tmin));
    CHECK_MSG(sci(r.tmax) == "2.687404e+01", sci(r.tmax));
    CHECK_MSG(sci(r.maxdiff) == "4.175908e-03", sci(r.maxdiff));
    CHECK_MSG(sci(r.tavg) == "8.652341e+00", sci(r.tavg));
    double flops = 150.0 * 100.0 * (5000 * 12 + 5000 / period) / r.time;
    CHECK_MSG(std::fabs(r.flops - flops) <= 1e-5 * flops, sci(r.flops) + " vs " + sci(flops));
}

std::string data_file() {
    const char *dir = std::getenv("GPK_TEST_DATA");
    std::string path = dir ? std::string(dir) + "/pat1_100x150.pgm" : "";
    if (path.empty() || images::read_text(path).empty())
        skip_section("GPK_TEST_DATA/pat1_100x150.pgm is absent");
    return path;
}

std::vector<std::string> check_args(const std::string &c, const std::string &t) {
    return {"heat",  "-n", "150",  "-m", "100", "-i", "5000", "-k", "500", "-e",
            "0.001", "-L", "-100", "-H", "100", "-c", c,      "-t", t};
}

} // namespace

void section_heat_check() {
    std::string pat = data_file();
    proc::Result r = expect_ok(check_args(pat, pat));
    std::vector<std::string> lines = lines_of(r.out);
    CHECK_EQ(lines.size(), size_t(2));
    if (lines.size() != 2) return;
    CHECK_MSG(lines[0] == kHeader, lines[0]);
    Report final;
    CHECK_MSG(parse_report(lines[1], &final), lines[1]);
    check_spec_final(final, 500);
    CHECK(r.err.empty()); // no progress bar when stderr is not a terminal

    // With -r: a line every 500 iterations (5000 included), then the final line.
    std::vector<std::string> args = check_args(pat, pat);
    args.push_back("-r");
    lines = lines_of(expect_ok(args).out);
    CHECK_EQ(lines.size(), size_t(12));
    for (size_t k = 1; k < lines.size(); ++k) {
        Report periodic;
        CHECK_MSG(parse_report(lines[k], &periodic), lines[k]);
        CHECK_EQ(periodic.niter, std::min<size_t>(500 * k, 5000));
        if (k + 1 == lines.size()) check_spec_final(periodic, 500);
    }

    // The same pattern as a 16-bit PNG gives the same run.
    expect_ok({"convolve", "--filter", "identity", pat, tmp("pat1.png")});
    lines = lines_of(expect_ok(check_args(tmp("pat1.png"), tmp("pat1.png"))).out);
    CHECK(lines.size() == 2 && parse_report(lines[1], &final));
    check_spec_final(final, 500);

    // --json: the final report's values.
    args = check_args(pat, pat);
    args.push_back("--json");
    r = expect_ok(args);
    size_t at = r.out.rfind("\"tmin\": ");
    CHECK(at != std::string::npos && sci(std::strtod(r.out.c_str() + at + 8, nullptr)) == "-6.818562e+00");
    CHECK(contains(r.out, "\"niter\": 5000") && contains(r.out, "\"final\": true"));

    // -n/-m that do not match the image.
    args = check_args(pat, pat);
    args[2] = "100", args[4] = "150";
    expect_failure(args, 1, {pat, "100x150", "-n 100 -m 150"});
}

void section_heat_default() {
    proc::Result r = expect_ok({"heat", "-n", "30", "-m", "40", "-i", "300", "--json"});
    CHECK(contains(r.out, "\"rows\": 30") && contains(r.out, "\"cols\": 40") &&
          contains(r.out, "\"final\": true"));
    r = expect_ok({"heat", "-o", tmp("heat.png")});
    std::vector<std::string> lines = lines_of(r.out);
    Report final;
    CHECK(lines.size() == 2 && lines[0] == kHeader && parse_report(lines[1], &final));
    CHECK(final.niter >= 1 && final.niter <= 5000 && final.tmin < final.tmax);
    images::PngRead png = images::read_png(tmp("heat.png"));
    CHECK_MSG(png.ok, "heat.png is not a readable PNG");
    CHECK(png.width >= 600 && png.height >= 300 && png.color_type == PNG_COLOR_TYPE_RGB &&
          png.bit_depth == 8);
    bool coloured = false; // a heat map, not a blank page
    for (size_t i = 0; i + 2 < png.samples.size(); i += 3)
        coloured = coloured || png.samples[i] != png.samples[i + 1] || png.samples[i] != png.samples[i + 2];
    CHECK(coloured);
    expect_failure({"heat", "-o", tmp("heat.txt")}, 2, {"-o", ".png"});
    expect_failure({"heat", "-o", tmp("no/such/dir/heat.png")}, 1, {"heat.png", "cannot write"});
}

void section_heat_interrupt() {
    // Ctrl-C once the run has started: the last report, a message, exit 130.
    proc::Options opt;
    opt.interrupt_after = "Iterations";
    opt.interrupt_delay_ms = 500;
    proc::Result r = gpk({"heat", "-n", "400", "-m", "400", "-i", "100000000", "-e", "0", "-k", "0"}, opt);
    CHECK_MSG(r.exited && r.code == 130, "exit " + std::to_string(r.code) + ": " + r.err);
    std::vector<std::string> lines = lines_of(r.out);
    Report last;
    CHECK(lines.size() == 2 && parse_report(lines[1], &last));
    CHECK(last.niter > 0 && last.niter < 100000000);
    CHECK_MSG(contains(r.err, "interrupted after " + std::to_string(last.niter) + " iterations"), r.err);

    // The progress bar: on a terminal only.
    proc::Options terminal;
    terminal.stderr_is_terminal = true;
    r = gpk({"heat", "-n", "300", "-m", "300", "-i", "2000", "-e", "0"}, terminal);
    CHECK_MSG(r.exited && r.code == 0, r.err);
    CHECK_MSG(contains(r.err, "maxdiff") && contains(r.err, "it/s") && contains(r.err, "/2000 it"), r.err);
    CHECK(lines_of(r.out).size() == 2);
}

} // namespace cli
