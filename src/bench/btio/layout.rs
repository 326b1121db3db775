//! Where BTIO's data lies: the file views (NPB's struct of cell subarrays), the
//! canonical file layout, the order of a rank's data in memory, and the
//! deterministic content written and verified.
//!
//! * **Canonical layout** of one dump: `u(5, nx, ny, nz)` in Fortran order —
//!   component fastest, then x, y, z; dump `d` follows dump `d−1`. The byte
//!   offset of point (x, y, z) of dump d is `40·(x + nx·(y + ny·(z + nz·d)))`.
//! * **Rank stream**: a rank's data in memory is its cells in NPB's order
//!   `c = 0..p`, each cell in Fortran order (x fastest). This is the order in
//!   which `MPI_File_write_at_all` with NPB's struct filetype maps a contiguous
//!   buffer onto the file, and the order of the `simple`/`fortran` rows.
//! * **Content**: the double at canonical element index `e` (`e = 5·point + m`)
//!   of the whole run is `e + 1`, exact while `e < 2^53`. A file in canonical
//!   layout therefore holds `1, 2, 3, …` and any flipped byte changes a value.
//!
//! Not for: issuing I/O (see `program`).

use piotwin_types::{Datatype, Order, SEQUENTIAL_MARKERS, View};

use super::decomp::Cell;

/// Bytes of one mesh point: 5 doubles.
pub const POINT_BYTES: u64 = 40;

/// NPB's `element`: `MPI_Type_contiguous(5, MPI_DOUBLE_PRECISION)`.
pub fn element() -> Datatype {
    Datatype::Contiguous {
        count: 5,
        inner: Box::new(Datatype::Double),
    }
}

/// One cell as a 3-D subarray of elements over the global grid, Fortran order.
pub fn cell_subarray(grid: [u64; 3], cell: &Cell) -> Datatype {
    Datatype::Subarray {
        sizes: grid.to_vec(),
        subsizes: cell.size.to_vec(),
        starts: cell.low.to_vec(),
        order: Order::Fortran,
        inner: Box::new(element()),
    }
}

/// NPB `full`'s `combined_ftype`: `MPI_Type_struct` of the p cell subarrays, each
/// with block length 1 and displacement 0. Every subarray's extent is the whole
/// array, so the struct's extent is one dump (`40·nx·ny·nz`) and tiling the view
/// steps from dump to dump. Cell c lies in z-slab c, so the type map is
/// monotonically non-decreasing in file offset, as MPI requires of a filetype.
pub fn cells_struct(grid: [u64; 3], cells: &[Cell]) -> Datatype {
    Datatype::Struct {
        fields: cells
            .iter()
            .map(|c| (0, 1, cell_subarray(grid, c)))
            .collect(),
    }
}

/// NPB `full`'s view: etype = element, filetype = [`cells_struct`]. Offsets in
/// this view count elements the rank can see, so dump d starts at `d·points`.
pub fn full_view(grid: [u64; 3], cells: &[Cell]) -> View {
    View {
        disp: 0,
        etype: element(),
        filetype: cells_struct(grid, cells),
    }
}

/// The PnetCDF kernel's MPI-IO view: etype `MPI_BYTE`, filetype the cell struct
/// resized to lower bound 0 and extent one record (`mpiio_m.f90`). Offsets count
/// the rank's visible bytes, so record r starts at `r·40·points`.
pub fn kernel_view(grid: [u64; 3], cells: &[Cell]) -> View {
    View {
        disp: 0,
        etype: Datatype::Byte,
        filetype: Datatype::Resized {
            lb: 0,
            extent: POINT_BYTES * grid.iter().product::<u64>(),
            inner: Box::new(cells_struct(grid, cells)),
        },
    }
}

/// Byte offset of point (x, y, z) of dump `dump` in the canonical layout.
pub fn canonical_offset(grid: [u64; 3], dump: u64, x: u64, y: u64, z: u64) -> u64 {
    let [nx, ny, nz] = grid;
    POINT_BYTES * (x + nx * (y + ny * (z + nz * dump)))
}

/// The double stored at canonical element index `element`: `element + 1`.
pub fn value(element: u64) -> f64 {
    (element + 1) as f64
}

/// Largest number of dumps whose content stays exact in doubles for `grid`.
pub fn max_dumps(grid: [u64; 3]) -> u64 {
    (1u64 << 53) / (5 * grid.iter().product::<u64>())
}

/// One row of a cell: `len` points along x at (y, z), the unit of `simple` and
/// `fortran` I/O.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Row {
    /// Index of the cell in the rank's cell list.
    pub cell: usize,
    /// First global x.
    pub x: u64,
    /// Global y.
    pub y: u64,
    /// Global z.
    pub z: u64,
    /// Points in the row.
    pub len: u64,
    /// Index of the row's first point in the rank stream.
    pub stream: u64,
}

/// The first wrong double found by a check.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Mismatch {
    /// Canonical element index of the double that is wrong (dump, point, component).
    pub element: u64,
    /// Its byte position in the buffer checked.
    pub byte: u64,
    /// The bits read.
    pub got_bits: u64,
}

/// A rank's cells and the order of its data in memory.
#[derive(Debug, Clone, PartialEq)]
pub struct RankLayout {
    /// Global grid (nx, ny, nz).
    pub grid: [u64; 3],
    /// The rank's cells, NPB order.
    pub cells: Vec<Cell>,
    /// Stream index of each cell's first point, plus the total at the end.
    starts: Vec<u64>,
}

impl RankLayout {
    /// The layout of `cells` over `grid`.
    pub fn new(grid: [u64; 3], cells: Vec<Cell>) -> RankLayout {
        let mut starts = Vec::with_capacity(cells.len() + 1);
        let mut acc = 0;
        starts.push(0);
        for c in &cells {
            acc += c.points();
            starts.push(acc);
        }
        RankLayout {
            grid,
            cells,
            starts,
        }
    }

    /// Points the rank owns.
    pub fn points(&self) -> u64 {
        *self.starts.last().expect("starts has p+1 entries")
    }

    /// Bytes the rank writes per dump.
    pub fn bytes(&self) -> u64 {
        POINT_BYTES * self.points()
    }

    /// Stream index of cell `c`'s first point.
    pub fn cell_start(&self, c: usize) -> u64 {
        self.starts[c]
    }

    /// Where byte `stream_byte` of dump `dump`'s rank stream lies in the rank's
    /// `epio` file: one Fortran sequential record per cell and dump, each with a
    /// length marker before and after it.
    pub fn epio_file_offset(&self, dump: u64, stream_byte: u64) -> u64 {
        let ncells = self.cells.len() as u64;
        let point = stream_byte / POINT_BYTES;
        let cell = self.starts[1..].iter().take_while(|&&s| s <= point).count() as u64;
        let records_before = dump * ncells + cell;
        dump * self.bytes()
            + stream_byte
            + records_before * SEQUENTIAL_MARKERS
            + SEQUENTIAL_MARKERS / 2
    }

    /// The rows of cell `c` in stream order (z outer, y inner).
    pub fn cell_rows(&self, c: usize) -> impl Iterator<Item = Row> + '_ {
        let cell = self.cells[c];
        let start = self.starts[c];
        let [sx, sy, sz] = cell.size;
        (0..sz).flat_map(move |k| {
            (0..sy).map(move |j| Row {
                cell: c,
                x: cell.low[0],
                y: cell.low[1] + j,
                z: cell.low[2] + k,
                len: sx,
                stream: start + (k * sy + j) * sx,
            })
        })
    }

    /// Global point `(x, y, z)` and component of double `e` of the rank stream.
    pub fn stream_point(&self, e: u64) -> (u64, u64, u64, u64) {
        let (point, m) = (e / 5, e % 5);
        let c = (0..self.cells.len())
            .rev()
            .find(|&c| self.starts[c] <= point)
            .expect("a stream point lies in a cell");
        let cell = &self.cells[c];
        let q = point - self.starts[c];
        let [sx, sy, _] = cell.size;
        (
            cell.low[0] + q % sx,
            cell.low[1] + q / sx % sy,
            cell.low[2] + q / (sx * sy),
            m,
        )
    }

    /// All rows of the rank in stream order.
    pub fn rows(&self) -> impl Iterator<Item = Row> + '_ {
        (0..self.cells.len()).flat_map(move |c| self.cell_rows(c))
    }

    /// Canonical element index of component `m` of point `x` of `row` in `dump`.
    fn element(&self, dump: u64, row: &Row, x: u64, m: u64) -> u64 {
        canonical_offset(self.grid, dump, x, row.y, row.z) / 8 + m
    }

    /// Write dump `dump`'s content of `rows` (consecutive in the stream) into `bytes`.
    pub fn fill(&self, bytes: &mut [u8], dump: u64, rows: impl Iterator<Item = Row>) {
        let mut chunks = bytes.chunks_exact_mut(8);
        for row in rows {
            let first = self.element(dump, &row, row.x, 0);
            for e in first..first + 5 * row.len {
                let chunk = chunks
                    .next()
                    .expect("buffer holds the rows it is filled with");
                chunk.copy_from_slice(&value(e).to_le_bytes());
            }
        }
    }

    /// Check `bytes` against dump `dump`'s content of `rows`; the first wrong double.
    pub fn check(
        &self,
        bytes: &[u8],
        dump: u64,
        rows: impl Iterator<Item = Row>,
    ) -> Option<Mismatch> {
        let mut pos = 0u64;
        for row in rows {
            let first = self.element(dump, &row, row.x, 0);
            for e in first..first + 5 * row.len {
                let at = pos as usize;
                let got = bytes
                    .get(at..at + 8)
                    .map(|b| u64::from_le_bytes(b.try_into().expect("8 bytes")))
                    .unwrap_or(0);
                if got != value(e).to_bits() {
                    return Some(Mismatch {
                        element: e,
                        byte: pos,
                        got_bits: got,
                    });
                }
                pos += 8;
            }
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::super::decomp::Decomposition;
    use super::*;

    /// Every byte of an epio stream against the file built record by record: a
    /// 4-byte length, the cell's points, the length again, cell after cell, dump
    /// after dump (uneven cells: 13 = 7 + 6 and 11 = 6 + 5 points).
    #[test]
    fn epio_offsets_skip_the_record_markers() {
        let grid = [13, 11, 12];
        let d = Decomposition::new(grid, 4).unwrap();
        for r in 0..4 {
            let l = RankLayout::new(grid, d.cells(r));
            let mut file_at = 0;
            for dump in 0..3 {
                for c in 0..l.cells.len() {
                    let len = l.cells[c].points() * POINT_BYTES;
                    let first = l.cell_start(c) * POINT_BYTES;
                    for b in [0, 1, len / 2, len - 1] {
                        assert_eq!(
                            l.epio_file_offset(dump, first + b),
                            file_at + 4 + b,
                            "rank {r} dump {dump} cell {c} byte {b}"
                        );
                    }
                    file_at += len + 8;
                }
            }
        }
    }

    #[test]
    fn rows_tile_the_stream_and_land_on_canonical_offsets() {
        let grid = [64, 64, 64];
        let d = Decomposition::new(grid, 9).unwrap();
        let mut seen = vec![false; 64 * 64 * 64];
        for r in 0..9 {
            let l = RankLayout::new(grid, d.cells(r));
            let mut next = 0;
            for row in l.rows() {
                assert_eq!(row.stream, next);
                next += row.len;
                let off = canonical_offset(grid, 0, row.x, row.y, row.z);
                // The row's points are consecutive in the file.
                for i in 0..row.len {
                    let o = canonical_offset(grid, 0, row.x + i, row.y, row.z);
                    assert_eq!(o, off + POINT_BYTES * i);
                    let idx = (o / POINT_BYTES) as usize;
                    assert!(!seen[idx]);
                    seen[idx] = true;
                }
            }
            assert_eq!(next, l.points());
        }
        assert!(seen.iter().all(|&s| s));
        assert_eq!(
            canonical_offset(grid, 2, 1, 2, 3),
            40 * (1 + 64 * (2 + 64 * (3 + 64 * 2)))
        );
    }

    #[test]
    fn fill_writes_the_canonical_file_and_check_finds_flips() {
        // Assemble a whole dump from the ranks' filled streams placed row by row at
        // canonical offsets: the result must be 1, 2, 3, … from the dump's start.
        let grid = [12, 13, 14];
        let d = Decomposition::new(grid, 4).unwrap();
        let dump: u64 = 3;
        let dump_bytes = (40 * 12 * 13 * 14) as usize;
        let mut file = vec![0u8; dump_bytes];
        for r in 0..4 {
            let l = RankLayout::new(grid, d.cells(r));
            let mut buf = vec![0u8; l.bytes() as usize];
            l.fill(&mut buf, dump, l.rows());
            assert_eq!(l.check(&buf, dump, l.rows()), None);
            for row in l.rows() {
                let src = (row.stream * 40) as usize;
                let dst = (canonical_offset(grid, dump, row.x, row.y, row.z)) as usize
                    - dump as usize * dump_bytes;
                let n = (row.len * 40) as usize;
                file[dst..dst + n].copy_from_slice(&buf[src..src + n]);
            }
            let mut bad = buf.clone();
            bad[123] ^= 0x10;
            let m = l.check(&bad, dump, l.rows()).unwrap();
            assert_eq!(m.byte, 120);
        }
        let base = dump * dump_bytes as u64 / 8;
        for (i, chunk) in file.chunks_exact(8).enumerate() {
            let v = f64::from_le_bytes(chunk.try_into().unwrap());
            assert_eq!(v, value(base + i as u64));
        }
    }

    /// The rank's rows as merged `(file offset, length)` runs of dump `dump`.
    fn merged_rows(l: &RankLayout, rows: impl Iterator<Item = Row>, dump: u64) -> Vec<(u64, u64)> {
        let mut out: Vec<(u64, u64)> = Vec::new();
        for row in rows {
            let off = canonical_offset(l.grid, dump, row.x, row.y, row.z);
            let len = row.len * POINT_BYTES;
            match out.last_mut() {
                Some(last) if last.0 + last.1 == off => last.1 += len,
                _ => out.push((off, len)),
            }
        }
        out
    }

    #[test]
    fn filetypes_flatten_to_the_rank_rows() {
        for (grid, nprocs) in [
            ([12, 12, 12], 1),
            ([64, 64, 64], 9),
            ([30, 24, 17], 4),
            ([102, 102, 102], 16),
        ] {
            let d = Decomposition::new(grid, nprocs).unwrap();
            let dump_bytes = POINT_BYTES * grid.iter().product::<u64>();
            assert_eq!((element().size(), element().extent()), (40, 40));
            for r in 0..nprocs {
                let l = RankLayout::new(grid, d.cells(r));
                let ft = cells_struct(grid, &l.cells);
                assert_eq!(ft.size(), l.bytes());
                assert_eq!(ft.lb(), 0);
                assert_eq!(ft.extent(), dump_bytes);
                let rows0 = merged_rows(&l, l.rows(), 0);
                let flat: Vec<(u64, u64)> = ft.extents().map(|(o, n)| (o as u64, n)).collect();
                assert_eq!(flat, rows0, "grid {grid:?}, rank {r} of {nprocs}");
                assert_eq!(ft.extent_count(), rows0.len() as u64);
                // NPB full: dump 2 starts 2·points etypes into the view.
                let v = full_view(grid, &l.cells);
                let got: Vec<(u64, u64)> = v.extents(2 * l.points(), l.bytes()).collect();
                assert_eq!(got, merged_rows(&l, l.rows(), 2));
                // The kernel's view: record 3 starts 3·bytes bytes in; cell c of it at
                // the cell's stream position (methods 2 and 3).
                let k = kernel_view(grid, &l.cells);
                assert_eq!(
                    (k.filetype.size(), k.filetype.extent()),
                    (l.bytes(), dump_bytes)
                );
                let got: Vec<(u64, u64)> = k.extents(3 * l.bytes(), l.bytes()).collect();
                assert_eq!(got, merged_rows(&l, l.rows(), 3));
                for c in 0..l.cells.len() {
                    let at = 3 * l.bytes() + l.cell_start(c) * POINT_BYTES;
                    let got: Vec<(u64, u64)> =
                        k.extents(at, l.cells[c].points() * POINT_BYTES).collect();
                    assert_eq!(got, merged_rows(&l, l.cell_rows(c), 3), "cell {c}");
                }
            }
        }
    }

    #[test]
    fn views_have_the_npb_structure() {
        let grid = [64, 64, 64];
        let d = Decomposition::new(grid, 16).unwrap();
        let cells = d.cells(5);
        let v = full_view(grid, &cells);
        assert_eq!(v.etype, element());
        let Datatype::Struct { fields } = &v.filetype else {
            panic!("a struct")
        };
        assert_eq!(fields.len(), 4);
        for ((disp, blocklen, t), c) in fields.iter().zip(&cells) {
            assert_eq!((*disp, *blocklen), (0, 1));
            assert_eq!(t, &cell_subarray(grid, c));
        }
        let k = kernel_view(grid, &cells);
        assert_eq!(k.etype, Datatype::Byte);
        let Datatype::Resized {
            lb: 0,
            extent,
            inner,
        } = &k.filetype
        else {
            panic!("resized")
        };
        assert_eq!(*extent, 40 * 64 * 64 * 64);
        assert_eq!(**inner, v.filetype);
        assert!(max_dumps(grid) > 50);
    }
}
