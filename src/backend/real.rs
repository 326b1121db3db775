//! The real back end: `IoCtx` over `piotwin-real` (MPI-IO through rsmpi's raw ffi).
//!
//! One MPI process per rank; every call completes synchronously inside `poll`
//! (MPI blocks the thread), so [`crate::ctx::block_on`] drives a whole program.
//!
//! Mapping of [`Op`] onto MPI-IO (POSIX files: `pwrite`/`pread`; Fortran units:
//! `WRITE`/`READ` statements through the Fortran runtime; both always independent,
//! byte offsets):
//!
//! | access | [`Coordination`] | [`Position`] | MPI call |
//! |---|---|---|---|
//! | write | Independent | `At` | `MPI_File_write_at` |
//! | write | Collective | `At` | `MPI_File_write_at_all` |
//! | write | Independent | `SharedPointer` | `MPI_File_write_shared` |
//! | write | Collective | `SharedPointer` | `MPI_File_write_ordered` |
//!
//! and the same for reads. [`Scope::Private`] opens on `MPI_COMM_SELF`.
//!
//! Nonblocking requests: independent ones are `MPI_File_iwrite_at` /
//! `MPI_File_iread_at` (or the `_shared` forms), completed by `MPI_Waitall`.
//! Collective ones follow PnetCDF's `ncmpi_wait_all`: at `post` the request's file
//! extents are flattened through the current view, and `wait_all` completes all
//! collective requests of the call as **one** `MPI_File_write_at_all` (then one
//! `MPI_File_read_at_all`) over an hindexed filetype of every extent
//! ([`piotwin_real::File::xfer_extents_all`]). Like MPI's own nonblocking
//! collectives, every rank of the file posts its collective requests (possibly of
//! zero bytes) and calls `wait_all` with them; a `wait_all` holding no collective
//! request is purely local.

use piotwin_real::{Comm, File, FortranUnit, Info, PosixFile, RealError, Request};

use crate::ctx::{
    Access, Api, Coordination, Hints, IoBuf, IoCtx, IoError, IoResult, Kernel, Op, OpenOptions,
    Position, RankProgram, ReduceOp, Scope, View, block_on,
};

/// Facts about the MPI job this process belongs to.
#[derive(Debug, Clone)]
pub struct JobInfo {
    /// This process's rank in `MPI_COMM_WORLD`.
    pub rank: usize,
    /// Size of `MPI_COMM_WORLD`.
    pub size: usize,
    /// `MPI_Get_library_version`'s first line (MPICH or Open MPI, and its version).
    pub library: String,
    /// The signal that asked the run to stop, agreed by every rank.
    pub stopped: Option<i32>,
}

/// Initialise MPI (once per process), run `program` on this rank with a context
/// over `MPI_COMM_WORLD`, and return this rank's output. Refuses a job where the
/// launcher asked for N > 1 processes but MPI sees a world of 1 (a binary built
/// for one MPI started by another MPI's launcher).
///
/// MPI stays initialised for further launches and is finalised at process exit
/// (or by `piotwin_real::finalize`).
pub fn launch<P: RankProgram>(program: &P) -> Result<(JobInfo, P::Output), RealError> {
    let job = piotwin_real::init()?;
    let ctx = RealCtx {
        comm: Comm::world(),
    };
    let output = block_on(program.run(&ctx));
    // After the program: a signal that came after its last checkpoint counts too.
    let stopped = block_on(ctx.stop_requested());
    Ok((
        JobInfo {
            rank: job.rank,
            size: job.size,
            library: job.library,
            stopped,
        },
        output,
    ))
}

/// A rank's context over an MPI communicator (`MPI_COMM_WORLD` or a split of it).
pub struct RealCtx {
    comm: Comm,
}

/// A real buffer: `len` bytes from `start` of an allocation it owns. Plain
/// buffers start at their allocation; [`IoCtx::alloc_placed`] ones a chosen
/// number of bytes past a page boundary, inside a slightly larger allocation.
pub struct RealBuf {
    data: Vec<u8>,
    start: usize,
    len: usize,
}

/// The page size buffer placement is counted in (Linux x86-64, arm64 4 KiB pages).
const PAGE: usize = 4096;

impl RealBuf {
    fn whole(data: Vec<u8>) -> RealBuf {
        let len = data.len();
        RealBuf {
            data,
            start: 0,
            len,
        }
    }

    /// The bytes as an allocation of their own, for a nonblocking request to own
    /// (a placed buffer's bytes are copied out: nothing posts one today).
    fn into_vec(self) -> Vec<u8> {
        if self.start == 0 && self.len == self.data.len() {
            self.data
        } else {
            self.data[self.start..self.start + self.len].to_vec()
        }
    }
}

impl IoBuf for RealBuf {
    fn len(&self) -> usize {
        self.len
    }
    fn bytes(&self) -> Option<&[u8]> {
        Some(&self.data[self.start..self.start + self.len])
    }
    fn bytes_mut(&mut self) -> Option<&mut [u8]> {
        Some(&mut self.data[self.start..self.start + self.len])
    }
    fn set_len(&mut self, len: usize) {
        assert!(
            self.start + len <= self.data.len(),
            "set_len({len}) beyond the allocation of {} bytes",
            self.data.len() - self.start
        );
        self.len = len;
    }
}

/// An open file: MPI-IO, POSIX or a Fortran unit.
pub struct RealFile(FileKind);

enum FileKind {
    Mpi(File),
    Posix(PosixFile),
    Fortran(FortranUnit),
}

impl FileKind {
    /// The path of a file of no views and no hints (POSIX or Fortran), with its
    /// API's name; `None` for an MPI-IO file.
    fn plain(&self) -> Option<(&'static str, &str)> {
        match self {
            FileKind::Mpi(_) => None,
            FileKind::Posix(f) => Some(("POSIX", f.path())),
            FileKind::Fortran(f) => Some(("Fortran", f.path())),
        }
    }
}

/// A posted nonblocking operation; owns its buffer until `wait_all`.
pub struct RealRequest(ReqKind);

enum ReqKind {
    /// An MPI request in flight.
    Mpi(Request),
    /// A collective request, completed with the others at `wait_all`: its absolute
    /// file extents `(offset, length)` in data order, flattened at `post`.
    Aggregated {
        access: Access,
        extents: Vec<(u64, u64)>,
        buf: Vec<u8>,
    },
    /// Already complete (POSIX and Fortran requests run at `post`).
    Done(Vec<u8>),
}

/// An access to a POSIX file or a Fortran unit: independent, at an explicit offset.
fn plain_xfer(file: &mut FileKind, op: Op, buf: &mut [u8]) -> IoResult<usize> {
    let offset = match op.pos {
        Position::At(offset) => offset,
        Position::SharedPointer => {
            let (api, path) = file.plain().expect("a POSIX or Fortran file");
            return Err(IoError::Invalid(format!(
                "{op:?} on {api} file `{path}`: {api} files have no shared file pointer; use an explicit offset"
            )));
        }
    };
    Ok(match (file, op.access) {
        (FileKind::Posix(f), Access::Write) => f.write_at(offset, buf)?,
        (FileKind::Posix(f), Access::Read) => f.read_at(offset, buf)?,
        (FileKind::Fortran(f), Access::Write) => f.write_at(offset, buf)?,
        (FileKind::Fortran(f), Access::Read) => f.read_at(offset, buf)?,
        (FileKind::Mpi(_), _) => unreachable!("MPI-IO files take MPI calls"),
    })
}

impl IoCtx for RealCtx {
    type Buf = RealBuf;
    type File = RealFile;
    type Request = RealRequest;

    fn rank(&self) -> usize {
        self.comm.rank()
    }
    fn size(&self) -> usize {
        self.comm.size()
    }
    fn wtime(&self) -> f64 {
        piotwin_real::wtime()
    }
    fn alloc(&self, len: usize) -> RealBuf {
        RealBuf::whole(vec![0; len])
    }

    fn alloc_placed(&self, len: usize, page_offset: usize) -> RealBuf {
        let page_offset = page_offset % PAGE;
        let data = vec![0; len + PAGE + page_offset];
        let start = (PAGE - data.as_ptr() as usize % PAGE) % PAGE + page_offset;
        RealBuf { data, start, len }
    }

    async fn barrier(&self) {
        self.comm.barrier();
    }
    async fn bcast_u64(&self, value: u64, root: usize) -> u64 {
        self.comm.bcast_u64(value, root)
    }
    async fn allreduce_f64(&self, value: f64, op: ReduceOp) -> f64 {
        self.comm.allreduce_f64(value, op)
    }
    async fn allgather_f64(&self, value: f64) -> Vec<f64> {
        self.comm.allgather_f64(value)
    }
    async fn sendrecv_replace(&self, buf: &mut RealBuf, dest: usize, source: usize) {
        if let Err(e) = self.comm.sendrecv_replace(
            buf.bytes_mut().expect("a real buffer holds bytes"),
            dest,
            source,
        ) {
            panic!("sendrecv_replace: {e}");
        }
    }
    async fn send(&self, buf: &RealBuf, dest: usize) {
        self.comm
            .send(buf.bytes().expect("a real buffer holds bytes"), dest)
    }
    async fn recv(&self, buf: &mut RealBuf, source: usize) {
        self.comm
            .recv(buf.bytes_mut().expect("a real buffer holds bytes"), source)
    }
    async fn sendrecv(&self, send: &RealBuf, dest: usize, recv: &mut RealBuf, source: usize) {
        let s = send.bytes().expect("a real buffer holds bytes");
        let r = recv.bytes_mut().expect("a real buffer holds bytes");
        if let Err(e) = self.comm.sendrecv(s, dest, r, source) {
            panic!("sendrecv: {e}");
        }
    }
    async fn exchange(&self, sends: &[(usize, &RealBuf)], recvs: &mut [(usize, &mut RealBuf)]) {
        let sends: Vec<(usize, &[u8])> = sends
            .iter()
            .map(|(d, b)| (*d, b.bytes().expect("a real buffer holds bytes")))
            .collect();
        let mut recvs: Vec<(usize, &mut [u8])> = recvs
            .iter_mut()
            .map(|(s, b)| (*s, b.bytes_mut().expect("a real buffer holds bytes")))
            .collect();
        if let Err(e) = self.comm.exchange(&sends, &mut recvs) {
            panic!("exchange: {e}");
        }
    }
    async fn alltoallv(
        &self,
        send: &RealBuf,
        sends: &[(usize, usize)],
        recv: &mut RealBuf,
        recvs: &[(usize, usize)],
    ) {
        let s = send.bytes().expect("a real buffer holds bytes");
        let r = recv.bytes_mut().expect("a real buffer holds bytes");
        if let Err(e) = self.comm.alltoallv(s, sends, r, recvs) {
            panic!("alltoallv: {e}");
        }
    }
    async fn split(&self, color: Option<usize>, key: usize) -> Option<RealCtx> {
        match self.comm.split(color, key) {
            Ok(sub) => sub.map(|comm| RealCtx { comm }),
            Err(e) => panic!("split: {e}"),
        }
    }

    async fn open(&self, path: &str, opts: &OpenOptions) -> IoResult<RealFile> {
        let mode = opts.mode;
        Ok(RealFile(match opts.api {
            Api::Posix => FileKind::Posix(PosixFile::open(path, mode)?),
            Api::Fortran(access) => FileKind::Fortran(FortranUnit::open(path, mode, access)?),
            Api::MpiIo => {
                let info = Info::from_hints(&opts.hints)?;
                let comm = match opts.scope {
                    Scope::Shared => &self.comm,
                    Scope::Private => &Comm::self_comm(),
                };
                FileKind::Mpi(File::open_with(comm, path, mode, opts.unique_open, &info)?)
            }
        }))
    }

    async fn set_view(&self, file: &mut RealFile, view: &View) -> IoResult<()> {
        match &mut file.0 {
            FileKind::Mpi(f) => Ok(f.set_view(view)?),
            other => {
                let (api, path) = other.plain().expect("not MPI-IO");
                Err(IoError::Invalid(format!(
                    "set_view on {api} file `{path}`: {api} files have no views"
                )))
            }
        }
    }

    async fn xfer(&self, file: &mut RealFile, op: Op, buf: &mut RealBuf) -> IoResult<usize> {
        let f = match &mut file.0 {
            FileKind::Mpi(f) => &*f,
            other => {
                return plain_xfer(
                    other,
                    op,
                    buf.bytes_mut().expect("a real buffer holds bytes"),
                );
            }
        };
        let b = buf.bytes_mut().expect("a real buffer holds bytes");
        Ok(match (op.access, op.coord, op.pos) {
            (Access::Write, Coordination::Independent, Position::At(o)) => f.write_at(o, b)?,
            (Access::Write, Coordination::Collective, Position::At(o)) => f.write_at_all(o, b)?,
            (Access::Write, Coordination::Independent, Position::SharedPointer) => {
                f.write_shared(b)?
            }
            (Access::Write, Coordination::Collective, Position::SharedPointer) => {
                f.write_ordered(b)?
            }
            (Access::Read, Coordination::Independent, Position::At(o)) => f.read_at(o, b)?,
            (Access::Read, Coordination::Collective, Position::At(o)) => f.read_at_all(o, b)?,
            (Access::Read, Coordination::Independent, Position::SharedPointer) => {
                f.read_shared(b)?
            }
            (Access::Read, Coordination::Collective, Position::SharedPointer) => {
                f.read_ordered(b)?
            }
        })
    }

    async fn post(&self, file: &mut RealFile, op: Op, buf: RealBuf) -> IoResult<RealRequest> {
        let mut buf = buf.into_vec();
        let f = match &mut file.0 {
            FileKind::Mpi(f) => &*f,
            other => {
                plain_xfer(other, op, &mut buf)?;
                return Ok(RealRequest(ReqKind::Done(buf)));
            }
        };
        Ok(RealRequest(match (op.access, op.coord, op.pos) {
            (Access::Write, Coordination::Independent, Position::At(o)) => {
                ReqKind::Mpi(f.iwrite_at(o, buf)?)
            }
            (Access::Read, Coordination::Independent, Position::At(o)) => {
                ReqKind::Mpi(f.iread_at(o, buf)?)
            }
            (Access::Write, Coordination::Independent, Position::SharedPointer) => {
                ReqKind::Mpi(f.iwrite_shared(buf)?)
            }
            (Access::Read, Coordination::Independent, Position::SharedPointer) => {
                ReqKind::Mpi(f.iread_shared(buf)?)
            }
            (access, Coordination::Collective, Position::At(o)) => {
                let extents: Vec<(u64, u64)> = f.view().extents(o, buf.len() as u64).collect();
                let covered: u64 = extents.iter().map(|e| e.1).sum();
                if covered != buf.len() as u64 {
                    return Err(IoError::Invalid(format!(
                        "post {op:?} on `{}`: the view's extents cover {covered} bytes, the buffer has {}",
                        f.path(),
                        buf.len()
                    )));
                }
                ReqKind::Aggregated {
                    access,
                    extents,
                    buf,
                }
            }
            (_, Coordination::Collective, Position::SharedPointer) => {
                return Err(IoError::Invalid(format!(
                    "post {op:?} on `{}`: MPI has no nonblocking ordered (collective shared-pointer) access",
                    f.path()
                )));
            }
        }))
    }

    async fn wait_all(
        &self,
        file: &mut RealFile,
        requests: Vec<RealRequest>,
    ) -> IoResult<Vec<RealBuf>> {
        let mut out: Vec<Option<Vec<u8>>> = vec![None; requests.len()];
        let mut in_flight = Vec::new();
        let mut in_flight_at = Vec::new();
        let mut aggregated = Vec::new();
        for (i, RealRequest(r)) in requests.into_iter().enumerate() {
            match r {
                ReqKind::Mpi(req) => {
                    in_flight.push(req);
                    in_flight_at.push(i);
                }
                ReqKind::Aggregated {
                    access,
                    extents,
                    buf,
                } => aggregated.push((i, access, extents, buf)),
                ReqKind::Done(buf) => out[i] = Some(buf),
            }
        }
        if !aggregated.is_empty() {
            let FileKind::Mpi(f) = &mut file.0 else {
                return Err(IoError::Invalid(
                    "collective requests on a POSIX file or a Fortran unit".into(),
                ));
            };
            let mut writes: Vec<(u64, &[u8])> = Vec::new();
            let mut reads: Vec<(u64, &mut [u8])> = Vec::new();
            for (_, access, extents, buf) in aggregated.iter_mut() {
                let mut rest: &mut [u8] = buf;
                for &(offset, len) in extents.iter() {
                    let (piece, tail) = std::mem::take(&mut rest).split_at_mut(len as usize);
                    match access {
                        Access::Write => writes.push((offset, piece)),
                        Access::Read => reads.push((offset, piece)),
                    }
                    rest = tail;
                }
            }
            f.xfer_extents_all(&writes, &mut reads)?;
        }
        for (i, _, _, buf) in aggregated {
            out[i] = Some(buf);
        }
        for ((buf, _moved), i) in piotwin_real::wait_all(in_flight)?
            .into_iter()
            .zip(in_flight_at)
        {
            out[i] = Some(buf);
        }
        Ok(out
            .into_iter()
            .map(|b| RealBuf::whole(b.expect("every request completed")))
            .collect())
    }

    async fn sync(&self, file: &mut RealFile) -> IoResult<()> {
        Ok(match &file.0 {
            FileKind::Mpi(f) => f.sync()?,
            FileKind::Posix(f) => f.sync()?,
            FileKind::Fortran(f) => f.sync()?,
        })
    }

    /// `fsync`, then `posix_fadvise(POSIX_FADV_DONTNEED)` on the whole file. For
    /// MPI-IO files through the path (MPI hides the descriptor, and
    /// `MPI_File_sync` is refused on a read-only file): `fdatasync` there flushes
    /// the file's dirty pages whoever wrote them.
    async fn drop_cache(&self, file: &mut RealFile) -> IoResult<()> {
        match &file.0 {
            FileKind::Mpi(f) => Ok(piotwin_real::drop_cache(f.path())?),
            FileKind::Posix(f) => Ok(f.drop_cache()?),
            FileKind::Fortran(f) => Ok(f.drop_cache()?),
        }
    }

    /// `MPI_File_set_info`; POSIX files and Fortran units take no hints, which is
    /// an error here.
    async fn set_info(&self, file: &mut RealFile, hints: &Hints) -> IoResult<()> {
        match &file.0 {
            FileKind::Mpi(f) => Ok(f.set_info(&Info::from_hints(hints)?)?),
            other => {
                let (api, path) = other.plain().expect("not MPI-IO");
                Err(IoError::Invalid(format!(
                    "set_info on {api} file `{path}`: {api} files take no MPI-IO hints"
                )))
            }
        }
    }

    async fn file_size(&self, file: &mut RealFile) -> IoResult<u64> {
        Ok(match &file.0 {
            FileKind::Mpi(f) => f.size()?,
            FileKind::Posix(f) => f.size()?,
            FileKind::Fortran(f) => f.size()?,
        })
    }

    /// `MPI_File_get_info` read back; empty for POSIX files and Fortran units (and
    /// where MPI fails to answer, which it does only for an invalid handle).
    fn hints_in_effect(&self, file: &RealFile) -> Hints {
        match &file.0 {
            FileKind::Mpi(f) => f.info().unwrap_or_default(),
            FileKind::Posix(_) | FileKind::Fortran(_) => Hints::new(),
        }
    }

    async fn close(&self, file: RealFile) -> IoResult<()> {
        match file.0 {
            FileKind::Mpi(f) => Ok(f.close()?),
            // Dropping the std file closes it; close(2) errors are not reported by std.
            FileKind::Posix(f) => Ok(drop(f)),
            FileKind::Fortran(f) => Ok(f.close()?),
        }
    }

    async fn delete(&self, path: &str) -> IoResult<()> {
        File::delete(path)?;
        Ok(())
    }

    async fn compute<R>(&self, _kernel: Kernel, work: impl FnOnce() -> R) -> Option<R> {
        Some(work())
    }
}
