// gpk heat --checkpoint / --checkpoint-every / --resume: a resumed run prints the report lines of the run
// that was never stopped (all but the time and FLOP/s columns) and ends with its grid (the heat map's
// bytes, where plots are built); also after the first run is killed with SIGKILL mid-way; bad checkpoints.
#include "cli_test.hpp"
#include "images.hpp"

#include <csignal>
#include <cstring>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

namespace cli {

namespace {

// The first five columns of each report line (niter, T(min), T(max), T(diff), T(avg)), header dropped.
std::vector<std::string> report_values(const std::string &out) {
    std::vector<std::string> values;
    for (const std::string &line : lines_of(out)) {
        if (line.find("Iterations") != std::string::npos) continue;
        size_t cut = 0;
        for (int field = 0; field < 5 && cut != std::string::npos; ++field) {
            cut = line.find_first_not_of(' ', cut);
            cut = cut == std::string::npos ? cut : line.find(' ', cut);
        }
        values.push_back(line.substr(0, cut));
    }
    return values;
}

size_t niter_of(const std::string &values) {
    return size_t(std::strtoull(values.c_str(), nullptr, 10));
}

// The lines of `full` after iteration `from`.
std::vector<std::string> after(const std::vector<std::string> &full, size_t from) {
    std::vector<std::string> out;
    for (const std::string &v : full)
        if (niter_of(v) > from) out.push_back(v);
    return out;
}

// The iteration a checkpoint file holds (its header's third word), 0 when unreadable.
size_t checkpoint_iteration(const std::string &path) {
    std::string bytes = images::read_text(path);
    if (bytes.size() < 32 || bytes.compare(0, 8, "GPKHEAT1") != 0) return 0;
    uint64_t it = 0;
    std::memcpy(&it, bytes.data() + 24, 8);
    return size_t(it);
}

std::vector<std::string> heat_args(size_t maxiter, const std::vector<std::string> &extra) {
    std::vector<std::string> args = {"heat", "-n", "97", "-m", "61", "-i",        std::to_string(maxiter),
                                     "-k",   "40", "-e", "0",  "-r", "--backend", "cpu"};
    args.insert(args.end(), extra.begin(), extra.end());
    return args;
}

// Starts gpk with the arguments, waits until `file` holds a checkpoint past iteration `past`, then kills it
// with SIGKILL. Returns false when the checkpoint never came or the run ended first.
bool run_and_kill(const std::vector<std::string> &args, const std::string &file, size_t past) {
    std::vector<std::string> argv = args;
    argv.insert(argv.begin(), gpk_path());
    const pid_t pid = proc::spawn_quiet(argv);
    for (int waited = 0; waited < 120000; waited += 5) {
        int status = 0;
        if (waitpid(pid, &status, WNOHANG) == pid) return false; // it ended by itself
        if (checkpoint_iteration(file) > past) {
            kill(pid, SIGKILL);
            waitpid(pid, &status, 0);
            return WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    kill(pid, SIGKILL);
    waitpid(pid, nullptr, 0);
    return false;
}

} // namespace

void section_heat_checkpoint() {
    const std::string cp = tmp("state.ckpt");
    const bool plots = true; // every build draws heat maps
    auto map = [&](const std::string &name) {
        return plots ? std::vector<std::string>{"-o", tmp(name)} : std::vector<std::string>{};
    };
    // The whole run, with and without checkpoints: the same lines.
    auto full_args = heat_args(500, map("full.png"));
    std::vector<std::string> full = report_values(expect_ok(full_args).out);
    CHECK_EQ(full.size(), size_t(13)); // 40, 80, ..., 480, then the final line at 500
    auto with_args = heat_args(500, {"--checkpoint", cp, "--checkpoint-every", "70"});
    CHECK(report_values(expect_ok(with_args).out) == full);
    CHECK_EQ(checkpoint_iteration(cp), size_t(490)); // the last multiple of 70 before 500

    // Resumed from iteration 490: the lines after it and the same final grid.
    auto resumed_args = heat_args(500, {"--resume", cp});
    auto more = map("resumed.png");
    resumed_args.insert(resumed_args.end(), more.begin(), more.end());
    CHECK(report_values(expect_ok(resumed_args).out) == after(full, 490));
    if (plots) CHECK(images::read_text(tmp("resumed.png")) == images::read_text(tmp("full.png")));

    // Killed by SIGKILL after a checkpoint past iteration 1000 of 6000, then resumed (writing checkpoints
    // on): its lines and heat map are those of the run never stopped.
    const std::string killed = tmp("killed.ckpt");
    auto long_full = heat_args(6000, map("long.png"));
    std::vector<std::string> long_lines = report_values(expect_ok(long_full).out);
    bool was_killed =
        run_and_kill(heat_args(6000, {"--checkpoint", killed, "--checkpoint-every", "25"}), killed, 1000);
    CHECK_MSG(was_killed, "the run was not killed after a checkpoint past iteration 1000");
    const size_t at = checkpoint_iteration(killed);
    CHECK(at > 1000 && at < 6000 && at % 25 == 0);
    auto resume_killed =
        heat_args(6000, {"--resume", killed, "--checkpoint", killed, "--checkpoint-every", "25"});
    auto long_map = map("long_resumed.png");
    resume_killed.insert(resume_killed.end(), long_map.begin(), long_map.end());
    CHECK(report_values(expect_ok(resume_killed).out) == after(long_lines, at));
    if (plots) CHECK(images::read_text(tmp("long_resumed.png")) == images::read_text(tmp("long.png")));
    CHECK_EQ(checkpoint_iteration(killed), size_t(5975));

    // Checkpoints that do not fit, or are not checkpoints, fail with one line naming the file.
    expect_failure(heat_args(500, {"--resume", tmp("none.ckpt")}), 1, {"none.ckpt", "cannot read"});
    images::write_text(tmp("text.ckpt"), "not a checkpoint at all, just text\n");
    expect_failure(heat_args(500, {"--resume", tmp("text.ckpt")}), 1, {"text.ckpt", "GPKHEAT1"});
    std::string bytes = images::read_text(cp);
    images::write_text(tmp("short.ckpt"), bytes.substr(0, bytes.size() - 8));
    expect_failure(heat_args(500, {"--resume", tmp("short.ckpt")}), 1, {"short.ckpt", "truncated"});
    bytes[bytes.size() - 3] ^= 1;
    images::write_text(tmp("flipped.ckpt"), bytes);
    expect_failure(heat_args(500, {"--resume", tmp("flipped.ckpt")}), 1, {"flipped.ckpt", "checksum"});
    auto wrong_size = heat_args(500, {"--resume", cp});
    wrong_size[2] = "98";
    expect_failure(wrong_size, 1, {"state.ckpt", "97 x 61", "-n 98"});
    expect_failure(heat_args(490, {"--resume", cp}), 1, {"iteration 490", "nothing to do"});
    images::Pgm other;
    other.width = 61;
    other.height = 97;
    other.maxval = 255;
    other.samples.assign(61 * 97, 200);
    images::write_text(tmp("other.pgm"), images::pgm_text(other));
    expect_failure(heat_args(500, {"--resume", cp, "-c", tmp("other.pgm")}), 1, {"other conductivities"});
    expect_failure(heat_args(500, {"--checkpoint-every", "5"}), 2, {"--checkpoint-every needs --checkpoint"});
    expect_failure(heat_args(500, {"--checkpoint", tmp("no/such/dir/x.ckpt"), "--checkpoint-every", "7"}), 1,
                   {"x.ckpt", "cannot write the checkpoint"});
}

} // namespace cli
