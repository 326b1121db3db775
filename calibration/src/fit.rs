//! `time = latency + size / bandwidth`: ordinary and robust straight-line fits.

use serde::{Deserialize, Serialize};

use crate::{Estimate, FitError, check_level, t_quantile};

/// Huber's tuning constant: 95 % efficiency at Gaussian noise (Huber 1981).
pub const HUBER_C: f64 = 1.345;

/// How a [`LinearFit`] was computed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FitMethod {
    /// Ordinary least squares; intervals from Student's t with n − 2 degrees of freedom.
    LeastSquares,
    /// Huber M-estimator by iteratively reweighted least squares.
    Huber,
}

/// A fit of `time = latency + size / bandwidth` to `(size, time)` samples.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LinearFit {
    /// How the fit was made.
    pub method: FitMethod,
    /// Fixed cost per request (the intercept), seconds.
    pub latency_s: Estimate,
    /// Bandwidth (the reciprocal of the slope), bytes per second. Its interval is
    /// the reciprocal of the slope's interval.
    pub bandwidth_bytes_per_s: Estimate,
    /// Number of samples.
    pub n: usize,
    /// Coefficient of determination of the fitted line over all samples
    /// (1 − SS_res / SS_tot; 1 when every time is equal and fitted exactly).
    pub r_squared: f64,
    /// Residual standard error, seconds: sqrt(SS_res / (n − 2)) for least
    /// squares, the robust scale (MAD / 0.6745) for Huber.
    pub residual_std_error_s: f64,
}

const WHAT: &str = "latency/bandwidth fit";

fn check_samples(samples: &[(f64, f64)]) -> Result<(), FitError> {
    if samples.len() < 3 {
        return Err(FitError::TooFewSamples {
            what: WHAT,
            n: samples.len(),
            need: 3,
        });
    }
    for (index, &(x, y)) in samples.iter().enumerate() {
        if !x.is_finite() || !y.is_finite() || x < 0.0 || y < 0.0 {
            return Err(FitError::BadSample {
                what: WHAT,
                index,
                x,
                y,
                allowed: "size and time must be finite and non-negative (bytes, seconds)",
            });
        }
    }
    let x0 = samples[0].0;
    if samples.iter().all(|s| s.0 == x0) {
        return Err(FitError::ConstantSize { size: x0 });
    }
    Ok(())
}

/// Plain sums of the samples: means, Sxx, and the weighted line through them.
struct Design {
    n: f64,
    mean_x: f64,
    sxx: f64,
}

impl Design {
    fn new(samples: &[(f64, f64)]) -> Design {
        let n = samples.len() as f64;
        let mean_x = samples.iter().map(|s| s.0).sum::<f64>() / n;
        let sxx = samples.iter().map(|s| (s.0 - mean_x).powi(2)).sum();
        Design { n, mean_x, sxx }
    }

    /// Variance factors of (intercept, slope) for unit error variance: the
    /// diagonal of (XᵀX)⁻¹.
    fn var_factors(&self) -> (f64, f64) {
        (
            1.0 / self.n + self.mean_x * self.mean_x / self.sxx,
            1.0 / self.sxx,
        )
    }
}

/// Weighted least-squares line `(intercept, slope)`.
fn weighted_line(samples: &[(f64, f64)], w: &[f64]) -> (f64, f64) {
    let sw: f64 = w.iter().sum();
    let mx = samples.iter().zip(w).map(|(s, w)| w * s.0).sum::<f64>() / sw;
    let my = samples.iter().zip(w).map(|(s, w)| w * s.1).sum::<f64>() / sw;
    let sxx: f64 = samples
        .iter()
        .zip(w)
        .map(|(s, w)| w * (s.0 - mx).powi(2))
        .sum();
    let sxy: f64 = samples
        .iter()
        .zip(w)
        .map(|(s, w)| w * (s.0 - mx) * (s.1 - my))
        .sum();
    let b = sxy / sxx;
    (my - b * mx, b)
}

fn r_squared(samples: &[(f64, f64)], a: f64, b: f64) -> f64 {
    let n = samples.len() as f64;
    let my = samples.iter().map(|s| s.1).sum::<f64>() / n;
    let sst: f64 = samples.iter().map(|s| (s.1 - my).powi(2)).sum();
    let sse: f64 = samples.iter().map(|s| (s.1 - a - b * s.0).powi(2)).sum();
    if sst == 0.0 {
        if sse == 0.0 { 1.0 } else { 0.0 }
    } else {
        1.0 - sse / sst
    }
}

/// A straight line `y = intercept + slope · x` with intervals: the general form
/// behind [`LinearFit`], for fits whose slope may have either sign (a per-call
/// cost against the number of ranks, say).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LineFit {
    /// How the fit was made.
    pub method: FitMethod,
    /// The intercept, in the unit of y.
    pub intercept: Estimate,
    /// The slope, in the unit of y per unit of x.
    pub slope: Estimate,
    /// Number of samples.
    pub n: usize,
    /// Coefficient of determination over all samples (1 − SS_res / SS_tot).
    pub r_squared: f64,
    /// Residual standard error in the unit of y (least squares), or the robust
    /// scale MAD / 0.6745 (Huber).
    pub residual_std_error: f64,
}

/// Builds the line from intercept, slope and their standard errors.
fn finish_line(
    method: FitMethod,
    samples: &[(f64, f64)],
    (a, b): (f64, f64),
    (se_a, se_b): (f64, f64),
    scale: f64,
    level: f64,
) -> LineFit {
    let t = t_quantile(level, samples.len() as f64 - 2.0);
    let est = |v: f64, se: f64| Estimate {
        value: v,
        ci_low: v - t * se,
        ci_high: v + t * se,
        level,
    };
    LineFit {
        method,
        intercept: est(a, se_a),
        slope: est(b, se_b),
        n: samples.len(),
        r_squared: r_squared(samples, a, b),
        residual_std_error: scale,
    }
}

/// Turns a line into `time = latency + size / bandwidth`.
fn to_latency_bandwidth(line: LineFit) -> Result<LinearFit, FitError> {
    let b = line.slope.value;
    // `b > 0.0` is false for NaN too.
    if b.partial_cmp(&0.0) != Some(std::cmp::Ordering::Greater) {
        return Err(FitError::NonPositiveSlope {
            slope_s_per_byte: b,
        });
    }
    Ok(LinearFit {
        method: line.method,
        latency_s: line.intercept,
        bandwidth_bytes_per_s: line.slope.reciprocal(),
        n: line.n,
        r_squared: line.r_squared,
        residual_std_error_s: line.residual_std_error,
    })
}

/// Fits the straight line `y = intercept + slope · x` by ordinary least squares,
/// with Student-t intervals on n − 2 degrees of freedom. Errors: fewer than 3
/// samples, a non-finite or negative value, all x equal, a level outside (0, 1).
pub fn fit_line(samples: &[(f64, f64)], level: f64) -> Result<LineFit, FitError> {
    check_level(level)?;
    check_samples(samples)?;
    let w = vec![1.0; samples.len()];
    let (a, b) = weighted_line(samples, &w);
    let d = Design::new(samples);
    let sse: f64 = samples.iter().map(|s| (s.1 - a - b * s.0).powi(2)).sum();
    let s = (sse / (d.n - 2.0)).sqrt();
    let (va, vb) = d.var_factors();
    Ok(finish_line(
        FitMethod::LeastSquares,
        samples,
        (a, b),
        (s * va.sqrt(), s * vb.sqrt()),
        s,
        level,
    ))
}

/// Fits `time = latency + size / bandwidth` by ordinary least squares.
///
/// `samples` are `(size in bytes, time in seconds)`; `level` is the confidence
/// level of the intervals (e.g. 0.95), which come from Student's t with n − 2
/// degrees of freedom, assuming independent errors of equal variance. Errors: fewer
/// than 3 samples, a non-finite or negative value, all sizes equal, a slope that
/// is not positive, a level outside (0, 1).
pub fn fit_latency_bandwidth(samples: &[(f64, f64)], level: f64) -> Result<LinearFit, FitError> {
    to_latency_bandwidth(fit_line(samples, level)?)
}

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    let m = v.len() / 2;
    if v.len() % 2 == 1 {
        v[m]
    } else {
        (v[m - 1] + v[m]) / 2.0
    }
}

/// Robust scale of residuals: median absolute deviation / 0.6745.
fn mad_scale(r: &[f64]) -> f64 {
    let mut v = r.to_vec();
    let med = median(&mut v);
    let mut dev: Vec<f64> = r.iter().map(|x| (x - med).abs()).collect();
    median(&mut dev) / 0.6745
}

/// Fits `time = latency + size / bandwidth` with Huber's M-estimator, for probe
/// data with outliers (a page-cache flush, a daemon waking up, a slow first call).
///
/// Method (Huber 1981, *Robust Statistics*, §7): iteratively reweighted least
/// squares starting from the least-squares line; each round the residual scale is
/// re-estimated as MAD / 0.6745 and a sample with scaled residual |u| > c gets
/// weight c / |u| ([`HUBER_C`] = 1.345), until the line moves by less than 1e-10
/// of the scale (at most 100 rounds). Intervals use Huber's asymptotic covariance
/// with his small-sample correction K = 1 + (p/n)·Var(ψ′)/E(ψ′)² (p = 2):
/// Cov = K²·[Σψ(u)²/(n − p)]/E(ψ′)²·s²·(XᵀX)⁻¹, with Student's t on n − 2 degrees
/// of freedom. The estimator resists outliers in *time*; sizes are chosen by the
/// probe, so leverage points (outliers in size) are not guarded against.
/// Errors as [`fit_latency_bandwidth`].
pub fn fit_latency_bandwidth_robust(
    samples: &[(f64, f64)],
    level: f64,
) -> Result<LinearFit, FitError> {
    to_latency_bandwidth(fit_line_robust(samples, level)?)
}

/// Fits `y = intercept + slope · x` with Huber's M-estimator, exactly as
/// [`fit_latency_bandwidth_robust`] does (which is this line turned into latency
/// and bandwidth), for lines whose slope may have either sign. Errors as [`fit_line`].
pub fn fit_line_robust(samples: &[(f64, f64)], level: f64) -> Result<LineFit, FitError> {
    check_level(level)?;
    check_samples(samples)?;
    let n = samples.len();
    let mut w = vec![1.0; n];
    let (mut a, mut b) = weighted_line(samples, &w);
    let resid =
        |a: f64, b: f64| -> Vec<f64> { samples.iter().map(|s| s.1 - a - b * s.0).collect() };
    let mut s = mad_scale(&resid(a, b));
    for _ in 0..100 {
        if s == 0.0 {
            // At least half the samples lie exactly on the line: it is the fit.
            break;
        }
        for (wi, r) in w.iter_mut().zip(resid(a, b)) {
            let u = (r / s).abs();
            *wi = if u <= HUBER_C { 1.0 } else { HUBER_C / u };
        }
        let (a2, b2) = weighted_line(samples, &w);
        let max_x = samples.iter().map(|s| s.0).fold(0.0, f64::max);
        let moved = (a2 - a).abs() + (b2 - b).abs() * max_x;
        (a, b) = (a2, b2);
        s = mad_scale(&resid(a, b));
        if moved <= 1e-10 * s {
            break;
        }
    }
    let (se_a, se_b) = if s == 0.0 {
        (0.0, 0.0)
    } else {
        let u: Vec<f64> = resid(a, b).iter().map(|r| r / s).collect();
        let nf = n as f64;
        let psi2: f64 = u.iter().map(|u| u.clamp(-HUBER_C, HUBER_C).powi(2)).sum();
        let dpsi: Vec<f64> = u
            .iter()
            .map(|u| if u.abs() <= HUBER_C { 1.0 } else { 0.0 })
            .collect();
        let m = dpsi.iter().sum::<f64>() / nf;
        let var_dpsi = dpsi.iter().map(|d| (d - m).powi(2)).sum::<f64>() / nf;
        let k = 1.0 + 2.0 / nf * var_dpsi / (m * m);
        let factor = k * k * psi2 / (nf - 2.0) / (m * m) * s * s;
        let (va, vb) = Design::new(samples).var_factors();
        ((factor * va).sqrt(), (factor * vb).sqrt())
    };
    Ok(finish_line(
        FitMethod::Huber,
        samples,
        (a, b),
        (se_a, se_b),
        s,
        level,
    ))
}

/// The mean of repeated measurements of one quantity with its Student-t
/// interval (n − 1 degrees of freedom), for a cost measured directly (an open,
/// a barrier). Errors: fewer than 2 values, a non-finite value, a level outside (0, 1).
pub fn mean_estimate(values: &[f64], level: f64) -> Result<Estimate, FitError> {
    check_level(level)?;
    if values.len() < 2 {
        return Err(FitError::TooFewSamples {
            what: "mean",
            n: values.len(),
            need: 2,
        });
    }
    if let Some((index, &v)) = values.iter().enumerate().find(|(_, v)| !v.is_finite()) {
        return Err(FitError::BadSample {
            what: "mean",
            index,
            x: index as f64,
            y: v,
            allowed: "values must be finite",
        });
    }
    let n = values.len() as f64;
    let mean = values.iter().sum::<f64>() / n;
    let sd = (values.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / (n - 1.0)).sqrt();
    let half = t_quantile(level, n - 1.0) * sd / n.sqrt();
    Ok(Estimate {
        value: mean,
        ci_low: mean - half,
        ci_high: mean + half,
        level,
    })
}
