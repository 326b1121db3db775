//! Plain descriptions shared by the benchmarks, the twin (`piotwin-sim`) and the
//! real back end (`piotwin-real`): MPI derived datatypes, MPI-IO hints, and the
//! vocabulary of accesses, open modes, reductions and I/O errors.
//!
//! What it is for: one Rust value that says "this rank's view of the file is the
//! struct of these p subarrays" or "cb_nodes=4", which the real back end turns into
//! `MPI_Type_create_*` calls and an `MPI_Info`, and the twin flattens into file
//! extents. What it is not: it knows no MPI and no simulation, and it never
//! materialises a datatype's extents into a vector — flattening is an iterator, so
//! a view over millions of extents costs O(depth) memory.
#![warn(missing_docs, unreachable_pub)]

mod datatype;
mod flatten;
mod hints;
pub mod stop;
mod vocab;

pub use datatype::{DARG_DEFAULT, Datatype, Distrib, Extents, Order, TypeError, View, ViewExtents};
pub use hints::{Hints, HintsError};
pub use vocab::{
    Access, Api, Coordination, FortranAccess, IoError, IoResult, KernelKind, Op, OpenMode,
    Position, ReduceOp, Repeat, SEQUENTIAL_MARKERS, Scope, SequentialPosition, within_budget,
};
