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

/// Bytes the flusher writes back per round (Linux writes back in chunks of
/// `MAX_WRITEBACK_PAGES`-like batches; 16 MiB keeps flows few and large).
pub(crate) const FLUSH_CHUNK: u64 = 16 << 20;

struct SrvCache {
    cache: Cache,
    mem: ResourceId,
    write_back: bool,
    kick: Option<Signal>,
}

struct Srv {
    layout: Layout,
    capacity: u64,
    cpu_free: f64,
    request_cpu: f64,
    cache: Option<SrvCache>,
}

struct NodeCache {
    cache: Cache,
    /// Set while the flusher sleeps: fire to wake it.
    kick: Option<Signal>,
    /// Writers waiting for dirty data to drop below the limit.
    throttled: Vec<Signal>,
    /// The flusher takes no new write-back before this virtual time: the
    /// fast-forward wrote back the skipped iterations' share at once
    /// ([`Storage::write_back_at_once`]).
    paused_until: f64,
    /// Write-back in flight: (file, fired when done).
    inflight: Vec<(usize, Signal)>,
    /// Memory the cache has backed: it grows into fresh memory (at the
    /// `fresh` resource's rate) only beyond this; starts at `warm`.
    backed: u64,
    /// The node's fresh-memory rate, where the scenario gives one.
    fresh: Option<ResourceId>,
    /// Largest read-ahead window, bytes (0: none).
    readahead: u64,
}

/// A rank's sequential reading of one file, for read-ahead (Linux's
/// `file_ra_state`): where its last read ended, and the last window fetched
/// (0 while it does not read sequentially).
#[derive(Debug, Clone, Copy)]
struct Stream {
    next: u64,
    window: u64,
}

/// Linux's read-ahead page.
const PAGE: u64 = 4096;

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

struct LockUnit {
    holder: usize,
    busy: Signal,
}

/// State of the storage system: servers, devices, caches, layouts, locks.
pub(crate) struct Storage {
    /// The namespace: each file's inode by path, and its size in bytes.
    names: BTreeMap<String, usize>,
    sizes: Vec<u64>,
    fs: FileSystem,
    /// What distinguishes its kind of file system.
    kind: Box<dyn FileSystemKind>,
    units: Vec<Unit>,
    servers: Vec<Srv>,
    nodes: Vec<Option<NodeCache>>,
    objects: FxHashMap<(usize, usize), u64>,
    next_obj: Vec<u64>,
    locks: FxHashMap<usize, FxHashMap<u64, LockUnit>>,
    cached_on: FxHashMap<usize, BTreeSet<usize>>,
    /// Read-ahead state by (world rank, file).
    streams: FxHashMap<(usize, usize), Stream>,
    rng: Pcg64,
    /// The servers' part of the last [`Storage::levels`]: shared by the
    /// observations that see it unchanged (every rank observes every
    /// iteration, and the fast-forward keeps up to 513 observations a rank).
    server_levels: Rc<[Level]>,
}

/// A cache quantity and its two thresholds, bytes (see [`Storage::levels`]).
pub(crate) type Level = (u64, [u64; 2]);

/// [`Storage::levels`] seen from one node: the node's own, then the servers'
/// (shared between observations while unchanged).
#[derive(Debug, Clone)]
pub(crate) struct Levels {
    node: [Level; 3],
    node_len: u8,
    servers: Rc<[Level]>,
}

impl Levels {
    pub(crate) fn len(&self) -> usize {
        usize::from(self.node_len) + self.servers.len()
    }

    /// The node page cache's dirty + writeback level, where it has one.
    pub(crate) fn node_dirty(&self) -> Option<Level> {
        (self.node_len > 0).then_some(self.node[0])
    }

    pub(crate) fn iter(&self) -> impl Iterator<Item = &Level> {
        self.node[..usize::from(self.node_len)]
            .iter()
            .chain(self.servers.iter())
    }
}

/// Started flows of remote requests: their signals and HDD queue entries to drop.
#[derive(Default)]
pub(crate) struct Started {
    signals: Vec<Signal>,
    queued: Vec<(usize, u64)>,
}

impl Storage {
    /// `[a, b)` of `file` written into `node`'s page cache: other nodes' copies
    /// of the range are dropped (coherence), the range becomes dirty, clean data
    /// is evicted past capacity, and the flusher is woken past the background
    /// threshold.
    /// Caches a write of `[a, b)` dirty on `node`; returns the bytes the cache
    /// took from fresh memory (its growth beyond what it has backed).
    fn write_cached(&mut self, node: usize, file: usize, a: u64, b: u64) -> u64 {
        let on = self.cached_on.entry(file).or_default();
        for &n in on.iter().filter(|&&n| n != node) {
            if let Some(nc) = self.nodes[n].as_mut() {
                nc.cache.invalidate(file, a, b);
            }
        }
        on.insert(node);
        let nc = self.nodes[node].as_mut().expect("a node with a cache");
        nc.cache.insert(file, a, b, State::Dirty);
        nc.cache.evict();
        if nc.cache.dirty > nc.cache.background
            && let Some(k) = nc.kick.take()
        {
            k.fire();
        }
        let fresh = nc.cache.bytes.saturating_sub(nc.backed);
        nc.backed = nc.backed.max(nc.cache.bytes);
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
                        // Only where set, so other scenarios' resource ids do not move.
                        fresh: c
                            .fresh_bw
                            .is_finite()
                            .then(|| flows.add_resource(format!("node{n}.fresh"), c.fresh_bw)),
                        readahead: c.readahead,
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
            locks: FxHashMap::default(),
            cached_on: FxHashMap::default(),
            streams: FxHashMap::default(),
            rng: Pcg64::seed_from_u64(seed ^ 0x5EED_0F_D15C),
            server_levels: Rc::from([]),
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
    fn map(&self, file: usize, a: u64, b: u64) -> BTreeMap<usize, Pieces> {
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
        let exts: Vec<(u64, u64)> = pieces
            .iter()
            .map(|&(obj, len)| (self.dev_offset(srv, file, obj), len))
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

async fn wait_started(machine: &Machine, st: Started) {
    for s in &st.signals {
        s.wait().await;
    }
    machine.storage.borrow_mut().finish_remote(&st.queued);
}

async fn transfer(machine: &Machine, latency: f64, path: Vec<(ResourceId, f64)>, bytes: u64) {
    let s = machine
        .engine
        .borrow_mut()
        .send(latency, path, bytes as f64);
    s.wait().await;
}

/// Writes back `list` (marked as writeback in `node`'s cache) and marks it clean.
async fn write_back(machine: &Machine, node: usize, list: Vec<(usize, u64, u64)>) {
    if list.is_empty() {
        return;
    }
    let done = Signal::new();
    let st = {
        let mut m = machine.storage.borrow_mut();
        let nc = m.nodes[node].as_mut().expect("a cached node");
        for &(f, _, _) in &list {
            nc.inflight.push((f, done.clone()));
        }
        let mut e = machine.engine.borrow_mut();
        m.start_remote(&machine.platform, &mut e, node, Access::Write, &list)
    };
    wait_started(machine, st).await;
    let mut m = machine.storage.borrow_mut();
    let nc = m.nodes[node].as_mut().expect("a cached node");
    for &(f, a, b) in &list {
        nc.cache.set_state(f, a, b, State::Writeback, State::Clean);
    }
    nc.cache.evict();
    nc.inflight.retain(|(_, s)| !s.same(&done));
    done.fire();
    if nc.cache.dirty + nc.cache.writeback < nc.cache.dirty_limit {
        for s in nc.throttled.drain(..) {
            s.fire();
        }
    }
}

/// The write-back daemon of `node`'s page cache: while more than the
/// background threshold is dirty, writes back the oldest dirty data.
pub(crate) async fn node_flusher(machine: &Machine, node: usize) {
    loop {
        let job = {
            let mut m = machine.storage.borrow_mut();
            let nc = m.nodes[node].as_mut().expect("a cached node");
            if nc.cache.dirty > nc.cache.background {
                if machine.engine.borrow().now() < nc.paused_until {
                    // held by a fast-forward skip ([`Storage::write_back_at_once`])
                    let k = Signal::new();
                    machine
                        .engine
                        .borrow_mut()
                        .fire_at(nc.paused_until, k.clone());
                    Err(k)
                } else {
                    Ok(nc.cache.take_dirty(None, FLUSH_CHUNK))
                }
            } else {
                let k = Signal::new();
                nc.kick = Some(k.clone());
                Err(k)
            }
        };
        match job {
            Ok(list) => write_back(machine, node, list).await,
            Err(k) => k.wait().await,
        }
    }
}

/// The write-back daemon of server `srv`'s cache: writes dirty data to the device.
pub(crate) async fn server_flusher(machine: &Machine, srv: usize) {
    loop {
        let job = {
            let mut m = machine.storage.borrow_mut();
            let c = m.servers[srv].cache.as_mut().expect("a cached server");
            if c.cache.dirty > 0 {
                Ok(c.cache.take_dirty(None, FLUSH_CHUNK))
            } else {
                let k = Signal::new();
                c.kick = Some(k.clone());
                Err(k)
            }
        };
        match job {
            Ok(list) => server_write_back(machine, srv, list).await,
            Err(k) => k.wait().await,
        }
    }
}

/// Writes `list` (file ranges marked writeback in `srv`'s cache) to its device.
async fn server_write_back(machine: &Machine, srv: usize, list: Vec<(usize, u64, u64)>) {
    let mut st = Started::default();
    {
        let mut m = machine.storage.borrow_mut();
        let s = &mut *m;
        let mut e = machine.engine.borrow_mut();
        let now = e.now();
        for &(file, a, b) in &list {
            let pieces: Vec<(u64, u64)> = s
                .map(file, a, b)
                .remove(&srv)
                .unwrap_or_default()
                .iter()
                .map(|p| (p.1, p.2))
                .collect();
            let bytes: u64 = pieces.iter().map(|p| p.1).sum();
            if bytes == 0 {
                continue;
            }
            let (delay, busy) = s.device(now, srv, file, &pieces, Access::Write, &mut st);
            let path = busy
                .into_iter()
                .map(|(r, secs)| (r, secs / bytes as f64))
                .collect();
            st.signals.push(e.send(delay, path, bytes as f64));
        }
    }
    wait_started(machine, st).await;
    let mut m = machine.storage.borrow_mut();
    let c = m.servers[srv].cache.as_mut().expect("a cached server");
    for &(f, a, b) in &list {
        c.cache.set_state(f, a, b, State::Writeback, State::Clean);
    }
    c.cache.evict();
}

/// Takes the extent locks of `[a, b)` of `file` for `node` (writes), or only
/// makes other holders write back their dirty bytes there (reads). Returns the
/// signal to fire when this access is done (it keeps the units busy until then).
async fn lock(
    machine: &Machine,
    node: usize,
    file: usize,
    a: u64,
    b: u64,
    access: Access,
) -> Option<Signal> {
    let (g, revoke) = {
        let m = machine.storage.borrow();
        (m.fs.lock_granularity?, m.fs.lock_revoke)
    };
    let mine = Signal::new();
    for u in a / g..b.div_ceil(g) {
        let other = {
            let mut m = machine.storage.borrow_mut();
            let units = m.locks.entry(file).or_default();
            match units.get_mut(&u) {
                Some(l) if l.holder != node => Some((l.holder, l.busy.clone())),
                Some(l) => {
                    if access == Access::Write {
                        l.busy = mine.clone();
                    }
                    None
                }
                None => {
                    if access == Access::Write {
                        units.insert(
                            u,
                            LockUnit {
                                holder: node,
                                busy: mine.clone(),
                            },
                        );
                    }
                    None
                }
            }
        };
        let Some((holder, busy)) = other else {
            continue;
        };
        busy.wait().await;
        flush(machine, holder, file, u * g, (u + 1) * g).await;
        let t = machine.engine.borrow().now() + revoke;
        let s = Signal::new();
        machine.engine.borrow_mut().fire_at(t, s.clone());
        s.wait().await;
        if access == Access::Write {
            let mut m = machine.storage.borrow_mut();
            let units = m.locks.entry(file).or_default();
            units.insert(
                u,
                LockUnit {
                    holder: node,
                    busy: mine.clone(),
                },
            );
        }
    }
    Some(mine)
}

/// Writes back `node`'s dirty bytes of `[a, b)` of `file` and waits for write-back in flight of it.
pub(crate) async fn flush(machine: &Machine, node: usize, file: usize, a: u64, b: u64) {
    let (list, inflight) = {
        let mut m = machine.storage.borrow_mut();
        match m.nodes[node].as_mut() {
            None => return,
            Some(nc) => (
                nc.cache.take_dirty(Some((file, a, b)), u64::MAX),
                nc.inflight
                    .iter()
                    .filter(|(f, _)| *f == file)
                    .map(|(_, s)| s.clone())
                    .collect::<Vec<_>>(),
            ),
        }
    };
    write_back(machine, node, list).await;
    for s in inflight {
        s.wait().await;
    }
}

/// World rank `rank`'s data requests `reqs` = (file, offset, len) from its
/// `node`, all of one `access`, done one after the other. This is the file-system layer's seam:
/// MPI-IO middleware (two-phase I/O, data sieving) calls it with the requests
/// it decided on. Returns when every byte is where the file system puts it
/// (a page cache, a server cache or a device).
pub(crate) async fn io(
    machine: &Machine,
    rank: usize,
    node: usize,
    access: Access,
    reqs: &[(usize, u64, u64)],
) {
    for &(file, off, len) in reqs {
        if len == 0 {
            continue;
        }
        let (a, b) = (off, off + len);
        let held = lock(machine, node, file, a, b, access).await;
        let cached = machine.storage.borrow().nodes[node].is_some();
        match (access, cached) {
            (Access::Write, true) => loop {
                let wait = {
                    let mut m = machine.storage.borrow_mut();
                    let nc = m.nodes[node].as_mut().expect("cached");
                    if nc.cache.dirty + nc.cache.writeback + len > nc.cache.dirty_limit
                        && nc.cache.dirty + nc.cache.writeback > 0
                    {
                        let s = Signal::new();
                        nc.throttled.push(s.clone());
                        if let Some(k) = nc.kick.take() {
                            k.fire();
                        }
                        Some(s)
                    } else {
                        None
                    }
                };
                match wait {
                    Some(s) => s.wait().await,
                    None => break,
                }
            },
            _ => {}
        }
        match (access, cached) {
            (Access::Write, true) => {
                let path = machine.platform.cache_copy_path(rank, access);
                transfer(machine, 0.0, path, len).await;
                let (fresh, res) = {
                    let mut m = machine.storage.borrow_mut();
                    let fresh = m.write_cached(node, file, a, b);
                    (fresh, m.nodes[node].as_ref().and_then(|nc| nc.fresh))
                };
                if let Some(res) = res.filter(|_| fresh > 0) {
                    transfer(machine, 0.0, vec![(res, 1.0)], fresh).await;
                }
            }
            (Access::Read, true) => {
                let (hits, misses, path) = {
                    let mut m = machine.storage.borrow_mut();
                    let path = machine.platform.cache_copy_path(rank, access);
                    let size = m.size(file);
                    let end = m.read_ahead(rank, node, file, a, b, size);
                    let nc = m.nodes[node].as_mut().expect("cached");
                    let (h, mi) = nc.cache.lookup(file, a, end);
                    (h, mi, path)
                };
                // the request's cached bytes are copied out; the read-ahead's stay
                let hit: u64 = hits.iter().map(|r| r.1.min(b).saturating_sub(r.0)).sum();
                let list: Vec<(usize, u64, u64)> =
                    misses.iter().map(|&(x, y)| (file, x, y)).collect();
                let st = {
                    let mut m = machine.storage.borrow_mut();
                    let mut e = machine.engine.borrow_mut();
                    m.start_remote(&machine.platform, &mut e, node, access, &list)
                };
                if hit > 0 {
                    node_flow(machine, rank, path, hit as f64).await;
                }
                wait_started(machine, st).await;
                let mut m = machine.storage.borrow_mut();
                m.cached_on.entry(file).or_default().insert(node);
                let nc = m.nodes[node].as_mut().expect("cached");
                for (x, y) in misses {
                    nc.cache.insert(file, x, y, State::Clean);
                }
                nc.cache.evict();
            }
            (_, false) => {
                let st = {
                    let mut m = machine.storage.borrow_mut();
                    let mut e = machine.engine.borrow_mut();
                    m.start_remote(&machine.platform, &mut e, node, access, &[(file, a, b)])
                };
                wait_started(machine, st).await;
            }
        }
        if let Some(s) = held {
            s.fire();
        }
    }
}

/// `fsync`: `node` writes back its dirty bytes of `file`; servers with a
/// write-back cache write theirs to their devices (NFS COMMIT, OST sync).
pub(crate) async fn sync(machine: &Machine, node: usize, file: usize) {
    flush(machine, node, file, 0, u64::MAX).await;
    let jobs: Vec<(usize, Vec<(usize, u64, u64)>)> = {
        let mut m = machine.storage.borrow_mut();
        m.servers
            .iter_mut()
            .enumerate()
            .filter_map(|(i, s)| {
                let c = s.cache.as_mut()?;
                let l = c.cache.take_dirty(Some((file, 0, u64::MAX)), u64::MAX);
                (!l.is_empty()).then_some((i, l))
            })
            .collect()
    };
    for (srv, list) in jobs {
        server_write_back(machine, srv, list).await;
    }
}

/// What `close` costs beyond metadata: NFS clients write back the file's dirty data.
pub(crate) async fn close(machine: &Machine, node: usize, file: usize) {
    let flush = machine.storage.borrow().kind.flush_on_close();
    if flush {
        sync(machine, node, file).await;
    }
}

/// `posix_fadvise(POSIX_FADV_DONTNEED)` on `file` from `node`: its clean pages
/// leave the node's page cache (dirty and under-write-back pages stay, as in
/// Linux; callers sync first). Server caches are out of a client's reach.
pub(crate) fn drop_clean(s: &mut Storage, node: usize, file: usize) {
    if let Some(nc) = s.nodes[node].as_mut() {
        nc.cache.invalidate(file, 0, u64::MAX);
    }
}

/// Forgets a deleted file in every cache and lock table.
pub(crate) fn delete(s: &mut Storage, file: usize) {
    for nc in s.nodes.iter_mut().flatten() {
        nc.cache.remove_file(file);
    }
    for sv in &mut s.servers {
        if let Some(c) = &mut sv.cache {
            c.cache.remove_file(file);
        }
    }
    s.locks.remove(&file);
    s.cached_on.remove(&file);
    s.streams.retain(|&(_, f), _| f != file);
}

/// How a read of a range would be served, for the fast-forward's regime check
/// ([`Storage::read_class`]).
pub(crate) const CLASS_NODE_HIT: u8 = 0;
/// Missing in the node's page cache (or no page cache), all in the servers' caches.
pub(crate) const CLASS_SERVER_HIT: u8 = 1;
/// Missing in both: the devices serve it.
pub(crate) const CLASS_DEVICE: u8 = 2;
/// Partly cached: a regime boundary lies inside.
pub(crate) const CLASS_MIXED: u8 = 3;

impl Storage {
    /// Where a write of `len` bytes from `node` lands: its page cache, else
    /// the servers' write-back caches while every one has room under its dirty
    /// limit (at the limit, writes go through to the devices as the flushers
    /// free room), else the devices.
    pub(crate) fn write_class(&self, node: usize, len: u64) -> u8 {
        if self.nodes[node].is_some() {
            return CLASS_NODE_HIT;
        }
        let room = |s: &Srv| {
            s.cache
                .as_ref()
                .is_some_and(|c| c.write_back && c.cache.dirty + len <= c.cache.dirty_limit)
        };
        if self.servers.iter().all(room) {
            CLASS_SERVER_HIT
        } else {
            CLASS_DEVICE
        }
    }

    /// Where a read of `[a, b)` of `file` from `node` would be served, looked up
    /// without changing any state: one of the `CLASS_*` values.
    pub(crate) fn read_class(&self, node: usize, file: usize, a: u64, b: u64) -> u8 {
        let len = b - a;
        if let Some(nc) = &self.nodes[node] {
            match nc.cache.held(file, a, b) {
                h if h == len => return CLASS_NODE_HIT,
                0 => {}
                _ => return CLASS_MIXED,
            }
        }
        // Every server has a cache or none does (one `[server.cache]` for all),
        // and a server's cache only ever holds file offsets of its own stripes
        // (inserts go through `map`), so the bytes of `[a, b)` held by the
        // servers are the sum of what each cache holds of the whole range: no
        // need to cut the range into stripes (a skip's range spans gigabytes).
        let mut server_hit = 0;
        for s in &self.servers {
            match &s.cache {
                Some(c) => server_hit += c.cache.held(file, a, b),
                None => return CLASS_DEVICE,
            }
        }
        match server_hit {
            0 => CLASS_DEVICE,
            h if h == len => CLASS_SERVER_HIT,
            _ => CLASS_MIXED,
        }
    }

    /// For the fast-forward: the most it costs a read and a write, in s, that
    /// a sequential stream of device requests reaches another disk head (the
    /// next RAID stripe unit, a stripe on another server; see
    /// [`device::positioning`]); `None` where a stream never does (SSDs; one
    /// disk per server and each file on one server). Every server has the same device.
    pub(crate) fn crossing(&self) -> Option<[f64; 2]> {
        let (raid, cost) = device::positioning(&self.units, &self.servers[0].layout)?;
        (raid || self.kind.stripes_across_servers()).then_some(cost)
    }

    /// The extent-lock unit in bytes, if the file system locks.
    pub(crate) fn lock_granularity(&self) -> Option<u64> {
        self.fs.lock_granularity
    }

    /// Bytes put in `node`'s page cache so far (0 without one).
    pub(crate) fn inserted(&self, node: usize) -> u64 {
        self.nodes[node].as_ref().map_or(0, |nc| nc.cache.inserted)
    }

    /// [`Cache::room_before_evicting`] of `node`'s page cache (0 without one).
    pub(crate) fn room_before_evicting(
        &self,
        node: usize,
        file: usize,
        a: u64,
        b: u64,
        enough: u64,
    ) -> u64 {
        self.nodes[node]
            .as_ref()
            .map_or(0, |nc| nc.cache.room_before_evicting(file, a, b, enough))
    }

    /// True while `node`'s page cache writes back (its flusher is above the
    /// background threshold, or a write-back is in flight).
    pub(crate) fn writing_back(&self, node: usize) -> bool {
        self.nodes[node]
            .as_ref()
            .is_some_and(|nc| nc.cache.dirty > nc.cache.background || nc.cache.writeback > 0)
    }

    /// The cache quantities whose thresholds change the storage regime, as seen
    /// from `node`: `(level, thresholds)` in bytes: the node's dirty + writeback
    /// bytes (background and dirty limits) and held bytes (capacity); each
    /// server cache's dirty bytes (its dirty limit) and held bytes (capacity).
    pub(crate) fn levels(&mut self, node: usize) -> Levels {
        let mut levels = Levels {
            node: [(0, [0, 0]); 3],
            node_len: 0,
            servers: Rc::clone(&self.server_levels),
        };
        if let Some(nc) = &self.nodes[node] {
            let c = &nc.cache;
            levels.node[0] = (c.dirty + c.writeback, [c.background, c.dirty_limit]);
            levels.node[1] = (c.bytes, [c.capacity, c.capacity]);
            levels.node_len = 2;
            if nc.fresh.is_some() {
                // Growing past the backed memory changes the write rate.
                levels.node[2] = (c.bytes, [nc.backed, nc.backed]);
                levels.node_len = 3;
            }
        }
        let servers = self
            .servers
            .iter()
            .filter_map(|s| s.cache.as_ref())
            .flat_map(|sc| {
                let c = &sc.cache;
                [
                    (c.dirty + c.writeback, [c.dirty_limit, c.dirty_limit]),
                    (c.bytes, [c.capacity, c.capacity]),
                ]
            });
        if !servers.clone().eq(self.server_levels.iter().copied()) {
            self.server_levels = servers.collect();
            levels.servers = Rc::clone(&self.server_levels);
        }
        levels
    }

    /// State-only effect of one request `[a, b)` of `file` from `node` (the
    /// fast-forward's "apply"): what [`io`] leaves in the caches and lock
    /// tables, without simulating time. Writes land dirty in the node's page
    /// cache (invalidating other nodes' clean copies, taking the extent locks,
    /// a holder's dirty bytes there becoming clean as a revocation makes them),
    /// or, without a page cache, in the servers' caches as [`Storage::start_remote`]
    /// puts them; reads insert the missing bytes clean. The flusher daemons are
    /// kicked where a threshold is passed, and do their write-back in virtual
    /// time while the ranks sleep through the skipped iterations.
    pub(crate) fn apply(&mut self, node: usize, access: Access, file: usize, a: u64, b: u64) {
        if a >= b {
            return;
        }
        if access == Access::Write
            && let Some(g) = self.fs.lock_granularity
        {
            for u in a / g..b.div_ceil(g) {
                let holder = self
                    .locks
                    .get(&file)
                    .and_then(|l| l.get(&u))
                    .map(|l| l.holder);
                if let Some(h) = holder
                    && h != node
                {
                    self.written_back(h, Some((file, u * g, (u + 1) * g)), u64::MAX);
                }
                let busy = Signal::new();
                busy.fire();
                self.locks
                    .entry(file)
                    .or_default()
                    .insert(u, LockUnit { holder: node, busy });
            }
        }
        if self.nodes[node].is_none() {
            self.apply_server(access, file, a, b);
            return;
        }
        match access {
            Access::Write => {
                self.write_cached(node, file, a, b);
            }
            Access::Read => {
                self.cached_on.entry(file).or_default().insert(node);
                let nc = self.nodes[node].as_mut().expect("cached");
                let (_, misses) = nc.cache.lookup(file, a, b);
                for &(x, y) in &misses {
                    nc.cache.insert(file, x, y, State::Clean);
                }
                nc.cache.evict();
                for (x, y) in misses {
                    self.apply_server(Access::Read, file, x, y);
                }
            }
        }
    }

    /// [`Storage::apply`] of `k` requests of `len` bytes at `off + j·shift`,
    /// `j = 1..=k` (the fast-forward's skipped iterations of one request).
    pub(crate) fn apply_strided(
        &mut self,
        node: usize,
        access: Access,
        file: usize,
        (off, len, shift): (u64, u64, u64),
        k: u64,
    ) {
        if shift == len {
            // one contiguous stream: the skipped part is one range
            self.apply(node, access, file, off + len, off + (k + 1) * len);
            return;
        }
        // Other nodes holding none of the whole span lose nothing to these
        // writes: leave them out of each request's invalidation.
        let (lo, hi) = (off + shift, off + k * shift + len);
        let idle = match access {
            Access::Write => self.take_idle(file, lo, hi, &BTreeSet::from([node])),
            Access::Read => Vec::new(),
        };
        for j in 1..=k {
            let a = off + j * shift;
            self.apply(node, access, file, a, a + len);
        }
        self.restore_idle(file, idle);
    }

    /// Takes the nodes that cached `file` but hold none of `[lo, hi)`, other
    /// than `writers`, out of the file's invalidation list for a batch of
    /// writes there (they would find nothing to drop); [`Storage::restore_idle`]
    /// puts them back.
    pub(crate) fn take_idle(
        &mut self,
        file: usize,
        lo: u64,
        hi: u64,
        writers: &BTreeSet<usize>,
    ) -> Vec<usize> {
        let Some(on) = self.cached_on.get(&file) else {
            return Vec::new();
        };
        let idle: Vec<usize> = on
            .iter()
            .copied()
            .filter(|n| {
                !writers.contains(n)
                    && !self.nodes[*n]
                        .as_ref()
                        .is_some_and(|nc| nc.cache.holds_any(file, lo, hi))
            })
            .collect();
        let on = self.cached_on.get_mut(&file).expect("looked up");
        for n in &idle {
            on.remove(n);
        }
        idle
    }

    /// Puts back the nodes [`Storage::take_idle`] took out.
    pub(crate) fn restore_idle(&mut self, file: usize, idle: Vec<usize>) {
        if !idle.is_empty() {
            self.cached_on.entry(file).or_default().extend(idle);
        }
    }

    /// The fast-forward's write-back, on `node`, of `bytes` of the skipped
    /// iterations' writes while its flusher writes back (the share of the
    /// writes the window saw it take out): the oldest `bytes` of dirty data
    /// become clean at once, reaching the servers as [`Storage::apply`] puts
    /// them, and the flusher takes no new chunk until `until`, the skip's
    /// end. So the dirty level leaves the skip where the window's rate takes
    /// it, and the write-back is not done twice over: at once, and again by
    /// the flusher while the ranks sleep.
    pub(crate) fn write_back_at_once(&mut self, node: usize, bytes: u64, until: f64) {
        let Some(nc) = self.nodes[node].as_mut() else {
            return;
        };
        nc.paused_until = nc.paused_until.max(until);
        self.written_back(node, None, bytes);
        if let Some(nc) = self.nodes[node].as_mut() {
            nc.cache.evict();
        }
    }

    /// State-only write-back from `node`'s page cache of up to `limit` dirty
    /// bytes as [`Cache::take_dirty`] picks them (of `only`, else the
    /// oldest): they become clean there and reach the servers as
    /// [`Storage::apply`] puts them.
    fn written_back(&mut self, node: usize, only: Option<(usize, u64, u64)>, limit: u64) {
        let Some(nc) = self.nodes[node].as_mut() else {
            return;
        };
        let list = nc.cache.take_dirty(only, limit);
        for &(f, a, b) in &list {
            nc.cache.set_state(f, a, b, State::Writeback, State::Clean);
        }
        for (f, a, b) in list {
            self.apply_server(Access::Write, f, a, b);
        }
    }

    /// State-only effect of a request reaching the servers (see [`Storage::apply`]).
    fn apply_server(&mut self, access: Access, file: usize, a: u64, b: u64) {
        for (srv, pieces) in self.map(file, a, b) {
            let Some(c) = self.servers[srv].cache.as_mut() else {
                continue;
            };
            let bytes: u64 = pieces.iter().map(|p| p.2).sum();
            match access {
                Access::Write => {
                    let fits = c.write_back && c.cache.dirty + bytes <= c.cache.dirty_limit;
                    for &(fo, _, len) in &pieces {
                        let st = if fits { State::Dirty } else { State::Clean };
                        c.cache.insert(file, fo, fo + len, st);
                    }
                    if fits
                        && c.cache.dirty > 0
                        && let Some(k) = c.kick.take()
                    {
                        k.fire();
                    }
                }
                Access::Read => {
                    for &(fo, _, len) in &pieces {
                        let (_, m) = c.cache.lookup(file, fo, fo + len);
                        for (x, y) in m {
                            c.cache.insert(file, x, y, State::Clean);
                        }
                    }
                }
            }
            c.cache.evict();
        }
    }
}
