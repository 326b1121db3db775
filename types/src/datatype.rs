//! MPI derived datatypes as plain Rust values, and their lazy flattening.
//!
//! Semantics follow the MPI 3.1 standard, chapter 4 (type maps, lower bound,
//! extent, `MPI_Type_create_subarray`, `MPI_Type_create_darray`, resized types)
//! and chapter 13.3 (file views: displacement, etype, filetype tiling).

use serde::{Deserialize, Serialize};

use crate::flatten::{Cursor, Merged, Plan};

/// Array storage order for subarray and darray types.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Order {
    /// Row-major: the last dimension varies fastest (`MPI_ORDER_C`).
    C,
    /// Column-major: the first dimension varies fastest (`MPI_ORDER_FORTRAN`).
    Fortran,
}

/// Distribution of one dimension of a darray.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Distrib {
    /// `MPI_DISTRIBUTE_BLOCK`.
    Block,
    /// `MPI_DISTRIBUTE_CYCLIC`.
    Cyclic,
    /// `MPI_DISTRIBUTE_NONE`: the dimension is not distributed.
    None,
}

/// `MPI_DISTRIBUTE_DFLT_DARG`: the default distribution argument of a darray dimension.
pub const DARG_DEFAULT: i64 = -1;

/// An MPI datatype described as data.
///
/// Displacements and strides are in bytes unless the variant says otherwise, and
/// may be negative where MPI allows it. A `Datatype` is built once by a benchmark
/// (say, BTIO's struct of p cell subarrays) and then used by both back ends.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum Datatype {
    /// One byte (`MPI_BYTE`).
    Byte,
    /// One 8-byte IEEE double (`MPI_DOUBLE`).
    Double,
    /// `count` copies of `inner`, each one extent of `inner` after the other.
    Contiguous {
        /// Number of copies.
        count: u64,
        /// The element type.
        inner: Box<Datatype>,
    },
    /// `MPI_Type_vector`: `count` blocks of `blocklen` elements, block starts
    /// `stride` **elements** (extents of `inner`) apart.
    Vector {
        /// Number of blocks.
        count: u64,
        /// Elements per block.
        blocklen: u64,
        /// Distance between block starts, in extents of `inner`.
        stride: i64,
        /// The element type.
        inner: Box<Datatype>,
    },
    /// `MPI_Type_create_hvector`: as `Vector` with the stride in bytes.
    Hvector {
        /// Number of blocks.
        count: u64,
        /// Elements per block.
        blocklen: u64,
        /// Distance between block starts, in bytes.
        stride_bytes: i64,
        /// The element type.
        inner: Box<Datatype>,
    },
    /// `MPI_Type_create_hindexed`: blocks of `inner` at byte displacements.
    Hindexed {
        /// `(displacement in bytes, elements in the block)` per block.
        blocks: Vec<(i64, u64)>,
        /// The element type.
        inner: Box<Datatype>,
    },
    /// `MPI_Type_create_subarray`.
    Subarray {
        /// Size of the full array per dimension.
        sizes: Vec<u64>,
        /// Size of the subarray per dimension.
        subsizes: Vec<u64>,
        /// Start of the subarray per dimension.
        starts: Vec<u64>,
        /// Storage order.
        order: Order,
        /// The element type.
        inner: Box<Datatype>,
    },
    /// `MPI_Type_create_darray` for process `rank` of `size` on a `psizes` grid.
    Darray {
        /// Number of processes in the grid.
        size: u64,
        /// This process's rank in the grid.
        rank: u64,
        /// Global array size per dimension.
        gsizes: Vec<u64>,
        /// Distribution per dimension.
        distribs: Vec<Distrib>,
        /// Distribution argument per dimension (`DARG_DEFAULT` for the default).
        dargs: Vec<i64>,
        /// Process grid size per dimension.
        psizes: Vec<u64>,
        /// Storage order.
        order: Order,
        /// The element type.
        inner: Box<Datatype>,
    },
    /// `MPI_Type_create_struct`: fields at byte displacements.
    Struct {
        /// `(displacement in bytes, block length, type)` per field.
        fields: Vec<(i64, u64, Datatype)>,
    },
    /// `MPI_Type_create_resized`: `inner` with a new lower bound and extent.
    Resized {
        /// New lower bound in bytes.
        lb: i64,
        /// New extent in bytes.
        extent: u64,
        /// The type being resized.
        inner: Box<Datatype>,
    },
}

/// Lazy iterator over the extents of one instance of a datatype:
/// `(byte displacement, length)` in type-map order, adjacent runs merged.
pub struct Extents<'a> {
    inner: Box<dyn Iterator<Item = (i64, u64)> + 'a>,
}

impl Iterator for Extents<'_> {
    type Item = (i64, u64);
    fn next(&mut self) -> Option<(i64, u64)> {
        self.inner.next()
    }
}

/// A file view (`MPI_File_set_view`): displacement, elementary type and filetype.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct View {
    /// Byte offset in the file where the view starts.
    pub disp: u64,
    /// The unit of offsets in the view.
    pub etype: Datatype,
    /// The type tiled from `disp`, once per filetype extent.
    pub filetype: Datatype,
}

/// Lazy iterator over the absolute file extents `(file offset, length)` touched by
/// an access through a [`View`], in the order data is laid out; adjacent runs merged.
pub struct ViewExtents<'a> {
    inner: Box<dyn Iterator<Item = (u64, u64)> + 'a>,
}

impl Iterator for ViewExtents<'_> {
    type Item = (u64, u64);
    fn next(&mut self) -> Option<(u64, u64)> {
        self.inner.next()
    }
}

/// A datatype or view that MPI would reject: names the constructor and says what
/// is wrong and what is allowed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{constructor}: {reason}")]
pub struct TypeError {
    /// The constructor or object at fault (`subarray`, `darray`, `view`).
    pub constructor: &'static str,
    /// What is wrong, with the offending values, and what is allowed.
    pub reason: String,
}

fn type_err(constructor: &'static str, reason: String) -> TypeError {
    TypeError {
        constructor,
        reason,
    }
}

/// The indices one process owns along one array dimension, as block-cyclic runs:
/// `nfull` blocks of `blocklen` indices starting at `first + k * period`, then a
/// last block of `tail` indices at `first + nfull * period` (`tail` may be 0).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct DimRuns {
    pub(crate) first: u64,
    pub(crate) blocklen: u64,
    pub(crate) period: u64,
    pub(crate) nfull: u64,
    pub(crate) tail: u64,
}

impl DimRuns {
    /// One block `[start, start + len)`.
    pub(crate) fn single(start: u64, len: u64) -> DimRuns {
        DimRuns {
            first: start,
            blocklen: len,
            period: len,
            nfull: 1,
            tail: 0,
        }
    }

    fn empty() -> DimRuns {
        DimRuns {
            first: 0,
            blocklen: 0,
            period: 0,
            nfull: 0,
            tail: 0,
        }
    }

    /// Number of indices owned.
    fn count(&self) -> u64 {
        self.nfull * self.blocklen + self.tail
    }
}

/// Lower and upper bound of `count` blocks placed `stride` bytes apart, each
/// `n` copies of a type with bounds `(lb, ub)`; `None` when nothing is placed.
fn repeated_bounds(
    count: u64,
    stride: i64,
    n: u64,
    inner: Option<(i64, i64)>,
) -> Option<(i64, i64)> {
    let (lb, ub) = inner?;
    if count == 0 || n == 0 {
        return None;
    }
    let block_ub = lb + n as i64 * (ub - lb);
    let last = (count as i64 - 1) * stride;
    Some((lb + last.min(0), block_ub + last.max(0)))
}

fn union(a: Option<(i64, i64)>, b: Option<(i64, i64)>) -> Option<(i64, i64)> {
    match (a, b) {
        (Some((l1, u1)), Some((l2, u2))) => Some((l1.min(l2), u1.max(u2))),
        (x, None) | (None, x) => x,
    }
}

fn check_dims(
    constructor: &'static str,
    ndims: usize,
    lists: &[(&str, usize)],
) -> Result<(), TypeError> {
    if ndims == 0 {
        return Err(type_err(constructor, "needs at least one dimension".into()));
    }
    for (name, len) in lists {
        if *len != ndims {
            return Err(type_err(
                constructor,
                format!(
                    "`{name}` has {len} entries but the array has {ndims} dimensions; give one per dimension"
                ),
            ));
        }
    }
    Ok(())
}

impl Datatype {
    /// Number of data bytes in one instance (`MPI_Type_size`).
    pub fn size(&self) -> u64 {
        match self {
            Datatype::Byte => 1,
            Datatype::Double => 8,
            Datatype::Contiguous { count, inner } => count * inner.size(),
            Datatype::Vector {
                count,
                blocklen,
                inner,
                ..
            }
            | Datatype::Hvector {
                count,
                blocklen,
                inner,
                ..
            } => count * blocklen * inner.size(),
            Datatype::Hindexed { blocks, inner } => {
                blocks.iter().map(|b| b.1).sum::<u64>() * inner.size()
            }
            Datatype::Subarray {
                subsizes, inner, ..
            } => subsizes.iter().product::<u64>() * inner.size(),
            Datatype::Darray { inner, .. } => {
                let dims = self.darray_dims().unwrap_or_else(|e| panic!("{e}"));
                dims.iter().map(DimRuns::count).product::<u64>() * inner.size()
            }
            Datatype::Struct { fields } => fields.iter().map(|(_, n, t)| n * t.size()).sum(),
            Datatype::Resized { inner, .. } => inner.size(),
        }
    }

    /// Lower bound in bytes (`MPI_Type_get_extent`'s lb), including `Resized` markers.
    pub fn lb(&self) -> i64 {
        self.bounds().map_or(0, |b| b.0)
    }

    /// Extent in bytes (`MPI_Type_get_extent`'s extent): the stride when tiled.
    pub fn extent(&self) -> u64 {
        self.bounds().map_or(0, |(lb, ub)| (ub - lb) as u64)
    }

    /// The extents of one instance, lazily, in type-map order, adjacent runs merged.
    ///
    /// Memory is O(description) for the compiled plan plus O(depth) for the walk;
    /// nothing proportional to the number of extents is ever built.
    pub fn extents(&self) -> Extents<'_> {
        let mut cursor = Cursor::new(Plan::new(self));
        cursor.start(0, 0);
        Extents {
            inner: Box::new(Merged::new(cursor)),
        }
    }

    /// Number of extents `extents()` yields, computed without iterating where the
    /// structure allows (the twin uses it to cost data sieving and two-phase I/O).
    ///
    /// Cost: O(description) — one pass over the compiled plan (an `Hindexed`
    /// costs one step per block), independent of repetition counts.
    pub fn extent_count(&self) -> u64 {
        Plan::new(self).merged_count()
    }

    /// Checks the datatype as the MPI constructors would, recursively: every
    /// subarray and darray well formed. A type that fails here makes `size`,
    /// `extents` and `extent_count` panic (darray) or describe data outside the
    /// array (subarray).
    pub fn validate(&self) -> Result<(), TypeError> {
        match self {
            Datatype::Byte | Datatype::Double => Ok(()),
            Datatype::Contiguous { inner, .. }
            | Datatype::Vector { inner, .. }
            | Datatype::Hvector { inner, .. }
            | Datatype::Hindexed { inner, .. }
            | Datatype::Resized { inner, .. } => inner.validate(),
            Datatype::Subarray {
                sizes,
                subsizes,
                starts,
                inner,
                ..
            } => {
                const C: &str = "subarray";
                check_dims(
                    C,
                    sizes.len(),
                    &[("subsizes", subsizes.len()), ("starts", starts.len())],
                )?;
                for d in 0..sizes.len() {
                    if sizes[d] == 0 || subsizes[d] == 0 {
                        return Err(type_err(
                            C,
                            format!(
                                "dimension {d}: sizes = {} and subsizes = {} must both be at least 1",
                                sizes[d], subsizes[d]
                            ),
                        ));
                    }
                    if starts[d] + subsizes[d] > sizes[d] {
                        return Err(type_err(
                            C,
                            format!(
                                "dimension {d}: starts + subsizes = {} + {} exceeds sizes = {}; \
                                 the subarray must lie inside the array",
                                starts[d], subsizes[d], sizes[d]
                            ),
                        ));
                    }
                }
                inner.validate()
            }
            Datatype::Darray { inner, .. } => {
                self.darray_dims()?;
                inner.validate()
            }
            Datatype::Struct { fields } => fields.iter().try_for_each(|f| f.2.validate()),
        }
    }

    /// A validated `MPI_Type_create_subarray`: `starts[d] + subsizes[d] <= sizes[d]`,
    /// all sizes at least 1, one entry per dimension.
    pub fn subarray(
        sizes: Vec<u64>,
        subsizes: Vec<u64>,
        starts: Vec<u64>,
        order: Order,
        inner: Datatype,
    ) -> Result<Datatype, TypeError> {
        let t = Datatype::Subarray {
            sizes,
            subsizes,
            starts,
            order,
            inner: Box::new(inner),
        };
        t.validate()?;
        Ok(t)
    }

    /// A validated `MPI_Type_create_darray` for process `rank` of `size`.
    #[allow(clippy::too_many_arguments)]
    pub fn darray(
        size: u64,
        rank: u64,
        gsizes: Vec<u64>,
        distribs: Vec<Distrib>,
        dargs: Vec<i64>,
        psizes: Vec<u64>,
        order: Order,
        inner: Datatype,
    ) -> Result<Datatype, TypeError> {
        let t = Datatype::Darray {
            size,
            rank,
            gsizes,
            distribs,
            dargs,
            psizes,
            order,
            inner: Box::new(inner),
        };
        t.validate()?;
        Ok(t)
    }

    /// `(lb, ub)` in bytes, `None` for a type with an empty type map (lb = ub = 0).
    ///
    /// Bounds are the min/max over the placed parts (MPI 3.1 §4.1.6; the removed
    /// MPI-1 "sticky" `MPI_LB`/`MPI_UB` markers are not modelled, as MPICH 4 does not).
    /// A struct whose fields are not all of one type has its extent rounded up to
    /// the largest alignment of the basic types it holds (the ε of §4.1.6), as
    /// MPICH does: `{double at 0, byte at 8}` has extent 16.
    fn bounds(&self) -> Option<(i64, i64)> {
        match self {
            Datatype::Byte => Some((0, 1)),
            Datatype::Double => Some((0, 8)),
            Datatype::Contiguous { count, inner } => {
                repeated_bounds(*count, inner.extent() as i64, 1, inner.bounds())
            }
            Datatype::Vector {
                count,
                blocklen,
                stride,
                inner,
            } => repeated_bounds(
                *count,
                stride * inner.extent() as i64,
                *blocklen,
                inner.bounds(),
            ),
            Datatype::Hvector {
                count,
                blocklen,
                stride_bytes,
                inner,
            } => repeated_bounds(*count, *stride_bytes, *blocklen, inner.bounds()),
            Datatype::Hindexed { blocks, inner } => {
                let ib = inner.bounds();
                blocks.iter().fold(None, |acc, &(d, n)| {
                    union(
                        acc,
                        repeated_bounds(1, 0, n, ib).map(|(l, u)| (l + d, u + d)),
                    )
                })
            }
            Datatype::Subarray { sizes, inner, .. } => {
                Some((0, (sizes.iter().product::<u64>() * inner.extent()) as i64))
            }
            Datatype::Darray { gsizes, inner, .. } => {
                Some((0, (gsizes.iter().product::<u64>() * inner.extent()) as i64))
            }
            Datatype::Struct { fields } => {
                let b = fields.iter().fold(None, |acc, (d, n, t)| {
                    union(
                        acc,
                        repeated_bounds(1, 0, *n, t.bounds()).map(|(l, u)| (l + d, u + d)),
                    )
                });
                let mixed = fields.windows(2).any(|w| w[0].2 != w[1].2);
                match b {
                    Some((lb, ub)) if mixed => {
                        let align = self.alignment() as i64;
                        let ext = ub - lb;
                        Some((lb, lb + (ext + align - 1) / align * align))
                    }
                    other => other,
                }
            }
            Datatype::Resized { lb, extent, .. } => Some((*lb, lb + *extent as i64)),
        }
    }

    /// Largest alignment in bytes of the basic types held (x86-64: double 8, byte 1).
    fn alignment(&self) -> u64 {
        match self {
            Datatype::Byte => 1,
            Datatype::Double => 8,
            Datatype::Struct { fields } => {
                fields.iter().map(|f| f.2.alignment()).max().unwrap_or(1)
            }
            Datatype::Contiguous { inner, .. }
            | Datatype::Vector { inner, .. }
            | Datatype::Hvector { inner, .. }
            | Datatype::Hindexed { inner, .. }
            | Datatype::Subarray { inner, .. }
            | Datatype::Darray { inner, .. }
            | Datatype::Resized { inner, .. } => inner.alignment(),
        }
    }

    /// Per dimension, the indices this darray's process owns (MPI 3.1 §4.1.4).
    ///
    /// The process grid is row-major in `psizes` whatever `order` says. Block with
    /// `DARG_DEFAULT` uses ⌈gsize/psize⌉; cyclic with `DARG_DEFAULT` is cyclic(1);
    /// a `None` dimension is not distributed (every process owns all of it, the
    /// process coordinate is ignored, as ROMIO and MPICH do).
    pub(crate) fn darray_dims(&self) -> Result<Vec<DimRuns>, TypeError> {
        const C: &str = "darray";
        let Datatype::Darray {
            size,
            rank,
            gsizes,
            distribs,
            dargs,
            psizes,
            ..
        } = self
        else {
            unreachable!("darray_dims is only called on a Darray")
        };
        check_dims(
            C,
            gsizes.len(),
            &[
                ("distribs", distribs.len()),
                ("dargs", dargs.len()),
                ("psizes", psizes.len()),
            ],
        )?;
        if psizes.iter().product::<u64>() != *size || *size == 0 {
            return Err(type_err(
                C,
                format!(
                    "the process grid psizes = {psizes:?} has to hold exactly size = {size} processes"
                ),
            ));
        }
        if rank >= size {
            return Err(type_err(
                C,
                format!("rank = {rank} must be below size = {size}"),
            ));
        }
        let mut coords = vec![0u64; psizes.len()];
        let mut r = *rank;
        for d in (0..psizes.len()).rev() {
            coords[d] = r % psizes[d];
            r /= psizes[d];
        }
        let mut out = Vec::with_capacity(gsizes.len());
        for d in 0..gsizes.len() {
            let (g, p, c, darg) = (gsizes[d], psizes[d], coords[d], dargs[d]);
            if g == 0 {
                return Err(type_err(
                    C,
                    format!("dimension {d}: gsizes = 0; it must be at least 1"),
                ));
            }
            if darg != DARG_DEFAULT && darg < 1 && distribs[d] != Distrib::None {
                return Err(type_err(
                    C,
                    format!(
                        "dimension {d}: darg = {darg}; allowed are DARG_DEFAULT (-1) or a positive block size"
                    ),
                ));
            }
            out.push(match distribs[d] {
                Distrib::None => DimRuns::single(0, g),
                Distrib::Block => {
                    let b = if darg == DARG_DEFAULT { g.div_ceil(p) } else { darg as u64 };
                    if b * p < g {
                        return Err(type_err(
                            C,
                            format!(
                                "dimension {d}: block size darg = {b} times psize = {p} does not cover gsize = {g}; \
                                 use darg >= {} or DARG_DEFAULT",
                                g.div_ceil(p)
                            ),
                        ));
                    }
                    let lo = c * b;
                    if lo >= g { DimRuns::empty() } else { DimRuns::single(lo, b.min(g - lo)) }
                }
                Distrib::Cyclic => {
                    let k = if darg == DARG_DEFAULT { 1 } else { darg as u64 };
                    let first = c * k;
                    if first >= g {
                        DimRuns::empty()
                    } else {
                        let period = p * k;
                        let nblocks = (g - first).div_ceil(period);
                        let last_len = (g - first - (nblocks - 1) * period).min(k);
                        if last_len == k {
                            DimRuns { first, blocklen: k, period, nfull: nblocks, tail: 0 }
                        } else {
                            DimRuns { first, blocklen: k, period, nfull: nblocks - 1, tail: last_len }
                        }
                    }
                }
            });
        }
        Ok(out)
    }
}

impl View {
    /// The default view: displacement 0, etype and filetype `MPI_BYTE`.
    pub fn bytes() -> View {
        View {
            disp: 0,
            etype: Datatype::Byte,
            filetype: Datatype::Byte,
        }
    }

    /// A validated view (see [`View::validate`]).
    pub fn new(disp: u64, etype: Datatype, filetype: Datatype) -> Result<View, TypeError> {
        let v = View {
            disp,
            etype,
            filetype,
        };
        v.validate()?;
        Ok(v)
    }

    /// Checks what `MPI_File_set_view` requires and `extents` relies on: both
    /// types valid, the etype holds data, the filetype holds a whole number (at
    /// least one) of etypes.
    pub fn validate(&self) -> Result<(), TypeError> {
        const C: &str = "view";
        self.etype.validate()?;
        self.filetype.validate()?;
        let (es, fs) = (self.etype.size(), self.filetype.size());
        if es == 0 {
            return Err(type_err(
                C,
                "the etype holds no data; it must hold at least one byte".into(),
            ));
        }
        if fs == 0 || fs % es != 0 {
            return Err(type_err(
                C,
                format!(
                    "the filetype holds {fs} bytes, which is not a positive multiple of the etype's {es} bytes; \
                     build the filetype from the etype"
                ),
            ));
        }
        Ok(())
    }

    /// The absolute file extents touched by `len` bytes of data accessed at
    /// `offset` etypes into this view (as `MPI_File_write_at(fh, offset, …)` does),
    /// lazily; the filetype is tiled as often as needed.
    ///
    /// The access skips `offset · size(etype)` data bytes of the tiled filetype
    /// (tile `k` placed at `disp + k · extent(filetype)`), so it may start inside a
    /// tile and inside a run. Cost per call: O(description) to compile the
    /// filetype, O(depth) to seek; O(1) for a contiguous filetype (such as the
    /// default view), which yields a single extent.
    ///
    /// Panics when the filetype holds no data while `len > 0`, or when the view
    /// places data before byte 0 of the file ([`View::validate`] catches the first).
    pub fn extents(&self, offset: u64, len: u64) -> ViewExtents<'_> {
        if len == 0 {
            return ViewExtents {
                inner: Box::new(std::iter::empty()),
            };
        }
        let skip = offset * self.etype.size();
        let plan = Plan::new(&self.filetype);
        let ext = self.filetype.extent() as i64;
        let disp = self.disp as i64;
        let to_file = |(d, l): (i64, u64)| -> (u64, u64) {
            let d = u64::try_from(d).unwrap_or_else(|_| {
                panic!("view: data at file offset {d} lies before the start of the file; check disp and filetype")
            });
            (d, l)
        };
        if let Some((d, l)) = plan.single_run()
            && l as i64 == ext
        {
            // Tiles abut: the access is one contiguous extent.
            return ViewExtents {
                inner: Box::new(std::iter::once(to_file((disp + d + skip as i64, len)))),
            };
        }
        let mut cursor = Cursor::new(plan);
        let fsize = cursor.instance_size();
        assert!(
            fsize > 0,
            "view: the filetype holds no data, so no byte can be accessed through it"
        );
        let tile = skip / fsize;
        cursor.start(disp + tile as i64 * ext, skip % fsize);
        let tiles = Tiles {
            cursor,
            tile,
            ext,
            disp,
            remaining: len,
        };
        ViewExtents {
            inner: Box::new(Merged::new(tiles).map(to_file)),
        }
    }
}

/// Runs of the filetype tiled without end, cut off after `remaining` bytes.
struct Tiles<'a> {
    cursor: Cursor<'a>,
    tile: u64,
    ext: i64,
    disp: i64,
    remaining: u64,
}

impl Iterator for Tiles<'_> {
    type Item = (i64, u64);

    fn next(&mut self) -> Option<(i64, u64)> {
        if self.remaining == 0 {
            return None;
        }
        let (d, l) = match self.cursor.next() {
            Some(run) => run,
            None => {
                self.tile += 1;
                self.cursor
                    .start(self.disp + self.tile as i64 * self.ext, 0);
                self.cursor.next()?
            }
        };
        let l = l.min(self.remaining);
        self.remaining -= l;
        Some((d, l))
    }
}
