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
use std::collections::BinaryHeap;
use std::future::Future;
use std::pin::Pin;
use std::rc::Rc;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Wake, Waker};

use crate::flow::{FlowNet, ResourceId};

/// A one-shot completion flag a task can await; fired by an event or by another task.
#[derive(Clone, Default)]
pub(crate) struct Signal(Rc<SignalState>);

#[derive(Default)]
struct SignalState {
    fired: Cell<bool>,
    wakers: RefCell<Vec<Waker>>,
}

impl Signal {
    pub(crate) fn new() -> Signal {
        Signal::default()
    }

    /// Marks the signal fired and wakes its waiters (in the order they waited).
    pub(crate) fn fire(&self) {
        self.0.fired.set(true);
        for w in self.0.wakers.take() {
            w.wake();
        }
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
            st.wakers.borrow_mut().push(cx.waker().clone());
            self.registered = Some(cx.waker().clone());
        }
        Poll::Pending
    }
}

/// What happens when an event is due.
enum Action {
    /// Fire a signal (a delay ended, a collective completed, …).
    Fire(Signal),
    /// Start a flow (after its latency): path, bytes, signal fired when it ends.
    StartFlow(Vec<(ResourceId, f64)>, f64, Signal),
    /// The earliest flow completion; stale unless its number is the latest scheduled.
    FlowTick(u64),
}

struct Event {
    at: f64,
    seq: u64,
    action: Action,
}

impl PartialEq for Event {
    fn eq(&self, o: &Self) -> bool {
        self.cmp(o) == Ordering::Equal
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
        o.at.total_cmp(&self.at).then(o.seq.cmp(&self.seq))
    }
}

/// Clock, event queue and flow network.
pub(crate) struct Engine {
    now: f64,
    seq: u64,
    queue: BinaryHeap<Event>,
    pub(crate) flows: FlowNet<Signal>,
    /// Number and time of the latest scheduled [`Action::FlowTick`].
    tick: (u64, f64),
    done: Vec<Signal>,
    /// Events handled so far (stale flow ticks included).
    pub(crate) events: u64,
}

impl Engine {
    pub(crate) fn new(flows: FlowNet<Signal>) -> Engine {
        Engine {
            now: 0.0,
            seq: 0,
            queue: BinaryHeap::new(),
            flows,
            tick: (0, f64::INFINITY),
            done: Vec::new(),
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
            at,
            seq: self.seq,
            action,
        });
    }

    /// Fires `signal` at virtual time `at` (≥ now).
    pub(crate) fn fire_at(&mut self, at: f64, signal: Signal) {
        self.push(at, Action::Fire(signal));
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
        if bytes > 0.0 && !path.is_empty() {
            if latency == 0.0 {
                self.start_flow(path, bytes, done);
            } else {
                self.push(at, Action::StartFlow(path, bytes, done));
            }
        } else {
            self.push(at, Action::Fire(done));
        }
    }

    fn start_flow(&mut self, path: Vec<(ResourceId, f64)>, bytes: f64, done: Signal) {
        let now = self.now;
        self.flows.start(now, &path, bytes, done);
    }

    fn handle(&mut self, action: Action) {
        self.events += 1;
        match action {
            Action::Fire(s) => s.fire(),
            Action::StartFlow(path, bytes, done) => self.start_flow(path, bytes, done),
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
        }
    }

    /// Handles one event due at the current instant; false if none is.
    fn step_now(&mut self) -> bool {
        match self.queue.peek() {
            Some(e) if e.at <= self.now => {
                let e = self.queue.pop().expect("peeked");
                self.handle(e.action);
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
        match self.queue.pop() {
            Some(e) => {
                self.now = e.at;
                self.handle(e.action);
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

struct TaskWaker {
    id: usize,
    ready: Arc<Mutex<Ready>>,
}

impl Wake for TaskWaker {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }
    fn wake_by_ref(self: &Arc<Self>) {
        let mut r = self.ready.lock().expect("single-threaded");
        if !r.queued[self.id] {
            r.queued[self.id] = true;
            r.queue.push(self.id);
        }
    }
}

/// Polls woken tasks, in the order they were woken. Knows nothing of time.
pub(crate) struct Executor<'a> {
    tasks: Vec<Option<Task<'a>>>,
    wakers: Vec<Waker>,
    ready: Arc<Mutex<Ready>>,
    live: usize,
    batch: Vec<usize>,
}

impl<'a> Executor<'a> {
    /// An executor whose tasks `0..tasks.len()` are all ready.
    pub(crate) fn new(tasks: Vec<Task<'a>>) -> Executor<'a> {
        let n = tasks.len();
        let ready = Arc::new(Mutex::new(Ready {
            queue: (0..n).collect(),
            queued: vec![true; n],
        }));
        let wakers = (0..n)
            .map(|id| {
                Waker::from(Arc::new(TaskWaker {
                    id,
                    ready: ready.clone(),
                }))
            })
            .collect();
        Executor {
            tasks: tasks.into_iter().map(Some).collect(),
            wakers,
            ready,
            live: n,
            batch: Vec::new(),
        }
    }

    /// Polls every woken task until none is ready; returns how many polls it made.
    pub(crate) fn run_ready(&mut self) -> usize {
        let mut polls = 0;
        loop {
            {
                let mut r = self.ready.lock().expect("single-threaded");
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
                    self.live -= 1;
                }
            }
            self.batch.clear();
        }
    }

    /// Tasks not finished yet.
    pub(crate) fn live(&self) -> usize {
        self.live
    }

    /// Ids of the tasks not finished yet, ascending.
    pub(crate) fn pending(&self) -> Vec<usize> {
        self.tasks
            .iter()
            .enumerate()
            .filter(|(_, t)| t.is_some())
            .map(|(i, _)| i)
            .collect()
    }
}

/// Runs `exec`'s tasks against `engine` until all finish (`Ok`) or none can make
/// progress and no event is pending (`Err` with the ids of the blocked tasks).
pub(crate) fn run(engine: &RefCell<Engine>, exec: &mut Executor<'_>) -> Result<(), Vec<usize>> {
    loop {
        exec.run_ready();
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
