//! Storage devices: what one request costs a device, as device busy time (the
//! device is a flow resource of one busy-second per second) plus a delay.
//!
//! * **HDD** (Ruemmler & Wilkes, *An introduction to disk drive modeling*, IEEE
//!   Computer 27(3), 1994): a request that does not continue where the head is
//!   pays a seek `seek_track + (seek_full − seek_track)·√(d/capacity)` over the
//!   distance `d` (the square-root law of short seeks stretched to full
//!   stroke; its mean over uniform random distances is
//!   `seek_track + 8/15·(seek_full − seek_track)`) plus the *expected*
//!   rotational latency, half a revolution `30/rpm` s (an expected value, not a
//!   draw: results stay hand-checkable). Transfer runs at the zoned media rate,
//!   falling linearly from `transfer_rate` at offset 0 to
//!   `transfer_rate_inner` at the end. Positioning occupies the disk, so it is
//!   part of the busy time. FIFO order seeks from the previous request;
//!   elevator order lets a request join the sorted sweep, seeking only from
//!   its nearest queued neighbour (or the head).
//! * **SSD**: per-request latency as a delay on one of `channels` internal
//!   channels (more concurrent requests queue), bytes at the read or write bandwidth.
//! * **RAID 0/3/5/6** (Chen, Lee, Gibson, Katz & Patterson, *RAID: High-Performance,
//!   Reliable Secondary Storage*, ACM Computing Surveys 26(2), 1994): stripe
//!   units round-robin over the members, parity rotated left-symmetric. A write
//!   covering a whole stripe writes data and parity; a partial-stripe (small)
//!   write is a read-modify-write: read old data and parity, write new data and
//!   parity — four I/Os for RAID 5, six for RAID 6 — the write after the read
//!   of the same sectors waiting a full revolution on a disk. RAID 3 keeps its
//!   parity on the last disk and interleaves in small units (a sector), so
//!   every request of more than a row moves all spindles together.

use std::collections::BTreeMap;

use crate::flow::{FlowNet, ResourceId};
use crate::scenario::{Device, Hdd, QueueOrder, Ssd};
use piotwin_types::Access;

/// One physical device (a RAID member or a whole device).
pub(crate) enum Unit {
    Ssd {
        res: ResourceId,
        spec: Ssd,
        /// Time each channel is free again.
        chan_free: Vec<f64>,
    },
    Hdd {
        res: ResourceId,
        spec: Hdd,
        /// Byte offset the head is at (end of the last request issued).
        head: u64,
        /// End offsets of requests issued and not completed (a multiset).
        queued: BTreeMap<u64, u32>,
    },
}

/// A server's device: one unit or a RAID over units.
pub(crate) enum Layout {
    Single(usize),
    Raid {
        level: u8,
        unit: u64,
        members: Vec<usize>,
    },
}

/// One operation on one unit: (offset, length, read or write, after a read of
/// the same place, a write where the file wrote before).
#[derive(Clone, Copy)]
struct Op {
    off: u64,
    len: u64,
    access: Access,
    rewrite: bool,
    overwrite: bool,
}

/// What a request costs: a delay before it flows, busy seconds per unit, and
/// HDD queue entries `(unit, end offset)` to drop when it completes.
#[derive(Default)]
pub(crate) struct Plan {
    pub(crate) delay: f64,
    pub(crate) busy: Vec<(ResourceId, f64)>,
    pub(crate) queued: Vec<(usize, u64)>,
}

/// Parity disks per row of a RAID of `level`: 1 for RAID 3 and 5, 2 for 6.
fn parity_disks(level: u8) -> u64 {
    match level {
        3 | 5 => 1,
        6 => 2,
        _ => 0,
    }
}

/// Builds the units of `dev` into `units`, their resources into `flows`; its layout and capacity in bytes.
pub(crate) fn build<T>(
    dev: &Device,
    name: &str,
    units: &mut Vec<Unit>,
    flows: &mut FlowNet<T>,
) -> (Layout, u64) {
    let mut one = |d: &Device, name: String, units: &mut Vec<Unit>| -> (usize, u64) {
        let res = flows.add_resource(name, 1.0);
        let (u, cap) = match d {
            Device::Ssd(s) => (
                Unit::Ssd {
                    res,
                    spec: s.clone(),
                    chan_free: vec![0.0; s.channels],
                },
                u64::MAX / 4,
            ),
            Device::Hdd(h) => (
                Unit::Hdd {
                    res,
                    spec: h.clone(),
                    head: 0,
                    queued: BTreeMap::new(),
                },
                h.capacity,
            ),
            Device::Raid(_) => unreachable!("RAID members are not RAIDs (checked when loading)"),
        };
        units.push(u);
        (units.len() - 1, cap)
    };
    match dev {
        Device::Raid(r) => {
            let mut members = Vec::new();
            let mut cap = u64::MAX;
            for i in 0..r.disks {
                let (u, c) = one(&r.member, format!("{name}.disk{i}"), units);
                members.push(u);
                cap = cap.min(c);
            }
            let parity = parity_disks(r.level);
            let data = r.disks as u64 - parity;
            (
                Layout::Raid {
                    level: r.level,
                    unit: r.stripe_unit,
                    members,
                },
                (cap / r.stripe_unit)
                    .saturating_mul(r.stripe_unit)
                    .saturating_mul(data),
            )
        }
        d => {
            let (u, cap) = one(d, name.to_string(), units);
            (Layout::Single(u), cap)
        }
    }
}

impl Unit {
    /// Plans `ops` (in order) at `now`: adds busy seconds and delay to `plan`.
    fn plan(&mut self, id: usize, now: f64, ops: &[Op], plan: &mut Plan) -> f64 {
        match self {
            Unit::Ssd {
                res,
                spec,
                chan_free,
            } => {
                let mut t = now;
                let mut busy = 0.0;
                for op in ops {
                    let (lat, bw) = match (op.access, op.overwrite) {
                        (Access::Read, _) => (spec.read_latency, spec.read_bw),
                        (Access::Write, false) => (spec.write_latency, spec.write_bw),
                        (Access::Write, true) => (spec.write_latency, spec.overwrite_bw),
                    };
                    let (ci, free) = chan_free
                        .iter()
                        .enumerate()
                        .min_by(|a, b| a.1.total_cmp(b.1))
                        .map(|(i, &f)| (i, f))
                        .expect("at least one channel");
                    let start = t.max(free);
                    chan_free[ci] = start + lat;
                    t = start + lat;
                    busy += op.len as f64 / bw;
                }
                plan.busy.push((*res, busy));
                t - now
            }
            Unit::Hdd {
                res,
                spec,
                head,
                queued,
            } => {
                let mut busy = 0.0;
                for op in ops {
                    let pos = if op.rewrite {
                        60.0 / spec.rpm
                    } else {
                        let mut d = op.off.abs_diff(*head);
                        if spec.queue == QueueOrder::Elevator {
                            let below = queued
                                .range(..=op.off)
                                .next_back()
                                .map(|(&q, _)| op.off - q);
                            let above = queued.range(op.off..).next().map(|(&q, _)| q - op.off);
                            d = d
                                .min(below.unwrap_or(u64::MAX))
                                .min(above.unwrap_or(u64::MAX));
                        }
                        if d == 0 {
                            0.0
                        } else {
                            let frac = (d as f64 / spec.capacity as f64).min(1.0);
                            spec.seek_track
                                + (spec.seek_full - spec.seek_track) * frac.sqrt()
                                + 30.0 / spec.rpm
                        }
                    };
                    let where_ = (op.off as f64 / spec.capacity as f64).min(1.0);
                    let rate = spec.transfer_rate
                        - (spec.transfer_rate - spec.transfer_rate_inner) * where_;
                    busy += pos + op.len as f64 / rate;
                    *head = op.off + op.len;
                    *queued.entry(*head).or_default() += 1;
                    plan.queued.push((id, *head));
                }
                plan.busy.push((*res, busy));
                0.0
            }
        }
    }

    /// Drops a completed request's queue entry.
    pub(crate) fn complete(&mut self, end: u64) {
        if let Unit::Hdd { queued, .. } = self
            && let Some(n) = queued.get_mut(&end)
        {
            *n -= 1;
            if *n == 0 {
                queued.remove(&end);
            }
        }
    }

    /// Relative spread of request latency (SSDs with a jitter), else 0.
    pub(crate) fn jitter(&self) -> f64 {
        match self {
            Unit::Ssd { spec, .. } => spec.latency_jitter,
            Unit::Hdd { .. } => 0.0,
        }
    }
}

/// What a sequential stream on `layout` may pay again as it moves on, for the
/// fast-forward's bound on the head movements it does not simulate; `None`
/// for SSDs, which have no head. Otherwise whether the stream reaches another
/// head every stripe unit (a RAID; on one disk it continues under its own
/// head), and the most one move to another head costs a read and a write, in
/// busy seconds: a full seek and a full revolution per positioning; one
/// positioning for a read, two for a write to a parity RAID (data and parity
/// members), each then waiting a revolution for its read-modify-write.
pub(crate) fn positioning(units: &[Unit], layout: &Layout) -> Option<(bool, [f64; 2])> {
    let (first, level) = match layout {
        Layout::Single(u) => (*u, None),
        Layout::Raid { level, members, .. } => (members[0], Some(*level)),
    };
    let Unit::Hdd { spec, .. } = &units[first] else {
        return None;
    };
    let revolution = 60.0 / spec.rpm;
    let read = spec.seek_full + revolution;
    Some(match level {
        None => (false, [read, read]),
        Some(0) => (true, [read, read]),
        Some(_) => (true, [read, 2.0 * (read + revolution)]),
    })
}

/// Appends `op` to `ops`, merging it into the last one when it continues it.
fn push(ops: &mut Vec<Op>, op: Op) {
    if let Some(l) = ops.last_mut()
        && l.access == op.access
        && l.rewrite == op.rewrite
        && l.overwrite == op.overwrite
        && l.off + l.len == op.off
    {
        l.len += op.len;
        return;
    }
    ops.push(op);
}

/// Plans a request of `exts` (device offset, length, written before) on
/// `layout` at `now`. A RAID's members write at their `write_bw` whatever was
/// written before.
pub(crate) fn plan(
    units: &mut [Unit],
    layout: &Layout,
    now: f64,
    exts: &[(u64, u64, bool)],
    access: Access,
) -> Plan {
    let mut plan = Plan::default();
    match layout {
        Layout::Single(u) => {
            let mut ops = Vec::new();
            for &(off, len, overwrite) in exts {
                push(
                    &mut ops,
                    Op {
                        off,
                        len,
                        access,
                        rewrite: false,
                        overwrite,
                    },
                );
            }
            plan.delay = units[*u].plan(*u, now, &ops, &mut plan);
        }
        Layout::Raid {
            level,
            unit,
            members,
        } => {
            let n = members.len() as u64;
            let parity = parity_disks(*level);
            let data = n - parity;
            // RAID 3 keeps parity on the last disk; 5 and 6 rotate it left-symmetric.
            let parity_disk = |row: u64, k: u64| -> u64 {
                match level {
                    3 => n - 1,
                    _ => (n - 1 - row % n + k) % n,
                }
            };
            let row_bytes = unit * data;
            // Per member: ops of the read phase, ops of the write phase.
            let mut reads: Vec<Vec<Op>> = vec![Vec::new(); members.len()];
            let mut writes: Vec<Vec<Op>> = vec![Vec::new(); members.len()];
            let disk_of = |row: u64, j: u64| -> u64 {
                if parity == 0 || *level == 3 {
                    j
                } else {
                    let p = n - 1 - row % n;
                    (p + parity + j) % n
                }
            };
            // Bytes touched per row, per data unit: row → (j → (lo, hi) within the unit).
            let mut rows: BTreeMap<u64, BTreeMap<u64, (u64, u64)>> = BTreeMap::new();
            // Runs of whole rows: first row → rows (a RAID 3's rows are a few
            // KiB: a large request spans thousands, each written the same way).
            let mut whole: BTreeMap<u64, u64> = BTreeMap::new();
            for &(off, len, _) in exts {
                let mut x = off;
                let end = off + len;
                while x < end {
                    let row = x / row_bytes;
                    if x % row_bytes == 0 && end - x >= row_bytes {
                        let k = (end - x) / row_bytes;
                        whole.insert(row, k);
                        x += k * row_bytes;
                        continue;
                    }
                    let j = (x % row_bytes) / unit;
                    let within = x % unit;
                    let take = (unit - within).min(end - x);
                    let e = rows
                        .entry(row)
                        .or_default()
                        .entry(j)
                        .or_insert((within, within));
                    e.0 = e.0.min(within);
                    e.1 = e.1.max(within + take);
                    x += take;
                }
            }
            // Rows in order: whole runs row by row, each unit of each row at
            // once, as a touched row would be (device extents do not overlap).
            let mut partial = rows.into_iter().peekable();
            let mut runs = whole.into_iter().peekable();
            loop {
                let next_whole = runs.peek().map(|&(r, _)| r);
                let next_partial = partial.peek().map(|(r, _)| *r);
                let (row, units_in_row) = match (next_whole, next_partial) {
                    (None, None) => break,
                    (Some(w), p) if p.is_none_or(|p| w < p) => {
                        let (first, k) = runs.next().expect("peeked");
                        for row in first..first + k {
                            let base = row * unit;
                            for j in 0..data {
                                let op = Op {
                                    off: base,
                                    len: *unit,
                                    access,
                                    rewrite: false,
                                    overwrite: false,
                                };
                                let d = disk_of(row, j) as usize;
                                match access {
                                    Access::Write => push(&mut writes[d], op),
                                    Access::Read => push(&mut reads[d], op),
                                }
                            }
                            if access == Access::Write {
                                for k in 0..parity {
                                    let d = parity_disk(row, k) as usize;
                                    push(
                                        &mut writes[d],
                                        Op {
                                            off: base,
                                            len: *unit,
                                            access: Access::Write,
                                            rewrite: false,
                                            overwrite: false,
                                        },
                                    );
                                }
                            }
                        }
                        continue;
                    }
                    _ => partial.next().expect("peeked"),
                };
                let base = row * unit;
                let touched: u64 = units_in_row.values().map(|(lo, hi)| hi - lo).sum();
                for (&j, &(lo, hi)) in &units_in_row {
                    let d = disk_of(row, j) as usize;
                    let op = Op {
                        off: base + lo,
                        len: hi - lo,
                        access,
                        rewrite: false,
                        overwrite: false,
                    };
                    if access == Access::Write && parity > 0 && touched < row_bytes {
                        push(
                            &mut reads[d],
                            Op {
                                access: Access::Read,
                                ..op
                            },
                        );
                        push(
                            &mut writes[d],
                            Op {
                                rewrite: true,
                                ..op
                            },
                        );
                    } else if access == Access::Write {
                        push(&mut writes[d], op);
                    } else {
                        push(&mut reads[d], op);
                    }
                }
                if access == Access::Write && parity > 0 {
                    let lo = units_in_row
                        .values()
                        .map(|r| r.0)
                        .min()
                        .expect("row touched");
                    let hi = units_in_row
                        .values()
                        .map(|r| r.1)
                        .max()
                        .expect("row touched");
                    let full = touched == row_bytes;
                    for k in 0..parity {
                        let d = parity_disk(row, k) as usize;
                        let op = Op {
                            off: base + lo,
                            len: hi - lo,
                            access: Access::Write,
                            rewrite: !full,
                            overwrite: false,
                        };
                        if !full {
                            push(
                                &mut reads[d],
                                Op {
                                    access: Access::Read,
                                    rewrite: false,
                                    ..op
                                },
                            );
                        }
                        push(&mut writes[d], op);
                    }
                }
            }
            let mut delay: f64 = 0.0;
            for (i, &u) in members.iter().enumerate() {
                let mut ops = std::mem::take(&mut reads[i]);
                ops.append(&mut writes[i]);
                if !ops.is_empty() {
                    delay = delay.max(units[u].plan(u, now, &ops, &mut plan));
                }
            }
            plan.delay = delay;
        }
    }
    plan
}
