//! Tells rustc where libgpk is: in GPK_LIB_DIR when that is set, else where the `pkg-config` command
//! (or the one named by PKG_CONFIG) says. No external crates.

use std::env;
use std::path::PathBuf;
use std::process::Command;

fn main() {
    for var in ["GPK_LIB_DIR", "PKG_CONFIG", "PKG_CONFIG_PATH", "PKG_CONFIG_LIBDIR", "PKG_CONFIG_SYSROOT_DIR"]
    {
        println!("cargo:rerun-if-env-changed={var}");
    }
    if let Some(dir) = env::var_os("GPK_LIB_DIR") {
        let dir = PathBuf::from(dir);
        println!("cargo:rustc-link-search=native={}", dir.display());
        println!("cargo:rustc-link-lib=dylib=gpk");
        // Dependents see it as DEP_GPK_LIB_DIR.
        println!("cargo:lib_dir={}", dir.display());
        return;
    }
    match pkg_config(&["--libs", "--cflags"]) {
        Ok(flags) => emit_pkg_config_flags(&flags),
        Err(why) => {
            eprintln!(
                "gpk-sys: cannot locate libgpk: {why}\n\
                 Install gpk where pkg-config finds it (PKG_CONFIG_PATH), or set GPK_LIB_DIR to the \
                 directory holding libgpk.so."
            );
            std::process::exit(1);
        }
    }
}

/// Runs pkg-config on the gpk package and returns its output split into flags.
fn pkg_config(args: &[&str]) -> Result<Vec<String>, String> {
    let program = env::var("PKG_CONFIG").unwrap_or_else(|_| "pkg-config".to_string());
    let output = Command::new(&program)
        .args(args)
        .arg("gpk")
        .output()
        .map_err(|e| format!("running `{program}`: {e}"))?;
    if !output.status.success() {
        return Err(format!(
            "`{program} {} gpk` failed: {}",
            args.join(" "),
            String::from_utf8_lossy(&output.stderr).trim()
        ));
    }
    let text = String::from_utf8(output.stdout).map_err(|_| format!("`{program}` printed non-UTF-8 text"))?;
    Ok(text.split_whitespace().map(str::to_string).collect())
}

fn emit_pkg_config_flags(flags: &[String]) {
    for flag in flags {
        if let Some(dir) = flag.strip_prefix("-L") {
            println!("cargo:rustc-link-search=native={dir}");
            println!("cargo:lib_dir={dir}");
        } else if let Some(lib) = flag.strip_prefix("-l") {
            println!("cargo:rustc-link-lib={lib}");
        } else if let Some(dir) = flag.strip_prefix("-I") {
            println!("cargo:include={dir}");
        }
    }
}
