//! File-system requests of a rank: the seam between the MPI layer and the
//! storage model (recorded in the trace and in the fast-forward's log), and
//! the extents of an access through a view.

use piotwin_types::{Access, Datatype, View};

use crate::ff::FF_CLASS_EOF;
use crate::ff::FfReq;
use crate::mpi::Sim;
use crate::mpi::Wait;
use crate::mpi::cpu;
use crate::romio::FsRequest;
use crate::storage::{self, PAGE, Storage};

/// The extents of `len` bytes at `offset` etypes through `view`, lazily.
pub(crate) fn view_extents(view: &View, offset: u64, len: u64) -> ViewRuns<'_> {
    if len == 0 {
        ViewRuns::One(None)
    } else if let Some(unit) = basic_view(view) {
        ViewRuns::One(Some((view.disp + offset * unit, len)))
    } else {
        ViewRuns::Walk(view.extents(offset, len))
    }
}

/// The etype size of a view whose filetype is its etype, a basic type (the
/// default byte view, b_eff_io's view of doubles): its data lie contiguous
/// from `disp`, with no filetype to flatten.
pub(crate) fn basic_view(v: &View) -> Option<u64> {
    (matches!(v.etype, Datatype::Byte | Datatype::Double) && v.filetype == v.etype)
        .then(|| v.etype.size())
}

/// The extents of [`view_extents`]: one run of a contiguous view without a
/// walk (or an allocation) per call, else the view's flattened walk.
pub(crate) enum ViewRuns<'v> {
    One(Option<(u64, u64)>),
    Walk(piotwin_types::ViewExtents<'v>),
}

impl Iterator for ViewRuns<'_> {
    type Item = (u64, u64);
    fn next(&mut self) -> Option<(u64, u64)> {
        match self {
            ViewRuns::One(run) => run.take(),
            ViewRuns::Walk(walk) => walk.next(),
        }
    }
}

/// Bytes of an access that lie before the end of file `inode` (what a read returns).
pub(crate) fn readable(s: &Storage, inode: usize, view: &View, offset: u64, len: u64) -> u64 {
    let size = s.size(inode);
    view_extents(view, offset, len)
        .map(|(o, l)| l.min(size.saturating_sub(o)))
        .sum()
}

/// File-system requests `ext` = (offset, bytes) of file `inode` by world rank
/// `world_rank`, one after the other (reads stop at the end of the file; writes grow
/// it); recorded in the trace when it is on. Returns the bytes moved.
/// `placed`: where in its page the buffer byte of the first request's first
/// byte lies, the requests following one another in the buffer (the user's);
/// `None` for MPI-IO's own buffers, whose placement is not modelled.
pub(crate) async fn fs_io(
    sim: &Sim,
    world_rank: usize,
    inode: usize,
    access: Access,
    ext: &[(u64, u64)],
    placed: Option<u64>,
) -> u64 {
    // one system call per request (reads at the end of file included), on the
    // rank's core; a write's under the inode's lock where it takes the whole call
    let (syscalls, locked_call) = {
        let m = sim.model.borrow();
        let calls = ext.iter().filter(|e| e.1 > 0).count();
        let each = m.platform.syscall(m.platform.node_of(world_rank), access);
        match access == Access::Write && m.fs.inode_write_lock && m.fs.locked_syscall {
            true => (0.0, each),
            false => (calls as f64 * each, 0.0),
        }
    };
    if syscalls > 0.0 {
        cpu(sim, world_rank, syscalls).await;
    }
    let (node, reqs, places) = {
        let mut m = sim.model.borrow_mut();
        let storage = sim.storage.borrow();
        let size = storage.size(inode);
        // each request's buffer placement, where the node's copies can alias
        let node = m.platform.node_of(world_rank);
        let mut at = placed
            .map(|p| p % PAGE)
            .filter(|_| m.platform.aliases(node));
        let places: Vec<Option<u64>> = ext
            .iter()
            .map(|&(_, len)| {
                let here = at;
                at = at.map(|p| (p + len) % PAGE);
                here
            })
            .collect();
        let (reqs, places): (Vec<(usize, u64, u64)>, Vec<Option<u64>>) = ext
            .iter()
            .zip(&places)
            .map(|(&(off, len), &place)| {
                let n = match access {
                    Access::Write => len,
                    Access::Read => len.min(size.saturating_sub(off)),
                };
                ((inode, off, n), place)
            })
            .filter(|r| r.0.2 > 0)
            .unzip();
        if let Some(t) = m.trace.as_mut() {
            t.extend(reqs.iter().map(|&(file, offset, len)| FsRequest {
                rank: world_rank,
                file,
                access,
                offset,
                len,
            }));
        }
        if let Some(log) = m.ff.log[world_rank].as_mut() {
            log.extend(ext.iter().zip(&places).filter(|e| e.0.1 > 0).map(
                |(&(off, len), &placed)| FfReq {
                    file: inode,
                    write: access == Access::Write,
                    off,
                    len,
                    placed,
                    class: match access {
                        Access::Write => storage.write_class(node, len),
                        Access::Read if off + len > size => FF_CLASS_EOF,
                        Access::Read => storage.read_class(node, inode, off, off + len, len),
                    },
                },
            ));
        }
        m.waiting[world_rank] = Wait::Io;
        (node, reqs, places)
    };
    storage::io(sim, world_rank, node, access, &reqs, &places, locked_call).await;
    let mut m = sim.model.borrow_mut();
    m.waiting[world_rank] = Wait::Running;
    if access == Access::Write {
        // files grow to the end of the writes
        let mut storage = sim.storage.borrow_mut();
        for &(inode, off, len) in &reqs {
            storage.grow(inode, off + len);
        }
    }
    reqs.iter().map(|r| r.2).sum()
}
