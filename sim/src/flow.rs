//! Flow-level resource sharing: max–min fair rates by progressive filling.
//!
//! A *flow* moves a number of bytes over a *path* of resources (NIC, switch,
//! server NIC, device, memory bus); each resource has a capacity and each path
//! element a consumption weight (capacity units per byte/s of flow rate — 1 for a
//! link in B/s; `1/bandwidth` for a device whose capacity is one busy-second per
//! second, so reads and writes with different speeds share one device). Rates are
//! the max–min fair allocation (Bertsekas & Gallager, *Data Networks*, 2nd ed.,
//! §6.5.2, progressive filling; the same weighted model as SimGrid's LMM solver,
//! Velho et al., *On the validity of flow-level TCP network models for grid and
//! cloud simulations*, ACM TOMACS 23(4), 2013):
//!
//! ```text
//!  all unfrozen flows grow together; the first resource to fill freezes its flows
//!
//!   flow a ──[ nic0 ]──┐
//!   flow b ──[ nic1 ]──┼──[ switch ]──[ device ]
//!   flow c ──[ nic2 ]──┘
//! ```
//!
//! # Flow classes
//!
//! Flows that cross the same *set* of resources form a *class*. Progressive
//! filling freezes every unfrozen flow of a saturated resource at once, so all
//! flows of a class freeze together and get the same rate, whatever their
//! weights; the filling therefore runs over classes, each resource seeing a
//! class as the sum of its members' weights. A thousand ranks writing through
//! one NIC to one device are one class: a flow arriving or leaving costs work
//! in the number of classes of its component, not in the number of flows.
//!
//! Within a class every flow is served at the class rate, so the class keeps
//! one counter, the bytes `S(t)` served to each of its flows so far (the
//! virtual time of processor sharing: Kleinrock, *Queueing Systems* vol. 2,
//! 1976, ch. 4; the finish tags of Demers, Keshav & Shenker, *Analysis and
//! simulation of a fair queueing algorithm*, SIGCOMM 1989). A flow of `b`
//! bytes joining at `S₀` ends when `S` reaches its tag `S₀ + b`, so flows of a
//! class end in tag order (a per-class min-heap), and a rate change settles
//! `S` once instead of every flow's remaining bytes. A global heap indexed by
//! class holds each class's next completion time; a recomputation moves a
//! class's entry in place (a server's many readers change rate at every
//! flow start and end: re-pushing left thousands of stale entries).
//!
//! Recomputation is batched by the engine (once per virtual instant, [`FlowNet::recompute`])
//! and restricted to the connected component (classes ↔ resources) of the
//! classes whose membership changed. Classes and resources are visited in id
//! order: the order must be fixed for the simulation to be reproducible.

use std::cmp::Ordering;
use std::collections::{BinaryHeap, HashMap};

/// A resource in a [`FlowNet`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ResourceId(u32);

impl ResourceId {
    /// The resource's number, in the order resources were added.
    pub fn index(self) -> u32 {
        self.0
    }
}

/// A flow in a [`FlowNet`] (ids are reused after a flow finishes).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct FlowId(u32);

struct Resource {
    name: String,
    /// Capacity in resource units per second (B/s for links).
    capacity: f64,
    /// Classes crossing this resource, ascending (a sorted vector: the
    /// recomputation walks it far more often than classes come and go).
    classes: Vec<u32>,
    mark: u64,
    used: f64,
    wsum: f64,
    unfrozen: usize,
}

/// Flows over one set of resources.
struct Class {
    /// The resources crossed, ascending and distinct (empty while the slot is free).
    key: Box<[u32]>,
    /// Per resource of `key`: the sum of the member flows' weights.
    wsum: Vec<f64>,
    members: usize,
    /// Member flows by finish tag: min-heap of (tag in bytes of `served`, flow id).
    tags: BinaryHeap<Tag>,
    /// Bytes served to each member flow up to `since` (virtual time of the class).
    served: f64,
    /// Time `served` was last settled at, in s.
    since: f64,
    /// Rate of every member flow in B/s (0 before the first recomputation).
    rate: f64,
    new_rate: f64,
    frozen: bool,
    mark: u64,
    dirty: bool,
    /// Completion time of the next member at the current rate, in s (∞ if none).
    finish_at: f64,
}

struct Flow<T> {
    class: u32,
    /// The class's `served` at which this flow has moved all its bytes.
    tag: f64,
    /// Weight per resource of the class key.
    weights: Box<[f64]>,
    token: T,
}

/// Resources and the flows crossing them; `T` is what the owner gets back when a flow ends.
pub struct FlowNet<T> {
    resources: Vec<Resource>,
    flows: Vec<Option<Flow<T>>>,
    free: Vec<u32>,
    classes: Vec<Class>,
    free_classes: Vec<u32>,
    by_key: HashMap<Box<[u32]>, u32>,
    /// Classes whose membership changed since the last recomputation.
    dirty: Vec<u32>,
    /// Next completion per class with one, earliest first.
    completions: Completions,
    epoch: u64,
    comp_classes: Vec<u32>,
    /// The last component's classes in id order: most recomputes find the
    /// same classes again (a flow starting or ending in a class that stays),
    /// and checking that costs less than sorting them anew.
    comp_sorted: Vec<u32>,
    /// Changes of the class–resource graph so far (classes created or
    /// released), and their count and the epoch at the last component search:
    /// while the graph stays as it was and only classes of that component
    /// changed, the component is the same (see [`FlowNet::recompute`]).
    shape: u64,
    comp_shape: u64,
    comp_epoch: u64,
    comp_res: Vec<u32>,
    scratch: Vec<(u32, f64)>,
    key_scratch: Vec<u32>,
    ended: Vec<u32>,
    share_heap: Vec<Share>,
}

/// Min-heap entry for the progressive-filling bottleneck search.
struct Share(f64, u32);
impl PartialEq for Share {
    fn eq(&self, o: &Self) -> bool {
        self.cmp(o) == Ordering::Equal
    }
}
impl Eq for Share {}
impl PartialOrd for Share {
    fn partial_cmp(&self, o: &Self) -> Option<Ordering> {
        Some(self.cmp(o))
    }
}
impl Ord for Share {
    fn cmp(&self, o: &Self) -> Ordering {
        // Reversed: BinaryHeap is a max-heap, we want the smallest share, ties by lowest id.
        o.0.total_cmp(&self.0).then(o.1.cmp(&self.1))
    }
}

/// Min-heap entry of a class's member flows: (finish tag, flow id).
struct Tag(f64, u32);
impl PartialEq for Tag {
    fn eq(&self, o: &Self) -> bool {
        self.cmp(o) == Ordering::Equal
    }
}
impl Eq for Tag {}
impl PartialOrd for Tag {
    fn partial_cmp(&self, o: &Self) -> Option<Ordering> {
        Some(self.cmp(o))
    }
}
impl Ord for Tag {
    fn cmp(&self, o: &Self) -> Ordering {
        o.0.total_cmp(&self.0).then(o.1.cmp(&self.1))
    }
}

/// The classes' next completion times, earliest first (ties: lowest class
/// id): a binary min-heap of `(time, class)` with each class's position, so
/// that a class's entry is moved or removed in place.
#[derive(Default)]
struct Completions {
    heap: Vec<(f64, u32)>,
    /// By class: its index in `heap` plus one, 0 where it has no entry.
    pos: Vec<u32>,
}

impl Completions {
    fn before(a: (f64, u32), b: (f64, u32)) -> bool {
        a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)) == Ordering::Less
    }

    fn peek(&self) -> Option<(f64, u32)> {
        self.heap.first().copied()
    }

    /// Puts class `c`'s entry at time `t`, added or moved.
    fn set(&mut self, c: u32, t: f64) {
        let ci = c as usize;
        if self.pos.len() <= ci {
            self.pos.resize(ci + 1, 0);
        }
        let i = match self.pos[ci] {
            0 => {
                self.heap.push((t, c));
                self.heap.len() - 1
            }
            p => {
                let i = p as usize - 1;
                self.heap[i].0 = t;
                i
            }
        };
        let i = self.up(i);
        self.down(i);
    }

    /// Takes class `c`'s entry out, if it has one.
    fn remove(&mut self, c: u32) {
        let Some(i) = self
            .pos
            .get(c as usize)
            .and_then(|&p| (p as usize).checked_sub(1))
        else {
            return;
        };
        self.pos[c as usize] = 0;
        let last = self.heap.pop().expect("an entry");
        if i < self.heap.len() {
            self.heap[i] = last;
            self.pos[last.1 as usize] = i as u32 + 1;
            let i = self.up(i);
            self.down(i);
        }
    }

    fn place(&mut self, i: usize) {
        self.pos[self.heap[i].1 as usize] = i as u32 + 1;
    }

    fn up(&mut self, mut i: usize) -> usize {
        while i > 0 {
            let parent = (i - 1) / 2;
            if !Self::before(self.heap[i], self.heap[parent]) {
                break;
            }
            self.heap.swap(i, parent);
            self.place(i);
            i = parent;
        }
        self.place(i);
        i
    }

    fn down(&mut self, mut i: usize) {
        loop {
            let (l, r) = (2 * i + 1, 2 * i + 2);
            let mut least = i;
            if l < self.heap.len() && Self::before(self.heap[l], self.heap[least]) {
                least = l;
            }
            if r < self.heap.len() && Self::before(self.heap[r], self.heap[least]) {
                least = r;
            }
            if least == i {
                break;
            }
            self.heap.swap(i, least);
            self.place(i);
            i = least;
        }
        self.place(i);
    }
}

impl Class {
    /// Completion time of a flow of `tag` at the current rate, in s.
    fn finish_of(&self, tag: f64) -> f64 {
        if self.rate > 0.0 {
            self.since + (tag - self.served).max(0.0) / self.rate
        } else {
            f64::INFINITY
        }
    }

    /// Completion time of the next member flow at the current rate, in s.
    fn next_finish(&self) -> f64 {
        self.tags
            .peek()
            .map_or(f64::INFINITY, |t| self.finish_of(t.0))
    }
}

impl<T> Default for FlowNet<T> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T> FlowNet<T> {
    /// An empty network.
    pub fn new() -> Self {
        FlowNet {
            resources: Vec::new(),
            flows: Vec::new(),
            free: Vec::new(),
            classes: Vec::new(),
            free_classes: Vec::new(),
            by_key: HashMap::new(),
            dirty: Vec::new(),
            completions: Completions::default(),
            epoch: 0,
            comp_classes: Vec::new(),
            comp_sorted: Vec::new(),
            shape: 0,
            comp_shape: u64::MAX,
            comp_epoch: 0,
            comp_res: Vec::new(),
            scratch: Vec::new(),
            key_scratch: Vec::new(),
            ended: Vec::new(),
            share_heap: Vec::new(),
        }
    }

    /// Adds a resource of `capacity` units per second (> 0; B/s for a link).
    pub fn add_resource(&mut self, name: impl Into<String>, capacity: f64) -> ResourceId {
        assert!(
            capacity > 0.0 && capacity.is_finite(),
            "resource capacity must be positive"
        );
        self.resources.push(Resource {
            name: name.into(),
            capacity,
            classes: Vec::new(),
            mark: 0,
            used: 0.0,
            wsum: 0.0,
            unfrozen: 0,
        });
        ResourceId(self.resources.len() as u32 - 1)
    }

    /// Sets resource `r`'s capacity (> 0) from now on: the rates of its flows
    /// change at the next [`FlowNet::recompute`], which must run before time
    /// moves on, as after [`FlowNet::start`].
    pub fn set_capacity(&mut self, r: ResourceId, capacity: f64) {
        assert!(
            capacity > 0.0 && capacity.is_finite(),
            "resource capacity must be positive"
        );
        let res = &mut self.resources[r.0 as usize];
        if res.capacity == capacity {
            return;
        }
        res.capacity = capacity;
        for i in 0..self.resources[r.0 as usize].classes.len() {
            let c = self.resources[r.0 as usize].classes[i];
            self.mark_dirty(c);
        }
    }

    /// The name a resource was given.
    pub fn resource_name(&self, r: ResourceId) -> &str {
        &self.resources[r.0 as usize].name
    }

    /// The class of flows over exactly the resources of `key` (created if none).
    fn class_for(&mut self, key: &[u32], now: f64) -> u32 {
        if let Some(&c) = self.by_key.get(key) {
            return c;
        }
        let key: Box<[u32]> = key.into();
        let fresh = |key: Box<[u32]>| Class {
            wsum: vec![0.0; key.len()],
            key,
            members: 0,
            tags: BinaryHeap::new(),
            served: 0.0,
            since: now,
            rate: 0.0,
            new_rate: 0.0,
            frozen: false,
            mark: 0,
            dirty: false,
            finish_at: f64::INFINITY,
        };
        let c = match self.free_classes.pop() {
            Some(c) => {
                let slot = &mut self.classes[c as usize];
                let mut class = fresh(key.clone());
                // Keep the heap's allocation.
                class.tags = std::mem::take(&mut slot.tags);
                *slot = class;
                c
            }
            None => {
                self.classes.push(fresh(key.clone()));
                self.classes.len() as u32 - 1
            }
        };
        for &r in &key {
            let classes = &mut self.resources[r as usize].classes;
            if let Err(i) = classes.binary_search(&c) {
                classes.insert(i, c);
            }
        }
        self.by_key.insert(key, c);
        self.shape += 1;
        c
    }

    fn mark_dirty(&mut self, c: u32) {
        let class = &mut self.classes[c as usize];
        if !class.dirty {
            class.dirty = true;
            self.dirty.push(c);
        }
    }

    /// Starts a flow of `bytes` (> 0) over `path` — `(resource, weight)` pairs,
    /// weight in capacity units per byte — at time `now`; a resource listed twice
    /// counts with the sum of its weights. Its rate is set by the next
    /// [`FlowNet::recompute`], which must run before time moves on (the engine
    /// recomputes at the same virtual instant).
    pub fn start(&mut self, now: f64, path: &[(ResourceId, f64)], bytes: f64, token: T) -> FlowId {
        self.start_copies(now, path, bytes, 1, token)
    }

    /// Starts `copies` identical flows (same path, bytes and start) as one:
    /// they would share one class, one rate and one finish tag, so one flow
    /// whose weights count `copies` times loads the resources as they would
    /// and ends when they would. `token` stands for all of them.
    pub fn start_copies(
        &mut self,
        now: f64,
        path: &[(ResourceId, f64)],
        bytes: f64,
        copies: usize,
        token: T,
    ) -> FlowId {
        assert!(!path.is_empty(), "a flow needs at least one resource");
        assert!(copies > 0, "a flow stands for at least one copy");
        assert!(bytes > 0.0, "a flow moves a positive number of bytes");
        let mut scratch = std::mem::take(&mut self.scratch);
        scratch.clear();
        scratch.extend(path.iter().map(|&(r, w)| (r.0, w * copies as f64)));
        scratch.sort_by_key(|p| p.0);
        scratch.dedup_by(|b, a| {
            if a.0 == b.0 {
                a.1 += b.1;
                true
            } else {
                false
            }
        });
        let mut key = std::mem::take(&mut self.key_scratch);
        key.clear();
        key.extend(scratch.iter().map(|p| p.0));
        let c = self.class_for(&key, now);
        self.key_scratch = key;
        let id = match self.free.pop() {
            Some(i) => i,
            None => {
                self.flows.push(None);
                self.flows.len() as u32 - 1
            }
        };
        let class = &mut self.classes[c as usize];
        for (s, &(_, w)) in class.wsum.iter_mut().zip(&scratch) {
            *s += w;
        }
        class.members += 1;
        // Bytes served to the class by `now`, without settling it.
        let tag = class.served + class.rate * (now - class.since) + bytes;
        class.tags.push(Tag(tag, id));
        self.flows[id as usize] = Some(Flow {
            class: c,
            tag,
            weights: scratch.iter().map(|p| p.1).collect(),
            token,
        });
        self.scratch = scratch;
        self.mark_dirty(c);
        FlowId(id)
    }

    /// Ends every flow due by `now` (completion time ≤ `now`), in flow-id order,
    /// appending their tokens to `out`.
    pub fn finish_due(&mut self, now: f64, out: &mut Vec<T>) {
        let mut ended = std::mem::take(&mut self.ended);
        ended.clear();
        while let Some((t, c)) = self.completions.peek() {
            if t > now {
                break;
            }
            self.completions.remove(c);
            loop {
                let class = &mut self.classes[c as usize];
                let Some(&Tag(tag, f)) = class.tags.peek() else {
                    break;
                };
                if class.finish_of(tag) > now {
                    break;
                }
                class.tags.pop();
                class.members -= 1;
                let flow = self.flows[f as usize].as_ref().expect("tagged flows live");
                for (s, w) in class.wsum.iter_mut().zip(&flow.weights) {
                    *s -= w;
                }
                ended.push(f);
            }
            // The next completion of this class is set by the recomputation.
            self.classes[c as usize].finish_at = f64::INFINITY;
            self.mark_dirty(c);
        }
        ended.sort_unstable();
        for &f in &ended {
            let flow = self.flows[f as usize].take().expect("ended once");
            self.free.push(f);
            out.push(flow.token);
        }
        self.ended = ended;
    }

    /// Drops a class that lost its last member: frees its slot and key.
    fn release(&mut self, c: u32) {
        let class = &mut self.classes[c as usize];
        let key = std::mem::take(&mut class.key);
        class.wsum.clear();
        class.finish_at = f64::INFINITY;
        self.completions.remove(c);
        for &r in &key {
            let classes = &mut self.resources[r as usize].classes;
            if let Ok(i) = classes.binary_search(&c) {
                classes.remove(i);
            }
        }
        self.by_key.remove(&key);
        self.free_classes.push(c);
        self.shape += 1;
    }

    /// The earliest completion time of the flows in progress, if any.
    ///
    /// The engine keeps a single pending "next flow completion" event instead of
    /// one event per flow; this is the top of the completion heap. Valid after
    /// [`FlowNet::recompute`] (flows ended or started since are not yet counted).
    pub fn next_finish(&self) -> Option<f64> {
        self.completions
            .peek()
            .map(|d| d.0)
            .filter(|t| t.is_finite())
    }

    /// Completion time of `flow` at its current rate, in seconds.
    pub fn finish_time(&self, flow: FlowId) -> Option<f64> {
        let f = self.flows.get(flow.0 as usize)?.as_ref()?;
        Some(self.classes[f.class as usize].finish_of(f.tag))
    }

    /// True when some flow started or ended since the last recomputation.
    pub fn is_dirty(&self) -> bool {
        !self.dirty.is_empty()
    }

    /// Current rate of `flow` in bytes/s (0 before its first recomputation).
    pub fn rate(&self, flow: FlowId) -> Option<f64> {
        let f = self.flows.get(flow.0 as usize)?.as_ref()?;
        Some(self.classes[f.class as usize].rate)
    }

    /// Number of flows in progress.
    pub fn active(&self) -> usize {
        self.flows.len() - self.free.len()
    }

    /// Recomputes max–min fair rates in the component touched since the last call,
    /// at time `now`; returns how many flows changed rate (and completion time).
    pub fn recompute(&mut self, now: f64) -> usize {
        if self.dirty.is_empty() {
            return 0;
        }
        self.epoch += 1;
        let epoch = self.epoch;
        let mut stack = std::mem::take(&mut self.dirty);
        // The last component again: the graph is as it was then, and every
        // changed class was in it and keeps members (none leaves). It may
        // hold other components too, whose rates come out as they were.
        let classes = &self.classes;
        let again = self.shape == self.comp_shape
            && stack.iter().all(|&c| {
                let class = &classes[c as usize];
                class.mark == self.comp_epoch && class.members > 0
            });
        // (`dirty` stays set until the classes are settled: their flows changed)
        if again {
            stack.clear();
            self.dirty = stack;
            return self.fill(now);
        }
        self.comp_classes.clear();
        self.comp_res.clear();
        for &c in &stack {
            self.classes[c as usize].mark = epoch;
        }
        // Connected component: classes ↔ resources, by depth-first search.
        while let Some(c) = stack.pop() {
            self.comp_classes.push(c);
            let Self {
                resources,
                classes,
                comp_res,
                ..
            } = self;
            for k in 0..classes[c as usize].key.len() {
                let r = classes[c as usize].key[k];
                let res = &mut resources[r as usize];
                if res.mark == epoch {
                    continue;
                }
                res.mark = epoch;
                comp_res.push(r);
                for &c2 in &res.classes {
                    let class2 = &mut classes[c2 as usize];
                    if class2.mark != epoch {
                        class2.mark = epoch;
                        stack.push(c2);
                    }
                }
            }
        }
        self.dirty = stack; // empty; keeps the allocation
        // Classes that lost their last member leave the network.
        let mut i = 0;
        while i < self.comp_classes.len() {
            let c = self.comp_classes[i];
            if self.classes[c as usize].members == 0 {
                self.release(c);
                self.comp_classes.swap_remove(i);
            } else {
                i += 1;
            }
        }
        // Classes in id order: their weights are summed per resource in that
        // order. (The resources' order changes nothing: the filling takes
        // them from a heap ordered by share, then id.)
        let classes = &self.classes;
        let same = self.comp_sorted.len() == self.comp_classes.len()
            && self.comp_sorted.iter().all(|&c| {
                let class = &classes[c as usize];
                class.mark == epoch && class.members > 0
            });
        if same {
            // the same set (as many, all in this component): the sorted copy
            self.comp_classes.copy_from_slice(&self.comp_sorted);
        } else {
            self.comp_classes.sort_unstable();
            self.comp_sorted.clone_from(&self.comp_classes);
        }
        self.comp_shape = self.shape;
        self.comp_epoch = epoch;
        self.fill(now)
    }

    /// Max–min fair rates of the classes of the component found by
    /// [`FlowNet::recompute`] (`comp_classes`, in id order, over `comp_res`);
    /// returns how many flows changed rate.
    fn fill(&mut self, now: f64) -> usize {
        for &r in &self.comp_res {
            let res = &mut self.resources[r as usize];
            res.used = 0.0;
            res.wsum = 0.0;
            res.unfrozen = 0;
        }
        for &c in &self.comp_classes {
            let class = &mut self.classes[c as usize];
            class.frozen = false;
            for (&r, &w) in class.key.iter().zip(&class.wsum) {
                let res = &mut self.resources[r as usize];
                res.wsum += w;
                res.unfrozen += 1;
            }
        }
        // Progressive filling. A resource's fair share only grows as others'
        // classes freeze, so a lazy min-heap with re-insertion finds each bottleneck.
        let share = |res: &Resource| ((res.capacity - res.used) / res.wsum).max(0.0);
        let mut heap = BinaryHeap::from(std::mem::take(&mut self.share_heap));
        heap.extend(
            self.comp_res
                .iter()
                .filter(|&&r| self.resources[r as usize].unfrozen > 0)
                .map(|&r| Share(share(&self.resources[r as usize]), r)),
        );
        while let Some(Share(s, r)) = heap.pop() {
            let res = &self.resources[r as usize];
            if res.unfrozen == 0 {
                continue;
            }
            let now_share = share(res);
            if now_share != s {
                heap.push(Share(now_share, r));
                continue;
            }
            let Self {
                resources, classes, ..
            } = self;
            let crossing = std::mem::take(&mut resources[r as usize].classes);
            for &c in &crossing {
                let class = &mut classes[c as usize];
                if class.frozen {
                    continue;
                }
                class.frozen = true;
                class.new_rate = s;
                for (&r2, &w) in class.key.iter().zip(&class.wsum) {
                    let res2 = &mut resources[r2 as usize];
                    res2.used += s * w;
                    res2.wsum -= w;
                    res2.unfrozen -= 1;
                }
            }
            resources[r as usize].classes = crossing;
        }
        self.share_heap = heap.into_vec();
        // Settle the classes whose rate changed at the old rate, then reschedule.
        let mut changed = 0;
        for &c in &self.comp_classes {
            let class = &mut self.classes[c as usize];
            if class.new_rate != class.rate {
                class.served += class.rate * (now - class.since);
                class.since = now;
                class.rate = class.new_rate;
                changed += class.members;
            } else if !class.dirty {
                // the same flows at the same rate: the same next completion
                continue;
            }
            class.dirty = false;
            let t = class.next_finish();
            if t != class.finish_at {
                class.finish_at = t;
                if t.is_finite() {
                    self.completions.set(c, t);
                } else {
                    self.completions.remove(c);
                }
            }
        }
        changed
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The completion heap gives the earliest entry, ties by lowest class,
    /// after entries are added, moved either way and removed.
    #[test]
    fn completions_move_and_leave_in_place() {
        let mut h = Completions::default();
        for (c, t) in [(3, 5.0), (1, 2.0), (4, 2.0), (0, 9.0), (2, 7.0)] {
            h.set(c, t);
        }
        assert_eq!(h.peek(), Some((2.0, 1)));
        h.set(1, 8.0); // later: class 4 ties no one now
        assert_eq!(h.peek(), Some((2.0, 4)));
        h.set(0, 1.0); // earlier
        assert_eq!(h.peek(), Some((1.0, 0)));
        h.remove(0);
        h.remove(0); // gone already: nothing
        h.remove(4);
        assert_eq!(h.peek(), Some((5.0, 3)));
        h.set(2, 5.0); // a tie: the lower class first
        assert_eq!(h.peek(), Some((5.0, 2)));
        let mut order = Vec::new();
        while let Some((t, c)) = h.peek() {
            order.push((t, c));
            h.remove(c);
        }
        assert_eq!(order, vec![(5.0, 2), (5.0, 3), (8.0, 1)]);
        assert_eq!(h.peek(), None);
    }

    /// A flow of 10 units over a resource of 1 unit/s: 5 served by t = 5 s;
    /// the capacity raised to 5 then, the other 5 take 1 s more.
    #[test]
    fn a_capacity_change_settles_and_reschedules() {
        let mut net: FlowNet<()> = FlowNet::new();
        let r = net.add_resource("r", 1.0);
        let f = net.start(0.0, &[(r, 1.0)], 10.0, ());
        net.recompute(0.0);
        assert_eq!(net.finish_time(f), Some(10.0));
        net.set_capacity(r, 5.0);
        assert!(net.is_dirty());
        net.recompute(5.0);
        assert_eq!(net.rate(f), Some(5.0));
        assert_eq!(net.finish_time(f), Some(6.0));
        net.set_capacity(r, 5.0);
        assert!(!net.is_dirty(), "the same capacity changes nothing");
    }

    fn rates(net: &FlowNet<()>, ids: &[FlowId]) -> Vec<f64> {
        ids.iter().map(|&f| net.rate(f).unwrap()).collect()
    }

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() <= 1e-9 * a.abs().max(b.abs()).max(1.0)
    }

    /// Links L1 = 10, L2 = 4. Flow a uses L1 and L2, b uses L1 only, c uses L2 only.
    /// L2 is the bottleneck: a = c = 2; b gets what is left on L1: 10 − 2 = 8.
    #[test]
    fn three_flows_two_links() {
        let mut net = FlowNet::new();
        let l1 = net.add_resource("L1", 10.0);
        let l2 = net.add_resource("L2", 4.0);
        let a = net.start(0.0, &[(l1, 1.0), (l2, 1.0)], 100.0, ());
        let b = net.start(0.0, &[(l1, 1.0)], 100.0, ());
        let c = net.start(0.0, &[(l2, 1.0)], 100.0, ());
        assert_eq!(net.recompute(0.0), 3);
        assert_eq!(rates(&net, &[a, b, c]), vec![2.0, 8.0, 2.0]);
    }

    /// One flow limited elsewhere (its NIC of 1) leaves its share of the shared link to the others:
    /// link 9 shared by a (NIC 1), b, c → a = 1, b = c = 4.
    #[test]
    fn limited_flow_leaves_share() {
        let mut net = FlowNet::new();
        let link = net.add_resource("link", 9.0);
        let nic = net.add_resource("nic", 1.0);
        let a = net.start(0.0, &[(nic, 1.0), (link, 1.0)], 10.0, ());
        let b = net.start(0.0, &[(link, 1.0)], 10.0, ());
        let c = net.start(0.0, &[(link, 1.0)], 10.0, ());
        net.recompute(0.0);
        assert_eq!(rates(&net, &[a, b, c]), vec![1.0, 4.0, 4.0]);
    }

    /// One stream alone reaches the bottleneck; two streams split it; completion times exact.
    #[test]
    fn one_and_two_streams_and_completion_times() {
        let mut net = FlowNet::new();
        let nic = net.add_resource("nic", 1000.0);
        let dev = net.add_resource("dev", 100.0);
        let a = net.start(0.0, &[(nic, 1.0), (dev, 1.0)], 100.0, "a");
        assert_eq!(net.recompute(0.0), 1);
        assert_eq!(net.rate(a), Some(100.0));
        assert_eq!(net.next_finish(), Some(1.0));
        // At t = 0.5, b joins: a has 50 B left, both at 50 B/s → a ends at 1.5, b (100 B)
        // then alone at 100 B/s with 50 B left → ends at 2.0.
        let b = net.start(0.5, &[(nic, 1.0), (dev, 1.0)], 100.0, "b");
        net.recompute(0.5);
        assert_eq!(rates_s(&net, &[a, b]), vec![50.0, 50.0]);
        assert_eq!(net.next_finish(), Some(1.5));
        let mut done = Vec::new();
        net.finish_due(1.4, &mut done);
        assert!(done.is_empty());
        net.finish_due(1.5, &mut done);
        assert_eq!(done, vec!["a"]);
        net.recompute(1.5);
        assert_eq!(net.finish_time(b), Some(2.0));
        assert_eq!(net.active(), 1);
    }

    fn rates_s(net: &FlowNet<&str>, ids: &[FlowId]) -> Vec<f64> {
        ids.iter().map(|&f| net.rate(f).unwrap()).collect()
    }

    /// A device of one busy-second per second with write weight 1/100 and read
    /// weight 1/200: one writer and one reader get the same rate r with r/100 + r/200 = 1.
    #[test]
    fn weighted_device_shares_time() {
        let mut net = FlowNet::new();
        let dev = net.add_resource("dev", 1.0);
        let w = net.start(0.0, &[(dev, 1.0 / 100.0)], 1.0, ());
        let r = net.start(0.0, &[(dev, 1.0 / 200.0)], 1.0, ());
        net.recompute(0.0);
        let expect = 1.0 / (1.0 / 100.0 + 1.0 / 200.0);
        assert!(close(net.rate(w).unwrap(), expect) && close(net.rate(r).unwrap(), expect));
    }

    /// Processor sharing within a class: capacity 10; a (30 B) alone from t = 0, b (10 B)
    /// joins at t = 1 when a has 20 B left; both at 5 B/s, b ends at 3 with a at 10 B
    /// left, then a alone at 10 B/s ends at 4. Then c joins the emptied network.
    #[test]
    fn flows_of_one_class_end_in_tag_order() {
        let mut net = FlowNet::new();
        let l = net.add_resource("l", 10.0);
        let a = net.start(0.0, &[(l, 1.0)], 30.0, "a");
        net.recompute(0.0);
        assert_eq!(net.next_finish(), Some(3.0));
        let b = net.start(1.0, &[(l, 1.0)], 10.0, "b");
        assert_eq!(net.recompute(1.0), 2);
        assert_eq!(rates_s(&net, &[a, b]), vec![5.0, 5.0]);
        assert_eq!(net.finish_time(a), Some(5.0));
        assert_eq!(net.next_finish(), Some(3.0));
        let mut done = Vec::new();
        net.finish_due(3.0, &mut done);
        assert_eq!(done, vec!["b"]);
        net.recompute(3.0);
        assert_eq!(net.next_finish(), Some(4.0));
        net.finish_due(4.0, &mut done);
        assert_eq!(done, vec!["b", "a"]);
        assert_eq!(net.recompute(4.0), 0);
        assert_eq!((net.active(), net.next_finish()), (0, None));
        let c = net.start(5.0, &[(l, 1.0)], 10.0, "c");
        net.recompute(5.0);
        assert_eq!((net.rate(c), net.next_finish()), (Some(10.0), Some(6.0)));
    }

    /// Flows over the same resources with different weights are one class and get
    /// one rate: capacity 12, weights 1 and 2 → r + 2r = 12, r = 4; a resource
    /// listed twice counts with the sum of its weights (1 + 1 = 2, like the second).
    #[test]
    fn one_class_many_weights() {
        let mut net = FlowNet::new();
        let d = net.add_resource("d", 12.0);
        let a = net.start(0.0, &[(d, 1.0)], 8.0, ());
        let b = net.start(0.0, &[(d, 2.0)], 8.0, ());
        net.recompute(0.0);
        assert_eq!(rates(&net, &[a, b]), vec![4.0, 4.0]);
        let c = net.start(0.0, &[(d, 1.0), (d, 1.0)], 8.0, ());
        net.recompute(0.0);
        // 4 in total: r (1 + 2 + 2) = 12.
        assert_eq!(rates(&net, &[a, b, c]), vec![2.4, 2.4, 2.4]);
    }

    /// Copies started as one flow load the resources and end as the separate
    /// flows would: link 12 with three 6 B flows and a 12 B one → 3 B/s each,
    /// the 6 B ones end at 2; started as one flow of three copies, the same.
    #[test]
    fn copies_share_like_separate_flows() {
        let mut apart = FlowNet::new();
        let l = apart.add_resource("l", 12.0);
        let ids: Vec<FlowId> = (0..3)
            .map(|_| apart.start(0.0, &[(l, 1.0)], 6.0, "copy"))
            .collect();
        let big = apart.start(0.0, &[(l, 1.0)], 12.0, "big");
        apart.recompute(0.0);
        let mut joined = FlowNet::new();
        let l = joined.add_resource("l", 12.0);
        let copies = joined.start_copies(0.0, &[(l, 1.0)], 6.0, 3, "copies");
        let big_too = joined.start(0.0, &[(l, 1.0)], 12.0, "big");
        joined.recompute(0.0);
        assert_eq!(rates_s(&apart, &[ids[0], big]), vec![3.0, 3.0]);
        assert_eq!(rates_s(&joined, &[copies, big_too]), vec![3.0, 3.0]);
        assert_eq!(apart.finish_time(ids[2]), joined.finish_time(copies));
        let (mut a, mut j) = (Vec::new(), Vec::new());
        apart.finish_due(2.0, &mut a);
        joined.finish_due(2.0, &mut j);
        assert_eq!((a, j), (vec!["copy"; 3], vec!["copies"]));
        apart.recompute(2.0);
        joined.recompute(2.0);
        assert_eq!(apart.finish_time(big), Some(2.5));
        assert_eq!(joined.finish_time(big_too), Some(2.5));
    }

    /// Recomputation touches only the changed component; independent flows keep their
    /// rate and get no new completion.
    #[test]
    fn only_affected_component_is_rescheduled() {
        let mut net = FlowNet::new();
        let x = net.add_resource("x", 10.0);
        let y = net.add_resource("y", 10.0);
        let a = net.start(0.0, &[(x, 1.0)], 10.0, ());
        let b = net.start(0.0, &[(y, 1.0)], 10.0, ());
        net.recompute(0.0);
        let c = net.start(0.2, &[(y, 1.0)], 10.0, ());
        assert_eq!(net.recompute(0.2), 2, "only b and c are rescheduled");
        assert_eq!(rates(&net, &[a, b, c]), vec![10.0, 5.0, 5.0]);
        assert_eq!(net.finish_time(a), Some(1.0));
        // b had 8 bytes left at 0.2, now at 5 B/s.
        assert!(close(net.finish_time(b).unwrap(), 0.2 + 8.0 / 5.0));
    }

    /// Per-flow progressive filling, the textbook way (no classes): the reference.
    fn reference_rates(cap: &[f64], paths: &[Vec<(usize, f64)>]) -> Vec<f64> {
        let mut rate = vec![f64::NAN; paths.len()];
        let mut used = vec![0.0; cap.len()];
        loop {
            let mut best: Option<(f64, usize)> = None;
            for r in 0..cap.len() {
                let w: f64 = (0..paths.len())
                    .filter(|&f| rate[f].is_nan())
                    .flat_map(|f| paths[f].iter().filter(|p| p.0 == r).map(|p| p.1))
                    .sum();
                if w > 0.0 {
                    let s = ((cap[r] - used[r]) / w).max(0.0);
                    if best.is_none_or(|b| s < b.0) {
                        best = Some((s, r));
                    }
                }
            }
            let Some((s, r)) = best else { return rate };
            for f in 0..paths.len() {
                if rate[f].is_nan() && paths[f].iter().any(|p| p.0 == r) {
                    rate[f] = s;
                    for &(r2, w) in &paths[f] {
                        used[r2] += s * w;
                    }
                }
            }
        }
    }

    /// (start time, bytes, path) of a flow in a test.
    type TestFlow = (f64, f64, Vec<(usize, f64)>);

    /// Completion times under arrivals and departures match a per-flow reference
    /// simulation (remaining bytes settled at every event), on pseudo-random
    /// networks where many flows share resource sets (classes of several flows).
    #[test]
    fn completion_times_match_a_per_flow_reference() {
        let mut state = 777u64;
        let mut next = move |m: u64| {
            state = state
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (state >> 33) % m
        };
        for _case in 0..30 {
            let nres = 1 + next(4) as usize;
            let cap: Vec<f64> = (0..nres).map(|_| 1.0 + next(10) as f64).collect();
            let nflows = 1 + next(12) as usize;
            // (start, bytes, path); few distinct paths so classes have several members.
            let shapes: Vec<Vec<(usize, f64)>> = (0..3)
                .map(|_| {
                    let mut p: Vec<(usize, f64)> = (0..nres)
                        .filter(|_| next(2) == 0)
                        .map(|r| (r, 1.0))
                        .collect();
                    if p.is_empty() {
                        p.push((0, 1.0));
                    }
                    p
                })
                .collect();
            let flows: Vec<TestFlow> = (0..nflows)
                .map(|_| {
                    let mut p = shapes[next(3) as usize].clone();
                    for x in &mut p {
                        x.1 = [1.0, 0.5, 2.0][next(3) as usize];
                    }
                    (next(5) as f64 * 0.5, 1.0 + next(20) as f64, p)
                })
                .collect();

            // The reference: event by event, every flow's remaining bytes.
            let mut expect = vec![f64::NAN; nflows];
            let mut left: Vec<f64> = flows.iter().map(|f| f.1).collect();
            let mut t = 0.0;
            loop {
                let act: Vec<usize> = (0..nflows)
                    .filter(|&f| flows[f].0 <= t && expect[f].is_nan())
                    .collect();
                let paths: Vec<_> = act.iter().map(|&f| flows[f].2.clone()).collect();
                let rate = reference_rates(&cap, &paths);
                let next_start = flows
                    .iter()
                    .map(|f| f.0)
                    .filter(|&s| s > t)
                    .fold(f64::INFINITY, f64::min);
                let next_end = act
                    .iter()
                    .zip(&rate)
                    .map(|(&f, &r)| t + left[f] / r)
                    .fold(f64::INFINITY, f64::min);
                let t2 = next_start.min(next_end);
                if !t2.is_finite() {
                    break;
                }
                for (&f, &r) in act.iter().zip(&rate) {
                    left[f] -= r * (t2 - t);
                    if left[f] <= 1e-9 * flows[f].1 {
                        expect[f] = t2;
                    }
                }
                t = t2;
            }

            // The flow network, driven as the engine drives it.
            let mut net = FlowNet::new();
            let res: Vec<ResourceId> = cap
                .iter()
                .enumerate()
                .map(|(i, &c)| net.add_resource(format!("r{i}"), c))
                .collect();
            let mut got = vec![f64::NAN; nflows];
            let mut order: Vec<usize> = (0..nflows).collect();
            order.sort_by(|&a, &b| flows[a].0.total_cmp(&flows[b].0));
            let mut pending = order.into_iter().peekable();
            let mut now = 0.0;
            let mut done = Vec::new();
            loop {
                while let Some(&f) = pending.peek() {
                    if flows[f].0 > now {
                        break;
                    }
                    let path: Vec<_> = flows[f].2.iter().map(|&(r, w)| (res[r], w)).collect();
                    net.start(now, &path, flows[f].1, f);
                    pending.next();
                }
                net.finish_due(now, &mut done);
                for f in done.drain(..) {
                    got[f] = now;
                }
                net.recompute(now);
                let start = pending.peek().map_or(f64::INFINITY, |&f| flows[f].0);
                let end = net.next_finish().unwrap_or(f64::INFINITY);
                if !start.min(end).is_finite() {
                    break;
                }
                now = start.min(end);
            }
            assert_eq!(net.active(), 0);
            for f in 0..nflows {
                assert!(
                    close(got[f], expect[f]) || (got[f] - expect[f]).abs() < 1e-9,
                    "flow {f}: ends at {} , reference {}",
                    got[f],
                    expect[f]
                );
            }
        }
    }

    /// Brute-force reference: max–min fairness means every flow has a bottleneck
    /// resource that is saturated and on which it has the largest rate. Checked on a
    /// deterministic pseudo-random family of networks.
    #[test]
    fn every_flow_has_a_bottleneck() {
        let mut state = 12345u64;
        let mut next = move |m: u64| {
            state = state
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (state >> 33) % m
        };
        for _case in 0..50 {
            let mut net = FlowNet::new();
            let nres = 1 + next(6) as usize;
            let res: Vec<ResourceId> = (0..nres)
                .map(|i| net.add_resource(format!("r{i}"), 1.0 + next(20) as f64))
                .collect();
            let mut paths = Vec::new();
            let mut ids = Vec::new();
            for _ in 0..1 + next(8) {
                let mut p: Vec<(ResourceId, f64)> = Vec::new();
                for &r in &res {
                    if next(2) == 0 {
                        p.push((r, 1.0));
                    }
                }
                if p.is_empty() {
                    p.push((res[0], 1.0));
                }
                ids.push(net.start(0.0, &p, 1.0, ()));
                paths.push(p);
            }
            net.recompute(0.0);
            let rate: Vec<f64> = rates(&net, &ids);
            let load = |r: ResourceId| -> f64 {
                paths
                    .iter()
                    .zip(&rate)
                    .filter(|(p, _)| p.iter().any(|&(q, _)| q == r))
                    .map(|(_, x)| x)
                    .sum()
            };
            for (i, p) in paths.iter().enumerate() {
                let has_bottleneck = p.iter().any(|&(r, _)| {
                    let cap = net.resources[r.0 as usize].capacity;
                    let saturated = close(load(r), cap);
                    let largest = paths
                        .iter()
                        .zip(&rate)
                        .filter(|(q, _)| q.iter().any(|&(s, _)| s == r))
                        .all(|(_, &x)| x <= rate[i] + 1e-9);
                    saturated && largest
                });
                assert!(has_bottleneck, "flow {i} has no bottleneck: rates {rate:?}");
                for &(r, _) in p {
                    assert!(load(r) <= net.resources[r.0 as usize].capacity * (1.0 + 1e-9));
                }
            }
        }
    }
}
