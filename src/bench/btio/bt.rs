//! NPB BT: the solver BTIO runs between its dumps, as NPB 3.3 MPI BT defines it.
//!
//! What it is: the three-dimensional compressible Navier–Stokes equations
//! solved by Beam–Warming approximate factorisation on a uniform grid, with a
//! forcing term chosen so that a known polynomial ([`Consts::exact_solution`])
//! is the steady solution. One time step (NPB's `adi`) is
//!
//! 1. `copy_faces`: every rank sends the two boundary planes of `u` of its cells
//!    to the owners of the neighbouring cells ([`BtRank::pack_faces`],
//!    [`BtRank::unpack_faces`]), then `compute_rhs` ([`BtRank::compute_rhs`]):
//!    central differences of the fluxes plus fourth-order dissipation, times `dt`;
//! 2. `x_solve`, `y_solve`, `z_solve`: along every grid line of a direction,
//!    a block-tridiagonal system with 5×5 blocks built from the flux Jacobians
//!    (`fjac`) and viscous Jacobians (`njac`); forward elimination through the
//!    cells of the line in order, back substitution the other way. A line
//!    crosses `p` cells owned by `p` different ranks, so the sweep is a
//!    pipeline over NPB's stages ([`BtRank::solve_cell`],
//!    [`BtRank::backsubstitute_cell`]): a cell's elimination starts from the
//!    last `lhsc` block and right-hand side of its predecessor's cell, its back
//!    substitution from the first solution plane of its successor's cell;
//! 3. `add`: `u += rhs` on the interior points.
//!
//! Cells are NPB's multi-partition cells ([`super::decomp`]); each is stored
//! with two ghost planes on every side, points in Fortran order (x fastest),
//! five components per point, 5×5 blocks row-major. The arithmetic is
//! NPB's, expression by expression, so the residual and error norms reproduce
//! NPB's verification values ([`verify`]) to about 1e-12.
//!
//! Everything is generic over [`Real`]: `f64` in use, an operation counter in
//! the tests that check the flop counts the twin charges ([`flops`]).
//!
//! Not for: communication or time. [`BtRank`] packs and unpacks the messages;
//! the program in `program.rs` moves them through `IoCtx` and decides what
//! runs where.

use std::ops::{Add, Div, Mul, Neg, Sub};

use super::decomp::Cell as DecompCell;

pub mod flops;
pub(super) mod rhs;
pub(super) mod solve;
#[cfg(test)]
mod tests;
pub mod verify;

/// The arithmetic BT needs; `f64` in use, an operation counter in tests.
pub trait Real:
    Copy
    + Add<Output = Self>
    + Sub<Output = Self>
    + Mul<Output = Self>
    + Div<Output = Self>
    + Neg<Output = Self>
{
    /// A constant (not counted as a flop).
    fn lit(v: f64) -> Self;
    /// The value as `f64` (not counted).
    fn to_f64(self) -> f64;
}

impl Real for f64 {
    #[inline(always)]
    fn lit(v: f64) -> f64 {
        v
    }
    #[inline(always)]
    fn to_f64(self) -> f64 {
        self
    }
}

/// Five components of one point.
pub type V5<T> = [T; 5];
/// A 5×5 block, `[row][column]`.
pub type M5<T> = [[T; 5]; 5];

/// NPB's `set_constants`, per direction where NPB has `x`, `y`, `z` copies.
#[derive(Debug, Clone)]
pub struct Consts<T> {
    /// Time step.
    pub dt: T,
    /// `ce(m, 1..13)`: the exact solution's coefficients.
    ce: [[f64; 13]; 5],
    /// `1 / (n − 1)` per direction (`dnxm1`, …).
    pub dnm1: [f64; 3],
    c1: T,
    c2: T,
    c1345: T,
    c3c4: T,
    con43: T,
    dssp: T,
    /// `tx2`, `ty2`, `tz2`.
    t2: [T; 3],
    /// `dx1tx1 … dx5tx1` and the y, z copies.
    dt1: [[T; 5]; 3],
    /// `xxcon1 … xxcon5` and the y, z copies.
    con: [[T; 5]; 3],
    /// `xxcon2·con43` and the y, z copies.
    con2_43: [T; 3],
    /// `dx1 … dx5` and the y, z copies (the lhs's dissipation).
    d: [[T; 5]; 3],
    /// `dt·tx1` and copies (the lhs's `tmp1`).
    dtt1: [T; 3],
    /// `dt·tx2` and copies (the lhs's `tmp2`).
    dtt2: [T; 3],
}

impl<T: Real> Consts<T> {
    /// The constants for a `grid` and time step `dt`, as `set_constants` sets them.
    pub fn new(grid: [usize; 3], dt: f64) -> Consts<T> {
        let ce = [
            [
                2.0, 0.0, 0.0, 4.0, 5.0, 3.0, 0.5, 0.02, 0.01, 0.03, 0.5, 0.4, 0.3,
            ],
            [
                1.0, 0.0, 0.0, 0.0, 1.0, 2.0, 3.0, 0.01, 0.03, 0.02, 0.4, 0.3, 0.5,
            ],
            [
                2.0, 2.0, 0.0, 0.0, 0.0, 2.0, 3.0, 0.04, 0.03, 0.05, 0.3, 0.5, 0.4,
            ],
            [
                2.0, 2.0, 0.0, 0.0, 0.0, 2.0, 3.0, 0.03, 0.05, 0.04, 0.2, 0.1, 0.3,
            ],
            [
                5.0, 4.0, 3.0, 2.0, 0.1, 0.4, 0.3, 0.05, 0.04, 0.03, 0.1, 0.3, 0.2,
            ],
        ];
        let (c1, c2, c3, c4, c5) = (1.4, 0.4, 0.1, 1.0, 1.4);
        let dnm1 = grid.map(|n| 1.0 / (n as f64 - 1.0));
        let c1c5 = c1 * c5;
        let c3c4 = c3 * c4;
        let c1345 = c1c5 * c3c4;
        let conz1 = 1.0 - c1c5;
        let con43 = 4.0 / 3.0;
        let con16 = 1.0 / 6.0;
        let t1 = dnm1.map(|d| 1.0 / (d * d));
        let t2 = dnm1.map(|d| 1.0 / (2.0 * d));
        let t3 = dnm1.map(|d| 1.0 / d);
        // dx = dy = 0.75, dz = 1.0 for all five components.
        let d = [0.75, 0.75, 1.0];
        let dssp = 0.25 * f64::max(d[0], f64::max(d[1], d[2]));
        let lit = T::lit;
        let con = std::array::from_fn(|dir| {
            let c3c4t3 = c3c4 * t3[dir];
            [
                c3c4t3 * con43 * t3[dir],
                c3c4t3 * t3[dir],
                c3c4t3 * conz1 * t3[dir],
                c3c4t3 * con16 * t3[dir],
                c3c4t3 * c1c5 * t3[dir],
            ]
            .map(lit)
        });
        Consts {
            dt: lit(dt),
            ce,
            dnm1,
            c1: lit(c1),
            c2: lit(c2),
            c1345: lit(c1345),
            c3c4: lit(c3c4),
            con43: lit(con43),
            dssp: lit(dssp),
            t2: t2.map(lit),
            dt1: std::array::from_fn(|dir| [lit(d[dir] * t1[dir]); 5]),
            con2_43: std::array::from_fn(|dir| lit(c3c4 * t3[dir] * t3[dir] * con43)),
            con,
            d: std::array::from_fn(|dir| [lit(d[dir]); 5]),
            dtt1: t1.map(|t| lit(dt * t)),
            dtt2: t2.map(|t| lit(dt * t)),
        }
    }

    /// NPB's `exact_solution` at `(xi, eta, zeta)`.
    pub fn exact_solution(&self, xi: T, eta: T, zeta: T) -> V5<T> {
        std::array::from_fn(|m| {
            let ce = self.ce[m].map(T::lit);
            ce[0]
                + xi * (ce[1] + xi * (ce[4] + xi * (ce[7] + xi * ce[10])))
                + eta * (ce[2] + eta * (ce[5] + eta * (ce[8] + eta * ce[11])))
                + zeta * (ce[3] + zeta * (ce[6] + zeta * (ce[9] + zeta * ce[12])))
        })
    }
}

/// Ghost planes on each side of a cell.
const GHOST: usize = 2;

/// One cell's arrays (NPB's `u`, `rhs`, `lhsc`, `forcing` and `compute_rhs`'s
/// auxiliaries), all over the cell plus [`GHOST`] planes each side.
pub struct CellArrays<T> {
    /// Points per direction.
    pub size: [usize; 3],
    /// First global point per direction.
    pub low: [usize; 3],
    /// 0-based cell coordinates.
    pub coord: [usize; 3],
    /// 1 where the cell starts at the grid boundary in that direction (NPB's `start`).
    pub start: [usize; 3],
    /// 1 where the cell ends at the grid boundary (NPB's `end`).
    pub end: [usize; 3],
    /// Strides of x, y, z in points.
    stride: [usize; 3],
    u: Vec<V5<T>>,
    rhs: Vec<V5<T>>,
    forcing: Vec<V5<T>>,
    lhsc: Vec<M5<T>>,
    rho_i: Vec<T>,
    /// `us`, `vs`, `ws`: the velocities.
    vel: [Vec<T>; 3],
    qs: Vec<T>,
    square: Vec<T>,
}

impl<T: Real> CellArrays<T> {
    fn new(cell: &DecompCell, p: usize) -> CellArrays<T> {
        let size = cell.size.map(|s| s as usize);
        let low = cell.low.map(|s| s as usize);
        let coord = cell.coord.map(|s| s as usize);
        let dims = size.map(|s| s + 2 * GHOST);
        let n = dims[0] * dims[1] * dims[2];
        let zero = T::lit(0.0);
        CellArrays {
            size,
            low,
            coord,
            start: coord.map(|c| usize::from(c == 0)),
            end: coord.map(|c| usize::from(c + 1 == p)),
            stride: [1, dims[0], dims[0] * dims[1]],
            u: vec![[T::lit(1.0); 5]; n],
            rhs: vec![[zero; 5]; n],
            forcing: vec![[zero; 5]; n],
            lhsc: vec![[[zero; 5]; 5]; n],
            rho_i: vec![zero; n],
            vel: std::array::from_fn(|_| vec![zero; n]),
            qs: vec![zero; n],
            square: vec![zero; n],
        }
    }

    /// Index of local point `(i, j, k)`; each may be down to `−GHOST`.
    #[inline(always)]
    fn at(&self, i: isize, j: isize, k: isize) -> usize {
        let g = GHOST as isize;
        ((i + g) as usize) * self.stride[0]
            + ((j + g) as usize) * self.stride[1]
            + ((k + g) as usize) * self.stride[2]
    }

    /// Index of the point with coordinate `t` along `dir` and `a`, `b` along the
    /// other two directions in increasing order.
    #[inline(always)]
    fn at_dir(&self, dir: usize, t: isize, a: isize, b: isize) -> usize {
        match dir {
            0 => self.at(t, a, b),
            1 => self.at(a, t, b),
            _ => self.at(a, b, t),
        }
    }

    /// Interior range along `dir` (NPB's `start .. size − end − 1`).
    fn interior(&self, dir: usize) -> std::ops::Range<isize> {
        self.start[dir] as isize..(self.size[dir] - self.end[dir]) as isize
    }

    /// The interior points in Fortran order.
    fn interior_points(&self) -> impl Iterator<Item = usize> + '_ {
        self.interior(2).flat_map(move |k| {
            self.interior(1)
                .flat_map(move |j| self.interior(0).map(move |i| self.at(i, j, k)))
        })
    }

    /// The cell's own points (no ghosts) in Fortran order.
    fn own_points(&self) -> impl Iterator<Item = usize> + '_ {
        let [sx, sy, sz] = self.size.map(|s| s as isize);
        (0..sz).flat_map(move |k| (0..sy).flat_map(move |j| (0..sx).map(move |i| self.at(i, j, k))))
    }

    /// Grid coordinates `(xi, eta, zeta)` of local point `(i, j, k)`.
    fn coords(&self, c: &Consts<T>, ijk: [isize; 3]) -> [T; 3] {
        std::array::from_fn(|d| T::lit((ijk[d] + self.low[d] as isize) as f64 * c.dnm1[d]))
    }

    /// NPB's `initialize`: 1 everywhere, the transfinite interpolation of the
    /// boundary values inside, the exact solution on the grid's faces.
    fn initialize(&mut self, c: &Consts<T>) {
        self.u.fill([T::lit(1.0); 5]);
        let [sx, sy, sz] = self.size.map(|s| s as isize);
        let (one, zero) = (T::lit(1.0), T::lit(0.0));
        for k in 0..sz {
            for j in 0..sy {
                for i in 0..sx {
                    let [xi, eta, zeta] = self.coords(c, [i, j, k]);
                    let face = |d: usize, side: T| match d {
                        0 => c.exact_solution(side, eta, zeta),
                        1 => c.exact_solution(xi, side, zeta),
                        _ => c.exact_solution(xi, eta, side),
                    };
                    let pf: [[V5<T>; 2]; 3] =
                        std::array::from_fn(|d| [face(d, zero), face(d, one)]);
                    let at = self.at(i, j, k);
                    for m in 0..5 {
                        let pxi = xi * pf[0][1][m] + (one - xi) * pf[0][0][m];
                        let peta = eta * pf[1][1][m] + (one - eta) * pf[1][0][m];
                        let pzeta = zeta * pf[2][1][m] + (one - zeta) * pf[2][0][m];
                        self.u[at][m] =
                            pxi + peta + pzeta - pxi * peta - pxi * pzeta - peta * pzeta
                                + pxi * peta * pzeta;
                    }
                }
            }
        }
        // The grid's boundary faces hold the exact solution.
        for dir in 0..3 {
            for (is_boundary, t, side) in [
                (self.start[dir] == 1, 0, zero),
                (self.end[dir] == 1, self.size[dir] as isize - 1, one),
            ] {
                if !is_boundary {
                    continue;
                }
                let (a, b) = others(dir);
                for pb in 0..self.size[b] as isize {
                    for pa in 0..self.size[a] as isize {
                        let at = self.at_dir(dir, t, pa, pb);
                        let mut ijk = [0; 3];
                        (ijk[dir], ijk[a], ijk[b]) = (t, pa, pb);
                        let mut x = self.coords(c, ijk);
                        x[dir] = side;
                        self.u[at] = c.exact_solution(x[0], x[1], x[2]);
                    }
                }
            }
        }
    }

    /// Sums over the cell's points of `(u − exact)²` per component (`error_norm`).
    fn error_sums(&self, c: &Consts<T>, u: impl Fn(usize) -> V5<T>) -> [f64; 5] {
        let mut sums = [0.0; 5];
        let [sx, sy, sz] = self.size.map(|s| s as isize);
        let mut n = 0;
        for k in 0..sz {
            for j in 0..sy {
                for i in 0..sx {
                    let [xi, eta, zeta] = self.coords(c, [i, j, k]);
                    let exact = c.exact_solution(xi, eta, zeta);
                    let got = u(n);
                    for m in 0..5 {
                        let add = (got[m] - exact[m]).to_f64();
                        sums[m] += add * add;
                    }
                    n += 1;
                }
            }
        }
        sums
    }
}

/// `sums += s`, component by component (per-rank or per-dump norm sums).
pub fn add5(sums: &mut [f64; 5], s: [f64; 5]) {
    for (a, b) in sums.iter_mut().zip(s) {
        *a += b;
    }
}

/// The other two directions of `dir`, in increasing order.
pub fn others(dir: usize) -> (usize, usize) {
    match dir {
        0 => (1, 2),
        1 => (0, 2),
        _ => (0, 1),
    }
}

/// One rank's BT state: its cells and the constants.
pub struct BtRank<T = f64> {
    /// The constants of the run.
    pub consts: Consts<T>,
    /// The rank's cells in NPB's cell order.
    pub cells: Vec<CellArrays<T>>,
    /// Grid points per direction.
    pub grid: [usize; 3],
    /// Cells per direction (and per rank).
    pub p: usize,
}

impl<T: Real> BtRank<T> {
    /// A rank's state for `cells` of a `p × p × p` partition of `grid`, set up as
    /// NPB's `bt.f` does before the time steps: `initialize`, `lhsinit`, `exact_rhs`.
    pub fn new(grid: [u64; 3], dt: f64, cells: &[DecompCell], p: usize) -> BtRank<T> {
        let grid = grid.map(|n| n as usize);
        let consts = Consts::new(grid, dt);
        let mut cells: Vec<CellArrays<T>> = cells.iter().map(|c| CellArrays::new(c, p)).collect();
        for cell in &mut cells {
            cell.initialize(&consts);
            cell.exact_rhs(&consts);
        }
        BtRank {
            consts,
            cells,
            grid,
            p,
        }
    }

    /// NPB's second `initialize` after the warm-up step.
    pub fn initialize(&mut self) {
        for cell in &mut self.cells {
            cell.initialize(&self.consts);
        }
    }

    /// The cell whose coordinate along `dir` is `stage` (NPB's `slice`).
    pub fn slice(&self, dir: usize, stage: usize) -> usize {
        self.cells
            .iter()
            .position(|c| c.coord[dir] == stage)
            .expect("every rank owns one cell per slab")
    }

    /// `copy_faces`' message along `dir` to the successor (`forward`) or the
    /// predecessor: the two planes of `u` next to that side of every cell
    /// with a neighbour there, in cell order, as doubles.
    pub fn pack_faces(&self, dir: usize, forward: bool) -> Vec<f64> {
        let mut out = Vec::new();
        for cell in &self.cells {
            let has = if forward {
                cell.end[dir] == 0
            } else {
                cell.start[dir] == 0
            };
            if !has {
                continue;
            }
            let n = cell.size[dir] as isize;
            let planes = if forward { [n - 2, n - 1] } else { [0, 1] };
            cell.for_face(dir, planes, |at| out.extend(cell.u[at].map(T::to_f64)));
        }
        out
    }

    /// Store a `copy_faces` message from the predecessor along `dir`
    /// (`forward`, into the low ghost planes) or from the successor.
    pub fn unpack_faces(&mut self, dir: usize, forward: bool, data: &[f64]) {
        let mut it = data.chunks_exact(5);
        for cell in &mut self.cells {
            let has = if forward {
                cell.start[dir] == 0
            } else {
                cell.end[dir] == 0
            };
            if !has {
                continue;
            }
            let n = cell.size[dir] as isize;
            let planes = if forward { [-2, -1] } else { [n, n + 1] };
            let mut ats = Vec::new();
            cell.for_face(dir, planes, |at| ats.push(at));
            for at in ats {
                let v = it.next().expect("a face message as long as the faces");
                cell.u[at] = std::array::from_fn(|m| T::lit(v[m]));
            }
        }
    }

    /// NPB's `compute_rhs` on every cell.
    pub fn compute_rhs(&mut self) {
        for cell in &mut self.cells {
            cell.compute_rhs(&self.consts);
        }
    }

    /// Forward elimination along `dir` of cell `c` from the predecessor's
    /// message (empty at the grid's low boundary); returns the message for
    /// the successor (empty at the high boundary).
    pub fn solve_cell(&mut self, dir: usize, c: usize, incoming: &[f64]) -> Vec<f64> {
        self.cells[c].solve(&self.consts, dir, incoming)
    }

    /// Back substitution along `dir` of cell `c` from the successor's message;
    /// returns the message for the predecessor.
    pub fn backsubstitute_cell(&mut self, dir: usize, c: usize, incoming: &[f64]) -> Vec<f64> {
        self.cells[c].backsubstitute(dir, incoming)
    }

    /// Doubles of the forward-elimination message of cell `c` along `dir`.
    pub fn solve_info_len(&self, dir: usize, c: usize) -> usize {
        self.cells[c].solve_info_len(dir)
    }

    /// Doubles of the back-substitution message of cell `c` along `dir`.
    pub fn backsub_info_len(&self, dir: usize, c: usize) -> usize {
        self.cells[c].backsub_info_len(dir)
    }

    /// One step as if the rank had no neighbours (their messages zeros): the
    /// arithmetic of a step without its communication, for timing the kernel.
    pub fn step_alone(&mut self) {
        self.compute_rhs();
        for dir in 0..3 {
            for stage in 0..self.p {
                let c = self.slice(dir, stage);
                let zeros = vec![0.0; self.solve_info_len(dir, c)];
                self.solve_cell(dir, c, &zeros);
            }
            for stage in (0..self.p).rev() {
                let c = self.slice(dir, stage);
                let zeros = vec![0.0; self.backsub_info_len(dir, c)];
                self.backsubstitute_cell(dir, c, &zeros);
            }
        }
        self.add();
    }

    /// NPB's `add` on every cell.
    pub fn add(&mut self) {
        for cell in &mut self.cells {
            let points: Vec<usize> = cell.interior_points().collect();
            for at in points {
                for m in 0..5 {
                    cell.u[at][m] = cell.u[at][m] + cell.rhs[at][m];
                }
            }
        }
    }

    /// Sums over the rank's points of `(u − exact)²` (`error_norm` before the all-reduce).
    pub fn error_sums(&self) -> [f64; 5] {
        let mut sums = [0.0; 5];
        for cell in &self.cells {
            let own: Vec<usize> = cell.own_points().collect();
            let s = cell.error_sums(&self.consts, |n| cell.u[own[n]]);
            add5(&mut sums, s);
        }
        sums
    }

    /// Sums over the rank's interior points of `rhs²` (`rhs_norm` before the all-reduce).
    pub fn rhs_sums(&self) -> [f64; 5] {
        let mut sums = [0.0; 5];
        for cell in &self.cells {
            for at in cell.interior_points() {
                for m in 0..5 {
                    let v = cell.rhs[at][m].to_f64();
                    sums[m] += v * v;
                }
            }
        }
        sums
    }

    /// Sums of `(v − exact)²` over the rank's points for a dump read back:
    /// `stream` holds the rank's cells in order, each cell's points in Fortran
    /// order, five doubles per point (what [`BtRank::write_u`] writes).
    pub fn dump_error_sums(&self, stream: &[f64]) -> [f64; 5] {
        let mut sums = [0.0; 5];
        let mut offset = 0;
        for cell in &self.cells {
            let n = 5 * cell.size.iter().product::<usize>();
            let part = &stream[offset..offset + n];
            let s = cell.error_sums(&self.consts, |q| {
                std::array::from_fn(|m| T::lit(part[5 * q + m]))
            });
            add5(&mut sums, s);
            offset += n;
        }
        sums
    }

    /// The rank's `u` (own points, no ghosts) in stream order into `out`, as
    /// native-endian doubles (`out.len()` = 40 bytes per point).
    pub fn write_u(&self, out: &mut [u8]) {
        let mut offset = 0;
        for c in 0..self.cells.len() {
            let len = 40 * self.cells[c].size.iter().product::<usize>();
            self.write_cell_u(c, &mut out[offset..offset + len]);
            offset += len;
        }
    }

    /// Cell `c`'s part of [`BtRank::write_u`].
    pub fn write_cell_u(&self, c: usize, out: &mut [u8]) {
        let cell = &self.cells[c];
        let mut chunks = out.chunks_exact_mut(8);
        for at in cell.own_points() {
            for m in 0..5 {
                let chunk = chunks.next().expect("a buffer of 40 bytes per point");
                chunk.copy_from_slice(&cell.u[at][m].to_f64().to_ne_bytes());
            }
        }
    }

    /// Add `delta` to component `m` of point (2, 2, 2) of the rank's second
    /// cell (its first where it has one): a test of verification.
    pub fn perturb(&mut self, m: usize, delta: f64) {
        let c = 1.min(self.cells.len() - 1);
        let cell = &mut self.cells[c];
        let at = cell.at(2, 2, 2);
        cell.u[at][m] = cell.u[at][m] + T::lit(delta);
    }
}

impl<T: Real> CellArrays<T> {
    /// Call `f` with every point of `planes` (two coordinates along `dir`, all
    /// of the cell's points in the other directions), in Fortran order.
    fn for_face(&self, dir: usize, planes: [isize; 2], mut f: impl FnMut(usize)) {
        let mut ranges = self.size.map(|s| 0..s as isize);
        ranges[dir] = planes[0]..planes[1] + 1;
        for k in ranges[2].clone() {
            for j in ranges[1].clone() {
                for i in ranges[0].clone() {
                    f(self.at(i, j, k));
                }
            }
        }
    }
}
