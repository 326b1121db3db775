//! Which probe runs calibration makes, at which scale.
//!
//! Every launched probe is one [`Step`]: `mpiexec -n ranks piotwin run <probe>
//! <args> --json F`. Scratch files are named inside the scratch directory the
//! plan is given; nothing else is touched.
//!
//! Page-cache sizes: the cache may grow to `MemTotal` (24 GiB here), and this
//! machine's disk has about 39 GB free, so files of 2 × RAM — the methodology's
//! size for device-level numbers — cannot be written. Device figures therefore
//! come from cold reads (`-I`, the file dropped from the page cache first) and
//! from `fsync` time against dirty bytes, and the full run's file sizes reach
//! [`FULL_LARGEST_FILE`] to show whether a knee appears below it.

use serde::{Deserialize, Serialize};

/// The largest IOzone file of the full run, bytes (see the module docs).
pub const FULL_LARGEST_FILE: u64 = 8 << 30;

/// How much probing: `Tiny` is a test knob (same steps, smallest sizes).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Scale {
    /// Smallest sizes and counts: for tests of the whole path.
    Tiny,
    /// `--quick`: under 5 minutes on the 2-core workstation.
    Quick,
    /// The full run: under 30 minutes.
    Full,
}

/// The benchmark a step launches.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Probe {
    /// `piotwin run pingpong` (plans before b_eff; read back from their probe files).
    Pingpong,
    /// `piotwin run b_eff`.
    Beff,
    /// `piotwin run ior`.
    Ior,
    /// `piotwin run iozone`.
    Iozone,
}

impl Probe {
    /// The `piotwin run` subcommand.
    pub fn command(self) -> &'static str {
        match self {
            Probe::Pingpong => "pingpong",
            Probe::Beff => "b_eff",
            Probe::Ior => "ior",
            Probe::Iozone => "iozone",
        }
    }
}

/// One launched probe run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Step {
    /// Which probe.
    pub probe: Probe,
    /// `mpiexec -n`.
    pub ranks: usize,
    /// The probe's arguments (without `--json`).
    pub args: Vec<String>,
    /// For IOR steps, the shape's name (`shared-independent`, …); for IOzone,
    /// `warm` or `cold`; for pingpong (older plans), `pairs` or `barrier`; for
    /// b_eff, `rings` (2 ranks) or `oversubscribed` (more ranks than cores).
    pub shape: String,
}

impl Step {
    /// The command line for humans and for `[source]`: `piotwin run ior -a MPIIO …`.
    pub fn describe(&self) -> String {
        format!(
            "mpiexec -n {} piotwin run {} {}",
            self.ranks,
            self.probe.command(),
            self.args.join(" ")
        )
    }
}

/// Everything calibration runs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Plan {
    /// The scale.
    pub scale: Scale,
    /// memcpy sizes, bytes.
    pub memcpy_sizes: Vec<u64>,
    /// Sizes of the files whose deletion is timed.
    #[serde(default)]
    pub delete_sizes: Vec<u64>,
    /// The release probe's rewrites: (bytes, seconds waited after the
    /// delete), the shortest and longest wait at each of two sizes, the
    /// larger also in between.
    #[serde(default)]
    pub release_steps: Vec<(u64, f64)>,
    /// The huge-page probe: after a settle, a file of `huge_bytes` written
    /// in requests of each of these sizes (smallest first), each followed by
    /// its delete and a settle.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub huge_requests: Vec<u64>,
    /// The huge-page probe's file size, bytes (small enough for the warm floor).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub huge_bytes: u64,
    /// Rounds of the huge-page probe: every request size written once a round.
    #[serde(default = "one_round", skip_serializing_if = "is_one_round")]
    pub huge_rounds: usize,
    /// The aliasing probe: a cached file of `alias_bytes` read in 1 MiB
    /// requests at page-aligned offsets into a buffer this many bytes past a
    /// page, each in turn (0 first: the rate that does not alias).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub alias_places: Vec<u64>,
    /// The aliasing probe's file size, bytes (0: not probed).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub alias_bytes: u64,
    /// The inode-lock probe: bytes each of its writers rewrites (0: not probed).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub lock_bytes: u64,
    /// The inode-lock probe: how many times each of its cases runs.
    #[serde(default, skip_serializing_if = "is_zero_count")]
    pub lock_reps: usize,
    /// memcpy copies per size (and busy-work runs per loop count).
    pub memcpy_reps: usize,
    /// Loop counts of the busy-work probe (MADbench2's loop of 32 multiply-adds).
    #[serde(default)]
    pub busy_loops: Vec<u64>,
    /// The BT step probe's cases: `(n, ranks)`, one rank's cells of an `n³` grid
    /// on that many ranks (NPB BT's step as BTIO runs it).
    #[serde(default)]
    pub bt_steps: Vec<(u64, usize)>,
    /// Mini-Square sides `I` of the FFT kernel probe (FTIO's, on 4 bands).
    #[serde(default)]
    pub fft_sides: Vec<u64>,
    /// Timings per BT amount and FFT side.
    #[serde(default)]
    pub kernel_reps: usize,
    /// Threads the all-cores kernel probe runs the kernels on at once: the
    /// ranks per node the runs use, at least the cores (0: not probed).
    #[serde(default, skip_serializing_if = "is_zero_count")]
    pub kernel_threads: usize,
    /// The launched steps, in order.
    pub steps: Vec<Step>,
}

fn s(v: &[&str]) -> Vec<String> {
    v.iter().map(|x| x.to_string()).collect()
}

/// The IOzone arguments for one run: file sizes `-s`, record sizes `-r`
/// (both repeatable), tests 0 (write, rewrite) and 1 (read, re-read), `-e`
/// (`fsync` timed separately in the rows' `fsync_s`), `-I` for cold reads, `-f`
/// the scratch file — IOzone's own option names.
pub fn iozone_args(files: &[u64], records: &[u64], cold: bool, file: &str) -> Vec<String> {
    let mut a = Vec::new();
    for f in files {
        a.extend(["-s".to_string(), format!("{}k", f >> 10)]);
    }
    for r in records {
        a.extend(["-r".to_string(), format!("{}k", r >> 10)]);
    }
    a.extend(s(&["-i", "0", "-i", "1", "-e"]));
    if cold {
        a.push("-I".into());
    }
    a.extend(["-f".to_string(), file.to_string()]);
    a
}

impl Plan {
    /// The plan at `scale` for a machine of `cores` cores, IOR up to `max_ranks`
    /// ranks, scratch files under `scratch` (a directory path).
    pub fn new(scale: Scale, cores: usize, max_ranks: usize, scratch: &str) -> Plan {
        const K: u64 = 1 << 10;
        const M: u64 = 1 << 20;
        let (memcpy_sizes, memcpy_reps) = match scale {
            Scale::Tiny => (vec![64 * K, 256 * K, M], 3),
            // Up to 256 MiB: beyond the CPU caches (the fit keeps sizes >= 2x the largest).
            Scale::Quick => (vec![M, 16 * M, 64 * M, 128 * M, 256 * M], 6),
            Scale::Full => (
                vec![M, 4 * M, 16 * M, 64 * M, 128 * M, 256 * M, 512 * M],
                12,
            ),
        };
        let busy_loops = match scale {
            Scale::Tiny => vec![1_000, 10_000, 100_000],
            Scale::Quick | Scale::Full => vec![10_000, 100_000, 1_000_000],
        };
        let mut steps = Vec::new();
        // Point to point: b_eff at 2 ranks (its 21 sizes, every method), and at
        // max_ranks when that oversubscribes the cores (short loops: each message
        // there waits for a descheduled rank; sizes up to 128 KiB, so that MPI's
        // eager limit shows as the step up to a rendezvous' second wake-up).
        let (beff_mb, beff_reps, over_loops) = match scale {
            Scale::Tiny => ("2", "1", "1"),
            Scale::Quick => ("512", "2", "8"),
            Scale::Full => ("2048", "3", "30"),
        };
        steps.push(Step {
            probe: Probe::Beff,
            ranks: 2,
            args: s(&["--mb", beff_mb, "--repetitions", beff_reps]),
            shape: "rings".into(),
        });
        // MPI_Sendrecv_replace between 2 ranks over large sizes: the buffer it
        // packs into is mapped afresh each call above glibc's mmap threshold
        // (which follows the chunks freed, up to 32 MiB), so sizes on both sides.
        let replace_sizes = match scale {
            Scale::Tiny => "1m,40m",
            Scale::Quick => "8m,16m,24m,32m,48m,64m",
            Scale::Full => "4m,8m,16m,24m,28m,32m,40m,48m,64m,128m",
        };
        steps.push(Step {
            probe: Probe::Pingpong,
            ranks: 2,
            args: s(&[
                "--sizes",
                replace_sizes,
                "--barriers",
                "1",
                "--bytes-per-size",
                "256m",
            ]),
            shape: "replace".into(),
        });
        let base_ranks = cores.clamp(2, max_ranks);
        if max_ranks > cores {
            steps.push(Step {
                probe: Probe::Beff,
                ranks: max_ranks,
                args: s(&[
                    "--mb",
                    "16",
                    "--repetitions",
                    "1",
                    "--first-loop",
                    over_loops,
                ]),
                shape: "oversubscribed".into(),
            });
        }
        // Where max_ranks oversubscribes the cores, what the waiting ranks do:
        // pingpong's polled test, `cores` ranks copying and meeting while the
        // others wait, in separate jobs (the kernel schedules the taking part
        // together or out of phase, differently from job to job, and often
        // keeps a job's placement through its episodes: 3 jobs gave a mean
        // step wake-up of 1.2 ms one time and 3.9 ms, one job all at 8 ms,
        // another; each job takes 1.5-3 s). Then the locked-write test: at
        // 8 MiB a woken writer's copy fits its time slice, at 32 MiB (some
        // 7 ms) it outlasts it.
        if max_ranks > cores {
            let (copies, locked, jobs) = match scale {
                Scale::Tiny => ("64k,1m", "1m,4m", 1),
                Scale::Quick => ("64k,1m,8m", "8m,32m", 9),
                Scale::Full => ("64k,1m,8m", "8m,32m", 12),
            };
            for _ in 0..jobs {
                steps.push(Step {
                    probe: Probe::Pingpong,
                    ranks: max_ranks,
                    args: s(&[
                        "--sizes",
                        "1",
                        "--barriers",
                        "10",
                        "--polled",
                        &cores.to_string(),
                        "--polled-copies",
                        copies,
                        "--iterations",
                        "100",
                        "--bytes-per-size",
                        "64m",
                        "--locked-writes",
                        locked,
                        "-o",
                        &format!("{scratch}/locked.dat"),
                    ]),
                    shape: "polled".into(),
                });
            }
        }
        // Two-phase collective I/O where max_ranks oversubscribes the cores: the
        // exchange through derived datatypes (pingpong's two-phase test; bytes per
        // rank of each call, several 64 KiB blocks each so the views interleave).
        if max_ranks > cores {
            let sizes = match scale {
                Scale::Tiny => "128k,256k",
                Scale::Quick => "512k,1m,2560k,8m",
                Scale::Full => "256k,512k,1m,2560k,8m,16m",
            };
            steps.push(Step {
                probe: Probe::Pingpong,
                ranks: max_ranks,
                args: vec![
                    "--sizes".into(),
                    "1".into(),
                    "--barriers".into(),
                    "10".into(),
                    "--two-phase".into(),
                    sizes.into(),
                    "-o".into(),
                    format!("{scratch}/twophase.dat"),
                ],
                shape: "two-phase".into(),
            });
        }
        // IOR: MPI-IO, shared file independent / collective over transfer sizes
        // at every rank count, and file per process.
        let (transfers, block, reps): (&[&str], &str, &str) = match scale {
            // 3 repetitions: the first is the process's first writes, which
            // the per-call fits leave out, and the mean needs 2 more
            Scale::Tiny => (&["4k", "16k", "64k"], "256k", "3"),
            Scale::Quick => (&["4k", "16k", "64k"], "1m", "3"),
            Scale::Full => (&["4k", "16k", "64k", "256k"], "4m", "4"),
        };
        let rank_counts: Vec<usize> = match scale {
            Scale::Full => (1..=max_ranks).collect(),
            _ => {
                let mut v = vec![1, base_ranks, max_ranks];
                v.dedup();
                v
            }
        };
        let mut n = 0;
        for &ranks in &rank_counts {
            for (shape, flags) in [
                ("shared-independent", &[][..]),
                ("shared-collective", &["-c"][..]),
                ("file-per-process", &["-F"][..]),
            ] {
                if shape == "file-per-process" && ranks != base_ranks {
                    continue;
                }
                for t in transfers {
                    let mut args = s(&["-a", "MPIIO", "-b", block, "-t", t, "-i", reps]);
                    args.extend(s(flags));
                    args.extend(["-o".to_string(), format!("{scratch}/ior-{n}.dat")]);
                    n += 1;
                    steps.push(Step {
                        probe: Probe::Ior,
                        ranks,
                        args,
                        shape: shape.into(),
                    });
                }
            }
        }
        // IOzone: warm (page cache) over file and record sizes, then cold reads.
        let (files, records, cold_files): (Vec<u64>, Vec<u64>, Vec<u64>) = match scale {
            Scale::Tiny => (vec![M, 2 * M, 4 * M], vec![4 * K, 64 * K], vec![4 * M]),
            Scale::Quick => (
                vec![16 * M, 64 * M, 256 * M, 512 * M],
                vec![4 * K, 64 * K, M],
                vec![256 * M],
            ),
            Scale::Full => (
                vec![16 * M, 64 * M, 256 * M, 1 << 30, 4 << 30, FULL_LARGEST_FILE],
                vec![4 * K, 16 * K, 64 * K, 256 * K, M, 4 * M],
                vec![256 * M, 1 << 30],
            ),
        };
        let file = format!("{scratch}/iozone.tmp");
        steps.push(Step {
            probe: Probe::Iozone,
            ranks: 1,
            args: iozone_args(&files, &records, false, &file),
            shape: "warm".into(),
        });
        steps.push(Step {
            probe: Probe::Iozone,
            ranks: 1,
            args: iozone_args(&cold_files, &records, true, &file),
            shape: "cold".into(),
        });
        // MPI-IO with explicit offsets and through the shared file pointer: the
        // difference per call is the pointer's cost.
        let pointer_file = match scale {
            Scale::Tiny => vec![M],
            Scale::Quick | Scale::Full => vec![16 * M],
        };
        for (shape, extra) in [
            ("mpiio-at", None),
            ("mpiio-shared", Some("--shared-pointer")),
        ] {
            let mut args = iozone_args(&pointer_file, &[K, 4 * K, 64 * K], false, &file);
            args.extend(s(&["--api", "MPIIO"]));
            args.extend(extra.map(String::from));
            steps.push(Step {
                probe: Probe::Iozone,
                ranks: 1,
                args,
                shape: shape.into(),
            });
        }
        // Kernel probes of 10-200 ms (Quick, Full): a rank's BT step of class
        // A on 4 ranks is 2.2e8 flops, on 1 rank 8.6e8; FTIO's transforms at
        // I = 16-48 (the largest, 3 ms, as `make validate` runs FTIO).
        let (bt_steps, fft_sides, kernel_reps) = match scale {
            Scale::Tiny => (vec![(12, 1), (12, 4)], vec![4, 8], 2),
            Scale::Quick => (vec![(24, 1), (36, 4), (64, 4)], vec![8, 16, 32, 48], 5),
            Scale::Full => (
                vec![(24, 1), (36, 4), (64, 4), (64, 1), (102, 9)],
                vec![8, 16, 32, 48],
                9,
            ),
        };
        let delete_sizes = match scale {
            Scale::Tiny => vec![M, 2 * M, 4 * M],
            Scale::Quick => vec![64 * M, 256 * M, 1 << 30],
            Scale::Full => vec![64 * M, 256 * M, 1 << 30, 2 << 30],
        };
        // Write, delete, wait, rewrite: how long freed memory stays backed
        // (free page reporting took ~8 s to hand back a freed GiB here), and
        // at a second size, what taking it fresh costs.
        let release_steps = {
            let (size, waits, long): (u64, &[f64], f64) = match scale {
                Scale::Tiny => (4 * M, &[0.0, 0.0, 0.05, 0.1], 0.2),
                Scale::Quick => (1 << 30, &[0.0, 0.0, 1.0, 2.0, 3.0, 4.0, 5.0], 20.0),
                Scale::Full => (
                    1 << 30,
                    &[0.0, 0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 8.0],
                    30.0,
                ),
            };
            // The second size is smaller: both stay below the dirty limits, so
            // write-back does not take part.
            let mut steps: Vec<(u64, f64)> = waits.iter().map(|&w| (size, w)).collect();
            steps.extend([(size, long), (size / 2, 0.0), (size / 2, long)]);
            steps
        };
        // Linux caches a write of 2 MiB or more in huge pages (large folios),
        // which only the free blocks free page reporting hands back hold: after
        // a settle, 1 MiB requests found the warm floor here (4.8 GB/s) while
        // 2 and 4 MiB requests took fresh memory (0.5 GB/s). 1920 KiB requests
        // (just below) found the warm floor as well; they bound the fitted
        // size from below (applications write rows of 1.7 MiB and the like).
        // Rounds give the rate of fresh memory its median and range.
        let (huge_requests, huge_bytes, huge_rounds) = match scale {
            Scale::Tiny => (vec![M, 2 * M], 4 * M, 2),
            Scale::Quick => (vec![M, 1920 * K, 2 * M], 256 * M, 3),
            Scale::Full => (vec![256 * K, M, 1920 * K, 2 * M, 4 * M, 16 * M], 256 * M, 5),
        };
        // Warm rewrites by 2 writers, of one file and of a file each: whether
        // the file system copies one buffered write of a file at a time.
        let (lock_bytes, lock_reps) = match scale {
            Scale::Tiny => (4 * M, 1),
            Scale::Quick => (64 * M, 3),
            Scale::Full => (128 * M, 5),
        };
        // A page-cache copy whose destination lies a few bytes past its source
        // modulo 4 KiB ran at a fifth of the rate here (1.8 against 9.5 GB/s
        // for 1 to 31 bytes; 32 and more did not alias).
        let alias_places = vec![0, 8, 16, 24, 31, 32, 48, 64, 256];
        let alias_bytes = match scale {
            Scale::Tiny => 4 * M,
            Scale::Quick | Scale::Full => 64 * M,
        };
        Plan {
            scale,
            memcpy_sizes,
            alias_places,
            alias_bytes,
            lock_bytes,
            lock_reps,
            delete_sizes,
            release_steps,
            huge_requests,
            huge_bytes,
            huge_rounds,
            memcpy_reps,
            busy_loops,
            bt_steps,
            fft_sides,
            kernel_reps,
            kernel_threads: match cores {
                0 | 1 => 0,
                _ => max_ranks.max(cores),
            },
            steps,
        }
    }

    /// The IOR command lines the plan runs: calibration's shapes, which
    /// `compare` must not use as held-out benchmarks.
    pub fn ior_shapes(&self) -> Vec<String> {
        self.steps
            .iter()
            .filter(|s| s.probe == Probe::Ior)
            .map(Step::describe)
            .collect()
    }
}

/// Whether a count is zero (a field older plans do not have is not written).
fn one_round() -> usize {
    1
}

fn is_one_round(n: &usize) -> bool {
    *n == 1
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// [`is_zero`] for a `usize` count.
fn is_zero_count(n: &usize) -> bool {
    *n == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plan_never_runs_b_eff_io_and_keeps_files_in_scratch() {
        for scale in [Scale::Tiny, Scale::Quick, Scale::Full] {
            let p = Plan::new(scale, 2, 4, "/scratch/x");
            assert!(p.steps.iter().all(|s| !s.describe().contains("b_eff_io")));
            for s in &p.steps {
                for w in s.args.windows(2) {
                    if w[0] == "-o" || w[0] == "-f" {
                        assert!(w[1].starts_with("/scratch/x/"), "{}", s.describe());
                    }
                }
            }
            assert!(p.steps.iter().any(|s| s.ranks == 4), "oversubscribed steps");
            assert_eq!(
                p.ior_shapes().len(),
                p.steps.iter().filter(|s| s.probe == Probe::Ior).count()
            );
        }
    }

    #[test]
    fn iozone_arguments_are_iozone_style() {
        let a = iozone_args(&[1 << 20], &[4096, 65536], true, "/d/f");
        assert_eq!(a.join(" "), "-s 1024k -r 4k -r 64k -i 0 -i 1 -e -I -f /d/f");
    }
}
