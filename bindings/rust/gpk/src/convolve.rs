//! 2D and separable convolution (`gpk_convolve`).

use crate::context::Context;
use crate::error::Result;
use crate::filter::Filter;
use crate::sample::{ImageMut, ImageRef, PixelSample};
use gpk_sys as sys;

/// How pixels outside the image are read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Border {
    /// Outside pixels are 0.
    Zero,
    /// The nearest edge pixel: aaa|abcd|ddd.
    #[default]
    Clamp,
    /// Edge not repeated: dcb|abcd|cba.
    Mirror,
    /// Edge repeated: cba|abcd|dcb.
    Reflect,
    /// Periodic: bcd|abcd|abc.
    Wrap,
}

/// What is done with the weighted sums.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Normalize {
    /// The weighted sum.
    #[default]
    None,
    /// Divided by the sum of the taps (a zero sum is an error).
    Sum,
    /// Per channel, (v - min) * 255 / (max - min); 0 when max == min.
    MinMax,
}

/// Accumulation precision for non-integer work.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Accumulate {
    /// f64 when the input or the output is f64, else f32.
    #[default]
    Auto,
    F32,
    F64,
}

/// Parameters of a convolution: `ConvolveParams::new(&filter).border(Border::Zero).normalize(Normalize::MinMax)`.
#[derive(Debug, Clone, Copy)]
pub struct ConvolveParams<'f> {
    filter: &'f Filter,
    border: Border,
    normalize: Normalize,
    accumulate: Accumulate,
}

impl<'f> ConvolveParams<'f> {
    /// Clamped borders, no normalisation, automatic precision.
    pub fn new(filter: &'f Filter) -> Self {
        ConvolveParams {
            filter,
            border: Border::Clamp,
            normalize: Normalize::None,
            accumulate: Accumulate::Auto,
        }
    }

    pub fn border(mut self, border: Border) -> Self {
        self.border = border;
        self
    }

    pub fn normalize(mut self, normalize: Normalize) -> Self {
        self.normalize = normalize;
        self
    }

    pub fn accumulate(mut self, accumulate: Accumulate) -> Self {
        self.accumulate = accumulate;
        self
    }

    fn to_raw(self) -> sys::gpk_convolve_params {
        sys::gpk_convolve_params {
            struct_size: std::mem::size_of::<sys::gpk_convolve_params>(),
            filter: self.filter.as_ptr(),
            border: match self.border {
                Border::Zero => sys::GPK_BORDER_ZERO,
                Border::Clamp => sys::GPK_BORDER_CLAMP,
                Border::Mirror => sys::GPK_BORDER_MIRROR,
                Border::Reflect => sys::GPK_BORDER_REFLECT,
                Border::Wrap => sys::GPK_BORDER_WRAP,
            },
            normalize: match self.normalize {
                Normalize::None => sys::GPK_NORMALIZE_NONE,
                Normalize::Sum => sys::GPK_NORMALIZE_SUM,
                Normalize::MinMax => sys::GPK_NORMALIZE_MINMAX,
            },
            accumulate: match self.accumulate {
                Accumulate::Auto => sys::GPK_ACCUMULATE_AUTO,
                Accumulate::F32 => sys::GPK_ACCUMULATE_F32,
                Accumulate::F64 => sys::GPK_ACCUMULATE_F64,
            },
        }
    }
}

impl Context {
    /// Correlates `input` with the filter into `output`, which has the input's width, height and channels
    /// (its sample type may differ). Integer outputs round to nearest and saturate.
    pub fn convolve<I: PixelSample, O: PixelSample>(
        &mut self,
        params: &ConvolveParams,
        input: &ImageRef<I>,
        output: &mut ImageMut<O>,
    ) -> Result<()> {
        let raw = params.to_raw();
        let in_image = input.shape().to_raw::<I>()?;
        let out_image = output.shape().to_raw::<O>()?;
        // SAFETY: both images hold their shapes (checked by their constructors) and cannot overlap (one
        // is borrowed shared, the other exclusively); the filter outlives the call.
        let code = unsafe {
            sys::gpk_convolve(
                self.as_ptr(),
                &raw,
                &in_image,
                input.data().as_ptr().cast(),
                &out_image,
                output.data_mut().as_mut_ptr().cast(),
            )
        };
        self.check(code)
    }
}
