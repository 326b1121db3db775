//! Floating-point operations of each part of a BT step on one cell, counted
//! from the code (additions, subtractions, multiplications, divisions; a test
//! runs the solver on an operation-counting `Real` and compares): what the
//! twin charges to the compute model and what calibration divides by.
//!
//! NPB's own count, `3478.8·N³ − 17655.7·navg² + 28023.7·navg` per step
//! ([`npb_step`]), is what Mop/s is reported in, as NPB reports it; the counts
//! here are the work this solver does: 1.5–2.7 % above NPB's count on the
//! classes, more with more ranks (the Jacobians and auxiliaries of the ghost
//! points).

use super::super::decomp::Cell;

/// The flux and viscous Jacobians at one point.
pub const JACOBIANS: u64 = 80;
/// The three 5×5 blocks `A`, `B`, `C` of one point.
pub const LHS: u64 = 240;
/// `binvcrhs`: Gauss–Jordan of a block against a block and a vector.
pub const BINVCRHS: u64 = 365;
/// `binvrhs`: Gauss–Jordan of a block against a vector.
pub const BINVRHS: u64 = 140;
/// `matvec_sub`.
pub const MATVEC_SUB: u64 = 50;
/// `matmul_sub`.
pub const MATMUL_SUB: u64 = 250;
/// One point of back substitution (`rhs −= C′·rhs_next`).
pub const BACKSUB: u64 = 50;
/// `compute_rhs`' auxiliaries (`rho_i`, `us`, `vs`, `ws`, `square`, `qs`) at one point.
pub const AUX: u64 = 12;
/// The flux differences of one direction at one interior point.
pub const FLUX: u64 = 95;
/// `rhs *= dt`, or `add`, at one point.
pub const FIVE: u64 = 5;

/// A cell as the counts need it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Shape {
    /// Points per direction.
    pub size: [u64; 3],
    /// 1 where the cell starts at the grid's boundary.
    pub start: [u64; 3],
    /// 1 where the cell ends at the grid's boundary.
    pub end: [u64; 3],
}

impl Shape {
    /// The shape of a cell of a `p × p × p` partition.
    pub fn of(cell: &Cell, p: u64) -> Shape {
        Shape {
            size: cell.size,
            start: cell.coord.map(|c| u64::from(c == 0)),
            end: cell.coord.map(|c| u64::from(c + 1 == p)),
        }
    }

    /// Interior points along `dir`.
    fn interior(&self, dir: usize) -> u64 {
        self.size[dir] - self.start[dir] - self.end[dir]
    }

    /// Lines along `dir` (interior points of the other two directions).
    fn lines(&self, dir: usize) -> u64 {
        (0..3)
            .filter(|&d| d != dir)
            .map(|d| self.interior(d))
            .product()
    }

    /// Interior points of the cell.
    fn interior_points(&self) -> u64 {
        (0..3).map(|d| self.interior(d)).product()
    }
}

/// The dissipation at position `t` of a line (five components; the stencil
/// cases of `rhs.rs`).
fn dissipation(t: u64, n: u64, start: bool, end: bool) -> u64 {
    let first = if start && t == 1 {
        6
    } else if start && t == 2 {
        8
    } else if t >= 3 * u64::from(start) && t + 3 * u64::from(end) < n {
        9
    } else {
        0
    };
    let second = if end && t + 3 == n {
        8
    } else if end && t + 2 == n {
        6
    } else {
        0
    };
    5 * (first + second)
}

/// `compute_rhs` on one cell.
pub fn rhs(s: &Shape) -> f64 {
    let ghosted: u64 = s.size.iter().map(|n| n + 2).product();
    let mut f = AUX * ghosted + FIVE * s.interior_points();
    for dir in 0..3 {
        let n = s.size[dir];
        let (start, end) = (s.start[dir] == 1, s.end[dir] == 1);
        let per_line: u64 = (s.start[dir]..n - s.end[dir])
            .map(|t| dissipation(t, n, start, end))
            .sum();
        f += FLUX * s.interior_points() + per_line * s.lines(dir);
    }
    f as f64
}

/// Forward elimination along `dir` on one cell.
pub fn solve_forward(s: &Shape, dir: usize) -> f64 {
    let (start, end) = (s.start[dir], s.end[dir]);
    let inner = s.interior(dir);
    let per_line = (inner + 2) * JACOBIANS
        + inner * (LHS + MATVEC_SUB + MATMUL_SUB + BINVCRHS)
        + start * BINVCRHS
        + end * (MATVEC_SUB + MATMUL_SUB + BINVRHS);
    (per_line * s.lines(dir)) as f64
}

/// Back substitution along `dir` on one cell.
pub fn solve_backward(s: &Shape, dir: usize) -> f64 {
    let per_line = (s.size[dir] - s.end[dir]) * BACKSUB;
    (per_line * s.lines(dir)) as f64
}

/// Forward elimination and back substitution along `dir` on one cell.
pub fn solve(s: &Shape, dir: usize) -> f64 {
    solve_forward(s, dir) + solve_backward(s, dir)
}

/// `add` on one cell.
pub fn add(s: &Shape) -> f64 {
    (FIVE * s.interior_points()) as f64
}

/// One whole step (`adi`) on a rank's cells.
pub fn step(shapes: &[Shape]) -> f64 {
    shapes
        .iter()
        .map(|s| rhs(s) + (0..3).map(|d| solve(s, d)).sum::<f64>() + add(s))
        .sum()
}

/// NPB's operation count of one BT time step over the whole grid:
/// `3478.8·N³ − 17655.7·navg² + 28023.7·navg`, `N³ = nx·ny·nz`, `navg = (nx+ny+nz)/3`.
pub fn npb_step(grid: [u64; 3]) -> f64 {
    let n3 = grid.iter().product::<u64>() as f64;
    let navg = grid.iter().sum::<u64>() as f64 / 3.0;
    3478.8 * n3 - 17655.7 * navg * navg + 28023.7 * navg
}
