//! A per-call trace of any back end: [`Traced`] runs a program over a context
//! that records every call each rank makes (what, where, how much, and when it
//! began and ended on the context's clock: `MPI_Wtime` for real, virtual time
//! in the twin), and otherwise only forwards. The golden transcripts of
//! `tests/golden/` are such traces of small twin runs.
//!
//! What it is not: a profiler. It adds no cost in the twin (recording takes
//! no virtual time); in real mode it costs a vector push per call.

use std::cell::RefCell;
use std::ops::Deref;
use std::rc::Rc;

use crate::ctx::{
    Checkpoint, Hints, IoBuf, IoCtx, IoResult, Kernel, Op, OpenOptions, Position, RankProgram,
    ReduceOp, Repeat, View,
};

/// One call of one rank.
#[derive(Debug, Clone, PartialEq)]
pub struct CallRecord {
    /// The rank in the context the call was made on.
    pub rank: usize,
    /// The call (`open`, `write_at_all`, `barrier`, …).
    pub call: String,
    /// Its arguments that matter for time: path, offset, bytes, root, kernel.
    pub detail: String,
    /// When it began, seconds on the context's clock.
    pub start: f64,
    /// When it ended, seconds on the context's clock.
    pub end: f64,
}

impl CallRecord {
    /// One transcript line: rank, call, details, begin and end in µs (ns resolution).
    pub fn line(&self) -> String {
        format!(
            "{:>3} {:<14} {:<28} {:>16.3} {:>16.3}",
            self.rank,
            self.call,
            self.detail,
            self.start * 1e6,
            self.end * 1e6
        )
    }
}

/// `inner` run over a context that records every call; each rank's output is
/// the program's and its calls, in the order it made them.
pub struct Traced<P> {
    /// The program.
    pub inner: P,
}

impl<P: RankProgram> RankProgram for Traced<P> {
    type Output = (P::Output, Vec<CallRecord>);
    async fn run<C: IoCtx>(&self, ctx: &C) -> Self::Output {
        let log = Rc::new(RefCell::new(Vec::new()));
        let traced = TraceCtx {
            inner: Inner::Borrowed(ctx),
            log: log.clone(),
        };
        let out = self.inner.run(&traced).await;
        drop(traced);
        let calls = Rc::try_unwrap(log)
            .map(RefCell::into_inner)
            .unwrap_or_else(|shared| shared.borrow().clone());
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
    log: Rc<RefCell<Vec<CallRecord>>>,
}

impl<C: IoCtx> TraceCtx<'_, C> {
    /// Runs `f`, recording it as `call` with `detail`.
    async fn record<T>(&self, call: &str, detail: String, f: impl AsyncFnOnce() -> T) -> T {
        let start = self.inner.wtime();
        let out = f().await;
        self.log.borrow_mut().push(CallRecord {
            rank: self.inner.rank(),
            call: call.to_string(),
            detail,
            start,
            end: self.inner.wtime(),
        });
        out
    }
}

/// `write_at_all`, `read_shared`, … as MPI names the call `op` is.
fn op_name(op: Op) -> String {
    use crate::ctx::{Access, Coordination};
    let verb = match op.access {
        Access::Write => "write",
        Access::Read => "read",
    };
    let form = match (op.coord, op.pos) {
        (Coordination::Independent, Position::At(_)) => "_at",
        (Coordination::Collective, Position::At(_)) => "_at_all",
        (Coordination::Independent, Position::SharedPointer) => "_shared",
        (Coordination::Collective, Position::SharedPointer) => "_ordered",
    };
    format!("{verb}{form}")
}

fn op_detail(op: Op, bytes: usize) -> String {
    match op.pos {
        Position::At(off) => format!("off={off} len={bytes}"),
        Position::SharedPointer => format!("len={bytes}"),
    }
}

impl<C: IoCtx> IoCtx for TraceCtx<'_, C> {
    type Buf = C::Buf;
    type File = C::File;
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
        })
    }
    async fn open(&self, path: &str, opts: &OpenOptions) -> IoResult<C::File> {
        let detail = format!("{path} {:?} {:?}", opts.mode, opts.scope);
        self.record("open", detail, async || self.inner.open(path, opts).await)
            .await
    }
    async fn set_view(&self, file: &mut C::File, view: &View) -> IoResult<()> {
        self.record("set_view", format!("disp={}", view.disp), async || {
            self.inner.set_view(file, view).await
        })
        .await
    }
    async fn xfer(&self, file: &mut C::File, op: Op, buf: &mut C::Buf) -> IoResult<usize> {
        let detail = op_detail(op, buf.len());
        self.record(&op_name(op), detail, async || {
            self.inner.xfer(file, op, buf).await
        })
        .await
    }
    async fn post(&self, file: &mut C::File, op: Op, buf: C::Buf) -> IoResult<C::Request> {
        let detail = op_detail(op, buf.len());
        self.record(&format!("i{}", op_name(op)), detail, async || {
            self.inner.post(file, op, buf).await
        })
        .await
    }
    async fn wait_all(
        &self,
        file: &mut C::File,
        requests: Vec<C::Request>,
    ) -> IoResult<Vec<C::Buf>> {
        let detail = format!("n={}", requests.len());
        self.record("wait_all", detail, async || {
            self.inner.wait_all(file, requests).await
        })
        .await
    }
    async fn sync(&self, file: &mut C::File) -> IoResult<()> {
        self.record("sync", String::new(), async || self.inner.sync(file).await)
            .await
    }
    async fn drop_cache(&self, file: &mut C::File) -> IoResult<()> {
        self.record("drop_cache", String::new(), async || {
            self.inner.drop_cache(file).await
        })
        .await
    }
    async fn file_size(&self, file: &mut C::File) -> IoResult<u64> {
        self.record("file_size", String::new(), async || {
            self.inner.file_size(file).await
        })
        .await
    }
    fn hints_in_effect(&self, file: &C::File) -> Hints {
        self.inner.hints_in_effect(file)
    }
    async fn set_info(&self, file: &mut C::File, hints: &Hints) -> IoResult<()> {
        self.record("set_info", String::new(), async || {
            self.inner.set_info(file, hints).await
        })
        .await
    }
    async fn close(&self, file: C::File) -> IoResult<()> {
        self.record("close", String::new(), async || {
            self.inner.close(file).await
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
        let detail = format!("{:?} {}", kernel.kind, kernel.amount);
        self.record("compute", detail, async || {
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
