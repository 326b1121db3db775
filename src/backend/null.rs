//! The null back end: every rank's program runs, every I/O call costs nothing and
//! moves no data (IOR's `dryRun`, made a back end instead of a flag: STYLE.md §1).
//!
//! What it is for: checking a benchmark's logic — options, offsets, the order and
//! matching of collective calls — on N ranks without MPI and without a scenario
//! (`piotwin run … --dry-run --ranks N`). Collectives (barrier, reductions, shared
//! opens and closes, collective transfers) really synchronise the ranks, so a
//! benchmark that calls them in different orders on different ranks is reported
//! as a deadlock, as it would hang under MPI. File sizes are tracked so that
//! reading a file never written fails as it would for real.
//!
//! What it is not: a model. [`IoCtx::wtime`] is the host's monotonic clock, so the
//! times it reports are the benchmark's own overhead, not I/O; buffers carry no
//! data ([`IoBuf::bytes`] is `None`), so nothing is verified; `compute` skips its
//! work; point-to-point exchanges move nothing (a receive still waits for its send).
//!
//! Execution: all ranks are futures polled in rank order on one thread (no
//! wakers needed: a pass that neither completes a rank nor lets one enter a new
//! collective means no rank can go on).

use std::any::Any;
use std::cell::{Cell, RefCell};
use std::collections::BTreeMap;
use std::future::Future;
use std::pin::Pin;
use std::rc::Rc;
use std::task::{Context, Poll, Waker};
use std::time::Instant;

use crate::ctx::{
    Api, Coordination, FortranAccess, Hints, IoBuf, IoCtx, IoError, IoResult, Kernel, Op, OpenMode,
    OpenOptions, RankProgram, ReduceOp, Scope, View,
};

/// The null back end's one failure: the ranks wait on each other for ever.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "deadlock: ranks {blocked_ranks:?} wait in collective calls that the other ranks of their communicator never make"
)]
pub struct NullError {
    /// Ranks (of the world) that had not finished.
    pub blocked_ranks: Vec<usize>,
}

/// A value a rank contributes to a collective.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Val {
    Unit,
    U64(u64),
    F64(f64),
    Split(Option<usize>, usize),
}

/// One collective in progress or finished but not yet read by every member.
struct Round {
    values: Vec<Option<Val>>,
    arrived: usize,
    unread: usize,
    /// The combined result, computed once by the first member to see the round complete.
    result: Option<Rc<dyn Any>>,
}

/// A communicator: its members' world ranks and its collective rounds.
struct Comm {
    /// World rank of each member, by rank in this communicator.
    members: Vec<usize>,
    /// Rounds by sequence number; a member's n-th collective is round n.
    rounds: RefCell<BTreeMap<u64, Round>>,
    /// Communicators made by `split`, by (round, color); created by the first
    /// member to finish that round.
    children: RefCell<BTreeMap<(u64, usize), Rc<Comm>>>,
}

impl Comm {
    fn new(members: Vec<usize>) -> Rc<Comm> {
        Rc::new(Comm {
            members,
            rounds: RefCell::new(BTreeMap::new()),
            children: RefCell::new(BTreeMap::new()),
        })
    }
}

/// State shared by all ranks of one launch.
struct World {
    start: Instant,
    /// Bumped whenever a rank enters a collective: the executor's progress test.
    events: Cell<u64>,
    /// Bytes per file path (end of the furthest write).
    files: RefCell<BTreeMap<String, u64>>,
    /// Messages sent and not yet received, by (world source, world destination).
    mail: RefCell<BTreeMap<(usize, usize), u64>>,
}

/// One rank's context.
pub struct NullCtx {
    world: Rc<World>,
    comm: Rc<Comm>,
    rank: usize,
    next_round: Cell<u64>,
}

/// A buffer that is only a length.
#[derive(Debug, Clone)]
pub struct NullBuf(usize);

impl IoBuf for NullBuf {
    fn len(&self) -> usize {
        self.0
    }
    fn bytes(&self) -> Option<&[u8]> {
        None
    }
    fn bytes_mut(&mut self) -> Option<&mut [u8]> {
        None
    }
    fn set_len(&mut self, len: usize) {
        self.0 = len;
    }
}

/// An open file of the null back end.
#[derive(Debug)]
pub struct NullFile {
    path: String,
    opts: OpenOptions,
    view: Option<View>,
    /// Records moved so far (a sequential Fortran unit's markers count in its size).
    records: u64,
}

/// A posted operation: its buffer and whether it completes collectively.
#[derive(Debug)]
pub struct NullRequest {
    buf: NullBuf,
    coord: Coordination,
}

impl NullCtx {
    /// Contribute `v` to this rank's next collective, wait for every member's, and
    /// return `combine(all values by rank)` — computed once per round, so a
    /// reduction over N ranks costs O(N), not O(N²).
    async fn rendezvous<R: Clone + 'static>(&self, v: Val, combine: impl Fn(&[Val]) -> R) -> R {
        let round = self.next_round.get();
        self.next_round.set(round + 1);
        let mut value = Some(v);
        std::future::poll_fn(|_| {
            let n = self.comm.members.len();
            let mut rounds = self.comm.rounds.borrow_mut();
            let r = rounds.entry(round).or_insert_with(|| Round {
                values: vec![None; n],
                arrived: 0,
                unread: n,
                result: None,
            });
            if let Some(v) = value.take() {
                r.values[self.rank] = Some(v);
                r.arrived += 1;
                self.world.events.set(self.world.events.get() + 1);
            }
            if r.arrived < n {
                return Poll::Pending;
            }
            let result = r
                .result
                .get_or_insert_with(|| {
                    let all: Vec<Val> = r
                        .values
                        .iter()
                        .map(|v| v.expect("every member arrived"))
                        .collect();
                    Rc::new(combine(&all)) as Rc<dyn Any>
                })
                .clone();
            r.unread -= 1;
            if r.unread == 0 {
                rounds.remove(&round);
            }
            Poll::Ready(
                result
                    .downcast_ref::<R>()
                    .expect("every member of a round combines alike")
                    .clone(),
            )
        })
        .await
    }

    fn call_err(op: &str, path: &str, message: &str) -> IoError {
        IoError::Call {
            op: op.into(),
            path: path.into(),
            message: message.into(),
        }
    }
}

/// The `f64`s of an `allreduce`/`allgather` round, in rank order.
fn floats(all: &[Val]) -> impl Iterator<Item = f64> + '_ {
    all.iter().map(|v| match v {
        Val::F64(x) => *x,
        other => panic!("a rank contributed {other:?} to an f64 reduction"),
    })
}

impl IoCtx for NullCtx {
    type Buf = NullBuf;
    type File = NullFile;
    type Request = NullRequest;

    fn rank(&self) -> usize {
        self.rank
    }
    fn size(&self) -> usize {
        self.comm.members.len()
    }
    fn wtime(&self) -> f64 {
        self.world.start.elapsed().as_secs_f64()
    }
    fn alloc(&self, len: usize) -> NullBuf {
        NullBuf(len)
    }

    async fn barrier(&self) {
        self.rendezvous(Val::Unit, |_| ()).await;
    }
    async fn bcast_u64(&self, value: u64, root: usize) -> u64 {
        self.rendezvous(Val::U64(value), |all| match all[root] {
            Val::U64(v) => v,
            other => panic!("bcast_u64: rank {root} contributed {other:?} to the same collective"),
        })
        .await
    }
    async fn allreduce_f64(&self, value: f64, op: ReduceOp) -> f64 {
        self.rendezvous(Val::F64(value), |all| {
            let it = floats(all);
            match op {
                ReduceOp::Sum => it.sum(),
                ReduceOp::Min => it.fold(f64::INFINITY, f64::min),
                ReduceOp::Max => it.fold(f64::NEG_INFINITY, f64::max),
            }
        })
        .await
    }
    async fn allgather_f64(&self, value: f64) -> Vec<f64> {
        let all = self
            .rendezvous(Val::F64(value), |all| {
                Rc::new(floats(all).collect::<Vec<f64>>())
            })
            .await;
        all.as_ref().clone()
    }
    async fn sendrecv_replace(&self, buf: &mut NullBuf, dest: usize, source: usize) {
        // No data moves; only the arguments are checked.
        assert!(
            dest < self.size() && source < self.size(),
            "sendrecv_replace: peer out of range"
        );
        let _ = buf;
    }
    async fn sendrecv(&self, send: &NullBuf, dest: usize, recv: &mut NullBuf, source: usize) {
        self.send(send, dest).await;
        self.recv(recv, source).await;
    }
    /// The sends go to their mailboxes at once, then each receive waits for its send.
    async fn exchange(&self, sends: &[(usize, &NullBuf)], recvs: &mut [(usize, &mut NullBuf)]) {
        for (dest, buf) in sends {
            self.send(buf, *dest).await;
        }
        for (source, buf) in recvs.iter_mut() {
            self.recv(buf, *source).await;
        }
    }
    /// A collective: every rank of the context takes part, with one count per rank.
    async fn alltoallv(
        &self,
        _send: &NullBuf,
        sends: &[(usize, usize)],
        _recv: &mut NullBuf,
        recvs: &[(usize, usize)],
    ) {
        let valid = |c: &[(usize, usize)]| {
            c.windows(2).all(|w| w[0].0 < w[1].0) && c.iter().all(|&(r, _)| r < self.size())
        };
        assert!(
            valid(sends) && valid(recvs),
            "alltoallv: counts ascending by rank, ranks in the communicator"
        );
        self.rendezvous(Val::Unit, |_| ()).await;
    }
    /// Eager: the message waits in the destination's mailbox.
    async fn send(&self, _buf: &NullBuf, dest: usize) {
        assert!(dest < self.size(), "send: peer out of range");
        let key = (self.comm.members[self.rank], self.comm.members[dest]);
        *self.world.mail.borrow_mut().entry(key).or_insert(0) += 1;
        self.world.events.set(self.world.events.get() + 1);
    }
    /// Waits until `source` has sent (a receive never matched is a deadlock).
    async fn recv(&self, _buf: &mut NullBuf, source: usize) {
        assert!(source < self.size(), "recv: peer out of range");
        let key = (self.comm.members[source], self.comm.members[self.rank]);
        std::future::poll_fn(|_| {
            let mut mail = self.world.mail.borrow_mut();
            match mail.get_mut(&key) {
                Some(n) if *n > 0 => {
                    *n -= 1;
                    self.world.events.set(self.world.events.get() + 1);
                    Poll::Ready(())
                }
                _ => Poll::Pending,
            }
        })
        .await
    }
    async fn split(&self, color: Option<usize>, key: usize) -> Option<Self> {
        let round = self.next_round.get();
        let all = self
            .rendezvous(Val::Split(color, key), |all| Rc::new(all.to_vec()))
            .await;
        let color = color?;
        let mut group: Vec<(usize, usize)> = all
            .iter()
            .enumerate()
            .filter_map(|(r, v)| match v {
                Val::Split(Some(c), k) if *c == color => Some((*k, r)),
                _ => None,
            })
            .collect();
        group.sort();
        let new_rank = group
            .iter()
            .position(|&(_, r)| r == self.rank)
            .expect("a rank is in its own color");
        let comm = self
            .comm
            .children
            .borrow_mut()
            .entry((round, color))
            .or_insert_with(|| {
                Comm::new(group.iter().map(|&(_, r)| self.comm.members[r]).collect())
            })
            .clone();
        Some(NullCtx {
            world: self.world.clone(),
            comm,
            rank: new_rank,
            next_round: Cell::new(0),
        })
    }

    async fn open(&self, path: &str, opts: &OpenOptions) -> IoResult<NullFile> {
        if opts.scope == Scope::Shared {
            self.barrier().await;
        }
        let mut files = self.world.files.borrow_mut();
        match opts.mode {
            OpenMode::Read if !files.contains_key(path) => {
                return Err(Self::call_err(
                    "open",
                    path,
                    "no such file (never written in this dry run)",
                ));
            }
            OpenMode::Read => {}
            OpenMode::Create | OpenMode::CreateReadWrite => {
                files.entry(path.to_string()).or_insert(0);
            }
        }
        Ok(NullFile {
            path: path.to_string(),
            opts: opts.clone(),
            view: None,
            records: 0,
        })
    }
    async fn set_view(&self, file: &mut NullFile, view: &View) -> IoResult<()> {
        if file.opts.api != Api::MpiIo {
            return Err(IoError::Invalid(format!(
                "set_view on `{}`: POSIX files and Fortran units have no views",
                file.path
            )));
        }
        if file.opts.scope == Scope::Shared {
            self.barrier().await;
        }
        file.view = Some(view.clone());
        Ok(())
    }
    async fn xfer(&self, file: &mut NullFile, op: Op, buf: &mut NullBuf) -> IoResult<usize> {
        if op.coord == Coordination::Collective {
            if file.opts.api != Api::MpiIo {
                return Err(IoError::Invalid(format!(
                    "collective transfer on POSIX file or Fortran unit `{}`",
                    file.path
                )));
            }
            if file.opts.scope == Scope::Shared {
                self.barrier().await;
            }
        }
        let writable = matches!(file.opts.mode, OpenMode::Create | OpenMode::CreateReadWrite);
        if op.access == crate::ctx::Access::Write && !writable {
            return Err(Self::call_err("write", &file.path, "file opened read-only"));
        }
        let mut markers = 0;
        if let Api::Fortran(unit) = file.opts.api {
            if let crate::ctx::Position::At(off) = op.pos
                && let Some(why) = unit.refuses(off, buf.len() as u64)
            {
                return Err(IoError::Invalid(format!("`{}`: {why}", file.path)));
            }
            if unit == FortranAccess::Sequential {
                file.records += 1;
                markers = file.records * piotwin_types::SEQUENTIAL_MARKERS;
            }
        }
        if let (crate::ctx::Access::Write, crate::ctx::Position::At(off), None) =
            (op.access, op.pos, &file.view)
        {
            let mut files = self.world.files.borrow_mut();
            let size = files.entry(file.path.clone()).or_insert(0);
            *size = (*size).max(off + buf.len() as u64 + markers);
        }
        Ok(buf.len())
    }
    async fn post(&self, file: &mut NullFile, op: Op, buf: NullBuf) -> IoResult<NullRequest> {
        let _ = file;
        Ok(NullRequest {
            buf,
            coord: op.coord,
        })
    }
    async fn wait_all(
        &self,
        file: &mut NullFile,
        requests: Vec<NullRequest>,
    ) -> IoResult<Vec<NullBuf>> {
        if file.opts.scope == Scope::Shared
            && requests.iter().any(|r| r.coord == Coordination::Collective)
        {
            self.barrier().await;
        }
        Ok(requests.into_iter().map(|r| r.buf).collect())
    }
    async fn sync(&self, file: &mut NullFile) -> IoResult<()> {
        if file.opts.api == Api::MpiIo && file.opts.scope == Scope::Shared {
            self.barrier().await;
        }
        Ok(())
    }
    async fn file_size(&self, file: &mut NullFile) -> IoResult<u64> {
        Ok(self
            .world
            .files
            .borrow()
            .get(&file.path)
            .copied()
            .unwrap_or(0))
    }
    fn hints_in_effect(&self, file: &NullFile) -> Hints {
        match file.opts.api {
            Api::MpiIo => file.opts.hints.clone(),
            Api::Posix | Api::Fortran(_) => Hints::new(),
        }
    }
    async fn close(&self, file: NullFile) -> IoResult<()> {
        if file.opts.scope == Scope::Shared {
            self.barrier().await;
        }
        Ok(())
    }
    async fn delete(&self, path: &str) -> IoResult<()> {
        self.world.files.borrow_mut().remove(path);
        Ok(())
    }
    async fn compute<R>(&self, kernel: Kernel, work: impl FnOnce() -> R) -> Option<R> {
        let _ = (kernel, work);
        None
    }
}

/// One rank's program, polled by [`launch`].
type RankTask<'a, T> = Pin<Box<dyn Future<Output = T> + 'a>>;

/// Run `program` on `ranks` ranks with zero-cost I/O; returns every rank's output,
/// indexed by rank, or the ranks left blocked if the program deadlocks.
pub fn launch<P: RankProgram>(ranks: usize, program: &P) -> Result<Vec<P::Output>, NullError> {
    assert!(ranks > 0, "null::launch: at least one rank");
    let world = Rc::new(World {
        start: Instant::now(),
        events: Cell::new(0),
        mail: RefCell::new(BTreeMap::new()),
        files: RefCell::new(BTreeMap::new()),
    });
    let comm = Comm::new((0..ranks).collect());
    let ctxs: Vec<NullCtx> = (0..ranks)
        .map(|rank| NullCtx {
            world: world.clone(),
            comm: comm.clone(),
            rank,
            next_round: Cell::new(0),
        })
        .collect();
    let mut tasks: Vec<Option<RankTask<'_, P::Output>>> = ctxs
        .iter()
        .map(|c| Some(Box::pin(program.run(c)) as Pin<Box<dyn Future<Output = _>>>))
        .collect();
    let mut outputs: Vec<Option<P::Output>> = (0..ranks).map(|_| None).collect();
    let mut cx = Context::from_waker(Waker::noop());
    let mut left = ranks;
    while left > 0 {
        let before = world.events.get();
        let mut finished = 0;
        for (rank, slot) in tasks.iter_mut().enumerate() {
            let Some(task) = slot else { continue };
            if let Poll::Ready(v) = task.as_mut().poll(&mut cx) {
                outputs[rank] = Some(v);
                *slot = None;
                finished += 1;
            }
        }
        left -= finished;
        if left > 0 && finished == 0 && world.events.get() == before {
            let blocked_ranks = tasks
                .iter()
                .enumerate()
                .filter(|(_, t)| t.is_some())
                .map(|(r, _)| r)
                .collect();
            return Err(NullError { blocked_ranks });
        }
    }
    drop(tasks);
    Ok(outputs
        .into_iter()
        .map(|o| o.expect("every rank finished"))
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Sum;
    impl RankProgram for Sum {
        type Output = (f64, u64, Option<usize>);
        async fn run<C: IoCtx>(&self, ctx: &C) -> Self::Output {
            let s = ctx.allreduce_f64(ctx.rank() as f64, ReduceOp::Sum).await;
            let b = ctx.bcast_u64(ctx.rank() as u64 * 10, 2).await;
            let sub = ctx
                .split(Some(ctx.rank() % 2), ctx.size() - ctx.rank())
                .await
                .map(|c| c.rank());
            (s, b, sub)
        }
    }

    #[test]
    fn collectives_combine_every_rank() {
        let out = launch(5, &Sum).unwrap();
        assert!(out.iter().all(|o| o.0 == 10.0 && o.1 == 20));
        // Even ranks 0,2,4 ordered by key 5,3,1 → new ranks 2,1,0.
        assert_eq!(
            out.iter().map(|o| o.2.unwrap()).collect::<Vec<_>>(),
            vec![2, 1, 1, 0, 0]
        );
    }

    struct Mismatched;
    impl RankProgram for Mismatched {
        type Output = ();
        async fn run<C: IoCtx>(&self, ctx: &C) {
            if ctx.rank() != 1 {
                ctx.barrier().await;
            }
        }
    }

    #[test]
    fn a_missing_collective_is_a_deadlock() {
        let e = launch(3, &Mismatched).unwrap_err();
        assert_eq!(e.blocked_ranks, vec![0, 2]);
    }
}
