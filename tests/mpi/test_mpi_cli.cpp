// The gpk command under mpirun: `test_mpi_cli MPIRUN GPK NP SCRATCH` runs each command as one process and
// as NP ranks and compares what they print and write: heat on the course pattern and on the built-in one
// (report lines but the time and FLOP/s columns, the heat map's bytes), histogram tables and JSON,
// convolution outputs byte for byte, checkpoint files byte for byte, resuming across the two, a run of NP
// ranks killed with SIGKILL and resumed, gpk info, and a failure that must end every rank with one line.
#include "check.hpp"
#include "process.hpp"

#include <csignal>
#include <cstdlib>
#include <cstdio>
#include <cstring>
#include <dirent.h>
#include <fcntl.h>
#include <fstream>
#include <iterator>
#include <sys/stat.h>
#include <thread>
#include <unistd.h>

namespace {

std::string g_mpirun, g_gpk, g_np, g_dir;

std::string path(const std::string &name) {
    return g_dir + "/" + name;
}

proc::Result single(const std::vector<std::string> &args) {
    std::vector<std::string> argv = {g_gpk};
    argv.insert(argv.end(), args.begin(), args.end());
    return proc::run(argv);
}

std::vector<std::string> ranks_argv(const std::vector<std::string> &args) {
    std::vector<std::string> argv = {g_mpirun, "--oversubscribe", "-np", g_np, g_gpk};
    argv.insert(argv.end(), args.begin(), args.end());
    return argv;
}

proc::Result ranks(const std::vector<std::string> &args) {
    return proc::run(ranks_argv(args));
}

std::string read_file(const std::string &p) {
    std::ifstream f(p, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
}

std::string joined(const std::vector<std::string> &args) {
    std::string s;
    for (const auto &a : args) s += " " + a;
    return s;
}

// Report lines without the time and FLOP/s columns (the first 70 characters: five fields of 13 and spaces).
std::vector<std::string> values(const std::string &out) {
    std::vector<std::string> lines;
    size_t at = 0;
    while (at < out.size()) {
        size_t end = out.find('\n', at);
        if (end == std::string::npos) end = out.size();
        lines.push_back(out.substr(at, std::min<size_t>(end - at, 70)));
        at = end + 1;
    }
    return lines;
}

// Runs both ways; both succeed and print the same report values.
std::vector<std::string> same_heat(const std::vector<std::string> &args) {
    proc::Result a = single(args), b = ranks(args);
    CHECK_MSG(a.code == 0 && b.code == 0, "gpk" + joined(args) + ": " + a.err + b.err);
    CHECK_MSG(values(a.out) == values(b.out),
              "gpk" + joined(args) + ": lines differ:\n" + a.out + "---\n" + b.out);
    return values(a.out);
}

// Runs both ways; both succeed, print the same and write the same file.
void same_output(const std::vector<std::string> &args, const std::string &file) {
    proc::Result a = single(args);
    std::string first = file.empty() ? "" : read_file(file);
    proc::Result b = ranks(args);
    CHECK_MSG(a.code == 0 && b.code == 0, "gpk" + joined(args) + ": " + a.err + b.err);
    CHECK_MSG(a.out == b.out, "gpk" + joined(args) + ": output differs");
    if (!file.empty())
        CHECK_MSG(!first.empty() && read_file(file) == first, "gpk" + joined(args) + ": " + file);
}

size_t checkpoint_iteration(const std::string &p) {
    std::string bytes = read_file(p);
    uint64_t it = 0;
    if (bytes.size() >= 32 && bytes.compare(0, 8, "GPKHEAT1") == 0) std::memcpy(&it, bytes.data() + 24, 8);
    return size_t(it);
}

// Kills every process of a session (mpirun, made a session leader, and the ranks it started).
void kill_session(pid_t sid) {
    DIR *proc_dir = opendir("/proc");
    if (!proc_dir) return;
    while (dirent *e = readdir(proc_dir)) {
        pid_t pid = pid_t(std::atoi(e->d_name));
        if (pid <= 0) continue;
        if (getsid(pid) == sid) kill(pid, SIGKILL);
    }
    closedir(proc_dir);
}

// NP ranks with checkpoints, killed (all of them) once the checkpoint is past `past`.
bool run_and_kill(const std::vector<std::string> &args, const std::string &file, size_t past) {
    const pid_t pid = proc::spawn_quiet(ranks_argv(args), true);
    bool killed = false;
    for (int waited = 0; waited < 240000 && !killed; waited += 5) {
        if (waitpid(pid, nullptr, WNOHANG) == pid) return false; // it ended by itself
        if (checkpoint_iteration(file) > past) {
            kill_session(pid);
            killed = true;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    if (!killed) kill_session(pid);
    waitpid(pid, nullptr, 0);
    return killed;
}

std::vector<std::string> after(const std::vector<std::string> &lines, size_t from) {
    std::vector<std::string> out;
    for (const auto &l : lines)
        if (l.find("Iterations") == std::string::npos && std::strtoull(l.c_str(), nullptr, 10) > from)
            out.push_back(l);
    return out;
}

void test_heat(const std::string &pat) {
    if (!pat.empty())
        same_heat({"heat",  "-n", "150",  "-m", "100", "-i", "5000", "-k", "500", "-e",
                   "0.001", "-L", "-100", "-H", "100", "-c", pat,    "-t", pat,   "-r"});
    same_heat({"heat", "-n", "61", "-m", "47", "-i", "700", "-k", "100", "-e", "0", "-r", "--json"});
    proc::Result a = single({"heat", "-n", "53", "-m", "97", "-i", "300", "-o", path("one.png")});
    proc::Result b = ranks({"heat", "-n", "53", "-m", "97", "-i", "300", "-o", path("many.png")});
    CHECK_MSG(a.code == 0 && b.code == 0, a.err + b.err);
    CHECK_MSG(read_file(path("one.png")) == read_file(path("many.png")), "the heat maps differ");
}

void test_checkpoints() {
    auto heat = [](size_t maxiter, std::vector<std::string> extra) {
        std::vector<std::string> args = {"heat", "-n", "67", "-m", "43", "-i",        std::to_string(maxiter),
                                         "-k",   "40", "-e", "0",  "-r", "--backend", "cpu"};
        args.insert(args.end(), extra.begin(), extra.end());
        return args;
    };
    // The same checkpoint file from one process and from the ranks.
    proc::Result a = single(heat(500, {"--checkpoint", path("one.ckpt"), "--checkpoint-every", "70"}));
    proc::Result b = ranks(heat(500, {"--checkpoint", path("many.ckpt"), "--checkpoint-every", "70"}));
    CHECK_MSG(a.code == 0 && b.code == 0, a.err + b.err);
    CHECK_MSG(read_file(path("one.ckpt")) == read_file(path("many.ckpt")) &&
                  checkpoint_iteration(path("one.ckpt")) == 490,
              "the checkpoint files differ");
    // Resumed by the ranks from the single process's checkpoint.
    std::vector<std::string> full = values(a.out);
    proc::Result r = ranks(heat(500, {"--resume", path("one.ckpt")}));
    CHECK_MSG(r.code == 0 && after(values(r.out), 0) == after(full, 490), "resumed by the ranks: " + r.err);
    // Killed mid-way with SIGKILL (every rank and mpirun), resumed by the ranks.
    std::vector<std::string> long_run = values(single(heat(6000, {})).out);
    const std::string killed = path("killed.ckpt");
    CHECK_MSG(run_and_kill(heat(6000, {"--checkpoint", killed, "--checkpoint-every", "25"}), killed, 800),
              "the ranks were not killed after a checkpoint past iteration 800");
    const size_t at = checkpoint_iteration(killed);
    CHECK(at > 800 && at < 6000);
    proc::Result resumed = ranks(heat(6000, {"--resume", killed}));
    CHECK_MSG(resumed.code == 0 && after(values(resumed.out), 0) == after(long_run, at),
              "resumed after the kill at " + std::to_string(at) + ": " + resumed.err);
}

void test_histogram_and_convolve(const std::string &pat) {
    if (pat.empty()) return;
    same_output({"histogram", pat, "--bins", "64", "--range", "0:65536"}, "");
    same_output({"histogram", pat, "--json", "--saturate", "3"}, "");
    same_output({"convolve", "--filter", "lp3", "--normalize", "minmax", pat, path("lp3.pgm")},
                path("lp3.pgm"));
    same_output(
        {"convolve", "--filter", "gauss:2", "--border", "wrap", "--out-type", "f32", pat, path("g.raw")},
        path("g.raw"));
    same_output({"convolve", "--filter", "log9", "--border", "mirror", "--normalize", "minmax", "--out-type",
                 "f64", pat, path("log9.raw")},
                path("log9.raw"));
}

void test_info_and_failure() {
    proc::Result info = ranks({"info"});
    CHECK_MSG(info.code == 0 && info.out.find(g_np + " rank") != std::string::npos, info.out + info.err);
    // One node here: more ranks than CUDA devices (the GPU machine) are named as sharing them.
    const size_t at = info.out.find("CUDA devices: ");
    const int devices = at == std::string::npos ? 0 : std::atoi(info.out.c_str() + at + 14);
    const bool shared = devices >= 1 && std::atoi(g_np.c_str()) > devices;
    const std::string sharing =
        "GPU sharing: " + g_np + " ranks on this node share " + std::to_string(devices);
    CHECK_MSG((info.out.find(sharing) != std::string::npos) == shared, info.out);
    proc::Result bad = ranks({"heat", "-c", path("missing.pgm")});
    size_t lines = 0;
    for (char c : bad.err) lines += c == '\n';
    CHECK_MSG(bad.code == 1 && lines >= 1 && bad.err.find("missing.pgm") != std::string::npos,
              "exit " + std::to_string(bad.code) + ": " + bad.err);
    // Rank 0 alone prints the failure.
    size_t mentions = 0;
    for (size_t at = bad.err.find("gpk heat:"); at != std::string::npos;
         at = bad.err.find("gpk heat:", at + 1))
        ++mentions;
    CHECK_MSG(mentions == 1, bad.err);
}

} // namespace

int main(int argc, char **argv) {
    if (argc != 5) {
        std::fprintf(stderr, "usage: test_mpi_cli MPIRUN GPK NP SCRATCH\n");
        return 2;
    }
    g_mpirun = argv[1];
    g_gpk = argv[2];
    g_np = argv[3];
    g_dir = std::string(argv[4]) + "/mpi_cli_np" + g_np;
    mkdir(argv[4], 0755);
    mkdir(g_dir.c_str(), 0755);
    const char *data = std::getenv("GPK_TEST_DATA");
    std::string pat = data ? std::string(data) + "/pat1_100x150.pgm" : "";
    if (read_file(pat).empty()) pat.clear();
    test_heat(pat);
    test_checkpoints();
    test_histogram_and_convolve(pat);
    test_info_and_failure();
    return check::finish(("test_mpi_cli on " + g_np + " ranks").c_str());
}
