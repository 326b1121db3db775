//! The kinds of file system the twin models, behind one trait: where a file's
//! bytes live (which server, at which object offset), what `close` costs
//! beyond metadata, and what ROMIO's driver for it reports. Everything else
//! (caches, devices, extent locks, metadata queues) is common to all kinds and
//! lives in the storage model around it.
//!
//! To add a kind: a module here implementing [`FileSystemKind`], a variant of
//! `scenario::FsKind`, and its arms in [`kind`] and [`Kind`].

mod local;
mod nfs;
mod parallel;

use std::collections::BTreeMap;

use crate::scenario::{FileSystem, FsKind};

/// Pieces of a request at one server: (file offset, object offset, length).
pub(crate) type Pieces = Vec<(u64, u64, u64)>;

/// What ROMIO's driver for a file system puts in effect.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct RomioDriver {
    /// `MPI_File_get_info`'s file-system prefix as MPICH reports it.
    pub(crate) fs_type: &'static str,
    /// The striping unit in effect when the hints give none (0: none).
    pub(crate) striping_unit: u64,
    /// The striping factor in effect, where the file system stripes.
    pub(crate) striping_factor: Option<usize>,
    /// Whether the file's layout is the file system's, so a `striping_unit`
    /// hint changes nothing (elsewhere ROMIO's generic driver uses it to align
    /// file domains).
    pub(crate) layout_fixed: bool,
}

/// One kind of file system.
pub(crate) trait FileSystemKind {
    /// `[a, b)` of `file` split into per-server pieces, servers ascending, on
    /// a system of `servers` servers.
    fn map(&self, file: usize, a: u64, b: u64, servers: usize) -> BTreeMap<usize, Pieces>;
    /// Whether `close` writes back the client's dirty data of the file, and
    /// `open` drops cached pages other clients made stale (NFS's close-to-open
    /// consistency).
    fn flush_on_close(&self) -> bool;
    /// Whether a sequential stream moves from server to server (striping over
    /// more than one), paying a positioning at each move.
    fn stripes_across_servers(&self) -> bool;
    /// ROMIO's driver for it.
    fn romio(&self) -> RomioDriver;
}

/// The model of the file system `fs` describes.
pub(crate) fn kind(fs: &FileSystem) -> Kind {
    match fs.kind {
        FsKind::Local => Kind::Local(local::Local),
        FsKind::Nfs => Kind::Nfs(nfs::Nfs),
        FsKind::Parallel => Kind::Parallel(parallel::Parallel {
            stripe_size: fs.stripe_size,
            stripe_count: fs.stripe_count,
        }),
    }
}

/// One of the kinds, dispatched statically (`map` runs per remote request).
pub(crate) enum Kind {
    Local(local::Local),
    Nfs(nfs::Nfs),
    Parallel(parallel::Parallel),
}

impl Kind {
    fn get(&self) -> &dyn FileSystemKind {
        match self {
            Kind::Local(k) => k,
            Kind::Nfs(k) => k,
            Kind::Parallel(k) => k,
        }
    }
}

impl FileSystemKind for Kind {
    fn map(&self, file: usize, a: u64, b: u64, servers: usize) -> BTreeMap<usize, Pieces> {
        match self {
            Kind::Local(k) => k.map(file, a, b, servers),
            Kind::Nfs(k) => k.map(file, a, b, servers),
            Kind::Parallel(k) => k.map(file, a, b, servers),
        }
    }
    fn flush_on_close(&self) -> bool {
        self.get().flush_on_close()
    }
    fn stripes_across_servers(&self) -> bool {
        self.get().stripes_across_servers()
    }
    fn romio(&self) -> RomioDriver {
        self.get().romio()
    }
}

/// The whole range at the one server (local and NFS file systems).
fn one_server(a: u64, b: u64) -> BTreeMap<usize, Pieces> {
    BTreeMap::from([(0, vec![(a, a, b - a)])])
}
