//! BT's diagonal multi-partition decomposition (NPB `make_set`), as pure data.
//!
//! `nprocs` must be a perfect square; `p = sqrt(nprocs)` is both the number of
//! cells per direction and the number of cells each rank owns. Cell `c`
//! (0-based) of rank `r` has cell coordinates
//!
//! ```text
//! x = (r mod p + c) mod p,   y = (r div p − c) mod p,   z = c
//! ```
//!
//! so every rank owns exactly one cell in every x-, y- and z-slab of cells
//! (Bruno & Cappello's multi-partitioning, as used by NPB BT and SP). Along a
//! direction of `N` points, `size = N div p`, `excess = N mod p`; the 1-based
//! cell coordinate `k` gets `size + 1` points starting at `(k−1)(size+1)` when
//! `k ≤ excess`, else `size` points starting at `excess(size+1) + (k−excess−1)·size`.
//! NPB refuses cells of 2 points or fewer in any direction; so does this module.
//!
//! Not for: anything about files or I/O (see `layout`).

use std::fmt;

/// One cell of a rank: where it lies in the global grid. All values in mesh points
/// except `coord`, which counts cells. Index 0, 1, 2 = x, y, z.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct Cell {
    /// 0-based cell coordinates in the `p × p × p` array of cells.
    pub coord: [u64; 3],
    /// First global mesh point (0-based) per direction.
    pub low: [u64; 3],
    /// Mesh points per direction.
    pub size: [u64; 3],
}

impl Cell {
    /// Mesh points in the cell.
    pub fn points(&self) -> u64 {
        self.size[0] * self.size[1] * self.size[2]
    }
}

/// Why a grid cannot be decomposed on a process count.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DecompError {
    /// The process count is not a perfect square.
    NotSquare {
        /// The process count given.
        nprocs: usize,
    },
    /// A direction has 2 points or fewer per cell.
    CellTooSmall {
        /// 0, 1, 2 = x, y, z.
        dir: usize,
        /// Grid points in that direction.
        points: u64,
        /// Cells per direction.
        p: u64,
    },
}

impl fmt::Display for DecompError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            DecompError::NotSquare { nprocs } => {
                let below = (nprocs as u64).isqrt();
                write!(
                    f,
                    "BT needs a square number of processes (1, 4, 9, 16, …); {nprocs} is not square \
                     (nearest below: {})",
                    below * below
                )
            }
            DecompError::CellTooSmall { dir, points, p } => write!(
                f,
                "{points} points in {} on {p}×{p} cells gives cells of {} points; BT needs at least 3 \
                 per direction (use fewer processes or a larger grid)",
                ["x", "y", "z"][dir],
                points / p
            ),
        }
    }
}

impl std::error::Error for DecompError {}

/// The decomposition of a global `grid` over `nprocs` ranks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Decomposition {
    /// Global mesh points per direction (nx, ny, nz).
    pub grid: [u64; 3],
    /// Number of ranks (`p²`).
    pub nprocs: usize,
    /// Cells per direction and cells per rank (`sqrt(nprocs)`).
    pub p: u64,
}

impl Decomposition {
    /// Checks that `nprocs` is square and that no cell is 2 points or fewer wide.
    pub fn new(grid: [u64; 3], nprocs: usize) -> Result<Decomposition, DecompError> {
        let p = (nprocs as u64).isqrt();
        if nprocs == 0 || p * p != nprocs as u64 {
            return Err(DecompError::NotSquare { nprocs });
        }
        for (dir, &n) in grid.iter().enumerate() {
            // The smallest cell along `dir` has `n div p` points.
            if n / p <= 2 {
                return Err(DecompError::CellTooSmall { dir, points: n, p });
            }
        }
        Ok(Decomposition { grid, nprocs, p })
    }

    /// `(low, size)` of 0-based cell coordinate `k` along direction `dir`.
    pub fn span(&self, dir: usize, k: u64) -> (u64, u64) {
        let n = self.grid[dir];
        let size = n / self.p;
        let excess = n % self.p;
        let k1 = k + 1; // NPB's 1-based coordinate
        if k1 <= excess {
            ((k1 - 1) * (size + 1), size + 1)
        } else {
            (excess * (size + 1) + (k1 - excess - 1) * size, size)
        }
    }

    /// The `p` cells of `rank`, in NPB's cell order `c = 0..p`.
    pub fn cells(&self, rank: usize) -> Vec<Cell> {
        let p = self.p;
        let r = rank as u64;
        (0..p)
            .map(|c| {
                let coord = [(r % p + c) % p, (r / p + p - c % p) % p, c];
                let mut low = [0; 3];
                let mut size = [0; 3];
                for dir in 0..3 {
                    (low[dir], size[dir]) = self.span(dir, coord[dir]);
                }
                Cell { coord, low, size }
            })
            .collect()
    }

    /// Mesh points owned by `rank`.
    pub fn rank_points(&self, rank: usize) -> u64 {
        self.cells(rank).iter().map(Cell::points).sum()
    }

    /// Mesh points in the whole grid.
    pub fn total_points(&self) -> u64 {
        self.grid.iter().product()
    }

    /// The rank that owns, for every cell of `rank`, the next cell along `dir`
    /// (NPB's `successor(dir)`): the same for all of them by construction.
    pub fn successor(&self, rank: usize, dir: usize) -> usize {
        let p = self.p as usize;
        let (i, j) = (rank % p, rank / p);
        match dir {
            0 => (i + 1) % p + p * j,
            1 => i + p * ((j + 1) % p),
            _ => (i + p - 1) % p + p * ((j + 1) % p),
        }
    }

    /// The rank that owns the previous cell along `dir` of every cell of
    /// `rank` (NPB's `predecessor(dir)`).
    pub fn predecessor(&self, rank: usize, dir: usize) -> usize {
        let p = self.p as usize;
        let (i, j) = (rank % p, rank / p);
        match dir {
            0 => (i + p - 1) % p + p * j,
            1 => i + p * ((j + p - 1) % p),
            _ => (i + 1) % p + p * ((j + p - 1) % p),
        }
    }

    /// Bytes of `rank`'s message to its successor along `dir` in NPB's
    /// `copy_faces` (`forward`) or to its predecessor (not `forward`): for every
    /// cell with a neighbour that way, its two boundary planes of the five
    /// solution components (doubles).
    pub fn face_bytes(&self, rank: usize, dir: usize, forward: bool) -> u64 {
        let (a, b) = ((dir + 1) % 3, (dir + 2) % 3);
        self.cells(rank)
            .iter()
            .filter(|c| match forward {
                true => c.coord[dir] + 1 < self.p,
                false => c.coord[dir] > 0,
            })
            .map(|c| 2 * 5 * 8 * c.size[a] * c.size[b])
            .sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn neighbours_own_the_adjacent_cells() {
        for (grid, nprocs) in [([12, 12, 12], 4), ([64, 64, 64], 9), ([102, 30, 17], 16)] {
            let d = Decomposition::new(grid, nprocs).unwrap();
            let p = d.p;
            let owner = |coord: [u64; 3]| {
                (0..nprocs)
                    .find(|&r| d.cells(r).iter().any(|c| c.coord == coord))
                    .unwrap()
            };
            for r in 0..nprocs {
                for c in d.cells(r) {
                    for dir in 0..3 {
                        let mut next = c.coord;
                        next[dir] = (next[dir] + 1) % p;
                        assert_eq!(
                            owner(next),
                            d.successor(r, dir),
                            "{grid:?} rank {r} dir {dir}"
                        );
                        let mut prev = c.coord;
                        prev[dir] = (prev[dir] + p - 1) % p;
                        assert_eq!(owner(prev), d.predecessor(r, dir));
                    }
                }
                // What a rank sends forward is what its successor receives from behind.
                for dir in 0..3 {
                    let s = d.successor(r, dir);
                    let faces_in = |q: usize| {
                        let (a, b) = ((dir + 1) % 3, (dir + 2) % 3);
                        d.cells(q)
                            .iter()
                            .filter(|c| c.coord[dir] > 0)
                            .map(|c| 80 * c.size[a] * c.size[b])
                            .sum::<u64>()
                    };
                    assert_eq!(d.face_bytes(r, dir, true), faces_in(s));
                }
            }
        }
    }

    #[test]
    fn class_a_faces_on_four_ranks() {
        // 64³ on 2×2: 32-point cells, one of each rank's two cells has a
        // neighbour each way: 2 planes × 32 × 32 points × 5 doubles.
        let d = Decomposition::new([64, 64, 64], 4).unwrap();
        for dir in 0..3 {
            assert_eq!(d.face_bytes(0, dir, true), 2 * 32 * 32 * 5 * 8);
            assert_eq!(d.face_bytes(0, dir, false), 2 * 32 * 32 * 5 * 8);
        }
    }

    fn cell(coord: [u64; 3], low: [u64; 3], size: [u64; 3]) -> Cell {
        Cell { coord, low, size }
    }

    #[test]
    fn one_rank_owns_the_whole_grid() {
        let d = Decomposition::new([12, 12, 12], 1).unwrap();
        assert_eq!(d.cells(0), vec![cell([0, 0, 0], [0, 0, 0], [12, 12, 12])]);
    }

    #[test]
    fn four_ranks_by_hand() {
        // p = 2, 12 points → 6 per cell, no excess.
        let d = Decomposition::new([12, 12, 12], 4).unwrap();
        // rank 0: c0 (0,0,0), c1 (1,1,1)
        assert_eq!(
            d.cells(0),
            vec![
                cell([0, 0, 0], [0, 0, 0], [6, 6, 6]),
                cell([1, 1, 1], [6, 6, 6], [6, 6, 6])
            ]
        );
        // rank 1: c0 (1,0,0), c1 (0,1,1)
        assert_eq!(
            d.cells(1),
            vec![
                cell([1, 0, 0], [6, 0, 0], [6, 6, 6]),
                cell([0, 1, 1], [0, 6, 6], [6, 6, 6])
            ]
        );
        // rank 2: c0 (0,1,0), c1 (1,0,1)
        assert_eq!(
            d.cells(2),
            vec![
                cell([0, 1, 0], [0, 6, 0], [6, 6, 6]),
                cell([1, 0, 1], [6, 0, 6], [6, 6, 6])
            ]
        );
        // rank 3: c0 (1,1,0), c1 (0,0,1)
        assert_eq!(
            d.cells(3),
            vec![
                cell([1, 1, 0], [6, 6, 0], [6, 6, 6]),
                cell([0, 0, 1], [0, 0, 6], [6, 6, 6])
            ]
        );
    }

    #[test]
    fn nine_ranks_with_excess_by_hand() {
        // p = 3, 64 points: size 21, excess 1 → k=1: low 0 size 22; k=2: low 22 size 21; k=3: low 43 size 21.
        let d = Decomposition::new([64, 64, 64], 9).unwrap();
        let s = |k: u64| [22u64, 21, 21][k as usize];
        let l = |k: u64| [0u64, 22, 43][k as usize];
        let mk = |x: u64, y: u64, z: u64| cell([x, y, z], [l(x), l(y), l(z)], [s(x), s(y), s(z)]);
        // rank 5: r mod 3 = 2, r div 3 = 1 → c0 (2,1,0), c1 (0,0,1), c2 (1,2,2)
        assert_eq!(d.cells(5), vec![mk(2, 1, 0), mk(0, 0, 1), mk(1, 2, 2)]);
        // rank 6 (the one in the PnetCDF README figure): (0,2,0), (1,1,1), (2,0,2)
        assert_eq!(d.cells(6), vec![mk(0, 2, 0), mk(1, 1, 1), mk(2, 0, 2)]);
        assert_eq!(d.cells(6)[0], cell([0, 2, 0], [0, 43, 0], [22, 21, 22]));
    }

    #[test]
    fn sixteen_ranks_by_hand() {
        // p = 4, grid 102 × 24 × 13: x size 25 excess 2; y size 6 excess 0; z size 3 excess 1.
        let d = Decomposition::new([102, 24, 13], 16).unwrap();
        assert_eq!(d.span(0, 0), (0, 26));
        assert_eq!(d.span(0, 1), (26, 26));
        assert_eq!(d.span(0, 2), (52, 25));
        assert_eq!(d.span(0, 3), (77, 25));
        assert_eq!(d.span(2, 0), (0, 4));
        assert_eq!(d.span(2, 1), (4, 3));
        assert_eq!(d.span(2, 3), (10, 3));
        // rank 7: r mod 4 = 3, r div 4 = 1 → (3,1,0), (0,0,1), (1,3,2), (2,2,3)
        assert_eq!(
            d.cells(7),
            vec![
                cell([3, 1, 0], [77, 6, 0], [25, 6, 4]),
                cell([0, 0, 1], [0, 0, 4], [26, 6, 3]),
                cell([1, 3, 2], [26, 18, 7], [26, 6, 3]),
                cell([2, 2, 3], [52, 12, 10], [25, 6, 3]),
            ]
        );
    }

    /// Every mesh point belongs to exactly one cell of one rank.
    fn assert_covers(grid: [u64; 3], nprocs: usize) {
        let d = Decomposition::new(grid, nprocs).unwrap();
        let [nx, ny, nz] = grid;
        let mut owner = vec![0u8; (nx * ny * nz) as usize];
        let mut total = 0;
        for r in 0..nprocs {
            for c in d.cells(r) {
                total += c.points();
                for z in c.low[2]..c.low[2] + c.size[2] {
                    for y in c.low[1]..c.low[1] + c.size[1] {
                        for x in c.low[0]..c.low[0] + c.size[0] {
                            owner[(x + nx * (y + ny * z)) as usize] += 1;
                        }
                    }
                }
            }
        }
        assert_eq!(total, nx * ny * nz, "grid {grid:?} on {nprocs}");
        assert!(
            owner.iter().all(|&n| n == 1),
            "grid {grid:?} on {nprocs}: a point owned 0 or 2+ times"
        );
    }

    #[test]
    fn every_point_in_exactly_one_cell() {
        assert_covers([12, 12, 12], 1);
        assert_covers([12, 12, 12], 4);
        assert_covers([64, 64, 64], 9);
        assert_covers([102, 102, 102], 16);
        assert_covers([24, 30, 17], 25);
        assert_covers([64, 48, 40], 144);
    }

    #[test]
    fn every_rank_owns_one_cell_per_slab() {
        let d = Decomposition::new([64, 64, 64], 16).unwrap();
        for r in 0..16 {
            let cells = d.cells(r);
            for dir in 0..3 {
                let mut ks: Vec<u64> = cells.iter().map(|c| c.coord[dir]).collect();
                ks.sort();
                assert_eq!(ks, vec![0, 1, 2, 3], "rank {r} dir {dir}");
            }
        }
    }

    #[test]
    fn refuses_non_square_and_tiny_cells() {
        assert_eq!(
            Decomposition::new([64; 3], 8),
            Err(DecompError::NotSquare { nprocs: 8 })
        );
        assert_eq!(
            Decomposition::new([64; 3], 0),
            Err(DecompError::NotSquare { nprocs: 0 })
        );
        // 12 on 5×5: 2 points per cell.
        let e = Decomposition::new([64, 12, 64], 25).unwrap_err();
        assert_eq!(
            e,
            DecompError::CellTooSmall {
                dir: 1,
                points: 12,
                p: 5
            }
        );
        assert!(e.to_string().contains("at least 3"), "{e}");
        assert!(
            DecompError::NotSquare { nprocs: 8 }
                .to_string()
                .contains("8 is not square")
        );
        // 3 points per cell is allowed.
        assert!(Decomposition::new([12, 12, 12], 16).is_ok());
    }
}
