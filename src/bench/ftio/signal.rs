//! FTIO's input matrix and its closed-form 2-D DFT, and element-wise verification.
//!
//! The input is dense (no all-zero region, so no compression or sparse-file
//! shortcut helps) and its transform is cheap to state exactly:
//!
//! ```text
//! x[m,n] = A·e^{+2πi(a·m + b·n)/N}      plane wave          → A·N²·δ(k=a, l=b)
//!        + δ(n ≡ m+1 mod N)             shifted diagonal    → N·e^{−2πi·l/N}·δ(k+l ≡ 0 mod N)
//!        + δ(m = 0, n = 0)              delta at the origin → 1 everywhere
//! X[k,l] = Σ_{m,n} x[m,n]·e^{−2πi(k·m + l·n)/N}
//! ```
//!
//! with `(a, b) = WAVE` and `A = 1/N`. As `a ≠ b` and `a + b ≢ 0 (mod N)`, `X` is
//! not symmetric, so a transposition error shows, and no `X[k,l]` is zero
//! (`|X[k,l]| ≥ 1`), so the relative error of every element is defined. No input
//! element is zero either (`|x| ≥ 1/N`; `≥ 1 − 1/N` on the diagonal).
//!
//! Why `A = 1/N`: an FFT's roundoff is bounded normwise, about
//! ε·log2(N²)·‖X‖ spread over N² elements. With `A = 1` the spike `N²` would
//! dominate ‖X‖ and the error relative to the unit background would grow like
//! ε·N, failing the 1e-9·log2 N tolerance from N ≈ 10⁴ on; with `A = 1/N` the
//! spike is `N`, like the anti-diagonal, and the error stays about ε·√N·log2 N.

use rustfft::num_complex::Complex64;

use super::layout::{Geometry, get, put};

/// Wave numbers `(a, b)` of the plane wave (`a + b = 3 ≢ 0 mod N` for N ≥ 4).
pub const WAVE: (u64, u64) = (1, 2);

/// The input and its transform for one matrix side N.
#[derive(Debug, Clone)]
pub struct Signal {
    n: u64,
    /// Amplitude A = 1/N of the plane wave.
    amplitude: f64,
    /// `table[k] = e^{+2πik/N}`, `k = 0..N`: every phase the signal needs.
    table: Vec<Complex64>,
}

impl Signal {
    /// The signal for an N×N matrix (N ≥ 4).
    pub fn new(n: u64) -> Signal {
        let table = (0..n)
            .map(|k| Complex64::from_polar(1.0, 2.0 * std::f64::consts::PI * k as f64 / n as f64))
            .collect();
        Signal {
            n,
            amplitude: 1.0 / n as f64,
            table,
        }
    }

    /// Input element `x[m, col]`.
    pub fn input(&self, m: u64, col: u64) -> Complex64 {
        let n = self.n;
        let (a, b) = WAVE;
        let mut z = self.table[((a * m + b * col) % n) as usize] * self.amplitude;
        if col == (m + 1) % n {
            z += 1.0;
        }
        if m == 0 && col == 0 {
            z += 1.0;
        }
        z
    }

    /// Transform element `X[k, l]`.
    pub fn transform(&self, k: u64, l: u64) -> Complex64 {
        let n = self.n;
        let mut z = Complex64::new(1.0, 0.0);
        if (k, l) == WAVE {
            z += self.amplitude * (n as f64) * (n as f64);
        }
        if (k + l).is_multiple_of(n) {
            z += self.table[((n - l) % n) as usize] * n as f64;
        }
        z
    }

    /// Largest relative error accepted per element: 1e-9·log2 N.
    pub fn tolerance(&self) -> f64 {
        1e-9 * (self.n as f64).log2()
    }
}

/// Fill band `(q, b)` of process `p` (`bytes`: I³ encoded elements) with the input.
pub fn fill_band(bytes: &mut [u8], geo: Geometry, sig: &Signal, p: u64, q: u64, b: u64) {
    let s = geo.square_side();
    for gamma in 0..geo.i {
        let col = p * s + b * geo.i + gamma;
        for r in 0..s {
            put(
                bytes,
                geo.band_index(r, gamma) as usize,
                sig.input(q * s + r, col),
            );
        }
    }
}

/// One element that failed verification.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Mismatch {
    /// Matrix row of the stored element.
    pub row: u64,
    /// Matrix column of the stored element.
    pub col: u64,
    /// Value read back (real, imaginary).
    pub got: [f64; 2],
    /// Closed-form value (real, imaginary).
    pub expected: [f64; 2],
    /// `|got − expected| / |expected|`.
    pub rel_error: f64,
}

/// The outcome of comparing output elements with the closed form.
#[derive(Debug, Clone, PartialEq, Default, serde::Serialize)]
pub struct Verification {
    /// Elements compared (0 in the twin, which has no data).
    pub checked: u64,
    /// Elements beyond the tolerance.
    pub failed: u64,
    /// Largest relative error seen (infinite for a NaN).
    pub max_rel_error: f64,
    /// The first element beyond the tolerance, in the order checked.
    pub first_failure: Option<Mismatch>,
}

impl Verification {
    /// `Some(true)` when every element checked is within tolerance, `Some(false)`
    /// when one is not, `None` when nothing was checked.
    pub fn passed(&self) -> Option<bool> {
        (self.checked > 0).then_some(self.failed == 0)
    }

    /// Add `other`'s counts (its first failure counts only if this has none).
    pub fn merge(&mut self, other: &Verification) {
        self.checked += other.checked;
        self.failed += other.failed;
        self.max_rel_error = self.max_rel_error.max(other.max_rel_error);
        if self.first_failure.is_none() {
            self.first_failure = other.first_failure.clone();
        }
    }

    fn record(&mut self, row: u64, col: u64, got: Complex64, expected: Complex64, tol: f64) {
        let mut rel = (got - expected).norm() / expected.norm();
        if rel.is_nan() {
            rel = f64::INFINITY;
        }
        self.checked += 1;
        self.max_rel_error = self.max_rel_error.max(rel);
        if rel > tol {
            self.failed += 1;
            if self.first_failure.is_none() {
                self.first_failure = Some(Mismatch {
                    row,
                    col,
                    got: [got.re, got.im],
                    expected: [expected.re, expected.im],
                    rel_error: rel,
                });
            }
        }
    }
}

/// Check band `(q, b)` of process `p` after DFT series 2. The output is stored
/// **transposed** (two DFT series around one transposition): stored element
/// `(row, col)` must equal `X[col, row]`.
pub fn check_band(
    bytes: &[u8],
    geo: Geometry,
    sig: &Signal,
    p: u64,
    q: u64,
    b: u64,
    v: &mut Verification,
) {
    let (s, tol) = (geo.square_side(), sig.tolerance());
    for gamma in 0..geo.i {
        let col = p * s + b * geo.i + gamma;
        for r in 0..s {
            let row = q * s + r;
            let got = get(bytes, geo.band_index(r, gamma) as usize);
            v.record(row, col, got, sig.transform(col, row), tol);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// X[k,l] by the definition, O(N⁴).
    fn direct_dft(sig: &Signal, n: u64, k: u64, l: u64) -> Complex64 {
        let mut z = Complex64::default();
        for m in 0..n {
            for col in 0..n {
                let phase = -2.0 * std::f64::consts::PI * ((k * m + l * col) % n) as f64 / n as f64;
                z += sig.input(m, col) * Complex64::from_polar(1.0, phase);
            }
        }
        z
    }

    #[test]
    fn closed_form_matches_direct_dft() {
        // N = I²·c for (I, c) = (2, 2), (2, 3), (2, 4), (4, 1).
        for n in [8u64, 12, 16] {
            let sig = Signal::new(n);
            for k in 0..n {
                for l in 0..n {
                    let (want, got) = (direct_dft(&sig, n, k, l), sig.transform(k, l));
                    assert!(
                        (want - got).norm() <= 1e-9 * want.norm(),
                        "N={n} X[{k},{l}]: {got} vs {want}"
                    );
                }
            }
        }
    }

    #[test]
    fn input_is_dense_and_transform_nowhere_zero() {
        let n = 16;
        let sig = Signal::new(n);
        for m in 0..n {
            for col in 0..n {
                assert!(sig.input(m, col).norm() > 0.5 / n as f64);
                assert!(sig.transform(m, col).norm() >= 1.0 - 1e-12);
            }
        }
        // Not symmetric: a transposed result cannot pass.
        assert!((sig.transform(1, 2) - sig.transform(2, 1)).norm() > 1.0);
    }

    #[test]
    fn verification_flags_a_wrong_element_and_keeps_the_first() {
        let mut v = Verification::default();
        let one = Complex64::new(1.0, 0.0);
        v.record(0, 0, one, one, 1e-9);
        v.record(0, 1, Complex64::new(2.0, 0.0), one, 1e-9);
        v.record(0, 2, Complex64::new(f64::NAN, 0.0), one, 1e-9);
        assert_eq!((v.checked, v.failed, v.passed()), (3, 2, Some(false)));
        assert_eq!(
            v.first_failure.as_ref().map(|f| (f.row, f.col)),
            Some((0, 1))
        );
        assert_eq!(v.max_rel_error, f64::INFINITY);
        assert_eq!(Verification::default().passed(), None);
    }
}
