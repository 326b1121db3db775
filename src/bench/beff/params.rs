//! The options, the 21 message sizes and the loop-length rule.

use super::*;

/// Message sizes measured: 13 powers of two 1 B … 4 KiB, then 8 geometric steps
/// to `Lmax`.
pub const MSGLENGTHS: usize = 21;

/// Loop length of the shortest message (b_eff's).
pub const FIRST_LOOP: u64 = 300;

/// A loop (all iterations of one measurement) should take this long at most …
pub const LOOP_TIME_MAX: f64 = 5e-3;
/// … and is cut to about this long when it would take longer.
pub const LOOP_TIME_TARGET: f64 = 2.5e-3;

/// The largest `Lmax`: b_eff keeps counts and displacements in C `int`s, so
/// it caps `Lmax` at 128 MiB.
pub const LMAX_CAP: u64 = 128 << 20;

/// b_eff's options.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BeffParams {
    /// Memory per process in MiB (the original's `MEMORY_PER_PROCESSOR`):
    /// `Lmax` is 1/128 of it.
    pub mb: u64,
    /// Each measurement's repetitions (the best counts).
    pub repetitions: u64,
    /// Loop length of the shortest message ([`FIRST_LOOP`]; fewer for a quick look).
    pub first_loop: u64,
    /// Seed of the random patterns' permutations.
    pub seed: u64,
}

impl BeffParams {
    /// The largest message: memory per process / 128, at most [`LMAX_CAP`].
    pub fn lmax(&self) -> u64 {
        (self.mb.saturating_mul(1 << 20) / 128).min(LMAX_CAP)
    }

    /// The 21 message sizes: 1, 2, 4 … 4096, then `4096·a^k` for k = 1..8 with
    /// `4096·a^8 = Lmax` (rounded to whole bytes; the last is `Lmax` exactly).
    pub fn sizes(&self) -> Vec<u64> {
        message_sizes(self.lmax())
    }

    /// Checks the options for `ranks` processes; the error names the option.
    pub fn validate(&self, ranks: u64) -> Result<(), OptionError> {
        if ranks < 2 {
            return Err(opt_err(
                "--ranks",
                ranks,
                "b_eff needs at least 2 processes; run it under mpiexec -n 2 or more, or with --ranks 2",
            ));
        }
        if self.lmax() <= 4096 * 2 {
            return Err(opt_err(
                "--mb",
                self.mb,
                "too little memory per process: Lmax = MB/128 must exceed 8 KiB (at least --mb 2)",
            ));
        }
        if self.repetitions == 0 {
            return Err(opt_err("--repetitions", 0, "must be at least 1"));
        }
        if self.first_loop == 0 {
            return Err(opt_err("--first-loop", 0, "must be at least 1"));
        }
        Ok(())
    }
}

/// The 21 sizes for `lmax` (see [`BeffParams::sizes`]).
pub fn message_sizes(lmax: u64) -> Vec<u64> {
    let mut sizes: Vec<u64> = (0..13).map(|i| 1u64 << i).collect();
    let a = (lmax as f64 / 4096.0).powf(1.0 / 8.0);
    for k in 1..8 {
        sizes.push((4096.0 * a.powi(k)).round() as u64);
    }
    sizes.push(lmax);
    sizes
}

/// The loop length for the next size: the current one, cut where the loop at the
/// next size would take over [`LOOP_TIME_MAX`] — predicted from this size's
/// longest loop `seconds` as if time grew with the message (`next / now`) — to
/// about [`LOOP_TIME_TARGET`]; never below 1, never longer.
pub fn next_loop_length(loops: u64, seconds: f64, now: u64, next: u64) -> u64 {
    let predicted = seconds * next as f64 / now.max(1) as f64;
    if predicted <= LOOP_TIME_MAX {
        return loops;
    }
    ((loops as f64 * LOOP_TIME_TARGET / predicted).floor() as u64).clamp(1, loops)
}
