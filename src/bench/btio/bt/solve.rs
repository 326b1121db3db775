//! NPB BT's line solves (`x_solve`, `y_solve`, `z_solve`) on one cell, the
//! three directions written once, and the 5×5 block kernels of
//! `solve_subs.f` (`binvcrhs`, `binvrhs`, `matvec_sub`, `matmul_sub`).
//!
//! Along `dir` the block-tridiagonal system of every line is
//! `A_t·Δ_{t−1} + B_t·Δ_t + C_t·Δ_{t+1} = rhs_t` with
//! `A = −dt·t2·fjac(t−1) − dt·t1·njac(t−1) − dt·t1·d`,
//! `B = I + 2·dt·t1·njac(t) + 2·dt·t1·d`,
//! `C = dt·t2·fjac(t+1) − dt·t1·njac(t+1) − dt·t1·d` (`d` on the diagonal);
//! the grid's boundary points have `B = I`. Forward elimination leaves
//! `C′ = B′⁻¹C` in `lhsc` and `B′⁻¹r′` in `rhs`; back substitution
//! `rhs_t −= C′_t·rhs_{t+1}` leaves the update.

use super::{CellArrays, Consts, M5, Real, V5, others};

/// `r −= A·v` (NPB's `matvec_sub`).
#[inline(always)]
pub(super) fn matvec_sub<T: Real>(a: &M5<T>, v: &V5<T>, r: &mut V5<T>) {
    for i in 0..5 {
        r[i] = r[i]
            - a[i][0] * v[0]
            - a[i][1] * v[1]
            - a[i][2] * v[2]
            - a[i][3] * v[3]
            - a[i][4] * v[4];
    }
}

/// `c −= A·B` (NPB's `matmul_sub`).
#[inline(always)]
pub(super) fn matmul_sub<T: Real>(a: &M5<T>, b: &M5<T>, c: &mut M5<T>) {
    for i in 0..5 {
        for j in 0..5 {
            c[i][j] = c[i][j]
                - a[i][0] * b[0][j]
                - a[i][1] * b[1][j]
                - a[i][2] * b[2][j]
                - a[i][3] * b[3][j]
                - a[i][4] * b[4][j];
        }
    }
}

/// Gauss–Jordan of `B` against `[C | r]` without pivoting, `C` only where
/// `WITH_C` (NPB's `binvcrhs` and `binvrhs`, the same elimination).
#[inline(always)]
fn gauss_jordan<T: Real, const WITH_C: bool>(b: &mut M5<T>, c: &mut M5<T>, r: &mut V5<T>) {
    for p in 0..5 {
        let pivot = T::lit(1.0) / b[p][p];
        for k in p + 1..5 {
            b[p][k] = b[p][k] * pivot;
        }
        if WITH_C {
            for k in 0..5 {
                c[p][k] = c[p][k] * pivot;
            }
        }
        r[p] = r[p] * pivot;
        for q in 0..5 {
            if q == p {
                continue;
            }
            let coeff = b[q][p];
            for k in p + 1..5 {
                b[q][k] = b[q][k] - coeff * b[p][k];
            }
            if WITH_C {
                for k in 0..5 {
                    c[q][k] = c[q][k] - coeff * c[p][k];
                }
            }
            r[q] = r[q] - coeff * r[p];
        }
    }
}

/// `c = B⁻¹C`, `r = B⁻¹r` (NPB's `binvcrhs`).
#[inline(always)]
pub(super) fn binvcrhs<T: Real>(b: &mut M5<T>, c: &mut M5<T>, r: &mut V5<T>) {
    gauss_jordan::<T, true>(b, c, r);
}

/// `r = B⁻¹r` (NPB's `binvrhs`).
#[inline(always)]
pub(super) fn binvrhs<T: Real>(b: &mut M5<T>, r: &mut V5<T>) {
    let mut unused = [[T::lit(0.0); 5]; 5];
    gauss_jordan::<T, false>(b, &mut unused, r);
}

/// The flux Jacobian `fjac` and viscous Jacobian `njac` along `dir` at a
/// point with conserved variables `u`, `1/ρ` and `qs`.
#[inline(always)]
pub(super) fn jacobians<T: Real>(
    c: &Consts<T>,
    dir: usize,
    u: &V5<T>,
    rho_inv: T,
    qs: T,
    f: &mut M5<T>,
    n: &mut M5<T>,
) {
    let a = dir + 1;
    let zero = T::lit(0.0);
    let (tmp1, two) = (rho_inv, T::lit(2.0));
    let tmp2 = tmp1 * tmp1;
    let tmp3 = tmp1 * tmp2;
    let (c1, c2, c3c4, c1345) = (c.c1, c.c2, c.c3c4, c.c1345);
    *f = [[zero; 5]; 5];
    *n = [[zero; 5]; 5];
    f[0][a] = T::lit(1.0);
    // The viscous coefficient of each momentum component: 4/3 along the line.
    let coef: [T; 4] = std::array::from_fn(|m| if m == a { c.con43 * c3c4 } else { c3c4 });
    for m in 1..4 {
        if m == a {
            f[m][0] = -(u[a] * tmp2 * u[a]) + c2 * qs;
            f[m][a] = (two - c2) * (u[a] * tmp1);
            for k in 1..4 {
                if k != a {
                    f[m][k] = -c2 * (u[k] * tmp1);
                }
            }
            f[m][4] = c2;
        } else {
            f[m][0] = -(u[a] * u[m]) * tmp2;
            f[m][a] = u[m] * tmp1;
            f[m][m] = u[a] * tmp1;
        }
        n[m][0] = -coef[m] * tmp2 * u[m];
        n[m][m] = coef[m] * tmp1;
    }
    f[4][0] = (c2 * two * qs - c1 * (u[4] * tmp1)) * (u[a] * tmp1);
    f[4][a] = c1 * u[4] * tmp1 - c2 * (u[a] * u[a] * tmp2 + qs);
    for k in 1..4 {
        if k != a {
            f[4][k] = -c2 * (u[k] * u[a]) * tmp2;
        }
    }
    f[4][4] = c1 * (u[a] * tmp1);
    n[4][0] = -(coef[1] - c1345) * tmp3 * (u[1] * u[1])
        - (coef[2] - c1345) * tmp3 * (u[2] * u[2])
        - (coef[3] - c1345) * tmp3 * (u[3] * u[3])
        - c1345 * tmp2 * u[4];
    for m in 1..4 {
        n[4][m] = (coef[m] - c1345) * tmp2 * u[m];
    }
    n[4][4] = c1345 * tmp1;
}

/// Per-line work arrays of a solve (NPB's `work_lhs`).
pub(super) struct LineWork<T> {
    fjac: Vec<M5<T>>,
    njac: Vec<M5<T>>,
    lhsa: Vec<M5<T>>,
    lhsb: Vec<M5<T>>,
}

impl<T: Real> CellArrays<T> {
    /// The face points across `dir` (all of the cell's points in the other two
    /// directions), in message order, as `(a, b)` coordinates.
    fn face(&self, dir: usize) -> impl Iterator<Item = (isize, isize)> + use<T> {
        let (oa, ob) = others(dir);
        let (na, nb) = (self.size[oa] as isize, self.size[ob] as isize);
        (0..nb).flat_map(move |b| (0..na).map(move |a| (a, b)))
    }

    /// Doubles in the forward-elimination message along `dir`: `lhsc` and `rhs`
    /// of the cell's last plane (30 per face point).
    pub(super) fn solve_info_len(&self, dir: usize) -> usize {
        let (oa, ob) = others(dir);
        30 * self.size[oa] * self.size[ob]
    }

    /// Doubles in the back-substitution message along `dir`: `rhs` of the
    /// cell's first plane (5 per face point).
    pub(super) fn backsub_info_len(&self, dir: usize) -> usize {
        self.solve_info_len(dir) / 6
    }

    /// Forward elimination of every line of the cell along `dir`. `incoming`:
    /// the predecessor cell's last `lhsc` and `rhs` (none at the grid's low
    /// boundary); returns what the successor needs (empty at the high boundary).
    pub(super) fn solve(&mut self, c: &Consts<T>, dir: usize, incoming: &[f64]) -> Vec<f64> {
        let n = self.size[dir] as isize;
        let isize_ = n - 1;
        let (start, end) = (self.start[dir] as isize, self.end[dir] as isize);
        let s = self.stride[dir] as isize;
        if start == 0 {
            let mut it = incoming.chunks_exact(30);
            for (a, b) in self.face(dir) {
                let at = self.at_dir(dir, -1, a, b);
                let v = it.next().expect("a solve message as long as the face");
                self.lhsc[at] =
                    std::array::from_fn(|m| std::array::from_fn(|k| T::lit(v[5 * m + k])));
                self.rhs[at] = std::array::from_fn(|m| T::lit(v[25 + m]));
            }
        }
        let zero = T::lit(0.0);
        let (one, two) = (T::lit(1.0), T::lit(2.0));
        let mut identity = [[zero; 5]; 5];
        for (m, row) in identity.iter_mut().enumerate() {
            row[m] = one;
        }
        let len = n as usize + 2;
        let mut w = LineWork {
            fjac: vec![[[zero; 5]; 5]; len],
            njac: vec![[[zero; 5]; 5]; len],
            lhsa: vec![[[zero; 5]; 5]; len],
            lhsb: vec![identity; len],
        };
        let (tmp1, tmp2, d) = (c.dtt1[dir], c.dtt2[dir], c.d[dir]);
        let (oa, ob) = others(dir);
        for pb in self.interior(ob) {
            for pa in self.interior(oa) {
                let base = self.at_dir(dir, 0, pa, pb) as isize;
                let pos = |t: isize| (base + t * s) as usize;
                for t in start - 1..=n - end {
                    let at = pos(t);
                    let q = (t + 1) as usize;
                    jacobians(
                        c,
                        dir,
                        &self.u[at],
                        self.rho_i[at],
                        self.qs[at],
                        &mut w.fjac[q],
                        &mut w.njac[q],
                    );
                }
                for t in start..=isize_ - end {
                    let (fm, nm) = (&w.fjac[t as usize], &w.njac[t as usize]);
                    let n0 = &w.njac[(t + 1) as usize];
                    let (fp, np) = (&w.fjac[(t + 2) as usize], &w.njac[(t + 2) as usize]);
                    let la = &mut w.lhsa[t as usize];
                    let lb = &mut w.lhsb[t as usize];
                    let lc = &mut self.lhsc[pos(t)];
                    for m in 0..5 {
                        for k in 0..5 {
                            la[m][k] = -tmp2 * fm[m][k] - tmp1 * nm[m][k];
                            lb[m][k] = tmp1 * two * n0[m][k];
                            lc[m][k] = tmp2 * fp[m][k] - tmp1 * np[m][k];
                        }
                        la[m][m] = la[m][m] - tmp1 * d[m];
                        lb[m][m] = one + lb[m][m] + tmp1 * two * d[m];
                        lc[m][m] = lc[m][m] - tmp1 * d[m];
                    }
                }
                if start == 1 {
                    let at = pos(0);
                    binvcrhs(&mut w.lhsb[0], &mut self.lhsc[at], &mut self.rhs[at]);
                }
                for t in start..=isize_ - end {
                    let (prev, at) = (pos(t - 1), pos(t));
                    // `prev < at`: borrow the previous point apart from this one.
                    let (rhs_lo, rhs_hi) = self.rhs.split_at_mut(at);
                    let (lhsc_lo, lhsc_hi) = self.lhsc.split_at_mut(at);
                    let la = &w.lhsa[t as usize];
                    let lb = &mut w.lhsb[t as usize];
                    matvec_sub(la, &rhs_lo[prev], &mut rhs_hi[0]);
                    matmul_sub(la, &lhsc_lo[prev], lb);
                    binvcrhs(lb, &mut lhsc_hi[0], &mut rhs_hi[0]);
                }
                if end == 1 {
                    let t = isize_;
                    let (prev, at) = (pos(t - 1), pos(t));
                    let (rhs_lo, rhs_hi) = self.rhs.split_at_mut(at);
                    let la = &w.lhsa[t as usize];
                    let lb = &mut w.lhsb[t as usize];
                    matvec_sub(la, &rhs_lo[prev], &mut rhs_hi[0]);
                    matmul_sub(la, &self.lhsc[prev], lb);
                    binvrhs(lb, &mut rhs_hi[0]);
                }
            }
        }
        let mut out = Vec::new();
        if end == 0 {
            out.reserve(self.solve_info_len(dir));
            for (a, b) in self.face(dir) {
                let at = self.at_dir(dir, isize_, a, b);
                for row in &self.lhsc[at] {
                    out.extend(row.map(T::to_f64));
                }
                out.extend(self.rhs[at].map(T::to_f64));
            }
        }
        out
    }

    /// Back substitution of every line of the cell along `dir`. `incoming`: the
    /// successor cell's first `rhs` plane (none at the grid's high boundary);
    /// returns this cell's first `rhs` plane for the predecessor (empty at the
    /// low boundary).
    pub(super) fn backsubstitute(&mut self, dir: usize, incoming: &[f64]) -> Vec<f64> {
        let n = self.size[dir] as isize;
        let isize_ = n - 1;
        let s = self.stride[dir] as isize;
        let (oa, ob) = others(dir);
        let (na, nb) = (self.size[oa], self.size[ob]);
        let end = self.end[dir];
        for pb in self.interior(ob) {
            for pa in self.interior(oa) {
                let base = self.at_dir(dir, 0, pa, pb) as isize;
                let pos = |t: isize| (base + t * s) as usize;
                if end == 0 {
                    let q = 5 * (pb as usize * na + pa as usize);
                    let info: V5<T> = std::array::from_fn(|k| T::lit(incoming[q + k]));
                    let at = pos(isize_);
                    let lc = self.lhsc[at];
                    let r = &mut self.rhs[at];
                    for m in 0..5 {
                        for k in 0..5 {
                            r[m] = r[m] - lc[m][k] * info[k];
                        }
                    }
                }
                for t in (0..isize_).rev() {
                    let (at, next) = (pos(t), pos(t + 1));
                    let rn = self.rhs[next];
                    let lc = &self.lhsc[at];
                    let r = &mut self.rhs[at];
                    for m in 0..5 {
                        for k in 0..5 {
                            r[m] = r[m] - lc[m][k] * rn[k];
                        }
                    }
                }
            }
        }
        let mut out = Vec::new();
        if self.start[dir] == 0 {
            out.reserve(5 * na * nb);
            for (a, b) in self.face(dir) {
                out.extend(self.rhs[self.at_dir(dir, 0, a, b)].map(T::to_f64));
            }
        }
        out
    }
}
