//! b_eff_io's result formulas, as pure functions. Bandwidths in MB/s with
//! MB = 10^6 bytes; times in seconds; sizes in bytes.
//!
//! Two definitions of a partition's b_eff_io exist and both are reported, named:
//!
//! * `paper` — Rabenseifner & Koniges (Euro-Par 2000): 0.25·write + 0.25·rewrite +
//!   0.50·read of the access-method averages;
//! * `rel2.1` — what the public release 2.1 prints: √(WR · RD) with
//!   WR = (Σ_{t=0..4} write[t] + rewrite[0]) / 6 and RD the read access-method average.
//!
//! The system's b_eff_io is the maximum over partitions (for either definition).

use serde::Serialize;

use super::schedule::{PatternType, T_CRIT};

/// A pattern's bandwidth: `n · bytes per process / time`.
pub fn pattern_mb_s(n: usize, bytes_per_process: u64, time: f64) -> f64 {
    n as f64 * bytes_per_process as f64 / time / 1e6
}

/// A type's bandwidth: `n · Σ bytes per process / (open + Σ pattern times + close)`.
pub fn type_mb_s(n: usize, bytes_per_process: u64, open: f64, patterns: f64, close: f64) -> f64 {
    pattern_mb_s(n, bytes_per_process, open + patterns + close)
}

/// An access method's average over the types measured (`None` = not run in this
/// pass): weights 2 for type 0, 1 for the others. Over all five types this is
/// `(2·type0 + type1 + type2 + type3 + type4) / 6`; over type 0 alone it is type 0.
pub fn access_mb_s(types: &[Option<f64>; 5]) -> f64 {
    let (mut sum, mut weight) = (0.0, 0.0);
    for (t, bw) in PatternType::ALL.iter().zip(types) {
        if let Some(bw) = bw {
            sum += t.weight() * bw;
            weight += t.weight();
        }
    }
    if weight == 0.0 { 0.0 } else { sum / weight }
}

/// The paper's partition value: `0.25·write + 0.25·rewrite + 0.50·read`.
pub fn paper_mb_s(write: f64, rewrite: f64, read: f64) -> f64 {
    0.25 * write + 0.25 * rewrite + 0.5 * read
}

/// Release 2.1's partition value: `√(WR · read)` with
/// `WR = (Σ write[t] + rewrite[0]) / 6`.
pub fn rel21_mb_s(write_types: &[f64; 5], rewrite_type0: f64, read: f64) -> f64 {
    let wr = (write_types.iter().sum::<f64>() + rewrite_type0) / 6.0;
    (wr * read).sqrt()
}

/// The three validity criteria of one partition.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Validity {
    /// Criterion 1: scheduled time per partition Tn ≥ 1800 s.
    pub time_ok: bool,
    /// Criterion 2: type 1 used shared file pointers (no `-noshared`).
    pub shared_ok: bool,
    /// Criterion 3: no errors (I/O failures or data mismatches).
    pub errors_ok: bool,
    /// Whether criterion 3 could be checked: the data read back was compared
    /// (not in the twin, which holds no data).
    pub data_checked: bool,
}

impl Validity {
    /// The criteria for a partition with scheduled time `tn` seconds; `data_checked`
    /// says whether the data read back was compared.
    pub fn new(tn: u64, shared: bool, errors: u64, data_checked: bool) -> Validity {
        Validity {
            time_ok: tn >= T_CRIT,
            shared_ok: shared,
            errors_ok: errors == 0,
            data_checked,
        }
    }
    /// All three met and checked: valid for comparing systems.
    pub fn valid(&self) -> bool {
        self.time_ok && self.shared_ok && self.errors_ok && self.data_checked
    }
    /// Valid as far as it could be checked, but criterion 3 was not (no data).
    pub fn unchecked(&self) -> bool {
        self.time_ok && self.shared_ok && self.errors_ok && !self.data_checked
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() < 1e-9 * b.abs().max(1.0)
    }

    #[test]
    fn pattern_and_type_bandwidth() {
        // 4 processes × 10 MiB in 2 s = 20.97152 MB/s.
        assert!(close(pattern_mb_s(4, 10 << 20, 2.0), 20.97152));
        // 2 × 5e6 bytes in 0.5 + 9 + 0.5 s = 1 MB/s.
        assert!(close(type_mb_s(2, 5_000_000, 0.5, 9.0, 0.5), 1.0));
    }

    #[test]
    fn both_averages_on_fixed_inputs() {
        let write = [100.0, 50.0, 80.0, 60.0, 40.0];
        let read = [200.0, 100.0, 160.0, 120.0, 80.0];
        let w = access_mb_s(&write.map(Some));
        let r = access_mb_s(&read.map(Some));
        // (2·100 + 50 + 80 + 60 + 40) / 6 = 430 / 6; (400 + 100 + 160 + 120 + 80) / 6 = 860 / 6.
        assert!(close(w, 430.0 / 6.0));
        assert!(close(r, 860.0 / 6.0));
        // Rewrite without -rewrite: type 0 only, so the average is type 0's 90 MB/s.
        let rw = access_mb_s(&[Some(90.0), None, None, None, None]);
        assert!(close(rw, 90.0));
        // paper: 0.25·71.6667 + 0.25·90 + 0.5·143.3333 = 112.0833…
        assert!(close(
            paper_mb_s(w, rw, r),
            0.25 * 430.0 / 6.0 + 22.5 + 0.5 * 860.0 / 6.0
        ));
        assert!(close(paper_mb_s(w, rw, r), 112.083_333_333_333_33));
        // rel2.1: WR = (330 + 90) / 6 = 70; √(70 · 143.3333) = 100.1665…
        assert!(close(
            rel21_mb_s(&write, 90.0, r),
            (70.0f64 * 860.0 / 6.0).sqrt()
        ));
        assert!((rel21_mb_s(&write, 90.0, r) - 100.166_528).abs() < 1e-5);
    }

    #[test]
    fn validity_criteria() {
        assert!(Validity::new(1800, true, 0, true).valid());
        let v = Validity::new(1800, true, 0, false);
        assert!(!v.valid() && v.unchecked());
        let v = Validity::new(600, true, 0, true);
        assert!(!v.valid() && !v.time_ok && v.shared_ok && v.errors_ok);
        assert!(!Validity::new(3600, false, 0, true).valid());
        assert!(!Validity::new(3600, true, 1, true).valid());
        assert!(!Validity::new(3600, true, 1, false).unchecked());
    }
}
