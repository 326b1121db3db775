//! Freed memory handed back over time, and the cost of taking it fresh: a
//! guest with free page reporting returns the memory its page cache gave up
//! to the hypervisor within seconds, and a write that needs it again faults
//! it in. Fitted from rewrites a wait after a delete. At one size, the
//! rewrite right after the delete (`T_warm`) finds the freed memory backed,
//! the one after the longest wait (`T_fresh`) finds it gone, and one in
//! between still finds the share
//!
//! `w = (T_fresh − T) / (T_fresh − T_warm) = 1 − (t + T/2) / release_time`
//!
//! backed, `t + T/2` being the time from the delete to the middle of the
//! rewrite: the host takes freed memory back linearly over `release_time`
//! (free page reporting works through the free lists at a steady pace; a
//! freed GiB measured 70 %, 43 % and 4 % still backed 2, 4 and 6 s after its
//! delete, which no exponential follows). Each partial rewrite gives one
//! `release_time`; the estimate is their mean with a Student-t interval.
//!
//! Two sizes give the fresh rate and the memory that stays backed (`warm`):
//! `T_fresh(S) − T_warm(S) = (S − warm) / fresh_rate`, so the difference
//! between the sizes is their difference in bytes over the rate.

use crate::{Estimate, FitError, t_quantile};

/// One rewrite: its size, the wait after the delete and its time.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Rewrite {
    /// Bytes freed and rewritten.
    pub bytes: f64,
    /// Seconds between the delete and the rewrite.
    pub wait_s: f64,
    /// Seconds the rewrite took.
    pub seconds: f64,
}

/// The fitted release time, fresh rate and warm memory.
#[derive(Debug, Clone, PartialEq)]
pub struct ReleaseFit {
    /// Time over which freed memory is handed back, seconds, with its interval.
    pub time: Estimate,
    /// Partial rewrites the release time comes from; with fewer than two it
    /// is the midpoint of the bracket the waits put round the hand-back.
    pub n: usize,
    /// Rate of taking fresh memory, bytes/s; its interval allows each of the
    /// four times it comes from the spread of the repeated quickest rewrites
    /// (not a confidence level: too few repeats for one).
    pub fresh_rate: Estimate,
    /// Memory that stays backed whatever the cache frees, bytes (0 or more).
    pub warm: f64,
    /// Per size: (bytes, rewrite time with the freed memory backed, with it
    /// handed back), seconds.
    pub ends: Vec<(f64, f64, f64)>,
}

/// Shares of the freed memory outside this range are too close to the ends
/// to say how long it took.
const PARTIAL: (f64, f64) = (0.05, 0.95);

/// Fits [`ReleaseFit`] to rewrites at two sizes, each at its shortest and
/// longest wait, one (the one with the most rewrites) also in between. Fails when the longest wait's
/// rewrite is not clearly slower than the shortest's (memory is not handed
/// back: nothing to fit), or when fewer than two rewrites found the memory
/// partly handed back and no wait brackets the hand-back (see [`bracket`]).
pub fn fit_release(rewrites: &[Rewrite], level: f64) -> Result<ReleaseFit, FitError> {
    if !(level > 0.0 && level < 1.0) {
        return Err(FitError::BadLevel { level });
    }
    for (index, r) in rewrites.iter().enumerate() {
        let fine = r.bytes > 0.0
            && r.wait_s.is_finite()
            && r.wait_s >= 0.0
            && r.seconds.is_finite()
            && r.seconds > 0.0;
        if !fine {
            return Err(FitError::BadSample {
                what: "release fit",
                index,
                x: r.wait_s,
                y: r.seconds,
                allowed: "a size above 0, a wait of 0 s or more and a rewrite time above 0 s",
            });
        }
    }
    let mut sizes: Vec<f64> = rewrites.iter().map(|r| r.bytes).collect();
    sizes.sort_by(f64::total_cmp);
    sizes.dedup();
    if sizes.len() != 2 {
        return Err(FitError::TooFewSamples {
            what: "release fit (rewrite sizes; two are needed)",
            n: sizes.len(),
            need: 2,
        });
    }
    // Per size: the quickest rewrite at the shortest wait (a disturbed one is
    // only slower) and the mean at the longest.
    let ends = |bytes: f64| -> (f64, f64, f64, f64) {
        let of_size = || rewrites.iter().filter(move |r| r.bytes == bytes);
        let first = of_size().map(|r| r.wait_s).fold(f64::INFINITY, f64::min);
        let last = of_size().map(|r| r.wait_s).fold(0.0, f64::max);
        let warm = of_size()
            .filter(|r| r.wait_s == first)
            .map(|r| r.seconds)
            .fold(f64::INFINITY, f64::min);
        let fresh: Vec<f64> = of_size()
            .filter(|r| r.wait_s == last)
            .map(|r| r.seconds)
            .collect();
        let fresh = fresh.iter().sum::<f64>() / fresh.len() as f64;
        (first, last, warm, fresh)
    };
    // The release time from the size with the most rewrites.
    let count = |b: f64| rewrites.iter().filter(|r| r.bytes == b).count();
    let partial = if count(sizes[1]) > count(sizes[0]) {
        sizes[1]
    } else {
        sizes[0]
    };
    let (first, last, warm_s, fresh_s) = ends(partial);
    let [(_, _, w1, f1), (_, _, w2, f2)] = [ends(sizes[0]), ends(sizes[1])];
    // Handed back only when it costs clearly more than noise: a fifth of the time.
    if first == last || fresh_s - warm_s <= 0.2 * fresh_s {
        return Err(FitError::NotReleased { warm_s, fresh_s });
    }
    // (wait + rewrite/2, share still backed) of every rewrite at this size.
    let shares: Vec<(f64, f64)> = rewrites
        .iter()
        .filter(|r| r.bytes == partial && r.wait_s != first && r.wait_s != last)
        .map(|r| {
            let w = (fresh_s - r.seconds) / (fresh_s - warm_s);
            (r.wait_s + r.seconds / 2.0, w)
        })
        .collect();
    let taus: Vec<f64> = shares
        .iter()
        .filter(|&&(_, w)| w > PARTIAL.0 && w < PARTIAL.1)
        .map(|&(t, w)| t / (1.0 - w))
        .collect();
    let n = taus.len();
    let time = match n {
        0 | 1 => bracket(&shares, (first, warm_s), (last, fresh_s), level).ok_or(
            FitError::TooFewSamples {
                what: "release fit (rewrites that found the freed memory partly handed back, or a wait that brackets the hand-back)",
                n,
                need: 2,
            },
        )?,
        _ => {
            let mean = taus.iter().sum::<f64>() / n as f64;
            let var = taus.iter().map(|t| (t - mean).powi(2)).sum::<f64>() / (n - 1) as f64;
            let half = t_quantile(level, (n - 1) as f64) * (var / n as f64).sqrt();
            Estimate {
                value: mean,
                ci_low: (mean - half).max(0.0),
                ci_high: mean + half,
                level,
            }
        }
    };
    // The fresh part of each size's rewrite: (S − warm) / rate. Its noise:
    // the spread of the repeated shortest-wait rewrites, in each of the four
    // times the difference of differences takes.
    let (d1, d2) = (f1 - w1, f2 - w2);
    if d2 <= d1 {
        return Err(FitError::NotReleased {
            warm_s: w2,
            fresh_s: f2,
        });
    }
    let repeats: Vec<f64> = rewrites
        .iter()
        .filter(|r| r.bytes == partial && r.wait_s == first)
        .map(|r| r.seconds)
        .collect();
    let spread = repeats.iter().copied().fold(0.0, f64::max)
        - repeats.iter().copied().fold(f64::INFINITY, f64::min);
    let bytes = sizes[1] - sizes[0];
    let rate = bytes / (d2 - d1);
    let warm = (sizes[0] - rate * d1).max(0.0);
    let (low, high) = (
        bytes / (d2 - d1 + 2.0 * spread),
        match d2 - d1 - 2.0 * spread {
            d if d > 0.0 => bytes / d,
            _ => f64::INFINITY,
        },
    );
    Ok(ReleaseFit {
        time,
        n,
        fresh_rate: Estimate {
            value: rate,
            ci_low: low,
            ci_high: high,
            level,
        },
        warm,
        ends: vec![(sizes[0], w1, f1), (sizes[1], w2, f2)],
    })
}

/// The release time where the memory went back faster than the waits step:
/// no rewrite found it partly handed back, but the latest that found it all
/// backed and the earliest that found it all gone (times from the delete to
/// the middle of the rewrite; the ends are `(wait, time)` of the shortest and
/// longest waits) bracket it, one of them a rewrite between the ends. The
/// midpoint, the bracket as its interval.
fn bracket(
    shares: &[(f64, f64)],
    first: (f64, f64),
    last: (f64, f64),
    level: f64,
) -> Option<Estimate> {
    let backed_between = shares
        .iter()
        .filter(|&&(_, w)| w >= PARTIAL.1)
        .map(|&(t, _)| t)
        .reduce(f64::max);
    let backed = backed_between.unwrap_or(first.0 + first.1 / 2.0);
    let gone_between = shares
        .iter()
        .filter(|&&(t, w)| w <= PARTIAL.0 && t > backed)
        .map(|&(t, _)| t)
        .reduce(f64::min);
    let gone = gone_between.unwrap_or(last.0 + last.1 / 2.0);
    // The ends alone bracket every hand-back: a wait between them must say more.
    if backed_between.is_none() && gone_between.is_none() {
        return None;
    }
    (gone > backed).then(|| Estimate {
        value: (backed + gone) / 2.0,
        ci_low: backed,
        ci_high: gone,
        level,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const GIB: f64 = (1u64 << 30) as f64;

    /// Rewrites of a model machine: copies at 4 GB/s, 128 MiB warm, fresh
    /// memory at 1.5 GB/s, release time `tau`.
    fn machine(tau: f64, steps: &[(f64, f64)]) -> Vec<Rewrite> {
        let warm = GIB / 8.0;
        steps
            .iter()
            .map(|&(bytes, t)| {
                let copy = bytes / 4e9;
                let excess = bytes - warm;
                // T = copy + excess·(1 − backed share)/rate, the share 1 − (t + T/2)/tau.
                let mut s = copy + excess / 1.5e9;
                for _ in 0..100 {
                    let share = if t == 0.0 {
                        1.0
                    } else {
                        (1.0 - (t + s / 2.0) / tau).max(0.0)
                    };
                    s = copy + excess * (1.0 - share) / 1.5e9;
                }
                Rewrite {
                    bytes,
                    wait_s: t,
                    seconds: s,
                }
            })
            .collect()
    }

    #[test]
    fn recovers_a_model_machine() {
        let steps = [
            (GIB, 0.0),
            (GIB, 2.0),
            (GIB, 4.0),
            (GIB, 6.0),
            (GIB, 25.0),
            (GIB / 2.0, 0.0),
            (GIB / 2.0, 25.0),
        ];
        let fit = fit_release(&machine(8.0, &steps), 0.95).unwrap();
        assert!((fit.time.value - 8.0).abs() < 1e-9, "{fit:?}");
        assert!(fit.time.ci_low <= 8.0 && fit.time.ci_high >= 8.0);
        assert_eq!(fit.n, 3);
        assert!((fit.fresh_rate.value / 1.5e9 - 1.0).abs() < 1e-9, "{fit:?}");
        assert!(fit.fresh_rate.ci_low <= 1.5e9 && fit.fresh_rate.ci_high >= 1.5e9);
        assert!((fit.warm / (GIB / 8.0) - 1.0).abs() < 1e-6, "{fit:?}");
    }

    /// Measured here: 1 GiB handed back between 1 and 2 s after its delete,
    /// no rewrite in between. By hand: still backed at 1 + 0.26/2 = 1.13 s
    /// (share (2.5 - 0.26) / (2.5 - 0.2) = 0.974), gone at 2 + 2.6/2 = 3.3 s
    /// (share -0.043); midpoint 2.215 s. Fresh rate (1 GiB - 0.5 GiB) over
    /// ((2.5 - 0.2) - (1.12 - 0.1)) s = 419.43 MB/s.
    #[test]
    fn a_hand_back_between_two_waits_is_bracketed() {
        let rw = |bytes: f64, wait_s: f64, seconds: f64| Rewrite {
            bytes,
            wait_s,
            seconds,
        };
        let steps = [
            rw(GIB, 0.0, 0.2),
            rw(GIB, 0.0, 0.21),
            rw(GIB, 1.0, 0.26),
            rw(GIB, 2.0, 2.6),
            rw(GIB, 3.0, 2.6),
            rw(GIB, 20.0, 2.5),
            rw(GIB / 2.0, 0.0, 0.1),
            rw(GIB / 2.0, 20.0, 1.12),
        ];
        let fit = fit_release(&steps, 0.95).unwrap();
        assert_eq!(fit.n, 0);
        assert!((fit.time.ci_low - 1.13).abs() < 1e-12, "{fit:?}");
        assert!((fit.time.ci_high - 3.3).abs() < 1e-12, "{fit:?}");
        assert!((fit.time.value - 2.215).abs() < 1e-12, "{fit:?}");
        assert!(
            (fit.fresh_rate.value - GIB / 2.0 / 1.28).abs() < 1e-3,
            "{fit:?}"
        );
        // With no wait between the ends there is nothing to bracket with.
        let ends_only: Vec<Rewrite> = steps
            .iter()
            .copied()
            .filter(|r| r.wait_s == 0.0 || r.wait_s == 20.0)
            .collect();
        assert!(matches!(
            fit_release(&ends_only, 0.95),
            Err(FitError::TooFewSamples { n: 0, .. })
        ));
    }

    #[test]
    fn memory_that_stays_backed_is_not_fitted() {
        let flat: Vec<Rewrite> = [
            (GIB, 0.0),
            (GIB, 2.0),
            (GIB, 30.0),
            (2.0 * GIB, 0.0),
            (2.0 * GIB, 30.0),
        ]
        .iter()
        .map(|&(bytes, t)| Rewrite {
            bytes,
            wait_s: t,
            seconds: bytes / 4e9 + 0.001 * t,
        })
        .collect();
        assert!(matches!(
            fit_release(&flat, 0.95),
            Err(FitError::NotReleased { .. })
        ));
    }

    #[test]
    fn bad_samples_are_named() {
        let bad = [Rewrite {
            bytes: GIB,
            wait_s: -1.0,
            seconds: 1.0,
        }];
        let e = fit_release(&bad, 0.95).unwrap_err().to_string();
        assert!(
            e.contains("sample 0") && e.contains("wait of 0 s or more"),
            "{e}"
        );
    }
}
