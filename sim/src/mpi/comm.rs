//! Communicators and collectives: rendezvous of a communicator's ranks, the
//! cost models of the collectives, point-to-point messages.

use std::cell::{Cell, OnceCell, RefCell};
use std::collections::{BTreeMap, VecDeque};
use std::rc::Rc;

use piotwin_types::{IoError, OpenMode, ReduceOp};

use crate::Rank;
use crate::engine::{Engine, Signal};
use crate::mpi::Model;
use crate::mpi::Wait;
use crate::mpi::mpiio::{File, open_inode};
use crate::storage::Storage;

pub(crate) struct Comm {
    pub(crate) id: u32,
    /// World ranks, indexed by rank in this communicator.
    pub(crate) members: Vec<usize>,
    /// The wake-up of a message step to a rank of each oversubscribed node of
    /// the members, by node (sorted; `Platform::wakes`).
    pub(crate) wakes: Vec<(u32, f64)>,
    /// Message latency (s) and bandwidth (B/s) for the collective cost models.
    pub(crate) lat: f64,
    pub(crate) bw: f64,
    /// `lat` of a step of an all-reduce of one value (`nodes.allreduce_wake`).
    pub(crate) allreduce_lat: f64,
    /// How much earlier than a collective's completion each member leaves it
    /// (`Platform::release_advance`; empty: all together).
    pub(crate) advance: Vec<f64>,
}

#[derive(Clone, Copy)]
pub(crate) enum Contrib {
    None,
    F64(f64),
    U64(u64),
    Split(Option<usize>, usize),
    /// A fast-forward agreement: (most iterations, fewest iterations) to skip.
    Skip(u64, u64),
}

pub(crate) enum Kind<'k> {
    Barrier,
    Bcast(usize),
    Allreduce(ReduceOp),
    Allgather,
    Split,
    Ordered(usize),
    SetView(usize),
    /// ROMIO's all-gathers of every rank's start and end offsets, opening each
    /// collective data call (`mpiio.offsets_steps` message steps where given).
    Offsets,
    /// The all-to-all of sizes opening each two-phase round.
    Sizes,
    Open(&'k str, OpenMode),
    Close,
    /// The fast-forward's agreement on a skip: the minimum of every rank's
    /// value, at no cost in virtual time (it is not part of the modelled program).
    Agree,
    /// A barrier, then a broadcast of the value the root's function (given
    /// by the root only, kept as [`Rendezvous::decide`]) gives at the time it
    /// leaves the barrier.
    BarrierBcast(Option<Box<dyn FnOnce(f64) -> u64>>),
}

impl Kind<'_> {
    pub(crate) fn name(&self) -> &'static str {
        match self {
            Kind::Barrier => "barrier",
            Kind::Bcast(_) => "bcast",
            Kind::Allreduce(_) => "allreduce",
            Kind::Allgather => "allgather",
            Kind::Split => "split",
            Kind::Ordered(_) => "ordered access",
            Kind::SetView(_) => "set_view",
            Kind::Offsets => "collective I/O",
            Kind::Sizes => "collective I/O round",
            Kind::Open(..) => "open",
            Kind::Close => "close",
            Kind::Agree => "fast-forward agreement",
            Kind::BarrierBcast(_) => "barrier and bcast",
        }
    }
}

pub(crate) enum CollOut {
    Unit,
    F64(f64),
    U64(u64),
    F64s(Vec<f64>),
    Split(Vec<Option<(Rc<Comm>, usize)>>),
    Offsets(Vec<u64>),
    /// (inode, shared pointer, the file's own duplicate of the communicator).
    Opened(Result<(usize, usize, Rc<Comm>), IoError>),
}

pub(crate) struct Rendezvous {
    pub(crate) what: &'static str,
    pub(crate) arrived: usize,
    pub(crate) contribs: Vec<Contrib>,
    pub(crate) signals: Vec<Option<Signal>>,
    pub(crate) out: Rc<OnceCell<CollOut>>,
    /// The root's value of a [`Kind::BarrierBcast`] as a function of the
    /// time it leaves the barrier.
    pub(crate) decide: Option<Box<dyn FnOnce(f64) -> u64>>,
}

#[derive(Default)]
pub(crate) struct Mailbox {
    pub(crate) sends: VecDeque<(Signal, u64)>,
    pub(crate) recvs: VecDeque<Signal>,
}

/// Message steps of one collective over `n` ranks as the twin charges it
/// (a barrier's, a broadcast's): ceil(log2 n).
pub fn ceil_log2(n: usize) -> f64 {
    (usize::BITS - (n.max(1) - 1).leading_zeros()) as f64
}

impl Rank {
    /// A collective on this rank's own communicator (see [`Rank::collective`]).
    pub(crate) async fn on_comm(&self, c: Contrib, kind: Kind<'_>) -> Rc<OnceCell<CollOut>> {
        self.collective(&self.comm, self.rank, &self.seq, c, kind)
            .await
    }

    /// A collective on `file`'s communicator (its own sequence of collectives).
    pub(crate) async fn on_file(
        &self,
        file: &File,
        c: Contrib,
        kind: Kind<'_>,
    ) -> Rc<OnceCell<CollOut>> {
        self.collective(&file.comm, file.rank, &file.seq, c, kind)
            .await
    }

    /// Joins the next collective of `comm` (numbered by `seq`) as member `me`;
    /// the last to arrive completes it ([`complete`]). Returns the result cell.
    pub(crate) async fn collective(
        &self,
        comm: &Rc<Comm>,
        me: usize,
        seq: &Cell<u64>,
        c: Contrib,
        mut kind: Kind<'_>,
    ) -> Rc<OnceCell<CollOut>> {
        let n = comm.members.len();
        let s = seq.get();
        seq.set(s + 1);
        let sig = Signal::new();
        let what = kind.name();
        let out;
        {
            let mut m = self.sim.model.borrow_mut();
            let z = m
                .rendezvous
                .entry((comm.id, s))
                .or_insert_with(|| Rendezvous {
                    what,
                    arrived: 0,
                    contribs: vec![Contrib::None; n],
                    signals: vec![None; n],
                    out: Rc::new(OnceCell::new()),
                    decide: None,
                });
            debug_assert_eq!(z.what, what, "ranks called different collectives");
            if let Kind::BarrierBcast(decide @ Some(_)) = &mut kind {
                z.decide = decide.take();
            }
            z.contribs[me] = c;
            z.signals[me] = Some(sig.clone());
            z.arrived += 1;
            out = z.out.clone();
            if z.arrived == n {
                let z = m.rendezvous.remove(&(comm.id, s)).expect("present");
                let mut e = self.sim.engine.borrow_mut();
                complete(&mut m, &mut e, &self.sim.storage, comm, kind, z);
            }
        }
        self.wait(
            &sig,
            Wait::Collective {
                what,
                comm: comm.id,
                seq: s,
                size: n,
            },
        )
        .await;
        out
    }

    /// Synchronises all ranks of the communicator.
    pub async fn barrier(&self) {
        self.on_comm(Contrib::None, Kind::Barrier).await;
    }

    /// A barrier, then `root`'s `decide(t)` on every rank, `t` the time
    /// `root` leaves the barrier: [`Rank::barrier`] and then
    /// [`Rank::bcast_u64`] of a value `root` works out in between, in one
    /// rendezvous with the same virtual times (every rank leaves the barrier
    /// at one instant and enters the broadcast then). A time-driven loop
    /// does this after every iteration; one rendezvous wakes every rank
    /// once instead of twice.
    pub async fn barrier_bcast_u64(
        &self,
        root: usize,
        decide: impl FnOnce(f64) -> u64 + 'static,
    ) -> u64 {
        let decide: Option<Box<dyn FnOnce(f64) -> u64>> =
            (self.rank == root).then(|| Box::new(decide) as _);
        let out = self
            .on_comm(Contrib::None, Kind::BarrierBcast(decide))
            .await;
        match out.get() {
            Some(CollOut::U64(v)) => *v,
            _ => unreachable!("barrier and bcast yield a u64"),
        }
    }

    /// `root`'s value on every rank.
    pub async fn bcast_u64(&self, value: u64, root: usize) -> u64 {
        let out = self.on_comm(Contrib::U64(value), Kind::Bcast(root)).await;
        match out.get() {
            Some(CollOut::U64(v)) => *v,
            _ => unreachable!("bcast yields a u64"),
        }
    }

    /// The reduction of every rank's value, in rank order.
    pub async fn allreduce_f64(&self, value: f64, op: ReduceOp) -> f64 {
        let out = self.on_comm(Contrib::F64(value), Kind::Allreduce(op)).await;
        match out.get() {
            Some(CollOut::F64(v)) => *v,
            _ => unreachable!("allreduce yields an f64"),
        }
    }

    /// Every rank's value, indexed by rank.
    pub async fn allgather_f64(&self, value: f64) -> Vec<f64> {
        let out = self.on_comm(Contrib::F64(value), Kind::Allgather).await;
        match out.get() {
            Some(CollOut::F64s(v)) => v.clone(),
            _ => unreachable!("allgather yields values"),
        }
    }

    /// `MPI_Comm_split`: ranks with the same `Some(color)` form a communicator,
    /// ordered by `key` then old rank; `None` gets no communicator.
    pub async fn split(&self, color: Option<usize>, key: usize) -> Option<Rank> {
        let out = self.on_comm(Contrib::Split(color, key), Kind::Split).await;
        match out.get() {
            Some(CollOut::Split(v)) => v[self.rank]
                .as_ref()
                .map(|(comm, r)| Rank::new(self.sim.clone(), self.world_rank, comm.clone(), *r)),
            _ => unreachable!("split yields communicators"),
        }
    }

    /// Sends `bytes` to `dest` and receives the same amount from `source`
    /// (`MPI_Sendrecv_replace`; ranks of this communicator).
    pub async fn sendrecv(&self, bytes: u64, dest: usize, source: usize) {
        let (me, to, from) = (
            self.world_rank,
            self.comm.members[dest],
            self.comm.members[source],
        );
        let (s, r) = {
            let mut m = self.sim.model.borrow_mut();
            let mut e = self.sim.engine.borrow_mut();
            let s = post_message(&mut m, &mut e, &self.comm, me, to, Some(bytes));
            let r = post_message(&mut m, &mut e, &self.comm, from, me, None);
            (s, r)
        };
        self.count_message(to, Some(bytes));
        self.count_message(from, None);
        let why = Wait::Message {
            send_to: to,
            recv_from: from,
        };
        self.wait(&s, why).await;
        self.wait(&r, why).await;
    }

    /// `MPI_Sendrecv_replace` of `bytes` with `dest` and `source`: MPI packs
    /// the message into a temporary buffer first (MPICH and Open MPI alike);
    /// one of `nodes.mmap_from` or more is freshly mapped on every call, so
    /// filling it costs this rank `compute.first_touch` time on its core
    /// before the message goes (below that `malloc` reuses memory, and the
    /// copy is part of the message's cost).
    pub async fn sendrecv_replace(&self, bytes: u64, dest: usize, source: usize) {
        let fill = self
            .sim
            .model
            .borrow()
            .platform
            .temporary_buffer_time(self.world_rank, bytes);
        self.cpu_work(fill).await;
        self.sendrecv(bytes, dest, source).await
    }

    /// Nonblocking sends and receives completed together (`MPI_Irecv`s, then
    /// `MPI_Isend`s, then `MPI_Waitall`): every message is posted at once, so they
    /// share the network as their flows overlap. `sends` are (rank, bytes),
    /// `recvs` ranks of this communicator; a receive's size is its sender's.
    pub async fn exchange(&self, sends: &[(usize, u64)], recvs: &[usize]) {
        let me = self.world_rank;
        let posted: Vec<(Signal, Wait)> = {
            let mut m = self.sim.model.borrow_mut();
            let mut e = self.sim.engine.borrow_mut();
            let mut posted = Vec::with_capacity(sends.len() + recvs.len());
            for &source in recvs {
                let from = self.comm.members[source];
                let s = post_message(&mut m, &mut e, &self.comm, from, me, None);
                posted.push((s, Wait::Recv { from }));
                self.count_message(from, None);
            }
            for &(dest, bytes) in sends {
                let to = self.comm.members[dest];
                let s = post_message(&mut m, &mut e, &self.comm, me, to, Some(bytes));
                posted.push((s, Wait::Send { to }));
                self.count_message(to, Some(bytes));
            }
            posted
        };
        for (s, why) in &posted {
            self.wait(s, *why).await;
        }
    }

    /// `MPI_Alltoallv`: each `(r, bytes)` of `send` to rank `r`, and from each
    /// `(r, bytes)` of `recv`, as one [`Rank::exchange`] of the pairs with a
    /// count (MPICH's alltoallv posts them all and waits); this rank's part to
    /// itself is a memory copy.
    pub async fn alltoallv(&self, send: &[(usize, usize)], recv: &[(usize, usize)]) {
        let me = self.rank;
        let sends: Vec<(usize, u64)> = send
            .iter()
            .filter(|&&(r, b)| r != me && b > 0)
            .map(|&(r, b)| (r, b as u64))
            .collect();
        let recvs: Vec<usize> = recv
            .iter()
            .filter(|&&(r, b)| r != me && b > 0)
            .map(|&(r, _)| r)
            .collect();
        if let Some(&(_, own)) = send.iter().find(|&&(r, _)| r == me)
            && own > 0
        {
            self.compute(piotwin_types::KernelKind::Memcpy, own as f64)
                .await;
        }
        self.exchange(&sends, &recvs).await;
    }

    /// Sends `bytes` to `dest` (`MPI_Send`, modelled as a rendezvous: it returns
    /// when the matching receive has the message).
    pub async fn send(&self, bytes: u64, dest: usize) {
        let (me, to) = (self.world_rank, self.comm.members[dest]);
        let s = {
            let mut m = self.sim.model.borrow_mut();
            let mut e = self.sim.engine.borrow_mut();
            post_message(&mut m, &mut e, &self.comm, me, to, Some(bytes))
        };
        self.count_message(to, Some(bytes));
        self.wait(&s, Wait::Send { to }).await;
    }

    /// Receives the next message from `source` (`MPI_Recv`); its size is the sender's.
    pub async fn recv(&self, source: usize) {
        let (me, from) = (self.world_rank, self.comm.members[source]);
        let r = {
            let mut m = self.sim.model.borrow_mut();
            let mut e = self.sim.engine.borrow_mut();
            post_message(&mut m, &mut e, &self.comm, from, me, None)
        };
        self.count_message(from, None);
        self.wait(&r, Wait::Recv { from }).await;
    }
}

/// Posts a send (`bytes` = Some) or a receive on the mailbox `from → to`; when it
/// meets its partner the message starts. Returns the signal both sides await.
pub(crate) fn post_message(
    m: &mut Model,
    e: &mut Engine,
    comm: &Comm,
    from: usize,
    to: usize,
    bytes: Option<u64>,
) -> Signal {
    let key = (comm.id, from, to);
    let mb = m.mail.entry(key).or_default();
    let matched = match bytes {
        Some(b) => mb.recvs.pop_front().map(|s| (s, b)),
        None => mb.sends.pop_front(),
    };
    let sig = match matched {
        Some((s, b)) => {
            let (lat, path) = m.platform.p2p(from, to, &comm.wakes, b);
            e.transfer(lat, path, b as f64, s.clone());
            s
        }
        None => {
            let s = Signal::new();
            match bytes {
                Some(b) => mb.sends.push_back((s.clone(), b)),
                None => mb.recvs.push_back(s.clone()),
            }
            s
        }
    };
    if m.mail
        .get(&key)
        .is_some_and(|mb| mb.sends.is_empty() && mb.recvs.is_empty())
    {
        m.mail.remove(&key);
    }
    sig
}

/// The last rank arrived at a collective: compute its result and schedule every
/// rank's completion.
pub(crate) fn complete(
    m: &mut Model,
    e: &mut Engine,
    storage: &RefCell<Storage>,
    comm: &Comm,
    kind: Kind<'_>,
    mut z: Rendezvous,
) {
    let n = comm.members.len();
    let now = e.now();
    let steps = ceil_log2(n);
    let word = 8.0 / comm.bw;
    let barrier_t = now + steps * comm.lat;
    let mut per_rank: Option<Vec<f64>> = None;
    let (t, out) = match kind {
        Kind::Barrier => (barrier_t, CollOut::Unit),
        Kind::Bcast(root) => {
            let v = match z.contribs[root] {
                Contrib::U64(v) => v,
                _ => 0,
            };
            (now + steps * (comm.lat + word), CollOut::U64(v))
        }
        Kind::BarrierBcast(_) => {
            let v = z.decide.take().map_or(0, |decide| decide(barrier_t));
            (barrier_t + steps * (comm.lat + word), CollOut::U64(v))
        }
        Kind::Allreduce(op) => {
            let vals = z.contribs.iter().map(|c| match c {
                Contrib::F64(v) => *v,
                _ => 0.0,
            });
            let v = match op {
                ReduceOp::Sum => vals.fold(0.0, |a, b| a + b),
                ReduceOp::Min => vals.fold(f64::INFINITY, f64::min),
                ReduceOp::Max => vals.fold(f64::NEG_INFINITY, f64::max),
            };
            (now + steps * (comm.allreduce_lat + word), CollOut::F64(v))
        }
        Kind::Allgather => {
            let vals = z
                .contribs
                .iter()
                .map(|c| match c {
                    Contrib::F64(v) => *v,
                    _ => 0.0,
                })
                .collect();
            (
                now + steps * comm.lat + (n - 1) as f64 * word,
                CollOut::F64s(vals),
            )
        }
        Kind::Split => {
            let mut groups: BTreeMap<usize, Vec<(usize, usize)>> = BTreeMap::new();
            for (r, c) in z.contribs.iter().enumerate() {
                if let Contrib::Split(Some(color), key) = c {
                    groups.entry(*color).or_default().push((*key, r));
                }
            }
            let mut out = vec![None; n];
            for (_, mut g) in groups {
                g.sort_unstable();
                let sub = m.new_comm(g.iter().map(|&(_, r)| comm.members[r]).collect());
                for (new_rank, &(_, r)) in g.iter().enumerate() {
                    out[r] = Some((sub.clone(), new_rank));
                }
            }
            (
                now + steps * comm.lat + (n - 1) as f64 * 2.0 * word,
                CollOut::Split(out),
            )
        }
        Kind::Ordered(ptr) => {
            let p = &mut m.ptrs[ptr];
            let mut offs = Vec::with_capacity(n);
            for c in &z.contribs {
                offs.push(p.pos);
                if let Contrib::U64(len) = c {
                    p.pos += len;
                }
            }
            let begin = (now + steps * comm.lat + (n - 1) as f64 * word).max(p.free_at);
            p.free_at = begin + m.shared_pointer_cost;
            (p.free_at, CollOut::Offsets(offs))
        }
        Kind::Offsets => (
            now + m.offsets_steps.unwrap_or(steps) * comm.lat + (n - 1) as f64 * 2.0 * word,
            CollOut::Unit,
        ),
        Kind::Sizes => (
            now + steps * comm.lat + (n - 1) as f64 * 2.0 * word,
            CollOut::Unit,
        ),
        Kind::Agree => {
            let (most, fewest) =
                z.contribs
                    .iter()
                    .fold((u64::MAX, 0), |(most, fewest), c| match c {
                        Contrib::Skip(m, f) => (most.min(*m), fewest.max(*f)),
                        _ => (0, fewest),
                    });
            (now, CollOut::U64(if most >= fewest { most } else { 0 }))
        }
        Kind::SetView(ptr) => {
            m.ptrs[ptr].pos = 0;
            (barrier_t, CollOut::Unit)
        }
        Kind::Open(path, mode) => {
            let (cost, opened) = open_inode(m, &mut storage.borrow_mut(), path, mode);
            let synced = barrier_t + m.open_steps * comm.lat;
            // The first rank's call creates (or opens); the others then open the existing file.
            let mut times = Vec::with_capacity(n);
            for (i, &w) in comm.members.iter().enumerate() {
                let node = m.platform.node_of(w);
                let c = if i == 0 { cost } else { m.md.open };
                times.push(m.md_op(synced, node, c));
            }
            per_rank = Some(times);
            let opened = opened.map(|(inode, ptr)| (inode, ptr, m.new_comm(comm.members.clone())));
            (synced, CollOut::Opened(opened))
        }
        Kind::Close => {
            let mut times = Vec::with_capacity(n);
            for &w in &comm.members {
                let node = m.platform.node_of(w);
                let c = m.md.close;
                times.push(m.md_op(barrier_t, node, c));
            }
            per_rank = Some(times);
            (barrier_t, CollOut::Unit)
        }
    };
    let _ = z.out.set(out);
    let signals = z
        .signals
        .into_iter()
        .map(|s| s.expect("every rank arrived"));
    // Members that leave early do so no sooner than the last one arrived.
    let per_rank = match (per_rank, comm.advance.is_empty()) {
        (at, true) => at,
        (at, false) => Some(
            at.unwrap_or_else(|| vec![t; n])
                .into_iter()
                .zip(&comm.advance)
                .map(|(at, early)| (at - early).max(now))
                .collect(),
        ),
    };
    match per_rank {
        Some(at) => signals.zip(at).for_each(|(s, at)| e.fire_at(at, s)),
        None => e.fire_all_at(t, signals.collect()),
    }
}
