//! Growth past backed memory: a page cache that grows beyond the memory its
//! node has backed pays an extra rate for every byte it takes fresh (a VM's
//! hypervisor faulting memory back in, a host reclaiming). Fitted from writes of
//! growing files: write `i` of `size_i` bytes after a peak of `peak_i` bytes
//! took `extra_i` seconds beyond its copy time, and
//!
//! `extra_i = max(0, size_i − max(warm, peak_i)) / fresh_rate`.
//!
//! `warm` (the memory backed to begin with) is found by a grid search over the
//! sizes, the rate by least squares through the origin at that `warm`; the
//! rate's interval is a profile one (Student-t slope intervals over every
//! `warm` an F-test does not reject). What it is not: a model of memory handed
//! back over time (measure the writes back to back).

use statrs::distribution::{ContinuousCDF, FisherSnedecor};

use crate::{Estimate, FitError, t_quantile};

/// One write: the file's size, the largest the cache had been before it, and
/// the seconds it took beyond copying into backed memory.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Growth {
    /// Bytes written (the file's size).
    pub size: f64,
    /// The peak of cached bytes before this write, bytes.
    pub peak: f64,
    /// Seconds beyond the copy time.
    pub extra_s: f64,
}

/// The fitted warm memory and fresh rate.
#[derive(Debug, Clone, PartialEq)]
pub struct FreshFit {
    /// Memory backed to begin with, bytes (grid search: no interval).
    pub warm: f64,
    /// The fresh-memory rate, bytes/s, with its interval.
    pub rate: Estimate,
    /// Coefficient of determination of the fit.
    pub r2: f64,
    /// Writes used.
    pub n: usize,
}

fn fresh_bytes(g: &Growth, warm: f64) -> f64 {
    (g.size - warm.max(g.peak)).max(0.0)
}

/// Fits [`FreshFit`] to at least three writes; fails when no write grew past
/// the memory the others had backed.
pub fn fit_fresh_memory(writes: &[Growth], level: f64) -> Result<FreshFit, FitError> {
    if !(level > 0.0 && level < 1.0) {
        return Err(FitError::BadLevel { level });
    }
    let n = writes.len();
    if n < 3 {
        return Err(FitError::TooFewSamples {
            what: "fresh-memory fit",
            n,
            need: 3,
        });
    }
    // Slope through the origin of extra time over fresh bytes, and its SSE.
    let fit_at = |warm: f64| -> Option<(f64, f64)> {
        let sxx: f64 = writes.iter().map(|g| fresh_bytes(g, warm).powi(2)).sum();
        if sxx <= 0.0 {
            return None;
        }
        let sxy: f64 = writes
            .iter()
            .map(|g| fresh_bytes(g, warm) * g.extra_s)
            .sum();
        let slope = sxy / sxx;
        let sse = writes
            .iter()
            .map(|g| (g.extra_s - slope * fresh_bytes(g, warm)).powi(2))
            .sum();
        (slope > 0.0).then_some((slope, sse))
    };
    let max = writes.iter().map(|g| g.size).fold(0.0, f64::max);
    let mut best: Option<(f64, f64, f64)> = None;
    for step in 0..=256 {
        let warm = max * step as f64 / 256.0;
        if let Some((slope, sse)) = fit_at(warm)
            && best.is_none_or(|b| sse < b.2)
        {
            best = Some((warm, slope, sse));
        }
    }
    let (warm, slope, sse) = best.ok_or(FitError::TooFewSamples {
        what: "fresh-memory fit (no write grew past the backed memory)",
        n: 0,
        need: 1,
    })?;
    // The rate's interval: the union, over every `warm` the data do not reject
    // (SSE within the F-test bound of the best: a profile interval), of the
    // slope's Student-t interval at that `warm`.
    let df = (n - 2).max(1) as f64;
    let t = t_quantile(level, df);
    let f_crit = FisherSnedecor::new(1.0, df)
        .expect("positive degrees of freedom")
        .inverse_cdf(level);
    let bound = sse * (1.0 + f_crit / df);
    let (mut lo_slope, mut hi_slope) = (f64::INFINITY, f64::NEG_INFINITY);
    for step in 0..=256 {
        let w = max * step as f64 / 256.0;
        if let Some((s_w, sse_w)) = fit_at(w)
            && sse_w <= bound
        {
            let sxx: f64 = writes.iter().map(|g| fresh_bytes(g, w).powi(2)).sum();
            let se = (sse_w / df / sxx).sqrt();
            lo_slope = lo_slope.min(s_w - t * se);
            hi_slope = hi_slope.max(s_w + t * se);
        }
    }
    let mean = writes.iter().map(|g| g.extra_s).sum::<f64>() / n as f64;
    let sst: f64 = writes.iter().map(|g| (g.extra_s - mean).powi(2)).sum();
    Ok(FreshFit {
        warm,
        rate: Estimate {
            value: 1.0 / slope,
            ci_low: if hi_slope > 0.0 { 1.0 / hi_slope } else { 0.0 },
            ci_high: if lo_slope > 0.0 {
                1.0 / lo_slope
            } else {
                f64::INFINITY
            },
            level,
        },
        r2: if sst > 0.0 { 1.0 - sse / sst } else { 1.0 },
        n,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_warm_memory_and_rate_come_back() {
        const G: f64 = 1e9;
        let (warm, rate) = (1.2 * G, 0.4 * G);
        let sizes = [0.5 * G, 1.0 * G, 2.0 * G, 3.0 * G, 4.0 * G];
        let mut peak = 0.0;
        let noise = [0.01, -0.02, 0.015, -0.01, 0.02];
        let writes: Vec<Growth> = sizes
            .iter()
            .zip(noise)
            .map(|(&size, e)| {
                let g = Growth {
                    size,
                    peak,
                    extra_s: (size - f64::max(warm, peak)).max(0.0) / rate + e,
                };
                peak = f64::max(peak, size);
                g
            })
            .collect();
        let f = fit_fresh_memory(&writes, 0.95).unwrap();
        assert!((f.warm - warm).abs() <= 0.1 * G, "{f:?}");
        assert!(f.rate.ci_low <= rate && rate <= f.rate.ci_high, "{f:?}");
        assert!(f.r2 > 0.99, "{f:?}");
    }

    #[test]
    fn writes_that_never_outgrow_memory_are_refused() {
        let w: Vec<Growth> = (1..=3)
            .map(|i| Growth {
                size: i as f64,
                peak: 0.0,
                extra_s: 0.0,
            })
            .collect();
        assert!(fit_fresh_memory(&w, 0.95).is_err());
        assert!(fit_fresh_memory(&w[..2], 0.95).is_err());
    }
}
