// gpk heat: heat dissipation on a cylinder with the flags and output of the course's reference program
// (README, "What gpk computes"), plus --backend, -o (a heat map of the final grid), --json, a progress bar on
// a terminal, and Ctrl-C that stops cleanly after printing the last report (exit code 130).
#include "args.hpp"
#include "checkpoint.hpp"
#include "commands.hpp"
#include "common.hpp"
#include "image_io.hpp"
#include "npy.hpp"
#include "plot.hpp"
#include "ranks.hpp"

#include <algorithm>
#include <cmath>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <unistd.h>

namespace gpkcli {

namespace {

const std::vector<OptionSpec> kHeatOptions = {
    {'n', nullptr, "ROWS", "rows N of the cylinder (default 300)"},
    {'m', nullptr, "COLS", "columns M, around the cylinder (default 600)"},
    {'i', nullptr, "NUM", "maximum number of iterations (default 5000)"},
    {'k', nullptr, "NUM", "report period in iterations, 0 for none (default 1000)"},
    {'e', nullptr, "NUM", "stop when an iteration's maxdiff is below NUM (default 0.001)"},
    {'c', nullptr, "FILE",
     "conductivities: a PGM or gray PNG M wide and N high, or an .npy of shape (N, M) (default: built-in)"},
    {'t', nullptr, "FILE", "initial temperatures, as -c (default: built-in pattern)"},
    {'L', nullptr, "NUM", "temperature of image value 0 (default -100)"},
    {'H', nullptr, "NUM", "temperature of the image's maxval (default 100)"},
    {'r', nullptr, nullptr, "print a report every period"},
    {'h', "help", nullptr, "show this help"},
    {0, "backend", "NAME", "auto, cpu or cuda (default auto)"},
    {'o', "output", "FILE.png", "write the final grid as a heat map with a colour bar"},
    {0, "save", "FILE.npy", "write the final grid as an .npy array (float64, shape (N, M))"},
    {0, "json", nullptr, "print the reports as JSON instead of the table"},
    {0, "checkpoint", "FILE", "write the state to FILE every --checkpoint-every iterations (atomically)"},
    {0, "checkpoint-every", "K", "iterations between checkpoints (default 1000)"},
    {0, "resume", "FILE", "continue from a checkpoint (same -n -m -c; -t is replaced by its grid)"},
};

const char *kHeatHelp =
    "Usage: gpk heat [OPTION]...\n"
    "Simulates heat dissipation on a cylinder of N rows by M columns and prints a report\n"
    "line per period (with -r) and a final one: iterations, T(min), T(max), T(diff) (the last maxdiff),\n"
    "T(avg), time in seconds and FLOP/s = N*M*(niter*12 + niter/period)/time (niter*12 alone when\n"
    "the period is 0). Images map value v to L + v*(H-L)/maxval (conductivities to v/maxval); .npy\n"
    "arrays hold the values themselves (temperatures finite, conductivities in [0, 1]).\n"
    "Without -c/-t a built-in pattern of the requested size is used.\n"
    "A progress bar is shown on stderr when it is a terminal. Ctrl-C stops the run after the current\n"
    "iteration, prints the last report and exits with status 130.\n\nOptions:\n";

struct HeatSetup {
    size_t rows = 300, cols = 600, maxiter = 5000, period = 1000;
    double threshold = 0.001, io_tmin = -100, io_tmax = 100;
    bool periodic_reports = false, json = false;
    std::string conductivity_path, temperature_path, map_path, save_path;
    gpk_backend backend = GPK_BACKEND_AUTO;
    std::string checkpoint_path, resume_path;
    size_t checkpoint_every = 1000;
    size_t start_iteration = 0; // of a resumed run: FLOP/s count only this run's iterations
};

HeatSetup heat_setup(const ParsedArgs &p) {
    HeatSetup s;
    s.rows = p.whole("n", s.rows);
    s.cols = p.whole("m", s.cols);
    s.maxiter = p.whole("i", s.maxiter);
    s.period = p.whole("k", s.period);
    s.threshold = p.number("e", s.threshold);
    s.io_tmin = p.number("L", s.io_tmin);
    s.io_tmax = p.number("H", s.io_tmax);
    s.conductivity_path = p.text("c", "");
    s.temperature_path = p.text("t", "");
    s.map_path = p.text("output", "");
    s.save_path = p.text("save", "");
    s.periodic_reports = p.has("r");
    s.json = p.has("json");
    s.backend = parse_backend(p.text("backend", "auto"));
    s.checkpoint_path = p.text("checkpoint", "");
    s.checkpoint_every = p.whole("checkpoint-every", s.checkpoint_every);
    s.resume_path = p.text("resume", "");
    if (p.has("checkpoint-every") && s.checkpoint_path.empty())
        throw UsageError("--checkpoint-every needs --checkpoint FILE");
    if (s.checkpoint_every == 0) throw UsageError("--checkpoint-every must be at least 1");
    if (s.rows == 0 || s.cols == 0) throw UsageError("-n and -m must be at least 1");
    if (s.rows > SIZE_MAX / 16 / s.cols)
        throw UsageError("-n " + std::to_string(s.rows) + " -m " + std::to_string(s.cols) + " is too large");
    if (s.maxiter == 0) throw UsageError("-i must be at least 1");
    if (s.threshold < 0) throw UsageError("-e must not be negative");
    if (!p.positional().empty()) throw UsageError("unexpected argument '" + p.positional()[0] + "'");
    return s;
}

// ---------------------------------------------------------------------------------------------------
// Inputs

// One value per cell: from a gray image M wide and N high, mapped to [lo, hi]; or from an .npy array of
// shape (N, M) as it is, each value checked to be one of `what` (finite temperatures, conductivities in
// [0, 1]).
std::vector<double> load_field(const std::string &path, const HeatSetup &s, double lo, double hi,
                               bool conductivity) {
    MappedFile file(path);
    if (is_npy(file.data(), file.size())) {
        NpyArray array = parse_npy(file.data(), file.size(), path);
        if (array.header.shape != std::vector<size_t>{s.rows, s.cols})
            throw Failure(path + ": the array's shape is " + array.header.shape_text() + " but -n " +
                          std::to_string(s.rows) + " -m " + std::to_string(s.cols) + " need (" +
                          std::to_string(s.rows) + ", " + std::to_string(s.cols) + ") (N rows, M columns)");
        return conductivity ? npy_checked_doubles(array, path, 0, 1, "conductivities")
                            : npy_checked_doubles(array, path, -INFINITY, INFINITY, "temperatures");
    }
    Image image = decode_image(file.data(), file.size(), path);
    if (image.channels != 1)
        throw Failure(path + ": heat reads gray images; this one has " + std::to_string(image.channels) +
                      " channels");
    if (image.width != s.cols || image.height != s.rows)
        throw Failure(path + ": the image is " + std::to_string(image.width) + "x" +
                      std::to_string(image.height) + " but -n " + std::to_string(s.rows) + " -m " +
                      std::to_string(s.cols) + " need " + std::to_string(s.cols) + "x" +
                      std::to_string(s.rows) + " (M wide, N high)");
    std::vector<double> field(s.rows * s.cols);
    for (size_t i = 0; i < field.size(); ++i) field[i] = lo + image.sample(i) * (hi - lo) / image.maxval;
    return field;
}

// Built-in inputs: a warm top edge, a cold bottom edge, and discs of slow-changing cells (two hot, one
// cold) that act as sources, one across the seam, so that a run shows heat spreading around the cylinder.
struct Disc {
    double u, v, radius, temperature; // centre as fractions of the width and height; radius of min(N, M)
};
const Disc kDiscs[] = {{0.18, 0.35, 0.16, 1.0}, {0.52, 0.62, 0.14, 0.0}, {0.97, 0.4, 0.11, 1.0}};

// Temperature (0 cold .. 1 hot) and conductivity of one cell at (u, v), fractions of the width and height.
void pattern_cell(const HeatSetup &s, double u, double v, double *t, double *w) {
    const double pi = 3.141592653589793, side = double(std::min(s.rows, s.cols));
    *t = 0.75 - 0.5 * v;
    *w = 0.9 + 0.06 * std::sin(2 * pi * 6 * u) * std::sin(pi * v);
    for (const Disc &d : kDiscs) {
        double du = std::fabs(u - d.u);
        du = std::min(du, 1 - du) * double(s.cols); // the cylinder wraps around
        double dv = (v - d.v) * double(s.rows);
        if (std::sqrt(du * du + dv * dv) < d.radius * side) *t = d.temperature, *w = 0.999;
    }
}

void builtin_pattern(const HeatSetup &s, std::vector<double> *temperature,
                     std::vector<double> *conductivity) {
    temperature->resize(s.rows * s.cols);
    conductivity->resize(s.rows * s.cols);
    for (size_t i = 0; i < s.rows; ++i) {
        for (size_t j = 0; j < s.cols; ++j) {
            double t, w;
            pattern_cell(s, (j + 0.5) / double(s.cols), (i + 0.5) / double(s.rows), &t, &w);
            (*temperature)[i * s.cols + j] = s.io_tmin + t * (s.io_tmax - s.io_tmin);
            (*conductivity)[i * s.cols + j] = w;
        }
    }
}

// ---------------------------------------------------------------------------------------------------
// Reports, progress and Ctrl-C

volatile std::sig_atomic_t g_interrupted = 0;

extern "C" void on_sigint(int) {
    g_interrupted = 1;
}

// Installs the Ctrl-C handler for the run; a second Ctrl-C kills the process as usual (SA_RESETHAND).
struct InterruptScope {
    struct sigaction previous {};
    InterruptScope() {
        struct sigaction sa {};
        sa.sa_handler = on_sigint;
        sa.sa_flags = SA_RESETHAND;
        sigemptyset(&sa.sa_mask);
        sigaction(SIGINT, &sa, &previous);
    }
    ~InterruptScope() { sigaction(SIGINT, &previous, nullptr); }
};

class ProgressBar {
public:
    ProgressBar(size_t maxiter, size_t cells)
        : maxiter_(maxiter), cells_(cells), enabled_(isatty(STDERR_FILENO) && ranks::root()) {}
    void update(size_t niter, double maxdiff, double time);
    void clear();

private:
    size_t maxiter_, cells_;
    bool enabled_, drawn_ = false;
    double last_time_ = -1;
};

void ProgressBar::update(size_t niter, double maxdiff, double time) {
    if (!enabled_ || (time - last_time_ < 0.1 && niter < maxiter_)) return;
    last_time_ = time;
    const int width = 30;
    int done = int(double(width) * niter / maxiter_);
    std::string bar(size_t(done), '#');
    bar.resize(width, '-');
    double rate = time > 0 ? niter / time : 0;
    std::fprintf(stderr, "\r[%s] %zu/%zu it  maxdiff %.3e  %.3g it/s  %.3g GCells/s\033[K", bar.c_str(),
                 niter, maxiter_, maxdiff, rate, rate * cells_ / 1e9);
    std::fflush(stderr);
    drawn_ = true;
}

void ProgressBar::clear() {
    if (!drawn_) return;
    std::fputs("\r\033[K", stderr);
    std::fflush(stderr);
    drawn_ = false;
}

struct HeatRun {
    const HeatSetup &setup;
    ProgressBar bar;
    std::vector<std::pair<gpk_heat_report, bool>> reports; // kept for --json; bool: final
    HeatCheckpoints checkpoints;
};

double heat_flops(const HeatSetup &s, const gpk_heat_report &r) {
    const double done = double(r.niter - s.start_iteration);
    double per_cell = done * 12 + (s.period ? done / double(s.period) : 0.0);
    return r.time > 0 ? double(s.rows) * double(s.cols) * per_cell / r.time : 0.0;
}

void print_report_line(const HeatSetup &s, const gpk_heat_report &r) {
    std::printf("%-13zu % .6e % .6e % .6e % .6e % .6e % .6e\n", r.niter, r.tmin, r.tmax, r.maxdiff, r.tavg,
                r.time, heat_flops(s, r));
    std::fflush(stdout);
}

int on_report(const gpk_heat_report *report, int is_final, void *user_data) {
    auto *run = static_cast<HeatRun *>(user_data);
    if (is_final || run->setup.periodic_reports) {
        run->bar.clear();
        if (run->setup.json)
            run->reports.emplace_back(*report, is_final != 0);
        else
            print_report_line(run->setup, *report);
    }
    return g_interrupted;
}

int on_progress(size_t niter, double maxdiff, double time, void *user_data) {
    static_cast<HeatRun *>(user_data)->bar.update(niter, maxdiff, time);
    return g_interrupted;
}

int on_checkpoint(size_t niter, double maxdiff, const double *grid, void *user_data) {
    auto *run = static_cast<HeatRun *>(user_data);
    return run->checkpoints.save(niter, maxdiff, grid) | g_interrupted;
}

void print_json(const HeatRun &run, gpk_backend backend, bool interrupted) {
    const HeatSetup &s = run.setup;
    std::printf("{\n  \"rows\": %zu,\n  \"cols\": %zu,\n  \"maxiter\": %zu,\n  \"period\": %zu,\n"
                "  \"threshold\": %s,\n  \"backend\": \"%s\",\n  \"interrupted\": %s,\n  \"reports\": [",
                s.rows, s.cols, s.maxiter, s.period, json_number(s.threshold).c_str(),
                gpk_backend_name(backend), interrupted ? "true" : "false");
    for (size_t i = 0; i < run.reports.size(); ++i) {
        const gpk_heat_report &r = run.reports[i].first;
        std::printf("%s\n    {\"niter\": %zu, \"tmin\": %s, \"tmax\": %s, \"maxdiff\": %s, \"tavg\": %s, "
                    "\"time\": %s, \"flops\": %s, \"final\": %s}",
                    i ? "," : "", r.niter, json_number(r.tmin).c_str(), json_number(r.tmax).c_str(),
                    json_number(r.maxdiff).c_str(), json_number(r.tavg).c_str(), json_number(r.time).c_str(),
                    json_number(heat_flops(s, r)).c_str(), run.reports[i].second ? "true" : "false");
    }
    std::printf("\n  ]\n}\n");
}

void write_heat_map(const HeatSetup &s, const std::vector<double> &grid, const gpk_heat_report &final) {
    std::string title = "Temperature after " + std::to_string(final.niter) +
                        (final.niter == 1 ? " iteration (" : " iterations (") + std::to_string(s.rows) +
                        " x " + std::to_string(s.cols) + " cylinder)";
    write_file_atomically(s.map_path, draw_heat_map(grid.data(), s.rows, s.cols, title));
}

// Progress (the bar, and the check for Ctrl-C) at every pass boundary: progress never shortens a pass
// (gpk.h), and the bar redraws at most ten times a second.
constexpr size_t kProgressInterval = 1;

gpk_heat_params heat_params(const HeatSetup &s, HeatRun *run) {
    gpk_heat_params params;
    gpk_heat_params_init(&params);
    params.rows = s.rows;
    params.cols = s.cols;
    params.maxiter = s.maxiter;
    params.threshold = s.threshold;
    params.period = s.period;
    params.on_report = on_report;
    params.on_progress = on_progress;
    params.progress_interval = kProgressInterval;
    params.user_data = run;
    if (run->checkpoints.writing()) params.on_checkpoint = on_checkpoint;
    return params;
}

void print_header() {
    std::printf("%13s %13s %13s %13s %13s %13s %13s\n", "Iterations", "T(min)", "T(max)", "T(diff)", "T(avg)",
                "Time", "FLOP/s");
    std::fflush(stdout); // the header shows at once also through a pipe
}

} // namespace

int run_heat(const Args &args) {
    ParsedArgs parsed = parse_args(args, kHeatOptions);
    if (parsed.has("help")) {
        std::printf("%s%s", kHeatHelp, options_help(kHeatOptions).c_str());
        return kExitOk;
    }
    HeatSetup s = heat_setup(parsed);
    if (!s.map_path.empty()) check_png_output_path(s.map_path, "-o");
    if (!s.save_path.empty()) check_output_path(s.save_path, ".npy", "--save");
    std::vector<double> temperature, conductivity;
    builtin_pattern(s, &temperature, &conductivity);
    if (!s.temperature_path.empty())
        temperature = load_field(s.temperature_path, s, s.io_tmin, s.io_tmax, false);
    if (!s.conductivity_path.empty()) conductivity = load_field(s.conductivity_path, s, 0.0, 1.0, true);
    Context ctx = ranks::open_context(s.backend);

    HeatRun run{s,
                ProgressBar(s.maxiter, s.rows * s.cols),
                {},
                HeatCheckpoints(s.checkpoint_path, s.checkpoint_every, s.resume_path)};
    gpk_heat_params params = heat_params(s, &run);
    run.checkpoints.prepare(s.rows, s.cols, s.maxiter, conductivity, temperature, params);
    s.start_iteration = params.start_iteration;
    std::vector<double> grid(s.map_path.empty() && s.save_path.empty() ? 0 : s.rows * s.cols);
    gpk_heat_report final{};
    if (!s.json) print_header();
    gpk_status status;
    {
        InterruptScope interrupt_scope;
        status = ranks::heat_run(ctx.get(), &params, temperature.data(), conductivity.data(),
                                 grid.empty() ? nullptr : grid.data(), &final);
    }
    run.bar.clear();
    run.checkpoints.rethrow();
    bool interrupted = status == GPK_ERR_CANCELLED && g_interrupted;
    if (!interrupted) check_status(status, ctx.get(), "heat");
    if (s.json) print_json(run, gpk_context_backend(ctx.get()), interrupted);
    if (interrupted) {
        if (ranks::root()) std::fprintf(stderr, "gpk heat: interrupted after %zu iterations\n", final.niter);
        return kExitInterrupted;
    }
    if (!s.map_path.empty() && ranks::root()) write_heat_map(s, grid, final); // rank 0 writes under mpirun
    if (!s.save_path.empty() && ranks::root()) write_npy(s.save_path, GPK_F64, {s.rows, s.cols}, grid.data());
    return kExitOk;
}

} // namespace gpkcli
