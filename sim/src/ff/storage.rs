//! What the fast-forward asks of the storage state: how a request would be
//! served (its class), the cache levels whose thresholds change the regime,
//! how far cached reads stay cached; and the state-only effect of skipped
//! requests (what they leave in caches and lock tables, without time).

use crate::storage::fs::FileSystemKind as _;
use std::collections::BTreeSet;
use std::rc::Rc;

use piotwin_types::Access;

use crate::engine::Signal;
use crate::storage::cache::State;
use crate::storage::device;
use crate::storage::{LockUnit, Srv, Storage};

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
        if self.caches(node, len) {
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

    /// Where a read of `[a, b)` of `file` from `node` in requests of `req`
    /// bytes would be served, looked up without changing any state: one of the
    /// `CLASS_*` values.
    pub(crate) fn read_class(&self, node: usize, file: usize, a: u64, b: u64, req: u64) -> u8 {
        let len = b - a;
        if let Some(nc) = self.nodes[node].as_ref().filter(|_| self.caches(node, req)) {
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
    /// `last` is the servers' part of the last levels, shared by the
    /// observations that see it unchanged (every rank observes every
    /// iteration, and the fast-forward keeps up to 513 observations a rank).
    pub(crate) fn levels(&self, node: usize, last: &mut Rc<[Level]>) -> Levels {
        let mut levels = Levels {
            node: [(0, [0, 0]); 3],
            node_len: 0,
            servers: Rc::clone(last),
        };
        if let Some(nc) = &self.nodes[node] {
            let c = &nc.cache;
            levels.node[0] = (c.dirty + c.writeback, [c.background, c.dirty_limit]);
            levels.node[1] = (c.bytes, [c.capacity, c.capacity]);
            levels.node_len = 2;
            if nc.fresh.is_some() {
                // Growing past the backed memory changes the write rate, and
                // again past the free memory (reclaim instead).
                let free_end = match nc.unbacked.is_finite() {
                    true => nc.backed.saturating_add(nc.unbacked as u64),
                    false => nc.backed,
                };
                levels.node[2] = (c.bytes, [nc.backed, free_end]);
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
        if !servers.clone().eq(last.iter().copied()) {
            *last = servers.collect();
            levels.servers = Rc::clone(last);
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
    /// `req` is the size of the requests `[a, b)` stands for (direct I/O past
    /// the page cache from `direct_from` up, huge pages from `huge_from` up).
    pub(crate) fn apply(
        &mut self,
        node: usize,
        access: Access,
        file: usize,
        (a, b): (u64, u64),
        req: u64,
    ) {
        if a >= b {
            return;
        }
        if access == Access::Write {
            self.note_write(node, file);
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
        if !self.caches(node, req) {
            if access == Access::Write {
                self.invalidate_everywhere(file, a, b);
            }
            self.apply_server(access, file, a, b);
            return;
        }
        match access {
            Access::Write => {
                self.write_cached(node, file, (a, b), req);
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
            self.apply(node, access, file, (off + len, off + (k + 1) * len), len);
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
            self.apply(node, access, file, (a, a + len), len);
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
            let bytes: u64 = pieces.iter().map(|p| p.2).sum();
            let to_device = access == Access::Write
                && self.servers[srv].cache.as_ref().is_none_or(|c| {
                    !(c.write_back && c.cache.dirty + bytes <= c.cache.dirty_limit)
                });
            if to_device && self.overwrite_rate_differs(srv) {
                let objects: Vec<(u64, u64)> = pieces.iter().map(|p| (p.1, p.2)).collect();
                self.note_on_device(srv, file, &objects);
            }
            let Some(c) = self.servers[srv].cache.as_mut() else {
                continue;
            };
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
