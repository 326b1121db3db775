//! The twin back end: `IoCtx` over `piotwin-sim`. Every rank is a task of one
//! deterministic virtual-time engine; data buffers carry lengths only.
//!
//! This file only translates: `IoCtx`'s types to the twin's ([`piotwin_sim::Rank`]
//! does the modelling, ROMIO's methods included), hints to the twin's MPI-IO
//! layer (which reports the hints in effect as MPICH does), `IoBuf` to a length,
//! `Kernel` kinds to the scenario's rates.

use std::cell::RefCell;
use std::future::Future;
use std::pin::Pin;

use crate::ctx::{
    Access, Api, Coordination, Hints, IoBuf, IoCtx, IoError, IoResult, Kernel, KernelKind, Op,
    OpenMode, OpenOptions, Position, RankProgram, ReduceOp, Scope, View,
};
use piotwin_sim::{Scenario, SimError};

/// A twin buffer: a length, no bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SimBuf {
    len: usize,
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

fn access(a: Access) -> piotwin_sim::Access {
    match a {
        Access::Write => piotwin_sim::Access::Write,
        Access::Read => piotwin_sim::Access::Read,
    }
}

fn op_parts(op: Op) -> (piotwin_sim::Access, piotwin_sim::Coord, piotwin_sim::Pos) {
    let coord = match op.coord {
        Coordination::Independent => piotwin_sim::Coord::Independent,
        Coordination::Collective => piotwin_sim::Coord::Collective,
    };
    let pos = match op.pos {
        Position::At(o) => piotwin_sim::Pos::At(o),
        Position::SharedPointer => piotwin_sim::Pos::SharedPointer,
    };
    (access(op.access), coord, pos)
}

fn io_error(e: piotwin_sim::FileError) -> IoError {
    match e {
        piotwin_sim::FileError::Call { op, path, message } => IoError::Call { op, path, message },
        piotwin_sim::FileError::Invalid(m) => IoError::Invalid(m),
    }
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
        SimBuf { len }
    }

    async fn barrier(&self) {
        self.rank.barrier().await
    }
    async fn bcast_u64(&self, value: u64, root: usize) -> u64 {
        self.rank.bcast_u64(value, root).await
    }
    async fn allreduce_f64(&self, value: f64, op: ReduceOp) -> f64 {
        let op = match op {
            ReduceOp::Sum => piotwin_sim::Reduce::Sum,
            ReduceOp::Min => piotwin_sim::Reduce::Min,
            ReduceOp::Max => piotwin_sim::Reduce::Max,
        };
        self.rank.allreduce_f64(value, op).await
    }
    async fn allgather_f64(&self, value: f64) -> Vec<f64> {
        self.rank.allgather_f64(value).await
    }
    async fn sendrecv_replace(&self, buf: &mut SimBuf, dest: usize, source: usize) {
        self.rank.sendrecv(buf.len as u64, dest, source).await
    }
    async fn split(&self, color: Option<usize>, key: usize) -> Option<Self> {
        self.rank
            .split(color, key)
            .await
            .map(|rank| SimCtx { rank })
    }

    async fn open(&self, path: &str, opts: &OpenOptions) -> IoResult<SimFile> {
        let mode = match opts.mode {
            OpenMode::Create => piotwin_sim::OpenMode::Create,
            OpenMode::CreateReadWrite => piotwin_sim::OpenMode::CreateReadWrite,
            OpenMode::Read => piotwin_sim::OpenMode::Read,
        };
        let api = match opts.api {
            Api::Posix => piotwin_sim::FileApi::Posix,
            Api::MpiIo => piotwin_sim::FileApi::MpiIo,
        };
        // POSIX files take no MPI-IO hints.
        let hints = match opts.api {
            Api::MpiIo => opts.hints.clone(),
            Api::Posix => Hints::new(),
        };
        let inner = self
            .rank
            .open_with_hints(path, mode, opts.scope == Scope::Shared, api, &hints)
            .await
            .map_err(io_error)?;
        Ok(SimFile { inner })
    }
    async fn set_view(&self, file: &mut SimFile, view: &View) -> IoResult<()> {
        self.rank
            .set_view(&mut file.inner, view)
            .await
            .map_err(io_error)
    }
    async fn xfer(&self, file: &mut SimFile, op: Op, buf: &mut SimBuf) -> IoResult<usize> {
        let (a, c, p) = op_parts(op);
        let n = self
            .rank
            .xfer(&mut file.inner, a, c, p, buf.len as u64)
            .await
            .map_err(io_error)?;
        Ok(n as usize)
    }
    async fn post(&self, file: &mut SimFile, op: Op, buf: SimBuf) -> IoResult<SimRequest> {
        let (a, c, p) = op_parts(op);
        let pending = self
            .rank
            .post(&mut file.inner, a, c, p, buf.len as u64)
            .await
            .map_err(io_error)?;
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
    async fn file_size(&self, file: &mut SimFile) -> IoResult<u64> {
        Ok(self.rank.file_size(&file.inner).await)
    }
    async fn set_info(&self, file: &mut SimFile, hints: &Hints) -> IoResult<()> {
        self.rank.set_info(&mut file.inner, hints).map_err(io_error)
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
        let kind = match kernel.kind {
            KernelKind::Memcpy => piotwin_sim::Compute::Memcpy,
            KernelKind::Fft => piotwin_sim::Compute::Fft,
            KernelKind::BtStep => piotwin_sim::Compute::BtStep,
            KernelKind::Flops => piotwin_sim::Compute::Flops,
        };
        self.rank.compute(kind, kernel.amount).await;
        None
    }
}

/// Run `program` on `ranks` simulated ranks of `scenario` with RNG seed `seed`;
/// returns every rank's output, indexed by rank. Deterministic: the same
/// scenario, ranks, seed and program give bit-identical outputs.
pub fn launch<P: RankProgram>(
    scenario: &Scenario,
    ranks: usize,
    seed: u64,
    program: &P,
) -> Result<Vec<P::Output>, SimError> {
    let twin = piotwin_sim::Twin::new(scenario, ranks, seed)?;
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
    twin.run(tasks)?;
    Ok(outputs
        .into_iter()
        .map(|o| o.into_inner().expect("every rank finished"))
        .collect())
}
