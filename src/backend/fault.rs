//! Fault injection for tests: any back end, with one rank's chosen calls failing.
//!
//! Benchmarks promise that a rank whose I/O fails does not leave the others
//! waiting in a collective, and that what finished before the failure is kept.
//! [`WithFault`] runs a program over a context that fails the calls a [`Fault`]
//! names, so those promises are tested on every back end the same way.

use std::cell::Cell;
use std::ops::RangeInclusive;
use std::rc::Rc;

use crate::ctx::{
    Checkpoint, Hints, IoCtx, IoError, IoResult, Kernel, Op, OpenOptions, RankProgram, ReduceOp,
    View,
};

/// Which calls are counted and failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Call {
    /// `open`.
    Open,
    /// `xfer`.
    Xfer,
}

/// Rank `rank`'s calls of kind `call` numbered (from 1) in `numbers` fail with
/// `IoError::Invalid("injected failure")`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Fault {
    pub(crate) rank: usize,
    pub(crate) call: Call,
    pub(crate) numbers: RangeInclusive<u64>,
}

/// `inner` run over a context with `fault` injected.
pub(crate) struct WithFault<P> {
    pub(crate) inner: P,
    pub(crate) fault: Fault,
}

impl<P: RankProgram> RankProgram for WithFault<P> {
    type Output = P::Output;
    async fn run<C: IoCtx>(&self, ctx: &C) -> P::Output {
        let ctx = Faulty {
            inner: Inner::Borrowed(ctx),
            fault: &self.fault,
            calls: Rc::new(Cell::new(0)),
        };
        self.inner.run(&ctx).await
    }
}

struct Faulty<'a, C> {
    inner: Inner<'a, C>,
    fault: &'a Fault,
    /// This rank's calls of the fault's kind, counted across splits.
    calls: Rc<Cell<u64>>,
}

/// The context wrapped: the launcher's, or one a split made.
enum Inner<'a, C> {
    Borrowed(&'a C),
    Owned(C),
}

impl<C> std::ops::Deref for Inner<'_, C> {
    type Target = C;
    fn deref(&self) -> &C {
        match self {
            Inner::Borrowed(c) => c,
            Inner::Owned(c) => c,
        }
    }
}

impl<C: IoCtx> Faulty<'_, C> {
    /// Counts a call of kind `call`; an error if the fault says it fails.
    fn check(&self, call: Call) -> IoResult<()> {
        if call != self.fault.call || self.inner.rank() != self.fault.rank {
            return Ok(());
        }
        self.calls.set(self.calls.get() + 1);
        match self.fault.numbers.contains(&self.calls.get()) {
            true => Err(IoError::Invalid("injected failure".into())),
            false => Ok(()),
        }
    }
}

impl<C: IoCtx> IoCtx for Faulty<'_, C> {
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
    fn alloc_placed(&self, len: usize, page_offset: usize) -> C::Buf {
        self.inner.alloc_placed(len, page_offset)
    }
    async fn barrier(&self) {
        self.inner.barrier().await
    }
    async fn bcast_u64(&self, value: u64, root: usize) -> u64 {
        self.inner.bcast_u64(value, root).await
    }
    async fn allreduce_f64(&self, value: f64, op: ReduceOp) -> f64 {
        self.inner.allreduce_f64(value, op).await
    }
    async fn allgather_f64(&self, value: f64) -> Vec<f64> {
        self.inner.allgather_f64(value).await
    }
    async fn sendrecv(&self, send: &C::Buf, dest: usize, recv: &mut C::Buf, source: usize) {
        self.inner.sendrecv(send, dest, recv, source).await
    }
    async fn exchange(&self, sends: &[(usize, &C::Buf)], recvs: &mut [(usize, &mut C::Buf)]) {
        self.inner.exchange(sends, recvs).await
    }
    async fn alltoallv(
        &self,
        send: &C::Buf,
        sends: &[(usize, usize)],
        recv: &mut C::Buf,
        recvs: &[(usize, usize)],
    ) {
        self.inner.alltoallv(send, sends, recv, recvs).await
    }
    async fn sendrecv_replace(&self, buf: &mut C::Buf, dest: usize, source: usize) {
        self.inner.sendrecv_replace(buf, dest, source).await
    }
    async fn send(&self, buf: &C::Buf, dest: usize) {
        self.inner.send(buf, dest).await
    }
    async fn recv(&self, buf: &mut C::Buf, source: usize) {
        self.inner.recv(buf, source).await
    }
    /// The fault follows the rank into the new communicator (by its rank there).
    async fn split(&self, color: Option<usize>, key: usize) -> Option<Self> {
        let sub = self.inner.split(color, key).await?;
        Some(Faulty {
            inner: Inner::Owned(sub),
            fault: self.fault,
            calls: self.calls.clone(),
        })
    }
    async fn open(&self, path: &str, opts: &OpenOptions) -> IoResult<C::File> {
        self.check(Call::Open)?;
        self.inner.open(path, opts).await
    }
    async fn set_view(&self, file: &mut C::File, view: &View) -> IoResult<()> {
        self.inner.set_view(file, view).await
    }
    async fn xfer(&self, file: &mut C::File, op: Op, buf: &mut C::Buf) -> IoResult<usize> {
        self.check(Call::Xfer)?;
        self.inner.xfer(file, op, buf).await
    }
    async fn post(&self, file: &mut C::File, op: Op, buf: C::Buf) -> IoResult<C::Request> {
        self.inner.post(file, op, buf).await
    }
    async fn wait_all(
        &self,
        file: &mut C::File,
        requests: Vec<C::Request>,
    ) -> IoResult<Vec<C::Buf>> {
        self.inner.wait_all(file, requests).await
    }
    async fn sync(&self, file: &mut C::File) -> IoResult<()> {
        self.inner.sync(file).await
    }
    async fn drop_cache(&self, file: &mut C::File) -> IoResult<()> {
        self.inner.drop_cache(file).await
    }
    async fn file_size(&self, file: &mut C::File) -> IoResult<u64> {
        self.inner.file_size(file).await
    }
    fn hints_in_effect(&self, file: &C::File) -> Hints {
        self.inner.hints_in_effect(file)
    }
    async fn close(&self, file: C::File) -> IoResult<()> {
        self.inner.close(file).await
    }
    async fn delete(&self, path: &str) -> IoResult<()> {
        self.inner.delete(path).await
    }
    async fn compute<R>(&self, kernel: Kernel, work: impl FnOnce() -> R) -> Option<R> {
        self.inner.compute(kernel, work).await
    }
    async fn checkpoint(&self, failed: bool) -> Checkpoint {
        self.inner.checkpoint(failed).await
    }
}
