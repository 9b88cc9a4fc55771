//! `Context`: the backend a computation runs on, and its reusable buffers.

use crate::error::{check, Error, Result};
use gpk_sys as sys;
use std::cell::Cell;
use std::marker::PhantomData;
use std::os::raw::c_int;
use std::ptr::{self, NonNull};

/// Where a context computes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Backend {
    /// CUDA where a usable GPU exists, else the CPU; `GPK_BACKEND=cpu|cuda` in the environment overrides.
    #[default]
    Auto,
    Cpu,
    Cuda,
}

impl Backend {
    fn to_raw(self) -> sys::gpk_backend {
        match self {
            Backend::Auto => sys::GPK_BACKEND_AUTO,
            Backend::Cpu => sys::GPK_BACKEND_CPU,
            Backend::Cuda => sys::GPK_BACKEND_CUDA,
        }
    }
}

/// A gpk context. It may move to another thread (`Send`) but is used by one thread at a time (not
/// `Sync`); every operation takes `&mut self`. Dropping it frees the C context.
///
/// ```compile_fail
/// fn shared_between_threads<T: Sync>() {}
/// shared_between_threads::<gpk::Context>();
/// ```
pub struct Context {
    raw: NonNull<sys::gpk_context>,
    _not_sync: PhantomData<Cell<()>>,
}

// SAFETY: gpk allows a context to be used from any thread, one thread at a time; `&mut self` on every
// operation and the missing `Sync` guarantee the "one at a time".
unsafe impl Send for Context {}

impl Context {
    /// A context on the automatically chosen backend.
    pub fn new() -> Result<Context> {
        Context::builder().build()
    }

    /// Options for a context: backend, CUDA device, CPU threads.
    pub fn builder() -> ContextBuilder {
        ContextBuilder::default()
    }

    /// The backend this context computes on: `Backend::Cpu` or `Backend::Cuda`.
    pub fn backend(&self) -> Backend {
        // SAFETY: raw is a live context.
        match unsafe { sys::gpk_context_backend(self.raw.as_ptr()) } {
            sys::GPK_BACKEND_CUDA => Backend::Cuda,
            sys::GPK_BACKEND_CPU => Backend::Cpu,
            _ => Backend::Auto,
        }
    }

    /// Waits until the context's enqueued work has finished.
    pub fn synchronize(&mut self) -> Result<()> {
        // SAFETY: raw is a live context.
        self.check(unsafe { sys::gpk_context_synchronize(self.raw.as_ptr()) })
    }

    pub(crate) fn as_ptr(&mut self) -> *mut sys::gpk_context {
        self.raw.as_ptr()
    }

    /// The `Result` of a call on this context, with its message on failure.
    pub(crate) fn check(&self, code: sys::gpk_status) -> Result<()> {
        check(code, self.raw.as_ptr())
    }
}

impl Drop for Context {
    fn drop(&mut self) {
        // SAFETY: raw came from gpk_context_create and is destroyed once.
        unsafe { sys::gpk_context_destroy(self.raw.as_ptr()) }
    }
}

impl std::fmt::Debug for Context {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Context").field("backend", &self.backend()).finish()
    }
}

/// Builds a `Context`: `Context::builder().backend(Backend::Cpu).threads(4).build()`.
#[derive(Debug, Clone, Default)]
pub struct ContextBuilder {
    backend: Backend,
    device: u32,
    threads: u32,
}

impl ContextBuilder {
    pub fn backend(mut self, backend: Backend) -> Self {
        self.backend = backend;
        self
    }

    /// The CUDA device ordinal (default 0).
    pub fn device(mut self, device: u32) -> Self {
        self.device = device;
        self
    }

    /// CPU worker threads; 0 (default) uses every core the process may use.
    pub fn threads(mut self, threads: u32) -> Self {
        self.threads = threads;
        self
    }

    pub fn build(&self) -> Result<Context> {
        let device = c_int::try_from(self.device)
            .map_err(|_| Error::invalid(format!("device is {}; at most {}", self.device, c_int::MAX)))?;
        let mut opts = std::mem::MaybeUninit::<sys::gpk_context_options>::uninit();
        let mut raw = ptr::null_mut();
        // SAFETY: options_init fills every field; create writes the new context or NULL to `raw`.
        let code = unsafe {
            sys::gpk_context_options_init(opts.as_mut_ptr());
            let mut opts = opts.assume_init();
            opts.backend = self.backend.to_raw();
            opts.device = device;
            opts.threads = self.threads;
            sys::gpk_context_create(&mut raw, &opts)
        };
        check(code, ptr::null())?;
        let raw =
            NonNull::new(raw).ok_or_else(|| Error::invalid("gpk_context_create returned no context"))?;
        Ok(Context { raw, _not_sync: PhantomData })
    }
}
