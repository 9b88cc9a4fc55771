//! Heat dissipation on a cylinder (`gpk_heat_run`).

use crate::context::Context;
use crate::error::{Error, Result};
use gpk_sys as sys;
use std::os::raw::{c_int, c_void};

/// Parameters of a heat run: `HeatParams::new(rows, cols).maxiter(5000).threshold(1e-3).period(500)`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct HeatParams {
    rows: usize,
    cols: usize,
    maxiter: usize,
    threshold: f64,
    period: usize,
}

impl HeatParams {
    /// A grid of `rows` x `cols`, row-major; the columns wrap around. One iteration, threshold 0, no
    /// periodic reports.
    pub fn new(rows: usize, cols: usize) -> Self {
        HeatParams { rows, cols, maxiter: 1, threshold: 0.0, period: 0 }
    }

    /// The most iterations (>= 1).
    pub fn maxiter(mut self, maxiter: usize) -> Self {
        self.maxiter = maxiter;
        self
    }

    /// Stop at the first iteration whose largest change is below `threshold` (>= 0).
    pub fn threshold(mut self, threshold: f64) -> Self {
        self.threshold = threshold;
        self
    }

    /// A periodic report every `period` iterations; 0 for none.
    pub fn period(mut self, period: usize) -> Self {
        self.period = period;
        self
    }

    /// rows * cols, checked.
    fn cells(&self) -> Result<usize> {
        self.rows
            .checked_mul(self.cols)
            .ok_or_else(|| Error::invalid(format!("rows * cols overflows: {} * {}", self.rows, self.cols)))
    }
}

/// One report of a heat run, over the interior of the newest grid.
pub type HeatReport = sys::gpk_heat_report;

/// What a heat run produced besides the grid.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct HeatRun {
    /// The final report: iterations done, min, max, mean, the last maxdiff, seconds.
    pub report: HeatReport,
    /// The periodic reports, in order.
    pub periodic: Vec<HeatReport>,
}

/// Receives the reports of a run in the Vec<HeatReport> behind user_data.
unsafe extern "C" fn collect_periodic(
    report: *const HeatReport,
    is_final: c_int,
    user_data: *mut c_void,
) -> c_int {
    if is_final == 0 {
        // SAFETY: user_data is the &mut Vec of heat_into, alive for the whole call; report is valid.
        unsafe { (*user_data.cast::<Vec<HeatReport>>()).push(*report) };
    }
    0
}

impl Context {
    /// Runs the heat simulation on `tinit` with `conductivity` (rows * cols values each, row-major) and
    /// writes the final grid to `tfinal` (rows * cols values).
    pub fn heat_into(
        &mut self,
        params: &HeatParams,
        tinit: &[f64],
        conductivity: &[f64],
        tfinal: &mut [f64],
    ) -> Result<HeatRun> {
        let cells = params.cells()?;
        for (name, len) in
            [("tinit", tinit.len()), ("conductivity", conductivity.len()), ("tfinal", tfinal.len())]
        {
            if len != cells {
                return Err(Error::invalid(format!(
                    "{name} has {len} values; rows * cols is {} * {} = {cells}",
                    params.rows, params.cols
                )));
            }
        }
        let mut run = HeatRun::default();
        let mut raw = std::mem::MaybeUninit::<sys::gpk_heat_params>::uninit();
        // SAFETY: params_init fills every field; the slices hold rows * cols values; `run` outlives the call.
        let code = unsafe {
            sys::gpk_heat_params_init(raw.as_mut_ptr());
            let mut raw = raw.assume_init();
            raw.rows = params.rows;
            raw.cols = params.cols;
            raw.maxiter = params.maxiter;
            raw.threshold = params.threshold;
            raw.period = params.period;
            raw.on_report = Some(collect_periodic);
            raw.user_data = (&mut run.periodic as *mut Vec<HeatReport>).cast();
            sys::gpk_heat_run(
                self.as_ptr(),
                &raw,
                tinit.as_ptr(),
                conductivity.as_ptr(),
                tfinal.as_mut_ptr(),
                &mut run.report,
            )
        };
        self.check(code)?;
        Ok(run)
    }

    /// As `heat_into`, returning the final grid.
    pub fn heat(
        &mut self,
        params: &HeatParams,
        tinit: &[f64],
        conductivity: &[f64],
    ) -> Result<(Vec<f64>, HeatRun)> {
        let mut tfinal = vec![0.0; params.cells()?.min(tinit.len())];
        let run = self.heat_into(params, tinit, conductivity, &mut tfinal)?;
        Ok((tfinal, run))
    }
}
