//! From a trace to the I/O phases of the application (`shared/spec/io_phases.md`
//! §2–3): each rank's calls merged into local access patterns, then the
//! patterns the ranks share into global phases.
//!
//! * **Local pattern**: a unit of one to four calls (each an access and a
//!   request size) on one file, repeated with one constant displacement between
//!   the offsets of successive repetitions, the calls of a repetition and the
//!   repetitions following one another in the rank's ticks (no other MPI call
//!   in between). The longest cover wins; between equal covers, the shorter unit.
//! * **Phase**: the k-th patterns of the ranks that have the same file, unit,
//!   repetitions and displacement (SPMD programs repeat their patterns in the
//!   same order on every rank). Its weight is np · rep · Σ request sizes; its
//!   initial offset, as a function of the rank, `a + b·rank` where one line fits
//!   every rank, listed otherwise.

use std::collections::BTreeMap;

use super::{Access, Pointer, Record};

/// The longest unit a local pattern repeats.
pub const MAX_UNIT: usize = 4;

/// One call of a pattern's unit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize)]
pub struct UnitCall {
    /// Read or write.
    pub access: Access,
    /// Request size, bytes.
    pub bytes: u64,
}

/// A rank's local access pattern.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Pattern {
    /// The rank.
    pub rank: usize,
    /// The file.
    pub file: String,
    /// The repeated calls.
    pub unit: Vec<UnitCall>,
    /// Repetitions of the unit.
    pub reps: u64,
    /// Bytes between the offsets of successive repetitions (`None`: one
    /// repetition, or offsets unknown).
    pub displacement: Option<i64>,
    /// Offset of the unit's first call in the first repetition.
    pub initial_offset: Option<u64>,
    /// Ticks of the first and last call.
    pub ticks: (u64, u64),
    /// Start of the first call and end of the last, seconds.
    pub span: (f64, f64),
    /// Indices of its records in the rank's list, first to last.
    pub records: (usize, usize),
}

/// Splits one rank's records (in tick order) into local patterns.
pub fn local_patterns(records: &[Record]) -> Vec<Pattern> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < records.len() {
        let (unit, reps) = best_unit(records, i);
        let end = i + unit * reps as usize - 1;
        let (first, last) = (&records[i], &records[end]);
        let displacement = if reps > 1 {
            match (records[i].offset, records[i + unit].offset) {
                (Some(a), Some(b)) => Some(b as i64 - a as i64),
                _ => None,
            }
        } else {
            None
        };
        out.push(Pattern {
            rank: first.rank,
            file: first.file.clone(),
            unit: records[i..i + unit]
                .iter()
                .map(|r| UnitCall {
                    access: r.access,
                    bytes: r.bytes,
                })
                .collect(),
            reps,
            displacement,
            initial_offset: first.offset,
            ticks: (first.tick, last.tick),
            span: (first.start, last.start + last.duration),
            records: (i, end),
        });
        i = end + 1;
    }
    out
}

/// The unit length and repetitions that cover the most calls from `i`.
fn best_unit(r: &[Record], i: usize) -> (usize, u64) {
    let mut best = (1, 1);
    for len in 1..=MAX_UNIT.min(r.len() - i) {
        let reps = repetitions(r, i, len);
        if (len == 1 || reps >= 2) && len as u64 * reps > best.0 as u64 * best.1 {
            best = (len, reps);
        }
    }
    best
}

/// How many times the `len` calls from `i` repeat, back to back.
fn repetitions(r: &[Record], i: usize, len: usize) -> u64 {
    let unit = &r[i..i + len];
    // Inside the unit: one file, consecutive ticks.
    if unit
        .windows(2)
        .any(|w| w[1].file != w[0].file || w[1].tick != w[0].tick + 1)
    {
        return 0;
    }
    let mut reps = 1u64;
    let mut displacement: Option<Option<i64>> = None;
    loop {
        let next = i + reps as usize * len;
        if next + len > r.len() {
            return reps;
        }
        let (prev, cand) = (&r[next - len..next], &r[next..next + len]);
        let same_shape = cand
            .iter()
            .zip(unit)
            .all(|(c, u)| c.file == u.file && c.access == u.access && c.bytes == u.bytes);
        let ticks_follow = cand[0].tick == prev[len - 1].tick + 1
            && cand.windows(2).all(|w| w[1].tick == w[0].tick + 1);
        if !same_shape || !ticks_follow {
            return reps;
        }
        // One displacement for every call of the unit, and for every repetition.
        let d: Vec<Option<i64>> = cand
            .iter()
            .zip(prev)
            .map(|(c, p)| match (c.offset, p.offset) {
                (Some(a), Some(b)) => Some(a as i64 - b as i64),
                _ => None,
            })
            .collect();
        if d.windows(2).any(|w| w[0] != w[1]) {
            return reps;
        }
        match displacement {
            None => displacement = Some(d[0]),
            Some(known) if known != d[0] => return reps,
            Some(_) => {}
        }
        reps += 1;
    }
}

/// How a phase's calls reach the file.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Metadata {
    /// `sequential` (each call of the unit starts where its previous
    /// repetition ended), `strided` (a constant displacement otherwise), `random` (no constant displacement) or `single` (one repetition).
    pub access_mode: String,
    /// `shared` (one file for all its ranks) or `per-process`.
    pub access_type: String,
    /// Collective calls (`None` where the trace does not say).
    pub collective: Option<bool>,
    /// Blocking calls.
    pub blocking: bool,
    /// Explicit offsets, individual or shared file pointers.
    pub pointer: Pointer,
    /// MPI-IO (true) or POSIX calls.
    pub mpiio: bool,
}

/// The initial offset of a phase as a function of the rank.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum InitialOffset {
    /// `a + b·rank` for every rank of the phase.
    Linear {
        /// Offset of rank 0.
        a: i64,
        /// Bytes per rank.
        b: i64,
    },
    /// Per rank, where no line fits (or offsets are unknown: `None`).
    Listed(Vec<(usize, Option<u64>)>),
}

impl std::fmt::Display for InitialOffset {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            InitialOffset::Linear { a, b: 0 } => write!(f, "{a}"),
            InitialOffset::Linear { a: 0, b } => write!(f, "{b}·idP"),
            InitialOffset::Linear { a, b } => write!(f, "{a} + {b}·idP"),
            InitialOffset::Listed(v) if v.iter().all(|x| x.1.is_none()) => write!(f, "unknown"),
            InitialOffset::Listed(v) => write!(f, "listed ({} ranks)", v.len()),
        }
    }
}

/// A global I/O phase.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Phase {
    /// 1, 2, … in the order the phases begin.
    pub id: usize,
    /// The file.
    pub file: String,
    /// The unit every rank repeats.
    pub unit: Vec<UnitCall>,
    /// Ranks taking part (np).
    pub ranks: Vec<usize>,
    /// Repetitions of the unit per rank (rep).
    pub reps: u64,
    /// Bytes between repetitions.
    pub displacement: Option<i64>,
    /// Σ over its ranks of rep · Σ request sizes (np · rep · rs when the ranks
    /// agree), bytes.
    pub weight: u64,
    /// The smallest and largest request size over the ranks where they differ:
    /// ranks of one collective call may each bring a different amount (BTIO on
    /// a grid that does not divide evenly); `None` where all agree.
    pub request_range: Option<(u64, u64)>,
    /// f(initOffset).
    pub initial_offset: InitialOffset,
    /// First tick of the phase (lowest over its ranks).
    pub tick: u64,
    /// From the first call's start to the last call's end over its ranks, seconds.
    pub span: (f64, f64),
    /// The longest time a rank spent in the phase's calls (the sum of their
    /// durations), seconds: what the traced run paid, waits included.
    pub io_time: f64,
    /// The phase's I/O time once its ranks are all in it, seconds: for
    /// collective calls, from the last rank's arrival to the last return,
    /// summed over the calls (a rank that arrives early waits for the others,
    /// which is the application's imbalance, not its I/O); for independent
    /// calls `io_time`. BW_MD = weight / this.
    pub io_time_all_in: f64,
    /// How it reaches the file.
    pub metadata: Metadata,
}

impl Phase {
    /// The unit's operations as `write`, `read` or `write+read`.
    pub fn operations(&self) -> String {
        let mut ops: Vec<&str> = self
            .unit
            .iter()
            .map(|u| match u.access {
                Access::Write => "write",
                Access::Read => "read",
            })
            .collect();
        ops.dedup();
        ops.join("+")
    }

    /// Request sizes of the unit (one number when they agree; `min..max` over
    /// the ranks where they differ).
    pub fn request_size(&self) -> String {
        if let Some((lo, hi)) = self.request_range {
            return format!("{lo}..{hi}");
        }
        let mut sizes: Vec<u64> = self.unit.iter().map(|u| u.bytes).collect();
        sizes.dedup();
        sizes
            .iter()
            .map(u64::to_string)
            .collect::<Vec<_>>()
            .join("+")
    }

    /// The request size a replay uses: the unit's first call's where the ranks
    /// agree, else the mean over ranks, calls and repetitions.
    pub fn replay_request(&self) -> u64 {
        match self.request_range {
            None => self.unit.first().map_or(0, |u| u.bytes),
            Some(_) => {
                let calls = self.ranks.len() as u64 * self.reps * self.unit.len() as u64;
                self.weight / calls.max(1)
            }
        }
    }

    /// The bandwidth the traced run reached in the phase: weight over its I/O
    /// time with every rank in (the measured BW_MD where the trace came from a
    /// real run), bytes/s.
    pub fn traced_bandwidth(&self) -> f64 {
        if self.io_time_all_in > 0.0 {
            self.weight as f64 / self.io_time_all_in
        } else {
            0.0
        }
    }
}

/// The phases of `records` (every rank's data calls, by rank then tick).
pub fn phases(records: &[Record]) -> Vec<Phase> {
    // Each rank's patterns, in order.
    let mut by_rank: BTreeMap<usize, Vec<Record>> = BTreeMap::new();
    for r in records {
        by_rank.entry(r.rank).or_default().push(r.clone());
    }
    type Key = (String, Vec<UnitCall>, u64, Option<i64>, usize);
    let mut groups: BTreeMap<Key, Vec<(Pattern, Vec<Record>)>> = BTreeMap::new();
    for recs in by_rank.values() {
        let mut seen: BTreeMap<(String, Vec<UnitCall>, u64, Option<i64>), usize> = BTreeMap::new();
        for p in local_patterns(recs) {
            // The ranks of a collective call take part in one operation whatever
            // each brings: their request sizes do not tell phases apart.
            let collective = recs[p.records.0..=p.records.1]
                .iter()
                .all(|r| r.collective == Some(true));
            let unit = match collective {
                true => p.unit.iter().map(|u| UnitCall { bytes: 0, ..*u }).collect(),
                false => p.unit.clone(),
            };
            let shape = (p.file.clone(), unit, p.reps, p.displacement);
            let k = seen.entry(shape.clone()).or_insert(0);
            let key = (shape.0, shape.1, shape.2, shape.3, *k);
            *k += 1;
            let mine = recs[p.records.0..=p.records.1].to_vec();
            groups.entry(key).or_default().push((p, mine));
        }
    }
    let mut out: Vec<Phase> = groups
        .into_values()
        .map(|members| {
            let first = &members[0].0;
            let ranks: Vec<usize> = members.iter().map(|m| m.0.rank).collect();
            let unit_bytes = |p: &Pattern| p.unit.iter().map(|u| u.bytes).sum::<u64>();
            let firsts = members
                .iter()
                .map(|m| m.0.unit.first().map_or(0, |u| u.bytes));
            let request_range = Some((firsts.clone().min(), firsts.max()))
                .and_then(|(lo, hi)| lo.zip(hi))
                .filter(|(lo, hi)| lo != hi);
            let all: Vec<&Record> = members.iter().flat_map(|m| m.1.iter()).collect();
            let span = (
                members
                    .iter()
                    .map(|m| m.0.span.0)
                    .fold(f64::INFINITY, f64::min),
                members
                    .iter()
                    .map(|m| m.0.span.1)
                    .fold(f64::NEG_INFINITY, f64::max),
            );
            Phase {
                id: 0,
                file: first.file.clone(),
                unit: first.unit.clone(),
                reps: first.reps,
                displacement: first.displacement,
                weight: members.iter().map(|m| m.0.reps * unit_bytes(&m.0)).sum(),
                request_range,
                initial_offset: fit_offsets(members.iter().map(|m| (m.0.rank, m.0.initial_offset))),
                tick: members.iter().map(|m| m.0.ticks.0).min().unwrap_or(0),
                span,
                io_time: longest_sum(&members),
                io_time_all_in: match all.iter().all(|r| r.collective == Some(true)) {
                    true => all_in_time(&members),
                    false => longest_sum(&members),
                },
                metadata: Metadata {
                    access_mode: match (first.reps, first.displacement) {
                        (1, _) => "single".into(),
                        // Each call of the unit follows its previous repetition.
                        (_, Some(d)) if first.unit.iter().all(|u| u.bytes as i64 == d) => {
                            "sequential".into()
                        }
                        (_, Some(_)) => "strided".into(),
                        (_, None) => "random".into(),
                    },
                    access_type: String::new(),
                    collective: all
                        .iter()
                        .map(|r| r.collective)
                        .reduce(|a, b| if a == b { a } else { None })
                        .flatten(),
                    blocking: all.iter().all(|r| r.blocking),
                    pointer: all
                        .iter()
                        .map(|r| r.pointer)
                        .reduce(|a, b| if a == b { a } else { Pointer::Unknown })
                        .unwrap_or(Pointer::Unknown),
                    mpiio: all.iter().all(|r| r.mpiio),
                },
                ranks,
            }
        })
        .collect();
    // A file is shared when more than one rank touches it anywhere in the trace.
    let mut users: BTreeMap<&str, std::collections::BTreeSet<usize>> = BTreeMap::new();
    for r in records {
        users.entry(r.file.as_str()).or_default().insert(r.rank);
    }
    for p in &mut out {
        p.metadata.access_type = match users.get(p.file.as_str()).map_or(0, |u| u.len()) {
            0 | 1 => "per-process".into(),
            _ => "shared".into(),
        };
    }
    out.sort_by(|a, b| a.span.0.total_cmp(&b.span.0).then(a.tick.cmp(&b.tick)));
    for (k, p) in out.iter_mut().enumerate() {
        p.id = k + 1;
    }
    out
}

/// The longest of the members' sums of call durations.
fn longest_sum(members: &[(Pattern, Vec<Record>)]) -> f64 {
    members
        .iter()
        .map(|m| m.1.iter().map(|r| r.duration).sum::<f64>())
        .fold(0.0, f64::max)
}

/// Σ over the k-th calls of the members (one collective call each) of the
/// last return minus the last arrival.
fn all_in_time(members: &[(Pattern, Vec<Record>)]) -> f64 {
    let calls = members.iter().map(|m| m.1.len()).min().unwrap_or(0);
    (0..calls)
        .map(|k| {
            let last = |f: &dyn Fn(&Record) -> f64| {
                members
                    .iter()
                    .map(|m| f(&m.1[k]))
                    .fold(f64::NEG_INFINITY, f64::max)
            };
            (last(&|r| r.start + r.duration) - last(&|r| r.start)).max(0.0)
        })
        .sum()
}

/// `a + b·rank` through every (rank, offset), or the list where none fits.
fn fit_offsets(points: impl Iterator<Item = (usize, Option<u64>)>) -> InitialOffset {
    let v: Vec<(usize, Option<u64>)> = points.collect();
    let known: Vec<(i64, i64)> = v
        .iter()
        .filter_map(|&(r, o)| o.map(|o| (r as i64, o as i64)))
        .collect();
    if known.len() != v.len() || known.is_empty() {
        return InitialOffset::Listed(v);
    }
    let (r0, o0) = known[0];
    let b = match known.iter().find(|&&(r, _)| r != r0) {
        Some(&(r1, o1)) if (o1 - o0) % (r1 - r0) == 0 => (o1 - o0) / (r1 - r0),
        Some(_) => return InitialOffset::Listed(v),
        None => 0,
    };
    let a = o0 - b * r0;
    if known.iter().all(|&(r, o)| o == a + b * r) {
        InitialOffset::Linear { a, b }
    } else {
        InitialOffset::Listed(v)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::trace::{Traced, trace_rows, write_trace};
    use crate::ctx::{Hints, RankProgram};

    /// The phases of `program` traced in the twin on `ranks` ranks of nfs-raid5.
    fn traced_phases<P: RankProgram>(program: P, ranks: usize) -> Vec<Phase> {
        let scenario = piotwin_sim::Scenario::from_str(
            include_str!("../../scenarios/nfs-raid5.toml"),
            "nfs-raid5.toml",
        )
        .unwrap();
        let (outs, _) = crate::backend::sim::launch(
            &scenario,
            ranks,
            piotwin_sim::SimOptions {
                seed: 1,
                fast_forward: false,
            },
            &Traced {
                inner: program,
                files_only: true,
            },
        )
        .unwrap();
        let rows: Vec<Vec<u8>> = outs
            .iter()
            .enumerate()
            .map(|(r, (_, calls))| trace_rows(r, calls))
            .collect();
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.csv");
        write_trace(&path, &rows).unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        phases(&crate::phases::read("t.csv", &text).unwrap().records)
    }

    /// The I/O-phase paper's MADbench2 run: 16 ranks, 8KPIX, B = 8, G = 1,
    /// SHARED, 32 MiB per call: five phases.
    #[test]
    fn madbench2_8kpix_on_16_ranks_has_the_papers_five_phases() {
        use crate::bench::madbench2::*;
        let args = Madbench2Args {
            no_pix: 8192,
            no_bin: 8,
            no_gang: 1,
            sblocksize: 32,
            fblocksize: 1024,
            rmod: 1,
            wmod: 1,
            iomethod: IoMethod::Mpi,
            iomode: IoMode::Sync,
            filetype: FileType::Shared,
            bwexp: None,
            remap: Remap::Custom,
            dir: "/mb".into(),
            keep: false,
            zero_data: false,
            plot: None,
        };
        let found = traced_phases(Madbench2Program::new(args.validate(16).unwrap()), 16);
        let mib32 = 32u64 << 20;
        let shape: Vec<(String, usize, String, u64, u64, String)> = found
            .iter()
            .map(|p| {
                (
                    p.operations(),
                    p.ranks.len(),
                    p.request_size(),
                    p.reps,
                    p.weight,
                    p.initial_offset.to_string(),
                )
            })
            .collect();
        let rank_stride = format!("{}·idP", 8 * mib32);
        let row = |op: &str, rep: u64, weight: u64, off: String| {
            (op.to_string(), 16, mib32.to_string(), rep, weight, off)
        };
        assert_eq!(
            shape,
            [
                row("write", 8, 4 << 30, rank_stride.clone()),
                row("read", 2, 1 << 30, rank_stride.clone()),
                // w_k then r_(k+2): the unit (write, read) six times, 6 GiB.
                (
                    "write+read".to_string(),
                    16,
                    mib32.to_string(),
                    6,
                    6 << 30,
                    rank_stride.clone()
                ),
                row(
                    "write",
                    2,
                    1 << 30,
                    format!("{} + {}·idP", 6 * mib32, 8 * mib32)
                ),
                row("read", 8, 4 << 30, rank_stride),
            ]
        );
        assert!(found.iter().all(|p| p.metadata.access_mode == "sequential"
            && p.metadata.access_type == "shared"
            && p.metadata.collective == Some(false)));
    }

    /// NPB BTIO `full` on `ranks` ranks: one phase per dump (the steps between
    /// dumps communicate, `copy_faces`), each of `ranks` collective writes of a
    /// rank's share of the grid, then one read phase of 40 repetitions.
    fn btio_full_has_the_papers_41_phases(class: &str, ranks: usize) -> Vec<Phase> {
        use crate::bench::btio::{BtioArgs, BtioProgram};
        use clap::Parser;
        #[derive(Parser)]
        struct Args {
            #[command(flatten)]
            btio: BtioArgs,
        }
        let args = Args::parse_from(["btio", "--class", class, "--subtype", "full", "-p", "/bt"]);
        let cfg = args.btio.resolve(ranks).unwrap();
        let dump_bytes = 40 * cfg.grid.iter().product::<u64>();
        let found = traced_phases(BtioProgram::new(cfg, &Hints::new()), ranks);
        assert_eq!(found.len(), 41, "{class} on {ranks}");
        let shape = |p: &Phase| {
            (
                p.operations(),
                p.ranks.len(),
                p.reps,
                p.weight,
                p.metadata.collective,
            )
        };
        for p in &found[..40] {
            assert_eq!(shape(p), ("write".into(), ranks, 1, dump_bytes, Some(true)));
        }
        assert_eq!(
            shape(&found[40]),
            ("read".into(), ranks, 40, 40 * dump_bytes, Some(true))
        );
        found
    }

    #[test]
    fn btio_full_class_a_on_4_ranks() {
        // 64³ on 2 × 2 cells: every rank brings 40 · 64³ / 4 bytes per dump.
        let found = btio_full_has_the_papers_41_phases("A", 4);
        assert!(found.iter().all(|p| p.request_size() == "2621440"));
    }

    #[test]
    fn btio_full_class_c_on_16_ranks() {
        // 162 = 2 · 41 + 2 · 40 points per direction: ranks bring 40 · 41³ · … bytes,
        // the replay their mean.
        let found = btio_full_has_the_papers_41_phases("C", 16);
        let mean = 40 * 162u64.pow(3) / 16;
        assert!(
            found[..40]
                .iter()
                .all(|p| p.request_range.is_some() && p.replay_request() == mean)
        );
        assert_eq!(found[40].replay_request(), mean);
    }
}
