// Runs a program with fork/exec and collects its exit status, stdout and stderr; optionally gives it a
// terminal (a pseudo-terminal) as stderr, and sends it SIGINT once its stdout shows a given text.
#pragma once

#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <fcntl.h>
#include <poll.h>
#include <sys/resource.h>
#include <string>
#include <sys/wait.h>
#include <unistd.h>
#include <vector>

namespace proc {

struct Result {
    int code = -1;       // the exit status, or 128 + signal when killed by one
    bool exited = false; // true when the program exited by itself (not killed by a signal)
    std::string out, err;
};

struct Options {
    std::string cwd; // empty: the current directory
    bool stderr_is_terminal = false;
    std::string interrupt_after; // send SIGINT once stdout contains this (and interrupt_delay_ms passed)
    int interrupt_delay_ms = 0;
    size_t data_limit = 0; // RLIMIT_DATA of the program in bytes (heap and private writable mappings)
};

inline void close_fd(int &fd) {
    if (fd >= 0) close(fd);
    fd = -1;
}

// Reads what is available on fd into text; returns false at end of file (or EIO on a terminal).
inline bool drain(int fd, std::string &text) {
    char buffer[4096];
    ssize_t n = read(fd, buffer, sizeof buffer);
    if (n > 0) text.append(buffer, size_t(n));
    return n > 0 || (n < 0 && errno == EINTR);
}

[[noreturn]] inline void exec_child(const std::vector<std::string> &argv, const Options &opt, int out_fd,
                                    int err_fd) {
    dup2(out_fd, STDOUT_FILENO);
    dup2(err_fd, STDERR_FILENO);
    if (!opt.cwd.empty() && chdir(opt.cwd.c_str()) != 0) _exit(126);
    rlimit data{rlim_t(opt.data_limit), rlim_t(opt.data_limit)};
    if (opt.data_limit && setrlimit(RLIMIT_DATA, &data) != 0) _exit(126);
    std::vector<char *> args;
    for (const auto &a : argv) args.push_back(const_cast<char *>(a.c_str()));
    args.push_back(nullptr);
    execv(args[0], args.data());
    _exit(127);
}

// Opens a pseudo-terminal; returns the controller end and sets *device to the terminal end.
inline int open_terminal(int *device) {
    int controller = posix_openpt(O_RDWR | O_NOCTTY);
    if (controller < 0 || grantpt(controller) != 0 || unlockpt(controller) != 0) return -1;
    *device = open(ptsname(controller), O_RDWR | O_NOCTTY);
    return *device < 0 ? -1 : controller;
}

inline Result run(const std::vector<std::string> &argv, const Options &opt = {}) {
    Result r;
    int out_pipe[2], err_pipe[2] = {-1, -1}, terminal = -1;
    if (pipe(out_pipe) != 0) return r;
    int err_read =
        opt.stderr_is_terminal ? open_terminal(&terminal) : (pipe(err_pipe) == 0 ? err_pipe[0] : -1);
    if (err_read < 0) return r;
    pid_t pid = fork();
    if (pid == 0) exec_child(argv, opt, out_pipe[1], opt.stderr_is_terminal ? terminal : err_pipe[1]);
    close_fd(out_pipe[1]);
    close_fd(err_pipe[1]);
    close_fd(terminal);
    int out_fd = out_pipe[0], err_fd = err_read;
    bool interrupted = opt.interrupt_after.empty();
    auto seen = std::chrono::steady_clock::time_point::max();
    while (out_fd >= 0 || err_fd >= 0) {
        pollfd fds[2] = {{out_fd, POLLIN, 0}, {err_fd, POLLIN, 0}};
        poll(fds, 2, 20);
        if (fds[0].revents && !drain(out_fd, r.out)) close_fd(out_fd);
        if (fds[1].revents && !drain(err_fd, r.err)) close_fd(err_fd);
        if (!interrupted && seen == std::chrono::steady_clock::time_point::max() &&
            r.out.find(opt.interrupt_after) != std::string::npos)
            seen = std::chrono::steady_clock::now();
        if (!interrupted &&
            std::chrono::steady_clock::now() - seen >= std::chrono::milliseconds(opt.interrupt_delay_ms)) {
            kill(pid, SIGINT);
            interrupted = true;
        }
    }
    int status = 0;
    waitpid(pid, &status, 0);
    r.exited = WIFEXITED(status);
    r.code = r.exited ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    return r;
}

// Starts argv with stdout and stderr on /dev/null (in a session of its own when asked, so that it and every
// process it starts can be told apart) and returns its pid without waiting.
inline pid_t spawn_quiet(const std::vector<std::string> &argv, bool new_session = false) {
    pid_t pid = fork();
    if (pid != 0) return pid;
    if (new_session) setsid();
    int devnull = open("/dev/null", O_WRONLY);
    exec_child(argv, Options{}, devnull, devnull);
}

} // namespace proc
