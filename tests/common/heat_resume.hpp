// Heat checkpoints and resuming, on any context: a run with checkpoints against the same run without, each
// checkpoint against a run stopped there, and runs resumed from checkpoints (start_iteration, the original
// fixed rows) against the run that was never stopped, bit for bit. Shared by the CPU and GPU heat tests.
#pragma once

#include "check.hpp"
#include "gpk.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

namespace heat_resume {

struct Snapshot {
    size_t niter;
    double maxdiff;
    std::vector<double> grid;
};

struct Recorder {
    size_t cells = 0;
    std::vector<gpk_heat_report> periodic, finals;
    std::vector<Snapshot> checkpoints;
    size_t stop_checkpoint_at = 0; // the checkpoint callback asks to stop there (0: never)
    std::vector<size_t> progress_iters;
    std::vector<double> progress_maxdiffs;
    size_t stop_progress_at = 0; // the progress callback asks to stop from there on (0: never)
};

inline int record_report(const gpk_heat_report *r, int is_final, void *user) {
    auto *rec = static_cast<Recorder *>(user);
    (is_final ? rec->finals : rec->periodic).push_back(*r);
    return 0;
}

inline int record_progress(size_t niter, double maxdiff, double, void *user) {
    auto *rec = static_cast<Recorder *>(user);
    rec->progress_iters.push_back(niter);
    rec->progress_maxdiffs.push_back(maxdiff);
    return rec->stop_progress_at && niter >= rec->stop_progress_at;
}

inline int record_checkpoint(size_t niter, double maxdiff, const double *grid, void *user) {
    auto *rec = static_cast<Recorder *>(user);
    rec->checkpoints.push_back({niter, maxdiff, std::vector<double>(grid, grid + rec->cells)});
    return niter == rec->stop_checkpoint_at;
}

struct Run {
    gpk_status status = GPK_OK;
    std::string message;
    gpk_heat_report final{};
    std::vector<double> grid;
    Recorder rec;
};

struct Setup {
    size_t n, m, maxiter;
    double threshold;
    size_t period;
    size_t progress = 0; // progress_interval
};

// The parameters of a setup, every callback recording into `rec`.
inline gpk_heat_params params_of(const Setup &s, Recorder *rec) {
    gpk_heat_params p;
    gpk_heat_params_init(&p);
    p.rows = s.n;
    p.cols = s.m;
    p.maxiter = s.maxiter;
    p.threshold = s.threshold;
    p.period = s.period;
    p.on_report = record_report;
    p.on_progress = record_progress;
    p.progress_interval = s.progress;
    p.user_data = rec;
    return p;
}

inline Run run(gpk_context *ctx, const Setup &s, const std::vector<double> &tinit,
               const std::vector<double> &cond, size_t interval, size_t start = 0,
               const double *fixed_rows = nullptr, size_t stop_at = 0) {
    Run r;
    r.rec.cells = s.n * s.m;
    r.rec.stop_checkpoint_at = stop_at;
    r.grid.assign(s.n * s.m, -12345.0);
    gpk_heat_params p = params_of(s, &r.rec);
    p.start_iteration = start;
    p.fixed_rows = fixed_rows;
    p.on_checkpoint = interval ? record_checkpoint : nullptr;
    p.checkpoint_interval = interval;
    r.status = gpk_heat_run(ctx, &p, tinit.data(), cond.data(), r.grid.data(), &r.final);
    r.message = gpk_context_last_error(ctx);
    return r;
}

inline bool same_bits(double a, double b) {
    return std::memcmp(&a, &b, sizeof a) == 0;
}

// Every field but the time.
inline bool same_report(const gpk_heat_report &a, const gpk_heat_report &b) {
    return a.niter == b.niter && same_bits(a.tmin, b.tmin) && same_bits(a.tmax, b.tmax) &&
           same_bits(a.maxdiff, b.maxdiff) && same_bits(a.tavg, b.tavg);
}

inline bool same_grid(const std::vector<double> &a, const std::vector<double> &b) {
    return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(double)) == 0;
}

inline bool same_reports(const std::vector<gpk_heat_report> &a, const std::vector<gpk_heat_report> &b) {
    if (a.size() != b.size()) return false;
    for (size_t k = 0; k < a.size(); ++k)
        if (!same_report(a[k], b[k])) return false;
    return true;
}

// The progress rule of gpk.h for a run from `start` that ended at `end`, whose pass boundaries lie at most
// `pass` iterations apart: each call at the first boundary at or after a multiple of `interval` that no
// earlier call reached (so less than `pass` past it), with that iteration's maxdiff (within `rel`);
// every multiple up to `end` reached, where `complete` (a run that no callback stopped: a stop may take
// effect at a boundary whose callbacks are not delivered).
struct ProgressRule {
    size_t interval, start, end, pass;
    bool complete = true;
    double rel = 0;
};

// What breaks the rule in progress calls at `iters` with maxdiffs `seen`, against `maxdiffs` (of
// iterations 1, 2, ...); "" where nothing does.
inline std::string progress_rule_broken(const std::vector<size_t> &iters, const std::vector<double> &seen,
                                        const ProgressRule &rule, const std::vector<double> &maxdiffs) {
    size_t prev = rule.start;
    for (size_t k = 0; k < iters.size(); ++k) {
        const size_t it = iters[k], due = (prev / rule.interval + 1) * rule.interval;
        const std::string at = "progress call " + std::to_string(k) + " at " + std::to_string(it);
        if (it < due || it - due >= rule.pass || it > rule.end)
            return at + ": not the first boundary at or after " + std::to_string(due);
        if (k >= seen.size() || it > maxdiffs.size()) return at + ": no maxdiff to compare";
        const double want = maxdiffs[it - 1], got = seen[k];
        if (!(got == want || std::fabs(got - want) <= rule.rel * std::fabs(want)))
            return at + ": maxdiff " + std::to_string(got) + ", not " + std::to_string(want);
        prev = it;
    }
    if (rule.complete && (prev / rule.interval + 1) * rule.interval <= rule.end)
        return "no progress call after " + std::to_string(prev) + " up to " + std::to_string(rule.end);
    return "";
}

// The maxdiff of every iteration of setup `s` run free (threshold 0, a periodic report every iteration) by
// `run_setup` (a Setup to a Run).
template <class RunSetup> std::vector<double> every_maxdiff(const Setup &s, RunSetup &&run_setup) {
    Setup free = s;
    free.threshold = 0;
    free.period = 1;
    std::vector<double> md;
    for (const gpk_heat_report &r : run_setup(free).rec.periodic) md.push_back(r.maxdiff);
    return md;
}

// The fixed rows of a run on tinit: its first and last rows.
inline std::vector<double> fixed_rows_of(const std::vector<double> &tinit, size_t n, size_t m) {
    std::vector<double> f(tinit.begin(), tinit.begin() + long(m));
    f.insert(f.end(), tinit.end() - long(m), tinit.end());
    (void)n;
    return f;
}

// The whole check for one setup and checkpoint interval.
inline void check_resume(gpk_context *ctx, const Setup &s, const std::vector<double> &t,
                         const std::vector<double> &c, size_t interval, const std::string &what) {
    const Run plain = run(ctx, s, t, c, 0);
    const Run with = run(ctx, s, t, c, interval);
    CHECK_MSG(plain.status == GPK_OK && with.status == GPK_OK, what + ": " + plain.message + with.message);
    CHECK_MSG(same_grid(with.grid, plain.grid) && same_report(with.final, plain.final) &&
                  same_reports(with.rec.periodic, plain.rec.periodic),
              what + ": checkpoints changed the run");
    // A checkpoint at every multiple of the interval before the iteration the run ends on.
    std::vector<size_t> want;
    for (size_t k = interval; k < plain.final.niter; k += interval) want.push_back(k);
    std::vector<size_t> got;
    for (const Snapshot &cp : with.rec.checkpoints) got.push_back(cp.niter);
    CHECK_MSG(got == want, what + ": " + std::to_string(got.size()) + " checkpoints, " +
                               std::to_string(want.size()) + " expected");
    const std::vector<double> fixed = fixed_rows_of(t, s.n, s.m);
    // Resume from the first, a middle and the last checkpoint (all of them when there are few).
    std::vector<size_t> picks;
    for (size_t k = 0; k < with.rec.checkpoints.size(); ++k)
        if (with.rec.checkpoints.size() <= 4 || k == 0 || k == with.rec.checkpoints.size() / 2 ||
            k + 1 == with.rec.checkpoints.size())
            picks.push_back(k);
    for (size_t k : picks) {
        const Snapshot &cp = with.rec.checkpoints[k];
        const std::string at = what + ", resumed at " + std::to_string(cp.niter);
        Setup stopped = s;
        stopped.maxiter = cp.niter;
        const Run until = run(ctx, stopped, t, c, 0);
        CHECK_MSG(same_grid(cp.grid, until.grid) && same_bits(cp.maxdiff, until.final.maxdiff),
                  at + ": the checkpoint is not the grid of a run stopped there");
        const Run resumed = run(ctx, s, cp.grid, c, interval, cp.niter, fixed.data());
        CHECK_MSG(resumed.status == GPK_OK, at + ": " + resumed.message);
        CHECK_MSG(same_grid(resumed.grid, plain.grid), at + ": final grid");
        CHECK_MSG(same_report(resumed.final, plain.final), at + ": final report");
        std::vector<gpk_heat_report> later;
        for (const gpk_heat_report &r : plain.rec.periodic)
            if (r.niter > cp.niter) later.push_back(r);
        CHECK_MSG(same_reports(resumed.rec.periodic, later), at + ": periodic reports");
        std::vector<size_t> rest, again;
        for (size_t it : want)
            if (it > cp.niter) rest.push_back(it);
        for (const Snapshot &q : resumed.rec.checkpoints) again.push_back(q.niter);
        CHECK_MSG(again == rest, at + ": later checkpoints");
    }
    // A checkpoint callback that asks to stop cancels the run at that iteration, the final report given.
    if (!want.empty()) {
        Run stop = run(ctx, s, t, c, interval, 0, nullptr, want[0]);
        CHECK_MSG(stop.status == GPK_ERR_CANCELLED && stop.message.find("checkpoint") != std::string::npos,
                  what + ": stop from the checkpoint callback: " + stop.message);
        CHECK_EQ(stop.final.niter, want[0]);
        CHECK(stop.rec.finals.size() == 1 && same_grid(stop.grid, with.rec.checkpoints[0].grid));
    }
}

// Arguments the C boundary must refuse: start_iteration at or past maxiter, a non-finite fixed row.
inline void check_resume_arguments(gpk_context *ctx) {
    const Setup s{3, 4, 5, 0.0, 0};
    std::vector<double> t(12, 1.0), c(12, 0.5), fixed(8, 2.0);
    Run late = run(ctx, s, t, c, 0, 5);
    CHECK_MSG(late.status == GPK_ERR_INVALID_ARGUMENT &&
                  late.message.find("start_iteration") != std::string::npos,
              late.message);
    fixed[6] = std::numeric_limits<double>::quiet_NaN();
    Run bad = run(ctx, s, t, c, 0, 0, fixed.data());
    CHECK_MSG(bad.status == GPK_ERR_INVALID_ARGUMENT &&
                  bad.message.find("fixed_rows[6]") != std::string::npos,
              bad.message);
    CHECK(bad.rec.finals.empty() && bad.grid[0] == -12345.0);
}

} // namespace heat_resume
