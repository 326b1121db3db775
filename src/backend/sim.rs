//! The twin back end: `IoCtx` over `piotwin-sim`. Every rank is a task of one
//! deterministic virtual-time engine; data buffers carry lengths only.
//!
//! It only forwards: [`piotwin_sim::Rank`] does the modelling (ROMIO's methods
//! included) and speaks the same vocabulary (`piotwin_types`); `IoBuf` is a
//! length.
//!
//! Repetitions ([`IoCtx::repeat`]) go to the twin's own, which fast-forwards
//! them once steady (`sim/src/ff/README.md`).

use std::cell::RefCell;
use std::future::Future;
use std::pin::Pin;

use crate::ctx::{
    Api, Checkpoint, Hints, IoBuf, IoCtx, IoResult, Kernel, Op, OpenOptions, RankProgram, ReduceOp,
    Repeat, Scope, View,
};
use piotwin_sim::{RunStats, Scenario, SimError, SimOptions};

/// A twin buffer: a length and, where the benchmark placed it, how far past a
/// page boundary it starts (page-cache copies can alias by it); no bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SimBuf {
    len: usize,
    placed: Option<u64>,
}

impl IoBuf for SimBuf {
    fn len(&self) -> usize {
        self.len
    }
    fn bytes(&self) -> Option<&[u8]> {
        None
    }
    fn bytes_mut(&mut self) -> Option<&mut [u8]> {
        None
    }
    fn set_len(&mut self, len: usize) {
        self.len = len;
    }
}

/// An open file in the twin.
pub struct SimFile {
    inner: piotwin_sim::File,
}

/// A posted nonblocking operation in the twin.
pub struct SimRequest {
    pending: piotwin_sim::Pending,
    buf: SimBuf,
}

/// One simulated rank's context.
pub struct SimCtx {
    rank: piotwin_sim::Rank,
}

impl IoCtx for SimCtx {
    type Buf = SimBuf;
    type File = SimFile;
    type Request = SimRequest;

    fn rank(&self) -> usize {
        self.rank.rank()
    }
    fn size(&self) -> usize {
        self.rank.size()
    }
    fn wtime(&self) -> f64 {
        self.rank.now()
    }
    fn alloc(&self, len: usize) -> SimBuf {
        SimBuf { len, placed: None }
    }
    fn alloc_placed(&self, len: usize, page_offset: usize) -> SimBuf {
        SimBuf {
            len,
            placed: Some(page_offset as u64 % 4096),
        }
    }

    async fn barrier(&self) {
        self.rank.barrier().await
    }
    async fn bcast_u64(&self, value: u64, root: usize) -> u64 {
        self.rank.bcast_u64(value, root).await
    }
    async fn allreduce_f64(&self, value: f64, op: ReduceOp) -> f64 {
        self.rank.allreduce_f64(value, op).await
    }
    async fn allgather_f64(&self, value: f64) -> Vec<f64> {
        self.rank.allgather_f64(value).await
    }
    async fn sendrecv_replace(&self, buf: &mut SimBuf, dest: usize, source: usize) {
        self.rank
            .sendrecv_replace(buf.len as u64, dest, source)
            .await
    }
    async fn send(&self, buf: &SimBuf, dest: usize) {
        self.rank.send(buf.len as u64, dest).await
    }
    async fn sendrecv(&self, send: &SimBuf, dest: usize, _recv: &mut SimBuf, source: usize) {
        self.rank.sendrecv(send.len as u64, dest, source).await
    }
    async fn exchange(&self, sends: &[(usize, &SimBuf)], recvs: &mut [(usize, &mut SimBuf)]) {
        let sends: Vec<(usize, u64)> = sends.iter().map(|(d, b)| (*d, b.len as u64)).collect();
        let recvs: Vec<usize> = recvs.iter().map(|(s, _)| *s).collect();
        self.rank.exchange(&sends, &recvs).await
    }
    async fn alltoallv(
        &self,
        _send: &SimBuf,
        sends: &[(usize, usize)],
        _recv: &mut SimBuf,
        recvs: &[(usize, usize)],
    ) {
        self.rank.alltoallv(sends, recvs).await
    }
    async fn recv(&self, _buf: &mut SimBuf, source: usize) {
        self.rank.recv(source).await
    }
    async fn split(&self, color: Option<usize>, key: usize) -> Option<Self> {
        self.rank
            .split(color, key)
            .await
            .map(|rank| SimCtx { rank })
    }

    async fn open(&self, path: &str, opts: &OpenOptions) -> IoResult<SimFile> {
        // POSIX files and Fortran units take no MPI-IO hints.
        let hints = match opts.api {
            Api::MpiIo => opts.hints.clone(),
            Api::Posix | Api::Fortran(_) => Hints::new(),
        };
        let inner = self
            .rank
            .open_with_hints(
                path,
                opts.mode,
                opts.scope == Scope::Shared,
                opts.api,
                &hints,
            )
            .await?;
        Ok(SimFile { inner })
    }
    async fn set_view(&self, file: &mut SimFile, view: &View) -> IoResult<()> {
        self.rank.set_view(&mut file.inner, view).await
    }
    async fn xfer(&self, file: &mut SimFile, op: Op, buf: &mut SimBuf) -> IoResult<usize> {
        let n = self
            .rank
            .xfer_placed(&mut file.inner, op, buf.len as u64, buf.placed)
            .await?;
        Ok(n as usize)
    }
    async fn post(&self, file: &mut SimFile, op: Op, buf: SimBuf) -> IoResult<SimRequest> {
        let pending = self
            .rank
            .post_placed(&mut file.inner, op, buf.len as u64, buf.placed)
            .await?;
        Ok(SimRequest { pending, buf })
    }
    async fn wait_all(
        &self,
        file: &mut SimFile,
        requests: Vec<SimRequest>,
    ) -> IoResult<Vec<SimBuf>> {
        let (pending, bufs): (Vec<_>, Vec<_>) =
            requests.into_iter().map(|r| (r.pending, r.buf)).unzip();
        self.rank.wait_all(&mut file.inner, pending).await;
        Ok(bufs)
    }
    async fn sync(&self, file: &mut SimFile) -> IoResult<()> {
        self.rank.sync(&mut file.inner).await;
        Ok(())
    }
    /// Write-back of the node's dirty pages of the file, then its clean pages evicted.
    async fn drop_cache(&self, file: &mut SimFile) -> IoResult<()> {
        self.rank.drop_cache(&mut file.inner).await;
        Ok(())
    }
    async fn file_size(&self, file: &mut SimFile) -> IoResult<u64> {
        Ok(self.rank.file_size(&file.inner).await)
    }
    async fn set_info(&self, file: &mut SimFile, hints: &Hints) -> IoResult<()> {
        self.rank.set_info(&mut file.inner, hints)
    }
    fn hints_in_effect(&self, file: &SimFile) -> Hints {
        file.inner.hints_in_effect()
    }
    async fn close(&self, file: SimFile) -> IoResult<()> {
        self.rank.close(file.inner).await;
        Ok(())
    }
    async fn delete(&self, path: &str) -> IoResult<()> {
        self.rank.delete(path).await;
        Ok(())
    }

    async fn compute<R>(&self, kernel: Kernel, _work: impl FnOnce() -> R) -> Option<R> {
        self.rank.compute(kernel.kind, kernel.amount).await;
        None
    }

    /// At no cost in virtual time, without synchronising ([`piotwin_sim::Rank::checkpoint`]).
    async fn checkpoint(&self, failed: bool) -> Checkpoint {
        self.rank.checkpoint(failed)
    }

    /// The twin's repetition ([`piotwin_sim::Rank::repeat`]): the same
    /// collectives and stop rule as the default, fast-forwarded once steady.
    async fn repeat(
        &self,
        policy: Repeat,
        body: impl AsyncFnMut(u64) -> IoResult<()>,
    ) -> IoResult<u64> {
        self.rank.repeat(policy, body).await
    }
}

/// Run `program` on `ranks` simulated ranks of `scenario` as `options` say;
/// returns every rank's output, indexed by rank, and the run's counters.
/// Deterministic: the same scenario, ranks, options and program give
/// bit-identical outputs.
pub fn launch<P: RankProgram>(
    scenario: &Scenario,
    ranks: usize,
    options: SimOptions,
    program: &P,
) -> Result<(Vec<P::Output>, RunStats), SimError> {
    let twin = piotwin_sim::Twin::new(scenario, ranks, options)?;
    let ctxs: Vec<SimCtx> = (0..ranks).map(|r| SimCtx { rank: twin.rank(r) }).collect();
    let outputs: Vec<RefCell<Option<P::Output>>> = (0..ranks).map(|_| RefCell::new(None)).collect();
    let tasks: Vec<Pin<Box<dyn Future<Output = ()> + '_>>> = ctxs
        .iter()
        .zip(&outputs)
        .map(|(ctx, slot)| {
            Box::pin(async move {
                let out = program.run(ctx).await;
                *slot.borrow_mut() = Some(out);
            }) as Pin<Box<dyn Future<Output = ()> + '_>>
        })
        .collect();
    let stats = twin.run(tasks)?;
    let outputs = outputs
        .into_iter()
        .map(|o| o.into_inner().expect("every rank finished"))
        .collect();
    Ok((outputs, stats))
}
