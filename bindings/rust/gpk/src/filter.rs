//! `Filter`: immutable convolution kernels, 2D or separable, custom or named.

use crate::error::{check, Error, Result};
use gpk_sys as sys;
use std::ffi::CString;
use std::ptr::{self, NonNull};

/// An immutable filter. It may be shared between threads and contexts. Dropping it frees it.
pub struct Filter {
    raw: NonNull<sys::gpk_filter>,
}

// SAFETY: a gpk_filter is immutable once created and may be used from any thread (gpk.h).
unsafe impl Send for Filter {}
unsafe impl Sync for Filter {}

/// The shape of a filter.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct FilterInfo {
    /// A (row, column) pair rather than a 2D kernel.
    pub separable: bool,
    /// Rows of the 2D kernel, or the column filter's length.
    pub kh: usize,
    /// Columns of the 2D kernel, or the row filter's length.
    pub kw: usize,
    /// The sum of the taps (for separable: sum(row) * sum(col)).
    pub sum: f64,
    /// Every tap is an integer: integer images are filtered exactly.
    pub integer_taps: bool,
}

impl Filter {
    /// A named filter: "identity", "lp3", "lp5", "log9", "smooth5", "box:K" (K odd) or "gauss:SIGMA".
    pub fn named(name: &str) -> Result<Filter> {
        let c_name =
            CString::new(name).map_err(|_| Error::invalid(format!("filter name {name:?} contains NUL")))?;
        // SAFETY: c_name is NUL-terminated.
        Filter::create(|out| unsafe { sys::gpk_filter_create_named(out, c_name.as_ptr()) })
    }

    /// A 2D filter of kh rows x kw columns of taps, row-major; kh and kw odd, at most 63.
    pub fn new_2d(kh: usize, kw: usize, taps: &[f64]) -> Result<Filter> {
        if kh.checked_mul(kw) != Some(taps.len()) {
            return Err(Error::invalid(format!("taps has {} values; kh * kw is {kh} * {kw}", taps.len())));
        }
        // SAFETY: taps holds kh * kw values.
        Filter::create(|out| unsafe { sys::gpk_filter_create_2d(out, kh, kw, taps.as_ptr()) })
    }

    /// A separable filter: `row` along x, then `col` along y; odd lengths, at most 129.
    pub fn separable(row: &[f64], col: &[f64]) -> Result<Filter> {
        // SAFETY: the lengths are the slices' own.
        Filter::create(|out| unsafe {
            sys::gpk_filter_create_separable(out, row.len(), row.as_ptr(), col.len(), col.as_ptr())
        })
    }

    fn create(make: impl FnOnce(*mut *mut sys::gpk_filter) -> sys::gpk_status) -> Result<Filter> {
        let mut raw = ptr::null_mut();
        check(make(&mut raw), ptr::null())?;
        let raw =
            NonNull::new(raw).ok_or_else(|| Error::invalid("the filter constructor returned no filter"))?;
        Ok(Filter { raw })
    }

    pub fn info(&self) -> FilterInfo {
        let mut info = sys::gpk_filter_info {
            struct_size: std::mem::size_of::<sys::gpk_filter_info>(),
            separable: 0,
            kh: 0,
            kw: 0,
            sum: 0.0,
            integer_taps: 0,
        };
        // SAFETY: info has its struct_size set; raw is a live filter, so the call cannot fail.
        let code = unsafe { sys::gpk_filter_get_info(&mut info, self.raw.as_ptr()) };
        debug_assert_eq!(code, sys::GPK_OK);
        FilterInfo {
            separable: info.separable != 0,
            kh: info.kh,
            kw: info.kw,
            sum: info.sum,
            integer_taps: info.integer_taps != 0,
        }
    }

    /// The taps: kh * kw row-major for a 2D filter; the row taps then the column taps for a separable one.
    pub fn taps(&self) -> Vec<f64> {
        let info = self.info();
        let len = if info.separable { info.kw + info.kh } else { info.kw * info.kh };
        let mut taps = vec![0.0; len];
        // SAFETY: taps holds exactly the filter's number of taps.
        let code = unsafe { sys::gpk_filter_get_taps(taps.as_mut_ptr(), taps.len(), self.raw.as_ptr()) };
        debug_assert_eq!(code, sys::GPK_OK);
        taps
    }

    pub(crate) fn as_ptr(&self) -> *const sys::gpk_filter {
        self.raw.as_ptr()
    }
}

impl Clone for Filter {
    /// An independent copy with the same taps.
    fn clone(&self) -> Filter {
        let info = self.info();
        let taps = self.taps();
        let copy = if info.separable {
            Filter::separable(&taps[..info.kw], &taps[info.kw..])
        } else {
            Filter::new_2d(info.kh, info.kw, &taps)
        };
        copy.unwrap_or_else(|e| panic!("copying a valid filter failed: {e}"))
    }
}

impl Drop for Filter {
    fn drop(&mut self) {
        // SAFETY: raw came from a gpk_filter_create_* call and is destroyed once.
        unsafe { sys::gpk_filter_destroy(self.raw.as_ptr()) }
    }
}

impl std::fmt::Debug for Filter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Filter").field("info", &self.info()).finish()
    }
}
