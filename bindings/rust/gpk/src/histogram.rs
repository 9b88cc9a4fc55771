//! Histograms of 1D and 2D data (`gpk_histogram`).

use crate::context::Context;
use crate::error::{Error, Result, Status};
use crate::sample::{ImageRef, Sample};
use gpk_sys as sys;
use std::alloc::{alloc_zeroed, Layout};

/// Parameters of a histogram: `HistogramParams::new(1024).saturate(255)`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct HistogramParams {
    bins: usize,
    range: Option<(f64, f64)>,
    saturate: u64,
}

impl HistogramParams {
    /// `bins` equal bins over [0, bins): integer sample v goes to bin v.
    pub fn new(bins: usize) -> Self {
        HistogramParams { bins, range: None, saturate: 0 }
    }

    /// Bins over [lower, upper) instead; samples outside it (and NaN) are not counted.
    pub fn range(mut self, lower: f64, upper: f64) -> Self {
        self.range = Some((lower, upper));
        self
    }

    /// Clamp the final counts at `max` (0 = no clamp; 255 = 8-bit saturating counters).
    pub fn saturate(mut self, max: u64) -> Self {
        self.saturate = max;
        self
    }
}

/// Counts per channel and bin.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Histogram {
    bins: usize,
    counts: Vec<u64>,
    uncounted: Vec<u64>,
}

impl Histogram {
    pub fn bins(&self) -> usize {
        self.bins
    }

    pub fn channels(&self) -> usize {
        self.uncounted.len()
    }

    /// The counts of channel `c`.
    pub fn channel(&self, c: usize) -> &[u64] {
        &self.counts[c * self.bins..(c + 1) * self.bins]
    }

    /// All counts, channel-major: `counts()[c * bins + b]`.
    pub fn counts(&self) -> &[u64] {
        &self.counts
    }

    /// The samples of each channel that fell outside the range (or were NaN).
    pub fn uncounted(&self) -> &[u64] {
        &self.uncounted
    }
}

/// `len` zeroed counters, or an out-of-memory error. Zeroed allocation leaves the pages untouched, so a
/// huge request that gpk then rejects costs nothing.
fn zeroed_counts(len: usize) -> Result<Vec<u64>> {
    let oom = || Error::new(Status::OutOfMemory, format!("cannot allocate {len} histogram counters"));
    let layout = Layout::array::<u64>(len).map_err(|_| oom())?;
    if layout.size() == 0 {
        return Ok(Vec::new());
    }
    // SAFETY: the layout is non-empty; a non-null block of `len` zeroed u64 is a valid Vec buffer.
    unsafe {
        let block = alloc_zeroed(layout).cast::<u64>();
        if block.is_null() {
            return Err(oom());
        }
        Ok(Vec::from_raw_parts(block, len, len))
    }
}

impl Context {
    /// The histogram of 1D data, one channel.
    pub fn histogram<T: Sample>(&mut self, params: &HistogramParams, data: &[T]) -> Result<Histogram> {
        self.histogram_image(params, &ImageRef::new(data, data.len(), 1, 1)?)
    }

    /// The histogram of each channel of an image (rows padded to the stride are fine: the padding is
    /// not read).
    pub fn histogram_image<T: Sample>(
        &mut self,
        params: &HistogramParams,
        image: &ImageRef<T>,
    ) -> Result<Histogram> {
        let shape = image.shape();
        if params.bins == 0 {
            return Err(Error::invalid("bins is 0; it must be at least 1"));
        }
        let len = params
            .bins
            .checked_mul(shape.channels as usize)
            .ok_or_else(|| Error::invalid("bins overflows"))?;
        let (lower, upper) = params.range.unwrap_or((0.0, params.bins as f64));
        let raw = sys::gpk_histogram_params {
            struct_size: std::mem::size_of::<sys::gpk_histogram_params>(),
            dtype: T::DTYPE,
            width: shape.width,
            height: shape.height,
            channels: shape.channels,
            stride: shape.stride_bytes::<T>()?,
            bins: params.bins,
            lower,
            upper,
            saturate: params.saturate,
        };
        let mut counts = zeroed_counts(len)?;
        let mut uncounted = vec![0u64; shape.channels as usize];
        // SAFETY: the image holds its shape (checked by ImageRef); counts holds bins * channels counters
        // and uncounted one per channel.
        let code = unsafe {
            sys::gpk_histogram(
                self.as_ptr(),
                &raw,
                image.data().as_ptr().cast(),
                counts.as_mut_ptr(),
                uncounted.as_mut_ptr(),
            )
        };
        self.check(code)?;
        Ok(Histogram { bins: params.bins, counts, uncounted })
    }
}
