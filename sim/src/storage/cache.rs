//! Extent caches: a client node's page cache and an I/O server's cache.
//!
//! State is kept per file as extent ranges (an interval map `start → (end,
//! stamp, state)`), never per page, so memory stays bounded by the number of
//! distinct accesses however large the files are. Each extent carries the
//! stamp of its last access; eviction takes the least recently used *clean*
//! extents first (dirty data must be written back before it can go). A range
//! that touches an extent of the same state on either side merges with it and
//! refreshes its stamp: a stream is one LRU unit, and contiguous dirty bytes are
//! one extent whatever order they were written in (Linux writes back an
//! inode's dirty pages in index order, coalescing neighbours into one request).
//!
//! Dirty accounting follows Linux's write-back (Documentation/admin-guide/
//! sysctl/vm.rst): above `dirty_background_ratio` a flusher writes back the
//! oldest dirty data; above `dirty_ratio` writers are throttled until it
//! falls below; `fsync` writes back one file's dirty data.

use std::cell::Cell;
use std::collections::{BTreeMap, BTreeSet};

use rustc_hash::FxHashMap;

/// State of cached bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum State {
    /// Same as on the server (or device).
    Clean,
    /// Written here, not yet written back.
    Dirty,
    /// Being written back.
    Writeback,
}

impl State {
    /// Position of this state's LRU set in [`Cache`].
    fn index(self) -> usize {
        match self {
            State::Clean => 0,
            State::Dirty => 1,
            State::Writeback => 2,
        }
    }
}

/// No gap known ([`Cache::gap`]).
const NO_GAP: (usize, u64, u64) = (usize::MAX, 0, 0);

#[derive(Debug, Clone, Copy)]
struct Ext {
    end: u64,
    stamp: u64,
    state: State,
}

/// An LRU extent cache with dirty accounting; offsets are file offsets in bytes.
pub(crate) struct Cache {
    /// Bytes it may hold.
    pub(crate) capacity: u64,
    /// Dirty + writeback bytes above which writers wait (Linux `dirty_ratio`).
    pub(crate) dirty_limit: u64,
    /// Dirty bytes above which write-back starts (Linux `dirty_background_ratio`).
    pub(crate) background: u64,
    files: FxHashMap<usize, BTreeMap<u64, Ext>>,
    /// Per file, a range holding all its extents (it may be wider than they
    /// are: it only grows while the file has any): the quick "nothing here"
    /// of [`Cache::holds_any`] for other nodes' writes to a shared file.
    bounds: FxHashMap<usize, (u64, u64)>,
    /// `(file, lo, hi)`: a range of `file` that holds none of its extents,
    /// the gap the last [`Cache::holds_any`] that found nothing fell in.
    /// Other nodes' writes to a shared file come rank by rank into the same
    /// gaps between this node's extents (its own blocks of every stripe of
    /// the shared pointer, its ranks' segments), so most are answered here
    /// without a search. Only [`Cache::insert`] can put an extent in a gap
    /// (the others put back pieces they cut), and it forgets the gap.
    gap: Cell<(usize, u64, u64)>,
    /// (stamp, file, start) of every extent, one set per [`State`] (indexed by
    /// [`State::index`]): least recently used first. Per state, so the flusher
    /// finds the oldest dirty extent and eviction the oldest clean one without
    /// stepping over the others.
    lru: [BTreeSet<(u64, usize, u64)>; 3],
    stamp: u64,
    /// Bytes held.
    pub(crate) bytes: u64,
    /// Dirty bytes (not being written back).
    pub(crate) dirty: u64,
    /// Bytes being written back.
    pub(crate) writeback: u64,
    /// Bytes put in so far (reads filling it, writes): the fast-forward's
    /// measure of how fast its data is pushed towards eviction.
    pub(crate) inserted: u64,
}

impl Cache {
    pub(crate) fn new(capacity: u64, dirty_ratio: f64, background_ratio: f64) -> Cache {
        Cache {
            capacity,
            dirty_limit: (capacity as f64 * dirty_ratio) as u64,
            background: (capacity as f64 * background_ratio) as u64,
            files: FxHashMap::default(),
            bounds: FxHashMap::default(),
            gap: Cell::new(NO_GAP),
            lru: Default::default(),
            stamp: 0,
            inserted: 0,
            bytes: 0,
            dirty: 0,
            writeback: 0,
        }
    }

    fn count(&mut self, state: State, len: u64, add: bool) {
        let c = match state {
            State::Clean => None,
            State::Dirty => Some(&mut self.dirty),
            State::Writeback => Some(&mut self.writeback),
        };
        if add {
            self.bytes += len;
            if let Some(c) = c {
                *c += len;
            }
        } else {
            self.bytes -= len;
            if let Some(c) = c {
                *c -= len;
            }
        }
    }

    /// Whether any byte of `[a, b)` of `file` is cached.
    pub(crate) fn holds_any(&self, file: usize, a: u64, b: u64) -> bool {
        let (f, lo, hi) = self.gap.get();
        if f == file && lo <= a && b <= hi {
            return false;
        }
        let Some(map) = self.within_bounds(file, a, b) else {
            return false;
        };
        // Extents are disjoint and ordered: the last one starting before `b`
        // overlaps `[a, b)` iff any does; else `[a, b)` lies in the gap from
        // its end to the next extent's start.
        match map.range(..b).next_back() {
            Some((_, e)) if e.end > a => true,
            before => {
                let lo = before.map_or(0, |(_, e)| e.end);
                let hi = map.range(b..).next().map_or(u64::MAX, |(&s, _)| s);
                self.gap.set((file, lo, hi));
                false
            }
        }
    }

    /// [`Cache::holds_any`] without its gap: for this node's own inserts,
    /// which would forget the gap at once.
    fn overlaps(&self, file: usize, a: u64, b: u64) -> bool {
        self.within_bounds(file, a, b)
            .is_some_and(|map| map.range(..b).next_back().is_some_and(|(_, e)| e.end > a))
    }

    /// `file`'s extents where `[a, b)` is within its [`Cache::bounds`].
    fn within_bounds(&self, file: usize, a: u64, b: u64) -> Option<&BTreeMap<u64, Ext>> {
        self.bounds
            .get(&file)
            .is_some_and(|&(lo, hi)| a < hi && lo < b)
            .then(|| self.files.get(&file))
            .flatten()
    }

    /// Widens `file`'s [`Cache::bounds`] to `[a, b)`, which it now holds.
    fn widen(&mut self, file: usize, a: u64, b: u64) {
        let r = self.bounds.entry(file).or_insert((a, b));
        *r = (r.0.min(a), r.1.max(b));
    }

    /// Removes `[a, b)` of `file`; returns the removed pieces `(start, end, state)` in order.
    fn cut(&mut self, file: usize, a: u64, b: u64) -> Vec<(u64, u64, State)> {
        let mut out = Vec::new();
        if !self.overlaps(file, a, b) {
            return out;
        }
        let map = self.files.get_mut(&file).expect("held");
        let first = map.range(..a).next_back().map(|(&s, _)| s).unwrap_or(a);
        let keys: Vec<u64> = map.range(first..b).map(|(&s, _)| s).collect();
        let mut put = Vec::new();
        for s in keys {
            let e = map[&s];
            if e.end <= a || s >= b {
                continue;
            }
            map.remove(&s);
            self.lru[e.state.index()].remove(&(e.stamp, file, s));
            if s < a {
                put.push((s, Ext { end: a, ..e }));
            }
            if e.end > b {
                put.push((b, e));
            }
            out.push((s.max(a), e.end.min(b), e.state));
        }
        for (s, e) in put {
            map.insert(s, e);
            self.lru[e.state.index()].insert((e.stamp, file, s));
        }
        for &(s, e, st) in &out {
            self.count(st, e - s, false);
        }
        if self.files.get(&file).is_some_and(BTreeMap::is_empty) {
            self.files.remove(&file);
            self.bounds.remove(&file);
        }
        out
    }

    /// Puts `[a, b)` of `file` in `state`, as the most recently used data.
    pub(crate) fn insert(&mut self, file: usize, a: u64, b: u64, state: State) {
        if a >= b {
            return;
        }
        self.cut(file, a, b);
        if self.gap.get().0 == file {
            self.gap.set(NO_GAP);
        }
        self.inserted += b - a;
        self.stamp += 1;
        let stamp = self.stamp;
        let map = self.files.entry(file).or_default();
        let mut start = a;
        if let Some((&s, e)) = map.range(..a).next_back()
            && e.end == a
            && e.state == state
        {
            let e = *e;
            map.remove(&s);
            self.lru[state.index()].remove(&(e.stamp, file, s));
            self.count(state, a - s, false);
            start = s;
        }
        let map = self.files.entry(file).or_default();
        let mut end = b;
        if let Some(&e) = map.get(&b)
            && e.state == state
        {
            map.remove(&b);
            self.lru[state.index()].remove(&(e.stamp, file, b));
            self.count(state, e.end - b, false);
            end = e.end;
        }
        let map = self.files.entry(file).or_default();
        map.insert(start, Ext { end, stamp, state });
        self.widen(file, start, end);
        self.lru[state.index()].insert((stamp, file, start));
        self.count(state, end - start, true);
    }

    /// Bytes that can come in before any of `[a, b)` of `file` is evicted,
    /// counted up to `enough`: the free room, and the clean bytes used less
    /// recently than the range's least recently used extent (0 when none of
    /// the range is cached).
    pub(crate) fn room_before_evicting(&self, file: usize, a: u64, b: u64, enough: u64) -> u64 {
        let Some(map) = self.files.get(&file) else {
            return 0;
        };
        let first = map.range(..a).next_back().map(|(&s, _)| s).unwrap_or(a);
        let Some(oldest) = map
            .range(first..b)
            .filter(|(_, e)| e.end > a)
            .map(|(_, e)| e.stamp)
            .min()
        else {
            return 0;
        };
        let mut room = self.capacity.saturating_sub(self.bytes);
        for &(stamp, f, s) in &self.lru[State::Clean.index()] {
            if stamp >= oldest || room >= enough {
                break;
            }
            room += self.files[&f][&s].end - s;
        }
        room
    }

    /// Evicts least recently used clean extents until the cache fits its capacity.
    pub(crate) fn evict(&mut self) {
        if self.bytes <= self.capacity {
            return;
        }
        let mut victims = Vec::new();
        let mut over = self.bytes - self.capacity;
        for &(_, file, s) in &self.lru[State::Clean.index()] {
            if over == 0 {
                break;
            }
            let e = self.files[&file][&s];
            if e.state == State::Clean {
                let take = (e.end - s).min(over);
                victims.push((file, s, s + take));
                over -= take;
            }
        }
        for (file, a, b) in victims {
            self.cut(file, a, b);
        }
    }

    /// Splits `[a, b)` of `file` into cached and missing ranges, in order, and
    /// marks the cached extents as just used.
    pub(crate) fn lookup(
        &mut self,
        file: usize,
        a: u64,
        b: u64,
    ) -> (Vec<(u64, u64)>, Vec<(u64, u64)>) {
        let (mut hits, mut misses) = (Vec::new(), Vec::new());
        let mut at = a;
        self.stamp += 1;
        let stamp = self.stamp;
        if let Some(map) = self.files.get_mut(&file) {
            let first = map.range(..a).next_back().map(|(&s, _)| s).unwrap_or(a);
            let keys: Vec<u64> = map.range(first..b).map(|(&s, _)| s).collect();
            for s in keys {
                let e = map.get_mut(&s).expect("listed");
                if e.end <= a {
                    continue;
                }
                let (lo, hi) = (s.max(a), e.end.min(b));
                if lo > at {
                    misses.push((at, lo));
                }
                hits.push((lo, hi));
                at = hi;
                let lru = &mut self.lru[e.state.index()];
                lru.remove(&(e.stamp, file, s));
                e.stamp = stamp;
                lru.insert((stamp, file, s));
            }
        }
        if at < b {
            misses.push((at, b));
        }
        (hits, misses)
    }

    /// Bytes of `[a, b)` of `file` held here, without touching the LRU order
    /// (the fast-forward's read-only look at the cache).
    pub(crate) fn held(&self, file: usize, a: u64, b: u64) -> u64 {
        let Some(map) = self.files.get(&file) else {
            return 0;
        };
        let first = map.range(..a).next_back().map(|(&s, _)| s).unwrap_or(a);
        map.range(first..b)
            .map(|(&s, e)| e.end.min(b).saturating_sub(s.max(a)))
            .sum()
    }

    /// Marks up to `limit` bytes of dirty data as being written back and returns
    /// it as `(file, start, end)`: of `only` = `(file, start, end)` when given
    /// (fsync, lock revocation), else the oldest dirty extents (the flusher).
    pub(crate) fn take_dirty(
        &mut self,
        only: Option<(usize, u64, u64)>,
        limit: u64,
    ) -> Vec<(usize, u64, u64)> {
        let mut found = Vec::new();
        let mut left = limit;
        match only {
            Some((file, a, b)) => {
                if let Some(map) = self.files.get(&file) {
                    let first = map.range(..a).next_back().map(|(&s, _)| s).unwrap_or(a);
                    for (&s, e) in map.range(first..b) {
                        if e.state == State::Dirty && e.end > a && left > 0 {
                            let (lo, hi) =
                                (s.max(a), e.end.min(b).min(s.max(a).saturating_add(left)));
                            found.push((file, lo, hi));
                            left -= hi - lo;
                        }
                    }
                }
            }
            None => {
                for &(_, file, s) in &self.lru[State::Dirty.index()] {
                    if left == 0 {
                        break;
                    }
                    let e = self.files[&file][&s];
                    if e.state == State::Dirty {
                        let hi = e.end.min(s.saturating_add(left));
                        found.push((file, s, hi));
                        left -= hi - s;
                    }
                }
            }
        }
        for &(file, a, b) in &found {
            self.set_state(file, a, b, State::Dirty, State::Writeback);
        }
        found
    }

    /// Changes the parts of `[a, b)` of `file` that are in state `from` to `to`,
    /// keeping their stamps.
    pub(crate) fn set_state(&mut self, file: usize, a: u64, b: u64, from: State, to: State) {
        for (s, e, st) in self.cut(file, a, b) {
            let st = if st == from { to } else { st };
            let map = self.files.entry(file).or_default();
            self.stamp += 1;
            map.insert(
                s,
                Ext {
                    end: e,
                    stamp: self.stamp,
                    state: st,
                },
            );
            self.widen(file, s, e);
            self.lru[st.index()].insert((self.stamp, file, s));
            self.count(st, e - s, true);
        }
    }

    /// Drops the clean parts of `[a, b)` of `file` (another client wrote there).
    pub(crate) fn invalidate(&mut self, file: usize, a: u64, b: u64) {
        // (the common case of a write to a shared file: nothing here)
        if !self.holds_any(file, a, b) {
            return;
        }
        for (s, e, st) in self.cut(file, a, b) {
            if st != State::Clean {
                self.files.entry(file).or_default().insert(
                    s,
                    Ext {
                        end: e,
                        stamp: 0,
                        state: st,
                    },
                );
                self.widen(file, s, e);
                self.lru[st.index()].insert((0, file, s));
                self.count(st, e - s, true);
            }
        }
    }

    /// Forgets `file` entirely (it was deleted).
    pub(crate) fn remove_file(&mut self, file: usize) {
        self.cut(file, 0, u64::MAX);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn insert_merge_lookup_evict() {
        let mut c = Cache::new(100, 0.2, 0.1);
        c.insert(1, 0, 40, State::Dirty);
        c.insert(1, 40, 60, State::Dirty); // merges with [0, 40)
        assert_eq!((c.bytes, c.dirty), (60, 60));
        let (h, m) = c.lookup(1, 50, 80);
        assert_eq!((h, m), (vec![(50, 60)], vec![(60, 80)]));
        let wb = c.take_dirty(None, 1000);
        assert_eq!(wb, vec![(1, 0, 60)]);
        assert_eq!((c.dirty, c.writeback), (0, 60));
        c.set_state(1, 0, 60, State::Writeback, State::Clean);
        c.insert(2, 0, 70, State::Clean); // 130 > 100: the oldest clean bytes go
        c.evict();
        assert_eq!(c.bytes, 100);
        let (h, _) = c.lookup(1, 0, 60);
        assert_eq!(h, vec![(30, 60)]);
    }

    /// The bytes that can come in before a range is evicted: the free room
    /// plus the clean bytes older than the range's oldest extent (dirty ones
    /// and newer ones do not count), stopping once `enough` is reached.
    #[test]
    fn room_before_evicting_a_range() {
        let mut c = Cache::new(100, 0.9, 0.5);
        c.insert(1, 0, 20, State::Clean); // oldest
        c.insert(2, 0, 10, State::Dirty);
        c.insert(3, 0, 30, State::Clean); // the range asked about
        c.insert(4, 0, 15, State::Clean); // newer than it
        assert_eq!(c.bytes, 75);
        // free 25 + file 1's 20 (file 2 is dirty, file 4 newer)
        assert_eq!(c.room_before_evicting(3, 5, 25, u64::MAX), 45);
        // stops counting once past `enough`
        assert_eq!(c.room_before_evicting(3, 5, 25, 10), 25);
        // nothing of the range cached: no room
        assert_eq!(c.room_before_evicting(3, 40, 50, u64::MAX), 0);
        // file 1's range itself is the oldest: only the free room
        assert_eq!(c.room_before_evicting(1, 0, 20, u64::MAX), 25);
        // insert 45 more and the range's first bytes are the next to go
        c.insert(5, 0, 46, State::Clean);
        c.evict();
        assert_eq!(c.lookup(3, 0, 30).0, vec![(1, 30)]);
    }

    #[test]
    fn dirty_data_is_never_evicted() {
        let mut c = Cache::new(50, 0.9, 0.5);
        c.insert(1, 0, 40, State::Dirty);
        c.insert(2, 0, 30, State::Clean);
        c.evict();
        assert_eq!((c.bytes, c.dirty), (50, 40));
    }

    /// `holds_any` answers from the extents, its quick bounds only ever
    /// ruling out ranges outside everything the file holds: after cuts that
    /// empty the file, after dirty pieces kept by an invalidation, after state
    /// changes.
    #[test]
    fn holds_any_follows_the_extents() {
        let mut c = Cache::new(1000, 0.9, 0.5);
        c.insert(1, 100, 200, State::Clean);
        assert!(c.holds_any(1, 150, 160) && !c.holds_any(1, 200, 300));
        assert!(!c.holds_any(1, 0, 100) && !c.holds_any(2, 100, 200));
        c.invalidate(1, 0, 1000); // clean: all gone
        assert!(!c.holds_any(1, 100, 200));
        c.insert(1, 500, 600, State::Dirty);
        assert!(c.holds_any(1, 550, 551) && !c.holds_any(1, 100, 200));
        c.invalidate(1, 0, 1000); // dirty: kept
        assert!(c.holds_any(1, 599, 700));
        c.set_state(1, 500, 600, State::Dirty, State::Writeback);
        c.set_state(1, 500, 600, State::Writeback, State::Clean);
        c.insert(1, 0, 10, State::Clean);
        assert!(c.holds_any(1, 5, 6) && c.holds_any(1, 500, 501));
        assert!(!c.holds_any(1, 10, 500) && !c.holds_any(1, 600, 2000));
        c.remove_file(1);
        assert!(!c.holds_any(1, 0, u64::MAX));
    }

    /// The gap a `holds_any` that found nothing remembers answers later
    /// ranges within it, and an insert into it is seen at once: extents of
    /// one node's blocks of a shared file, other nodes' writes between them.
    #[test]
    fn holds_any_remembers_the_gap_until_an_insert() {
        let mut c = Cache::new(1 << 20, 0.9, 0.5);
        c.insert(1, 0, 100, State::Dirty);
        c.insert(1, 400, 500, State::Dirty);
        assert!(!c.holds_any(1, 150, 200));
        assert_eq!(c.gap.get(), (1, 100, 400));
        assert!(!c.holds_any(1, 100, 400) && !c.holds_any(1, 250, 300));
        assert!(c.holds_any(1, 99, 150) && c.holds_any(1, 350, 401));
        assert!(!c.holds_any(2, 150, 200), "another file: its own answer");
        c.insert(1, 250, 260, State::Dirty);
        assert!(c.holds_any(1, 200, 300) && c.holds_any(1, 255, 256));
        assert!(!c.holds_any(1, 260, 400) && !c.holds_any(1, 500, 600));
        assert_eq!(c.gap.get(), (1, 260, 400), "beyond the bounds: no search");
        // cuts only widen gaps: what was remembered stays true
        c.set_state(1, 400, 500, State::Dirty, State::Writeback);
        c.invalidate(1, 0, 1000);
        assert!(!c.holds_any(1, 600, 700) && c.holds_any(1, 450, 460));
    }
}
