//! A rank's requests through the storage system in virtual time: extent locks,
//! the client page cache (throttled writers, read-ahead), the servers and
//! their devices; the write-back daemons of node and server caches; `sync`,
//! `close` and `delete`.

use crate::storage::fs::FileSystemKind as _;
use piotwin_types::Access;

use super::cache::State;
use super::{FLUSH_CHUNK, LockUnit, Machine, PAGE, Started, Storage, cpu, node_flow};
use crate::engine::Signal;
use crate::flow::ResourceId;

async fn wait_started(machine: &Machine, st: Started) {
    for s in &st.signals {
        s.wait().await;
    }
    machine.storage.borrow_mut().finish_remote(&st.queued);
}

/// As [`wait_started`], for world rank `rank`'s own requests: it sleeps in
/// the kernel meanwhile.
async fn wait_started_asleep(machine: &Machine, rank: usize, st: Started) {
    let asleep = !st.signals.is_empty();
    if asleep {
        machine.sleep(rank, true);
    }
    wait_started(machine, st).await;
    if asleep {
        machine.sleep(rank, false);
    }
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
    rank: usize,
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
        // Asleep until the holder is done, has written back and let go.
        machine.sleep(rank, true);
        busy.wait().await;
        flush(machine, holder, file, u * g, (u + 1) * g).await;
        let t = machine.engine.borrow().now() + revoke;
        let s = Signal::new();
        machine.engine.borrow_mut().fire_at(t, s.clone());
        s.wait().await;
        machine.sleep(rank, false);
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

/// Takes `node`'s inode lock of `file` for a buffered write where the file
/// system has one (ext4, XFS and the NFS client hold it over the whole copy
/// into the page cache, fresh pages included), waiting for the writes ahead
/// in turn, asleep as world rank `rank`. Returns whether it took it.
async fn inode_lock(machine: &Machine, rank: usize, node: usize, file: usize) -> bool {
    let wait = {
        let mut m = machine.storage.borrow_mut();
        if !m.fs.inode_write_lock {
            return false;
        }
        let lock = m.inode_locks.entry((node, file)).or_default();
        if lock.held {
            let s = Signal::new();
            lock.waiting.push_back(s.clone());
            Some(s)
        } else {
            lock.held = true;
            None
        }
    };
    if let Some(s) = wait {
        // The releasing write hands the lock over.
        machine.sleep(rank, true);
        s.wait().await;
        machine.sleep(rank, false);
    }
    true
}

/// Releases `node`'s inode lock of `file`: to the next waiting write, if any.
fn inode_unlock(m: &mut Storage, node: usize, file: usize) {
    let lock = m.inode_locks.get_mut(&(node, file)).expect("held");
    match lock.waiting.pop_front() {
        Some(next) => next.fire(),
        None => lock.held = false,
    }
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
/// (a page cache, a server cache or a device). `locked_call` is each write
/// request's system call where it runs under the inode's lock
/// (`filesystem.write_lock_span = "call"`), else 0 (the caller charged it).
/// `places`: per request, where in its page the buffer it copies into or out
/// of starts, where that can make the page-cache copy alias (else `None`).
pub(crate) async fn io(
    machine: &Machine,
    rank: usize,
    node: usize,
    access: Access,
    reqs: &[(usize, u64, u64)],
    places: &[Option<u64>],
    locked_call: f64,
) {
    for (&(file, off, len), &place) in reqs.iter().zip(places) {
        if len == 0 {
            continue;
        }
        let (a, b) = (off, off + len);
        let held = lock(machine, rank, node, file, a, b, access).await;
        if access == Access::Write {
            machine.storage.borrow_mut().note_write(node, file);
        }
        let (cached, direct) = {
            let m = machine.storage.borrow();
            let cached = m.caches(node, len);
            (cached, !cached && m.nodes[node].is_some())
        };
        if direct {
            // Direct I/O past the page cache: its dirty bytes of the range go
            // first, and a write leaves every node's copy stale.
            machine.sleep(rank, true);
            flush(machine, node, file, a, b).await;
            machine.sleep(rank, false);
            if access == Access::Write {
                let now = machine.engine.borrow().now();
                let mut m = machine.storage.borrow_mut();
                m.release(node, file, now);
                m.invalidate_everywhere(file, a, b);
            }
        }
        if locked_call > 0.0 && !(access == Access::Write && cached) {
            // no page-cache copy, so no inode lock to take it under
            cpu(machine, rank, locked_call).await;
        }
        match (access, cached) {
            (Access::Write, true) => loop {
                let wait = {
                    let mut m = machine.storage.borrow_mut();
                    let nc = m.nodes[node].as_mut().expect("cached");
                    // Throttled only while write-back can make room: at or below the
                    // background threshold with none in flight the flusher sleeps, and
                    // a write larger than the room left would wait for ever. Linux
                    // lets it dirty its pages (the flusher starts past background).
                    if nc.cache.dirty + nc.cache.writeback + len > nc.cache.dirty_limit
                        && (nc.cache.dirty > nc.cache.background || nc.cache.writeback > 0)
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
                    Some(s) => {
                        machine.sleep(rank, true);
                        s.wait().await;
                        machine.sleep(rank, false);
                    }
                    None => break,
                }
            },
            _ => {}
        }
        match (access, cached) {
            (Access::Write, true) => {
                let locked = inode_lock(machine, rank, node, file).await;
                if locked_call > 0.0 {
                    cpu(machine, rank, locked_call).await;
                }
                let held = {
                    let m = machine.storage.borrow();
                    m.nodes[node]
                        .as_ref()
                        .expect("cached")
                        .cache
                        .held(file, a, b)
                };
                // the copy's destination (the file's page) past its source (the buffer)
                let aliased =
                    place.is_some_and(|p| machine.platform.aliased(node, (a + PAGE - p) % PAGE));
                let path = machine.platform.cache_write_path(rank, held, len, aliased);
                transfer(machine, 0.0, path, len).await;
                let (fresh, res, core_s) = {
                    let mut m = machine.storage.borrow_mut();
                    m.release(node, file, machine.engine.borrow().now());
                    let fresh = m.write_cached(node, file, (a, b), len);
                    let nc = m.nodes[node].as_ref();
                    (
                        fresh,
                        nc.and_then(|nc| nc.fresh),
                        nc.map_or(0.0, |nc| nc.fresh_core_s),
                    )
                };
                if let Some(res) = res.filter(|_| fresh > 0) {
                    let mut path = vec![(res, 1.0)];
                    // the vCPU waits in the hypervisor: only in the writer's share of its core
                    if let Some(core) = machine.platform.core_of(rank).filter(|_| core_s > 0.0) {
                        path.push((core, core_s));
                    }
                    transfer(machine, 0.0, path, fresh).await;
                }
                if locked {
                    inode_unlock(&mut machine.storage.borrow_mut(), node, file);
                }
            }
            (Access::Read, true) => {
                let (hits, misses, path) = {
                    let mut m = machine.storage.borrow_mut();
                    // the copy's destination (the buffer) past its source (the file's page)
                    let aliased = place.is_some_and(|p| {
                        machine.platform.aliased(node, (p + PAGE - a % PAGE) % PAGE)
                    });
                    let path = machine.platform.cache_read_path(rank, len, aliased);
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
                wait_started_asleep(machine, rank, st).await;
                let mut m = machine.storage.borrow_mut();
                m.release(node, file, machine.engine.borrow().now());
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
                wait_started_asleep(machine, rank, st).await;
            }
        }
        if let Some(s) = held {
            s.fire();
        }
        machine.request_done(rank);
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
