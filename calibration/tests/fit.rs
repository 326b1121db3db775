//! Fits on synthetic probe data with known parameters and deterministic noise.

use piotwin_calibration::{
    CacheKnee, Estimate, FitError, FitMethod, LinearFit, find_cache_knee, fit_latency_bandwidth,
    fit_latency_bandwidth_robust, fit_line, fit_line_robust, mean_estimate,
};

/// A 64-bit LCG (Knuth's MMIX constants): deterministic noise without a rand dependency.
struct Lcg(u64);
impl Lcg {
    /// Uniform in [0, 1).
    fn uniform(&mut self) -> f64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (self.0 >> 11) as f64 / (1u64 << 53) as f64
    }
    /// Approximately standard normal (sum of 12 uniforms − 6).
    fn normal(&mut self) -> f64 {
        (0..12).map(|_| self.uniform()).sum::<f64>() - 6.0
    }
}

const LAT: f64 = 50e-6; // 50 µs
const BW: f64 = 2e9; // 2 GB/s

/// Sizes 4 KiB … 16 MiB, 5 repetitions each; time with N(0, sigma) noise.
fn probe(seed: u64, sigma: f64) -> Vec<(f64, f64)> {
    let mut r = Lcg(seed);
    let mut out = Vec::new();
    for p in 12..=24 {
        for _ in 0..5 {
            let s = (1u64 << p) as f64;
            out.push((s, LAT + s / BW + sigma * r.normal()));
        }
    }
    out
}

#[test]
fn least_squares_recovers_known_parameters() {
    for seed in [1, 2, 3] {
        let f = fit_latency_bandwidth(&probe(seed, 20e-6), 0.99).unwrap();
        assert_eq!(f.method, FitMethod::LeastSquares);
        assert_eq!(f.n, 65);
        let (l, b) = (f.latency_s, f.bandwidth_bytes_per_s);
        assert!(
            l.ci_low <= LAT && LAT <= l.ci_high,
            "seed {seed}: latency {l:?}"
        );
        assert!(
            b.ci_low <= BW && BW <= b.ci_high,
            "seed {seed}: bandwidth {b:?}"
        );
        assert!((b.value / BW - 1.0).abs() < 0.01, "{b:?}");
        assert!(f.r_squared > 0.999, "{}", f.r_squared);
        assert!(
            (f.residual_std_error_s / 20e-6 - 1.0).abs() < 0.3,
            "{}",
            f.residual_std_error_s
        );
    }
}

#[test]
fn exact_data_gives_zero_width_intervals() {
    let f = fit_latency_bandwidth(&probe(0, 0.0), 0.95).unwrap();
    assert!((f.latency_s.value - LAT).abs() < 1e-12);
    assert!((f.bandwidth_bytes_per_s.value / BW - 1.0).abs() < 1e-9);
    assert!(f.latency_s.ci_high - f.latency_s.ci_low < 1e-12);
    assert!((f.r_squared - 1.0).abs() < 1e-12);
}

#[test]
fn wider_level_gives_wider_interval() {
    let d = probe(7, 20e-6);
    let (a, b) = (
        fit_latency_bandwidth(&d, 0.9).unwrap(),
        fit_latency_bandwidth(&d, 0.99).unwrap(),
    );
    let w = |f: &LinearFit| f.latency_s.ci_high - f.latency_s.ci_low;
    assert!(w(&b) > w(&a));
}

/// Every tenth sample takes 5 ms longer (a flush or a daemon in the way).
fn with_outliers(seed: u64) -> Vec<(f64, f64)> {
    let mut d = probe(seed, 20e-6);
    for (i, s) in d.iter_mut().enumerate() {
        if i % 10 == 3 {
            s.1 += 5e-3;
        }
    }
    d
}

#[test]
fn robust_fit_resists_outliers() {
    for seed in [1, 2, 3] {
        let d = with_outliers(seed);
        let ols = fit_latency_bandwidth(&d, 0.99).unwrap();
        let rob = fit_latency_bandwidth_robust(&d, 0.99).unwrap();
        assert_eq!(rob.method, FitMethod::Huber);
        // Least squares is dragged: latency off by hundreds of µs.
        assert!(
            (ols.latency_s.value - LAT).abs() > 200e-6,
            "{:?}",
            ols.latency_s
        );
        let (l, b) = (rob.latency_s, rob.bandwidth_bytes_per_s);
        assert!(
            l.ci_low <= LAT && LAT <= l.ci_high,
            "seed {seed}: latency {l:?}"
        );
        assert!(
            b.ci_low <= BW && BW <= b.ci_high,
            "seed {seed}: bandwidth {b:?}"
        );
        assert!((l.value - LAT).abs() < 20e-6, "{l:?}");
        assert!((b.value / BW - 1.0).abs() < 0.01, "{b:?}");
    }
}

#[test]
fn robust_fit_agrees_with_least_squares_on_clean_data() {
    let d = probe(5, 20e-6);
    let (o, r) = (
        fit_latency_bandwidth(&d, 0.95).unwrap(),
        fit_latency_bandwidth_robust(&d, 0.95).unwrap(),
    );
    assert!((o.latency_s.value - r.latency_s.value).abs() < 10e-6);
    assert!((o.bandwidth_bytes_per_s.value / r.bandwidth_bytes_per_s.value - 1.0).abs() < 0.01);
    let w = |f: &LinearFit| f.latency_s.ci_high - f.latency_s.ci_low;
    assert!(
        w(&r) / w(&o) < 1.5 && w(&r) / w(&o) > 0.67,
        "{} vs {}",
        w(&r),
        w(&o)
    );
}

#[test]
fn fit_errors_name_the_problem() {
    let e = fit_latency_bandwidth(&[(1.0, 1.0), (2.0, 2.0)], 0.95).unwrap_err();
    assert_eq!(
        e,
        FitError::TooFewSamples {
            what: "latency/bandwidth fit",
            n: 2,
            need: 3
        }
    );
    let e = fit_latency_bandwidth(&[(4.0, 1.0), (4.0, 2.0), (4.0, 3.0)], 0.95).unwrap_err();
    assert_eq!(e, FitError::ConstantSize { size: 4.0 });
    let e = fit_latency_bandwidth_robust(&[(1.0, 3.0), (2.0, 2.0), (3.0, 1.0)], 0.95).unwrap_err();
    assert!(matches!(e, FitError::NonPositiveSlope { slope_s_per_byte } if slope_s_per_byte < 0.0));
    let e = fit_latency_bandwidth(&[(1.0, 3.0), (2.0, f64::NAN), (3.0, 1.0)], 0.95).unwrap_err();
    assert!(matches!(e, FitError::BadSample { index: 1, .. }), "{e}");
    assert!(e.to_string().contains("sample 1"), "{e}");
    let e = fit_latency_bandwidth(&probe(1, 0.0), 1.0).unwrap_err();
    assert_eq!(e, FitError::BadLevel { level: 1.0 });
}

/// File sizes 1 MiB … 64 GiB (3 repetitions): 5 GB/s up to 8 GiB, 500 MB/s beyond, ±3 %.
fn sweep(seed: u64) -> Vec<(f64, f64)> {
    let mut r = Lcg(seed);
    let mut out = Vec::new();
    for p in 20..=36 {
        for _ in 0..3 {
            let s = (1u64 << p) as f64;
            let bw = if p <= 33 { 5e9 } else { 5e8 };
            out.push((s, bw * (1.0 + 0.03 * (2.0 * r.uniform() - 1.0))));
        }
    }
    out
}

#[test]
fn knee_found_between_plateaus() {
    let k = find_cache_knee(&sweep(11), 0.95).unwrap();
    assert_eq!(k.last_cache_size_bytes, (1u64 << 33) as f64);
    assert_eq!(k.first_device_size_bytes, (1u64 << 34) as f64);
    assert!(k.knee_bytes > k.last_cache_size_bytes && k.knee_bytes < k.first_device_size_bytes);
    let (c, d) = (
        k.cache_bandwidth_bytes_per_s,
        k.device_bandwidth_bytes_per_s,
    );
    assert!(c.ci_low <= 5e9 && 5e9 <= c.ci_high, "{c:?}");
    assert!(d.ci_low <= 5e8 && 5e8 <= d.ci_high, "{d:?}");
    assert_eq!((k.n_cache, k.n_device), (42, 9));
    assert!(k.r_squared_log > 0.99);
}

#[test]
fn knee_errors() {
    // Bandwidth that rises with file size has no cache regime.
    let rising: Vec<(f64, f64)> = (1..=8)
        .map(|i| (i as f64 * 1e6, if i <= 4 { 1e8 } else { 1e9 }))
        .collect();
    assert!(matches!(
        find_cache_knee(&rising, 0.95),
        Err(FitError::NoKnee { .. })
    ));
    let e = find_cache_knee(&[(1.0, 1.0), (2.0, 1.0), (3.0, 1.0)], 0.95).unwrap_err();
    assert!(matches!(e, FitError::TooFewSamples { n: 3, need: 4, .. }));
    let e = find_cache_knee(&[(1.0, 1.0), (2.0, 0.0), (3.0, 1.0), (4.0, 1.0)], 0.95).unwrap_err();
    assert!(matches!(e, FitError::BadSample { index: 1, .. }));
    // One size only: no split can separate sizes.
    let e = find_cache_knee(&[(1.0, 1.0); 6], 0.95).unwrap_err();
    assert!(matches!(e, FitError::TooFewSamples { .. }));
}

/// serde_json parses floats to within one ulp, not always bit-exactly.
fn close(a: f64, b: f64) -> bool {
    a == b || (a - b).abs() <= 1e-14 * a.abs().max(b.abs())
}

fn close_est(a: &Estimate, b: &Estimate) -> bool {
    close(a.value, b.value)
        && close(a.ci_low, b.ci_low)
        && close(a.ci_high, b.ci_high)
        && a.level == b.level
}

#[test]
fn results_serialise() {
    let f = fit_latency_bandwidth_robust(&probe(3, 20e-6), 0.95).unwrap();
    let text = serde_json::to_string(&f).unwrap();
    assert!(text.contains("\"method\":\"huber\""), "{text}");
    let back: LinearFit = serde_json::from_str(&text).unwrap();
    assert_eq!((back.method, back.n), (f.method, f.n));
    assert!(
        close_est(&back.latency_s, &f.latency_s)
            && close_est(&back.bandwidth_bytes_per_s, &f.bandwidth_bytes_per_s)
    );
    assert!(
        close(back.r_squared, f.r_squared)
            && close(back.residual_std_error_s, f.residual_std_error_s)
    );
    let k = find_cache_knee(&sweep(2), 0.95).unwrap();
    let text = serde_json::to_string(&k).unwrap();
    let back: CacheKnee = serde_json::from_str(&text).unwrap();
    assert!(
        close(back.knee_bytes, k.knee_bytes)
            && (back.n_cache, back.n_device) == (k.n_cache, k.n_device)
    );
    assert!(close_est(
        &back.cache_bandwidth_bytes_per_s,
        &k.cache_bandwidth_bytes_per_s
    ));
    assert!(close_est(
        &back.device_bandwidth_bytes_per_s,
        &k.device_bandwidth_bytes_per_s
    ));
}

/// `fsync` time against dirty bytes: sync = 2 ms commit + dirty / 1.5 GB/s, with
/// N(0, 1 ms) noise (the fit assumes equal variance) and two stalls (a flusher
/// racing the probe).
fn fsync_probe(seed: u64) -> Vec<(f64, f64)> {
    let mut r = Lcg(seed);
    let mut out = Vec::new();
    for mib in [16u64, 32, 64, 128, 256, 512] {
        for _ in 0..4 {
            let dirty = (mib << 20) as f64;
            let t = 2e-3 + dirty / 1.5e9;
            out.push((dirty, t + 1e-3 * r.normal()));
        }
    }
    out[5].1 *= 3.0;
    out[17].1 *= 2.5;
    out
}

#[test]
fn fsync_slope_and_intercept_recovered_despite_stalls() {
    for seed in [4, 5, 7] {
        let f = fit_latency_bandwidth_robust(&fsync_probe(seed), 0.95).unwrap();
        let (sync, bw) = (f.latency_s, f.bandwidth_bytes_per_s);
        assert!(
            sync.ci_low <= 2e-3 && 2e-3 <= sync.ci_high,
            "seed {seed}: {sync:?}"
        );
        assert!(
            bw.ci_low <= 1.5e9 && 1.5e9 <= bw.ci_high,
            "seed {seed}: {bw:?}"
        );
    }
}

#[test]
fn general_line_fits_either_slope_sign() {
    // A per-call cost that falls with ranks: 40 µs − 3 µs per rank, plus noise.
    let mut r = Lcg(9);
    let samples: Vec<(f64, f64)> = (1..=8)
        .flat_map(|k| std::iter::repeat_n(k as f64, 3))
        .map(|k| (k, 40e-6 - 3e-6 * k + 0.5e-6 * r.normal()))
        .collect();
    for f in [
        fit_line(&samples, 0.95).unwrap(),
        fit_line_robust(&samples, 0.95).unwrap(),
    ] {
        assert!(f.slope.ci_low <= -3e-6 && -3e-6 <= f.slope.ci_high, "{f:?}");
        assert!(
            f.intercept.ci_low <= 40e-6 && 40e-6 <= f.intercept.ci_high,
            "{f:?}"
        );
    }
    // The latency/bandwidth form refuses the same data.
    assert!(matches!(
        fit_latency_bandwidth(&samples, 0.95),
        Err(FitError::NonPositiveSlope { .. })
    ));
}

#[test]
fn mean_estimate_covers_the_true_mean() {
    let mut r = Lcg(12);
    let v: Vec<f64> = (0..30).map(|_| 1e-3 + 1e-4 * r.normal()).collect();
    let m = mean_estimate(&v, 0.95).unwrap();
    assert!(m.ci_low <= 1e-3 && 1e-3 <= m.ci_high, "{m:?}");
    assert!(m.ci_high - m.ci_low < 2e-4, "{m:?}");
    assert!(matches!(
        mean_estimate(&[1.0], 0.95),
        Err(FitError::TooFewSamples { need: 2, .. })
    ));
    assert!(matches!(
        mean_estimate(&[1.0, f64::NAN], 0.95),
        Err(FitError::BadSample { index: 1, .. })
    ));
}
