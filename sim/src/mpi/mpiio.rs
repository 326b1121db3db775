//! MPI-IO files of a rank: open and close, views and hints, the data calls
//! (blocking and nonblocking), sync, size, delete.

use std::cell::Cell;
use std::rc::Rc;

use piotwin_types::{
    Access, Api, Coordination, Datatype, FortranAccess, Hints, IoError, Op, OpenMode, Position,
    SEQUENTIAL_MARKERS, SequentialPosition, View,
};

use crate::Rank;
use crate::engine::Signal;
use crate::mpi::Model;
use crate::mpi::Wait;
use crate::mpi::comm::CollOut;
use crate::mpi::comm::Comm;
use crate::mpi::comm::Contrib;
use crate::mpi::comm::Kind;
use crate::mpi::fsio::readable;
use crate::mpi::romio::independent_io;
use crate::romio::hints::{Effective, HintError};
use crate::storage::{self, Storage};

pub(crate) struct SharedPtr {
    /// Position in etypes.
    pub(crate) pos: u64,
    /// Virtual time the pointer's lock is free again.
    pub(crate) free_at: f64,
}

/// An open file of one rank.
pub struct File {
    pub(crate) inode: usize,
    pub(crate) path: String,
    pub(crate) api: Api,
    pub(crate) mode: OpenMode,
    pub(crate) comm: Rc<Comm>,
    pub(crate) rank: usize,
    pub(crate) seq: Cell<u64>,
    pub(crate) view: View,
    pub(crate) ptr: usize,
    /// The MPI-IO hints in effect.
    pub(crate) hints: Rc<Effective>,
    /// The hints given at open and by later `set_info` calls.
    pub(crate) given: Hints,
    /// Collective data accesses made so far (numbers the calls).
    pub(crate) cseq: Cell<u64>,
    /// A sequential Fortran unit: the records so far.
    pub(crate) records: Cell<SequentialPosition>,
}

/// A started nonblocking access, completed by [`Rank::wait_all`].
pub struct Pending(Started);

/// Where an access stands once started.
enum Started {
    /// Done: the bytes moved.
    Done(u64),
    /// An independent access running as a task of its own: the signal it
    /// fires when done, and the bytes it moves.
    Running(Signal, u64),
    /// A collective access done at [`Rank::wait_all`]: read or write, offset
    /// (etypes), length, the buffer's placement.
    Deferred(Access, u64, u64, Option<u64>),
}

pub(crate) fn is_byte_view(v: &View) -> bool {
    v.etype == Datatype::Byte && v.filetype == Datatype::Byte
}

/// Size of the view's etype in bytes (the default byte view needs no flattening).
pub(crate) fn etype_size(v: &View) -> u64 {
    if v.etype == Datatype::Byte {
        1
    } else {
        v.etype.size().max(1)
    }
}

impl Rank {
    /// Opens `path`: all ranks of this communicator together when `shared`
    /// (create once, then one open per rank at the metadata server), else this rank alone.
    pub async fn open(
        &self,
        path: &str,
        mode: OpenMode,
        shared: bool,
        api: Api,
    ) -> Result<File, IoError> {
        self.open_with_hints(path, mode, shared, api, &Hints::new())
            .await
    }

    /// [`Rank::open`] with MPI-IO hints (`MPI_Info`), resolved as ROMIO does
    /// (see [`File::hints_in_effect`]); a hint value ROMIO would not take is an
    /// error naming it. Every rank of a shared open must give the same hints.
    pub async fn open_with_hints(
        &self,
        path: &str,
        mode: OpenMode,
        shared: bool,
        api: Api,
        hints: &Hints,
    ) -> Result<File, IoError> {
        let hints_given = hints;
        if api == Api::MpiIo {
            let first = self.first_use(|used| &mut used.0);
            self.call_cost(|c| c.open + if first { c.first_open } else { 0.0 })
                .await;
        }
        let (rank, opened) = if shared && self.size() > 1 {
            let out = self.on_comm(Contrib::None, Kind::Open(path, mode)).await;
            let opened = match out.get() {
                Some(CollOut::Opened(r)) => r.clone(),
                _ => unreachable!("open yields a file"),
            };
            (self.rank, opened)
        } else {
            let (done, opened) = {
                let mut m = self.sim.model.borrow_mut();
                let now = self.now();
                let node = m.platform.node_of(self.world_rank);
                let (cost, opened) =
                    open_inode(&mut m, &mut self.sim.storage.borrow_mut(), path, mode);
                let opened = opened.map(|(i, p)| (i, p, m.new_comm(vec![self.world_rank])));
                (m.md_op(now, node, cost), opened)
            };
            self.until(done, Wait::Io).await;
            (0, opened)
        };
        let (inode, ptr, comm) = opened?;
        {
            let node = self.sim.platform.node_of(self.world_rank);
            self.sim.storage.borrow_mut().revalidate(node, inode);
        }
        let hints = self
            .resolve_hints(&comm, hints)
            .map_err(|e| IoError::Call {
                op: "open".into(),
                path: path.into(),
                message: e.to_string(),
            })?;
        Ok(File {
            inode,
            path: path.to_string(),
            api,
            mode,
            comm,
            rank,
            seq: Cell::new(0),
            view: View::bytes(),
            ptr,
            hints,
            given: hints_given.clone(),
            cseq: Cell::new(0),
            records: Cell::new(SequentialPosition::default()),
        })
    }

    /// `MPI_File_set_info` (collective over the file's ranks): lays `hints` over
    /// those given so far. As in ROMIO, the aggregator list and the striping are
    /// fixed when the file is opened; buffer sizes and the collective-buffering
    /// and data-sieving switches take effect for the following calls.
    pub fn set_info(&self, file: &mut File, hints: &Hints) -> Result<(), IoError> {
        if file.api != Api::MpiIo {
            return Err(IoError::Invalid(format!(
                "set_info on `{}`: {} files take no hints",
                file.path,
                api_name(file.api)
            )));
        }
        let given = file.given.merged(hints);
        let mut eff = (*self
            .resolve_hints(&file.comm, &given)
            .map_err(|e| IoError::Call {
                op: "set_info".into(),
                path: file.path.clone(),
                message: e.to_string(),
            })?)
        .clone();
        eff.aggregators = file.hints.aggregators.clone();
        eff.striping_unit = file.hints.striping_unit;
        eff.striping_factor = file.hints.striping_factor;
        file.hints = Rc::new(eff);
        file.given = given;
        Ok(())
    }

    /// The hints in effect on a file of communicator `comm` (resolved once per
    /// collective open and shared by its ranks).
    pub(crate) fn resolve_hints(
        &self,
        comm: &Comm,
        given: &Hints,
    ) -> Result<Rc<Effective>, HintError> {
        let mut m = self.sim.model.borrow_mut();
        let n = comm.members.len();
        if let Some((h, eff, left)) = m.opened_hints.get_mut(&comm.id)
            && h == given
        {
            let eff = eff.clone();
            *left -= 1;
            if *left == 0 {
                m.opened_hints.remove(&comm.id);
            }
            return Ok(eff);
        }
        let nodes: Vec<usize> = comm
            .members
            .iter()
            .map(|&w| m.platform.node_of(w))
            .collect();
        let eff = Rc::new(Effective::resolve(given, &nodes, &m.fs)?);
        if n > 1 && !m.opened_hints.contains_key(&comm.id) {
            m.opened_hints
                .insert(comm.id, (given.clone(), eff.clone(), n - 1));
        }
        Ok(eff)
    }

    /// Sets `file`'s view (collective over the file's ranks). MPI-IO files only;
    /// resets the shared file pointer.
    pub async fn set_view(&self, file: &mut File, view: &View) -> Result<(), IoError> {
        if file.api != Api::MpiIo {
            return Err(IoError::Invalid(format!(
                "set_view on `{}`: {} files have no views",
                file.path,
                api_name(file.api)
            )));
        }
        self.on_file(file, Contrib::None, Kind::SetView(file.ptr))
            .await;
        file.view = view.clone();
        Ok(())
    }

    pub(crate) fn check(
        &self,
        file: &File,
        access: Access,
        coord: Coordination,
        pos: Position,
    ) -> Result<(), IoError> {
        if file.api == Api::MpiIo && file.hints.no_indep_rw && coord == Coordination::Independent {
            return Err(IoError::Invalid(format!(
                "`{}` was opened with romio_no_indep_rw=true: only collective accesses are allowed",
                file.path
            )));
        }
        if file.api != Api::MpiIo && pos == Position::SharedPointer {
            return Err(IoError::Invalid(format!(
                "`{}` is a {} file: it has no shared file pointer (only explicit offsets)",
                file.path,
                api_name(file.api)
            )));
        }
        let denied = match access {
            Access::Write => file.mode == OpenMode::Read,
            Access::Read => file.mode == OpenMode::Create,
        };
        if denied {
            let (op, why) = match access {
                Access::Write => ("write", "the file is open read-only"),
                Access::Read => ("read", "the file is open write-only"),
            };
            return Err(IoError::Call {
                op: op.into(),
                path: file.path.clone(),
                message: why.into(),
            });
        }
        Ok(())
    }

    /// `MPI_File_*_shared`: takes the shared pointer under its lock (one update at a
    /// time, `mpiio.shared_pointer` each) and advances it by `len` bytes; returns
    /// the offset (in etypes) this access starts at.
    pub(crate) async fn take_shared_pointer(&self, file: &File, len: u64) -> u64 {
        let (ready, off) = {
            let mut m = self.sim.model.borrow_mut();
            let cost = m.shared_pointer_cost;
            let now = self.now();
            let p = &mut m.ptrs[file.ptr];
            let begin = now.max(p.free_at);
            p.free_at = begin + cost;
            let off = p.pos;
            p.pos += len / etype_size(&file.view);
            (begin + cost, off)
        };
        self.until(ready, Wait::Io).await;
        off
    }

    /// Moves `len` bytes as `access`/`coord`/`pos` say; returns the bytes moved
    /// (short at end of file for reads). MPI-IO accesses go through ROMIO's
    /// methods (see [`crate::romio`]); POSIX ones are one request per call.
    pub async fn xfer(&self, file: &mut File, op: Op, len: u64) -> Result<u64, IoError> {
        self.xfer_placed(file, op, len, None).await
    }

    /// [`Rank::xfer`] with the buffer `placed` bytes past a page boundary
    /// (`None`: page-aligned, as [`Rank::xfer`]): a page-cache copy between it
    /// and the file's pages runs at `nodes.cache.aliased_bw` where the
    /// destination lies a few bytes past the source modulo 4 KiB.
    pub async fn xfer_placed(
        &self,
        file: &mut File,
        op: Op,
        len: u64,
        placed: Option<u64>,
    ) -> Result<u64, IoError> {
        self.count_call(file, op);
        match self.start(file, op, len, true, placed).await? {
            Started::Done(moved) => Ok(moved),
            _ => unreachable!("a blocking access completes as it starts"),
        }
    }

    /// Starts a nonblocking access. Independent ones start now; collective ones
    /// are deferred and completed together by [`Rank::wait_all`].
    pub async fn post(&self, file: &mut File, op: Op, len: u64) -> Result<Pending, IoError> {
        self.post_placed(file, op, len, None).await
    }

    /// [`Rank::post`] with the buffer's placement, as [`Rank::xfer_placed`].
    pub async fn post_placed(
        &self,
        file: &mut File,
        op: Op,
        len: u64,
        placed: Option<u64>,
    ) -> Result<Pending, IoError> {
        self.count_nonblocking();
        self.start(file, op, len, false, placed).await.map(Pending)
    }

    /// An access as `op` says, blocking or not (one code path for both): the
    /// checks and the call's CPU cost, then, blocking, the access done; else an
    /// independent access started as a task of its own and a collective one
    /// deferred to [`Rank::wait_all`].
    async fn start(
        &self,
        file: &mut File,
        op: Op,
        len: u64,
        blocking: bool,
        placed: Option<u64>,
    ) -> Result<Started, IoError> {
        let Op { access, coord, pos } = op;
        // POSIX and Fortran have no collective calls: every rank makes its own, as
        // the real back end does.
        let coord = match file.api {
            Api::Posix | Api::Fortran(_) => Coordination::Independent,
            Api::MpiIo => coord,
        };
        self.check(file, access, coord, pos)?;
        if file.api == Api::MpiIo && coord == Coordination::Independent {
            self.call_cost(|c| c.independent_call).await;
        }
        let off = match (coord, pos) {
            (_, Position::At(off)) => off,
            (Coordination::Independent, Position::SharedPointer) => {
                self.take_shared_pointer(file, len).await
            }
            (Coordination::Collective, Position::SharedPointer) if blocking => {
                self.ordered_offset(file, len).await
            }
            (Coordination::Collective, Position::SharedPointer) => {
                return Err(IoError::Invalid(
                    "nonblocking ordered (collective shared-pointer) access does not exist in MPI; use the blocking call".into(),
                ));
            }
        };
        let (off, len, markers) = match file.api {
            Api::Fortran(unit) => self.fortran_statements(file, unit, off, len).await?,
            _ => (off, len, 0),
        };
        Ok(match (coord, blocking) {
            (Coordination::Independent, true) => Started::Done(
                self.independent(file, access, off, len, placed)
                    .await
                    .saturating_sub(markers),
            ),
            (Coordination::Collective, true) => {
                Started::Done(self.collective_io(file, access, off, len, placed).await)
            }
            (Coordination::Independent, false) => {
                let (started, bytes) = self.spawn_independent(file, access, off, len, placed);
                Started::Running(started, bytes.saturating_sub(markers))
            }
            (Coordination::Collective, false) => Started::Deferred(access, off, len, placed),
        })
    }

    /// A Fortran unit's access of `len` bytes at `off`: the runtime's statements
    /// (`nodes.fortran_statement` of CPU each), and where the bytes lie in the file:
    /// a sequential record at the next record's place with its markers around it.
    /// Returns (file offset, file bytes, marker bytes among them).
    async fn fortran_statements(
        &self,
        file: &File,
        unit: FortranAccess,
        off: u64,
        len: u64,
    ) -> Result<(u64, u64, u64), IoError> {
        if let Some(why) = unit.refuses(off, len) {
            return Err(IoError::Invalid(format!("`{}`: {why}", file.path)));
        }
        let placed = match unit {
            FortranAccess::Direct { .. } => (off, len, 0),
            FortranAccess::Sequential => {
                let mut at = file.records.get();
                if let Some(why) = at.refuses(off) {
                    return Err(IoError::Invalid(format!("`{}`: {why}", file.path)));
                }
                let start = at.advance(len);
                file.records.set(at);
                (start, len + SEQUENTIAL_MARKERS, SEQUENTIAL_MARKERS)
            }
        };
        let cost = {
            let m = self.sim.model.borrow();
            let node = m.platform.node_of(self.world_rank);
            unit.statements(len) as f64 * m.platform.fortran_statement(node)
        };
        self.cpu_work(cost).await;
        Ok(placed)
    }

    /// ROMIO's ordered calls: offsets by rank order after one update of the
    /// shared pointer; returns this rank's (etypes).
    async fn ordered_offset(&self, file: &File, len: u64) -> u64 {
        let out = self
            .on_file(
                file,
                Contrib::U64(len / etype_size(&file.view)),
                Kind::Ordered(file.ptr),
            )
            .await;
        match out.get() {
            Some(CollOut::Offsets(o)) => o[file.rank],
            _ => unreachable!("ordered access yields offsets"),
        }
    }

    /// Completes `reqs`; returns the bytes each moved. If any was posted as
    /// collective, every rank of the file must call this with the same
    /// collective requests in the same order: each is then done as one
    /// collective access (ROMIO's nonblocking collectives run the same two-phase
    /// schedule), in the order posted, after the independent ones completed.
    pub async fn wait_all(&self, file: &mut File, reqs: Vec<Pending>) -> Vec<u64> {
        let mut out = vec![0; reqs.len()];
        for (i, Pending(r)) in reqs.iter().enumerate() {
            match r {
                Started::Done(moved) => out[i] = *moved,
                Started::Running(s, bytes) => {
                    self.wait(s, Wait::Io).await;
                    out[i] = *bytes;
                }
                Started::Deferred(..) => {}
            }
        }
        for (i, Pending(r)) in reqs.iter().enumerate() {
            if let Started::Deferred(access, off, len, placed) = *r {
                out[i] = self.collective_io(file, access, off, len, placed).await;
            }
        }
        out
    }

    /// This rank's MPI-IO access of `len` bytes at `off` etypes of `file`'s view,
    /// done independently as ROMIO does it (contiguous, data sieving or one
    /// request per extent); returns the bytes moved. `placed`: the buffer's
    /// placement ([`Rank::xfer_placed`]).
    pub(crate) async fn independent(
        &self,
        file: &File,
        access: Access,
        off: u64,
        len: u64,
        placed: Option<u64>,
    ) -> u64 {
        independent_io(
            &self.sim,
            self.world_rank,
            file.inode,
            &file.view,
            &file.hints,
            (access, off, len),
            placed,
        )
        .await
    }

    /// Starts an independent access as a task of its own; the signal fires when it is done.
    pub(crate) fn spawn_independent(
        &self,
        file: &File,
        access: Access,
        off: u64,
        len: u64,
        placed: Option<u64>,
    ) -> (Signal, u64) {
        let done = Signal::new();
        let (sim, fired, world_rank) = (self.sim.clone(), done.clone(), self.world_rank);
        let (inode, view, hints) = (file.inode, file.view.clone(), file.hints.clone());
        let bytes = match access {
            Access::Write => len,
            Access::Read => readable(&self.sim.storage.borrow(), inode, &view, off, len),
        };
        self.sim.spawned.borrow_mut().push(Box::pin(async move {
            independent_io(
                &sim,
                world_rank,
                inode,
                &view,
                &hints,
                (access, off, len),
                placed,
            )
            .await;
            fired.fire();
        }));
        (done, bytes)
    }
}

impl Rank {
    /// Flushes `file` to stable storage: a server round trip plus the scenario's
    /// sync cost (collective over the file's ranks for MPI-IO).
    pub async fn sync(&self, file: &mut File) {
        if file.api == Api::MpiIo {
            self.on_file(file, Contrib::None, Kind::Barrier).await;
        }
        let node = self.sim.model.borrow().platform.node_of(self.world_rank);
        self.sim.model.borrow_mut().waiting[self.world_rank] = Wait::Io;
        storage::sync(&self.sim, node, file.inode).await;
        let t = {
            let m = self.sim.model.borrow();
            self.now() + m.platform.server_rtt(node) + m.md.sync
        };
        self.until(t, Wait::Io).await;
    }

    /// Makes the next read of `file` from this rank's node cold: [`Rank::sync`]
    /// (dirty pages written back, costing device time), then the file's clean
    /// pages evicted from the node's page cache (`fsync` + `posix_fadvise(DONTNEED)`).
    pub async fn drop_cache(&self, file: &mut File) {
        self.sync(file).await;
        let node = self.sim.platform.node_of(self.world_rank);
        let mut storage = self.sim.storage.borrow_mut();
        storage.release(node, file.inode, self.now());
        storage::drop_clean(&mut storage, node, file.inode);
    }

    /// Current size of `file` in bytes (one server round trip).
    pub async fn file_size(&self, file: &File) -> u64 {
        let t = {
            let m = self.sim.model.borrow();
            self.now() + m.platform.server_rtt(m.platform.node_of(self.world_rank))
        };
        self.until(t, Wait::Io).await;
        self.sim.storage.borrow().size(file.inode)
    }

    /// Whether this rank has not made the MPI-IO call `pick` chooses of its
    /// [`Model::mpiio_used`] (open, close) before; marks it made.
    fn first_use(&self, pick: impl FnOnce(&mut (bool, bool)) -> &mut bool) -> bool {
        let mut m = self.sim.model.borrow_mut();
        !std::mem::replace(pick(&mut m.mpiio_used[self.world_rank]), true)
    }

    /// Closes `file` (collective over the file's ranks when it was opened shared).
    pub async fn close(&self, file: File) {
        if file.api == Api::MpiIo {
            let first = self.first_use(|used| &mut used.1);
            self.call_cost(|c| c.close + if first { c.first_close } else { 0.0 })
                .await;
        }
        let node = self.sim.model.borrow().platform.node_of(self.world_rank);
        self.sim.model.borrow_mut().waiting[self.world_rank] = Wait::Io;
        self.sim
            .storage
            .borrow_mut()
            .forget_stream(self.world_rank, file.inode);
        storage::close(&self.sim, node, file.inode).await;
        if file.comm.members.len() > 1 {
            self.on_file(&file, Contrib::None, Kind::Close).await;
        } else {
            let t = {
                let mut m = self.sim.model.borrow_mut();
                let node = m.platform.node_of(self.world_rank);
                let cost = m.md.close;
                m.md_op(self.now(), node, cost)
            };
            self.until(t, Wait::Io).await;
        }
    }

    /// Deletes `path` if it exists (a metadata operation; open handles keep their data).
    pub async fn delete(&self, path: &str) {
        let t = {
            let mut m = self.sim.model.borrow_mut();
            let mut size = 0;
            let mut storage = self.sim.storage.borrow_mut();
            let node = m.platform.node_of(self.world_rank);
            if let Some(inode) = storage.unlink(path) {
                size = storage.size(inode);
                storage.release(node, inode, self.now());
                storage::delete(&mut storage, inode);
            }
            let cost = match m.md.delete_bw.is_finite() {
                true => m.md.delete + size as f64 / m.md.delete_bw,
                false => m.md.delete,
            };
            m.md_op(self.now(), node, cost)
        };
        self.until(t, Wait::Io).await;
    }
}

impl File {
    /// The path it was opened as.
    pub fn path(&self) -> &str {
        &self.path
    }

    /// The I/O library it was opened through.
    pub fn api(&self) -> Api {
        self.api
    }

    /// The MPI-IO hints in effect, with the keys MPICH's `MPI_File_get_info`
    /// reports (none for POSIX files and Fortran units).
    pub fn hints_in_effect(&self) -> Hints {
        match self.api {
            Api::MpiIo => self.hints.to_hints(),
            Api::Posix | Api::Fortran(_) => Hints::new(),
        }
    }
}

/// The API's name in messages.
fn api_name(api: Api) -> &'static str {
    match api {
        Api::MpiIo => "MPI-IO",
        Api::Posix => "POSIX",
        Api::Fortran(_) => "Fortran",
    }
}

/// Looks up or creates `path`'s inode as `mode` says; returns (metadata cost, result).
pub(crate) fn open_inode(
    m: &mut Model,
    storage: &mut Storage,
    path: &str,
    mode: OpenMode,
) -> (f64, Result<(usize, usize), IoError>) {
    let (cost, inode) = match (storage.lookup(path), mode) {
        (Some(i), _) => (m.md.open, Ok(i)),
        (None, OpenMode::Read) => (
            m.md.open,
            Err(IoError::Call {
                op: "open".into(),
                path: path.into(),
                message: "No such file or directory".into(),
            }),
        ),
        (None, _) => (m.md.create, Ok(storage.create(path))),
    };
    let r = inode.map(|i| {
        m.ptrs.push(SharedPtr {
            pos: 0,
            free_at: 0.0,
        });
        (i, m.ptrs.len() - 1)
    });
    (cost, r)
}
