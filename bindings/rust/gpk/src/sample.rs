//! Sample types and typed views of images.

use crate::error::{Error, Result};
use gpk_sys as sys;

mod sealed {
    pub trait Sealed {}
}

/// A sample type gpk reads: u8, u16, u32, i32, f32, f64.
pub trait Sample: Copy + sealed::Sealed + 'static {
    #[doc(hidden)]
    const DTYPE: sys::gpk_dtype;
}

/// A sample type of convolution images: u8, u16, f32, f64.
pub trait PixelSample: Sample {}

macro_rules! samples {
    ($($ty:ty => $dtype:ident $(, $pixel:ident)?;)*) => {
        $(
            impl sealed::Sealed for $ty {}
            impl Sample for $ty {
                const DTYPE: sys::gpk_dtype = sys::$dtype;
            }
            $(impl $pixel for $ty {})?
        )*
    };
}

samples! {
    u8 => GPK_U8, PixelSample;
    u16 => GPK_U16, PixelSample;
    u32 => GPK_U32;
    i32 => GPK_I32;
    f32 => GPK_F32, PixelSample;
    f64 => GPK_F64, PixelSample;
}

/// The shape of an image: `height` rows of `width` pixels of `channels` interleaved samples, rows
/// `stride` samples apart.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Shape {
    pub width: usize,
    pub height: usize,
    pub channels: u32,
    pub stride: usize,
}

impl Shape {
    /// Checks the shape, and that `len` samples hold it.
    fn validate(&self, len: usize) -> Result<()> {
        if self.width == 0 || self.height == 0 {
            return Err(Error::invalid(format!(
                "image is {}x{}; both must be at least 1",
                self.width, self.height
            )));
        }
        if !(1..=4).contains(&self.channels) {
            return Err(Error::invalid(format!("channels is {}; it must be 1, 2, 3 or 4", self.channels)));
        }
        let overflow = || Error::invalid("the image size overflows");
        let row = self.width.checked_mul(self.channels as usize).ok_or_else(overflow)?;
        if self.stride < row {
            return Err(Error::invalid(format!(
                "stride is {} samples; a row of {} x {} needs {row}",
                self.stride, self.width, self.channels
            )));
        }
        let need =
            self.stride.checked_mul(self.height - 1).and_then(|n| n.checked_add(row)).ok_or_else(overflow)?;
        if len < need {
            return Err(Error::invalid(format!(
                "the image data has {len} samples; {}x{}x{} with a stride of {} needs {need}",
                self.width, self.height, self.channels, self.stride
            )));
        }
        Ok(())
    }

    pub(crate) fn stride_bytes<T>(&self) -> Result<usize> {
        self.stride
            .checked_mul(std::mem::size_of::<T>())
            .ok_or_else(|| Error::invalid("the stride overflows"))
    }

    pub(crate) fn to_raw<T: Sample>(self) -> Result<sys::gpk_image> {
        Ok(sys::gpk_image {
            struct_size: std::mem::size_of::<sys::gpk_image>(),
            dtype: T::DTYPE,
            width: self.width,
            height: self.height,
            channels: self.channels,
            stride: self.stride_bytes::<T>()?,
        })
    }
}

/// A read-only image over a slice; its constructors check that the slice holds the whole image.
#[derive(Debug, Clone, Copy)]
pub struct ImageRef<'a, T: Sample> {
    data: &'a [T],
    shape: Shape,
}

impl<'a, T: Sample> ImageRef<'a, T> {
    /// A packed image: rows of `width * channels` samples, one after another.
    pub fn new(data: &'a [T], width: usize, height: usize, channels: u32) -> Result<Self> {
        let stride = width.saturating_mul(channels as usize);
        Self::with_stride(data, width, height, channels, stride)
    }

    /// An image whose rows start `stride` samples apart (padding between rows is never read).
    pub fn with_stride(
        data: &'a [T],
        width: usize,
        height: usize,
        channels: u32,
        stride: usize,
    ) -> Result<Self> {
        let shape = Shape { width, height, channels, stride };
        shape.validate(data.len())?;
        Ok(ImageRef { data, shape })
    }

    pub fn shape(&self) -> Shape {
        self.shape
    }

    pub fn data(&self) -> &'a [T] {
        self.data
    }
}

/// A writable image over a mutable slice; its constructors check that the slice holds the whole image.
#[derive(Debug)]
pub struct ImageMut<'a, T: Sample> {
    data: &'a mut [T],
    shape: Shape,
}

impl<'a, T: Sample> ImageMut<'a, T> {
    /// A packed image: rows of `width * channels` samples, one after another.
    pub fn new(data: &'a mut [T], width: usize, height: usize, channels: u32) -> Result<Self> {
        let stride = width.saturating_mul(channels as usize);
        Self::with_stride(data, width, height, channels, stride)
    }

    /// An image whose rows start `stride` samples apart (padding between rows is left alone).
    pub fn with_stride(
        data: &'a mut [T],
        width: usize,
        height: usize,
        channels: u32,
        stride: usize,
    ) -> Result<Self> {
        let shape = Shape { width, height, channels, stride };
        shape.validate(data.len())?;
        Ok(ImageMut { data, shape })
    }

    pub fn shape(&self) -> Shape {
        self.shape
    }

    pub fn data(&self) -> &[T] {
        self.data
    }

    pub(crate) fn data_mut(&mut self) -> &mut [T] {
        self.data
    }
}
