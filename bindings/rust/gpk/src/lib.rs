//! A safe interface to gpk: heat dissipation on a cylinder, histograms and 2D convolution, computed on a
//! CUDA GPU when one is usable and on the CPU otherwise.
//!
//! ```no_run
//! use gpk::{Border, Context, ConvolveParams, Filter, ImageMut, ImageRef, Normalize};
//!
//! # fn main() -> gpk::Result<()> {
//! let mut ctx = Context::new()?;
//! let pixels = vec![7u8; 64 * 48];
//! let mut edges = vec![0u8; 64 * 48];
//! let lp3 = Filter::named("lp3")?;
//! let params = ConvolveParams::new(&lp3).border(Border::Zero).normalize(Normalize::MinMax);
//! ctx.convolve(&params, &ImageRef::new(&pixels, 64, 48, 1)?, &mut ImageMut::new(&mut edges, 64, 48, 1)?)?;
//! # Ok(())
//! # }
//! ```
//!
//! Every fallible call returns `Result<_, gpk::Error>`; an `Error` carries the C status and the message
//! naming the argument at fault. Slices are checked against the shapes they are said to hold before
//! any pointer reaches C.

mod context;
mod convolve;
mod error;
mod filter;
mod heat;
mod histogram;
mod sample;

pub use context::{Backend, Context, ContextBuilder};
pub use convolve::{Accumulate, Border, ConvolveParams, Normalize};
pub use error::{Error, Result, Status};
pub use filter::{Filter, FilterInfo};
pub use heat::{HeatParams, HeatReport, HeatRun};
pub use histogram::{Histogram, HistogramParams};
pub use sample::{ImageMut, ImageRef, PixelSample, Sample, Shape};

/// The version of the library actually loaded, "MAJOR.MINOR.PATCH".
pub fn version() -> String {
    // SAFETY: gpk_version_string returns a static NUL-terminated string.
    unsafe { std::ffi::CStr::from_ptr(gpk_sys::gpk_version_string()) }.to_string_lossy().into_owned()
}
