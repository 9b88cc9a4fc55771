//! Raw declarations of `gpk.h`, the C API of gpk, one for one. Everything here is `unsafe` to use; the
//! `gpk` crate is the safe interface. C enums are declared as `c_uint` aliases with constants, so that
//! a value the library returns is never an invalid Rust enum.
//!
//! The library is found by the build script: `GPK_LIB_DIR`, else `pkg-config --libs gpk`.
#![allow(non_camel_case_types)]

use std::marker::{PhantomData, PhantomPinned};
use std::os::raw::{c_char, c_double, c_int, c_uint, c_void};

pub const GPK_VERSION_MAJOR: c_uint = 0;
pub const GPK_VERSION_MINOR: c_uint = 2;
pub const GPK_VERSION_PATCH: c_uint = 0;
pub const GPK_VERSION_NUMBER: c_uint =
    GPK_VERSION_MAJOR * 10000 + GPK_VERSION_MINOR * 100 + GPK_VERSION_PATCH;

pub type gpk_status = c_uint;
pub const GPK_OK: gpk_status = 0;
pub const GPK_ERR_INVALID_ARGUMENT: gpk_status = 1;
pub const GPK_ERR_OUT_OF_MEMORY: gpk_status = 2;
pub const GPK_ERR_NO_DEVICE: gpk_status = 3;
pub const GPK_ERR_UNSUPPORTED: gpk_status = 4;
pub const GPK_ERR_DEVICE: gpk_status = 5;
pub const GPK_ERR_CANCELLED: gpk_status = 6;
pub const GPK_ERR_INTERNAL: gpk_status = 7;

pub type gpk_backend = c_uint;
pub const GPK_BACKEND_AUTO: gpk_backend = 0;
pub const GPK_BACKEND_CPU: gpk_backend = 1;
pub const GPK_BACKEND_CUDA: gpk_backend = 2;

pub type gpk_dtype = c_uint;
pub const GPK_U8: gpk_dtype = 0;
pub const GPK_U16: gpk_dtype = 1;
pub const GPK_U32: gpk_dtype = 2;
pub const GPK_I32: gpk_dtype = 3;
pub const GPK_F32: gpk_dtype = 4;
pub const GPK_F64: gpk_dtype = 5;

pub type gpk_border = c_uint;
pub const GPK_BORDER_ZERO: gpk_border = 0;
pub const GPK_BORDER_CLAMP: gpk_border = 1;
pub const GPK_BORDER_MIRROR: gpk_border = 2;
pub const GPK_BORDER_REFLECT: gpk_border = 3;
pub const GPK_BORDER_WRAP: gpk_border = 4;

pub type gpk_normalize = c_uint;
pub const GPK_NORMALIZE_NONE: gpk_normalize = 0;
pub const GPK_NORMALIZE_SUM: gpk_normalize = 1;
pub const GPK_NORMALIZE_MINMAX: gpk_normalize = 2;

pub type gpk_accumulate = c_uint;
pub const GPK_ACCUMULATE_AUTO: gpk_accumulate = 0;
pub const GPK_ACCUMULATE_F32: gpk_accumulate = 1;
pub const GPK_ACCUMULATE_F64: gpk_accumulate = 2;

pub const GPK_FILTER_MAX_2D: usize = 63;
pub const GPK_FILTER_MAX_SEPARABLE: usize = 129;

/// Opaque: only ever behind a pointer.
#[repr(C)]
pub struct gpk_context {
    _private: [u8; 0],
    _not_send_sync_unpin: PhantomData<(*mut u8, PhantomPinned)>,
}

/// Opaque: only ever behind a pointer.
#[repr(C)]
pub struct gpk_filter {
    _private: [u8; 0],
    _not_send_sync_unpin: PhantomData<(*mut u8, PhantomPinned)>,
}

#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct gpk_device_info {
    pub struct_size: usize,
    pub name: [c_char; 256],
    pub compute_major: c_int,
    pub compute_minor: c_int,
    pub total_memory: u64,
    pub free_memory: u64,
    pub multiprocessors: c_int,
    pub clock_khz: c_int,
    pub memory_bus_bits: c_int,
    pub l2_bytes: c_int,
    pub driver_version: c_int,
    pub runtime_version: c_int,
}

#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct gpk_context_options {
    pub struct_size: usize,
    pub backend: gpk_backend,
    pub device: c_int,
    pub stream: *mut c_void,
    pub threads: c_uint,
}

#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct gpk_heat_report {
    pub niter: usize,
    pub tmin: c_double,
    pub tmax: c_double,
    pub maxdiff: c_double,
    pub tavg: c_double,
    pub time: c_double,
}

pub type gpk_heat_report_fn = Option<
    unsafe extern "C" fn(report: *const gpk_heat_report, is_final: c_int, user_data: *mut c_void) -> c_int,
>;
pub type gpk_heat_progress_fn = Option<
    unsafe extern "C" fn(niter: usize, maxdiff: c_double, time: c_double, user_data: *mut c_void) -> c_int,
>;
pub type gpk_heat_checkpoint_fn = Option<
    unsafe extern "C" fn(niter: usize, maxdiff: c_double, grid: *const c_double, user_data: *mut c_void) -> c_int,
>;

#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct gpk_heat_params {
    pub struct_size: usize,
    pub rows: usize,
    pub cols: usize,
    pub maxiter: usize,
    pub threshold: c_double,
    pub period: usize,
    pub on_report: gpk_heat_report_fn,
    pub on_progress: gpk_heat_progress_fn,
    pub progress_interval: usize,
    pub user_data: *mut c_void,
    pub start_iteration: usize,
    pub fixed_rows: *const c_double,
    pub on_checkpoint: gpk_heat_checkpoint_fn,
    pub checkpoint_interval: usize,
}

#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct gpk_histogram_params {
    pub struct_size: usize,
    pub dtype: gpk_dtype,
    pub width: usize,
    pub height: usize,
    pub channels: c_uint,
    pub stride: usize,
    pub bins: usize,
    pub lower: c_double,
    pub upper: c_double,
    pub saturate: u64,
}

#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct gpk_filter_info {
    pub struct_size: usize,
    pub separable: c_int,
    pub kh: usize,
    pub kw: usize,
    pub sum: c_double,
    pub integer_taps: c_int,
}

#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct gpk_image {
    pub struct_size: usize,
    pub dtype: gpk_dtype,
    pub width: usize,
    pub height: usize,
    pub channels: c_uint,
    pub stride: usize,
}

#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct gpk_convolve_params {
    pub struct_size: usize,
    pub filter: *const gpk_filter,
    pub border: gpk_border,
    pub normalize: gpk_normalize,
    pub accumulate: gpk_accumulate,
}

extern "C" {
    pub fn gpk_version_number() -> c_uint;
    pub fn gpk_version_string() -> *const c_char;
    pub fn gpk_status_string(status: gpk_status) -> *const c_char;
    pub fn gpk_backend_name(backend: gpk_backend) -> *const c_char;

    pub fn gpk_device_count(count: *mut c_int) -> gpk_status;
    pub fn gpk_device_get_info(info: *mut gpk_device_info, index: c_int) -> gpk_status;

    pub fn gpk_context_options_init_sized(opts: *mut gpk_context_options, struct_size: usize) -> gpk_status;
    pub fn gpk_context_create(out: *mut *mut gpk_context, opts: *const gpk_context_options) -> gpk_status;
    pub fn gpk_context_destroy(ctx: *mut gpk_context);
    pub fn gpk_context_backend(ctx: *const gpk_context) -> gpk_backend;
    pub fn gpk_context_last_error(ctx: *const gpk_context) -> *const c_char;
    pub fn gpk_context_set_stream(ctx: *mut gpk_context, stream: *mut c_void) -> gpk_status;
    pub fn gpk_context_synchronize(ctx: *mut gpk_context) -> gpk_status;

    pub fn gpk_dtype_size(dtype: gpk_dtype) -> usize;
    pub fn gpk_dtype_name(dtype: gpk_dtype) -> *const c_char;

    pub fn gpk_heat_params_init_sized(params: *mut gpk_heat_params, struct_size: usize) -> gpk_status;
    pub fn gpk_heat_run(
        ctx: *mut gpk_context,
        params: *const gpk_heat_params,
        tinit: *const c_double,
        conductivity: *const c_double,
        tfinal: *mut c_double,
        final_: *mut gpk_heat_report,
    ) -> gpk_status;

    pub fn gpk_histogram_params_init_sized(params: *mut gpk_histogram_params, struct_size: usize) -> gpk_status;
    pub fn gpk_histogram(
        ctx: *mut gpk_context,
        params: *const gpk_histogram_params,
        data: *const c_void,
        hist: *mut u64,
        uncounted: *mut u64,
    ) -> gpk_status;

    pub fn gpk_filter_create_2d(
        out: *mut *mut gpk_filter,
        kh: usize,
        kw: usize,
        taps: *const c_double,
    ) -> gpk_status;
    pub fn gpk_filter_create_separable(
        out: *mut *mut gpk_filter,
        row_len: usize,
        row: *const c_double,
        col_len: usize,
        col: *const c_double,
    ) -> gpk_status;
    pub fn gpk_filter_create_named(out: *mut *mut gpk_filter, name: *const c_char) -> gpk_status;
    pub fn gpk_filter_destroy(filter: *mut gpk_filter);
    pub fn gpk_filter_get_info(info: *mut gpk_filter_info, filter: *const gpk_filter) -> gpk_status;
    pub fn gpk_filter_get_taps(taps: *mut c_double, capacity: usize, filter: *const gpk_filter)
        -> gpk_status;

    pub fn gpk_image_init_sized(
        image: *mut gpk_image,
        struct_size: usize,
        dtype: gpk_dtype,
        width: usize,
        height: usize,
        channels: c_uint,
    ) -> gpk_status;
    pub fn gpk_convolve_params_init_sized(params: *mut gpk_convolve_params, struct_size: usize) -> gpk_status;
    pub fn gpk_convolve(
        ctx: *mut gpk_context,
        params: *const gpk_convolve_params,
        in_: *const gpk_image,
        in_data: *const c_void,
        out: *const gpk_image,
        out_data: *mut c_void,
    ) -> gpk_status;
}

// gpk.h's init functions are macros that pass the caller's struct size to the _sized forms; these do the
// same with this crate's layouts.

/// The defaults of `gpk_context_options`, as gpk.h's `gpk_context_options_init`.
///
/// # Safety
/// `opts` points to writable memory for one `gpk_context_options` (or is null: then an error status).
pub unsafe fn gpk_context_options_init(opts: *mut gpk_context_options) -> gpk_status {
    gpk_context_options_init_sized(opts, core::mem::size_of::<gpk_context_options>())
}

/// The defaults of `gpk_heat_params`, as gpk.h's `gpk_heat_params_init`.
///
/// # Safety
/// `params` points to writable memory for one `gpk_heat_params` (or is null: then an error status).
pub unsafe fn gpk_heat_params_init(params: *mut gpk_heat_params) -> gpk_status {
    gpk_heat_params_init_sized(params, core::mem::size_of::<gpk_heat_params>())
}

/// The defaults of `gpk_histogram_params`, as gpk.h's `gpk_histogram_params_init`.
///
/// # Safety
/// `params` points to writable memory for one `gpk_histogram_params` (or is null: then an error status).
pub unsafe fn gpk_histogram_params_init(params: *mut gpk_histogram_params) -> gpk_status {
    gpk_histogram_params_init_sized(params, core::mem::size_of::<gpk_histogram_params>())
}

/// The defaults of `gpk_convolve_params`, as gpk.h's `gpk_convolve_params_init`.
///
/// # Safety
/// `params` points to writable memory for one `gpk_convolve_params` (or is null: then an error status).
pub unsafe fn gpk_convolve_params_init(params: *mut gpk_convolve_params) -> gpk_status {
    gpk_convolve_params_init_sized(params, core::mem::size_of::<gpk_convolve_params>())
}

/// A packed image of the given shape, as gpk.h's `gpk_image_init`.
///
/// # Safety
/// `image` points to writable memory for one `gpk_image` (or is null: then an error status).
pub unsafe fn gpk_image_init(
    image: *mut gpk_image,
    dtype: gpk_dtype,
    width: usize,
    height: usize,
    channels: c_uint,
) -> gpk_status {
    gpk_image_init_sized(image, core::mem::size_of::<gpk_image>(), dtype, width, height, channels)
}
