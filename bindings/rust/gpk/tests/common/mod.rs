//! The C API called directly through gpk-sys, to compare the safe crate with on the same inputs, and
//! reproducible test data.
#![allow(dead_code)]

use gpk_sys as sys;
use std::os::raw::{c_int, c_void};
use std::ptr;

/// A small reproducible generator (64-bit LCG).
pub struct Lcg(pub u64);

impl Lcg {
    pub fn below(&mut self, n: u64) -> u64 {
        self.0 = self.0.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        (self.0 >> 33) % n
    }

    pub fn vec<T>(&mut self, len: usize, mut f: impl FnMut(u64) -> T, n: u64) -> Vec<T> {
        (0..len).map(|_| f(self.below(n))).collect()
    }
}

/// A raw context on the default backend, destroyed on drop.
pub struct RawContext(pub *mut sys::gpk_context);

impl RawContext {
    pub fn new() -> RawContext {
        let mut ctx = ptr::null_mut();
        assert_eq!(unsafe { sys::gpk_context_create(&mut ctx, ptr::null()) }, sys::GPK_OK);
        RawContext(ctx)
    }
}

impl Drop for RawContext {
    fn drop(&mut self) {
        unsafe { sys::gpk_context_destroy(self.0) }
    }
}

unsafe extern "C" fn push_periodic(
    report: *const sys::gpk_heat_report,
    is_final: c_int,
    user: *mut c_void,
) -> c_int {
    if is_final == 0 {
        unsafe { (*user.cast::<Vec<sys::gpk_heat_report>>()).push(*report) };
    }
    0
}

/// gpk_heat_run: (status, grid, final report, periodic reports).
pub fn c_heat(
    rows: usize,
    cols: usize,
    maxiter: usize,
    threshold: f64,
    period: usize,
    tinit: &[f64],
    conductivity: &[f64],
) -> (sys::gpk_status, Vec<f64>, sys::gpk_heat_report, Vec<sys::gpk_heat_report>) {
    let ctx = RawContext::new();
    let mut periodic: Vec<sys::gpk_heat_report> = Vec::new();
    let mut grid = vec![0.0; rows * cols];
    let mut report = sys::gpk_heat_report::default();
    let status = unsafe {
        let mut params = std::mem::zeroed::<sys::gpk_heat_params>();
        sys::gpk_heat_params_init(&mut params);
        params.rows = rows;
        params.cols = cols;
        params.maxiter = maxiter;
        params.threshold = threshold;
        params.period = period;
        params.on_report = Some(push_periodic);
        params.user_data = (&mut periodic as *mut Vec<sys::gpk_heat_report>).cast();
        sys::gpk_heat_run(
            ctx.0,
            &params,
            tinit.as_ptr(),
            conductivity.as_ptr(),
            grid.as_mut_ptr(),
            &mut report,
        )
    };
    (status, grid, report, periodic)
}

/// The shape of raw histogram data.
pub struct RawData<'a, T> {
    pub data: &'a [T],
    pub width: usize,
    pub height: usize,
    pub channels: u32,
    pub stride_bytes: usize,
}

/// gpk_histogram: (status, counts, uncounted).
pub fn c_histogram<T>(
    dtype: sys::gpk_dtype,
    raw: &RawData<T>,
    bins: usize,
    lower: f64,
    upper: f64,
    saturate: u64,
) -> (sys::gpk_status, Vec<u64>, Vec<u64>) {
    let ctx = RawContext::new();
    let mut hist = vec![0u64; bins * raw.channels as usize];
    let mut uncounted = vec![0u64; raw.channels as usize];
    let status = unsafe {
        let mut params = std::mem::zeroed::<sys::gpk_histogram_params>();
        sys::gpk_histogram_params_init(&mut params);
        params.dtype = dtype;
        params.width = raw.width;
        params.height = raw.height;
        params.channels = raw.channels;
        params.stride = raw.stride_bytes;
        params.bins = bins;
        params.lower = lower;
        params.upper = upper;
        params.saturate = saturate;
        sys::gpk_histogram(
            ctx.0,
            &params,
            raw.data.as_ptr().cast(),
            hist.as_mut_ptr(),
            uncounted.as_mut_ptr(),
        )
    };
    (status, hist, uncounted)
}

/// A raw filter, destroyed on drop.
pub struct RawFilter(pub *mut sys::gpk_filter);

impl RawFilter {
    pub fn named(name: &str) -> RawFilter {
        let c_name = std::ffi::CString::new(name).unwrap();
        let mut f = ptr::null_mut();
        assert_eq!(unsafe { sys::gpk_filter_create_named(&mut f, c_name.as_ptr()) }, sys::GPK_OK);
        RawFilter(f)
    }

    pub fn taps_2d(kh: usize, kw: usize, taps: &[f64]) -> RawFilter {
        let mut f = ptr::null_mut();
        assert_eq!(unsafe { sys::gpk_filter_create_2d(&mut f, kh, kw, taps.as_ptr()) }, sys::GPK_OK);
        RawFilter(f)
    }
}

impl Drop for RawFilter {
    fn drop(&mut self) {
        unsafe { sys::gpk_filter_destroy(self.0) }
    }
}

/// Packed images of `width` x `height` x `channels` for gpk_convolve.
pub struct RawConvolve {
    pub width: usize,
    pub height: usize,
    pub channels: u32,
    pub border: sys::gpk_border,
    pub normalize: sys::gpk_normalize,
    pub accumulate: sys::gpk_accumulate,
}

impl RawConvolve {
    pub fn run<I, O: Default + Clone>(
        &self,
        filter: &RawFilter,
        in_dtype: sys::gpk_dtype,
        input: &[I],
        out_dtype: sys::gpk_dtype,
    ) -> (sys::gpk_status, Vec<O>) {
        let ctx = RawContext::new();
        let mut out = vec![O::default(); self.width * self.height * self.channels as usize];
        let status = unsafe {
            let mut params = std::mem::zeroed::<sys::gpk_convolve_params>();
            sys::gpk_convolve_params_init(&mut params);
            params.filter = filter.0;
            params.border = self.border;
            params.normalize = self.normalize;
            params.accumulate = self.accumulate;
            let mut in_image = std::mem::zeroed::<sys::gpk_image>();
            let mut out_image = std::mem::zeroed::<sys::gpk_image>();
            sys::gpk_image_init(&mut in_image, in_dtype, self.width, self.height, self.channels);
            sys::gpk_image_init(&mut out_image, out_dtype, self.width, self.height, self.channels);
            sys::gpk_convolve(
                ctx.0,
                &params,
                &in_image,
                input.as_ptr().cast(),
                &out_image,
                out.as_mut_ptr().cast(),
            )
        };
        (status, out)
    }
}
