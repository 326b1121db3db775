//! The virtual-time engine: a tiny executor for rank tasks, a time-ordered event
//! queue, completion [`Signal`]s and the flow network.
//!
//! The executor ([`Executor`]) only polls tasks that were woken; it knows nothing
//! of time. The engine loop ([`run`]) owns the clock: it runs ready tasks, handles
//! the events due now, recomputes flow rates once per virtual instant when flows
//! started or ended, and only then moves the clock to the next event.
//!
//! Determinism rule: events are ordered by `(time, sequence number)` and tasks are
//! polled in the order they were woken, so the same inputs replay bit for bit.

use std::cell::{Cell, RefCell};
use std::cmp::Ordering;
use std::collections::{BinaryHeap, HashMap};
use std::future::Future;
use std::pin::Pin;
use std::rc::Rc;
use std::task::{Context, Poll, Waker};

use crate::flow::{FlowNet, ResourceId};

/// A one-shot completion flag a task can await; fired by an event or by another task.
#[derive(Clone, Default)]
pub(crate) struct Signal(Rc<SignalState>);

#[derive(Default)]
struct SignalState {
    fired: Cell<bool>,
    /// The first waiter (most signals have exactly one: no allocation for it).
    first: RefCell<Option<Waker>>,
    /// Further waiters, in the order they waited.
    more: RefCell<Vec<Waker>>,
}

impl Signal {
    pub(crate) fn new() -> Signal {
        Signal::default()
    }

    /// Marks the signal fired and wakes its waiters (in the order they waited).
    pub(crate) fn fire(&self) {
        self.0.fired.set(true);
        if let Some(w) = self.0.first.take() {
            w.wake();
        }
        for w in self.0.more.take() {
            w.wake();
        }
    }

    /// True if both are the same signal.
    pub(crate) fn same(&self, other: &Signal) -> bool {
        Rc::ptr_eq(&self.0, &other.0)
    }

    /// True once fired.
    pub(crate) fn is_fired(&self) -> bool {
        self.0.fired.get()
    }

    /// Completes when the signal has fired. Several tasks may wait on one signal.
    pub(crate) fn wait(&self) -> SignalWait<'_> {
        SignalWait {
            signal: self,
            registered: None,
        }
    }
}

/// Future of [`Signal::wait`].
pub(crate) struct SignalWait<'s> {
    signal: &'s Signal,
    /// The waker registered by the last poll (tasks keep one waker for their life,
    /// so spurious re-polls register nothing new).
    registered: Option<Waker>,
}

impl Future for SignalWait<'_> {
    type Output = ();
    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        let st = &self.signal.0;
        if st.fired.get() {
            return Poll::Ready(());
        }
        if !self
            .registered
            .as_ref()
            .is_some_and(|w| w.will_wake(cx.waker()))
        {
            let mut first = st.first.borrow_mut();
            if first.is_none() {
                *first = Some(cx.waker().clone());
            } else {
                st.more.borrow_mut().push(cx.waker().clone());
            }
            self.registered = Some(cx.waker().clone());
        }
        Poll::Pending
    }
}

/// What happens when an event is due.
enum Action {
    /// Fire a signal (a delay ended, a collective completed, …).
    Fire(Signal),
    /// Start a flow (after its latency): the slot of its path, bytes and
    /// completion signal in [`Engine::starts`] (kept out of the heap entry).
    StartFlow(u32),
    /// The earliest flow completion; stale unless its number is the latest scheduled.
    FlowTick(u64),
    /// Fire the signals of a slot in [`Engine::batches`], one per step, in
    /// order (a collective's ranks released at one instant).
    FireAll(u32),
}

/// A queued event: its time, its sequence number and its action, 32 bytes (the
/// heap moves entries around). The time is kept as the bits of
/// [`f64::total_cmp`]'s order, so ordering is two integer compares.
struct Event {
    key: u64,
    seq: u64,
    action: Action,
}

/// A flow waiting for its start event.
struct FlowStart {
    path: Vec<(ResourceId, f64)>,
    bytes: f64,
    /// Fired at the end.
    done: Signal,
    /// The identical transfers it stands for ([`Engine::send`]).
    copies: usize,
    /// Its entry in [`Engine::queued_starts`], if it takes copies.
    key: Option<StartKey>,
}

/// What makes queued transfers identical: start time (as [`time_key`]), bytes
/// (bits) and a hash of the path (the path itself is compared on a match).
type StartKey = (u64, u64, u64);

/// A hash of `path` for [`StartKey`] (FNV-1a over the resource ids and weight bits).
fn path_hash(path: &[(ResourceId, f64)]) -> u64 {
    path.iter().fold(0xcbf2_9ce4_8422_2325, |h, &(r, w)| {
        let h = (h ^ u64::from(r.index())).wrapping_mul(0x0100_0000_01b3);
        (h ^ w.to_bits()).wrapping_mul(0x0100_0000_01b3)
    })
}

/// `t`'s bits, transformed so that unsigned order is [`f64::total_cmp`] order.
fn time_key(t: f64) -> u64 {
    let b = t.to_bits();
    if b >> 63 == 1 { !b } else { b | 1 << 63 }
}

/// Inverse of [`time_key`].
fn key_time(k: u64) -> f64 {
    f64::from_bits(if k >> 63 == 1 { k & !(1 << 63) } else { !k })
}

impl PartialEq for Event {
    fn eq(&self, o: &Self) -> bool {
        (self.key, self.seq) == (o.key, o.seq)
    }
}
impl Eq for Event {}
impl PartialOrd for Event {
    fn partial_cmp(&self, o: &Self) -> Option<Ordering> {
        Some(self.cmp(o))
    }
}
impl Ord for Event {
    fn cmp(&self, o: &Self) -> Ordering {
        // Reversed for BinaryHeap (a max-heap): earliest (time, seq) first.
        (o.key, o.seq).cmp(&(self.key, self.seq))
    }
}

/// Clock, event queue and flow network.
pub(crate) struct Engine {
    now: f64,
    seq: u64,
    queue: BinaryHeap<Event>,
    /// Flows of queued [`Action::StartFlow`] events, by slot; free slots are reused.
    starts: Vec<Option<FlowStart>>,
    free_starts: Vec<u32>,
    /// The slot of each queued start, by what a transfer joining it must match.
    queued_starts: HashMap<StartKey, u32>,
    pub(crate) flows: FlowNet<Signal>,
    /// Number and time of the latest scheduled [`Action::FlowTick`].
    tick: (u64, f64),
    done: Vec<Signal>,
    /// Signals of queued [`Action::FireAll`] events, by slot; free slots are reused.
    batches: Vec<Vec<Signal>>,
    free_batches: Vec<u32>,
    /// The batch being fired and its next signal.
    draining: Option<(u32, usize)>,
    /// Events handled so far (stale flow ticks included; a batch counts each signal).
    pub(crate) events: u64,
}

impl Engine {
    pub(crate) fn new(flows: FlowNet<Signal>) -> Engine {
        Engine {
            now: 0.0,
            seq: 0,
            queue: BinaryHeap::new(),
            starts: Vec::new(),
            free_starts: Vec::new(),
            queued_starts: HashMap::new(),
            flows,
            tick: (0, f64::INFINITY),
            done: Vec::new(),
            batches: Vec::new(),
            free_batches: Vec::new(),
            draining: None,
            events: 0,
        }
    }

    /// Virtual time in seconds.
    pub(crate) fn now(&self) -> f64 {
        self.now
    }

    fn push(&mut self, at: f64, action: Action) {
        debug_assert!(at >= self.now, "events cannot be scheduled in the past");
        self.seq += 1;
        self.queue.push(Event {
            key: time_key(at),
            seq: self.seq,
            action,
        });
    }

    /// Removes the earliest event; its time and action.
    fn pop(&mut self) -> Option<(f64, Action)> {
        let e = self.queue.pop()?;
        Some((key_time(e.key), e.action))
    }

    /// Fires `signal` at virtual time `at` (≥ now).
    pub(crate) fn fire_at(&mut self, at: f64, signal: Signal) {
        self.push(at, Action::Fire(signal));
    }

    /// Fires `signals` at virtual time `at` (≥ now), in order, each as its own
    /// step: exactly as `fire_at` of each in turn (their events would be
    /// consecutive, nothing else between them), with one heap entry.
    pub(crate) fn fire_all_at(&mut self, at: f64, signals: Vec<Signal>) {
        if signals.len() <= 1 {
            for s in signals {
                self.fire_at(at, s);
            }
            return;
        }
        let slot = match self.free_batches.pop() {
            Some(i) => {
                self.batches[i as usize] = signals;
                i
            }
            None => {
                self.batches.push(signals);
                (self.batches.len() - 1) as u32
            }
        };
        self.push(at, Action::FireAll(slot));
    }

    /// Fires the next signal of the batch being fired; false if there is none.
    fn fire_next_of_batch(&mut self) -> bool {
        let Some((slot, i)) = self.draining else {
            return false;
        };
        let batch = &mut self.batches[slot as usize];
        let s = batch[i].clone();
        if i + 1 == batch.len() {
            batch.clear();
            self.free_batches.push(slot);
            self.draining = None;
        } else {
            self.draining = Some((slot, i + 1));
        }
        s.fire();
        true
    }

    /// After `latency` seconds, moves `bytes` over `path`; fires `done` at the end.
    /// Zero bytes (or an empty path) is a pure delay.
    pub(crate) fn transfer(
        &mut self,
        latency: f64,
        path: Vec<(ResourceId, f64)>,
        bytes: f64,
        done: Signal,
    ) {
        let at = self.now + latency;
        if bytes <= 0.0 || path.is_empty() {
            self.push(at, Action::Fire(done));
        } else if latency == 0.0 {
            self.flows.start(self.now, &path, bytes, done);
        } else {
            self.queue_start(
                at,
                FlowStart {
                    path,
                    bytes,
                    done,
                    copies: 1,
                    key: None,
                },
            );
        }
    }

    /// [`Engine::transfer`] with a new signal, returned. Transfers with a
    /// latency asked for at one instant over the same path with the same
    /// bytes (the messages of a node's ranks to one aggregator in a two-phase
    /// round) start as one flow of as many copies ([`FlowNet::start_copies`])
    /// and share its signal: the fluid model ends them together anyway.
    ///
    /// Transfers without latency start at once, each its own flow: ranks that
    /// a barrier released together copy into the page cache together, and
    /// the order their copies end in (the order the flows started in, not
    /// the order the ranks asked) decides which of them next reaches a lock
    /// or a device queue first; joining them would change that.
    pub(crate) fn send(
        &mut self,
        latency: f64,
        path: Vec<(ResourceId, f64)>,
        bytes: f64,
    ) -> Signal {
        if latency <= 0.0 || bytes <= 0.0 || path.is_empty() {
            let done = Signal::new();
            self.transfer(latency, path, bytes, done.clone());
            return done;
        }
        let at = self.now + latency;
        let key = (time_key(at), bytes.to_bits(), path_hash(&path));
        if let Some(&slot) = self.queued_starts.get(&key) {
            let queued = self.starts[slot as usize].as_mut().expect("queued");
            if queued.path == path {
                queued.copies += 1;
                return queued.done.clone();
            }
        }
        let done = Signal::new();
        let slot = self.queue_start(
            at,
            FlowStart {
                path,
                bytes,
                done: done.clone(),
                copies: 1,
                key: Some(key),
            },
        );
        self.queued_starts.insert(key, slot);
        done
    }

    /// Queues `start` for time `at`; returns its slot.
    fn queue_start(&mut self, at: f64, start: FlowStart) -> u32 {
        let slot = match self.free_starts.pop() {
            Some(i) => {
                self.starts[i as usize] = Some(start);
                i
            }
            None => {
                self.starts.push(Some(start));
                self.starts.len() as u32 - 1
            }
        };
        self.push(at, Action::StartFlow(slot));
        slot
    }

    /// Starts the flow queued in `slot` (now is its start time).
    fn start_queued(&mut self, slot: u32) {
        let start = self.starts[slot as usize].take().expect("queued");
        self.free_starts.push(slot);
        if let Some(key) = start.key
            && self.queued_starts.get(&key) == Some(&slot)
        {
            self.queued_starts.remove(&key);
        }
        self.flows
            .start_copies(self.now, &start.path, start.bytes, start.copies, start.done);
    }

    fn handle(&mut self, action: Action) {
        self.events += 1;
        match action {
            Action::Fire(s) => s.fire(),
            Action::StartFlow(slot) => self.start_queued(slot),
            Action::FlowTick(n) => {
                if n == self.tick.0 {
                    self.tick.1 = f64::INFINITY;
                    let mut done = std::mem::take(&mut self.done);
                    self.flows.finish_due(self.now, &mut done);
                    for s in done.drain(..) {
                        s.fire();
                    }
                    self.done = done;
                }
            }
            Action::FireAll(slot) => {
                self.draining = Some((slot, 0));
                self.fire_next_of_batch();
            }
        }
    }

    /// Handles one event due at the current instant; false if none is.
    fn step_now(&mut self) -> bool {
        if self.draining.is_some() {
            self.events += 1;
            return self.fire_next_of_batch();
        }
        match self.queue.peek() {
            Some(e) if key_time(e.key) <= self.now => {
                let (_, action) = self.pop().expect("peeked");
                self.handle(action);
                true
            }
            _ => false,
        }
    }

    /// Recomputes flow rates if flows changed at this instant; true if it did.
    fn settle_flows(&mut self) -> bool {
        if !self.flows.is_dirty() {
            return false;
        }
        self.flows.recompute(self.now);
        let next = self.flows.next_finish().map(|t| t.max(self.now));
        if let Some(t) = next.filter(|&t| t != self.tick.1) {
            self.tick = (self.tick.0 + 1, t);
            self.push(t, Action::FlowTick(self.tick.0));
        }
        true
    }

    /// Advances the clock to the next event and handles it; false if there is none.
    fn advance(&mut self) -> bool {
        match self.pop() {
            Some((at, action)) => {
                self.now = at;
                self.handle(action);
                true
            }
            None => false,
        }
    }
}

/// A task: a rank program (borrowing the caller's data) or a model daemon.
pub(crate) type Task<'a> = Pin<Box<dyn Future<Output = ()> + 'a>>;

struct Ready {
    queue: Vec<usize>,
    queued: Vec<bool>,
}

/// What a task's waker points at: its id and the shared ready queue.
struct TaskWaker {
    id: usize,
    ready: Rc<RefCell<Ready>>,
}

impl TaskWaker {
    fn wake(&self) {
        let mut r = self.ready.borrow_mut();
        if !r.queued[self.id] {
            r.queued[self.id] = true;
            r.queue.push(self.id);
        }
    }
}

// A waker over `Rc<TaskWaker>`: the engine is single-threaded (tasks are not
// `Send` and the executor never leaves the thread that runs it), so a plain
// reference count and a `RefCell` queue replace `Arc` and a mutex per wake.
mod rc_waker {
    use super::TaskWaker;
    use std::rc::Rc;
    use std::task::{RawWaker, RawWakerVTable, Waker};

    static VTABLE: RawWakerVTable = RawWakerVTable::new(clone, wake, wake_by_ref, drop);

    unsafe fn clone(p: *const ()) -> RawWaker {
        // SAFETY: `p` came from `Rc::into_raw` in `waker` (or this function) and is live.
        unsafe { Rc::increment_strong_count(p as *const TaskWaker) };
        RawWaker::new(p, &VTABLE)
    }
    unsafe fn wake(p: *const ()) {
        // SAFETY: as above; this consumes the waker's count.
        let w = unsafe { Rc::from_raw(p as *const TaskWaker) };
        w.wake();
    }
    unsafe fn wake_by_ref(p: *const ()) {
        // SAFETY: as above; the count stays with the waker.
        unsafe { &*(p as *const TaskWaker) }.wake();
    }
    unsafe fn drop(p: *const ()) {
        // SAFETY: as above; releases the waker's count.
        std::mem::drop(unsafe { Rc::from_raw(p as *const TaskWaker) });
    }

    /// A waker for `w`. Only valid on the engine's thread (see the module note).
    pub(super) fn waker(w: Rc<TaskWaker>) -> Waker {
        // SAFETY: the vtable functions keep the `Rc` count balanced, and wakers
        // never leave the single thread that runs the engine.
        unsafe { Waker::from_raw(RawWaker::new(Rc::into_raw(w) as *const (), &VTABLE)) }
    }
}

/// Polls woken tasks, in the order they were woken. Knows nothing of time.
pub(crate) struct Executor<'a> {
    tasks: Vec<Option<Task<'a>>>,
    wakers: Vec<Waker>,
    daemon: Vec<bool>,
    ready: Rc<RefCell<Ready>>,
    live: usize,
    batch: Vec<usize>,
}

impl<'a> Executor<'a> {
    /// An executor whose tasks `0..tasks.len()` are all ready.
    pub(crate) fn new(tasks: Vec<Task<'a>>) -> Executor<'a> {
        let mut e = Executor {
            tasks: Vec::with_capacity(tasks.len()),
            wakers: Vec::with_capacity(tasks.len()),
            daemon: Vec::with_capacity(tasks.len()),
            ready: Rc::new(RefCell::new(Ready {
                queue: Vec::new(),
                queued: Vec::new(),
            })),
            live: 0,
            batch: Vec::new(),
        };
        for t in tasks {
            e.add(t, false);
        }
        e
    }

    /// Adds a ready task. A daemon (a model process such as a write-back
    /// flusher) does not keep the run alive: the run ends when every other task has.
    pub(crate) fn add(&mut self, task: Task<'a>, daemon: bool) {
        let id = self.tasks.len();
        self.tasks.push(Some(task));
        self.daemon.push(daemon);
        self.wakers.push(rc_waker::waker(Rc::new(TaskWaker {
            id,
            ready: self.ready.clone(),
        })));
        let mut r = self.ready.borrow_mut();
        r.queued.push(true);
        r.queue.push(id);
        if !daemon {
            self.live += 1;
        }
    }

    /// Polls every woken task until none is ready; returns how many polls it made.
    pub(crate) fn run_ready(&mut self) -> usize {
        let mut polls = 0;
        loop {
            {
                let mut r = self.ready.borrow_mut();
                if r.queue.is_empty() {
                    return polls;
                }
                std::mem::swap(&mut self.batch, &mut r.queue);
                for &id in &self.batch {
                    r.queued[id] = false;
                }
            }
            for i in 0..self.batch.len() {
                let id = self.batch[i];
                let Some(task) = self.tasks[id].as_mut() else {
                    continue;
                };
                polls += 1;
                let mut cx = Context::from_waker(&self.wakers[id]);
                if task.as_mut().poll(&mut cx).is_ready() {
                    self.tasks[id] = None;
                    if !self.daemon[id] {
                        self.live -= 1;
                    }
                }
            }
            self.batch.clear();
        }
    }

    /// Tasks not finished yet, daemons not counted.
    pub(crate) fn live(&self) -> usize {
        self.live
    }

    /// Ids of the tasks (not daemons) not finished yet, ascending.
    pub(crate) fn pending(&self) -> Vec<usize> {
        self.tasks
            .iter()
            .enumerate()
            .filter(|(i, t)| t.is_some() && !self.daemon[*i])
            .map(|(i, _)| i)
            .collect()
    }
}

/// Runs `exec`'s tasks against `engine` until all finish (`Ok`) or none can make
/// progress and no event is pending (`Err` with the ids of the blocked tasks).
pub(crate) fn run<'a>(
    engine: &RefCell<Engine>,
    exec: &mut Executor<'a>,
    spawned: &RefCell<Vec<Task<'static>>>,
) -> Result<(), Vec<usize>> {
    loop {
        exec.run_ready();
        if !spawned.borrow().is_empty() {
            for t in spawned.take() {
                exec.add(t, false);
            }
            continue;
        }
        let mut e = engine.borrow_mut();
        if e.step_now() || e.settle_flows() {
            continue;
        }
        if exec.live() == 0 {
            return Ok(());
        }
        if !e.advance() {
            return Err(exec.pending());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The event key orders times as `f64::total_cmp` does and gives the time back bit for bit.
    #[test]
    fn time_keys_order_and_round_trip() {
        let ts = [
            -1.5,
            -0.0,
            0.0,
            1e-300,
            1e-9,
            0.5,
            1.0,
            1.0 + f64::EPSILON,
            3e8,
            f64::INFINITY,
        ];
        for w in ts.windows(2) {
            assert!(time_key(w[0]) < time_key(w[1]), "{} < {}", w[0], w[1]);
        }
        for t in ts {
            assert_eq!(key_time(time_key(t)).to_bits(), t.to_bits());
        }
    }

    /// Events come out by time, then in the order they were scheduled.
    #[test]
    fn events_by_time_then_sequence() {
        let mut e = Engine::new(FlowNet::new());
        let s: Vec<Signal> = (0..4).map(|_| Signal::new()).collect();
        e.fire_at(2.0, s[0].clone());
        e.fire_at(1.0, s[1].clone());
        e.fire_at(2.0, s[2].clone());
        e.fire_at(0.5, s[3].clone());
        let mut order = Vec::new();
        while let Some((t, Action::Fire(x))) = e.pop() {
            order.push((t, s.iter().position(|y| y.same(&x)).unwrap()));
        }
        assert_eq!(order, vec![(0.5, 3), (1.0, 1), (2.0, 0), (2.0, 2)]);
    }

    /// A batch fires its signals one step each, at its time, where its place in
    /// the order of scheduling puts it: after an earlier event of the same
    /// time, before a later one, and counts one event per signal.
    #[test]
    fn a_batch_fires_in_order_one_step_each() {
        let mut e = Engine::new(FlowNet::new());
        let s: Vec<Signal> = (0..6).map(|_| Signal::new()).collect();
        e.fire_at(1.0, s[0].clone());
        e.fire_all_at(1.0, s[1..4].to_vec());
        e.fire_at(1.0, s[4].clone());
        e.fire_at(0.5, s[5].clone());
        let fired = |s: &[Signal]| s.iter().filter(|x| x.is_fired()).count();
        assert!(e.advance() && s[5].is_fired() && fired(&s) == 1);
        assert!(e.advance() && s[0].is_fired() && fired(&s) == 2);
        // the batch: one signal per step, the rest while events are due now
        assert!(e.advance() && s[1].is_fired() && fired(&s) == 3);
        assert!(e.step_now() && s[2].is_fired() && fired(&s) == 4);
        assert!(e.step_now() && s[3].is_fired() && fired(&s) == 5);
        assert!(e.step_now() && s[4].is_fired() && fired(&s) == 6);
        assert!(!e.step_now() && !e.advance());
        assert_eq!((e.now(), e.events), (1.0, 6));
    }

    /// Transfers asked for at one instant with the same path and bytes start as
    /// one flow and end together, where the separate flows would have ended:
    /// link 10 B/s, two copies of 10 B and one of 20 B from t = 1 share it as
    /// three flows (10/3 B/s each), so the copies end at t = 4; the third, with
    /// 10 B left, then shares the link with a 10 B transfer asked for at t = 4
    /// (5 B/s each): both end at t = 6.
    #[test]
    fn identical_transfers_start_as_one_flow() {
        let mut net = FlowNet::new();
        let link = net.add_resource("link", 10.0);
        let mut e = Engine::new(net);
        let mut s: Vec<Signal> = (0..3)
            .map(|i| e.send(1.0, vec![(link, 1.0)], [10.0, 10.0, 20.0][i]))
            .collect();
        assert!(s[0].same(&s[1]) && !s[0].same(&s[2]));
        assert!(e.advance() && e.advance(), "two start events");
        assert_eq!((e.now(), e.flows.active()), (1.0, 2));
        assert!(e.settle_flows());
        assert!(e.advance());
        assert_eq!(e.now(), 4.0);
        assert!(s[0].is_fired() && !s[2].is_fired());
        // without latency, a flow starts at once
        s.push(e.send(0.0, vec![(link, 1.0)], 10.0));
        assert_eq!(e.flows.active(), 2);
        while !s[2].is_fired() {
            assert!(e.settle_flows() || e.advance());
        }
        // 20 − 10 = 10 B left at 4, then 5 B/s beside the new flow: ends at 6
        assert_eq!(e.now(), 6.0);
        assert!(s[3].is_fired());
    }
}
