//! The cache-capacity knee of bandwidth against file size.

use serde::{Deserialize, Serialize};

use crate::{Estimate, FitError, check_level, t_quantile};

/// Where bandwidth falls from the cache plateau to the device plateau.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CacheKnee {
    /// The knee, bytes: the geometric mean of the two file sizes either side of
    /// the split, an estimate of the effective cache capacity.
    pub knee_bytes: f64,
    /// Largest file size on the cache plateau, bytes.
    pub last_cache_size_bytes: f64,
    /// Smallest file size on the device plateau, bytes.
    pub first_device_size_bytes: f64,
    /// Cache plateau: geometric mean of its bandwidths, bytes/s, with the
    /// interval of the mean of log-bandwidths (Student's t) mapped back.
    pub cache_bandwidth_bytes_per_s: Estimate,
    /// Device plateau, as `cache_bandwidth_bytes_per_s`.
    pub device_bandwidth_bytes_per_s: Estimate,
    /// Samples on the cache plateau.
    pub n_cache: usize,
    /// Samples on the device plateau.
    pub n_device: usize,
    /// Share of the variance of log-bandwidth explained by the two plateaus.
    pub r_squared_log: f64,
}

const WHAT: &str = "cache knee";

/// Finds the file size where bandwidth drops from the cache plateau to the device
/// plateau.
///
/// `samples` are `(file size in bytes, bandwidth in bytes/s)` from an IOzone-style
/// sweep of file sizes (repetitions at one size allowed). Method: the best
/// two-segment piecewise-constant fit of log(bandwidth) against the samples ordered
/// by size — the split that minimises the summed squared deviations from the two
/// segment means, with at least two samples each side and never between two
/// samples of one size. Log space makes the fit scale-free (a plateau 10× higher
/// does not dominate) and geometric means the natural plateau values. `level` is
/// the confidence level of the plateau intervals.
///
/// Errors: fewer than 4 samples, a non-positive or non-finite value, fewer than
/// two distinct sizes with two samples each side, or no drop (the small-file side
/// is not faster).
pub fn find_cache_knee(samples: &[(f64, f64)], level: f64) -> Result<CacheKnee, FitError> {
    check_level(level)?;
    if samples.len() < 4 {
        return Err(FitError::TooFewSamples {
            what: WHAT,
            n: samples.len(),
            need: 4,
        });
    }
    for (index, &(x, y)) in samples.iter().enumerate() {
        if !(x.is_finite() && y.is_finite() && x > 0.0 && y > 0.0) {
            return Err(FitError::BadSample {
                what: WHAT,
                index,
                x,
                y,
                allowed: "file size and bandwidth must be finite and positive (bytes, bytes/s)",
            });
        }
    }
    let mut pts: Vec<(f64, f64)> = samples.iter().map(|&(x, y)| (x, y.ln())).collect();
    pts.sort_by(|p, q| p.0.total_cmp(&q.0));
    let n = pts.len();
    // Prefix sums of y and y² make every split O(1).
    let mut s1 = vec![0.0; n + 1];
    let mut s2 = vec![0.0; n + 1];
    for (i, p) in pts.iter().enumerate() {
        s1[i + 1] = s1[i] + p.1;
        s2[i + 1] = s2[i] + p.1 * p.1;
    }
    let sse = |lo: usize, hi: usize| {
        let m = (hi - lo) as f64;
        let s = s1[hi] - s1[lo];
        ((s2[hi] - s2[lo]) - s * s / m).max(0.0)
    };
    let best = (2..=n - 2)
        .filter(|&k| pts[k - 1].0 < pts[k].0)
        .map(|k| (k, sse(0, k) + sse(k, n)))
        .min_by(|p, q| p.1.total_cmp(&q.1));
    let Some((k, sse_best)) = best else {
        return Err(FitError::TooFewSamples {
            what: "cache knee (two samples each side of a size change)",
            n,
            need: 4,
        });
    };
    let plateau = |lo: usize, hi: usize| -> Estimate {
        let m = (hi - lo) as f64;
        let mean = (s1[hi] - s1[lo]) / m;
        let sd = (sse(lo, hi) / (m - 1.0)).sqrt();
        let half = t_quantile(level, m - 1.0) * sd / m.sqrt();
        Estimate {
            value: mean.exp(),
            ci_low: (mean - half).exp(),
            ci_high: (mean + half).exp(),
            level,
        }
    };
    let (cache, device) = (plateau(0, k), plateau(k, n));
    if cache.value <= device.value {
        return Err(FitError::NoKnee {
            cache: cache.value,
            device: device.value,
            size: pts[k].0,
        });
    }
    let sst = sse(0, n);
    Ok(CacheKnee {
        knee_bytes: (pts[k - 1].0 * pts[k].0).sqrt(),
        last_cache_size_bytes: pts[k - 1].0,
        first_device_size_bytes: pts[k].0,
        cache_bandwidth_bytes_per_s: cache,
        device_bandwidth_bytes_per_s: device,
        n_cache: k,
        n_device: n - k,
        r_squared_log: if sst > 0.0 { 1.0 - sse_best / sst } else { 1.0 },
    })
}
