//! A per-call trace of any back end: [`Traced`] runs a program over a context
//! that records every call each rank makes (what, where, how much, and when it
//! began and ended on the context's clock: `MPI_Wtime` for real, virtual time
//! in the twin), and otherwise only forwards. The golden transcripts of
//! `tests/golden/` are such traces of small twin runs.
//!
//! What it is not: a profiler. It adds no cost in the twin (recording takes
//! no virtual time); in real mode it costs two clock reads and a 96-byte
//! record per call (per file call for a `--trace`).

use std::cell::{Cell, RefCell};
use std::ops::Deref;
use std::rc::Rc;

use crate::ctx::{
    Api, Checkpoint, Hints, IoBuf, IoCtx, IoResult, Kernel, Op, OpenOptions, Position, RankProgram,
    ReduceOp, Repeat, View,
};

/// One call of one rank.
#[derive(Debug, Clone, PartialEq)]
pub struct CallRecord {
    /// The rank in the context the call was made on.
    pub rank: usize,
    /// The call (`open`, `write_at_all`, `barrier`, …).
    pub call: &'static str,
    /// Its arguments that matter for time: path, root, kernel; empty for data
    /// calls, whose offset and bytes are in `io` ([`CallRecord::detail`] has both).
    pub detail: String,
    /// When it began, seconds on the context's clock.
    pub start: f64,
    /// When it ended, seconds on the context's clock.
    pub end: f64,
    /// The rank's logical tick: its count of MPI calls that move data (file
    /// calls, messages and collectives, in every communicator) up to and
    /// including this one. Barriers move nothing and do not count (MADbench2
    /// issues its own through PMPI so that the I/O-phase method's tracer never
    /// sees them); nor does computation.
    pub tick: u64,
    /// For a call on a file: which file, where and how much.
    pub io: Option<IoCall>,
}

/// What a file call touched.
#[derive(Debug, Clone, PartialEq)]
pub struct IoCall {
    /// The file's path as opened.
    pub file: Rc<str>,
    /// POSIX or MPI-IO.
    pub api: Api,
    /// The first byte in the file, where known at the call (explicit offsets,
    /// through the view); `None` for shared-pointer calls and calls that move no data.
    pub offset: Option<u64>,
    /// The offset as given, in etypes of the view (explicit offsets only).
    pub offset_etypes: Option<u64>,
    /// Bytes requested.
    pub bytes: u64,
}

impl CallRecord {
    /// Its arguments: `detail`, or for a data call `off=… len=…` (`len=…` with
    /// the shared file pointer).
    pub fn detail(&self) -> std::borrow::Cow<'_, str> {
        match &self.io {
            Some(io) if self.detail.is_empty() && is_data_call(self.call) => {
                match io.offset_etypes {
                    Some(o) => format!("off={o} len={}", io.bytes).into(),
                    None => format!("len={}", io.bytes).into(),
                }
            }
            _ => self.detail.as_str().into(),
        }
    }

    /// One transcript line: rank, call, details, begin and end in µs (ns resolution).
    pub fn line(&self) -> String {
        format!(
            "{:>3} {:<14} {:<28} {:>16.3} {:>16.3}",
            self.rank,
            self.call,
            self.detail(),
            self.start * 1e6,
            self.end * 1e6
        )
    }
}

/// Whether `call` moves data (a blocking or posted read or write).
fn is_data_call(call: &str) -> bool {
    call.contains("write") || call.contains("read")
}

/// `inner` run over a context that records every call; each rank's output is
/// the program's and its calls, in the order it made them.
pub struct Traced<P> {
    /// The program.
    pub inner: P,
    /// Record only the calls on files (a `--trace`, whose rows are those): the
    /// others still move the tick but cost no clock reads and no record.
    pub files_only: bool,
}

impl<P: RankProgram> RankProgram for Traced<P> {
    type Output = (P::Output, Vec<CallRecord>);
    async fn run<C: IoCtx>(&self, ctx: &C) -> Self::Output {
        let log = Rc::new(RefCell::new(Log::default()));
        let traced = TraceCtx {
            inner: Inner::Borrowed(ctx),
            log: log.clone(),
            tick: Rc::new(Cell::new(0)),
            files_only: self.files_only,
        };
        let out = self.inner.run(&traced).await;
        drop(traced);
        let calls = log.borrow_mut().take();
        (out, calls)
    }
}

/// The context, borrowed (the one a back end gave) or owned (a split of it).
enum Inner<'a, C> {
    Borrowed(&'a C),
    Owned(C),
}

impl<C> Deref for Inner<'_, C> {
    type Target = C;
    fn deref(&self) -> &C {
        match self {
            Inner::Borrowed(c) => c,
            Inner::Owned(c) => c,
        }
    }
}

struct TraceCtx<'a, C> {
    inner: Inner<'a, C>,
    log: Rc<RefCell<Log>>,
    /// The rank's tick, shared with the communicators split from its context.
    tick: Rc<Cell<u64>>,
    /// [`Traced::files_only`].
    files_only: bool,
}

/// A rank's records, kept in chunks so that a long trace never copies what it
/// holds while the program runs (one conversion at the end, outside its timing).
/// Chunks double from 64 records to 4096: a twin of many ranks with few calls
/// each reserves little.
#[derive(Default)]
struct Log {
    chunks: Vec<Vec<Entry>>,
    /// The files the records name, by [`TracedFile::id`].
    files: Vec<(Rc<str>, Api)>,
}

/// A record as the log keeps it while the program runs: 96 bytes, and no
/// allocation for a call that moves data or computes (the bulk of a trace); it becomes a
/// [`CallRecord`] when the program has ended.
struct Entry {
    call: &'static str,
    rank: u32,
    /// [`Log::files`] index + 1 of a file call; 0 for any other call.
    file: u32,
    start: f64,
    end: f64,
    tick: u64,
    /// [`IoAt`]'s fields, [`UNKNOWN`] where `None`.
    offset: u64,
    offset_etypes: u64,
    bytes: u64,
    detail: Detail,
}

const _: () = assert!(std::mem::size_of::<Entry>() == 96);

/// A record's arguments as the log keeps them: a computation's kernel is
/// formatted only when the run has ended (a transfer that is filled or
/// checked makes one per call).
enum Detail {
    Text(Box<str>),
    Kernel(Kernel),
}

impl From<String> for Detail {
    fn from(text: String) -> Detail {
        Detail::Text(text.into_boxed_str())
    }
}

impl From<Kernel> for Detail {
    fn from(kernel: Kernel) -> Detail {
        Detail::Kernel(kernel)
    }
}

impl Detail {
    fn into_string(self) -> String {
        match self {
            Detail::Text(t) => t.into_string(),
            Detail::Kernel(k) => format!("{:?} {}", k.kind, k.amount),
        }
    }
}

/// An offset not known at the call.
const UNKNOWN: u64 = u64::MAX;

/// Where a file call went, as recorded: [`IoCall`] with the file by id.
#[derive(Clone, Copy)]
struct IoAt {
    file: u32,
    offset: Option<u64>,
    offset_etypes: Option<u64>,
    bytes: u64,
}

impl Log {
    const FIRST: usize = 64;
    const LARGEST: usize = 4096;

    fn push(&mut self, entry: Entry) {
        match self.chunks.last_mut() {
            Some(c) if c.len() < c.capacity() => c.push(entry),
            last => {
                let size = last.map_or(Self::FIRST, |c| (2 * c.len()).min(Self::LARGEST));
                let mut c = Vec::with_capacity(size);
                c.push(entry);
                self.chunks.push(c);
            }
        }
    }

    /// A new file id for `path` opened through `api`.
    fn file(&mut self, path: &str, api: Api) -> u32 {
        self.files.push((Rc::from(path), api));
        self.files.len() as u32
    }

    fn take(&mut self) -> Vec<CallRecord> {
        let known = |v: u64| (v != UNKNOWN).then_some(v);
        let files = std::mem::take(&mut self.files);
        std::mem::take(&mut self.chunks)
            .into_iter()
            .flatten()
            .map(|e| CallRecord {
                rank: e.rank as usize,
                call: e.call,
                detail: e.detail.into_string(),
                start: e.start,
                end: e.end,
                tick: e.tick,
                io: (e.file > 0).then(|| {
                    let (path, api) = &files[e.file as usize - 1];
                    IoCall {
                        file: path.clone(),
                        api: *api,
                        offset: known(e.offset),
                        offset_etypes: known(e.offset_etypes),
                        bytes: e.bytes,
                    }
                }),
            })
            .collect()
    }
}

/// An open file with what its records name: its path, API and view.
pub struct TracedFile<F> {
    inner: F,
    /// Its number in the log's file table.
    id: u32,
    view: View,
    /// The view is the byte view: offsets are bytes from the file's start.
    plain: bool,
}

impl<C: IoCtx> TraceCtx<'_, C> {
    /// Runs `f`, recording it as `call` with `detail`.
    async fn record<T>(
        &self,
        call: &'static str,
        detail: impl Into<Detail>,
        f: impl AsyncFnOnce() -> T,
    ) -> T {
        self.record_io(call, detail, None, f).await
    }

    /// Runs `f`, recording it as `call` with `detail` and, for a file call, `io`.
    /// Every call but `compute` and `barrier` moves the tick.
    async fn record_io<T>(
        &self,
        call: &'static str,
        detail: impl Into<Detail>,
        io: Option<IoAt>,
        f: impl AsyncFnOnce() -> T,
    ) -> T {
        let moves_tick = call != "compute" && call != "barrier";
        if self.files_only && io.is_none() {
            let out = f().await;
            if moves_tick {
                self.tick.set(self.tick.get() + 1);
            }
            return out;
        }
        let start = self.inner.wtime();
        let out = f().await;
        let end = self.inner.wtime();
        if moves_tick {
            self.tick.set(self.tick.get() + 1);
        }
        let io = io.unwrap_or(IoAt {
            file: 0,
            offset: None,
            offset_etypes: None,
            bytes: 0,
        });
        self.log.borrow_mut().push(Entry {
            call,
            rank: self.inner.rank() as u32,
            file: io.file,
            start,
            end,
            tick: self.tick.get(),
            offset: io.offset.unwrap_or(UNKNOWN),
            offset_etypes: io.offset_etypes.unwrap_or(UNKNOWN),
            bytes: io.bytes,
            detail: detail.into(),
        });
        out
    }
}

/// The record of a call on `file` moving `bytes` as `op` says.
fn io_call<F>(file: &TracedFile<F>, op: Option<Op>, bytes: usize) -> IoAt {
    let at = op.and_then(|op| match op.pos {
        Position::At(o) => Some(o),
        Position::SharedPointer => None,
    });
    IoAt {
        file: file.id,
        offset: at.map(|o| match file.plain {
            true => o,
            false => file
                .view
                .extents(o, bytes.max(1) as u64)
                .next()
                .map_or(o, |e| e.0),
        }),
        offset_etypes: at,
        bytes: bytes as u64,
    }
}

/// `write_at_all`, `iread_shared`, … as MPI names the call `op` is, posted
/// (nonblocking) or not.
fn op_name(op: Op, posted: bool) -> &'static str {
    use crate::ctx::{Access, Coordination};
    use Access::{Read, Write};
    use Coordination::{Collective, Independent};
    match (posted, op.access, op.coord, op.pos) {
        (false, Write, Independent, Position::At(_)) => "write_at",
        (false, Write, Collective, Position::At(_)) => "write_at_all",
        (false, Write, Independent, Position::SharedPointer) => "write_shared",
        (false, Write, Collective, Position::SharedPointer) => "write_ordered",
        (false, Read, Independent, Position::At(_)) => "read_at",
        (false, Read, Collective, Position::At(_)) => "read_at_all",
        (false, Read, Independent, Position::SharedPointer) => "read_shared",
        (false, Read, Collective, Position::SharedPointer) => "read_ordered",
        (true, Write, Independent, Position::At(_)) => "iwrite_at",
        (true, Write, Collective, Position::At(_)) => "iwrite_at_all",
        (true, Write, Independent, Position::SharedPointer) => "iwrite_shared",
        (true, Write, Collective, Position::SharedPointer) => "iwrite_ordered",
        (true, Read, Independent, Position::At(_)) => "iread_at",
        (true, Read, Collective, Position::At(_)) => "iread_at_all",
        (true, Read, Independent, Position::SharedPointer) => "iread_shared",
        (true, Read, Collective, Position::SharedPointer) => "iread_ordered",
    }
}

impl<C: IoCtx> IoCtx for TraceCtx<'_, C> {
    type Buf = C::Buf;
    type File = TracedFile<C::File>;
    type Request = C::Request;

    fn rank(&self) -> usize {
        self.inner.rank()
    }
    fn size(&self) -> usize {
        self.inner.size()
    }
    fn wtime(&self) -> f64 {
        self.inner.wtime()
    }
    fn alloc(&self, len: usize) -> C::Buf {
        self.inner.alloc(len)
    }
    fn alloc_placed(&self, len: usize, page_offset: usize) -> C::Buf {
        self.inner.alloc_placed(len, page_offset)
    }
    async fn barrier(&self) {
        self.record("barrier", String::new(), async || {
            self.inner.barrier().await
        })
        .await
    }
    async fn bcast_u64(&self, value: u64, root: usize) -> u64 {
        self.record("bcast", format!("root={root}"), async || {
            self.inner.bcast_u64(value, root).await
        })
        .await
    }
    async fn allreduce_f64(&self, value: f64, op: ReduceOp) -> f64 {
        self.record("allreduce", format!("{op:?}"), async || {
            self.inner.allreduce_f64(value, op).await
        })
        .await
    }
    async fn allgather_f64(&self, value: f64) -> Vec<f64> {
        self.record("allgather", String::new(), async || {
            self.inner.allgather_f64(value).await
        })
        .await
    }
    async fn sendrecv_replace(&self, buf: &mut C::Buf, dest: usize, source: usize) {
        let detail = format!("to={dest} from={source} len={}", buf.len());
        self.record("sendrecv", detail, async || {
            self.inner.sendrecv_replace(buf, dest, source).await
        })
        .await
    }
    async fn sendrecv(&self, send: &C::Buf, dest: usize, recv: &mut C::Buf, source: usize) {
        let detail = format!("to={dest} from={source} len={}", send.len());
        self.record("sendrecv", detail, async || {
            self.inner.sendrecv(send, dest, recv, source).await
        })
        .await
    }
    async fn exchange(&self, sends: &[(usize, &C::Buf)], recvs: &mut [(usize, &mut C::Buf)]) {
        let detail = format!(
            "sends={:?} recvs={:?}",
            sends.iter().map(|(d, b)| (*d, b.len())).collect::<Vec<_>>(),
            recvs.iter().map(|(s, b)| (*s, b.len())).collect::<Vec<_>>()
        );
        self.record("exchange", detail, async || {
            self.inner.exchange(sends, recvs).await
        })
        .await
    }
    async fn alltoallv(
        &self,
        send: &C::Buf,
        sends: &[(usize, usize)],
        recv: &mut C::Buf,
        recvs: &[(usize, usize)],
    ) {
        let detail = format!("send={sends:?} recv={recvs:?}");
        self.record("alltoallv", detail, async || {
            self.inner.alltoallv(send, sends, recv, recvs).await
        })
        .await
    }
    async fn send(&self, buf: &C::Buf, dest: usize) {
        let detail = format!("to={dest} len={}", buf.len());
        self.record("send", detail, async || self.inner.send(buf, dest).await)
            .await
    }
    async fn recv(&self, buf: &mut C::Buf, source: usize) {
        let detail = format!("from={source} len={}", buf.len());
        self.record("recv", detail, async || self.inner.recv(buf, source).await)
            .await
    }
    async fn split(&self, color: Option<usize>, key: usize) -> Option<Self> {
        let sub = self
            .record("split", format!("color={color:?}"), async || {
                self.inner.split(color, key).await
            })
            .await;
        sub.map(|c| TraceCtx {
            inner: Inner::Owned(c),
            log: self.log.clone(),
            tick: self.tick.clone(),
            files_only: self.files_only,
        })
    }
    async fn open(&self, path: &str, opts: &OpenOptions) -> IoResult<TracedFile<C::File>> {
        let detail = format!("{path} {:?} {:?}", opts.mode, opts.scope);
        let file = TracedFile {
            inner: (),
            id: self.log.borrow_mut().file(path, opts.api),
            view: View::bytes(),
            plain: true,
        };
        let io = Some(io_call(&file, None, 0));
        let inner = self
            .record_io("open", detail, io, async || {
                self.inner.open(path, opts).await
            })
            .await?;
        Ok(TracedFile {
            inner,
            id: file.id,
            view: file.view,
            plain: true,
        })
    }
    async fn set_view(&self, file: &mut TracedFile<C::File>, view: &View) -> IoResult<()> {
        let io = Some(io_call(file, None, 0));
        self.record_io("set_view", format!("disp={}", view.disp), io, async || {
            self.inner.set_view(&mut file.inner, view).await
        })
        .await?;
        file.view = view.clone();
        file.plain = *view == View::bytes();
        Ok(())
    }
    async fn xfer(
        &self,
        file: &mut TracedFile<C::File>,
        op: Op,
        buf: &mut C::Buf,
    ) -> IoResult<usize> {
        let io = Some(io_call(file, Some(op), buf.len()));
        self.record_io(op_name(op, false), String::new(), io, async || {
            self.inner.xfer(&mut file.inner, op, buf).await
        })
        .await
    }
    async fn post(
        &self,
        file: &mut TracedFile<C::File>,
        op: Op,
        buf: C::Buf,
    ) -> IoResult<C::Request> {
        let io = Some(io_call(file, Some(op), buf.len()));
        self.record_io(op_name(op, true), String::new(), io, async || {
            self.inner.post(&mut file.inner, op, buf).await
        })
        .await
    }
    async fn wait_all(
        &self,
        file: &mut TracedFile<C::File>,
        requests: Vec<C::Request>,
    ) -> IoResult<Vec<C::Buf>> {
        let detail = format!("n={}", requests.len());
        let io = Some(io_call(file, None, 0));
        self.record_io("wait_all", detail, io, async || {
            self.inner.wait_all(&mut file.inner, requests).await
        })
        .await
    }
    async fn sync(&self, file: &mut TracedFile<C::File>) -> IoResult<()> {
        let io = Some(io_call(file, None, 0));
        self.record_io("sync", String::new(), io, async || {
            self.inner.sync(&mut file.inner).await
        })
        .await
    }
    async fn drop_cache(&self, file: &mut TracedFile<C::File>) -> IoResult<()> {
        self.record("drop_cache", String::new(), async || {
            self.inner.drop_cache(&mut file.inner).await
        })
        .await
    }
    async fn file_size(&self, file: &mut TracedFile<C::File>) -> IoResult<u64> {
        self.record("file_size", String::new(), async || {
            self.inner.file_size(&mut file.inner).await
        })
        .await
    }
    fn hints_in_effect(&self, file: &TracedFile<C::File>) -> Hints {
        self.inner.hints_in_effect(&file.inner)
    }
    async fn set_info(&self, file: &mut TracedFile<C::File>, hints: &Hints) -> IoResult<()> {
        self.record("set_info", String::new(), async || {
            self.inner.set_info(&mut file.inner, hints).await
        })
        .await
    }
    async fn close(&self, file: TracedFile<C::File>) -> IoResult<()> {
        let io = Some(io_call(&file, None, 0));
        self.record_io("close", String::new(), io, async || {
            self.inner.close(file.inner).await
        })
        .await
    }
    async fn delete(&self, path: &str) -> IoResult<()> {
        self.record("delete", path.to_string(), async || {
            self.inner.delete(path).await
        })
        .await
    }
    async fn compute<R>(&self, kernel: Kernel, work: impl FnOnce() -> R) -> Option<R> {
        self.record("compute", kernel, async || {
            self.inner.compute(kernel, work).await
        })
        .await
    }
    /// The back end's own checkpoint (the twin's costs nothing; not a call of the program's).
    async fn checkpoint(&self, failed: bool) -> Checkpoint {
        self.inner.checkpoint(failed).await
    }
    /// The back end's own repetition (the twin's fast-forwards; skipped
    /// iterations make no calls to record).
    async fn repeat(
        &self,
        policy: Repeat,
        body: impl AsyncFnMut(u64) -> IoResult<()>,
    ) -> IoResult<u64> {
        self.inner.repeat(policy, body).await
    }
}

/// The columns of a `--trace` file (CSV, one row per file call and rank, by
/// rank then tick): `rank` (in `MPI_COMM_WORLD`), `file` (the path as opened),
/// `operation` (the MPI-IO call, e.g. `MPI_File_write_at_all`, or the POSIX one,
/// `pwrite`), `offset` (first byte in the file, through the view; empty where
/// not known at the call: shared file pointers, calls that move no data),
/// `offset_etypes` (the offset as the call gave it, in etypes of the view),
/// `bytes` (requested), `tick` (the rank's count of MPI calls that move data so
/// far, I/O and communication, barriers not: orders a rank's events), `start_s` and `duration_s` (the
/// rank's clock: `MPI_Wtime` for real, virtual time in the twin).
pub const TRACE_COLUMNS: [&str; 9] = [
    "rank",
    "file",
    "operation",
    "offset",
    "offset_etypes",
    "bytes",
    "tick",
    "start_s",
    "duration_s",
];

/// The call's name as the trace writes it: MPI-IO's (`MPI_File_write_at_all`,
/// `MPI_File_open`, `MPI_Waitall`) or POSIX's (`pwrite`, `pread`, `open`, `fsync`):
/// a prefix and the rest.
fn operation_name(call: &'static str, api: Api) -> (&'static str, &'static str) {
    match api {
        Api::MpiIo => match call {
            "wait_all" => ("", "MPI_Waitall"),
            other => ("MPI_File_", other),
        },
        Api::Posix => match call {
            "write_at" => ("", "pwrite"),
            "read_at" => ("", "pread"),
            "sync" => ("", "fsync"),
            other => ("", other),
        },
        // Fortran's statements; an access of several direct-access records is one row.
        Api::Fortran(_) => match call {
            "write_at" => ("", "WRITE"),
            "read_at" => ("", "READ"),
            "open" => ("", "OPEN"),
            "close" => ("", "CLOSE"),
            "sync" => ("", "FLUSH+fsync"),
            other => ("", other),
        },
    }
}

/// World rank `rank`'s file calls as `--trace` rows (CSV without header).
pub fn trace_rows(rank: usize, calls: &[CallRecord]) -> Vec<u8> {
    use std::fmt::Write;
    let mut w = csv::WriterBuilder::new()
        .has_headers(false)
        .from_writer(Vec::new());
    let mut field = String::new();
    let mut put = |w: &mut csv::Writer<Vec<u8>>, args: std::fmt::Arguments| {
        field.clear();
        field.write_fmt(args).expect("formatting to memory");
        w.write_field(&field).expect("writing to memory");
    };
    for c in calls {
        let Some(io) = &c.io else { continue };
        put(&mut w, format_args!("{rank}"));
        w.write_field(io.file.as_bytes())
            .expect("writing to memory");
        let (prefix, name) = operation_name(c.call, io.api);
        put(&mut w, format_args!("{prefix}{name}"));
        for v in [io.offset, io.offset_etypes] {
            match v {
                Some(v) => put(&mut w, format_args!("{v}")),
                None => w.write_field("").expect("writing to memory"),
            }
        }
        put(&mut w, format_args!("{}", io.bytes));
        put(&mut w, format_args!("{}", c.tick));
        put(&mut w, format_args!("{:.9}", c.start));
        put(&mut w, format_args!("{:.9}", c.end - c.start));
        w.write_record(None::<&[u8]>).expect("writing to memory");
    }
    w.into_inner().expect("writing to memory")
}

/// Writes the `--trace` file atomically: the header, then every rank's rows in rank order.
pub fn write_trace(path: &std::path::Path, rows_by_rank: &[Vec<u8>]) -> std::io::Result<()> {
    let mut text = TRACE_COLUMNS.join(",").into_bytes();
    text.push(b'\n');
    for rows in rows_by_rank {
        text.extend_from_slice(rows);
    }
    crate::report::write_atomic(path, &text)
}
