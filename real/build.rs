//! Compiles `fortran/units.f90` (the Fortran statements behind `FortranUnit`) with
//! `$FC` (default `gfortran`) and links the Fortran runtime, `lib$FC_RUNTIME`
//! (default `gfortran`).

fn main() {
    println!("cargo:rerun-if-changed=fortran/units.f90");
    println!("cargo:rerun-if-env-changed=FC");
    println!("cargo:rerun-if-env-changed=FC_RUNTIME");
    let fc = std::env::var("FC").unwrap_or_else(|_| "gfortran".into());
    let runtime = std::env::var("FC_RUNTIME").unwrap_or_else(|_| "gfortran".into());
    let mut build = cc::Build::new();
    build.compiler(&fc).file("fortran/units.f90").opt_level(2);
    if fc.contains("gfortran") {
        // An implied-do I/O list stays one transfer per item (as a list of separate
        // items is) instead of becoming one array transfer. (cc's flag_if_supported
        // probes with a C file, where this Fortran-only flag only warns.)
        build.flag("-fno-frontend-optimize");
    }
    build.try_compile("piotwin_units").unwrap_or_else(|e| {
        panic!(
            "compiling real/fortran/units.f90 with `{fc}` failed (real mode needs a Fortran \
                 compiler: `make deps` installs gfortran; or set FC): {e}"
        )
    });
    println!("cargo:rustc-link-lib=dylib={runtime}");
}
