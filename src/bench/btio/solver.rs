//! The computation BTIO runs between dumps in real mode: block-tridiagonal
//! line solves with 5×5 blocks over the rank's cells, the core of NPB BT's
//! `x_solve`/`y_solve`/`z_solve` (Beam–Warming approximate factorisation).
//!
//! What it is: for every line of a cell in one direction, per point, form the
//! three 5×5 flux-Jacobian blocks `A, B, C` from the solution `u` at the point
//! and its two neighbours and the right-hand side from a second-difference
//! dissipation term plus a forcing term; eliminate forward (`B −= A·C′`,
//! `r −= A·r′`, Gauss–Jordan of `B` against `[C | r]`, NPB's `binvcrhs`); then
//! substitute backward (`r −= C′·r_next`) and relax `u` towards the solution. The
//! per-point arrays are NPB's: `u`, `rhs`, `forcing` (5 doubles each) and the full
//! 3-D `lhsc` (25 doubles), 320 bytes per point, like NPB 3.x MPI BT's footprint
//! (≈ 45 doubles per point with its auxiliary arrays).
//!
//! What it is not: BT itself. Cells are solved independently (no exchange of
//! boundary data between ranks), and the results are not NPB's δu verification
//! values. Its job is to spend NPB's operation count
//! `3478.8·N³ − 17655.7·navg² + 28023.7·navg` per step on a realistic memory
//! access pattern: [`BtSolver::run`] solves whole lines, sweeping x, then y, then
//! z through the cells and continuing where the last call stopped, until the
//! requested flops are spent; the shortfall or excess (under one line) carries
//! over to the next call, so the long-run count is NPB's.
//!
//! Flops are counted as additions, subtractions, multiplications and divisions;
//! [`line_flops`] is the exact count of one line solve (checked by a test that
//! counts every operation).

use std::ops::{Add, Div, Mul, Sub};

use super::layout::RankLayout;

/// The arithmetic the solver needs; `f64` in use, an operation counter in tests.
pub trait Real:
    Copy + Add<Output = Self> + Sub<Output = Self> + Mul<Output = Self> + Div<Output = Self>
{
    /// A constant (not counted as a flop).
    fn lit(v: f64) -> Self;
    /// The value as `f64` (not counted).
    fn to_f64(self) -> f64;
}

impl Real for f64 {
    fn lit(v: f64) -> f64 {
        v
    }
    fn to_f64(self) -> f64 {
        self
    }
}

type V5<T> = [T; 5];
type M5<T> = [[T; 5]; 5];

/// Coefficients of the model operator (dimensionless; chosen so that `B` is
/// diagonally dominant and the iteration stays bounded).
const C1: f64 = 0.01; // Jacobian scale
const DT_TX: f64 = 0.05; // convective coupling to the neighbours
const DT_TX1: f64 = 0.1; // viscous coupling to the neighbours
const DSSP: f64 = 0.25; // dissipation in the right-hand side
const RELAX: f64 = 0.1; // relaxation of u towards the solution

/// Flops of one point solve that has both a predecessor and a successor.
const FLOPS_INTERIOR: u64 = 1020;
/// Flops not spent at the first point (no forward elimination).
const FLOPS_FIRST_SAVED: u64 = 300;
/// Flops not spent at the last point (no back substitution).
const FLOPS_LAST_SAVED: u64 = 50;

/// Exact flops of one line solve of `n ≥ 1` points.
pub fn line_flops(n: u64) -> u64 {
    n * FLOPS_INTERIOR - FLOPS_FIRST_SAVED - FLOPS_LAST_SAVED
}

/// `c1·u[m]·u[k]`: a flux-Jacobian-like block (50 flops).
fn jac<T: Real>(u: &V5<T>) -> M5<T> {
    let c1 = T::lit(C1);
    let mut j = [[T::lit(0.0); 5]; 5];
    for m in 0..5 {
        for k in 0..5 {
            j[m][k] = c1 * u[m] * u[k];
        }
    }
    j
}

/// Solve `B·X = [C | r]` in place by Gauss–Jordan without pivoting (`binvcrhs`).
// Indices mirror the algebra: row p is read while row q is updated.
#[allow(clippy::needless_range_loop)]
fn binvcrhs<T: Real>(b: &mut M5<T>, c: &mut M5<T>, r: &mut V5<T>) {
    for p in 0..5 {
        let inv = T::lit(1.0) / b[p][p];
        for k in p + 1..5 {
            b[p][k] = b[p][k] * inv;
        }
        for k in 0..5 {
            c[p][k] = c[p][k] * inv;
        }
        r[p] = r[p] * inv;
        for q in 0..5 {
            if q == p {
                continue;
            }
            let f = b[q][p];
            for k in p + 1..5 {
                b[q][k] = b[q][k] - f * b[p][k];
            }
            for k in 0..5 {
                c[q][k] = c[q][k] - f * c[p][k];
            }
            r[q] = r[q] - f * r[p];
        }
    }
}

/// One cell's state.
struct CellState<T> {
    size: [usize; 3],
    u: Vec<V5<T>>,
    rhs: Vec<V5<T>>,
    forcing: Vec<V5<T>>,
    lhsc: Vec<M5<T>>,
}

impl<T: Real> CellState<T> {
    fn new(size: [u64; 3], seed: u64) -> CellState<T> {
        let size = size.map(|s| s as usize);
        let n = size[0] * size[1] * size[2];
        let u = (0..n)
            .map(|i| {
                std::array::from_fn(|m| T::lit(1.0 + 0.01 * ((seed as usize + i + m) % 7) as f64))
            })
            .collect();
        let forcing = (0..n)
            .map(|i| std::array::from_fn(|m| T::lit(0.5 + 0.001 * ((i + m) % 5) as f64)))
            .collect();
        CellState {
            size,
            u,
            rhs: vec![[T::lit(0.0); 5]; n],
            forcing,
            lhsc: vec![[[T::lit(0.0); 5]; 5]; n],
        }
    }

    /// Number of lines along `dir`.
    fn lines(&self, dir: usize) -> usize {
        let [sx, sy, sz] = self.size;
        [sy * sz, sx * sz, sx * sy][dir]
    }

    /// Start index and stride of line `l` along `dir`.
    fn line(&self, dir: usize, l: usize) -> (usize, usize, usize) {
        let [sx, sy, _] = self.size;
        match dir {
            0 => (l * sx, 1, sx),
            1 => ((l / sx) * sx * sy + l % sx, sx, sy),
            _ => (l, sx * sy, self.size[2]),
        }
    }

    /// Solve line `l` along `dir`; returns a checksum of the update.
    fn solve_line(&mut self, dir: usize, l: usize) -> f64 {
        let (start, stride, n) = self.line(dir, l);
        let (a_c, b_c) = (T::lit(DT_TX), T::lit(DT_TX1));
        let idx = |i: usize| start + i * stride;
        // Forward elimination.
        for i in 0..n {
            let here = self.u[idx(i)];
            let prev = if i > 0 { self.u[idx(i - 1)] } else { here };
            let next = if i + 1 < n { self.u[idx(i + 1)] } else { here };
            let (ja, jb, jc) = (jac(&prev), jac(&here), jac(&next));
            let mut a = [[T::lit(0.0); 5]; 5];
            let mut b = [[T::lit(0.0); 5]; 5];
            let mut c = [[T::lit(0.0); 5]; 5];
            for m in 0..5 {
                for k in 0..5 {
                    a[m][k] = T::lit(0.0) - a_c * ja[m][k];
                    b[m][k] = b_c * jb[m][k];
                    c[m][k] = a_c * jc[m][k];
                }
                a[m][m] = a[m][m] - b_c;
                b[m][m] = b[m][m] + T::lit(1.0 + 2.0 * DT_TX1);
                c[m][m] = c[m][m] - b_c;
            }
            let f = self.forcing[idx(i)];
            let mut r: V5<T> = std::array::from_fn(|m| {
                f[m] + T::lit(DSSP) * (prev[m] - T::lit(2.0) * here[m] + next[m])
            });
            if i > 0 {
                let cp = self.lhsc[idx(i - 1)];
                let rp = self.rhs[idx(i - 1)];
                for m in 0..5 {
                    for k in 0..5 {
                        let mut s = a[m][0] * cp[0][k];
                        for q in 1..5 {
                            s = s + a[m][q] * cp[q][k];
                        }
                        b[m][k] = b[m][k] - s;
                    }
                    let mut s = a[m][0] * rp[0];
                    for q in 1..5 {
                        s = s + a[m][q] * rp[q];
                    }
                    r[m] = r[m] - s;
                }
            }
            binvcrhs(&mut b, &mut c, &mut r);
            self.lhsc[idx(i)] = c;
            self.rhs[idx(i)] = r;
        }
        // Back substitution and relaxation.
        let mut sum = 0.0;
        for i in (0..n).rev() {
            let mut r = self.rhs[idx(i)];
            if i + 1 < n {
                let rn = self.rhs[idx(i + 1)];
                let cp = self.lhsc[idx(i)];
                for m in 0..5 {
                    for k in 0..5 {
                        r[m] = r[m] - cp[m][k] * rn[k];
                    }
                }
                self.rhs[idx(i)] = r;
            }
            let u = &mut self.u[idx(i)];
            for m in 0..5 {
                u[m] = u[m] + T::lit(RELAX) * (r[m] - u[m]);
            }
            sum += u[0].to_f64();
        }
        sum
    }
}

/// The rank's solver state and its position in the x → y → z sweep.
pub struct BtSolver<T = f64> {
    cells: Vec<CellState<T>>,
    /// (direction, cell, line) of the next line to solve.
    cursor: (usize, usize, usize),
    /// Flops requested but not yet spent (negative: spent in advance).
    budget: f64,
}

impl<T: Real> BtSolver<T> {
    /// State for the rank's cells (allocated and initialised here: call it where
    /// the work is really done, never in the twin).
    pub fn new(layout: &RankLayout) -> BtSolver<T> {
        let cells = layout
            .cells
            .iter()
            .enumerate()
            .map(|(c, cell)| CellState::new(cell.size, c as u64))
            .collect();
        BtSolver {
            cells,
            cursor: (0, 0, 0),
            budget: 0.0,
        }
    }

    /// Spend `flops` on line solves, continuing the sweep; returns a checksum.
    pub fn run(&mut self, flops: f64) -> f64 {
        self.budget += flops;
        let mut sum = 0.0;
        loop {
            let (dir, c, l) = self.cursor;
            let cost = line_flops(self.cells[c].size[dir] as u64) as f64;
            // Solve the line when that leaves the budget closer to zero.
            if self.budget < cost / 2.0 {
                return sum;
            }
            sum += self.cells[c].solve_line(dir, l);
            self.budget -= cost;
            self.cursor = if l + 1 < self.cells[c].lines(dir) {
                (dir, c, l + 1)
            } else if c + 1 < self.cells.len() {
                (dir, c + 1, 0)
            } else {
                ((dir + 1) % 3, 0, 0)
            };
        }
    }
}

#[cfg(test)]
mod tests {
    use std::cell::Cell as StdCell;

    use super::super::decomp::Decomposition;
    use super::*;

    thread_local! {
        static FLOPS: StdCell<u64> = const { StdCell::new(0) };
    }

    /// An `f64` that counts every arithmetic operation.
    #[derive(Clone, Copy, Debug)]
    struct Counted(f64);

    fn tick() {
        FLOPS.with(|f| f.set(f.get() + 1));
    }

    macro_rules! counted_op {
        ($tr:ident, $f:ident, $op:tt) => {
            impl $tr for Counted {
                type Output = Counted;
                fn $f(self, o: Counted) -> Counted {
                    tick();
                    Counted(self.0 $op o.0)
                }
            }
        };
    }
    counted_op!(Add, add, +);
    counted_op!(Sub, sub, -);
    counted_op!(Mul, mul, *);
    counted_op!(Div, div, /);

    impl Real for Counted {
        fn lit(v: f64) -> Counted {
            Counted(v)
        }
        fn to_f64(self) -> f64 {
            self.0
        }
    }

    #[test]
    fn line_flops_is_the_counted_cost() {
        for n in [1usize, 2, 3, 7, 22] {
            let mut cell: CellState<Counted> = CellState::new([n as u64, 3, 4], 0);
            FLOPS.with(|f| f.set(0));
            cell.solve_line(0, 5);
            let counted = FLOPS.with(|f| f.get());
            assert_eq!(counted, line_flops(n as u64), "n = {n}");
        }
        // The same cost along y and z.
        let mut cell: CellState<Counted> = CellState::new([3, 9, 11], 1);
        FLOPS.with(|f| f.set(0));
        cell.solve_line(1, 4);
        assert_eq!(FLOPS.with(|f| f.get()), line_flops(9));
        FLOPS.with(|f| f.set(0));
        cell.solve_line(2, 8);
        assert_eq!(FLOPS.with(|f| f.get()), line_flops(11));
    }

    #[test]
    fn run_spends_the_requested_flops_and_stays_bounded() {
        let grid = [24, 24, 24];
        let d = Decomposition::new(grid, 4).unwrap();
        let layout = RankLayout::new(grid, d.cells(1));
        let mut s: BtSolver<f64> = BtSolver::new(&layout);
        // NPB's count for one step, this rank's share.
        let n3 = 24.0f64.powi(3);
        let per_step = (3478.8 * n3 - 17655.7 * 24.0 * 24.0 + 28023.7 * 24.0) / 4.0;
        let mut spent_lines = 0.0;
        for _ in 0..10 {
            let before = s.budget;
            let sum = s.run(per_step);
            assert!(sum.is_finite());
            spent_lines += before + per_step - s.budget;
        }
        // Within half a line of the request.
        assert!((spent_lines - 10.0 * per_step).abs() <= line_flops(12) as f64 / 2.0);
        for c in &s.cells {
            assert!(
                c.u.iter()
                    .flatten()
                    .all(|v| v.is_finite() && v.abs() < 10.0)
            );
        }
    }
}
