//! The Rust declarations have the C header's layout: sizes, alignments, field offsets and field sizes
//! of every struct, and the value of every constant, as printed by `layout_probe.c` compiled against gpk.h.
//!
//! The probe is compiled with `$CC` (default `cc`) against `$GPK_INCLUDE_DIR`, or against the include
//! directory `pkg-config --cflags gpk` gives.

use gpk_sys::*;
use std::collections::BTreeMap;
use std::mem::{align_of, offset_of, size_of};
use std::path::{Path, PathBuf};
use std::process::Command;

fn include_flags() -> Vec<String> {
    if let Ok(dir) = std::env::var("GPK_INCLUDE_DIR") {
        return vec![format!("-I{dir}")];
    }
    let program = std::env::var("PKG_CONFIG").unwrap_or_else(|_| "pkg-config".into());
    let out = Command::new(&program)
        .args(["--cflags", "gpk"])
        .output()
        .unwrap_or_else(|e| panic!("set GPK_INCLUDE_DIR or install pkg-config ({program}: {e})"));
    assert!(out.status.success(), "`{program} --cflags gpk` failed; set GPK_INCLUDE_DIR");
    String::from_utf8_lossy(&out.stdout).split_whitespace().map(String::from).collect()
}

/// Compiles and runs the probe; returns its "kind name" -> number table.
fn c_layout() -> BTreeMap<String, u64> {
    let source = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests").join("layout_probe.c");
    let exe = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("gpk_layout_probe");
    let cc = std::env::var("CC").unwrap_or_else(|_| "cc".into());
    let mut words = cc.split_whitespace();
    let status = Command::new(words.next().expect("CC is empty"))
        .args(words)
        .arg("-std=c11")
        .args(include_flags())
        .arg(&source)
        .arg("-o")
        .arg(&exe)
        .status()
        .unwrap_or_else(|e| panic!("running the C compiler `{cc}`: {e}"));
    assert!(status.success(), "compiling {}", source.display());
    let out = Command::new(&exe).output().expect("running the layout probe");
    assert!(out.status.success());
    String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|line| {
            let (key, number) = line.rsplit_once(' ').unwrap();
            (key.to_string(), number.parse().unwrap())
        })
        .collect()
}

/// The size of the field `field` selects.
fn field_size<T, F>(_field: impl Fn(&T) -> &F) -> usize {
    size_of::<F>()
}

macro_rules! layout {
    ($table:ident; $($ty:ident { $($field:ident),* })*) => {
        $(
            $table.push((format!("size {}", stringify!($ty)), size_of::<$ty>() as u64));
            $table.push((format!("align {}", stringify!($ty)), align_of::<$ty>() as u64));
            $(
                $table.push((format!("offset {}.{}", stringify!($ty), stringify!($field)),
                             offset_of!($ty, $field) as u64));
                $table.push((format!("fieldsize {}.{}", stringify!($ty), stringify!($field)),
                             field_size(|s: &$ty| &s.$field) as u64));
            )*
        )*
    };
}

macro_rules! values {
    ($table:ident; $($name:ident),*) => {
        $($table.push((format!("value {}", stringify!($name)), $name as u64));)*
    };
}

fn rust_layout() -> Vec<(String, u64)> {
    let mut table = Vec::new();
    layout!(table;
        gpk_status {} gpk_backend {} gpk_dtype {} gpk_border {} gpk_normalize {} gpk_accumulate {}
        gpk_device_info { struct_size, name, compute_major, compute_minor, total_memory, free_memory,
                          multiprocessors, clock_khz, memory_bus_bits, l2_bytes, driver_version, runtime_version }
        gpk_context_options { struct_size, backend, device, stream, threads }
        gpk_heat_report { niter, tmin, tmax, maxdiff, tavg, time }
        gpk_heat_params { struct_size, rows, cols, maxiter, threshold, period, on_report, on_progress,
                          progress_interval, user_data, start_iteration, fixed_rows, on_checkpoint,
                          checkpoint_interval }
        gpk_histogram_params { struct_size, dtype, width, height, channels, stride, bins, lower, upper, saturate }
        gpk_filter_info { struct_size, separable, kh, kw, sum, integer_taps }
        gpk_image { struct_size, dtype, width, height, channels, stride }
        gpk_convolve_params { struct_size, filter, border, normalize, accumulate }
    );
    values!(table;
        GPK_OK, GPK_ERR_INVALID_ARGUMENT, GPK_ERR_OUT_OF_MEMORY, GPK_ERR_NO_DEVICE, GPK_ERR_UNSUPPORTED,
        GPK_ERR_DEVICE, GPK_ERR_CANCELLED, GPK_ERR_INTERNAL, GPK_BACKEND_AUTO, GPK_BACKEND_CPU, GPK_BACKEND_CUDA,
        GPK_U8, GPK_U16, GPK_U32, GPK_I32, GPK_F32, GPK_F64, GPK_BORDER_ZERO, GPK_BORDER_CLAMP, GPK_BORDER_MIRROR,
        GPK_BORDER_REFLECT, GPK_BORDER_WRAP, GPK_NORMALIZE_NONE, GPK_NORMALIZE_SUM, GPK_NORMALIZE_MINMAX,
        GPK_ACCUMULATE_AUTO, GPK_ACCUMULATE_F32, GPK_ACCUMULATE_F64, GPK_FILTER_MAX_2D, GPK_FILTER_MAX_SEPARABLE,
        GPK_VERSION_NUMBER
    );
    table
}

#[test]
fn rust_declarations_have_the_c_layout() {
    let c = c_layout();
    let rust = rust_layout();
    let mut mismatches = Vec::new();
    for (key, value) in &rust {
        match c.get(key) {
            Some(c_value) if c_value == value => {}
            Some(c_value) => mismatches.push(format!("{key}: Rust {value}, C {c_value}")),
            None => mismatches.push(format!("{key}: not printed by the probe")),
        }
    }
    for key in c.keys() {
        if !rust.iter().any(|(k, _)| k == key) {
            mismatches.push(format!("{key}: printed by the probe, not checked in Rust"));
        }
    }
    assert!(mismatches.is_empty(), "layout mismatches:\n{}", mismatches.join("\n"));
    assert_eq!(rust.len(), c.len());
}

#[test]
fn linked_library_is_the_declared_version() {
    // Calls into the library: the link settings of the build script work.
    assert_eq!(unsafe { gpk_version_number() }, GPK_VERSION_NUMBER);
}

/// Runs `init` on a `T` followed by canary bytes: true when it returned OK, set struct_size to the size of
/// `T` and wrote nothing past it.
fn writes_exactly<T>(init: impl FnOnce(*mut T) -> gpk_status) -> bool {
    #[repr(C)]
    struct Guarded<T> {
        value: core::mem::MaybeUninit<T>,
        after: [u8; 64],
    }
    let mut g = Guarded::<T> { value: core::mem::MaybeUninit::uninit(), after: [0xA5; 64] };
    let status = init(g.value.as_mut_ptr());
    // SAFETY: struct_size is the first field of every parameter struct, and init wrote it.
    let size = unsafe { *(g.value.as_ptr() as *const usize) };
    status == GPK_OK && size == size_of::<T>() && g.after.iter().all(|&b| b == 0xA5)
}

#[test]
fn init_functions_write_this_crates_layout() {
    // SAFETY: each pointer is to room for one struct of its type.
    unsafe {
        assert!(writes_exactly::<gpk_heat_params>(|p| gpk_heat_params_init(p)));
        assert!(writes_exactly::<gpk_histogram_params>(|p| gpk_histogram_params_init(p)));
        assert!(writes_exactly::<gpk_convolve_params>(|p| gpk_convolve_params_init(p)));
        assert!(writes_exactly::<gpk_context_options>(|p| gpk_context_options_init(p)));
        assert!(writes_exactly::<gpk_image>(|p| gpk_image_init(p, GPK_U16, 5, 4, 1)));
        // A size that is no layout of the struct is refused.
        let mut p = core::mem::MaybeUninit::<gpk_heat_params>::uninit();
        assert_eq!(gpk_heat_params_init_sized(p.as_mut_ptr(), 8), GPK_ERR_INVALID_ARGUMENT);
    }
}
