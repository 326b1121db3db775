//! b_eff_io's pattern table and schedule arithmetic as data and pure functions:
//! the 43 patterns in 5 types, Lmax (the paper's M_PART), the default partitions,
//! the time budget (Tn, ΣU, Tp), and the repetition counts and segment size of the
//! segmented types 3 and 4.
//!
//! Source: R. Rabenseifner, A. E. Koniges, "Effective File-I/O Bandwidth Benchmark",
//! Euro-Par 2000, LNCS 1900, pp. 1273–1283; and the public b_eff_io release 2.1
//! (Dec. 2001), whose arithmetic (integer Tn, the rounding of the default partition
//! rule) is what users compare against.

use serde::Serialize;

/// One KiB in bytes.
pub const KIB: u64 = 1024;
/// One MiB in bytes.
pub const MIB: u64 = 1024 * 1024;
/// Bytes per etype: b_eff_io moves `MPI_DOUBLE`s.
pub const ETYPE_BYTES: u64 = 8;
/// The validity threshold for the scheduled time per partition, in seconds.
pub const T_CRIT: u64 = 1800;

/// The three access passes, in the order they run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Pass {
    /// First write: time-driven for types 0–2.
    Write,
    /// Rewrite of the same data (type 0 only unless `-rewrite`).
    Rewrite,
    /// Read back and verify.
    Read,
}

impl Pass {
    /// All passes in running order.
    pub const ALL: [Pass; 3] = [Pass::Write, Pass::Rewrite, Pass::Read];
    /// 0, 1, 2.
    pub fn index(self) -> usize {
        self as usize
    }
    /// `write`, `rewrite`, `read` (the original's names).
    pub fn name(self) -> &'static str {
        ["write", "rewrite", "read"][self.index()]
    }
}

/// The five pattern types.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum PatternType {
    /// Type 0: strided (darray) view, collective, individual file pointer.
    Scatter,
    /// Type 1: shared file pointer, collective (`MPI_File_write_ordered`).
    Shared,
    /// Type 2: one file per process, non-collective.
    Separated,
    /// Type 3: one segment per process in a shared file, non-collective.
    Segmented,
    /// Type 4: as type 3, collective.
    SegColl,
}

impl PatternType {
    /// All types in running order.
    pub const ALL: [PatternType; 5] = [
        PatternType::Scatter,
        PatternType::Shared,
        PatternType::Separated,
        PatternType::Segmented,
        PatternType::SegColl,
    ];
    /// 0..=4.
    pub fn index(self) -> usize {
        self as usize
    }
    /// The original's names (also used in the `-i` hints file).
    pub fn name(self) -> &'static str {
        ["scatter", "shared", "separated", "segmented", "seg_coll"][self.index()]
    }
    /// The type for a hints-file word.
    pub fn from_name(s: &str) -> Option<PatternType> {
        PatternType::ALL.into_iter().find(|t| t.name() == s)
    }
    /// The weight in the access-method average: type 0 counts double.
    pub fn weight(self) -> f64 {
        if self == PatternType::Scatter {
            2.0
        } else {
            1.0
        }
    }
    /// The patterns of this type, in running order.
    pub fn patterns(self) -> &'static [PatternDef] {
        let start = PATTERNS.iter().position(|p| p.ptype == self).unwrap_or(0);
        let len = PATTERNS.iter().filter(|p| p.ptype == self).count();
        &PATTERNS[start..start + len]
    }
}

/// A size in the pattern table.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum Size {
    /// A fixed number of bytes.
    Bytes(u64),
    /// Lmax, the largest chunk (see [`lmax_bytes`]).
    Lmax,
    /// The type 3/4 filler: what completes the segment to Lseg (see [`SegmentPlan`]).
    Filler,
}

/// Where a pattern's bandwidth appears in the summary table.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum Row {
    /// Not in the table (the first pattern of each type, the filler).
    Hidden,
    /// Row `1..=7` of the chunk-size column: 1k, 1k+8, 32k, 32k+8, 1M, 1M+8, Lmax.
    Chunk(usize),
    /// Type 0's l = 1 MiB, L = 2 MiB pattern, printed below the table.
    ScatterTwoMib,
}

/// One pattern: l = contiguous chunk on disk, L = bytes per call per process, U = time units.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct PatternDef {
    /// Global pattern number 0..43 (the original's `p`).
    pub id: usize,
    /// Its type.
    pub ptype: PatternType,
    /// Number within the type, from 0.
    pub number: usize,
    /// Contiguous chunk on disk.
    pub l: Size,
    /// Bytes per call and process.
    pub big_l: Size,
    /// Share of the time budget, in units of Tn/ΣU.
    pub u: u64,
    /// Summary-table row.
    pub row: Row,
}

impl PatternDef {
    /// The first pattern of its type (the file is opened before it).
    pub fn is_first(&self) -> bool {
        self.number == 0
    }
    /// The last pattern of its type (the file is closed after it).
    pub fn is_last(&self) -> bool {
        self.number + 1 == self.ptype.patterns().len()
    }
    /// `(l, L)` in bytes for a given Lmax and filler size.
    pub fn sizes(&self, lmax: u64, filler: u64) -> (u64, u64) {
        let r = |s: Size| match s {
            Size::Bytes(b) => b,
            Size::Lmax => lmax,
            Size::Filler => filler,
        };
        (r(self.l), r(self.big_l))
    }
}

const fn pat(
    id: usize,
    t: PatternType,
    number: usize,
    l: Size,
    big_l: Size,
    u: u64,
    row: Row,
) -> PatternDef {
    PatternDef {
        id,
        ptype: t,
        number,
        l,
        big_l,
        u,
        row,
    }
}

use PatternType::{Scatter as T0, SegColl as T4, Segmented as T3, Separated as T2, Shared as T1};
use Row::{Chunk, Hidden};
use Size::{Bytes as B, Filler, Lmax};

/// The chunk list shared by types 1–4, in pattern order: 1M, Lmax, 1M, 32k, 1k, 32k+8, 1k+8, 1M+8.
const M: u64 = MIB;
const K: u64 = KIB;

/// The 43 patterns (b_eff_io 2.1's table), in running order. ΣU = 64.
pub static PATTERNS: [PatternDef; 43] = [
    pat(0, T0, 0, B(M), B(M), 0, Hidden),
    pat(1, T0, 1, Lmax, Lmax, 4, Chunk(7)),
    pat(2, T0, 2, B(M), B(2 * M), 4, Row::ScatterTwoMib),
    pat(3, T0, 3, B(M), B(M), 4, Chunk(5)),
    pat(4, T0, 4, B(32 * K), B(M), 2, Chunk(3)),
    pat(5, T0, 5, B(K), B(M), 2, Chunk(1)),
    pat(6, T0, 6, B(32 * K + 8), B(M + 256), 2, Chunk(4)),
    pat(7, T0, 7, B(K + 8), B(M + 8 * K), 2, Chunk(2)),
    pat(8, T0, 8, B(M + 8), B(M + 8), 2, Chunk(6)),
    pat(9, T1, 0, B(M), B(M), 0, Hidden),
    pat(10, T1, 1, Lmax, Lmax, 4, Chunk(7)),
    pat(11, T1, 2, B(M), B(M), 2, Chunk(5)),
    pat(12, T1, 3, B(32 * K), B(32 * K), 1, Chunk(3)),
    pat(13, T1, 4, B(K), B(K), 1, Chunk(1)),
    pat(14, T1, 5, B(32 * K + 8), B(32 * K + 8), 1, Chunk(4)),
    pat(15, T1, 6, B(K + 8), B(K + 8), 1, Chunk(2)),
    pat(16, T1, 7, B(M + 8), B(M + 8), 2, Chunk(6)),
    pat(17, T2, 0, B(M), B(M), 0, Hidden),
    pat(18, T2, 1, Lmax, Lmax, 2, Chunk(7)),
    pat(19, T2, 2, B(M), B(M), 2, Chunk(5)),
    pat(20, T2, 3, B(32 * K), B(32 * K), 1, Chunk(3)),
    pat(21, T2, 4, B(K), B(K), 1, Chunk(1)),
    pat(22, T2, 5, B(32 * K + 8), B(32 * K + 8), 1, Chunk(4)),
    pat(23, T2, 6, B(K + 8), B(K + 8), 1, Chunk(2)),
    pat(24, T2, 7, B(M + 8), B(M + 8), 2, Chunk(6)),
    pat(25, T3, 0, B(M), B(M), 0, Hidden),
    pat(26, T3, 1, Lmax, Lmax, 2, Chunk(7)),
    pat(27, T3, 2, B(M), B(M), 2, Chunk(5)),
    pat(28, T3, 3, B(32 * K), B(32 * K), 1, Chunk(3)),
    pat(29, T3, 4, B(K), B(K), 1, Chunk(1)),
    pat(30, T3, 5, B(32 * K + 8), B(32 * K + 8), 1, Chunk(4)),
    pat(31, T3, 6, B(K + 8), B(K + 8), 1, Chunk(2)),
    pat(32, T3, 7, B(M + 8), B(M + 8), 2, Chunk(6)),
    pat(33, T3, 8, Filler, Filler, 0, Hidden),
    pat(34, T4, 0, B(M), B(M), 0, Hidden),
    pat(35, T4, 1, Lmax, Lmax, 2, Chunk(7)),
    pat(36, T4, 2, B(M), B(M), 2, Chunk(5)),
    pat(37, T4, 3, B(32 * K), B(32 * K), 1, Chunk(3)),
    pat(38, T4, 4, B(K), B(K), 1, Chunk(1)),
    pat(39, T4, 5, B(32 * K + 8), B(32 * K + 8), 1, Chunk(4)),
    pat(40, T4, 6, B(K + 8), B(K + 8), 1, Chunk(2)),
    pat(41, T4, 7, B(M + 8), B(M + 8), 2, Chunk(6)),
    pat(42, T4, 8, Filler, Filler, 0, Hidden),
];

/// The chunk size of summary row `1..=7` in bytes (row 7 is Lmax).
pub fn row_chunk_bytes(row: usize, lmax: u64) -> u64 {
    [K, K + 8, 32 * K, 32 * K + 8, M, M + 8, lmax][row - 1]
}

/// The x position of summary row `1..=7` in the paper's plots (gnuplot's
/// `set xtics ("1k" 1, "+8" 2, "32k" 4, "+8" 5, "1M" 7, "+8" 8, "Lmax" 10)`).
pub fn row_plot_x(row: usize) -> f64 {
    [1.0, 2.0, 4.0, 5.0, 7.0, 8.0, 10.0][row - 1]
}

/// Lmax (the paper's M_PART) in bytes for `mb` MiB of memory per process:
/// `mb` MiB / 128, clamped to [2 MiB, 1 GiB].
pub fn lmax_bytes(mb: u64) -> u64 {
    MIB / 128 * mb.clamp(2 * 128, 1024 * 128)
}

/// The default partitions for `n` processes: `[1]` for 1, `[1, 2]` for 2, otherwise
/// `[2^round(0.35·log2 n), 2^round(0.70·log2 n), n]` with the first entry 1 for
/// n = 3 and the second 3 for n = 4.
///
/// Rounding is half-up with a 1e-7 allowance, as release 2.1 does it: 0.35 is not
/// exact in binary, so 0.35·log2(1024) evaluates just below 3.5, which still rounds
/// to 4 (the release's table gives 16 for 1024 processes).
pub fn default_partitions(n: usize) -> Vec<usize> {
    let pow2 = |f: f64| -> usize {
        let e = ((n as f64).log2() * f + 0.5 + 1e-7).floor();
        2f64.powf(e).round() as usize
    };
    match n {
        0 => vec![],
        1 => vec![1],
        2 => vec![1, 2],
        _ => {
            let small = if n == 3 { 1 } else { pow2(0.35) };
            let medium = if n == 4 { 3 } else { pow2(0.70) };
            vec![small, medium, n]
        }
    }
}

/// The patterns a pass runs: all 43, except the rewrite pass without `-rewrite`,
/// which runs type 0 only.
pub fn patterns_in_pass(pass: Pass, rewrite_all: bool) -> &'static [PatternDef] {
    if pass == Pass::Rewrite && !rewrite_all {
        PatternType::Scatter.patterns()
    } else {
        &PATTERNS
    }
}

/// ΣU over the three passes: 64 + (64 with `-rewrite`, else 22) + 64.
pub fn usum(rewrite_all: bool) -> u64 {
    Pass::ALL
        .iter()
        .flat_map(|&p| patterns_in_pass(p, rewrite_all))
        .map(|p| p.u)
        .sum()
}

/// Tn, the scheduled time per partition in whole seconds: `T / #partitions`
/// (integer division, as release 2.1).
pub fn tn_seconds(t: u64, partitions: usize) -> u64 {
    t / partitions.max(1) as u64
}

/// Tp, a pattern's time budget in seconds: `U · Tn / ΣU`.
pub fn tp_seconds(u: u64, tn: u64, usum: u64) -> f64 {
    tn as f64 / usum as f64 * u as f64
}

/// Repetition counts and segment size of types 3 and 4 (derived from the write
/// pass's counts of types 0–2, for one partition).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SegmentPlan {
    /// Repetitions of each of the 9 patterns of type 3 (= type 4), filler last (1).
    pub reps: [u64; 9],
    /// Bytes of the patterns 0..8 (without the filler): 1 MiB + Σ rep3[k]·l[k].
    pub data: u64,
    /// Lseg: `data` rounded up to whole MiB.
    pub lseg: u64,
    /// The filler pattern's size: `lseg − data` (may be 0).
    pub filler: u64,
}

/// rep3 and Lseg from the write pass's repetition counts `reps` (indexed by global
/// pattern number, at least patterns 0..25 of types 0–2):
/// rep3[0] = 1; for k = 1..7: rep3[k] = min(rep0[k']·(L/l)[k'], 10·rep1[k], rep2[k])
/// with k' = k for k ≤ 1 and k + 1 otherwise (skipping type 0's L = 2 MiB pattern);
/// Lseg = ⌈(1 MiB + Σ rep3[k]·l[k]) / 1 MiB⌉ MiB; the filler writes the rest once.
pub fn segment_plan(reps: &[u64], lmax: u64) -> SegmentPlan {
    let t0 = PatternType::Scatter.patterns();
    let t1 = PatternType::Shared.patterns();
    let t2 = PatternType::Separated.patterns();
    let t3 = PatternType::Segmented.patterns();
    let mut out = [1u64; 9];
    let (l30, _) = t3[0].sizes(lmax, 0);
    let mut data = l30;
    for k in 1..8 {
        let k0 = if k <= 1 { k } else { k + 1 };
        let (l0, big_l0) = t0[k0].sizes(lmax, 0);
        let r = (reps[t0[k0].id] * (big_l0 / l0))
            .min(10 * reps[t1[k].id])
            .min(reps[t2[k].id]);
        out[k] = r;
        data += r * t3[k].sizes(lmax, 0).0;
    }
    let lseg = data.div_ceil(MIB) * MIB;
    SegmentPlan {
        reps: out,
        data,
        lseg,
        filler: lseg - data,
    }
}

/// The default memory per process in MiB (`-MB` when not given): the node's memory
/// divided among the processes that share it, at least 1 MiB. Real mode passes
/// `/proc/meminfo`'s MemTotal and the node's cores; the twin, the scenario's node
/// memory and ranks per node.
pub fn default_mb_per_process(node_memory_bytes: u64, processes_per_node: u64) -> u64 {
    (node_memory_bytes / processes_per_node.max(1) / MIB).max(1)
}

/// MemTotal from the text of `/proc/meminfo`, in bytes.
pub fn meminfo_total_bytes(text: &str) -> Option<u64> {
    let line = text.lines().find(|l| l.starts_with("MemTotal:"))?;
    let mut it = line["MemTotal:".len()..].split_whitespace();
    let v: u64 = it.next()?.parse().ok()?;
    match it.next() {
        Some("kB") | None => Some(v * 1024),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_has_43_patterns_in_5_types_with_usum_64() {
        assert_eq!(PATTERNS.len(), 43);
        let counts: Vec<usize> = PatternType::ALL
            .iter()
            .map(|t| t.patterns().len())
            .collect();
        assert_eq!(counts, vec![9, 8, 8, 9, 9]);
        for (i, p) in PATTERNS.iter().enumerate() {
            assert_eq!(p.id, i);
            assert_eq!(p.ptype.patterns()[p.number].id, i);
        }
        let u: Vec<u64> = PatternType::ALL
            .iter()
            .map(|t| t.patterns().iter().map(|p| p.u).sum())
            .collect();
        assert_eq!(u, vec![22, 12, 10, 10, 10]);
        assert_eq!(usum(false), 64 + 22 + 64);
        assert_eq!(usum(true), 3 * 64);
        // Every size is a whole number of doubles, and type 0's L is a whole number of l.
        for p in &PATTERNS {
            let (l, big_l) = p.sizes(lmax_bytes(1024), 8 * 1000);
            assert_eq!(l % ETYPE_BYTES, 0);
            assert_eq!(big_l % l, 0, "pattern {}", p.id);
        }
        // Each type shows every chunk row exactly once.
        for t in PatternType::ALL {
            let mut rows: Vec<usize> = t
                .patterns()
                .iter()
                .filter_map(|p| {
                    if let Row::Chunk(r) = p.row {
                        Some(r)
                    } else {
                        None
                    }
                })
                .collect();
            rows.sort();
            assert_eq!(rows, (1..=7).collect::<Vec<_>>());
        }
    }

    #[test]
    fn lmax_is_mb_over_128_clamped() {
        assert_eq!(lmax_bytes(1), 2 * MIB);
        assert_eq!(lmax_bytes(256), 2 * MIB);
        assert_eq!(lmax_bytes(512), 4 * MIB);
        assert_eq!(lmax_bytes(1000), 8_192_000); // 1000 MiB / 128 = 7.8125 MiB
        assert_eq!(lmax_bytes(2048), 16 * MIB);
        assert_eq!(lmax_bytes(128 * 1024), 1024 * MIB);
        assert_eq!(lmax_bytes(1 << 30), 1024 * MIB);
    }

    #[test]
    fn default_partitions_follow_the_release_table() {
        assert_eq!(default_partitions(1), vec![1]);
        assert_eq!(default_partitions(2), vec![1, 2]);
        assert_eq!(default_partitions(3), vec![1, 2, 3]);
        assert_eq!(default_partitions(4), vec![2, 3, 4]);
        assert_eq!(default_partitions(8), vec![2, 4, 8]);
        assert_eq!(default_partitions(1024), vec![16, 128, 1024]);
        // Release 2.1's help table: (from, until, small, medium).
        let table = [
            (5, 11, 2, 4),
            (12, 19, 2, 8),
            (20, 31, 4, 8),
            (32, 86, 4, 16),
            (87, 141, 4, 32),
            (142, 231, 8, 32),
            (232, 624, 8, 64),
            (625, 1023, 8, 128),
            (1024, 1680, 16, 128),
            (1681, 4522, 16, 256),
            (4523, 7419, 16, 512),
            (7420, 12173, 32, 512),
            (12174, 32767, 32, 1024),
        ];
        for (from, until, small, medium) in table {
            for n in [from, until] {
                assert_eq!(default_partitions(n), vec![small, medium, n], "n = {n}");
            }
        }
    }

    #[test]
    fn time_budget() {
        assert_eq!(tn_seconds(1800, 3), 600);
        assert_eq!(tn_seconds(100, 3), 33);
        // Tp = U·Tn/ΣU: Tn = 600, ΣU = 150, U = 4 → 16 s.
        assert_eq!(tp_seconds(4, 600, usum(false)), 16.0);
        assert_eq!(tp_seconds(0, 600, 150), 0.0);
        assert!((tp_seconds(1, 33, 192) - 33.0 / 192.0).abs() < 1e-15);
        // The budgets of one partition add up to Tn.
        let sum: f64 = Pass::ALL
            .iter()
            .flat_map(|&p| patterns_in_pass(p, false))
            .map(|p| tp_seconds(p.u, 600, usum(false)))
            .sum();
        assert!((sum - 600.0).abs() < 1e-9);
    }

    #[test]
    fn segment_sizes_by_hand() {
        let lmax = 2 * MIB;
        let mut reps = vec![0u64; 43];
        // Type 0 write counts for patterns 0..8; type 1 for 9..16; type 2 for 17..24.
        reps[..9].copy_from_slice(&[1, 5, 7, 9, 3, 2, 4, 1, 6]);
        reps[9..17].copy_from_slice(&[1, 2, 3, 40, 100, 1, 50, 2]);
        reps[17..25].copy_from_slice(&[1, 4, 8, 100, 10000, 200, 500, 1]);
        let plan = segment_plan(&reps, lmax);
        // k=1: min(5·1, 10·2, 4) = 4             (Lmax)
        // k=2: min(9·1, 10·3, 8) = 8             (1M, from type 0 pattern 3)
        // k=3: min(3·32, 10·40, 100) = 96        (32k)
        // k=4: min(2·1024, 10·100, 10000) = 1000 (1k)
        // k=5: min(4·32, 10·1, 200) = 10         (32k+8)
        // k=6: min(1·1024, 10·50, 500) = 500     (1k+8)
        // k=7: min(6·1, 10·2, 1) = 1             (1M+8)
        assert_eq!(plan.reps, [1, 4, 8, 96, 1000, 10, 500, 1, 1]);
        let data = MIB
            + 4 * 2 * MIB
            + 8 * MIB
            + 96 * 32 * KIB
            + 1000 * KIB
            + 10 * (32 * KIB + 8)
            + 500 * (KIB + 8)
            + (MIB + 8);
        assert_eq!(plan.data, data);
        // 1 + 8 + 8 + 3 + 0.9765625 + ... MiB = 22.79... MiB → Lseg = 23 MiB.
        assert_eq!(plan.lseg, 23 * MIB);
        assert_eq!(plan.filler, 23 * MIB - data);
        assert_eq!(plan.filler % ETYPE_BYTES, 0);
    }

    #[test]
    fn segment_of_single_repetitions() {
        // Every pattern ran once: rep3 = [1, 1, 1, 1, 1, 1, 1, 1] and the data is
        // 1M + Lmax + 1M + 32k + 1k + 32k+8 + 1k+8 + 1M+8.
        let plan = segment_plan(&[1; 43], 2 * MIB);
        assert_eq!(plan.reps, [1; 9]);
        assert_eq!(plan.data, 5 * MIB + 64 * KIB + 2 * KIB + 24);
        assert_eq!(plan.lseg, 6 * MIB);
    }

    #[test]
    fn default_memory() {
        assert_eq!(default_mb_per_process(16 << 30, 8), 2048);
        assert_eq!(default_mb_per_process(1 << 20, 0), 1);
        assert_eq!(default_mb_per_process(100, 4), 1);
        let text = "MemTotal:       16318480 kB\nMemFree:         1000 kB\n";
        assert_eq!(meminfo_total_bytes(text), Some(16318480 * 1024));
        assert_eq!(meminfo_total_bytes("MemFree: 1 kB\n"), None);
    }
}
