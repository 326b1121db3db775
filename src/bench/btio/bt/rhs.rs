//! NPB BT's right-hand sides: `compute_rhs` (the residual of the current `u`)
//! and `exact_rhs` (the forcing that makes the exact solution steady).
//!
//! Both are NPB's loops with the three directions written once: along `dir`
//! the momentum component `dir + 1` is the one that carries the pressure term
//! and the `4/3` viscous factor; the others are transported.

use super::{CellArrays, Consts, Real, others};

/// Fourth-order dissipation along a line of `n` points at position `t`,
/// from the five values around it (`v[2]` at `t`): NPB's centred stencil, or
/// its one-sided stencils within two points of a grid boundary (`start`,
/// `end`). NPB applies the boundary stencils as loops of their own, so on a
/// line of under 7 points a point can get two; they come in NPB's order.
#[inline(always)]
fn dissipation<T: Real>(v: [T; 5], t: isize, n: isize, start: bool, end: bool) -> [Option<T>; 2] {
    let (c4, c5, c6) = (T::lit(4.0), T::lit(5.0), T::lit(6.0));
    let [m2, m1, u0, p1, p2] = v;
    let first = if start && t == 1 {
        Some(c5 * u0 - c4 * p1 + p2)
    } else if start && t == 2 {
        Some(-c4 * m1 + c6 * u0 - c4 * p1 + p2)
    } else if t >= 3 * start as isize && t < n - 3 * end as isize {
        Some(m2 - c4 * m1 + c6 * u0 - c4 * p1 + p2)
    } else {
        None
    };
    let second = if end && t == n - 3 {
        Some(m2 - c4 * m1 + c6 * u0 - c4 * p1)
    } else if end && t == n - 2 {
        Some(m2 - c4 * m1 + c5 * u0)
    } else {
        None
    };
    [first, second]
}

impl<T: Real> CellArrays<T> {
    /// NPB's `compute_rhs` for this cell (its ghost planes must hold the
    /// neighbours' `u`: `copy_faces`).
    pub(super) fn compute_rhs(&mut self, c: &Consts<T>) {
        let [sx, sy, sz] = self.size.map(|s| s as isize);
        let (one, half) = (T::lit(1.0), T::lit(0.5));
        for k in -1..=sz {
            for j in -1..=sy {
                for i in -1..=sx {
                    let at = self.at(i, j, k);
                    let u = self.u[at];
                    let rho_inv = one / u[0];
                    self.rho_i[at] = rho_inv;
                    self.vel[0][at] = u[1] * rho_inv;
                    self.vel[1][at] = u[2] * rho_inv;
                    self.vel[2][at] = u[3] * rho_inv;
                    self.square[at] = half * (u[1] * u[1] + u[2] * u[2] + u[3] * u[3]) * rho_inv;
                    self.qs[at] = self.square[at] * rho_inv;
                }
            }
        }
        for k in 0..sz {
            for j in 0..sy {
                for i in 0..sx {
                    let at = self.at(i, j, k);
                    self.rhs[at] = self.forcing[at];
                }
            }
        }
        for dir in 0..3 {
            self.flux_differences(c, dir);
            self.dissipate(c, dir);
        }
        let dt = c.dt;
        let points: Vec<usize> = self.interior_points().collect();
        for at in points {
            for m in 0..5 {
                self.rhs[at][m] = self.rhs[at][m] * dt;
            }
        }
    }

    /// The flux differences along `dir` added to `rhs` on the interior points.
    fn flux_differences(&mut self, c: &Consts<T>, dir: usize) {
        let a = dir + 1;
        let s = self.stride[dir];
        let two = T::lit(2.0);
        let (t2, dt1, con) = (c.t2[dir], c.dt1[dir], c.con[dir]);
        let con2_43 = c.con2_43[dir];
        let points: Vec<usize> = self.interior_points().collect();
        for at in points {
            let (ap, am) = (at + s, at - s);
            let (u0, up, um) = (self.u[at], self.u[ap], self.u[am]);
            let vel = &self.vel[dir];
            let (uijk, up1, um1) = (vel[at], vel[ap], vel[am]);
            let sq = &self.square;
            let r = &mut self.rhs[at];
            r[0] = r[0] + dt1[0] * (up[0] - two * u0[0] + um[0]) - t2 * (up[a] - um[a]);
            for m in 1..4 {
                let diff = dt1[m] * (up[m] - two * u0[m] + um[m]);
                r[m] = if m == a {
                    r[m] + diff + con2_43 * (up1 - two * uijk + um1)
                        - t2 * (up[m] * up1 - um[m] * um1
                            + (up[4] - sq[ap] - um[4] + sq[am]) * c.c2)
                } else {
                    let v = &self.vel[m - 1];
                    r[m] + diff + con[1] * (v[ap] - two * v[at] + v[am])
                        - t2 * (up[m] * up1 - um[m] * um1)
                };
            }
            let (qs, rho) = (&self.qs, &self.rho_i);
            r[4] = r[4]
                + dt1[4] * (up[4] - two * u0[4] + um[4])
                + con[2] * (qs[ap] - two * qs[at] + qs[am])
                + con[3] * (up1 * up1 - two * uijk * uijk + um1 * um1)
                + con[4] * (up[4] * rho[ap] - two * u0[4] * rho[at] + um[4] * rho[am])
                - t2 * ((c.c1 * up[4] - c.c2 * sq[ap]) * up1
                    - (c.c1 * um[4] - c.c2 * sq[am]) * um1);
        }
    }

    /// The fourth-order dissipation along `dir` subtracted from `rhs`.
    fn dissipate(&mut self, c: &Consts<T>, dir: usize) {
        let s = self.stride[dir] as isize;
        let n = self.size[dir] as isize;
        let (start, end) = (self.start[dir] == 1, self.end[dir] == 1);
        let (oa, ob) = others(dir);
        for pb in self.interior(ob) {
            for pa in self.interior(oa) {
                for t in self.interior(dir) {
                    let at = self.at_dir(dir, t, pa, pb);
                    // The ghost planes cover the two points either side.
                    let near = |q: isize| &self.u[(at as isize + q * s) as usize];
                    let (m2, m1, u0, p1, p2) = (near(-2), near(-1), near(0), near(1), near(2));
                    for m in 0..5 {
                        let v = [m2[m], m1[m], u0[m], p1[m], p2[m]];
                        for d in dissipation(v, t, n, start, end).into_iter().flatten() {
                            self.rhs[at][m] = self.rhs[at][m] - c.dssp * d;
                        }
                    }
                }
            }
        }
    }

    /// NPB's `exact_rhs`: the forcing on the cell's interior points.
    pub(super) fn exact_rhs(&mut self, c: &Consts<T>) {
        let zero = T::lit(0.0);
        self.forcing.fill([zero; 5]);
        let n_line = self.size.iter().max().copied().unwrap_or(0) + 4;
        let mut ue = vec![[zero; 5]; n_line];
        let mut buf = vec![[zero; 5]; n_line];
        let mut cuf = vec![zero; n_line];
        let mut q = vec![zero; n_line];
        let (two, half) = (T::lit(2.0), T::lit(0.5));
        for dir in 0..3 {
            let a = dir + 1;
            let (oa, ob) = others(dir);
            // The transported momentum components besides `a`, in order.
            let (tb, tc) = match dir {
                0 => (2, 3),
                1 => (1, 3),
                _ => (1, 2),
            };
            let n = self.size[dir] as isize;
            let (start, end) = (self.start[dir] as isize, self.end[dir] as isize);
            let (t2, dt1, con) = (c.t2[dir], c.dt1[dir], c.con[dir]);
            for pb in self.interior(ob) {
                for pa in self.interior(oa) {
                    // The exact solution along the line, two points beyond the
                    // cell where the line goes on.
                    let lo = -2 * (1 - start);
                    let hi = n + 1 - 2 * end;
                    for t in lo..=hi {
                        let mut ijk = [0; 3];
                        (ijk[dir], ijk[oa], ijk[ob]) = (t, pa, pb);
                        let x = self.coords(c, ijk);
                        let dtemp = c.exact_solution(x[0], x[1], x[2]);
                        let l = (t + 2) as usize;
                        ue[l] = dtemp;
                        let dtpp = T::lit(1.0) / dtemp[0];
                        for m in 1..5 {
                            buf[l][m] = dtpp * dtemp[m];
                        }
                        cuf[l] = buf[l][a] * buf[l][a];
                        buf[l][0] = cuf[l] + buf[l][tb] * buf[l][tb] + buf[l][tc] * buf[l][tc];
                        q[l] = half
                            * (buf[l][1] * ue[l][1] + buf[l][2] * ue[l][2] + buf[l][3] * ue[l][3]);
                    }
                    for t in self.interior(dir) {
                        let (l, lp, lm) = ((t + 2) as usize, (t + 3) as usize, (t + 1) as usize);
                        let at = self.at_dir(dir, t, pa, pb);
                        let second = |m: usize| ue[lp][m] - two * ue[l][m] + ue[lm][m];
                        let f = &mut self.forcing[at];
                        f[0] = f[0] - t2 * (ue[lp][a] - ue[lm][a]) + dt1[0] * second(0);
                        for m in 1..4 {
                            f[m] = if m == a {
                                f[m] - t2
                                    * ((ue[lp][a] * buf[lp][a] + c.c2 * (ue[lp][4] - q[lp]))
                                        - (ue[lm][a] * buf[lm][a] + c.c2 * (ue[lm][4] - q[lm])))
                                    + con[0] * (buf[lp][a] - two * buf[l][a] + buf[lm][a])
                                    + dt1[m] * second(m)
                            } else {
                                f[m] - t2 * (ue[lp][m] * buf[lp][a] - ue[lm][m] * buf[lm][a])
                                    + con[1] * (buf[lp][m] - two * buf[l][m] + buf[lm][m])
                                    + dt1[m] * second(m)
                            };
                        }
                        f[4] = f[4]
                            - t2 * (buf[lp][a] * (c.c1 * ue[lp][4] - c.c2 * q[lp])
                                - buf[lm][a] * (c.c1 * ue[lm][4] - c.c2 * q[lm]))
                            + half * con[2] * (buf[lp][0] - two * buf[l][0] + buf[lm][0])
                            + con[3] * (cuf[lp] - two * cuf[l] + cuf[lm])
                            + con[4] * (buf[lp][4] - two * buf[l][4] + buf[lm][4])
                            + dt1[4] * second(4);
                    }
                    for t in self.interior(dir) {
                        let l = (t + 2) as usize;
                        let at = self.at_dir(dir, t, pa, pb);
                        for m in 0..5 {
                            let v = std::array::from_fn(|q| ue[(l + q).saturating_sub(2)][m]);
                            for d in dissipation(v, t, n, start == 1, end == 1)
                                .into_iter()
                                .flatten()
                            {
                                self.forcing[at][m] = self.forcing[at][m] - c.dssp * d;
                            }
                        }
                    }
                }
            }
        }
        let points: Vec<usize> = self.interior_points().collect();
        for at in points {
            for m in 0..5 {
                self.forcing[at][m] = -self.forcing[at][m];
            }
        }
    }
}
