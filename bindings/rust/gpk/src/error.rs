//! `Error`: the status of a failed call and its message.

use gpk_sys as sys;
use std::ffi::CStr;
use std::fmt;

/// Why a call failed: the C API's status codes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Status {
    /// An argument is out of range, inconsistent with another, or a slice has the wrong length.
    InvalidArgument,
    /// Host or device memory could not be allocated.
    OutOfMemory,
    /// The CUDA backend was asked for and no usable GPU exists.
    NoDevice,
    /// Valid, but beyond what gpk supports.
    Unsupported,
    /// A CUDA call or kernel failed.
    Device,
    /// A callback asked the operation to stop.
    Cancelled,
    /// A bug in gpk.
    Internal,
    /// A status this crate does not know (from a newer library).
    Unknown(u32),
}

impl Status {
    /// The status of a raw code; `None` for `GPK_OK`.
    pub fn from_raw(code: sys::gpk_status) -> Option<Status> {
        Some(match code {
            sys::GPK_OK => return None,
            sys::GPK_ERR_INVALID_ARGUMENT => Status::InvalidArgument,
            sys::GPK_ERR_OUT_OF_MEMORY => Status::OutOfMemory,
            sys::GPK_ERR_NO_DEVICE => Status::NoDevice,
            sys::GPK_ERR_UNSUPPORTED => Status::Unsupported,
            sys::GPK_ERR_DEVICE => Status::Device,
            sys::GPK_ERR_CANCELLED => Status::Cancelled,
            sys::GPK_ERR_INTERNAL => Status::Internal,
            other => Status::Unknown(other),
        })
    }

    /// The C status code.
    pub fn code(self) -> sys::gpk_status {
        match self {
            Status::InvalidArgument => sys::GPK_ERR_INVALID_ARGUMENT,
            Status::OutOfMemory => sys::GPK_ERR_OUT_OF_MEMORY,
            Status::NoDevice => sys::GPK_ERR_NO_DEVICE,
            Status::Unsupported => sys::GPK_ERR_UNSUPPORTED,
            Status::Device => sys::GPK_ERR_DEVICE,
            Status::Cancelled => sys::GPK_ERR_CANCELLED,
            Status::Internal => sys::GPK_ERR_INTERNAL,
            Status::Unknown(code) => code,
        }
    }
}

impl fmt::Display for Status {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // SAFETY: gpk_status_string returns a static string for any value, never NULL.
        let text = unsafe { CStr::from_ptr(sys::gpk_status_string(self.code())) };
        f.write_str(&text.to_string_lossy())
    }
}

/// A failed call: its status and the message gpk (or this crate) gave, naming the argument at fault.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Error {
    status: Status,
    message: String,
}

impl Error {
    pub fn new(status: Status, message: impl Into<String>) -> Error {
        Error { status, message: message.into() }
    }

    pub(crate) fn invalid(message: impl Into<String>) -> Error {
        Error::new(Status::InvalidArgument, message)
    }

    pub fn status(&self) -> Status {
        self.status
    }

    pub fn message(&self) -> &str {
        &self.message
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.status, self.message)
    }
}

impl std::error::Error for Error {}

/// The result of every fallible call.
pub type Result<T> = std::result::Result<T, Error>;

/// Turns a raw status into a `Result`. The message is the context's last error, or the calling
/// thread's for a NULL context (calls that take no context); it is read right after the failed call.
pub(crate) fn check(code: sys::gpk_status, ctx: *const sys::gpk_context) -> Result<()> {
    match Status::from_raw(code) {
        None => Ok(()),
        Some(status) => {
            // SAFETY: gpk_context_last_error accepts a live context or NULL and never returns NULL.
            let message = unsafe { CStr::from_ptr(sys::gpk_context_last_error(ctx)) };
            Err(Error::new(status, message.to_string_lossy()))
        }
    }
}
