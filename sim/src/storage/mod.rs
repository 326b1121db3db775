//! The file-system layer: what a rank's data requests cost on the storage system.
//!
//! **The seam.** Everything above (the MPI-IO semantics in `mpi`, and the
//! ROMIO-like collective buffering and data sieving that sit on top of it)
//! hands this layer, per rank, a list of `(file, offset, len)` requests and
//! read or write ([`io`]); plus `sync`, `close` and `delete` hooks. Below, a
//! request becomes flows over its whole path:
//!
//! ```text
//!  write: rank ─ page cache (memcpy) ┄┄ flusher ┐
//!                └─(no cache)────────────────────┴─ node NIC ─ switches/links ─ server NIC
//!                      ─ server CPU (FIFO, per request) ─ server cache (write-back) ┄┄ flusher ┐
//!                                                     └─(write-through/full)───────────────────┴─ device
//!  read:  the same backwards; cached bytes (client, then server) at memory speed
//! ```
//!
//! * **File systems** ([`fs`]): local and NFS-like map a file to its one
//!   server; parallel ones stripe it over the servers. Each object is placed on its server's device at 1/64 of the device apart
//!   (block-group style), so distinct files are far apart on a disk.
//! * **Client page cache** (Linux write-back): writes copy into the cache at
//!   the node's per-core page-cache write rate (`nodes.cache.write_bw`, by
//!   default its memcpy rate: allocating and accounting pages makes it slower
//!   than a memcpy), over the memory bus and the rank's core, so a node's
//!   copies scale with its cores and share them when oversubscribed (see
//!   [`crate::platform`]), and are dirty; a flusher daemon per node writes the oldest
//!   dirty data back while more than `dirty_background_ratio` is dirty;
//!   writers wait while `dirty_ratio` is reached; `sync` writes the file's
//!   dirty bytes back and waits; NFS also does that at close (close-to-open).
//!   Reads of cached bytes cost a copy at the per-core read rate (`read_bw`); missing ones come from the servers
//!   and stay cached (LRU). A write invalidates other nodes' clean copies.
//!   With `write_lock = "inode"` a node's writes to one file take its inode
//!   lock for the copy and the fresh pages it takes, first come first served
//!   (ext4, XFS and the NFS client hold it over a whole buffered write), so
//!   they copy one at a time; writes to different files still run together.
//! * **Server cache**: write-back (writes end in server memory while under its
//!   dirty limit; a flusher per server writes to the device) or write-through;
//!   an LRU read cache either way.
//! * **Extent locks** (Lustre LDLM / GPFS tokens, granularity
//!   `lock_granularity`): a write takes the lock units it touches. A unit held
//!   by another client is revoked: wait for the holder's write in progress,
//!   have it write back its dirty bytes in the unit, pay `lock_revoke`. Two
//!   writers of one unit therefore serialise.

use std::cell::RefCell;
use std::collections::{BTreeMap, BTreeSet};
use std::rc::Rc;

use rustc_hash::FxHashMap;

use rand::{Rng, SeedableRng};
use rand_pcg::Pcg64;

pub(crate) mod cache;
pub(crate) mod device;
pub(crate) mod fs;
mod requests;

pub(crate) use requests::{close, delete, drop_clean, io, node_flusher, server_flusher, sync};

use cache::{Cache, State};
use device::{Layout, Unit};
use fs::{FileSystemKind, Pieces};

use crate::engine::{Engine, Signal};
use crate::flow::{FlowNet, ResourceId};
use piotwin_types::Access;

use crate::platform::Platform;
use crate::scenario::{FileSystem, Scenario};

/// What the storage layer runs on, and every layer above shares: the engine
/// (time, tasks, flows), the platform (placement, paths, costs; fixed once
/// built), the storage state, and each rank's load on its node's shared
/// resources.
pub(crate) struct Machine {
    pub(crate) engine: RefCell<Engine>,
    pub(crate) platform: Rc<Platform>,
    pub(crate) storage: RefCell<Storage>,
    pub(crate) load: RefCell<Load>,
    /// Per node, the signal its slice daemon idles on ([`slice_daemon`]).
    pub(crate) slice_kicks: RefCell<Vec<Option<Signal>>>,
}

/// Per world rank: its flows over its node's shared resources (CPU work on a
/// core it shares, page-cache copies over the memory bus), summed from the
/// start by path (units moved), and the virtual time it waited for them. The
/// fast-forward reads them to carry a skipped stretch's load
/// (`Rank::ff_skip_alone`).
pub(crate) struct Load {
    pub(crate) work: Vec<Vec<(Path, f64)>>,
    pub(crate) busy: Vec<f64>,
}

impl Load {
    pub(crate) fn new(ranks: usize) -> Load {
        Load {
            work: vec![Vec::new(); ranks],
            busy: vec![0.0; ranks],
        }
    }
}

impl Machine {
    /// World rank `rank` falls asleep in the kernel (`asleep`) or wakes: its
    /// node's shares of the cores follow ([`crate::platform::Platform::sleep`]).
    pub(crate) fn sleep(&self, rank: usize, asleep: bool) {
        let mut e = self.engine.borrow_mut();
        let now = e.now();
        self.platform.sleep(&mut e.flows, rank, asleep, now);
        if !asleep
            && let Some(k) = self.slice_kicks.borrow_mut()[self.platform.node_of(rank)].take()
        {
            k.fire();
        }
    }

    /// World rank `rank`'s request is done: a rank woken during it shares the
    /// cores again ([`crate::platform::Platform::request_done`]).
    pub(crate) fn request_done(&self, rank: usize) {
        self.platform
            .request_done(&mut self.engine.borrow_mut().flows, rank);
    }
}

/// The daemon of node `node` whose woken ranks hold a whole core only for
/// `nodes.wake_slice`: at the end of each slice, the rank shares the cores
/// again ([`Platform::end_slices`]); idle while no woken rank runs.
pub(crate) async fn slice_daemon(machine: &Machine, node: usize) {
    loop {
        let k = Signal::new();
        match machine.platform.next_slice_end(node) {
            Some(end) => machine.engine.borrow_mut().fire_at(end, k.clone()),
            None => machine.slice_kicks.borrow_mut()[node] = Some(k.clone()),
        }
        k.wait().await;
        let mut e = machine.engine.borrow_mut();
        let now = e.now();
        machine.platform.end_slices(&mut e.flows, node, now);
    }
}

/// A flow path: resources and the units each carries per unit of the flow.
pub(crate) type Path = Vec<(ResourceId, f64)>;

/// `units` over `path`, a flow of world rank `rank` over its node's shared
/// resources, counted in [`Machine::load`].
pub(crate) async fn node_flow(machine: &Machine, rank: usize, path: Path, units: f64) {
    let start = {
        let mut load = machine.load.borrow_mut();
        let work = &mut load.work[rank];
        match work.iter_mut().find(|(p, _)| *p == path) {
            Some((_, u)) => *u += units,
            None => work.push((path.clone(), units)),
        }
        machine.engine.borrow().now()
    };
    let s = machine.engine.borrow_mut().send(0.0, path, units);
    s.wait().await;
    let now = machine.engine.borrow().now();
    machine.load.borrow_mut().busy[rank] += now - start;
}

/// `seconds` of CPU work of world rank `rank`: a delay where it has a core of
/// its own, else shared with its node's other ranks ([`crate::platform::Platform::cpu_path`]).
pub(crate) async fn cpu(machine: &Machine, rank: usize, seconds: f64) {
    match machine.platform.cpu_path(rank) {
        None => delay(machine, seconds).await,
        Some(path) => node_flow(machine, rank, path, seconds.max(0.0)).await,
    }
}

/// Waits `seconds` of virtual time.
pub(crate) async fn delay(machine: &Machine, seconds: f64) {
    let s = Signal::new();
    {
        let mut e = machine.engine.borrow_mut();
        let at = e.now() + seconds;
        e.fire_at(at, s.clone());
    }
    s.wait().await;
}

/// Bytes the flusher writes back per round (Linux writes back in chunks of
/// `MAX_WRITEBACK_PAGES`-like batches; 16 MiB keeps flows few and large).
pub(crate) const FLUSH_CHUNK: u64 = 16 << 20;

pub(crate) struct SrvCache {
    pub(crate) cache: Cache,
    pub(crate) mem: ResourceId,
    pub(crate) write_back: bool,
    pub(crate) kick: Option<Signal>,
}

pub(crate) struct Srv {
    pub(crate) layout: Layout,
    pub(crate) capacity: u64,
    pub(crate) cpu_free: f64,
    pub(crate) request_cpu: f64,
    pub(crate) cache: Option<SrvCache>,
}

pub(crate) struct NodeCache {
    pub(crate) cache: Cache,
    /// Set while the flusher sleeps: fire to wake it.
    pub(crate) kick: Option<Signal>,
    /// Writers waiting for dirty data to drop below the limit.
    pub(crate) throttled: Vec<Signal>,
    /// The flusher takes no new write-back before this virtual time: the
    /// fast-forward wrote back the skipped iterations' share at once
    /// ([`Storage::write_back_at_once`]).
    pub(crate) paused_until: f64,
    /// Write-back in flight: (file, fired when done).
    pub(crate) inflight: Vec<(usize, Signal)>,
    /// Memory the cache has backed: it grows into fresh memory (at the
    /// `fresh` resource's rate) only beyond this; starts at `warm`.
    pub(crate) backed: u64,
    /// Memory the node keeps backed whatever the cache gives up, bytes.
    warm: u64,
    /// Time over which freed memory beyond `warm` is handed back, seconds
    /// (infinite: kept for ever).
    release_time: f64,
    /// Freed memory being handed back: (when freed, bytes then), oldest first;
    /// each share left at `t` is `bytes · (1 − (t − freed) / release_time)`.
    freed: std::collections::VecDeque<(f64, f64)>,
    /// Time of the last [`NodeCache::release`], and what the cache held
    /// (at least `warm`) after it.
    released: (f64, u64),
    /// Free memory not backed, bytes (infinite: unlimited): fresh growth
    /// takes from it, memory handed back returns to it.
    pub(crate) unbacked: f64,
    /// The node's fresh-memory rate, where the scenario gives one.
    pub(crate) fresh: Option<ResourceId>,
    /// Core seconds a fresh byte holds the writer's core for, 1 / `fresh_bw`
    /// (0: growth into fresh memory holds no core; `fresh_stall`).
    pub(crate) fresh_core_s: f64,
    /// Largest read-ahead window, bytes (0: none).
    pub(crate) readahead: u64,
    /// Requests of this many bytes or more bypass the cache (`u64::MAX`: none).
    pub(crate) direct_from: u64,
    /// Write requests of this many bytes or more are cached in huge pages,
    /// which the `warm` floor does not serve (`u64::MAX`: not modelled).
    huge_from: u64,
    /// Bytes of the cache in huge pages.
    huge: u64,
    /// What the cache held when `huge` was last brought up to date: a shrink
    /// since takes its share of the huge pages (which pages a delete or an
    /// eviction frees is not tracked).
    bytes_seen: u64,
}

impl NodeCache {
    /// Memory the cache keeps backed whatever it gives up: what it holds in
    /// small pages, at least `warm`, plus its huge pages.
    fn floor(&self) -> u64 {
        (self.cache.bytes - self.huge).max(self.warm) + self.huge
    }

    /// Brings `huge` up to what the cache holds: a shrink since the last
    /// call took its share of huge pages.
    fn shrink_huge(&mut self) {
        let bytes = self.cache.bytes;
        if bytes < self.bytes_seen {
            self.huge = (self.huge as u128 * bytes as u128 / self.bytes_seen as u128) as u64;
        }
        self.bytes_seen = bytes;
    }

    /// The share of memory freed `age` seconds ago not yet handed back.
    fn unreleased(&self, age: f64) -> f64 {
        if age < self.release_time {
            1.0 - age / self.release_time
        } else {
            0.0
        }
    }

    /// Brings the freed memory up to `now`, before the cache changes what it
    /// holds. What changed since the last call happened then: a shrink freed
    /// memory, a growth reused freed memory, the most recently freed first
    /// (Linux allocates from the head of its free lists and puts the pages
    /// it reported at their tail). Then each freed share is handed back
    /// linearly over `release_time` (free page reporting works through the
    /// free lists at a steady pace), and `backed` is what the cache holds (in
    /// small pages at least `warm`) plus what is left.
    fn release(&mut self, now: f64) {
        self.shrink_huge();
        let floor = self.floor();
        let (then, held) = self.released;
        if floor < held {
            self.freed.push_back((then, (held - floor) as f64));
        } else {
            let mut grown = (floor - held) as f64;
            while grown > 0.0
                && let Some((at, bytes)) = self.freed.back_mut()
            {
                let share = 1.0 - (then - *at) / self.release_time;
                let left = *bytes * share;
                if left > grown {
                    *bytes -= grown / share;
                    grown = 0.0;
                } else {
                    grown -= left;
                    self.freed.pop_back();
                }
            }
        }
        let left_at = |t: f64| -> f64 {
            self.freed
                .iter()
                .map(|&(at, bytes)| bytes * self.unreleased(t - at))
                .sum()
        };
        let (before, left) = (left_at(then), left_at(now));
        // What the host took back is free again, and fresh.
        self.unbacked += before - left;
        while self
            .freed
            .front()
            .is_some_and(|&(at, _)| self.unreleased(now - at) == 0.0)
        {
            self.freed.pop_front();
        }
        self.backed = floor + left as u64;
        self.released = (now, floor);
    }
}

/// A rank's sequential reading of one file, for read-ahead (Linux's
/// `file_ra_state`): where its last read ended, and the last window fetched
/// (0 while it does not read sequentially).
#[derive(Debug, Clone, Copy)]
struct Stream {
    next: u64,
    window: u64,
}

/// A page: the read-ahead unit, and what page-cache copies alias modulo.
pub(crate) const PAGE: u64 = 4096;

/// The first read-ahead window for a request of `len` bytes, at most `max`
/// (`get_init_ra_size` in Linux's `mm/readahead.c`): four times the request
/// rounded up to a power of two where that is small, twice where it is
/// moderate, else `max`.
fn first_window(len: u64, max: u64) -> u64 {
    let n = len.div_ceil(PAGE).next_power_of_two() * PAGE;
    if n <= max / 32 {
        4 * n
    } else if n <= max / 4 {
        2 * n
    } else {
        max
    }
}

/// The window after `cur` (`get_next_ra_size`): four times a small one, else twice, at most `max`.
fn next_window(cur: u64, max: u64) -> u64 {
    if cur < max / 16 { 4 * cur } else { 2 * cur }.min(max)
}

pub(crate) struct LockUnit {
    pub(crate) holder: usize,
    pub(crate) busy: Signal,
}

/// A node's inode lock of one file: held or not, and who waits for it.
#[derive(Default)]
pub(crate) struct InodeLock {
    held: bool,
    waiting: std::collections::VecDeque<Signal>,
}

/// State of the storage system: servers, devices, caches, layouts, locks.
pub(crate) struct Storage {
    /// The namespace: each file's inode by path, and its size in bytes.
    pub(crate) names: BTreeMap<String, usize>,
    pub(crate) sizes: Vec<u64>,
    pub(crate) fs: FileSystem,
    /// What distinguishes its kind of file system.
    pub(crate) kind: fs::Kind,
    pub(crate) units: Vec<Unit>,
    pub(crate) servers: Vec<Srv>,
    pub(crate) nodes: Vec<Option<NodeCache>>,
    pub(crate) objects: FxHashMap<(usize, usize), u64>,
    pub(crate) next_obj: Vec<u64>,
    /// Per (server, file), the object ranges written to the device so far
    /// (start → end, disjoint): a later write there is an overwrite
    /// (`overwrite_bw`).
    pub(crate) on_device: FxHashMap<(usize, usize), BTreeMap<u64, u64>>,
    pub(crate) locks: FxHashMap<usize, FxHashMap<u64, LockUnit>>,
    pub(crate) cached_on: FxHashMap<usize, BTreeSet<usize>>,
    /// Per (node, file), its inode lock where buffered writes take one
    /// (`filesystem.write_lock = "inode"`): whether a write holds it, and the
    /// writes waiting for it, first come first served.
    pub(crate) inode_locks: FxHashMap<(usize, usize), InodeLock>,
    /// Close-to-open consistency: per file, write requests in all and per
    /// node, and per (node, file) the others' writes it had seen at its last open.
    writes: FxHashMap<usize, (u64, FxHashMap<usize, u64>)>,
    seen: FxHashMap<(usize, usize), u64>,
    /// Read-ahead state by (world rank, file).
    streams: FxHashMap<(usize, usize), Stream>,
    pub(crate) rng: Pcg64,
}

/// Started flows of remote requests: their signals and HDD queue entries to drop.
#[derive(Default)]
pub(crate) struct Started {
    signals: Vec<Signal>,
    queued: Vec<(usize, u64)>,
}

impl Storage {
    /// Whether a request of `len` bytes from `node` goes through its page cache:
    /// the node has one and the request is below its `direct_from`.
    pub(crate) fn caches(&self, node: usize, len: u64) -> bool {
        self.nodes[node]
            .as_ref()
            .is_some_and(|nc| len < nc.direct_from)
    }

    /// Brings the freed memory of `node`, and of every node holding `file`,
    /// up to `now` before a request changes what their caches hold (see
    /// [`NodeCache::release`]); nothing where memory stays backed for ever.
    pub(crate) fn release(&mut self, node: usize, file: usize, now: f64) {
        let holders = self.cached_on.get(&file).into_iter().flatten();
        for n in std::iter::once(&node).chain(holders) {
            if let Some(nc) = self.nodes[*n].as_mut()
                && nc.release_time.is_finite()
            {
                nc.release(now);
            }
        }
    }

    /// Counts a write request of `node` to `file`, for close-to-open consistency.
    pub(crate) fn note_write(&mut self, node: usize, file: usize) {
        let (all, by) = self.writes.entry(file).or_default();
        *all += 1;
        *by.entry(node).or_default() += 1;
    }

    /// `node` opens `file`: on a file system with close-to-open consistency
    /// (NFS: the client checks the file's attributes at open), its cached
    /// clean pages of the file go when another node wrote the file since its
    /// last open (dirty pages stay, as in Linux).
    pub(crate) fn revalidate(&mut self, node: usize, file: usize) {
        if !self.kind.flush_on_close() {
            return;
        }
        let others = self
            .writes
            .get(&file)
            .map_or(0, |(all, by)| all - by.get(&node).copied().unwrap_or(0));
        let seen = self.seen.insert((node, file), others).unwrap_or(0);
        if others > seen
            && let Some(nc) = self.nodes[node].as_mut()
        {
            nc.cache.invalidate(file, 0, u64::MAX);
        }
    }

    /// A direct write of `[a, b)` of `file` (past the page caches): every
    /// node's cached copy of it is stale.
    pub(crate) fn invalidate_everywhere(&mut self, file: usize, a: u64, b: u64) {
        if let Some(on) = self.cached_on.get(&file) {
            for &n in on {
                if let Some(nc) = self.nodes[n].as_mut() {
                    nc.cache.invalidate(file, a, b);
                }
            }
        }
    }

    /// `[a, b)` of `file` written into `node`'s page cache: other nodes' copies
    /// of the range are dropped (coherence), the range becomes dirty, clean data
    /// is evicted past capacity, and the flusher is woken past the background
    /// threshold.
    /// Caches a write of `[a, b)`, in requests of `req` bytes, dirty on `node`;
    /// returns the bytes the cache took from fresh memory (its growth beyond
    /// what it has backed). Requests of `huge_from` or more grow the cache in
    /// huge pages: beyond the memory freed recently, never into the `warm` floor.
    pub(crate) fn write_cached(
        &mut self,
        node: usize,
        file: usize,
        (a, b): (u64, u64),
        req: u64,
    ) -> u64 {
        let on = self.cached_on.entry(file).or_default();
        for &n in on.iter().filter(|&&n| n != node) {
            if let Some(nc) = self.nodes[n].as_mut() {
                nc.cache.invalidate(file, a, b);
            }
        }
        on.insert(node);
        let nc = self.nodes[node].as_mut().expect("a node with a cache");
        nc.shrink_huge();
        nc.cache.insert(file, a, b, State::Dirty);
        if req >= nc.huge_from {
            nc.huge += nc.cache.bytes - nc.bytes_seen;
        }
        nc.cache.evict();
        nc.shrink_huge();
        if nc.cache.dirty > nc.cache.background
            && let Some(k) = nc.kick.take()
        {
            k.fire();
        }
        let floor = nc.floor();
        let beyond = floor.saturating_sub(nc.backed);
        // Beyond the free memory the kernel reclaims backed pages instead.
        let fresh = if nc.unbacked.is_finite() {
            let fresh = (beyond as f64).min(nc.unbacked);
            nc.unbacked -= fresh;
            fresh as u64
        } else {
            beyond
        };
        nc.backed = nc.backed.max(floor);
        fresh
    }

    pub(crate) fn build<T>(
        scn: &Scenario,
        platform: &Platform,
        seed: u64,
        flows: &mut FlowNet<T>,
    ) -> Storage {
        let mut units = Vec::new();
        let servers = (0..scn.server.count)
            .map(|i| {
                let (layout, capacity) = device::build(
                    &scn.server.device,
                    &format!("server{i}.device"),
                    &mut units,
                    flows,
                );
                Srv {
                    layout,
                    capacity,
                    cpu_free: 0.0,
                    request_cpu: scn.server.request_cpu,
                    cache: scn.server.cache.as_ref().map(|c| SrvCache {
                        cache: Cache::new(
                            c.capacity,
                            if c.write_back { c.dirty_ratio } else { 0.0 },
                            0.0,
                        ),
                        mem: flows.add_resource(format!("server{i}.cache"), c.bandwidth),
                        write_back: c.write_back,
                        kick: None,
                    }),
                }
            })
            .collect();
        let mut nodes = Vec::new();
        for g in &scn.nodes {
            for _ in 0..g.count {
                let n = nodes.len();
                nodes.push(g.cache.as_ref().map(|c| {
                    NodeCache {
                        cache: Cache::new(c.capacity, c.dirty_ratio, c.dirty_background_ratio),
                        kick: None,
                        throttled: Vec::new(),
                        paused_until: 0.0,
                        inflight: Vec::new(),
                        backed: c.warm,
                        warm: c.warm,
                        release_time: c.release_time,
                        freed: Default::default(),
                        released: (0.0, c.warm),
                        unbacked: c.free,
                        // Only where set, so other scenarios' resource ids do not move.
                        fresh: c
                            .fresh_bw
                            .is_finite()
                            .then(|| flows.add_resource(format!("node{n}.fresh"), c.fresh_bw)),
                        fresh_core_s: match c.fresh_holds_core && c.fresh_bw.is_finite() {
                            true => 1.0 / c.fresh_bw,
                            false => 0.0,
                        },
                        readahead: c.readahead,
                        direct_from: c.direct_from,
                        huge_from: c.huge_from,
                        huge: 0,
                        bytes_seen: 0,
                    }
                }));
            }
        }
        debug_assert_eq!(nodes.len(), platform.node_count());
        Storage {
            names: BTreeMap::new(),
            sizes: Vec::new(),
            fs: scn.filesystem.clone(),
            kind: fs::kind(&scn.filesystem),
            units,
            servers,
            nodes,
            objects: FxHashMap::default(),
            next_obj: vec![0; scn.server.count],
            on_device: FxHashMap::default(),
            locks: FxHashMap::default(),
            cached_on: FxHashMap::default(),
            inode_locks: FxHashMap::default(),
            writes: FxHashMap::default(),
            seen: FxHashMap::default(),
            streams: FxHashMap::default(),
            rng: Pcg64::seed_from_u64(seed ^ 0x5EED_0F_D15C),
        }
    }

    /// Where a read of `[a, b)` of `file` (`size` bytes) by world `rank` on
    /// `node` ends fetching: `b`, or further where the rank reads the file
    /// sequentially (from where its last read ended, or from 0 as its first)
    /// and misses the page cache. The window then grows as Linux's on-demand
    /// read-ahead grows it, up to the scenario's `readahead`; it stops at the
    /// end of the file and at extent-lock units other nodes hold (their dirty
    /// data is theirs to write back). Synchronous: the reader waits for the
    /// window it reaches (Linux's asynchronous read-ahead of the next window
    /// while this one is read is not modelled). Records the read.
    fn read_ahead(
        &mut self,
        rank: usize,
        node: usize,
        file: usize,
        a: u64,
        b: u64,
        size: u64,
    ) -> u64 {
        let Some(nc) = &self.nodes[node] else {
            return b;
        };
        let prev = self.streams.get(&(rank, file)).copied();
        let sequential = prev.map_or(a == 0, |s| s.next == a);
        let mut window = prev.filter(|_| sequential).map_or(0, |s| s.window);
        let mut end = b;
        if nc.readahead > 0 && sequential && nc.cache.held(file, a, b) < b - a {
            window = match window {
                0 => first_window(b - a, nc.readahead),
                w => next_window(w, nc.readahead),
            };
            end = (a + window).min(size).max(b);
            if let (Some(g), Some(units)) = (self.fs.lock_granularity, self.locks.get(&file))
                && let Some(u) = (b / g..end.div_ceil(g))
                    .find(|u| units.get(u).is_some_and(|l| l.holder != node))
            {
                end = (u * g).clamp(b, end);
            }
        }
        self.streams
            .insert((rank, file), Stream { next: b, window });
        end
    }

    /// A skip of the fast-forward read `file` sequentially up to `next` for
    /// world `rank` (all of it cached): its read-ahead goes on from there.
    pub(crate) fn advance_stream(&mut self, rank: usize, file: usize, next: u64) {
        if let Some(s) = self.streams.get_mut(&(rank, file)) {
            s.next = next;
        }
    }

    /// World `rank` closed `file`: its read-ahead starts afresh at the next open.
    pub(crate) fn forget_stream(&mut self, rank: usize, file: usize) {
        self.streams.remove(&(rank, file));
    }

    /// Nodes with a page cache (each gets a flusher daemon).
    pub(crate) fn cached_nodes(&self) -> Vec<usize> {
        (0..self.nodes.len())
            .filter(|&n| self.nodes[n].is_some())
            .collect()
    }

    /// Servers with a write-back cache (each gets a flusher daemon).
    pub(crate) fn write_back_servers(&self) -> Vec<usize> {
        (0..self.servers.len())
            .filter(|&s| self.servers[s].cache.as_ref().is_some_and(|c| c.write_back))
            .collect()
    }

    /// Splits `[a, b)` of `file` into per-server pieces, servers ascending.
    pub(crate) fn map(&self, file: usize, a: u64, b: u64) -> BTreeMap<usize, Pieces> {
        self.kind.map(file, a, b, self.servers.len())
    }

    /// Device offset of `obj` offset of `file`'s object on server `srv`.
    fn dev_offset(&mut self, srv: usize, file: usize, obj: u64) -> u64 {
        let cap = self.servers[srv].capacity;
        let base = match self.objects.get(&(srv, file)) {
            Some(&b) => b,
            None => {
                let k = self.next_obj[srv];
                self.next_obj[srv] += 1;
                let b = (k % 64) * (cap / 64);
                self.objects.insert((srv, file), b);
                b
            }
        };
        (base + obj) % cap
    }

    /// Whether server `srv`'s device writes blocks written before at another
    /// rate than new ones (an SSD with its own `overwrite_bw`).
    pub(crate) fn overwrite_rate_differs(&self, srv: usize) -> bool {
        match self.servers[srv].layout {
            Layout::Single(u) => match &self.units[u] {
                Unit::Ssd { spec, .. } => spec.overwrite_bw != spec.write_bw,
                Unit::Hdd { .. } => false,
            },
            Layout::Raid { .. } => false,
        }
    }

    /// `pieces` (object offset, length) of a write of `file` to server `srv`'s
    /// device, split where the file wrote to the device before: (offset,
    /// length, written before), in order; all of them are on the device after.
    pub(crate) fn note_on_device(
        &mut self,
        srv: usize,
        file: usize,
        pieces: &[(u64, u64)],
    ) -> Vec<(u64, u64, bool)> {
        let written = self.on_device.entry((srv, file)).or_default();
        let mut out = Vec::with_capacity(pieces.len());
        for &(a, len) in pieces {
            let b = a + len;
            let mut x = a;
            // ranges overlapping [a, b), in order: the one starting before a, then the rest
            let first = written.range(..=a).next_back().map(|(&s, &e)| (s, e));
            let overlaps: Vec<(u64, u64)> = first
                .into_iter()
                .chain(written.range(a + 1..b).map(|(&s, &e)| (s, e)))
                .filter(|&(_, e)| e > a)
                .collect();
            for &(s, e) in &overlaps {
                if s > x {
                    out.push((x, s - x, false));
                }
                let (from, to) = (s.max(x), e.min(b));
                if to > from {
                    out.push((from, to - from, true));
                    x = to;
                }
            }
            if x < b {
                out.push((x, b - x, false));
            }
            // one range from the lowest start to the highest end of [a, b) and its overlaps,
            // joined with a neighbour that ends at a
            let lo = overlaps.first().map_or(a, |o| o.0.min(a));
            let hi = overlaps.last().map_or(b, |o| o.1.max(b));
            for (s, _) in &overlaps {
                written.remove(s);
            }
            let lo = match written.range(..lo).next_back() {
                Some((&s, &e)) if e == lo => {
                    written.remove(&s);
                    s
                }
                _ => lo,
            };
            let hi = match written.get(&hi) {
                Some(&e) => {
                    written.remove(&hi);
                    e
                }
                None => hi,
            };
            written.insert(lo, hi);
        }
        out
    }

    /// Device part of a request at server `srv`: (delay, busy-seconds entries, HDD queue entries).
    fn device(
        &mut self,
        now: f64,
        srv: usize,
        file: usize,
        pieces: &[(u64, u64)],
        access: Access,
        started: &mut Started,
    ) -> (f64, Vec<(ResourceId, f64)>) {
        let pieces = match access {
            Access::Write if self.overwrite_rate_differs(srv) => {
                self.note_on_device(srv, file, pieces)
            }
            _ => pieces.iter().map(|&(obj, len)| (obj, len, false)).collect(),
        };
        let exts: Vec<(u64, u64, bool)> = pieces
            .iter()
            .map(|&(obj, len, before)| (self.dev_offset(srv, file, obj), len, before))
            .collect();
        let Storage {
            units,
            servers,
            rng,
            ..
        } = self;
        let p = device::plan(units, &servers[srv].layout, now, &exts, access);
        started.queued.extend(p.queued);
        let jitter = match servers[srv].layout {
            Layout::Single(u) => units[u].jitter(),
            Layout::Raid { ref members, .. } => units[members[0]].jitter(),
        };
        let delay = if jitter > 0.0 {
            p.delay * (1.0 + jitter * rng.random_range(-1.0..1.0))
        } else {
            p.delay
        };
        (delay, p.busy)
    }

    /// Starts the remote part of requests `list` = (file, start, end) from `node`.
    pub(crate) fn start_remote(
        &mut self,
        platform: &Platform,
        e: &mut Engine,
        node: usize,
        access: Access,
        list: &[(usize, u64, u64)],
    ) -> Started {
        let mut st = Started::default();
        let now = e.now();
        // The list's pieces by (server, file), in list order within each: one
        // request per list entry and server, carried as one flow per (server,
        // file) like a client's stream of RPCs to one target, so a write-back
        // of many extents does not become as many concurrent flows.
        let mut batches: BTreeMap<(usize, usize), (Pieces, u64)> = BTreeMap::new();
        for &(file, a, b) in list {
            if a >= b {
                continue;
            }
            for (srv, pieces) in self.map(file, a, b) {
                let batch = batches.entry((srv, file)).or_default();
                batch.0.extend(pieces);
                batch.1 += 1;
            }
        }
        for ((srv, file), (pieces, requests)) in batches {
            {
                let mut net = Vec::new();
                let lat = platform.to_server(node, srv, access, &mut net);
                let s = &mut self.servers[srv];
                // the server's CPU takes the requests one after the other; data
                // moves once the first is handled
                let begin = (now + lat).max(s.cpu_free);
                s.cpu_free = begin + requests as f64 * s.request_cpu;
                let lat = begin + s.request_cpu - now;
                let bytes: u64 = pieces.iter().map(|p| p.2).sum();
                // (file offsets served from the server cache, pieces that need the device)
                let (hit, dev): (u64, Vec<(u64, u64)>) = match (&mut s.cache, access) {
                    (Some(c), Access::Write) => {
                        let fits = c.write_back && c.cache.dirty + bytes <= c.cache.dirty_limit;
                        for &(fo, _, len) in &pieces {
                            c.cache.insert(
                                file,
                                fo,
                                fo + len,
                                if fits { State::Dirty } else { State::Clean },
                            );
                        }
                        c.cache.evict();
                        if fits {
                            if c.cache.dirty > 0
                                && let Some(k) = c.kick.take()
                            {
                                k.fire();
                            }
                            (bytes, Vec::new())
                        } else {
                            (0, pieces.iter().map(|p| (p.1, p.2)).collect())
                        }
                    }
                    (Some(c), Access::Read) => {
                        let mut hit = 0;
                        let mut dev = Vec::new();
                        for &(fo, obj, len) in &pieces {
                            let (h, m) = c.cache.lookup(file, fo, fo + len);
                            hit += h.iter().map(|r| r.1 - r.0).sum::<u64>();
                            for (x, y) in m {
                                dev.push((obj + (x - fo), y - x));
                                c.cache.insert(file, x, y, State::Clean);
                            }
                        }
                        c.cache.evict();
                        (hit, dev)
                    }
                    (None, _) => (0, pieces.iter().map(|p| (p.1, p.2)).collect()),
                };
                if hit > 0 {
                    let mem = self.servers[srv]
                        .cache
                        .as_ref()
                        .expect("hit in a cache")
                        .mem;
                    let mut path = net.clone();
                    path.push((mem, 1.0));
                    st.signals.push(e.send(lat, path, hit as f64));
                }
                if !dev.is_empty() {
                    let dbytes: u64 = dev.iter().map(|p| p.1).sum();
                    let (delay, busy) = self.device(now, srv, file, &dev, access, &mut st);
                    let mut path = net;
                    path.extend(busy.into_iter().map(|(r, secs)| (r, secs / dbytes as f64)));
                    st.signals.push(e.send(lat + delay, path, dbytes as f64));
                }
            }
        }
        st
    }

    /// The inode of `path`, if it exists.
    pub(crate) fn lookup(&self, path: &str) -> Option<usize> {
        self.names.get(path).copied()
    }

    /// Creates `path` (empty); returns its inode.
    pub(crate) fn create(&mut self, path: &str) -> usize {
        self.sizes.push(0);
        let inode = self.sizes.len() - 1;
        self.names.insert(path.to_string(), inode);
        inode
    }

    /// Removes `path` from the namespace; returns its inode if it existed.
    pub(crate) fn unlink(&mut self, path: &str) -> Option<usize> {
        self.names.remove(path)
    }

    /// The size of file `inode` in bytes.
    pub(crate) fn size(&self, inode: usize) -> u64 {
        self.sizes[inode]
    }

    /// File `inode` grows to at least `end` bytes.
    pub(crate) fn grow(&mut self, inode: usize, end: u64) {
        let size = &mut self.sizes[inode];
        *size = (*size).max(end);
    }

    /// Bookkeeping once started remote requests completed.
    pub(crate) fn finish_remote(&mut self, queued: &[(usize, u64)]) {
        for &(u, end) in queued {
            self.units[u].complete(end);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn node(warm: u64, release_time: f64) -> NodeCache {
        NodeCache {
            cache: Cache::new(1 << 40, 0.2, 0.1),
            kick: None,
            throttled: Vec::new(),
            paused_until: 0.0,
            inflight: Vec::new(),
            backed: warm,
            warm,
            release_time,
            freed: Default::default(),
            released: (0.0, warm),
            unbacked: f64::INFINITY,
            fresh: None,
            fresh_core_s: 0.0,
            readahead: 0,
            direct_from: u64::MAX,
            huge_from: u64::MAX,
            huge: 0,
            bytes_seen: 0,
        }
    }

    /// By hand, release time 10 s, warm 100: 1000 bytes held and freed at
    /// t = 0. At t = 4 a file of 300 grows the cache by 200 into the 600 still
    /// backed (of 1000 then: 200 / 0.6 of it), and is freed. At t = 5,
    /// (1000 − 200 / 0.6) · 0.5 = 333.3 of the first and 200 · 0.9 = 180 of
    /// the second are left. A growth of 400 takes the newest first: the 180,
    /// then 220 of the 333.3; at t = 7 the first's 113.3 left at t = 5 have
    /// shrunk to 113.3 · 3/5 = 68.
    #[test]
    fn freed_memory_is_handed_back_linearly_and_reused_newest_first() {
        let mut nc = node(100, 10.0);
        let hold = |nc: &mut NodeCache, t: f64, bytes: u64, file: usize| {
            nc.release(t);
            nc.cache.insert(file, 0, bytes, State::Clean);
        };
        let free = |nc: &mut NodeCache, t: f64, file: usize| {
            nc.release(t);
            nc.cache.remove_file(file);
        };
        hold(&mut nc, 0.0, 1100, 1);
        free(&mut nc, 0.0, 1);
        hold(&mut nc, 4.0, 300, 2);
        free(&mut nc, 4.0, 2);
        nc.release(5.0);
        assert_eq!(nc.backed, 100 + 513);
        hold(&mut nc, 5.0, 500, 3);
        nc.release(5.0);
        assert_eq!(nc.backed, 500 + 113);
        nc.release(7.0);
        assert_eq!(nc.backed, 500 + 68);
        // Gone after the release time.
        nc.release(20.0);
        assert_eq!((nc.backed, nc.freed.len()), (500, 0));
    }
}
