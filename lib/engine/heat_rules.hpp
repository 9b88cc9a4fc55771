// Rules of a heat run that every solver shares (the CPU and CUDA backends and libgpk_mpi's distributed
// one), so that each delivers the same callbacks at the same iterations and reports the same values.
#pragma once

#include "engine/error.hpp"
#include "engine/jobs.hpp"

#include <algorithm>
#include <cstddef>
#include <string>

namespace gpk {

// A checkpoint is due after iteration `iter`: a multiple of the interval, and not the last iteration
// (convergence, the other way a run ends there, is the caller's to exclude).
inline bool heat_checkpoint_due(const HeatJob &job, size_t iter) {
    return job.on_checkpoint && job.checkpoint_interval > 0 && iter % job.checkpoint_interval == 0 &&
           iter < job.maxiter;
}

// The callbacks of one iteration, in the order they come (gpk.h): periodic report, progress, checkpoint.
enum class HeatCallback { report, progress, checkpoint, none };

inline const char *heat_callback_name(HeatCallback c) {
    return c == HeatCallback::report ? "report" : c == HeatCallback::progress ? "progress" : "checkpoint";
}

// Progress is a request, not a barrier: passes keep their length, and progress comes at the pass boundary
// `iter` (the end of a pass or batch the host sees, or the iteration the run ends at) reached from the one
// before, `prev`, where a multiple of progress_interval lies in (prev, iter]: at most once a boundary, with
// that boundary's iteration and maxdiff.
inline bool heat_progress_due(const HeatJob &job, size_t prev, size_t iter) {
    return job.progress_interval > 0 && iter / job.progress_interval > prev / job.progress_interval;
}

// Which callbacks the boundary `iter`, reached from `prev`, owes by the schedule (period,
// progress_interval, checkpoints), whether or not the callback is given: a periodic report and a
// checkpoint only where `converged` is false (not on the iteration that converged), a checkpoint not at
// maxiter either. Passes end at reports and checkpoints, so theirs are exact iterations.
struct HeatCallbacksDue {
    bool report, progress, checkpoint;
    bool any() const { return report || progress || checkpoint; }
};
inline HeatCallbacksDue heat_callbacks_due(const HeatJob &job, size_t prev, size_t iter, bool converged) {
    return {!converged && job.period > 0 && iter % job.period == 0, heat_progress_due(job, prev, iter),
            !converged && heat_checkpoint_due(job, iter)};
}

// Delivers the callbacks the boundary `iter` (reached from `prev`) owes, in their order: report(),
// progress() and checkpoint() each return true where the callback asked to stop. Returns the first that
// asked, or none; a stop asked on an iteration that ends the run anyway (convergence, maxiter) is none: the
// run ends there either way, and is not cancelled. A run that is cancelled ends at this boundary (or, where
// the device has the next batch queued, at that batch's end), the final report still delivered
// (heat_cancelled).
template <class Report, class Progress, class Checkpoint>
HeatCallback heat_deliver(const HeatJob &job, size_t prev, size_t iter, bool converged, Report &&report,
                          Progress &&progress, Checkpoint &&checkpoint) {
    const HeatCallbacksDue due = heat_callbacks_due(job, prev, iter, converged);
    HeatCallback stop = HeatCallback::none;
    auto asked = [&](HeatCallback c, bool wants_stop) {
        if (wants_stop && stop == HeatCallback::none) stop = c;
    };
    if (due.report) asked(HeatCallback::report, report());
    if (due.progress) asked(HeatCallback::progress, progress());
    if (due.checkpoint) asked(HeatCallback::checkpoint, checkpoint());
    return converged || iter == job.maxiter ? HeatCallback::none : stop;
}

// The final report, to job.final and the report callback (is_final 1); a run that a callback stopped gets it
// too.
inline void heat_final_report(const HeatJob &job, const gpk_heat_report &r) {
    if (job.final) *job.final = r;
    if (job.on_report) job.on_report(&r, 1, job.user_data);
}

// The error of a run that callback `by` stopped at iteration `iter`; `whose` names where it ran, if
// anywhere ("" or " of rank 2").
[[noreturn]] inline void heat_cancelled(HeatCallback by, size_t iter, const std::string &whose = "") {
    fail(GPK_ERR_CANCELLED, std::string("heat: cancelled by the ") + heat_callback_name(by) + " callback" +
                                whose + " at iteration " + std::to_string(iter));
}

// Iterations of the pass that starts after `done`: at most `max_pass`, ending at maxiter, at the next
// periodic report and at the next checkpoint (whose grids must be whole).
inline size_t heat_pass_length(const HeatJob &job, size_t done, size_t max_pass) {
    size_t length = std::min(max_pass, job.maxiter - done);
    if (job.period > 0) length = std::min(length, job.period - done % job.period);
    if (job.on_checkpoint && job.checkpoint_interval > 0)
        length = std::min(length, job.checkpoint_interval - done % job.checkpoint_interval);
    return length;
}

// The first of a pass's `length` iterations (1-based) whose maxdiff (maxdiffs[s - 1]) is under the
// threshold, or 0 where none is: the iteration the run converges at.
inline size_t heat_converged_in(const HeatJob &job, const double *maxdiffs, size_t length) {
    for (size_t s = 1; s <= length; ++s)
        if (maxdiffs[s - 1] < job.threshold) return s;
    return 0;
}

// The mean temperature from the rows' sums: added in row order, then divided by the cell count. The
// contract (README, "What gpk computes") leaves the order open; fixing it by rows lets any split of the grid
// into row blocks (threads, ranks) give the same bits, as long as each row's sum is computed the same way.
template <class RowSum> double heat_mean(size_t rows, size_t cols, RowSum row_sum) {
    double sum = 0;
    for (size_t i = 0; i < rows; ++i) sum += row_sum(i);
    return sum / (double(rows) * double(cols));
}

} // namespace gpk
