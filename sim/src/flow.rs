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
//! Recomputation is batched by the engine (once per virtual instant, [`FlowNet::recompute`])
//! and restricted to the connected component of the resources whose flow set changed.
//! When a flow's rate changes its remaining bytes are first settled at the old rate,
//! then its completion time is recomputed at the new rate. Flows and resources are visited in id order:
//! the order must be fixed for the simulation to be reproducible.

use std::cmp::Ordering;
use std::collections::{BTreeSet, BinaryHeap};

/// A resource in a [`FlowNet`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ResourceId(u32);

/// A flow in a [`FlowNet`] (ids are reused after a flow finishes).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct FlowId(u32);

struct Resource {
    name: String,
    /// Capacity in resource units per second (B/s for links).
    capacity: f64,
    flows: BTreeSet<u32>,
    dirty: bool,
    mark: u64,
    used: f64,
    wsum: f64,
    unfrozen: usize,
}

struct Flow<T> {
    path: Vec<(u32, f64)>,
    remaining: f64,
    rate: f64,
    since: f64,
    /// Completion time at the current rate (infinite before the first recomputation).
    finish_at: f64,
    token: T,
    mark: u64,
    frozen: bool,
    new_rate: f64,
}

/// Resources and the flows crossing them; `T` is what the owner gets back when a flow ends.
pub struct FlowNet<T> {
    resources: Vec<Resource>,
    flows: Vec<Option<Flow<T>>>,
    free: Vec<u32>,
    dirty: Vec<u32>,
    epoch: u64,
    comp_flows: Vec<u32>,
    comp_res: Vec<u32>,
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
            dirty: Vec::new(),
            epoch: 0,
            comp_flows: Vec::new(),
            comp_res: Vec::new(),
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
            flows: BTreeSet::new(),
            dirty: false,
            mark: 0,
            used: 0.0,
            wsum: 0.0,
            unfrozen: 0,
        });
        ResourceId(self.resources.len() as u32 - 1)
    }

    /// The name a resource was given.
    pub fn resource_name(&self, r: ResourceId) -> &str {
        &self.resources[r.0 as usize].name
    }

    /// Starts a flow of `bytes` (> 0) over `path` — `(resource, weight)` pairs,
    /// weight in capacity units per byte — at time `now`. Its rate is set by the
    /// next [`FlowNet::recompute`].
    pub fn start(&mut self, now: f64, path: &[(ResourceId, f64)], bytes: f64, token: T) -> FlowId {
        assert!(!path.is_empty(), "a flow needs at least one resource");
        assert!(bytes > 0.0, "a flow moves a positive number of bytes");
        let flow = Flow {
            path: path.iter().map(|&(r, w)| (r.0, w)).collect(),
            remaining: bytes,
            rate: 0.0,
            since: now,
            finish_at: f64::INFINITY,
            token,
            mark: 0,
            frozen: false,
            new_rate: 0.0,
        };
        let id = match self.free.pop() {
            Some(i) => {
                self.flows[i as usize] = Some(flow);
                i
            }
            None => {
                self.flows.push(Some(flow));
                self.flows.len() as u32 - 1
            }
        };
        for &(r, _) in path {
            self.resources[r.0 as usize].flows.insert(id);
            self.mark_dirty(r.0);
        }
        FlowId(id)
    }

    fn mark_dirty(&mut self, r: u32) {
        let res = &mut self.resources[r as usize];
        if !res.dirty {
            res.dirty = true;
            self.dirty.push(r);
        }
    }

    /// Ends every flow due by `now` (completion time ≤ `now`), in flow-id order,
    /// appending their tokens to `out`.
    pub fn finish_due(&mut self, now: f64, out: &mut Vec<T>) {
        for i in 0..self.flows.len() {
            if !self.flows[i].as_ref().is_some_and(|f| f.finish_at <= now) {
                continue;
            }
            let f = self.flows[i].take().expect("checked above");
            for &(r, _) in &f.path {
                self.resources[r as usize].flows.remove(&(i as u32));
                self.mark_dirty(r);
            }
            self.free.push(i as u32);
            out.push(f.token);
        }
    }

    /// The earliest completion time of the flows in progress, if any.
    ///
    /// One scan over the flows: the engine keeps a single pending "next flow
    /// completion" event instead of one event per flow, so a rate change that
    /// touches n flows costs O(n) arithmetic and no event-queue traffic.
    pub fn next_finish(&self) -> Option<f64> {
        self.flows
            .iter()
            .flatten()
            .map(|f| f.finish_at)
            .min_by(f64::total_cmp)
            .filter(|t| t.is_finite())
    }

    /// Completion time of `flow` at its current rate, in seconds.
    pub fn finish_time(&self, flow: FlowId) -> Option<f64> {
        self.flows
            .get(flow.0 as usize)?
            .as_ref()
            .map(|f| f.finish_at)
    }

    /// True when some flow started or ended since the last recomputation.
    pub fn is_dirty(&self) -> bool {
        !self.dirty.is_empty()
    }

    /// Current rate of `flow` in bytes/s (0 before its first recomputation).
    pub fn rate(&self, flow: FlowId) -> Option<f64> {
        self.flows.get(flow.0 as usize)?.as_ref().map(|f| f.rate)
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
        self.comp_flows.clear();
        self.comp_res.clear();
        for &r in &stack {
            let res = &mut self.resources[r as usize];
            res.dirty = false;
            res.mark = epoch;
        }
        // Connected component: resources ↔ flows, by depth-first search.
        while let Some(r) = stack.pop() {
            self.comp_res.push(r);
            let first_new = self.comp_flows.len();
            let Self {
                resources,
                flows,
                comp_flows,
                ..
            } = self;
            for &f in &resources[r as usize].flows {
                let flow = flows[f as usize]
                    .as_mut()
                    .expect("resource lists live flows");
                if flow.mark != epoch {
                    flow.mark = epoch;
                    comp_flows.push(f);
                }
            }
            for &f in &comp_flows[first_new..] {
                for &(r2, _) in &flows[f as usize].as_ref().expect("live").path {
                    let res2 = &mut resources[r2 as usize];
                    if res2.mark != epoch {
                        res2.mark = epoch;
                        stack.push(r2);
                    }
                }
            }
        }
        self.dirty = stack; // empty; keeps the allocation
        self.comp_flows.sort_unstable();
        self.comp_res.sort_unstable();

        for &r in &self.comp_res {
            let res = &mut self.resources[r as usize];
            res.used = 0.0;
            res.wsum = 0.0;
            res.unfrozen = 0;
        }
        for &f in &self.comp_flows {
            let flow = self.flows[f as usize].as_mut().expect("live");
            flow.frozen = false;
            for &(r, w) in &flow.path {
                let res = &mut self.resources[r as usize];
                res.wsum += w;
                res.unfrozen += 1;
            }
        }
        // Progressive filling. A resource's fair share only grows as others'
        // flows freeze, so a lazy min-heap with re-insertion finds each bottleneck.
        let share = |res: &Resource| ((res.capacity - res.used) / res.wsum).max(0.0);
        let mut heap: BinaryHeap<Share> = self
            .comp_res
            .iter()
            .filter(|&&r| self.resources[r as usize].unfrozen > 0)
            .map(|&r| Share(share(&self.resources[r as usize]), r))
            .collect();
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
            let members: Vec<u32> = res.flows.iter().copied().collect();
            for f in members {
                let flow = self.flows[f as usize].as_mut().expect("live");
                if flow.frozen {
                    continue;
                }
                flow.frozen = true;
                flow.new_rate = s;
                for &(r2, w) in &flow.path {
                    let res2 = &mut self.resources[r2 as usize];
                    res2.used += s * w;
                    res2.wsum -= w;
                    res2.unfrozen -= 1;
                }
            }
        }
        // Settle at the old rate, then reschedule.
        let mut changed = 0;
        for &f in &self.comp_flows {
            let flow = self.flows[f as usize].as_mut().expect("live");
            if flow.new_rate == flow.rate {
                continue;
            }
            flow.remaining = (flow.remaining - flow.rate * (now - flow.since)).max(0.0);
            flow.since = now;
            flow.rate = flow.new_rate;
            flow.finish_at = if flow.rate > 0.0 {
                now + flow.remaining / flow.rate
            } else {
                f64::INFINITY
            };
            changed += 1;
        }
        changed
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
