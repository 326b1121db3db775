//! The platform built from a scenario: where ranks run, the network (a petgraph
//! topology of switches and links, shortest routes by latency; or a 3-D torus
//! of routers, routed in dimension order) and what compute and messages cost.
//! The storage side (servers' caches and devices, the file system) is in
//! [`crate::storage`].
//!
//! ```text
//!  rank ─ node ─ NIC tx/rx ──┐                 ┌── server NIC rx/tx ── device
//!  rank ─ node ─ NIC tx/rx ──┼──── switch ─────┤   (one busy-second per second;
//!  rank ─ node ─ NIC tx/rx ──┘  (aggregate bw)  │    weight 1/read_bw or 1/write_bw)
//!        └ memory bus (intra-node messages at most message_bw a core,
//!                      page-cache copies: memory_bw)
//! ```
//!
//! # CPU time on the client
//!
//! Small-request I/O on one node is dominated by software costs, not by the
//! devices: each system call, each MPI-IO call (ROMIO's argument checks, view
//! handling, offsets exchange), each page-cache copy (page allocation makes it
//! slower than a memcpy) runs on the rank's core. They are CPU work of the rank
//! ([`Platform::cpu_path`]): a plain delay while the node has a core per rank;
//! on an **oversubscribed** node (more ranks than `cores`) a flow of
//! core-seconds over the rank's core, a resource of one core-second per second.
//! Ranks are bound to the node's cores round robin (rank `i` of the node on
//! core `i mod cores`, as `mpiexec -bind-to core` places them) and the runnable
//! ranks of a core share it equally: processor sharing (Kleinrock, *Queueing
//! Systems* vol. 2, 1976, ch. 4), the max–min fair share of [`crate::flow`].
//! With every rank runnable that is the rate × cores / ranks of processor
//! sharing over the node; the binding keeps it to one flow class per core
//! rather than per rank at thousands of ranks. (Not modelled: the kernel
//! migrating ranks between cores when only some are runnable.) A page-cache
//! copy is a flow over the memory bus and, where the per-core page-cache rate
//! is below the memory bus (else the bus binds first), over the rank's core at
//! weight 1/rate, so the copies of a node scale with its cores, not with one
//! memcpy, and share the cores when oversubscribed.
//!
//! Oversubscription also delays communication: MPICH's progress engine
//! busy-polls, so a message to a rank that is descheduled is answered only at
//! its next time slice; every message step to a rank of an oversubscribed node
//! costs `nodes.oversubscribed_wakeup` more, and twice that for a message
//! above `nodes.eager_limit`, which MPI sends by rendezvous (the receiver's
//! answer to the request to send is one more hand-off).
//!
//! With `nodes.waiting_ranks = "poll"` the ranks waiting in MPI busy-poll:
//! every rank of an oversubscribed node is always runnable, so each holds
//! cores / ranks of a core whether it works or waits (the kernel balances
//! runnable processes over the cores; measured here: 2 ranks copying while 2
//! others wait in a barrier copy at half the speed of 2 ranks alone, 2 of 3
//! at two thirds). Its CPU work is then a flow over a share of its own, of
//! that capacity. A message step pays the wake-up only where its
//! communicator has more ranks on the node than cores (all 4 ranks' barrier:
//! 8 ms on 2 cores); among fewer it costs `nodes.polled_wakeup`, a mean over
//! placements: measured, 2 ranks stepping on cores of their own (each beside a
//! poller) meet in a barrier in microseconds, 2 on one core wait a time slice
//! (8 ms) at each; ranks that sleep in I/O are placed again as they wake, so
//! the probe takes the mean over episodes that each follow such a sleep.
//!
//! Polling ranks also leave a collective at different times: where the
//! communicator has more ranks on the node than cores, the last message
//! reaches the ranks on a core at once and the others at their next time
//! slice, so with `nodes.release_stagger` the first `cores` of them leave it
//! that much before the others ([`Platform::release_advance`]). A phase timed
//! from the first rank out of a barrier to the last one done (IOR's) is then
//! longer than its work: measured here, 4 ranks on 2 cores leaving a barrier
//! 4–6 ms apart, and copies of 19 ms of work each spanning 23–24 ms.
//!
//! With `nodes.sleeping_ranks = "yield"` as well, a rank asleep in the kernel
//! (on a file's inode lock, a byte-range lock, the dirty limit, a device) is
//! not runnable: the ranks awake share the cores, and a rank woken from such a
//! sleep runs on a whole core until its request is done
//! ([`Platform::sleep`]); with `nodes.wake_slice`, for that slice at most,
//! then at its share (the scheduler prefers a woken task for one slice:
//! measured here, 8 MiB rewrites of about 1 ms ran on a whole core, 32 MiB
//! ones and 20 ms writes into fresh memory near the share). A page-cache
//! write into pages the cache already holds copies at `cache.rewrite_bw`
//! rather than `cache.write_bw` ([`Platform::cache_write_path`]).

use std::cell::{Cell, RefCell};
use std::collections::BTreeMap;

use crate::flow::{FlowNet, ResourceId};
use piotwin_types::{Access, KernelKind};

use crate::scenario::{ComputeRates, Placement, Scenario, SleepingRanks, Torus, WaitingRanks};

pub(crate) struct Node {
    tx: ResourceId,
    rx: ResourceId,
    pub(crate) mem: ResourceId,
    /// Capacity of `mem`, bytes/s.
    memory_bw: f64,
    /// The bus's rate for reads out of the page cache (`memory_read_bw`), bytes/s.
    memory_read_bw: f64,
    /// The node's rate for writes into new page-cache pages
    /// (`memory_write_bw`), bytes/s.
    memory_write_bw: f64,
    /// Per-core rate of an intra-node message (`message_bw`), bytes/s.
    message_bw: f64,
    nic_latency: f64,
    nic_bw: f64,
    rates: ComputeRates,
    /// More ranks than cores on this node: CPU work shares the cores.
    oversubscribed: bool,
    cores: usize,
    /// Ranks placed on this node.
    ranks: usize,
    /// What its ranks waiting in MPI do when it is oversubscribed.
    waiting: WaitingRanks,
    /// What its ranks sleeping in the kernel do with their share, when they poll.
    sleeping: SleepingRanks,
    /// Its ranks (world rank, share of the cores), where they poll and yield
    /// their shares asleep (see [`Platform::add_cpus`]).
    shares: Vec<(usize, ResourceId)>,
    /// How many of those are asleep in the kernel now.
    asleep: Cell<usize>,
    /// Of those, the ones woken from a sleep whose request is not done yet,
    /// with the end of their slice on a whole core.
    woken: RefCell<Vec<(usize, f64)>>,
    /// How long a woken rank runs on a whole core at most, in s (infinite:
    /// until its request is done).
    wake_slice: f64,
    /// CPU seconds per write system call.
    syscall: f64,
    /// CPU seconds per read system call.
    read_syscall: f64,
    /// CPU seconds per Fortran data-transfer statement.
    fortran_statement: f64,
    /// Extra latency of a message to a rank on this node when it is oversubscribed, in s.
    wakeup: f64,
    /// As `wakeup`, of a step among no more of the node's ranks than cores
    /// while its other ranks poll, in s.
    polled_wakeup: f64,
    /// The part of a wake-up a step of an all-reduce of one value waits.
    allreduce_wake: f64,
    /// How much earlier the first `cores` ranks of a crowded collective leave it, in s.
    release_stagger: f64,
    /// The largest message sent eagerly; a larger one pays its wake-up twice.
    eager_limit: u64,
    /// MPI's temporary buffers of this size or more are freshly mapped.
    mmap_from: u64,
    /// Per-core page-cache copy rates (write, read, rewrite, aliased) in B/s.
    cache_bw: [f64; 4],
    /// A copy whose destination lies fewer bytes than this past its source,
    /// modulo a page, aliases (0: none does).
    aliased_within: u64,
    /// What the node's aliased copies share where each core keeps only part
    /// of `aliased_bw` while all copy aliased (`nodes.cache.aliased_all_cores`).
    aliased_together: Option<ResourceId>,
    /// The node's rate for messages received into (unpacked, index 0) and sent
    /// from (packed, index 1) a derived datatype while it is oversubscribed;
    /// `None` where not modelled.
    datatype: [Option<ResourceId>; 2],
    switch: usize,
}

/// The network side of an I/O server.
pub(crate) struct ServerNet {
    pub(crate) tx: ResourceId,
    pub(crate) rx: ResourceId,
    switch: usize,
}

/// A route between two switches: latency and the resources crossed (backplanes and link directions).
#[derive(Clone, Default)]
struct Route {
    latency: f64,
    resources: Vec<ResourceId>,
}

pub(crate) struct Platform {
    pub(crate) nodes: Vec<Node>,
    rank_node: Vec<u32>,
    net_bw: f64,
    /// Routes between switches, `routes[a][b]` (see [`topology`]).
    routes: Vec<Vec<Route>>,
    pub(crate) servers: Vec<ServerNet>,
    /// Per world rank: the core it is bound to (capacity one core-second per
    /// second), where CPU work or page-cache copies of its node share the
    /// cores (see [`Platform::add_cpus`]); empty when no node needs them.
    rank_cpu: Vec<Option<ResourceId>>,
}

/// Switch indices by name, and `routes[a][b]` between switches.
type Topology = (BTreeMap<String, usize>, Vec<Vec<Route>>);

/// A full-duplex link of the switch graph: its ends (switch indices), its two
/// directions' resources and its latency.
struct GraphLink {
    ends: [usize; 2],
    res: [ResourceId; 2],
    bandwidth: f64,
    latency: f64,
}

/// Whether `switch` (a node group's or the servers') means "spread over the torus".
fn on_torus(scn: &Scenario, switch: &str) -> bool {
    scn.network.torus.is_some() && switch == Torus::ATTACH
}

/// The routers of `scn`'s torus the nodes of its groups attached to it sit on,
/// in node order (empty without a torus).
fn torus_node_routers(scn: &Scenario) -> Vec<usize> {
    let Some(t) = &scn.network.torus else {
        return Vec::new();
    };
    let count: usize = scn
        .nodes
        .iter()
        .filter(|g| on_torus(scn, &g.switch))
        .map(|g| g.count)
        .sum();
    (0..count).map(|k| t.spread(k, count)).collect()
}

/// Builds the switch graph of `scn` (petgraph), its resources, and all-pairs
/// routes: between two routers of a torus in dimension order (x, then y, then
/// z, each the shorter way round, half-way ties forward), as torus machines
/// route; otherwise shortest by latency (Dijkstra from each switch; ties:
/// fewer hops, then the lower-numbered switch). A torus's routers are the
/// first switches, numbered x fastest. Errors name a switch that nothing
/// connects, or a torus with more nodes than routers.
fn topology<T>(scn: &Scenario, flows: &mut FlowNet<T>) -> Result<Topology, String> {
    use petgraph::graph::{NodeIndex, UnGraph};
    use petgraph::visit::EdgeRef;
    let torus = scn.network.torus.as_ref();
    let routers = torus.map_or(0, Torus::routers);
    let node_routers = torus_node_routers(scn);
    if node_routers.len() > routers && routers > 0 {
        return Err(format!(
            "{} nodes attach to the torus (switch = \"torus\"), but it has {routers} routers",
            node_routers.len()
        ));
    }
    if let Some(l) = scn
        .network
        .links
        .iter()
        .find(|l| on_torus(scn, &l.from) || on_torus(scn, &l.to))
    {
        return Err(format!(
            "the link {} ↔ {} names `torus`: a link joins one router, named torus(x,y,z)",
            l.from, l.to
        ));
    }
    let mut names: BTreeMap<String, usize> = BTreeMap::new();
    let mut order: Vec<String> = Vec::new();
    if let Some(t) = torus {
        order.extend((0..routers).map(|i| Torus::router_name(t.coords(i))));
    }
    for l in &scn.network.links {
        order.push(l.from.clone());
        order.push(l.to.clone());
    }
    for g in &scn.nodes {
        if !on_torus(scn, &g.switch) {
            order.push(g.switch.clone());
        }
    }
    if !on_torus(scn, &scn.server.switch) {
        order.push(scn.server.switch.clone());
    }
    let mut g: UnGraph<usize, usize> = UnGraph::new_undirected();
    let mut backplane = Vec::new();
    for n in order {
        if !names.contains_key(&n) {
            let i = names.len();
            backplane.push(flows.add_resource(format!("switch {n}"), scn.network.bandwidth));
            g.add_node(i);
            names.insert(n, i);
        }
    }
    let mut links: Vec<GraphLink> = Vec::new();
    let mut add_link =
        |flows: &mut FlowNet<T>, a: usize, b: usize, from: &str, to: &str, bw, latency| {
            links.push(GraphLink {
                ends: [a, b],
                res: [
                    flows.add_resource(format!("link {from}→{to}"), bw),
                    flows.add_resource(format!("link {to}→{from}"), bw),
                ],
                bandwidth: bw,
                latency,
            });
            g.add_edge(NodeIndex::new(a), NodeIndex::new(b), links.len() - 1);
        };
    if let Some(t) = torus {
        for i in 0..routers {
            let c = t.coords(i);
            for d in 0..3 {
                // A dimension of 2 has one link between its two routers.
                if t.dims[d] < 2 || (t.dims[d] == 2 && c[d] == 1) {
                    continue;
                }
                let mut n = c;
                n[d] = (c[d] + 1) % t.dims[d];
                let j = names[&Torus::router_name(n)];
                let (from, to) = (Torus::router_name(c), Torus::router_name(n));
                add_link(flows, i, j, &from, &to, t.bandwidth, t.latency);
            }
        }
    }
    for l in &scn.network.links {
        let (a, b) = (names[&l.from], names[&l.to]);
        add_link(flows, a, b, &l.from, &l.to, l.bandwidth, l.latency);
    }
    // What can enter each switch per second: its nodes' and servers' NICs
    // and the links into it. A backplane that carries at least that much
    // never limits a flow (every flow across it came in through one of
    // them), so it stays out of the flows' paths: the max–min rates are the
    // same, and flows that share nothing else are no longer one component
    // of the progressive filling ([`FlowNet::recompute`]).
    let mut inflow = vec![0.0; names.len()];
    let mut torus_nodes = node_routers.iter();
    for g in &scn.nodes {
        if on_torus(scn, &g.switch) {
            for &r in torus_nodes.by_ref().take(g.count) {
                inflow[r] += g.nic_bw;
            }
        } else {
            inflow[names[&g.switch]] += g.count as f64 * g.nic_bw;
        }
    }
    match torus {
        Some(t) if on_torus(scn, &scn.server.switch) => {
            for i in 0..scn.server.count {
                inflow[t.spread(i, scn.server.count)] += scn.server.nic_bw;
            }
        }
        _ => inflow[names[&scn.server.switch]] += scn.server.count as f64 * scn.server.nic_bw,
    }
    for l in &links {
        inflow[l.ends[0]] += l.bandwidth;
        inflow[l.ends[1]] += l.bandwidth;
    }
    let crossing: Vec<Option<ResourceId>> = backplane
        .iter()
        .zip(&inflow)
        .map(|(&b, &into)| (scn.network.bandwidth < into).then_some(b))
        .collect();
    let hop_cost = |l: &GraphLink| l.latency + scn.network.latency + 1e-15;
    // A route along `path` (switch indices from source to destination, each
    // step over the link numbered beside it).
    let route = |a: usize, hops: &[(usize, usize)]| {
        let mut r = Route {
            latency: scn.network.latency,
            resources: crossing[a].into_iter().collect(),
        };
        let mut at = a;
        for &(link, next) in hops {
            let l = &links[link];
            r.resources.push(l.res[usize::from(l.ends[0] != at)]);
            r.resources.extend(crossing[next]);
            r.latency += l.latency + scn.network.latency;
            at = next;
        }
        r
    };
    let link_between = |x: usize, y: usize| {
        let e = g
            .find_edge(NodeIndex::new(x), NodeIndex::new(y))
            .expect("a torus link");
        *g.edge_weight(e).expect("edge")
    };
    let n = names.len();
    let mut routes = Vec::with_capacity(n);
    for a in 0..n {
        let score = petgraph::algo::dijkstra(&g, NodeIndex::new(a), None, |e| {
            hop_cost(&links[*e.weight()])
        });
        let mut row = Vec::with_capacity(n);
        for b in 0..n {
            let mut hops = Vec::new();
            if let Some(t) = torus.filter(|_| a < routers && b < routers) {
                let (mut at, to) = (t.coords(a), t.coords(b));
                let mut here = a;
                for d in 0..3 {
                    let size = t.dims[d];
                    let forward = (to[d] + size - at[d]) % size;
                    while at[d] != to[d] {
                        at[d] = if forward <= size - forward {
                            (at[d] + 1) % size
                        } else {
                            (at[d] + size - 1) % size
                        };
                        let next = names[&Torus::router_name(at)];
                        hops.push((link_between(here, next), next));
                        here = next;
                    }
                }
            } else {
                let Some(&total) = score.get(&NodeIndex::new(b)) else {
                    let name = |i: usize| {
                        names
                            .iter()
                            .find(|(_, v)| **v == i)
                            .map(|(k, _)| k.clone())
                            .unwrap_or_default()
                    };
                    return Err(format!(
                        "no route from switch `{}` to switch `{}`: add a [[network.links]] entry joining them",
                        name(a),
                        name(b)
                    ));
                };
                // Back from b: the lowest-numbered neighbour on a shortest path.
                let (mut here, mut cost) = (b, total);
                while here != a {
                    let (link, prev) = g
                        .edges(NodeIndex::new(here))
                        .filter_map(|e| {
                            let prev = if e.source().index() == here {
                                e.target().index()
                            } else {
                                e.source().index()
                            };
                            let s = *score.get(&NodeIndex::new(prev))?;
                            (s + hop_cost(&links[*e.weight()]) == cost)
                                .then_some((*e.weight(), prev))
                        })
                        .min_by_key(|&(link, prev)| (prev, link))
                        .expect("a shortest path's predecessor");
                    hops.push((link, here));
                    cost = score[&NodeIndex::new(prev)];
                    here = prev;
                }
                hops.reverse();
            }
            row.push(route(a, &hops));
        }
        routes.push(row);
    }
    Ok((names, routes))
}

impl Platform {
    /// Builds resources for `ranks` ranks of `scn` in `flows`. Ranks are placed by
    /// block (node after node, `cores` ranks each) or round robin (one per node
    /// in turn) while cores last; beyond that, evenly in blocks over all nodes
    /// (oversubscribed).
    pub(crate) fn build<T>(
        scn: &Scenario,
        ranks: usize,
        flows: &mut FlowNet<T>,
    ) -> Result<Platform, String> {
        let (switches, routes) = topology(scn, flows)?;
        let mut torus_routers = torus_node_routers(scn).into_iter();
        let mut nodes = Vec::new();
        let mut cores = Vec::new();
        for g in &scn.nodes {
            for i in 0..g.count {
                let name = format!("{}[{i}]", g.name);
                nodes.push(Node {
                    tx: flows.add_resource(format!("{name}.nic.tx"), g.nic_bw),
                    rx: flows.add_resource(format!("{name}.nic.rx"), g.nic_bw),
                    mem: flows.add_resource(format!("{name}.mem"), g.memory_bw),
                    memory_bw: g.memory_bw,
                    memory_read_bw: g.memory_read_bw,
                    memory_write_bw: g.memory_write_bw,
                    message_bw: g.message_bw,
                    nic_latency: g.nic_latency,
                    nic_bw: g.nic_bw,
                    rates: g.compute.clone(),
                    oversubscribed: false,
                    cores: g.cores,
                    ranks: 0,
                    waiting: g.waiting_ranks,
                    sleeping: g.sleeping_ranks,
                    shares: Vec::new(),
                    asleep: Cell::new(0),
                    woken: RefCell::new(Vec::new()),
                    wake_slice: g.wake_slice,
                    syscall: g.syscall,
                    read_syscall: g.read_syscall,
                    fortran_statement: g.fortran_statement,
                    wakeup: g.oversubscribed_wakeup,
                    polled_wakeup: g.polled_wakeup,
                    allreduce_wake: g.allreduce_wake,
                    release_stagger: g.release_stagger,
                    eager_limit: g.eager_limit,
                    mmap_from: g.mmap_from,
                    cache_bw: g.cache.as_ref().map_or([g.compute.memcpy; 4], |c| {
                        [c.write_bw, c.read_bw, c.rewrite_bw, c.aliased_bw]
                    }),
                    aliased_within: g
                        .cache
                        .as_ref()
                        .filter(|c| c.aliased_bw.is_finite())
                        .map_or(0, |c| c.aliased_within),
                    aliased_together: g
                        .cache
                        .as_ref()
                        .filter(|c| c.aliased_bw.is_finite())
                        .and_then(|c| {
                            let kept = c.aliased_all_cores?;
                            Some(flows.add_resource(
                                format!("{name}.cache.aliased"),
                                g.cores as f64 * kept * c.aliased_bw,
                            ))
                        }),
                    datatype: [
                        ("unpack", g.oversubscribed_unpack_bw),
                        ("pack", g.oversubscribed_pack_bw),
                    ]
                    .map(|(what, bw)| {
                        bw.is_finite().then(|| {
                            flows.add_resource(format!("{name}.oversubscribed.{what}"), bw)
                        })
                    }),
                    switch: match on_torus(scn, &g.switch) {
                        true => torus_routers.next().expect("a router per torus node"),
                        false => switches[&g.switch],
                    },
                });
                cores.push(g.cores);
            }
        }
        let total_cores: usize = cores.iter().sum();
        let mut rank_node = Vec::with_capacity(ranks);
        if ranks <= total_cores && scn.placement == Placement::RoundRobin {
            // one rank per node in turn, skipping nodes whose cores are taken
            let mut left = cores.clone();
            let mut n = 0;
            while rank_node.len() < ranks {
                if left[n] > 0 {
                    left[n] -= 1;
                    rank_node.push(n as u32);
                }
                n = (n + 1) % cores.len();
            }
        } else if ranks <= total_cores {
            for (n, &c) in cores.iter().enumerate() {
                rank_node.extend(std::iter::repeat_n(n as u32, c));
            }
            rank_node.truncate(ranks);
        } else {
            let nn = nodes.len();
            rank_node.extend((0..ranks).map(|r| (r * nn / ranks) as u32));
        }
        let mut on_node = vec![0usize; nodes.len()];
        for &n in &rank_node {
            on_node[n as usize] += 1;
        }
        for (n, node) in nodes.iter_mut().enumerate() {
            node.oversubscribed = on_node[n] > cores[n];
            node.ranks = on_node[n];
        }
        let servers = (0..scn.server.count)
            .map(|i| ServerNet {
                tx: flows.add_resource(format!("server{i}.nic.tx"), scn.server.nic_bw),
                rx: flows.add_resource(format!("server{i}.nic.rx"), scn.server.nic_bw),
                switch: match &scn.network.torus {
                    Some(t) if on_torus(scn, &scn.server.switch) => t.spread(i, scn.server.count),
                    _ => switches[&scn.server.switch],
                },
            })
            .collect();
        Ok(Platform {
            nodes,
            rank_node,
            net_bw: scn.network.bandwidth,
            routes,
            servers,
            rank_cpu: Vec::new(),
        })
    }

    /// Adds the core resources CPU sharing needs, after every other resource
    /// (so the ids of the others, and the results without sharing, stay as
    /// they were): the cores of each node that is oversubscribed or whose
    /// page-cache copy rates are below its memory bus, with its ranks bound to
    /// them round robin; on an oversubscribed node whose waiting ranks poll, a
    /// share of cores / ranks of a core per rank instead.
    pub(crate) fn add_cpus<T>(&mut self, flows: &mut FlowNet<T>) {
        let needs = |n: &Node| {
            n.oversubscribed
                || n.rates.memcpy < n.memory_bw
                || n.message_bw < n.memory_bw
                || n.cache_bw.iter().any(|&b| b < n.memory_bw)
                || n.cache_bw[1] < n.memory_read_bw
                || n.cache_bw[0] < n.memory_write_bw
        };
        if !self.nodes.iter().any(needs) {
            return;
        }
        let polled = |n: &Node| n.oversubscribed && n.waiting == WaitingRanks::Poll;
        let cores: Vec<Vec<ResourceId>> = self
            .nodes
            .iter()
            .enumerate()
            .map(|(i, n)| match needs(n) && !polled(n) {
                true => (0..n.cores)
                    .map(|c| flows.add_resource(format!("node{i}.core{c}"), 1.0))
                    .collect(),
                false => Vec::new(),
            })
            .collect();
        let mut placed = vec![0usize; self.nodes.len()];
        self.rank_cpu = (0..self.rank_node.len())
            .map(|r| {
                let ni = self.node_of(r);
                let n = &self.nodes[ni];
                let k = placed[ni];
                placed[ni] += 1;
                match polled(n) {
                    true => Some(flows.add_resource(
                        format!("node{ni}.rank{k}.share"),
                        n.cores as f64 / n.ranks as f64,
                    )),
                    false => cores[ni].get(k % n.cores).copied(),
                }
            })
            .collect();
        for r in 0..self.rank_node.len() {
            let ni = self.node_of(r);
            if polled(&self.nodes[ni]) && self.nodes[ni].sleeping == SleepingRanks::Yield {
                let share = self.rank_cpu[r].expect("a share");
                self.nodes[ni].shares.push((r, share));
            }
        }
    }

    /// World rank `rank` falls asleep in the kernel (`asleep`) or wakes at
    /// `now`, on a node whose waiting ranks poll and whose sleeping ranks
    /// yield (elsewhere nothing changes). A sleeping task is not runnable, so
    /// the ranks awake share the cores; a task woken from a sleep is placed
    /// ahead of those that kept running (Linux's EEVDF keeps a sleeper's lag
    /// and preempts on wake-up; MPICH's polling ranks yield), so a woken rank
    /// runs on a whole core until its request is done
    /// ([`Platform::request_done`]) or, with `nodes.wake_slice`, that slice
    /// has run out ([`Platform::end_slices`]), and the other ranks awake share
    /// the rest. Measured here: 4 ranks on 2 cores writing 8 MiB each to one
    /// file at once (the inode lock serialises them) take 3.1–3.4 ms, 4 × one
    /// alone's 0.7 ms, not twice that; at 32 MiB each, 31–33 ms, near the
    /// polling ranks' share.
    pub(crate) fn sleep<T>(&self, flows: &mut FlowNet<T>, rank: usize, asleep: bool, now: f64) {
        let n = &self.nodes[self.node_of(rank)];
        if n.shares.is_empty() {
            return;
        }
        {
            let mut woken = n.woken.borrow_mut();
            woken.retain(|&(r, _)| r != rank);
            match asleep {
                true => n.asleep.set(n.asleep.get() + 1),
                false => {
                    n.asleep.set(n.asleep.get() - 1);
                    woken.push((rank, now + n.wake_slice));
                }
            }
        }
        self.set_shares(flows, n);
    }

    /// Nodes whose woken ranks hold a whole core only for `nodes.wake_slice`
    /// (each needs [`Platform::end_slices`] called at [`Platform::next_slice_end`]).
    pub(crate) fn sliced_nodes(&self) -> Vec<usize> {
        (0..self.nodes.len())
            .filter(|&i| !self.nodes[i].shares.is_empty() && self.nodes[i].wake_slice.is_finite())
            .collect()
    }

    /// When the first slice of a rank woken on node `node` runs out, if one runs.
    pub(crate) fn next_slice_end(&self, node: usize) -> Option<f64> {
        let woken = self.nodes[node].woken.borrow();
        woken.iter().map(|&(_, end)| end).reduce(f64::min)
    }

    /// The ranks of node `node` whose slice ran out by `now` share the cores
    /// with the other ranks awake from here on.
    pub(crate) fn end_slices<T>(&self, flows: &mut FlowNet<T>, node: usize, now: f64) {
        let n = &self.nodes[node];
        let ended = {
            let mut woken = n.woken.borrow_mut();
            let before = woken.len();
            woken.retain(|&(_, end)| end > now);
            woken.len() < before
        };
        if ended {
            self.set_shares(flows, n);
        }
    }

    /// World rank `rank`'s request is done: if it woke from a sleep during it,
    /// it shares the cores with the other ranks awake again (see [`Platform::sleep`]).
    pub(crate) fn request_done<T>(&self, flows: &mut FlowNet<T>, rank: usize) {
        let n = &self.nodes[self.node_of(rank)];
        let was = {
            let mut woken = n.woken.borrow_mut();
            let before = woken.len();
            woken.retain(|&(r, _)| r != rank);
            woken.len() < before
        };
        if was {
            self.set_shares(flows, n);
        }
    }

    /// The shares of `n`'s ranks from who sleeps and who woke: with `w` woken
    /// of `awake` ranks on `cores` cores, a woken rank holds a core and the
    /// others min(1, (cores − w) / (awake − w)) of one, where w < cores; else
    /// every rank awake min(1, cores / awake).
    fn set_shares<T>(&self, flows: &mut FlowNet<T>, n: &Node) {
        let woken = n.woken.borrow();
        let awake = n.ranks - n.asleep.get();
        let cores = n.cores as f64;
        let fair = |ranks: usize, cores: f64| match ranks {
            0 => 1.0,
            _ => (cores / ranks as f64).min(1.0),
        };
        let (first, rest) = match woken.len() {
            w if w < n.cores => (1.0, fair(awake - w, cores - w as f64)),
            _ => (fair(awake, cores), fair(awake, cores)),
        };
        for &(r, share) in &n.shares {
            let is_woken = woken.iter().any(|&(w, _)| w == r);
            flows.set_capacity(share, if is_woken { first } else { rest });
        }
    }

    /// Where world rank `rank` runs `s` core-seconds of CPU work: `None` when
    /// its node has a core per rank (the work takes `s`), else the path of a
    /// flow of `s` core-seconds over the core it is bound to (processor sharing).
    pub(crate) fn cpu_path(&self, rank: usize) -> Option<Vec<(ResourceId, f64)>> {
        if !self.nodes[self.node_of(rank)].oversubscribed {
            return None;
        }
        let core = self.rank_cpu[rank].expect("cores on an oversubscribed node");
        Some(vec![(core, 1.0)])
    }

    /// The core (or, where waiting ranks poll, the share of the cores) world
    /// rank `rank` runs on, where its node models cores.
    pub(crate) fn core_of(&self, rank: usize) -> Option<ResourceId> {
        self.rank_cpu.get(rank).copied().flatten()
    }

    /// Path of a copy of a `len`-byte request by world rank `rank` out of its
    /// node's page cache: the memory bus, at its rate for reads
    /// (`memory_read_bw`) where the buffer fits the private cache (larger ones
    /// are written back to memory, as a write's lines), plus the rank's core
    /// at weight 1/rate (the per-core page-cache rate) where that rate is
    /// below the bus's.
    /// An `aliased` copy runs at the aliased rate instead.
    pub(crate) fn cache_read_path(
        &self,
        rank: usize,
        len: u64,
        aliased: bool,
    ) -> Vec<(ResourceId, f64)> {
        let n = &self.nodes[self.node_of(rank)];
        let bus = match len <= n.rates.private_cache {
            true => n.memory_read_bw,
            false => n.memory_bw,
        };
        self.cache_path(rank, &[(if aliased { 3 } else { 1 }, 1.0)], bus)
    }

    /// Whether page-cache copies on `node` can alias (`nodes.cache.aliased_bw`).
    pub(crate) fn aliases(&self, node: usize) -> bool {
        self.nodes[node].aliased_within > 0
    }

    /// Whether a copy on `node` whose destination lies `past` bytes past its
    /// source, modulo a page, aliases.
    pub(crate) fn aliased(&self, node: usize, past: u64) -> bool {
        past > 0 && past < self.nodes[node].aliased_within
    }

    /// Path of a copy of `len` bytes by world rank `rank` into its node's
    /// page cache, `held` of them into pages it already holds: as a read's,
    /// the core's weight the mean of 1/write rate over the new bytes and
    /// 1/rewrite rate over the held ones; an `aliased` copy, the aliased rate
    /// over all.
    pub(crate) fn cache_write_path(
        &self,
        rank: usize,
        held: u64,
        len: u64,
        aliased: bool,
    ) -> Vec<(ResourceId, f64)> {
        let n = &self.nodes[self.node_of(rank)];
        if aliased {
            return self.cache_path(rank, &[(3, 1.0)], n.memory_bw);
        }
        let held = held.min(len) as f64 / len as f64;
        if n.memory_write_bw != n.memory_bw {
            return self.new_pages_apart(rank, held);
        }
        // One rate for both: the weight of a plain write, to the bit.
        if n.cache_bw[2] == n.cache_bw[0] {
            return self.cache_path(rank, &[(0, 1.0)], n.memory_bw);
        }
        self.cache_path(rank, &[(0, 1.0 - held), (2, held)], n.memory_bw)
    }

    /// [`Platform::cache_write_path`] where new pages take the node at
    /// `memory_write_bw`: the bus at `memory_bw` / `memory_write_bw` per new
    /// byte and 1 per `held` one (a share), the core at each part's 1/rate
    /// where that rate is below the part's bus rate.
    fn new_pages_apart(&self, rank: usize, held: f64) -> Vec<(ResourceId, f64)> {
        let n = &self.nodes[self.node_of(rank)];
        let parts = [(0, 1.0 - held, n.memory_write_bw), (2, held, n.memory_bw)];
        let bus: f64 = parts
            .iter()
            .map(|&(_, share, bus)| share * n.memory_bw / bus)
            .sum();
        self.cache_path_over(rank, &parts, bus)
    }

    /// The memory bus at weight `memory_bw` / `bus` (the bus's rate for this
    /// copy) and, at the per-byte core time of `parts` (rate index, share of
    /// the bytes) where a rate is below `bus`, the rank's core; the aliased
    /// share also through what the node's aliased copies share, if modelled.
    fn cache_path(&self, rank: usize, parts: &[(usize, f64)], bus: f64) -> Vec<(ResourceId, f64)> {
        let n = &self.nodes[self.node_of(rank)];
        let parts: Vec<(usize, f64, f64)> =
            parts.iter().map(|&(i, share)| (i, share, bus)).collect();
        // (memory_bw / memory_bw is 1 to the bit: writes, and reads by default)
        self.cache_path_over(rank, &parts, n.memory_bw / bus)
    }

    /// The memory bus at `bus_weight` and, at the per-byte core time of
    /// `parts` (rate index, share of the bytes, the bus's rate for them)
    /// where a rate is below its part's bus rate, the rank's core; the aliased
    /// share also through what the node's aliased copies share, if modelled.
    fn cache_path_over(
        &self,
        rank: usize,
        parts: &[(usize, f64, f64)],
        bus_weight: f64,
    ) -> Vec<(ResourceId, f64)> {
        let n = &self.nodes[self.node_of(rank)];
        let weight: f64 = parts
            .iter()
            .filter(|&&(i, share, bus)| share > 0.0 && n.cache_bw[i] < bus)
            .map(|&(i, share, _)| share / n.cache_bw[i])
            .sum();
        let mut path = vec![(n.mem, bus_weight)];
        if let Some(together) = n.aliased_together
            && let Some(&(_, share, _)) = parts.iter().find(|&&(i, share, _)| i == 3 && share > 0.0)
        {
            path.push((together, share));
        }
        if weight > 0.0 {
            let core =
                self.rank_cpu[rank].expect("cores where the page cache is slower than the bus");
            path.push((core, weight));
        }
        path
    }

    /// CPU seconds of one system call of `access` on `node`.
    pub(crate) fn syscall(&self, node: usize, access: Access) -> f64 {
        match access {
            Access::Write => self.nodes[node].syscall,
            Access::Read => self.nodes[node].read_syscall,
        }
    }

    /// CPU seconds of one Fortran data-transfer statement on `node`.
    pub(crate) fn fortran_statement(&self, node: usize) -> f64 {
        self.nodes[node].fortran_statement
    }

    /// Node index of world rank `rank`.
    pub(crate) fn node_of(&self, rank: usize) -> usize {
        self.rank_node[rank] as usize
    }

    /// The bandwidth of `node`'s network interface, bytes per second.
    pub(crate) fn nic_bw(&self, node: usize) -> f64 {
        self.nodes[node].nic_bw
    }

    /// Number of nodes.
    pub(crate) fn node_count(&self) -> usize {
        self.nodes.len()
    }

    /// Network part of a data transfer between `node` and server `srv`, in the
    /// direction `access` says (write: node → server): one-way latency and the
    /// resources crossed (NICs, switch backplanes, links), appended to `path` with weight 1.
    pub(crate) fn to_server(
        &self,
        node: usize,
        srv: usize,
        access: Access,
        path: &mut Vec<(ResourceId, f64)>,
    ) -> f64 {
        let n = &self.nodes[node];
        let s = &self.servers[srv];
        let (r, first, last) = match access {
            Access::Write => (&self.routes[n.switch][s.switch], n.tx, s.rx),
            Access::Read => (&self.routes[s.switch][n.switch], s.tx, n.rx),
        };
        path.push((first, 1.0));
        path.extend(r.resources.iter().map(|&x| (x, 1.0)));
        path.push((last, 1.0));
        n.nic_latency + r.latency
    }

    /// Round trip of a small message from `node` to the server (metadata calls), in s.
    pub(crate) fn server_rtt(&self, node: usize) -> f64 {
        let n = &self.nodes[node];
        2.0 * (n.nic_latency + self.routes[n.switch][self.servers[0].switch].latency)
    }

    /// How many of `members` (world ranks) run on each node they are on, by node.
    fn members_by_node(&self, members: &[usize]) -> BTreeMap<usize, usize> {
        let mut on_node: BTreeMap<usize, usize> = BTreeMap::new();
        for &r in members {
            *on_node.entry(self.node_of(r)).or_default() += 1;
        }
        on_node
    }

    /// The wake-up of a message step among `members` (world ranks of a
    /// communicator) to a rank of each oversubscribed node they are on, by
    /// node (sorted): `oversubscribed_wakeup`; where waiting ranks poll, that
    /// only with more of the members on the node than cores, else
    /// `polled_wakeup`.
    pub(crate) fn wakes(&self, members: &[usize]) -> Vec<(u32, f64)> {
        self.members_by_node(members)
            .into_iter()
            .filter(|&(ni, _)| self.nodes[ni].oversubscribed)
            .map(|(ni, count)| {
                let n = &self.nodes[ni];
                let crowded = n.waiting == WaitingRanks::Idle || count > n.cores;
                (ni as u32, if crowded { n.wakeup } else { n.polled_wakeup })
            })
            .collect()
    }

    /// [`Platform::wakes`] as a step of an all-reduce of one value waits them
    /// (`nodes.allreduce_wake` of each).
    pub(crate) fn allreduce_wakes(&self, wakes: &[(u32, f64)]) -> Vec<(u32, f64)> {
        wakes
            .iter()
            .map(|&(ni, w)| (ni, w * self.nodes[ni as usize].allreduce_wake))
            .collect()
    }

    /// How much earlier than the collective's completion each of `members`
    /// (world ranks of a communicator, in its order) leaves a collective: on
    /// an oversubscribed node whose waiting ranks poll, with more of the
    /// members on it than cores, the first `cores` of them leave
    /// `release_stagger` before the others, which see the last message only
    /// at their next time slice. Empty where no member leaves early.
    pub(crate) fn release_advance(&self, members: &[usize]) -> Vec<f64> {
        let on_node = self.members_by_node(members);
        let staggered = |ni: usize| {
            let n = &self.nodes[ni];
            n.oversubscribed
                && n.waiting == WaitingRanks::Poll
                && n.release_stagger > 0.0
                && on_node[&ni] > n.cores
        };
        if !on_node.keys().any(|&ni| staggered(ni)) {
            return Vec::new();
        }
        let mut seen: BTreeMap<usize, usize> = BTreeMap::new();
        members
            .iter()
            .map(|&r| {
                let ni = self.node_of(r);
                let k = seen.entry(ni).or_default();
                *k += 1;
                match staggered(ni) && *k <= self.nodes[ni].cores {
                    true => self.nodes[ni].release_stagger,
                    false => 0.0,
                }
            })
            .collect()
    }

    /// A point-to-point message of `bytes` from world rank `src` to `dst` of a
    /// communicator with wake-ups `wakes` ([`Platform::wakes`]): (latency,
    /// path). Within a node it crosses the memory bus (and the sender's core,
    /// which moves it at `message_bw`, where the bus is faster); otherwise both
    /// NICs and the switch. A receiver on an oversubscribed node adds its
    /// wake-up to the latency, twice for a message above the node's
    /// `eager_limit` (the rendezvous: the receiver answers the request to
    /// send, then the data follows).
    pub(crate) fn p2p(
        &self,
        src: usize,
        dst: usize,
        wakes: &[(u32, f64)],
        bytes: u64,
    ) -> (f64, Vec<(ResourceId, f64)>) {
        let (a, b) = (self.node_of(src), self.node_of(dst));
        let na = &self.nodes[a];
        let (lat, path) = if a == b {
            let mut path = vec![(na.mem, 1.0)];
            if na.message_bw < na.memory_bw {
                // the sender's core moves it, at most at the node's message rate
                let core = self.rank_cpu[src].expect("cores where messages are below the bus");
                path.push((core, 1.0 / na.message_bw));
            }
            (na.nic_latency, path)
        } else {
            let nb = &self.nodes[b];
            let r = &self.routes[na.switch][nb.switch];
            let mut path = vec![(na.tx, 1.0)];
            path.extend(r.resources.iter().map(|&x| (x, 1.0)));
            path.push((nb.rx, 1.0));
            (na.nic_latency + r.latency + nb.nic_latency, path)
        };
        match wakes.binary_search_by_key(&(b as u32), |&(n, _)| n) {
            Ok(i) if bytes > self.nodes[b].eager_limit => (lat + 2.0 * wakes[i].1, path),
            Ok(i) => (lat + wakes[i].1, path),
            Err(_) => (lat, path),
        }
    }

    /// A message of a two-phase exchange from world rank `src` to `dst` of the
    /// file's communicator, with its wake-ups `wakes`:
    /// [`Platform::p2p`], and where the aggregator's node (the receiver `dst` of
    /// a write's exchange, the sender `src` of a read's) is oversubscribed and
    /// models it, through that node's derived-datatype rate (the aggregator
    /// unpacks the ranks' pieces into, or packs them from, its collective buffer).
    pub(crate) fn exchange(
        &self,
        src: usize,
        dst: usize,
        access: Access,
        wakes: &[(u32, f64)],
        bytes: u64,
    ) -> (f64, Vec<(ResourceId, f64)>) {
        let (lat, mut path) = self.p2p(src, dst, wakes, bytes);
        let (aggregator, side) = match access {
            Access::Write => (dst, 0),
            Access::Read => (src, 1),
        };
        let n = &self.nodes[self.node_of(aggregator)];
        // an aggregator's own pieces are copied, not sent
        if n.oversubscribed
            && src != dst
            && let Some(r) = n.datatype[side]
        {
            path.push((r, 1.0));
        }
        (lat, path)
    }

    /// (latency, bandwidth) of one message step among `members` (world ranks) for
    /// collective cost models: the slowest pair's figures (a step to a rank on an
    /// oversubscribed node includes its wake-up of `wakes`, [`Platform::wakes`]).
    pub(crate) fn message_params(&self, members: &[usize], wakes: &[(u32, f64)]) -> (f64, f64) {
        let first = self.node_of(members[0]);
        let one_node = members.iter().all(|&r| self.node_of(r) == first);
        let mut lat: f64 = 0.0;
        let mut bw = f64::INFINITY;
        let mut seen = vec![false; self.nodes.len()];
        for &r in members {
            let ni = self.node_of(r);
            if std::mem::replace(&mut seen[ni], true) {
                continue;
            }
            let n = &self.nodes[ni];
            if one_node {
                lat = lat.max(n.nic_latency);
                bw = bw.min(n.message_bw);
            } else {
                let worst = self.routes[n.switch]
                    .iter()
                    .map(|r| r.latency)
                    .fold(0.0, f64::max);
                lat = lat.max(2.0 * n.nic_latency + worst);
                bw = bw.min(n.nic_bw).min(self.net_bw);
            }
        }
        let wake = wakes
            .iter()
            .map(|&(_, w)| w)
            .fold(None, |a: Option<f64>, w| Some(a.map_or(w, |a| a.max(w))));
        match wake {
            Some(w) => (lat + w, bw),
            None => (lat, bw),
        }
    }

    /// Core-seconds world rank `rank` spends filling a temporary buffer of
    /// `bytes` that MPI allocates for a call: freshly mapped (and its pages
    /// faulted in) from the node's `mmap_from` on, at `compute.first_touch`;
    /// nothing below, where `malloc` reuses the memory the last call freed.
    pub(crate) fn temporary_buffer_time(&self, rank: usize, bytes: u64) -> f64 {
        let n = &self.nodes[self.node_of(rank)];
        match bytes >= n.mmap_from {
            true => bytes as f64 / n.rates.first_touch,
            false => 0.0,
        }
    }

    /// Core-seconds of `amount` of `kind` work of world rank `rank`: amount over
    /// the node's per-core rate (on an oversubscribed node the work then shares
    /// the cores, see [`Platform::cpu_path`]); a pattern over a buffer within
    /// the core's private cache at its cached rate; BTIO's error norm as a
    /// pattern check where it has no rate of its own. A benchmark kernel's rate
    /// is the part `k` (`<kernel>_all_cores`) of its own where the node's ranks
    /// take every core (MPI's waiting ranks poll, so a core with a rank stays
    /// busy), and with `b` of `c` cores taken, 1 / (1 + (1/k − 1)(b − 1)/(c − 1))
    /// of it.
    pub(crate) fn compute_time(&self, rank: usize, kind: KernelKind, amount: f64) -> f64 {
        let n = &self.nodes[self.node_of(rank)];
        let r = &n.rates;
        let cached = r.in_private_cache(amount);
        let (rate, kept) = match (kind, r.error_norm) {
            (KernelKind::Memcpy, _) => (r.memcpy, 1.0),
            (KernelKind::Fft, _) => (r.fft, r.all_cores.fft),
            (KernelKind::Signal, _) => (r.signal, r.all_cores.signal),
            (KernelKind::BtStep, _) => (r.bt, r.all_cores.bt),
            (KernelKind::Flops, _) => (r.flops, r.all_cores.flops),
            (KernelKind::ErrorNorm, Some(rate)) => (rate, r.all_cores.error_norm),
            (KernelKind::Pattern, _) => (r.pattern_fill_rate(amount), r.all_cores.pattern),
            (KernelKind::PatternCheck | KernelKind::ErrorNorm, _) if cached => {
                (r.pattern_check_cached, 1.0)
            }
            (KernelKind::PatternCheck | KernelKind::ErrorNorm, _) => (r.pattern_check, 1.0),
        };
        let time = amount.max(0.0) / rate;
        if n.cores < 2 {
            return time;
        }
        let beyond_first = (n.ranks.min(n.cores) - 1) as f64 / (n.cores - 1) as f64;
        time * (1.0 + (1.0 / kept - 1.0) * beyond_first)
    }
}
