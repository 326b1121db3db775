//! Measures the flop rate of FTIO's FFT kernel on this machine: the exact work
//! FTIO runs inside `IoCtx::compute(Kernel::fft(N, I), …)` (gather I columns of
//! length N from the c bands, rustfft forward transforms, scatter back), and,
//! for comparison, rustfft alone on the same lines. Flops are counted as FTIO
//! counts them: 5·N·log2 N per transform.
//!
//! The twin charges FFT kernels at the scenario's FFT rate; this gives the value
//! for the machine it runs on. Run with `cargo run --release --example fft_rate`
//! (a debug build measures unoptimised code). Single-threaded, as one rank is.

use std::time::Instant;

use piotwin::bench::ftio::layout::{Geometry, LineFft, fft_band, timing_bands};
use rustfft::num_complex::Complex64;

/// Seconds per call of `f` over `reps` timings of enough calls to last ≥ `min_s`:
/// the median and the fastest. On a shared machine the fastest is the better
/// estimate of the kernel's own rate (the others include time slices lost to
/// other processes).
fn time_per_call(mut f: impl FnMut(), reps: usize, min_s: f64) -> (f64, f64) {
    f(); // warm up: planning, caches, page faults
    let mut calls = 1usize;
    loop {
        let t = Instant::now();
        for _ in 0..calls {
            f();
        }
        if t.elapsed().as_secs_f64() >= min_s {
            break;
        }
        calls *= 2;
    }
    let mut per_call: Vec<f64> = (0..reps)
        .map(|_| {
            let t = Instant::now();
            for _ in 0..calls {
                f();
            }
            t.elapsed().as_secs_f64() / calls as f64
        })
        .collect();
    per_call.sort_by(f64::total_cmp);
    (per_call[reps / 2], per_call[0])
}

/// Timings per kernel, and the least duration of one timing (seconds): short
/// timings, many of them, so that some fall between other processes' time slices.
const REPS: usize = 21;
const MIN_S: f64 = 0.02;

fn main() {
    println!(
        "{:>4} {:>4} {:>7} {:>15} {:>15} {:>15} {:>15}",
        "I", "c", "N", "kernel_median", "kernel_best", "rustfft_median", "rustfft_best"
    );
    println!("{:>18} (Mflop/s, 5·N·log2 N per transform)", "");
    for (i, c) in [(8u64, 4u64), (16, 4), (32, 4), (64, 4), (16, 256)] {
        let geo = Geometry { i, c };
        let n = geo.n() as usize;
        let mut bands = timing_bands(geo);
        let flops = 5.0 * n as f64 * (n as f64).log2() * i as f64;
        let mut fft = LineFft::new(n);
        let kernel_s = time_per_call(
            || {
                let mut slices: Vec<&mut [u8]> =
                    bands.iter_mut().map(|b| b.as_mut_slice()).collect();
                fft_band(&mut slices, geo, &mut fft);
            },
            REPS,
            MIN_S,
        );
        let mut lines = vec![Complex64::new(0.5, -0.25); i as usize * n];
        let fft_s = time_per_call(|| fft.process(&mut lines), REPS, MIN_S);
        let rate = |s: f64| flops / s / 1e6;
        println!(
            "{:>4} {:>4} {:>7} {:>15.0} {:>15.0} {:>15.0} {:>15.0}",
            i,
            c,
            n,
            rate(kernel_s.0),
            rate(kernel_s.1),
            rate(fft_s.0),
            rate(fft_s.1)
        );
    }
}
