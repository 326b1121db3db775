//! piotwin's calibration: turns probe measurements into twin model parameters,
//! each with a confidence interval and a fit quality.
//!
//! What it is for: **fitting only**. The probes that produce the samples (IOzone-
//! and IOR-style benchmarks, memcpy, point-to-point, b_eff) are ordinary
//! benchmarks in the main crate's `src/bench/`, run for real through `IoCtx`;
//! this crate takes their `(size, time)` or `(file size, bandwidth)` samples and
//! fits
//!
//! * the per-request cost `time = latency + size / bandwidth` by ordinary least
//!   squares ([`fit_latency_bandwidth`]) or by a robust Huber M-estimator
//!   ([`fit_latency_bandwidth_robust`]) for noisy probes;
//! * a general straight line `y = intercept + slope · x` ([`fit_line`],
//!   [`fit_line_robust`]) — e.g. `fsync` time against dirty bytes (intercept: the
//!   commit cost, slope: 1 / device write bandwidth), or a per-call cost against
//!   the number of ranks — and the mean of repeated measurements of one cost
//!   ([`mean_estimate`]);
//! * the cache-capacity knee of bandwidth as a function of file size
//!   ([`find_cache_knee`]): where the page-cache plateau gives way to the device
//!   plateau.
//!
//! Results are plain serde structs ([`Estimate`], [`LinearFit`], [`CacheKnee`])
//! that calibration writes into scenario files next to each parameter.
//!
//! What it is not for: it runs no I/O, knows no MPI and no scenario format, and
//! does not decide which regime a sample belongs to beyond the knee — callers
//! fit each regime (cache, device; per access order) separately.
#![warn(missing_docs, unreachable_pub)]

mod fit;
mod knee;
mod release;

pub use fit::{
    FitMethod, HUBER_C, LineFit, LinearFit, fit_latency_bandwidth, fit_latency_bandwidth_robust,
    fit_line, fit_line_robust, mean_estimate,
};
pub use knee::{CacheKnee, find_cache_knee};
pub use release::{ReleaseFit, Rewrite, fit_release};

use serde::{Deserialize, Serialize};
use statrs::distribution::{ContinuousCDF, StudentsT};

/// A fitted value with its two-sided confidence interval.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Estimate {
    /// The point estimate, in the unit its field name gives.
    pub value: f64,
    /// Lower end of the confidence interval (same unit).
    pub ci_low: f64,
    /// Upper end of the confidence interval (same unit); `f64::INFINITY` when the
    /// data cannot bound it (a bandwidth whose slope interval reaches zero).
    pub ci_high: f64,
    /// Confidence level of the interval, e.g. 0.95.
    pub level: f64,
}

impl Estimate {
    /// One over a positive estimate, its interval mapped through (a rate from
    /// a time per unit): the upper end is infinite where the interval reaches
    /// zero.
    pub fn reciprocal(self) -> Estimate {
        Estimate {
            value: 1.0 / self.value,
            ci_low: 1.0 / self.ci_high,
            ci_high: if self.ci_low > 0.0 {
                1.0 / self.ci_low
            } else {
                f64::INFINITY
            },
            level: self.level,
        }
    }
}

/// Why a fit could not be made: names the offending input and what is allowed.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum FitError {
    /// Fewer samples than the fit needs.
    #[error("{what}: {n} samples given, at least {need} are needed")]
    TooFewSamples {
        /// The fit being attempted.
        what: &'static str,
        /// Samples given.
        n: usize,
        /// Samples needed.
        need: usize,
    },
    /// A sample with a non-finite or out-of-range coordinate.
    #[error("{what}: sample {index} = ({x}, {y}) is not allowed: {allowed}")]
    BadSample {
        /// The fit being attempted.
        what: &'static str,
        /// Index of the sample in the input.
        index: usize,
        /// Its first coordinate (size in bytes).
        x: f64,
        /// Its second coordinate (time in seconds or bandwidth in bytes/s).
        y: f64,
        /// What values are allowed.
        allowed: &'static str,
    },
    /// Every sample has the same size, so no slope can be fitted.
    #[error(
        "latency/bandwidth fit: every sample has size {size} bytes; probe at least two different sizes"
    )]
    ConstantSize {
        /// The one size present.
        size: f64,
    },
    /// Time does not grow with size: no positive bandwidth fits.
    #[error(
        "latency/bandwidth fit: the fitted slope is {slope_s_per_byte:e} s/byte, not positive, \
         so time does not grow with size and no bandwidth can be derived; probe a wider size range"
    )]
    NonPositiveSlope {
        /// The fitted slope in seconds per byte.
        slope_s_per_byte: f64,
    },
    /// Bandwidth does not drop from small to large files.
    #[error(
        "cache knee: the best split leaves bandwidth {cache:e} B/s below and {device:e} B/s above \
         {size} bytes; bandwidth does not drop, so no cache regime is visible (probe files larger than the cache)"
    )]
    NoKnee {
        /// Geometric-mean bandwidth of the small-file side, bytes/s.
        cache: f64,
        /// Geometric-mean bandwidth of the large-file side, bytes/s.
        device: f64,
        /// The split size in bytes.
        size: f64,
    },
    /// The rewrite after the longest wait is not clearly slower than the one
    /// right after the delete: freed memory stays backed.
    #[error(
        "release fit: the rewrite after the longest wait took {fresh_s} s against {warm_s} s right \
         after the delete; freed memory is not handed back, so it stays backed (no release time)"
    )]
    NotReleased {
        /// Rewrite time right after the delete, seconds.
        warm_s: f64,
        /// Rewrite time after the longest wait, seconds.
        fresh_s: f64,
    },
    /// A confidence level outside (0, 1).
    #[error(
        "confidence level {level} is not allowed; give a value strictly between 0 and 1, e.g. 0.95"
    )]
    BadLevel {
        /// The level given.
        level: f64,
    },
}

/// The two-sided Student's t quantile `t_{df, (1 + level) / 2}`.
fn t_quantile(level: f64, df: f64) -> f64 {
    StudentsT::new(0.0, 1.0, df)
        .expect("degrees of freedom are positive")
        .inverse_cdf(0.5 + level / 2.0)
}

fn check_level(level: f64) -> Result<(), FitError> {
    if level > 0.0 && level < 1.0 {
        Ok(())
    } else {
        Err(FitError::BadLevel { level })
    }
}
