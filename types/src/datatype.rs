//! MPI derived datatypes as plain Rust values, and their lazy flattening.
//!
//! Semantics follow the MPI 3.1 standard, chapter 4 (type maps, lower bound,
//! extent, `MPI_Type_create_subarray`, `MPI_Type_create_darray`, resized types)
//! and chapter 13.3 (file views: displacement, etype, filetype tiling).

use serde::{Deserialize, Serialize};

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

impl Datatype {
    /// Number of data bytes in one instance (`MPI_Type_size`).
    pub fn size(&self) -> u64 {
        todo!("piotwin-types: Datatype::size")
    }

    /// Lower bound in bytes (`MPI_Type_get_extent`'s lb), including `Resized` markers.
    pub fn lb(&self) -> i64 {
        todo!("piotwin-types: Datatype::lb")
    }

    /// Extent in bytes (`MPI_Type_get_extent`'s extent): the stride when tiled.
    pub fn extent(&self) -> u64 {
        todo!("piotwin-types: Datatype::extent")
    }

    /// The extents of one instance, lazily, in type-map order, adjacent runs merged.
    pub fn extents(&self) -> Extents<'_> {
        todo!("piotwin-types: Datatype::extents")
    }

    /// Number of extents `extents()` yields, computed without iterating where the
    /// structure allows (the twin uses it to cost data sieving and two-phase I/O).
    pub fn extent_count(&self) -> u64 {
        todo!("piotwin-types: Datatype::extent_count")
    }
}

impl View {
    /// The default view: displacement 0, etype and filetype `MPI_BYTE`.
    pub fn bytes() -> View {
        View { disp: 0, etype: Datatype::Byte, filetype: Datatype::Byte }
    }

    /// The absolute file extents touched by `len` bytes of data accessed at
    /// `offset` etypes into this view (as `MPI_File_write_at(fh, offset, …)` does),
    /// lazily; the filetype is tiled as often as needed.
    pub fn extents(&self, offset: u64, len: u64) -> ViewExtents<'_> {
        let _ = (offset, len);
        todo!("piotwin-types: View::extents")
    }
}
