//! The planner of two-phase collective I/O (ROMIO's generalised extended
//! two-phase method; `ad_write_coll.c`, `ad_read_coll.c`, `ad_aggregate.c`).
//!
//! Given every rank's file extents of one collective call and the hints in
//! effect, it decides whether ROMIO buffers collectively at all, splits the
//! accessed range into file domains (one per aggregator), cuts each domain into
//! `cb_buffer_size` windows (one per round) and says how many bytes each rank
//! exchanges with each aggregator in each round and which requests the
//! aggregators make. It is pure: no time, no flows.
//!
//! The planner makes three passes over each rank's extents (range, domain
//! bounds, exchange amounts). The first pass keeps a rank's extents in memory
//! when they are few (at most 64 Ki per rank, 4 Mi over all ranks) so the other
//! two read them from there; larger views are streamed anew on each pass. Memory
//! is O(ranks + kept extents + aggregators × rounds + the (rank, aggregator,
//! round) triples that carry data).

use piotwin_types::Access;

use super::hints::{Effective, Switch};

/// A source of each rank's extents `(file offset, bytes)` of one call, ascending
/// in offset (MPI requires monotone file views), streamed anew on each call.
pub type ExtentSource<'a> = dyn Fn(usize) -> Box<dyn Iterator<Item = (u64, u64)> + 'a> + 'a;

/// One round's window of one aggregator's file domain.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Window {
    /// First byte of the window (file offset).
    pub offset: u64,
    /// Window length in bytes: `min(cb_buffer_size, end of the domain's data − offset)`.
    pub len: u64,
    /// Bytes of the ranks' data in the window.
    pub data: u64,
}

impl Window {
    /// True when the ranks' data leaves gaps in the window, so a write must first
    /// read it (read-modify-write).
    pub fn has_hole(&self) -> bool {
        self.data < self.len
    }
}

/// The two-phase schedule of one collective call.
#[derive(Debug, Clone, PartialEq)]
pub struct TwoPhase {
    /// Aggregators (ranks of the file's communicator), in file-domain order.
    pub aggregators: Vec<usize>,
    /// File domain `[start, end)` of each aggregator; `None` where it got none.
    pub domains: Vec<Option<(u64, u64)>>,
    /// Rounds every rank goes through: the most windows any aggregator has.
    pub rounds: usize,
    /// Windows of each aggregator (index as `aggregators`), round by round.
    pub windows: Vec<Vec<Window>>,
    /// Data moved in each round: `(rank, aggregator index, bytes)`, ordered by rank then aggregator.
    pub moves: Vec<Vec<(usize, usize, u64)>>,
    /// Per round, indices into `moves` ordered by aggregator then rank.
    by_aggregator: Vec<Vec<u32>>,
}

/// A file-system request an aggregator makes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AggRequest {
    /// Round.
    pub round: usize,
    /// The aggregator (rank of the file's communicator).
    pub rank: usize,
    /// Read or write.
    pub access: Access,
    /// File offset, bytes.
    pub offset: u64,
    /// Length, bytes.
    pub len: u64,
}

impl TwoPhase {
    /// This plan for extents all `d` bytes further on: the same plan where
    /// `d` is a multiple of the file domains' alignment (`striping_unit`; any
    /// `d` without one), as the file domains and windows move with the data.
    pub fn shifted(&self, d: u64) -> TwoPhase {
        let mut p = self.clone();
        for dom in p.domains.iter_mut().flatten() {
            *dom = (dom.0 + d, dom.1 + d);
        }
        for w in p.windows.iter_mut().flatten() {
            w.offset += d;
        }
        p
    }

    /// The `(rank, bytes)` exchanged with aggregator index `a` in round `m`, by rank.
    pub fn to_aggregator(&self, m: usize, a: usize) -> impl Iterator<Item = (usize, u64)> + '_ {
        let idx = &self.by_aggregator[m];
        let mv = &self.moves[m];
        let lo = idx.partition_point(|&i| mv[i as usize].1 < a);
        let hi = idx.partition_point(|&i| mv[i as usize].1 <= a);
        idx[lo..hi]
            .iter()
            .map(move |&i| (mv[i as usize].0, mv[i as usize].2))
    }

    /// The aggregators' file-system requests, round by round and aggregator by
    /// aggregator: a window with data is read whole (reads, and writes with a
    /// hole: read-modify-write), then written whole (writes).
    pub fn requests(&self, access: Access) -> Vec<AggRequest> {
        let mut out = Vec::new();
        for m in 0..self.rounds {
            for (a, ws) in self.windows.iter().enumerate() {
                let Some(w) = ws.get(m).filter(|w| w.data > 0) else {
                    continue;
                };
                let req = |access| AggRequest {
                    round: m,
                    rank: self.aggregators[a],
                    access,
                    offset: w.offset,
                    len: w.len,
                };
                if access == Access::Read || w.has_hole() {
                    out.push(req(Access::Read));
                }
                if access == Access::Write {
                    out.push(req(Access::Write));
                }
            }
        }
        out
    }
}

/// `[first byte, end)` of extents `ext` (zero-length ones ignored); `None`
/// when they hold no data.
fn range_of(ext: impl Iterator<Item = (u64, u64)>) -> Option<(u64, u64)> {
    ext.filter(|e| e.1 > 0).fold(None, |acc, (o, l)| match acc {
        None => Some((o, o + l)),
        Some((a, b)) => Some((a.min(o), b.max(o + l))),
    })
}

/// At most this many extents of one rank are kept in memory between the passes
/// of [`plan`]; a rank with more is streamed anew on each pass.
const KEEP_PER_RANK: usize = 64 << 10;

/// At most this many extents of all ranks together are kept in memory between
/// the passes of [`plan`] (16 bytes each: 64 MiB).
const KEEP_TOTAL: usize = 4 << 20;

/// Each rank's extents, read once: their range, and the extents themselves
/// where few enough to keep (see [`KEEP_PER_RANK`], [`KEEP_TOTAL`]).
struct Gathered {
    ranges: Vec<Option<(u64, u64)>>,
    /// Kept extents of all ranks, rank after rank.
    kept: Vec<(u64, u64)>,
    /// Rank `r`'s extents are `kept[at[r].0..at[r].1]`; `None`: not kept.
    at: Vec<Option<(usize, usize)>>,
}

impl Gathered {
    /// Reads every rank's extents once, keeping at most `keep = (per rank,
    /// total)` of them.
    fn new(nranks: usize, extents: &ExtentSource<'_>, keep: (usize, usize)) -> Gathered {
        let mut g = Gathered {
            ranges: Vec::with_capacity(nranks),
            kept: Vec::new(),
            at: Vec::with_capacity(nranks),
        };
        for r in 0..nranks {
            let mut it = extents(r).filter(|e| e.1 > 0);
            let first = g.kept.len();
            let cap = keep.1.saturating_sub(first).min(keep.0);
            let mut whole = true;
            for e in it.by_ref() {
                g.kept.push(e);
                if g.kept.len() - first > cap {
                    whole = false;
                    break;
                }
            }
            g.ranges
                .push(range_of(g.kept[first..].iter().copied().chain(it)));
            if whole {
                g.at.push(Some((first, g.kept.len())));
            } else {
                g.kept.truncate(first);
                g.at.push(None);
            }
        }
        g
    }

    /// Calls `f` on each extent with data of rank `r`, in order.
    fn for_each(&self, r: usize, extents: &ExtentSource<'_>, mut f: impl FnMut(u64, u64)) {
        match self.at[r] {
            Some((a, b)) => self.kept[a..b].iter().for_each(|&(o, l)| f(o, l)),
            None => extents(r).filter(|e| e.1 > 0).for_each(|(o, l)| f(o, l)),
        }
    }
}

/// ROMIO's interleave test: some rank starts before the previous rank (in rank
/// order, ranks without data skipped) ends.
pub fn interleaved(ranges: &[Option<(u64, u64)>]) -> bool {
    let mut prev_end: Option<u64> = None;
    for &(a, b) in ranges.iter().flatten() {
        if prev_end.is_some_and(|e| a < e) {
            return true;
        }
        prev_end = Some(b);
    }
    false
}

/// Whether ROMIO takes the two-phase path: `romio_cb_{read,write}` enable, or
/// automatic and the accesses interleave.
pub fn collective_buffering(
    access: Access,
    eff: &Effective,
    ranges: &[Option<(u64, u64)>],
) -> bool {
    let s = match access {
        Access::Read => eff.cb_read,
        Access::Write => eff.cb_write,
    };
    match s {
        Switch::Enable => true,
        Switch::Disable => false,
        Switch::Automatic => interleaved(ranges),
    }
}

/// ROMIO's file domains (`ADIOI_Calc_file_domains`): `[min start, max end)`
/// split into `n` pieces of ⌈range / n⌉ bytes; with `striping_unit > 0` each
/// boundary moves to the nearest multiple of it (Liao's lock-boundary
/// alignment), the last domain ending at the range's end. Returns each domain's
/// `[start, end)`, `None` when it is empty.
pub fn file_domains(start: u64, end: u64, n: usize, striping_unit: u64) -> Vec<Option<(u64, u64)>> {
    let n64 = n as u64;
    let fd_size = (end - start).div_ceil(n64).max(1);
    let mut out = Vec::with_capacity(n);
    let mut lo = start;
    for i in 0..n64 {
        let mut hi = start + fd_size * (i + 1);
        if striping_unit > 0 {
            let front = hi % striping_unit;
            let back = striping_unit - front;
            hi = if front < back { hi - front } else { hi + back };
            if i + 1 == n64 {
                hi = end;
            }
        }
        let hi = hi.min(end);
        out.push((lo < hi).then_some((lo, hi)));
        lo = lo.max(hi);
    }
    out
}

/// Index of the domain holding byte `off` (`ADIOI_Calc_aggregator`): the first
/// whose exclusive end lies past `off`. `hint` is a guess (the domain of the
/// previous extent, as a rank's extents ascend), checked before searching.
fn domain_of(ends: &[u64], hint: usize, off: u64) -> usize {
    if ends.get(hint).is_some_and(|&e| e > off) && (hint == 0 || ends[hint - 1] <= off) {
        hint
    } else {
        ends.partition_point(|&e| e <= off)
    }
}

/// Splits `[o, o + l)` at domain boundaries: calls `f(domain, start, end)`;
/// `hint` carries the last domain found from one call to the next.
fn split(ends: &[u64], hint: &mut usize, o: u64, l: u64, mut f: impl FnMut(usize, u64, u64)) {
    let (mut x, stop) = (o, o + l);
    while x < stop {
        let a = domain_of(ends, *hint, x);
        *hint = a;
        let y = ends[a].min(stop);
        f(a, x, y);
        x = y;
    }
}

/// Plans one collective call of `nranks` ranks, or `None` when ROMIO would do
/// it as independent I/O (see [`collective_buffering`]) or nothing is accessed.
pub fn plan(
    access: Access,
    eff: &Effective,
    nranks: usize,
    extents: &ExtentSource<'_>,
) -> Option<TwoPhase> {
    plan_keeping(access, eff, nranks, extents, (KEEP_PER_RANK, KEEP_TOTAL))
}

/// [`plan`], keeping at most `keep = (per rank, total)` extents in memory
/// between passes.
fn plan_keeping(
    access: Access,
    eff: &Effective,
    nranks: usize,
    extents: &ExtentSource<'_>,
    keep: (usize, usize),
) -> Option<TwoPhase> {
    let g = Gathered::new(nranks, extents, keep);
    let rr = &g.ranges;
    if !collective_buffering(access, eff, rr) {
        return None;
    }
    let start = rr.iter().flatten().map(|r| r.0).min()?;
    let end = rr.iter().flatten().map(|r| r.1).max()?;
    let n = eff.aggregators.len();
    let domains = file_domains(start, end, n, eff.striping_unit);
    // Exclusive ends for the search; empty domains take their predecessor's end
    // (the search then never lands on them).
    let mut ends = Vec::with_capacity(n);
    let mut last = start;
    for d in &domains {
        last = d.map_or(last, |(_, e)| e);
        ends.push(last);
    }
    // Pass 2: where each domain's data starts and ends (st_loc, end_loc).
    let mut span: Vec<Option<(u64, u64)>> = vec![None; n];
    for (r, _) in rr.iter().enumerate().filter(|(_, x)| x.is_some()) {
        let mut hint = 0;
        g.for_each(r, extents, |o, l| {
            split(&ends, &mut hint, o, l, |a, x, y| {
                span[a] = Some(span[a].map_or((x, y), |(s, e)| (s.min(x), e.max(y))));
            });
        });
    }
    let cb = eff.cb_buffer_size;
    let mut windows: Vec<Vec<Window>> = span
        .iter()
        .map(|s| match *s {
            None => Vec::new(),
            Some((s, e)) => (0..(e - s).div_ceil(cb))
                .map(|m| {
                    let offset = s + m * cb;
                    Window {
                        offset,
                        len: cb.min(e - offset),
                        data: 0,
                    }
                })
                .collect(),
        })
        .collect();
    let rounds = windows.iter().map(Vec::len).max().unwrap_or(0);
    // Pass 3: bytes per (round, rank, aggregator), accumulated as a run per rank.
    let mut moves: Vec<Vec<(usize, usize, u64)>> = vec![Vec::new(); rounds];
    for (r, _) in rr.iter().enumerate().filter(|(_, x)| x.is_some()) {
        let mut acc: Vec<(usize, usize, u64)> = Vec::new(); // (round, agg, bytes), sorted on flush
        let mut hint = 0;
        g.for_each(r, extents, |o, l| {
            split(&ends, &mut hint, o, l, |a, x, y| {
                let s = span[a].expect("data in the domain").0;
                let mut p = x;
                while p < y {
                    let m = ((p - s) / cb) as usize;
                    let q = y.min(s + (m as u64 + 1) * cb);
                    windows[a][m].data += q - p;
                    match acc.last_mut() {
                        Some(t) if t.0 == m && t.1 == a => t.2 += q - p,
                        _ => acc.push((m, a, q - p)),
                    }
                    p = q;
                }
            });
        });
        acc.sort_unstable();
        let mut it = acc.into_iter().peekable();
        while let Some((m, a, mut b)) = it.next() {
            while let Some(&(m2, a2, b2)) = it.peek() {
                if (m2, a2) != (m, a) {
                    break;
                }
                b += b2;
                it.next();
            }
            moves[m].push((r, a, b));
        }
    }
    let by_aggregator = moves
        .iter()
        .map(|mv| {
            let mut idx: Vec<u32> = (0..mv.len() as u32).collect();
            idx.sort_by_key(|&i| (mv[i as usize].1, mv[i as usize].0));
            idx
        })
        .collect();
    Some(TwoPhase {
        aggregators: eff.aggregators.clone(),
        domains,
        rounds,
        windows,
        moves,
        by_aggregator,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenario::{FileSystem, FsKind};
    use piotwin_types::Hints;

    /// A local file system: ROMIO's generic driver, no file-domain alignment
    /// unless the `striping_unit` hint asks for one.
    fn local_fs() -> FileSystem {
        FileSystem {
            kind: FsKind::Local,
            stripe_size: 1 << 20,
            stripe_count: 1,
            lock_granularity: None,
            lock_revoke: 0.0,
            inode_write_lock: false,
            locked_syscall: false,
        }
    }

    /// Keeping extents between passes changes nothing: every rank kept, none
    /// kept, and a budget that runs out part way give the same plan.
    #[test]
    fn kept_and_streamed_extents_plan_alike() {
        // 6 ranks, interleaved strided blocks (rank r: 40-byte blocks at
        // 240·k + 40·r); rank 4 has no data, rank 5 has zero-length extents too.
        let exts: Vec<Vec<(u64, u64)>> = (0..6u64)
            .map(|r| match r {
                4 => Vec::new(),
                5 => (0..50)
                    .flat_map(|k| [(240 * k + 200, 0), (240 * k + 200, 40)])
                    .collect(),
                _ => (0..50).map(|k| (240 * k + 40 * r, 40)).collect(),
            })
            .collect();
        let source = |r: usize| -> Box<dyn Iterator<Item = (u64, u64)> + '_> {
            Box::new(exts[r].iter().copied())
        };
        let fs = local_fs();
        let mut hints = Hints::new();
        hints.set("cb_buffer_size", "1000");
        let eff = Effective::resolve(&hints, &[0, 1, 2, 0, 1, 2], &fs).expect("valid hints");
        for access in [Access::Read, Access::Write] {
            let kept = plan(access, &eff, 6, &source).expect("interleaved: two-phase");
            assert_eq!(kept.aggregators.len(), 3);
            assert!(kept.rounds > 1, "several rounds: {}", kept.rounds);
            for keep in [(0, 0), (60, 130), (1 << 20, 1 << 20)] {
                assert_eq!(
                    plan_keeping(access, &eff, 6, &source, keep).as_ref(),
                    Some(&kept),
                    "keep {keep:?}"
                );
            }
        }
    }

    /// A plan of extents all moved by a multiple of the alignment is the
    /// plan moved (what [`TwoPhase::shifted`] gives); a distance off the
    /// alignment moves the domain boundaries differently.
    #[test]
    fn moved_extents_plan_as_the_plan_moved() {
        let exts = |d: u64| -> Vec<Vec<(u64, u64)>> {
            (0..4u64)
                .map(|r| (0..30).map(|k| (d + 400 * k + 100 * r, 100)).collect())
                .collect()
        };
        let fs = local_fs();
        let mut hints = Hints::new();
        hints.set("cb_buffer_size", "1000");
        hints.set("striping_unit", "256");
        let eff = Effective::resolve(&hints, &[0, 1, 2, 3], &fs).expect("valid hints");
        let plan_at = |d: u64| {
            let e = exts(d);
            let source = |r: usize| -> Box<dyn Iterator<Item = (u64, u64)> + '_> {
                Box::new(e[r].iter().copied())
            };
            plan(Access::Write, &eff, 4, &source).expect("interleaved: two-phase")
        };
        let base = plan_at(0);
        assert!(base.rounds > 1 && base.aggregators.len() > 1);
        for d in [256, 12_000 * 256] {
            assert_eq!(base.shifted(d), plan_at(d), "d = {d}");
        }
        // off the alignment the boundaries round elsewhere
        assert_ne!(base.shifted(300).domains, plan_at(300).domains);
    }
}
