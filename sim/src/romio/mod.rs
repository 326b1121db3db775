//! MPI-IO middleware with ROMIO's semantics: which file-system requests an MPI-IO
//! call turns into, and what moves between ranks before them.
//!
//! # What it is for
//!
//! The twin's MPI-IO layer (`mpi`) asks this module how ROMIO would carry out
//! a data access, then executes the answer over the network and storage models:
//!
//! * **independent contiguous I/O**: one request;
//! * **data sieving** ([`sieving`]) for independent noncontiguous access:
//!   windows of `ind_rd_buffer_size` / `ind_wr_buffer_size` bytes, writes as
//!   read-modify-write under a lock on the window (`romio_ds_read`, `romio_ds_write`);
//! * **two-phase collective buffering** ([`two_phase`]): aggregators from
//!   `cb_config_list` and `cb_nodes`, file domains split evenly over them (or with
//!   boundaries moved to `striping_unit` multiples), `cb_buffer_size` rounds, the
//!   exchange of each round, then the aggregators' requests; `romio_cb_read` /
//!   `romio_cb_write` enable, disable or automatic (two-phase only when the
//!   ranks' accesses interleave, else independent I/O);
//! * the hints in effect ([`hints`]), with ROMIO's defaults and the key set
//!   `MPI_File_get_info` reports under MPICH.
//!
//! The planners are pure functions of the ranks' file extents
//! (`piotwin_types::View::extents`, streamed; only small views are kept between
//! passes) and the hints, so tests can check them against an independent
//! computation of the algorithm.
//!
//! # What it is not for
//!
//! It does not move data or take time: `mpi::romio` turns plans into messages
//! (flows over the platform) and `storage::io` requests, round by round. Not
//! modelled: ROMIO's Lustre-specific stripe-cyclic file domains
//! (`ad_lustre_aggregate.c`; the generic aligned split is used on parallel file
//! systems), persistent file realms (`romio_cb_pfr`), the one-sided aggregation
//! and the `romio_cb_alltoall`/`romio_cb_ds_threshold` variants (reported, not modelled).
//!
//! # Sources
//!
//! * R. Thakur, W. Gropp, E. Lusk, *Data Sieving and Collective I/O in ROMIO*,
//!   Proc. 7th Frontiers of Massively Parallel Computation, 1999, pp. 182–189;
//! * R. Thakur, A. Choudhary, *An Extended Two-Phase Method for Accessing
//!   Sections of Out-of-Core Arrays*, Scientific Programming 5(4), 1996;
//! * W. Liao, A. Choudhary, *Dynamically Adapting File Domain Partitioning
//!   Methods for Collective I/O Based on Underlying Parallel File System Locking
//!   Protocols*, SC 2008 (lock-boundary alignment of file domains);
//! * MPICH's ROMIO, read for the rules (not copied): `adio/common/ad_aggregate.c`
//!   (`ADIOI_Calc_file_domains`, `ADIOI_Calc_aggregator`), `ad_write_coll.c`
//!   (interleave test, `ADIOI_Exch_and_write`: windows, holes, read-modify-write),
//!   `ad_read_coll.c`, `ad_read_str.c` / `ad_write_str.c` (data sieving),
//!   `ad_hints.c` and `cb_config_list.c` (defaults, aggregator list).

pub mod hints;
pub mod sieving;
pub mod two_phase;

use piotwin_types::Access;

/// One file-system request the MPI-IO layer made (recorded by [`crate::Twin::trace`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FsRequest {
    /// World rank that made it (an aggregator for collective buffering).
    pub rank: usize,
    /// The file, numbered in order of creation from 0.
    pub file: usize,
    /// Read or write.
    pub access: Access,
    /// File offset, bytes.
    pub offset: u64,
    /// Length, bytes.
    pub len: u64,
}
