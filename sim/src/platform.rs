//! The platform built from a scenario: where ranks run, which resources a
//! transfer crosses, and what things cost. This is the interface the full storage
//! model grows behind (page caches, HDD/RAID devices, striping over many servers,
//! locking): callers ask for a *request* `(node, file, offset, len, access)` and get
//! a latency and a path; they never look at the scenario themselves.
//!
//! ```text
//!  rank ─ node ─ NIC tx/rx ──┐                 ┌── server NIC rx/tx ── device
//!  rank ─ node ─ NIC tx/rx ──┼──── switch ─────┤   (one busy-second per second;
//!  rank ─ node ─ NIC tx/rx ──┘  (aggregate bw)  │    weight 1/read_bw or 1/write_bw)
//!        └ memory bus (intra-node messages, memcpy bandwidth)
//! ```

use rand::Rng;
use rand_pcg::Pcg64;

use crate::flow::{FlowNet, ResourceId};
use crate::scenario::{ComputeRates, Scenario};

/// Read or write.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Access {
    /// Memory to file.
    Write,
    /// File to memory.
    Read,
}

/// The kind of a compute kernel, each costed at its own rate.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Compute {
    /// Memory copy; amount in bytes, at the node's memcpy bandwidth.
    Memcpy,
    /// FFTs; amount in flops, at the node's FFT rate.
    Fft,
    /// NPB BT steps; amount in flops, at the node's BT rate.
    BtStep,
    /// Any other computation; amount in flops.
    Flops,
}

pub(crate) struct Node {
    tx: ResourceId,
    rx: ResourceId,
    mem: ResourceId,
    nic_latency: f64,
    nic_bw: f64,
    rates: ComputeRates,
    /// Ranks per core on this node, at least 1 (oversubscription slows compute).
    oversubscription: f64,
}

pub(crate) struct Platform {
    nodes: Vec<Node>,
    rank_node: Vec<u32>,
    net: ResourceId,
    net_latency: f64,
    net_bw: f64,
    srv_tx: ResourceId,
    srv_rx: ResourceId,
    device: ResourceId,
    read_w: f64,
    write_w: f64,
    read_latency: f64,
    write_latency: f64,
    jitter: f64,
}

impl Platform {
    /// Builds resources for `ranks` ranks of `scn` in `flows`. Ranks are placed by
    /// block: node after node, `cores` ranks each while cores last; beyond that,
    /// evenly in blocks over all nodes (oversubscribed).
    pub(crate) fn build<T>(scn: &Scenario, ranks: usize, flows: &mut FlowNet<T>) -> Platform {
        let mut nodes = Vec::new();
        let mut cores = Vec::new();
        for g in &scn.nodes {
            for i in 0..g.count {
                let name = format!("{}[{i}]", g.name);
                nodes.push(Node {
                    tx: flows.add_resource(format!("{name}.nic.tx"), g.nic_bw),
                    rx: flows.add_resource(format!("{name}.nic.rx"), g.nic_bw),
                    mem: flows.add_resource(format!("{name}.mem"), g.compute.memcpy),
                    nic_latency: g.nic_latency,
                    nic_bw: g.nic_bw,
                    rates: g.compute.clone(),
                    oversubscription: 1.0,
                });
                cores.push(g.cores);
            }
        }
        let total_cores: usize = cores.iter().sum();
        let mut rank_node = Vec::with_capacity(ranks);
        if ranks <= total_cores {
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
            node.oversubscription = (on_node[n] as f64 / cores[n] as f64).max(1.0);
        }
        let d = &scn.server.device;
        Platform {
            nodes,
            rank_node,
            net: flows.add_resource("switch", scn.network.bandwidth),
            net_latency: scn.network.latency,
            net_bw: scn.network.bandwidth,
            srv_tx: flows.add_resource("server.nic.tx", scn.server.nic_bw),
            srv_rx: flows.add_resource("server.nic.rx", scn.server.nic_bw),
            device: flows.add_resource("server.device", 1.0),
            read_w: 1.0 / d.read_bw,
            write_w: 1.0 / d.write_bw,
            read_latency: d.read_latency,
            write_latency: d.write_latency,
            jitter: d.latency_jitter,
        }
    }

    /// Node index of world rank `rank`.
    pub(crate) fn node_of(&self, rank: usize) -> usize {
        self.rank_node[rank] as usize
    }

    /// A data request from `node`: (latency in s, path). Latency is the client's
    /// message latency, the switch, and the device's per-request service latency
    /// (drawn with `rng` when the scenario gives a jitter).
    pub(crate) fn io_request(
        &self,
        node: usize,
        access: Access,
        rng: &mut Pcg64,
    ) -> (f64, Vec<(ResourceId, f64)>) {
        let n = &self.nodes[node];
        let (dev_lat, w, path_net) = match access {
            Access::Write => (
                self.write_latency,
                self.write_w,
                [(n.tx, 1.0), (self.net, 1.0), (self.srv_rx, 1.0)],
            ),
            Access::Read => (
                self.read_latency,
                self.read_w,
                [(self.srv_tx, 1.0), (self.net, 1.0), (n.rx, 1.0)],
            ),
        };
        let dev_lat = if self.jitter > 0.0 {
            dev_lat * (1.0 + self.jitter * rng.random_range(-1.0..1.0))
        } else {
            dev_lat
        };
        let mut path = path_net.to_vec();
        path.push((self.device, w));
        (n.nic_latency + self.net_latency + dev_lat, path)
    }

    /// Round trip of a small message from `node` to the server (metadata calls), in s.
    pub(crate) fn server_rtt(&self, node: usize) -> f64 {
        2.0 * (self.nodes[node].nic_latency + self.net_latency)
    }

    /// A point-to-point message from world rank `src` to `dst`: (latency, path).
    /// Within a node it crosses the memory bus; otherwise both NICs and the switch.
    pub(crate) fn p2p(&self, src: usize, dst: usize) -> (f64, Vec<(ResourceId, f64)>) {
        let (a, b) = (self.node_of(src), self.node_of(dst));
        let na = &self.nodes[a];
        if a == b {
            (na.nic_latency, vec![(na.mem, 1.0)])
        } else {
            let nb = &self.nodes[b];
            (
                na.nic_latency + self.net_latency + nb.nic_latency,
                vec![(na.tx, 1.0), (self.net, 1.0), (nb.rx, 1.0)],
            )
        }
    }

    /// (latency, bandwidth) of one message step among `members` (world ranks) for
    /// collective cost models: the slowest pair's figures.
    pub(crate) fn message_params(&self, members: &[usize]) -> (f64, f64) {
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
                bw = bw.min(n.rates.memcpy);
            } else {
                lat = lat.max(2.0 * n.nic_latency + self.net_latency);
                bw = bw.min(n.nic_bw).min(self.net_bw);
            }
        }
        (lat, bw)
    }

    /// Seconds world rank `rank` needs for `amount` of `kind` work: amount over the
    /// node's per-core rate, times the node's oversubscription (ranks per core, ≥ 1).
    pub(crate) fn compute_time(&self, rank: usize, kind: Compute, amount: f64) -> f64 {
        let n = &self.nodes[self.node_of(rank)];
        let rate = match kind {
            Compute::Memcpy => n.rates.memcpy,
            Compute::Fft => n.rates.fft,
            Compute::BtStep => n.rates.bt,
            Compute::Flops => n.rates.flops,
        };
        amount.max(0.0) / rate * n.oversubscription
    }
}
