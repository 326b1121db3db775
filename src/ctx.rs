//! The one interface a benchmark may use: [`IoCtx`].
//!
//! A benchmark is an ordinary sequential `async fn` per rank, generic over
//! `C: IoCtx` (SimGrid S4U's idea: the back end owns time). It never knows which
//! back end runs it (IOR's `aiori.h` idea: one small table of operations):
//!
//! * `backend::real` runs it as one MPI process per rank over MPI-IO;
//! * `backend::sim` runs all ranks as tasks of the twin's virtual-time engine.
//!
//! The data path is one operation, [`IoCtx::xfer`], with what it does chosen by
//! [`Op`] (read or write; independent or collective; explicit offset or shared
//! file pointer). Nonblocking I/O is [`IoCtx::post`] + [`IoCtx::wait_all`].
//! Communication is MPI's few general calls: collectives (barrier, broadcast,
//! all-reduce, all-gather, split, [`IoCtx::alltoallv`]), blocking point-to-point
//! (`send`, `recv`, [`IoCtx::sendrecv`], `sendrecv_replace`) and nonblocking
//! point-to-point completed by one wait ([`IoCtx::exchange`]).
//! Data exists only where the back end keeps it: [`IoBuf::bytes`] is `None` in
//! the twin, so filling and verifying are no-ops there without the benchmark
//! branching on the mode.

use std::future::Future;

pub use piotwin_types::stop::Checkpoint;
pub use piotwin_types::{
    Access, Api, Coordination, Datatype, FortranAccess, Hints, IoError, IoResult, KernelKind, Op,
    OpenMode, Position, ReduceOp, Repeat, Scope, View, within_budget,
};

/// Everything `open` needs besides the path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OpenOptions {
    /// Create, write or read.
    pub mode: OpenMode,
    /// Shared file or file per process.
    pub scope: Scope,
    /// POSIX or MPI-IO.
    pub api: Api,
    /// MPI-IO hints (ignored under POSIX).
    pub hints: Hints,
    /// Promise that the file is not opened concurrently elsewhere
    /// (`MPI_MODE_UNIQUE_OPEN`, which lets ROMIO skip some locking); MPI-IO only,
    /// the twin does not model it. b_eff_io sets it unless `-nounique`.
    pub unique_open: bool,
}

/// A piece of computation the benchmark does between I/O calls.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Kernel {
    /// Which calibrated rate applies.
    pub kind: KernelKind,
    /// Work in the kind's unit (bytes or flops).
    pub amount: f64,
}

impl Kernel {
    /// `count` complex 1-D FFTs of length `n`: 5·n·log2(n) flops each.
    pub fn fft(n: u64, count: u64) -> Kernel {
        let n_f = n as f64;
        Kernel {
            kind: KernelKind::Fft,
            amount: 5.0 * n_f * n_f.log2() * count as f64,
        }
    }
    /// FTIO's closed-form input computed into `bytes` bytes.
    pub fn signal(bytes: u64) -> Kernel {
        Kernel {
            kind: KernelKind::Signal,
            amount: bytes as f64,
        }
    }
    /// `flops` floating-point operations of plain loops (MADbench2's busy-work).
    pub fn flops(flops: f64) -> Kernel {
        Kernel {
            kind: KernelKind::Flops,
            amount: flops,
        }
    }
    /// Filling `bytes` bytes with a data pattern.
    pub fn pattern_fill(bytes: u64) -> Kernel {
        Kernel {
            kind: KernelKind::Pattern,
            amount: bytes as f64,
        }
    }
    /// Checking `bytes` bytes read against their data pattern.
    pub fn pattern_check(bytes: u64) -> Kernel {
        Kernel {
            kind: KernelKind::PatternCheck,
            amount: bytes as f64,
        }
    }
    /// BTIO's error norm of a dump of `bytes` bytes read back.
    pub fn error_norm(bytes: u64) -> Kernel {
        Kernel {
            kind: KernelKind::ErrorNorm,
            amount: bytes as f64,
        }
    }
    /// A copy of `bytes` bytes.
    pub fn memcpy(bytes: u64) -> Kernel {
        Kernel {
            kind: KernelKind::Memcpy,
            amount: bytes as f64,
        }
    }
}

/// A buffer of I/O data. In real mode it holds bytes; in the twin only a length.
pub trait IoBuf {
    /// Length in bytes.
    fn len(&self) -> usize;
    /// True for a zero-length buffer.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// The data, where the back end keeps data (real mode); `None` in the twin.
    fn bytes(&self) -> Option<&[u8]>;
    /// The data for filling, where the back end keeps data; `None` in the twin.
    fn bytes_mut(&mut self) -> Option<&mut [u8]>;
    /// Use the first `len` bytes of the allocation, `len` at most the length it
    /// was allocated with: one buffer serves calls of several sizes, as the C
    /// benchmarks reuse one `malloc`'d buffer (where it lies in memory can
    /// matter: see b_eff_io's module notes).
    fn set_len(&mut self, len: usize);
}

/// The one interface a benchmark may use. See the module docs.
///
/// Every method that involves other ranks (barrier, bcast, allreduce, split,
/// shared-scope open/close/set_view, collective `xfer`, `wait_all` of collective
/// requests) must be called by all ranks of the context, as in MPI.
#[allow(async_fn_in_trait)]
pub trait IoCtx: Sized {
    /// An I/O buffer.
    type Buf: IoBuf;
    /// An open file.
    type File;
    /// A posted nonblocking operation; it owns its buffer until `wait_all`.
    type Request;

    /// This rank's number in the context, `0..size()`.
    fn rank(&self) -> usize;
    /// Number of ranks in the context.
    fn size(&self) -> usize;
    /// Seconds since an arbitrary origin: `MPI_Wtime` in real mode, the virtual clock in the twin.
    fn wtime(&self) -> f64;
    /// A buffer of `len` bytes (zeroed where it holds data).
    fn alloc(&self, len: usize) -> Self::Buf;
    /// A buffer like [`IoCtx::alloc`] that starts `page_offset` bytes past a page
    /// boundary (the twin keeps the placement, not bytes). Where a C
    /// benchmark's buffer lies is part of what it measures: a read from the page
    /// cache at a page-aligned offset into a buffer 16 bytes past a page
    /// (glibc's `malloc` of a large block) runs at half speed or less on some
    /// machines (see b_eff_io's buffers, in its program; the twin's
    /// `nodes.cache.aliased_bw`).
    fn alloc_placed(&self, len: usize, page_offset: usize) -> Self::Buf {
        let _ = page_offset;
        self.alloc(len)
    }

    /// Synchronise all ranks.
    async fn barrier(&self);
    /// `root`'s `value`, on every rank.
    async fn bcast_u64(&self, value: u64, root: usize) -> u64;
    /// The reduction of every rank's `value`, on every rank.
    async fn allreduce_f64(&self, value: f64, op: ReduceOp) -> f64;
    /// Every rank's `value`, indexed by rank, on every rank.
    async fn allgather_f64(&self, value: f64) -> Vec<f64>;
    /// Send `buf` to `dest` and replace it with what `source` sends (`MPI_Sendrecv_replace`).
    async fn sendrecv_replace(&self, buf: &mut Self::Buf, dest: usize, source: usize);
    /// Send `buf` to `dest` (`MPI_Send`; the twin models a rendezvous with the
    /// receive). For small control messages, such as a token passed along ranks.
    async fn send(&self, buf: &Self::Buf, dest: usize);
    /// Receive the next message from `source` into `buf` (`MPI_Recv`), which
    /// must be as long as what `source` sends.
    async fn recv(&self, buf: &mut Self::Buf, source: usize);
    /// Send `send` to `dest` and receive `recv.len()` bytes from `source` into
    /// `recv` (`MPI_Sendrecv`).
    async fn sendrecv(&self, send: &Self::Buf, dest: usize, recv: &mut Self::Buf, source: usize);
    /// Nonblocking point-to-point completed together: a receive posted for each
    /// `(source, buffer)` of `recvs` (as long as what `source` sends), a send for
    /// each `(dest, buffer)` of `sends`, then a wait for all of them (`MPI_Irecv`s,
    /// `MPI_Isend`s, `MPI_Waitall`). Messages between two ranks match in order.
    async fn exchange(&self, sends: &[(usize, &Self::Buf)], recvs: &mut [(usize, &mut Self::Buf)]);
    /// All-to-all with counts (`MPI_Alltoallv`, collective): each `(r, bytes)` of
    /// `sends` sends that many bytes of `send` to rank `r`, each `(r, bytes)` of
    /// `recvs` receives that many from rank `r` into `recv`; both ascending by
    /// rank and packed in that order, and a rank not listed exchanges nothing.
    /// The counts are sparse so that a neighbour exchange over thousands of
    /// ranks costs the twin its messages, not ranks²; the real call hands MPI
    /// the dense arrays it takes.
    async fn alltoallv(
        &self,
        send: &Self::Buf,
        sends: &[(usize, usize)],
        recv: &mut Self::Buf,
        recvs: &[(usize, usize)],
    );
    /// Sub-communicator of the ranks with the same `Some(color)`, ordered by `key`
    /// then old rank; `None` for a rank that passes no color (`MPI_UNDEFINED`).
    async fn split(&self, color: Option<usize>, key: usize) -> Option<Self>;

    /// Open `path` (collective over this context for `Scope::Shared`).
    async fn open(&self, path: &str, opts: &OpenOptions) -> IoResult<Self::File>;
    /// Set the file view (collective for a shared file). MPI-IO files only.
    async fn set_view(&self, file: &mut Self::File, view: &View) -> IoResult<()>;
    /// The one blocking data-path call: moves `buf.len()` bytes as `op` says.
    /// Returns the bytes moved.
    async fn xfer(&self, file: &mut Self::File, op: Op, buf: &mut Self::Buf) -> IoResult<usize>;
    /// Start a nonblocking operation; the request owns `buf` until [`IoCtx::wait_all`].
    async fn post(&self, file: &mut Self::File, op: Op, buf: Self::Buf) -> IoResult<Self::Request>;
    /// Complete `requests`, returning their buffers in the same order. Requests
    /// posted as `Coordination::Collective` are completed together as **one**
    /// collective operation (PnetCDF's `ncmpi_wait_all` aggregation); every rank
    /// of the file must then call `wait_all`.
    async fn wait_all(
        &self,
        file: &mut Self::File,
        requests: Vec<Self::Request>,
    ) -> IoResult<Vec<Self::Buf>>;
    /// Flush written data to storage (`MPI_File_sync` / `fsync`).
    async fn sync(&self, file: &mut Self::File) -> IoResult<()>;
    /// Make the next read of `file` cold on this rank's node: written data goes to
    /// storage first (as [`IoCtx::sync`]), then the node's page cache drops its copy
    /// of the whole file. IOzone-style probes call it before a read test (`-I`) so
    /// the read measures the device, not memory.
    ///
    /// * real: `fsync` (for an MPI-IO file `fdatasync` through its path), then
    ///   `posix_fadvise(POSIX_FADV_DONTNEED)` over the whole file — advisory: the
    ///   kernel drops the clean pages no one has mapped or locked;
    /// * twin: the node's dirty pages of the file are written back (costing
    ///   device time, as `sync` does), then its clean pages leave the node's page
    ///   cache (server caches keep theirs, as a client's `fadvise` cannot reach them).
    ///
    /// Every rank of a shared MPI-IO file calls it, as `sync` (the twin syncs
    /// collectively; real mode needs no partner). This default only syncs:
    /// right for a back end without a page cache (dry run, in-memory files).
    async fn drop_cache(&self, file: &mut Self::File) -> IoResult<()> {
        self.sync(file).await
    }
    /// Current size of the file in bytes.
    async fn file_size(&self, file: &mut Self::File) -> IoResult<u64>;
    /// The hints in effect on the open file (real mode: read back with `MPI_File_get_info`).
    fn hints_in_effect(&self, file: &Self::File) -> Hints;
    /// Lay `hints` over the hints of an open file (`MPI_File_set_info`; collective for a
    /// shared file). b_eff_io sets per-pattern hints this way. A back end that cannot
    /// change hints after open reports it (this default) rather than ignoring them.
    async fn set_info(&self, file: &mut Self::File, hints: &Hints) -> IoResult<()> {
        let _ = file;
        Err(IoError::Invalid(format!(
            "this back end cannot change hints on an open file (MPI_File_set_info); asked for {:?}",
            hints.iter().collect::<Vec<_>>()
        )))
    }
    /// Close the file (collective for a shared file).
    async fn close(&self, file: Self::File) -> IoResult<()>;
    /// Delete `path` if it exists (one rank calls it). Missing files are not an error.
    async fn delete(&self, path: &str) -> IoResult<()>;

    /// Run `work` as computation of cost `kernel`. Real mode runs and times it and
    /// returns `Some(result)`; the twin skips it, advances this rank's clock by the
    /// kernel's modelled cost and returns `None`.
    async fn compute<R>(&self, kernel: Kernel, work: impl FnOnce() -> R) -> Option<R>;

    /// Whether this rank has seen a stop request: no communication, so only
    /// for a loop that may end early on one rank alone (independent I/O),
    /// before the checkpoint ([`IoCtx::stop_requested`]) where all agree.
    fn stop_seen(&self) -> bool {
        piotwin_types::stop::requested().is_some()
    }

    /// A checkpoint: whether every rank stops here, because some rank received
    /// a stop request (SIGINT, SIGTERM) or reported a failure (`failed`, this
    /// rank's). The same answer on every rank. All ranks call it at the same
    /// points, outside measured regions (between patterns, repetitions, dumps);
    /// a rank that failed keeps taking part (collective calls included) until
    /// it says stop, so that no partner waits for it in a collective. Real mode pays
    /// one all-reduce (this default; where a rank failed, the signal may show
    /// only at the end of the run); the twin answers at no cost in virtual
    /// time and without synchronising, so an uninterrupted run is unchanged.
    async fn checkpoint(&self, failed: bool) -> Checkpoint {
        const FAILED: f64 = 1024.0;
        let signal = piotwin_types::stop::requested().unwrap_or(0);
        let mine = signal as f64 + if failed { FAILED } else { 0.0 };
        let all = self.allreduce_f64(mine, ReduceOp::Max).await;
        let signal = (all % FAILED) as i32;
        Checkpoint {
            signal: (signal > 0).then_some(signal),
            failed: all >= FAILED,
        }
    }

    /// [`IoCtx::checkpoint`] where failures are agreed otherwise: the stop
    /// request, if any.
    async fn stop_requested(&self) -> Option<i32> {
        self.checkpoint(false).await.signal
    }

    /// Run `body(r)` for `r = 0, 1, …` as `policy` says and return how many times
    /// it ran. Every rank of the context must call it with the same policy.
    /// Real mode runs it literally (this default); the twin may fast-forward once
    /// its state repeats, within a stated error bound.
    async fn repeat(
        &self,
        policy: Repeat,
        mut body: impl AsyncFnMut(u64) -> IoResult<()>,
    ) -> IoResult<u64> {
        let start = self.wtime();
        let mut r = 0u64;
        loop {
            body(r).await?;
            r += 1;
            if !go_on(self, policy, start, r).await {
                return Ok(r);
            }
        }
    }
}

/// Whether [`IoCtx::repeat`] runs its body again after `done` runs that began at
/// `start` (the context's `wtime`): [`Repeat`]'s rule, with the time-driven
/// barrier and rank 0's broadcast decision (a stop request on rank 0 ends
/// it too). The default [`IoCtx::repeat`] asks
/// here; the twin's asks the same rule ([`within_budget`]) in one rendezvous
/// of the barrier and the broadcast, of the same virtual times.
pub async fn go_on<C: IoCtx + ?Sized>(ctx: &C, policy: Repeat, start: f64, done: u64) -> bool {
    match policy {
        Repeat::Count(n) | Repeat::InStep(n) => done < n,
        Repeat::TimeBudget { budget } => {
            ctx.barrier().await;
            let mine = within_budget(ctx.wtime() - start, done, budget);
            ctx.bcast_u64(mine as u64, 0).await == 1
        }
    }
}

/// A per-rank program: what a back end launches on every rank.
///
/// Closures cannot be generic over the context type, so a benchmark's entry is a
/// value implementing this trait; `run` is called once per rank.
#[allow(async_fn_in_trait)]
pub trait RankProgram {
    /// What each rank returns.
    type Output;
    /// The per-rank program.
    async fn run<C: IoCtx>(&self, ctx: &C) -> Self::Output;
}

/// A program by reference runs as the program (a driver wraps one it borrows).
impl<P: RankProgram + ?Sized> RankProgram for &P {
    type Output = P::Output;
    async fn run<C: IoCtx>(&self, ctx: &C) -> P::Output {
        (**self).run(ctx).await
    }
}

/// Run `f` to completion where nothing can pend: every real-mode call completes
/// inside `poll` (MPI blocks the thread), so one poll finishes the program.
pub fn block_on<F: Future>(f: F) -> F::Output {
    use std::pin::pin;
    use std::task::{Context, Poll, Waker};
    let mut cx = Context::from_waker(Waker::noop());
    match pin!(f).poll(&mut cx) {
        Poll::Ready(v) => v,
        Poll::Pending => panic!(
            "block_on: a real-mode future returned Pending; real calls must complete inside poll"
        ),
    }
}
