//! The per-rank program.

use super::*;
use crate::bench::common::agree::agreed_failure;

/// One pattern as measured (times from rank 0 of the partition; errors summed over it).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PatternRecord {
    /// Partition size.
    pub n: usize,
    /// Access pass.
    pub pass: Pass,
    /// Pattern type.
    pub ptype: PatternType,
    /// Global pattern number 0..43.
    pub pattern: usize,
    /// Time budget Tp in seconds.
    pub tp: f64,
    /// Contiguous chunk on disk, bytes.
    pub l: u64,
    /// Bytes per call and process.
    pub big_l: u64,
    /// Repetitions.
    pub reps: u64,
    /// Bytes per process (reps · L).
    pub bytes: u64,
    /// Pattern time in seconds: view, calls, barrier + sync (writes), barriers.
    pub time: f64,
    /// Errors over the partition (failed calls, short transfers, wrong data).
    pub errors: u64,
    /// Read pass: every process compared the data it read (false where the back
    /// end holds none, as in the twin). Write passes: true (nothing to compare).
    pub checked: bool,
}

impl PatternRecord {
    /// Bandwidth in MB/s, as computed: bytes over time, whether or not the calls
    /// succeeded.
    pub fn mb_s(&self) -> f64 {
        formulas::pattern_mb_s(self.n, self.bytes, self.time)
    }

    /// The bandwidth as a measurement: none where calls failed or data was wrong
    /// (failed calls return at once, so bytes over time would be a fiction).
    pub fn measured_mb_s(&self) -> Option<f64> {
        (self.errors == 0).then(|| self.mb_s())
    }
}

/// One pattern type in one pass as measured.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TypeRecord {
    /// Partition size.
    pub n: usize,
    /// Access pass.
    pub pass: Pass,
    /// Pattern type.
    pub ptype: PatternType,
    /// Open time, seconds.
    pub open: f64,
    /// Σ pattern times, seconds.
    pub patterns: f64,
    /// Close time (with the delete after the read pass), seconds.
    pub close: f64,
    /// Σ bytes per process.
    pub bytes: u64,
    /// Hints in effect after open (rank 0).
    pub hints: Hints,
}

impl TypeRecord {
    /// Bandwidth in MB/s: n · bytes / (open + patterns + close).
    pub fn mb_s(&self) -> f64 {
        formulas::type_mb_s(self.n, self.bytes, self.open, self.patterns, self.close)
    }
}

/// What one rank measured. Rank 0 takes part in every partition, so its
/// measurements are the run's.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Measurements {
    /// Every pattern run, in running order.
    pub patterns: Vec<PatternRecord>,
    /// Every type run, in running order.
    pub types: Vec<TypeRecord>,
    /// Per partition (index as in `Config::partitions`) and pass, the time of the pass.
    pub partition_times: Vec<[f64; 3]>,
    /// Per partition, the segment plan of types 3/4.
    pub segments: Vec<Option<SegmentPlan>>,
    /// This rank's first error reports (at most `max_errors` per pattern).
    pub error_messages: Vec<String>,
    /// Time from the first to the last world barrier, seconds.
    pub total_time: f64,
    /// The error that stopped the run before its end, if one did. Everything
    /// measured before it is kept (and reported); the run's scratch files are removed
    /// unless `-keep`.
    pub stopped: Option<String>,
}

impl Measurements {
    /// Whether every read pattern of partition `n` compared its data.
    pub fn checked_of(&self, n: usize) -> bool {
        self.patterns.iter().filter(|p| p.n == n).all(|p| p.checked)
    }

    /// Errors over all patterns of partition `n`.
    pub fn errors_of(&self, n: usize) -> u64 {
        self.patterns
            .iter()
            .filter(|p| p.n == n)
            .map(|p| p.errors)
            .sum()
    }
}

/// Progress on stderr: a bar on a terminal, else one line per pattern.
pub(super) struct Progress {
    pub(super) enabled: bool,
    pub(super) bar: Option<indicatif::ProgressBar>,
    pub(super) total: u64,
}

impl Progress {
    pub(super) fn new(enabled: bool, total: u64) -> Progress {
        let bar = (enabled && std::io::stderr().is_terminal()).then(|| {
            let b = indicatif::ProgressBar::new(total);
            if let Ok(style) =
                indicatif::ProgressStyle::with_template("b_eff_io {bar:30} {pos}/{len} {msg}")
            {
                b.set_style(style);
            }
            b
        });
        Progress {
            enabled,
            bar,
            total,
        }
    }

    pub(super) fn starting(&self, what: &str) {
        if let Some(b) = &self.bar {
            b.set_message(what.to_string());
        }
    }

    pub(super) fn done(&self, k: u64, line: &str) {
        match &self.bar {
            Some(b) => {
                b.set_position(k);
                if k == self.total {
                    b.finish_and_clear();
                }
            }
            None if self.enabled => eprintln!("b_eff_io [{k}/{}] {line}", self.total),
            None => {}
        }
    }
}

/// The benchmark as a per-rank program. Output: this rank's [`Measurements`].
pub struct BeffIo {
    /// The resolved settings.
    pub cfg: Config,
}

/// The check value carried by the first (`last = false`) and last double of chunk
/// `chunk` in repetition `rep` of pattern `pattern` written in `pass`. Distinct for
/// every argument combination (while rep < 2^32), and never 0, so a zeroed buffer
/// never verifies.
pub fn check_value(rep: u64, pattern: usize, pass: Pass, chunk: u64, last: bool) -> f64 {
    let v = (((rep * 2048 + chunk) * 64 + pattern as u64) * 4 + pass.index() as u64) * 2
        + last as u64
        + 1;
    v as f64
}

/// Positions (in doubles) of the first and last double of each chunk of `l` bytes
/// in a buffer of `big_l` bytes.
pub(super) fn chunk_ends(l: u64, big_l: u64) -> impl Iterator<Item = (u64, usize, usize)> {
    let chunks = big_l.checked_div(l).unwrap_or(0);
    (0..chunks).map(move |j| {
        let first = (j * l / ETYPE_BYTES) as usize;
        (j, first, first + (l / ETYPE_BYTES) as usize - 1)
    })
}

pub(super) fn put(bytes: &mut [u8], index: usize, v: f64) {
    bytes[index * 8..index * 8 + 8].copy_from_slice(&v.to_ne_bytes());
}

pub(super) fn get(bytes: &[u8], index: usize) -> f64 {
    f64::from_ne_bytes(bytes[index * 8..index * 8 + 8].try_into().expect("8 bytes"))
}

/// Writes the check values of repetition `rep` into `buf` (no-op where the buffer
/// holds no data).
pub(super) fn fill<B: IoBuf>(
    buf: &mut B,
    rep: u64,
    pattern: usize,
    pass: Pass,
    l: u64,
    big_l: u64,
) {
    if let Some(bytes) = buf.bytes_mut() {
        for (j, first, last) in chunk_ends(l, big_l) {
            put(bytes, first, check_value(rep, pattern, pass, j, false));
            put(bytes, last, check_value(rep, pattern, pass, j, true));
        }
    }
}

/// Checks the values of repetition `rep` written in `pass`; returns the wrong
/// chunks as `(chunk, found first, found last, expected first, expected last)`.
pub(super) fn verify<B: IoBuf>(
    buf: &B,
    rep: u64,
    pattern: usize,
    pass: Pass,
    l: u64,
    big_l: u64,
) -> Vec<(u64, f64, f64, f64, f64)> {
    let Some(bytes) = buf.bytes() else {
        return Vec::new();
    };
    chunk_ends(l, big_l)
        .filter_map(|(j, first, last)| {
            let (ef, el) = (
                check_value(rep, pattern, pass, j, false),
                check_value(rep, pattern, pass, j, true),
            );
            let (f, g) = (get(bytes, first), get(bytes, last));
            (f != ef || g != el).then_some((j, f, g, ef, el))
        })
        .collect()
}

/// The data-path operation of `ptype` in `pass` at `offset` etypes.
pub(super) fn op_for(ptype: PatternType, pass: Pass, shared: bool, offset: u64) -> Op {
    let access = if pass == Pass::Read {
        Access::Read
    } else {
        Access::Write
    };
    match ptype {
        PatternType::Shared if shared => {
            if access == Access::Read {
                Op::read_ordered()
            } else {
                Op::write_ordered()
            }
        }
        PatternType::Scatter | PatternType::Shared | PatternType::SegColl => {
            Op::at(access, Coordination::Collective, offset)
        }
        PatternType::Separated | PatternType::Segmented => {
            Op::at(access, Coordination::Independent, offset)
        }
    }
}

/// The strided view of type 0: process `rank` of `n` owns the `rank`-th `l`-byte
/// chunk of every `n·l` bytes from `disp` (`MPI_Type_create_darray` over an
/// n × l/8 array of doubles, block-distributed over the first dimension).
pub fn scatter_view(n: usize, rank: usize, l: u64, disp: u64) -> Result<View, BeffIoError> {
    let ft = Datatype::darray(
        n as u64,
        rank as u64,
        vec![n as u64, l / ETYPE_BYTES],
        vec![Distrib::Block, Distrib::None],
        vec![DARG_DEFAULT, DARG_DEFAULT],
        vec![n as u64, 1],
        Order::C,
        Datatype::Double,
    )
    .map_err(|e| BeffIoError::View(e.to_string()))?;
    View::new(disp, Datatype::Double, ft).map_err(|e| BeffIoError::View(e.to_string()))
}

/// The scratch file of a type on a partition (type 2: one per process).
pub(super) fn file_name(
    cfg: &Config,
    i_n: usize,
    n: usize,
    ptype: PatternType,
    rank: usize,
) -> String {
    let base = format!(
        "{}/b_eff_io_data_i{:02}_{:03}_{}",
        cfg.path,
        i_n,
        n,
        ptype.index()
    );
    if ptype == PatternType::Separated {
        format!("{base}.{rank:03}")
    } else {
        base
    }
}

impl RankProgram for BeffIo {
    type Output = Result<Measurements, BeffIoError>;

    async fn run<C: IoCtx>(&self, ctx: &C) -> Self::Output {
        let cfg = &self.cfg;
        if let Some(&bad) = cfg.partitions.iter().find(|&&n| n > ctx.size()) {
            // Options were checked against the launcher's announced size; the job disagrees.
            return Err(BeffIoError::Option {
                option: "-N",
                value: bad.to_string(),
                reason: format!("the job has only {} processes", ctx.size()),
            });
        }
        let np = cfg.partitions.len();
        let root = ctx.rank() == 0;
        let progress = Progress::new(cfg.progress && root, cfg.total_patterns());
        let mut m = Measurements {
            patterns: Vec::new(),
            types: Vec::new(),
            partition_times: vec![[0.0; 3]; np],
            segments: vec![None; np],
            error_messages: Vec::new(),
            total_time: 0.0,
            stopped: None,
        };
        // Repetition counts per partition and pattern, from the write pass.
        let mut reps = vec![[0u64; schedule::PATTERNS.len()]; np];
        let mut bufs = Buffers::new(ctx, cfg.lmax());
        let mut done = 0u64;
        ctx.barrier().await;
        let t_total = ctx.wtime();
        // A rank that stopped (an error) keeps taking part in the world's barrier
        // and split of every partition, under a colour of its own: the partners of
        // a partition it belonged to find their communicator short and stop too.
        // So every rank reaches the end, with no collective added to a clean run.
        let mut stopped: Option<BeffIoError> = None;
        for pass in Pass::ALL {
            for (i_n, &n) in cfg.partitions.iter().enumerate() {
                ctx.barrier().await;
                let color = if stopped.is_some() {
                    Some(STOPPED_COLOR)
                } else {
                    (ctx.rank() < n).then_some(0)
                };
                let Some(sub) = ctx.split(color, 0).await else {
                    continue;
                };
                if stopped.is_some() {
                    continue;
                }
                if sub.size() < n {
                    stopped = Some(BeffIoError::Stopped(
                        "another process of the partition stopped (its message says why)".into(),
                    ));
                    continue;
                }
                sub.barrier().await;
                let t0 = sub.wtime();
                let mut run = PartitionRun {
                    cfg,
                    ctx: &sub,
                    pass,
                    i_n,
                    n,
                    reps: &mut reps[i_n],
                    bufs: &mut bufs,
                    m: &mut m,
                    progress: &progress,
                    done: &mut done,
                };
                for ptype in PatternType::ALL {
                    if pass == Pass::Rewrite && !cfg.rewrite && ptype != PatternType::Scatter {
                        continue;
                    }
                    if let Err(e) = run.run_type(ptype).await {
                        // Said here: rank 0's report may only learn that a partner stopped.
                        if !matches!(e, BeffIoError::Interrupted(_)) {
                            eprintln!("piotwin: rank {}: b_eff_io stopped: {e}", ctx.rank());
                        }
                        stopped = Some(e);
                        break;
                    }
                }
                if stopped.is_none() {
                    sub.barrier().await;
                    m.partition_times[i_n][pass.index()] = sub.wtime() - t0;
                }
            }
        }
        if let Some(e) = stopped {
            // Keep what finished; remove this rank's scratch files.
            m.stopped = Some(e.to_string());
            if !cfg.keep {
                remove_scratch(ctx, cfg).await;
            }
        }
        ctx.barrier().await;
        m.total_time = ctx.wtime() - t_total;
        Ok(m)
    }
}

/// Whether a small file can be created and written at `probe` (then removed): what
/// MPI needs for a shared file pointer's hidden file beside the data file.
async fn shared_pointer_probe<C: IoCtx>(ctx: &C, probe: &str) -> crate::ctx::IoResult<()> {
    let opts = OpenOptions {
        mode: OpenMode::Create,
        scope: Scope::Private,
        api: Api::Posix,
        hints: Hints::new(),
        unique_open: false,
    };
    let mut file = ctx.open(probe, &opts).await?;
    let mut buf = ctx.alloc(ETYPE_BYTES as usize);
    let written = ctx.xfer(&mut file, Op::write_at(0), &mut buf).await;
    let closed = ctx.close(file).await;
    let deleted = ctx.delete(probe).await;
    written.and(closed).and(deleted)
}

/// Every rank learns whether one failed (`mine`: this rank's error) at a
/// checkpoint; where one did, every rank returns the same error.
async fn agree_on<C: IoCtx>(ctx: &C, step: &str, mine: Option<IoError>) -> Result<(), BeffIoError> {
    match ctx.checkpoint(mine.is_some()).await.failed {
        true => Err(BeffIoError::Stopped(
            agreed_failure(ctx, step, mine).await.0,
        )),
        false => Ok(()),
    }
}

/// One pattern's errors on this rank: how many, and the first `max` messages,
/// each after `prefix` (rank, partition, pass, pattern).
struct PatternErrors {
    count: u64,
    messages: Vec<String>,
    max: usize,
    prefix: String,
}

impl PatternErrors {
    fn report(&mut self, msg: String) {
        self.count += 1;
        if self.count as usize <= self.max {
            self.messages.push(format!("{}: {msg}", self.prefix));
        }
    }
}

/// The split colour of ranks that stopped: apart from every partition's.
const STOPPED_COLOR: usize = 1;

/// Removes the scratch files this rank owns, of every partition it takes part in
/// (a run that stopped early): rank 0 the shared files, each rank its type-2 files.
/// Missing files are no error; nothing else is touched.
async fn remove_scratch<C: IoCtx>(ctx: &C, cfg: &Config) {
    let rank = ctx.rank();
    for (i_n, &n) in cfg.partitions.iter().enumerate() {
        for ptype in PatternType::ALL {
            let mine = if ptype == PatternType::Separated {
                rank < n
            } else {
                rank == 0
            };
            if mine {
                let _ = ctx.delete(&file_name(cfg, i_n, n, ptype, rank)).await;
            }
        }
    }
}

/// Where glibc's `malloc` puts a block too large for its heap (its own `mmap`):
/// 16 bytes past a page boundary, after the chunk header.
const MALLOC_PAGE_OFFSET: usize = 16;

/// Release 2.1's two buffers, `wr_buf` and `rd_buf`: allocated once at Lmax and
/// filled (every page touched: no first-touch faults in a timed pattern) before
/// any timing; every call writes from the first L bytes of the one and reads into
/// the first L bytes of the other.
///
/// Where they lie in memory is part of what the release measures. From glibc's
/// `malloc`, a buffer of Lmax ≥ 2 MiB is its own `mmap`, 16 bytes past a page
/// boundary. A read from the page cache at a page-aligned file offset into such a
/// buffer has source and destination 16 bytes apart modulo 4 KiB, and the
/// kernel's copy then runs at under half speed (4K aliasing). Measured on the
/// development machine, 1 MiB `pread`s of a cached file: 8.3 GB/s into page +
/// 16 B, 19.7 GB/s into page + 0. So release 2.1's well-formed type-0 reads (at
/// page-aligned offsets) come out at half the bandwidth of its non-well-formed
/// ones there, and run with glibc's `mmap` threshold raised (its buffers then come
/// from the heap) they do not. Ours are placed where glibc places the release's,
/// so both measure the same thing.
pub(super) struct Buffers<B> {
    write: B,
    read: B,
}

impl<B: IoBuf> Buffers<B> {
    fn new<C: IoCtx<Buf = B>>(ctx: &C, lmax: u64) -> Buffers<B> {
        let lmax = lmax as usize;
        let mut write = ctx.alloc_placed(lmax, MALLOC_PAGE_OFFSET);
        let mut read = ctx.alloc_placed(lmax, MALLOC_PAGE_OFFSET);
        // The release's initial values: wr_buf[i] = -2i, rd_buf[i] = -2i-1.
        for (buf, odd) in [(&mut write, 0.0), (&mut read, 1.0)] {
            if let Some(bytes) = buf.bytes_mut() {
                for (i, d) in bytes.chunks_exact_mut(ETYPE_BYTES as usize).enumerate() {
                    d.copy_from_slice(&(-2.0 * i as f64 - odd).to_ne_bytes());
                }
            }
        }
        Buffers { write, read }
    }
}

/// One pass over one partition.
pub(super) struct PartitionRun<'a, C: IoCtx> {
    pub(super) cfg: &'a Config,
    pub(super) ctx: &'a C,
    pub(super) pass: Pass,
    pub(super) i_n: usize,
    pub(super) n: usize,
    pub(super) reps: &'a mut [u64; 43],
    pub(super) bufs: &'a mut Buffers<C::Buf>,
    pub(super) m: &'a mut Measurements,
    pub(super) progress: &'a Progress,
    pub(super) done: &'a mut u64,
}

impl<C: IoCtx> PartitionRun<'_, C> {
    /// Whether the write pass of this partition skipped `ptype` (every pattern
    /// recorded without a repetition).
    fn skipped_in_write(&self, ptype: PatternType) -> bool {
        let mut written = self
            .m
            .patterns
            .iter()
            .filter(|p| p.n == self.n && p.pass == Pass::Write && p.ptype == ptype)
            .peekable();
        written.peek().is_some() && written.all(|p| p.reps == 0 && p.errors > 0)
    }

    /// Records every pattern of `ptype` in this pass as failed without running it
    /// (one error each, `why` kept as rank 0's message): the report shows the type
    /// as failed rather than as a measurement.
    fn skip_type(&mut self, ptype: PatternType, why: &str) {
        let lmax = self.cfg.lmax();
        for def in ptype.patterns() {
            let (l, big_l) = def.sizes(lmax, 0);
            self.m.patterns.push(PatternRecord {
                n: self.n,
                pass: self.pass,
                ptype,
                pattern: def.id,
                tp: self.cfg.tp(def),
                l,
                big_l,
                reps: 0,
                bytes: 0,
                time: 0.0,
                errors: 1,
                checked: true,
            });
            *self.done += 1;
            self.progress.done(
                *self.done,
                &format!(
                    "n={} {} type={} ({}) pattern {}: FAILED: {why}",
                    self.n,
                    self.pass.name(),
                    ptype.index(),
                    ptype.name(),
                    def.number
                ),
            );
        }
        if self.ctx.rank() == 0 {
            self.m.error_messages.push(format!(
                "rank 0: n={} {} type {} ({}) skipped: {why}",
                self.n,
                self.pass.name(),
                ptype.index(),
                ptype.name()
            ));
        }
    }

    pub(super) async fn run_type(&mut self, ptype: PatternType) -> Result<(), BeffIoError> {
        let (cfg, ctx, pass, n) = (self.cfg, self.ctx, self.pass, self.n);
        let rank = ctx.rank();
        let lmax = cfg.lmax();
        let mut filler = 0;
        let mut lseg = 0;
        if ptype >= PatternType::Segmented {
            let plan = schedule::segment_plan(&self.reps[..], lmax);
            for (k, def) in ptype.patterns().iter().enumerate() {
                self.reps[def.id] = plan.reps[k];
            }
            filler = plan.filler;
            lseg = plan.lseg;
            self.m.segments[self.i_n] = Some(plan);
        }
        let path = file_name(cfg, self.i_n, n, ptype, rank);
        let scope = if ptype == PatternType::Separated {
            Scope::Private
        } else {
            Scope::Shared
        };
        let owner = scope == Scope::Private || rank == 0;
        if pass != Pass::Write && self.skipped_in_write(ptype) {
            self.skip_type(ptype, "not written: skipped in the write pass");
            return Ok(());
        }
        if ptype == PatternType::Shared && cfg.shared {
            // MPI's shared file pointer lives in a hidden file of its own that ROMIO
            // creates at first use, and a failure there aborts inside MPI (a full
            // disk): try a small file in the same directory first, all ranks agree.
            let probe = if rank == 0 {
                shared_pointer_probe(ctx, &format!("{path}.shfp-probe")).await
            } else {
                Ok(())
            };
            let usable = ctx.bcast_u64(probe.is_ok() as u64, 0).await == 1;
            if !usable {
                let why = probe.err().map_or_else(
                    || "the scratch directory cannot take a file (rank 0 says)".to_string(),
                    |e| e.to_string(),
                );
                self.skip_type(ptype, &format!("shared file pointer not usable: {why}"));
                return Ok(());
            }
        }
        // A call one rank makes alone (the owner's delete, a private open) is
        // agreed at a checkpoint before the next collective: a rank failing
        // alone must not leave its partners waiting in it.
        let deleted = match pass == Pass::Write && owner {
            true => ctx.delete(&path).await.err(),
            false => None,
        };
        agree_on(ctx, "removing the old file", deleted).await?;
        let opts = OpenOptions {
            mode: if pass == Pass::Read {
                OpenMode::Read
            } else {
                OpenMode::CreateReadWrite
            },
            scope,
            api: Api::MpiIo,
            hints: cfg
                .common_hints
                .merged(&cfg.pattern_hints.open_hints(n, pass, ptype)),
            unique_open: cfg.unique,
        };
        ctx.barrier().await;
        let t = ctx.wtime();
        let opened = ctx.open(&path, &opts).await;
        ctx.barrier().await;
        let open = ctx.wtime() - t;
        let (file, failed) = match opened {
            Ok(f) => (Some(f), None),
            Err(e) => (None, Some(e)),
        };
        agree_on(ctx, "opening the file", failed).await?;
        let mut file = file
            .expect("a failed open is agreed above (in the twin, opens fail on every rank alike)");
        let hints = ctx.hints_in_effect(&file);

        let (mut disp, mut pos, mut bytes, mut t_patterns) = (0u64, 0u64, 0u64, 0.0);
        for def in ptype.patterns() {
            let (l, big_l) = def.sizes(lmax, filler);
            let tp = cfg.tp(def);
            let what = format!(
                "n={n} {} type={} ({}) pattern {} l={l} L={big_l}",
                pass.name(),
                ptype.index(),
                ptype.name(),
                def.number
            );
            self.progress.starting(&what);
            let policy = if pass == Pass::Write && ptype <= PatternType::Separated {
                Repeat::TimeBudget { budget: tp }
            } else {
                Repeat::Count(self.reps[def.id])
            };
            let buf = if pass == Pass::Read {
                &mut self.bufs.read
            } else {
                &mut self.bufs.write
            };
            buf.set_len(big_l as usize);
            let expect = if pass == Pass::Read {
                cfg.last_writer(ptype)
            } else {
                pass
            };
            ctx.barrier().await;
            let t0 = ctx.wtime();
            if cfg.strided(ptype) {
                ctx.set_view(&mut file, &scatter_view(n, rank, l, disp)?)
                    .await?;
            } else if def.is_first() {
                let d = if ptype >= PatternType::Segmented {
                    rank as u64 * lseg
                } else {
                    0
                };
                ctx.set_view(
                    &mut file,
                    &View {
                        disp: d,
                        etype: Datatype::Double,
                        filetype: Datatype::Double,
                    },
                )
                .await?;
            }
            let ph = cfg.pattern_hints.pattern_hints(n, pass, def);
            if !ph.is_empty() {
                ctx.set_info(&mut file, &ph).await?;
            }
            // The repetition body: one xfer, offsets affine in the repetition number.
            let base = if cfg.strided(ptype) { 0 } else { pos };
            let per_call = big_l / ETYPE_BYTES;
            let mut errs = PatternErrors {
                count: 0,
                messages: Vec::new(),
                max: cfg.max_errors,
                prefix: format!("rank {rank}: n={n} {} pattern {}", pass.name(), def.id),
            };
            let (file_ref, buf_ref) = (&mut file, &mut *buf);
            let r = ctx
                .repeat(policy, async |rep: u64| {
                    let op = op_for(ptype, pass, cfg.shared, base + rep * per_call);
                    if pass != Pass::Read {
                        fill(buf_ref, rep, def.id, pass, l, big_l);
                    }
                    let mut report = |msg: String| errs.report(msg);
                    match ctx.xfer(file_ref, op, buf_ref).await {
                        Ok(moved) if moved as u64 == big_l => {}
                        Ok(moved) => {
                            report(format!("repetition {rep}: moved {moved} of {big_l} bytes"))
                        }
                        Err(e) => report(format!("repetition {rep}: {e}")),
                    }
                    if pass == Pass::Read {
                        for (j, f, g, ef, el) in verify(buf_ref, rep, def.id, expect, l, big_l) {
                            report(format!(
                                "repetition {rep} chunk {j}: read ({f}, {g}), expected ({ef}, {el})"
                            ));
                        }
                    }
                    Ok(())
                })
                .await?;
            if pass != Pass::Read {
                ctx.barrier().await;
                // A flush that fails (a full disk) is the pattern's error, not the run's.
                if let Err(e) = ctx.sync(&mut file).await {
                    errs.report(format!("sync: {e}"));
                }
            }
            ctx.barrier().await;
            let time = ctx.wtime() - t0;
            let pbytes = r * big_l;
            if cfg.strided(ptype) {
                disp += n as u64 * pbytes;
            } else {
                pos += r * per_call;
            }
            self.reps[def.id] = r;
            bytes += pbytes;
            t_patterns += time;
            let first_error = errs.messages.first().cloned();
            self.m.error_messages.extend(errs.messages);
            let errors = ctx.allreduce_f64(errs.count as f64, ReduceOp::Sum).await as u64;
            if let Some(signal) = ctx.stop_requested().await {
                // The pattern the signal came in may have ended early: not a measurement.
                ctx.close(file).await?;
                return Err(BeffIoError::Interrupted(signal));
            }
            // Holding data is the back end's property, the same on every rank.
            let checked = pass != Pass::Read || buf.bytes().is_some();
            let rec = PatternRecord {
                n,
                pass,
                ptype,
                pattern: def.id,
                tp,
                l,
                big_l,
                reps: r,
                bytes: pbytes,
                time,
                errors,
                checked,
            };
            *self.done += 1;
            let result = match rec.measured_mb_s() {
                Some(bw) => format!("bw={bw:.3} MB/s"),
                None => format!(
                    "FAILED: {errors} errors, first: {}",
                    first_error.as_deref().unwrap_or("on another rank")
                ),
            };
            self.progress.done(
                *self.done,
                &format!("{what}: Tp={tp:.2}s r={r} t={time:.3}s {result}"),
            );
            self.m.patterns.push(rec);
        }
        let t = ctx.wtime();
        let mut closed = ctx.close(file).await.err();
        if pass == Pass::Read && !cfg.keep && owner && closed.is_none() {
            closed = ctx.delete(&path).await.err();
        }
        ctx.barrier().await;
        let close = ctx.wtime() - t;
        agree_on(ctx, "closing (and removing) the file", closed).await?;
        self.m.types.push(TypeRecord {
            n,
            pass,
            ptype,
            open,
            patterns: t_patterns,
            close,
            bytes,
            hints,
        });
        Ok(())
    }
}
