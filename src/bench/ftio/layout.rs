//! FTIO's geometry and the pure data operations on it: where every matrix
//! element lives in a process's file, the Diagonals schedule, the Mini-Square
//! transpose and the band FFT. The rank program moves bytes between files and
//! these functions; the tests drive the same functions over in-memory files.
//!
//! # File layout (one *region* per process)
//!
//! N = I²·c, s = I² (the Square side), complex elements of 16 bytes (`f64` real
//! part then `f64` imaginary part, little-endian). Process p owns **Square
//! column p**: matrix columns `p·s .. (p+1)·s`, all N rows, i.e. the c Squares
//! `(q, p)`, `q = 0..c`. Its region holds them one after another:
//!
//! ```text
//! region of p:  [ Square (0,p) | Square (1,p) | … | Square (c-1,p) ]   each s²·16 bytes
//! Square:       I×I Mini-Squares, column-major:  (a,b) at index b·I + a
//!               (Mini-Square column b — a "band" — is contiguous: I³ elements)
//! Mini-Square:  I×I elements, column-major:      (ρ,γ) at index γ·I + ρ
//! ```
//!
//! so Square element (r, col) with r = a·I + ρ, col = b·I + γ is at element
//! index `(b·I + a)·I² + γ·I + ρ` of its Square, and it is matrix element
//! `(q·s + r, p·s + col)`. A band `(q, b)` holds I full matrix columns' worth of
//! one Square; the c bands `(0..c, b)` together hold I whole matrix columns of
//! length N, which is what a DFT series transforms.
//!
//! With a file per process, the region is the whole file `ftio.NNNN`; with one
//! shared file, region p starts at byte `p·c·s²·16`.

use std::sync::Arc;

use rustfft::num_complex::Complex64;
use rustfft::{Fft, FftPlanner};

/// Bytes per complex element (two little-endian `f64`).
pub const ELEM_BYTES: u64 = 16;

/// The sizes of one FTIO run: the Mini-Square side I and the process count c.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct Geometry {
    /// Mini-Square side I (elements).
    pub i: u64,
    /// Number of processes c (= Squares per Square column).
    pub c: u64,
}

impl Geometry {
    /// Matrix side N = I²·c (elements).
    pub fn n(&self) -> u64 {
        self.i * self.i * self.c
    }
    /// Square side s = I² (elements).
    pub fn square_side(&self) -> u64 {
        self.i * self.i
    }
    /// Elements in one Square, s² = I⁴.
    pub fn square_elems(&self) -> u64 {
        self.square_side() * self.square_side()
    }
    /// Elements in one Mini-Square, I².
    pub fn mini_elems(&self) -> u64 {
        self.i * self.i
    }
    /// Elements in one band (a Mini-Square column of a Square), I³.
    pub fn band_elems(&self) -> u64 {
        self.i * self.mini_elems()
    }
    /// Bytes of one process's region (its Square column), c·I⁴·16.
    pub fn region_bytes(&self) -> u64 {
        self.c * self.square_elems() * ELEM_BYTES
    }
    /// Byte offset of Square `(q, p)` inside p's region.
    pub fn square_offset(&self, q: u64) -> u64 {
        q * self.square_elems() * ELEM_BYTES
    }
    /// Byte offset of band `b` (Mini-Square column b) of Square `(q, p)` inside p's region.
    pub fn band_offset(&self, q: u64, b: u64) -> u64 {
        self.square_offset(q) + b * self.band_elems() * ELEM_BYTES
    }
    /// Byte offset of Mini-Square `(a, b)` of Square `(q, p)` inside p's region.
    pub fn mini_offset(&self, q: u64, a: u64, b: u64) -> u64 {
        self.square_offset(q) + (b * self.i + a) * self.mini_elems() * ELEM_BYTES
    }
    /// Element index, inside a band, of the band's local column `gamma` (0..I)
    /// at Square row `r` (0..s).
    pub fn band_index(&self, r: u64, gamma: u64) -> u64 {
        let (a, rho) = (r / self.i, r % self.i);
        a * self.mini_elems() + gamma * self.i + rho
    }
}

/// The Diagonals schedule: on diagonal `d` (`0..c`) process `p` exchanges its
/// Square `(q, p)` with process `q`'s Square `(p, q)`, where `p + q ≡ d (mod c)`;
/// `None` when `q = p` (a Square on its own diagonal stays).
pub fn diagonal_partner(p: u64, d: u64, c: u64) -> Option<u64> {
    let q = (d + c - p % c) % c;
    (q != p).then_some(q)
}

/// The Mini-Square operations of one Square's local transpose, in order: `(a, b)`
/// with `a ≤ b`. `a == b` is a diagonal Mini-Square (transposed in place);
/// otherwise `(a, b)` and its conjugate `(b, a)` are transposed and swapped.
pub fn mini_square_pairs(i: u64) -> impl Iterator<Item = (u64, u64)> {
    (0..i).flat_map(move |a| (a..i).map(move |b| (a, b)))
}

/// Transpose, in place, an I×I Mini-Square held as encoded bytes.
pub fn transpose_mini(bytes: &mut [u8], i: usize) {
    let e = ELEM_BYTES as usize;
    debug_assert_eq!(bytes.len(), i * i * e);
    for col in 0..i {
        for row in 0..col {
            let (x, y) = ((col * i + row) * e, (row * i + col) * e);
            // x > y: split so both 16-byte elements can be borrowed at once.
            let (lo, hi) = bytes.split_at_mut(x);
            lo[y..y + e].swap_with_slice(&mut hi[..e]);
        }
    }
}

/// Decode element `k` of an encoded buffer.
pub fn get(bytes: &[u8], k: usize) -> Complex64 {
    let o = k * ELEM_BYTES as usize;
    decode(&bytes[o..o + ELEM_BYTES as usize])
}

/// Encode `z` as element `k` of a buffer.
pub fn put(bytes: &mut [u8], k: usize, z: Complex64) {
    let o = k * ELEM_BYTES as usize;
    encode(&mut bytes[o..o + ELEM_BYTES as usize], z);
}

/// The `c` encoded bands of `geo` filled with a smooth signal: input for
/// timing [`fft_band`] (calibration's FFT probe, `examples/fft_rate.rs`).
pub fn timing_bands(geo: Geometry) -> Vec<Vec<u8>> {
    let band_bytes = (geo.band_elems() * ELEM_BYTES) as usize;
    (0..geo.c)
        .map(|q| {
            let mut b = vec![0u8; band_bytes];
            for k in 0..geo.band_elems() as usize {
                let v = (k as f64 * 0.37 + q as f64).sin();
                put(&mut b, k, Complex64::new(v, 1.0 - v));
            }
            b
        })
        .collect()
}

/// A forward 1-D complex FFT of length N (rustfft) with its scratch space.
pub struct LineFft {
    fft: Arc<dyn Fft<f64>>,
    scratch: Vec<Complex64>,
    lines: Vec<Complex64>,
}

impl LineFft {
    /// Plan a forward FFT of length `n` (rustfft's planner picks the algorithm).
    pub fn new(n: usize) -> LineFft {
        let fft = FftPlanner::<f64>::new().plan_fft_forward(n);
        let scratch = vec![Complex64::default(); fft.get_inplace_scratch_len()];
        LineFft {
            fft,
            scratch,
            lines: Vec::new(),
        }
    }

    /// Transform every length-N line of `lines` in place (`lines.len()` a multiple of N).
    pub fn process(&mut self, lines: &mut [Complex64]) {
        self.fft.process_with_scratch(lines, &mut self.scratch);
    }
}

/// One step of a DFT series: the c bands `(0..c, b)` of a process (`bands[q]`,
/// each I³ encoded elements) hold I whole matrix columns of length N. Gather
/// each column, FFT it (rustfft), scatter it back. This is exactly the work FTIO
/// charges as `Kernel::fft(N, I)`.
pub fn fft_band(bands: &mut [&mut [u8]], geo: Geometry, fft: &mut LineFft) {
    let (i, s, n) = (geo.i as usize, geo.square_side() as usize, geo.n() as usize);
    let e = ELEM_BYTES as usize;
    debug_assert_eq!(bands.len(), geo.c as usize);
    let mut lines = std::mem::take(&mut fft.lines);
    lines.resize(i * n, Complex64::default());
    // Inside a band, the I elements of column γ in Mini-Square row a (rows a·I..a·I+I)
    // are contiguous at element a·I² + γ·I, and contiguous in line γ at q·s + a·I.
    let run =
        |q: usize, a: usize, gamma: usize| ((a * i + gamma) * i * e, gamma * n + q * s + a * i);
    for (q, band) in bands.iter().enumerate() {
        for a in 0..i {
            for gamma in 0..i {
                let (src, dst) = run(q, a, gamma);
                let src = band[src..src + i * e].chunks_exact(e);
                for (z, ch) in lines[dst..dst + i].iter_mut().zip(src) {
                    *z = decode(ch);
                }
            }
        }
    }
    fft.process(&mut lines);
    for (q, band) in bands.iter_mut().enumerate() {
        for a in 0..i {
            for gamma in 0..i {
                let (dst, src) = run(q, a, gamma);
                let dst = band[dst..dst + i * e].chunks_exact_mut(e);
                for (ch, z) in dst.zip(&lines[src..src + i]) {
                    encode(ch, *z);
                }
            }
        }
    }
    fft.lines = lines;
}

fn decode(ch: &[u8]) -> Complex64 {
    let re = f64::from_le_bytes(ch[..8].try_into().expect("8 bytes"));
    let im = f64::from_le_bytes(ch[8..16].try_into().expect("8 bytes"));
    Complex64::new(re, im)
}

fn encode(ch: &mut [u8], z: Complex64) {
    ch[..8].copy_from_slice(&z.re.to_le_bytes());
    ch[8..16].copy_from_slice(&z.im.to_le_bytes());
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn diagonals_exchange_every_off_diagonal_pair_exactly_once() {
        for c in 1..=12u64 {
            let mut seen = vec![vec![0u32; c as usize]; c as usize];
            for d in 0..c {
                for p in 0..c {
                    match diagonal_partner(p, d, c) {
                        Some(q) => {
                            assert_eq!((p + q) % c, d, "c={c}: pair ({p},{q}) on diagonal {d}");
                            // The partner must name p back on the same diagonal.
                            assert_eq!(diagonal_partner(q, d, c), Some(p), "c={c} d={d}");
                            seen[p as usize][q as usize] += 1;
                        }
                        None => {
                            assert_eq!((2 * p) % c, d, "c={c}: p={p} idle off its diagonal {d}")
                        }
                    }
                }
            }
            for (p, row) in seen.iter().enumerate() {
                for (q, &times) in row.iter().enumerate() {
                    let want = u32::from(p != q);
                    assert_eq!(times, want, "c={c}: pair ({p},{q}) exchanged {times} times");
                }
                // Each process sits out exactly one diagonal: its own Square stays.
                let idle = (0..c)
                    .filter(|&d| diagonal_partner(p as u64, d, c).is_none())
                    .count();
                assert_eq!(idle, 1, "c={c} p={p}");
            }
        }
    }

    #[test]
    fn mini_square_pairs_cover_every_mini_square_once() {
        for i in 1..=7u64 {
            let mut seen = vec![0u32; (i * i) as usize];
            for (a, b) in mini_square_pairs(i) {
                assert!(a <= b);
                seen[(a * i + b) as usize] += 1;
                if a != b {
                    seen[(b * i + a) as usize] += 1;
                }
            }
            assert!(seen.iter().all(|&k| k == 1), "i={i}: {seen:?}");
        }
    }

    #[test]
    fn layout_offsets_tile_the_region_exactly() {
        let geo = Geometry { i: 3, c: 2 };
        let mut hit = vec![0u32; (geo.region_bytes() / ELEM_BYTES) as usize];
        for q in 0..geo.c {
            for r in 0..geo.square_side() {
                for col in 0..geo.square_side() {
                    let (b, gamma) = (col / geo.i, col % geo.i);
                    let byte = geo.band_offset(q, b) + geo.band_index(r, gamma) * ELEM_BYTES;
                    // The Mini-Square view of the same element agrees.
                    let (a, rho) = (r / geo.i, r % geo.i);
                    let via_mini = geo.mini_offset(q, a, b) + (gamma * geo.i + rho) * ELEM_BYTES;
                    assert_eq!(byte, via_mini);
                    hit[(byte / ELEM_BYTES) as usize] += 1;
                }
            }
        }
        assert!(hit.iter().all(|&k| k == 1));
    }

    #[test]
    fn transpose_mini_is_a_transpose() {
        for i in 1..=5usize {
            let mut bytes = vec![0u8; i * i * 16];
            for k in 0..i * i {
                put(&mut bytes, k, Complex64::new(k as f64, -(k as f64)));
            }
            transpose_mini(&mut bytes, i);
            for col in 0..i {
                for row in 0..i {
                    let k = (row * i + col) as f64;
                    assert_eq!(get(&bytes, col * i + row), Complex64::new(k, -k));
                }
            }
        }
    }

    #[test]
    fn fft_band_transforms_whole_columns() {
        let geo = Geometry { i: 2, c: 3 };
        let n = geo.n() as usize;
        let band_bytes = (geo.band_elems() * ELEM_BYTES) as usize;
        let mut bands: Vec<Vec<u8>> = (0..geo.c).map(|_| vec![0u8; band_bytes]).collect();
        // Column gamma = 1 of the band gets the impulse at row 1: its DFT is e^{-2πik/N}.
        put(
            &mut bands[0],
            geo.band_index(1, 1) as usize,
            Complex64::new(1.0, 0.0),
        );
        let mut slices: Vec<&mut [u8]> = bands.iter_mut().map(|b| b.as_mut_slice()).collect();
        fft_band(&mut slices, geo, &mut LineFft::new(n));
        let s = geo.square_side();
        for k in 0..geo.n() {
            let (q, r) = (k / s, k % s);
            let want =
                Complex64::from_polar(1.0, -2.0 * std::f64::consts::PI * k as f64 / n as f64);
            let got1 = get(&bands[q as usize], geo.band_index(r, 1) as usize);
            let got0 = get(&bands[q as usize], geo.band_index(r, 0) as usize);
            assert!((got1 - want).norm() < 1e-12, "k={k}: {got1} vs {want}");
            assert_eq!(got0, Complex64::default());
        }
    }
}
