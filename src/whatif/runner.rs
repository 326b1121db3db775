//! Running a sweep's points: in worker threads (rayon), and under `mpiexec -n K`
//! one share of the points per MPI rank with every result gathered at rank 0.
//! Finished points are appended to `DIR/points.jsonl` as they come, one JSON
//! line each, so that a crash or a Ctrl-C keeps them and the same command
//! resumes: a point whose identity (everything that decides its run) is stored
//! is not run again.

use std::collections::BTreeMap;
use std::io::{Read, Seek, Write};
use std::path::{Path, PathBuf};
use std::sync::mpsc;

use piotwin_types::stop;
use rayon::prelude::*;
use serde::{Deserialize, Serialize};

use super::sweep::{Point, Sweep};
use crate::report::Interval;
use crate::run::CliError;

/// One finished point, as stored.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Outcome {
    /// The point's position in the sweep, from 0.
    pub index: usize,
    /// What decided its run ([`Sweep::identity`]).
    pub identity: String,
    /// Ranks, then each varied key's value, as `name=value`.
    pub params: Vec<(String, String)>,
    /// The run's metrics.
    pub metrics: BTreeMap<String, f64>,
    /// The benchmark's headline metrics among them.
    pub headline: Vec<String>,
    /// With `samples`: per metric, median and 95 % interval.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub intervals: BTreeMap<String, Interval>,
    /// Why the point's run failed (its metrics are what it measured), if it did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failure: Option<String>,
}

/// `DIR/points.jsonl`: the finished points, appended one line at a time.
pub struct Store {
    path: PathBuf,
    file: std::fs::File,
    /// Stored outcomes by identity (a later line wins).
    pub done: BTreeMap<String, Outcome>,
}

impl Store {
    /// The file of finished points in `dir` (created with `dir` if new). A last
    /// line cut short by a crash is dropped; lines that do not parse are an error.
    pub fn open(dir: &Path) -> Result<Store, String> {
        std::fs::create_dir_all(dir)
            .map_err(|e| format!("--out `{}`: cannot create it: {e}", dir.display()))?;
        let path = dir.join("points.jsonl");
        let mut file = std::fs::OpenOptions::new()
            .read(true)
            .append(true)
            .create(true)
            .open(&path)
            .map_err(|e| format!("`{}`: cannot open it: {e}", path.display()))?;
        let mut text = String::new();
        file.read_to_string(&mut text)
            .map_err(|e| format!("`{}`: cannot read it: {e}", path.display()))?;
        let whole = text.rfind('\n').map_or(0, |i| i + 1);
        if whole < text.len() {
            // A line cut short by a crash: not a result.
            file.set_len(whole as u64)
                .and_then(|_| file.seek(std::io::SeekFrom::End(0)).map(drop))
                .map_err(|e| {
                    format!(
                        "`{}`: cannot drop its cut-short last line: {e}",
                        path.display()
                    )
                })?;
        }
        let mut done = BTreeMap::new();
        for (i, line) in text[..whole].lines().enumerate() {
            let o: Outcome = serde_json::from_str(line).map_err(|e| {
                format!(
                    "`{}`, line {}: not a stored sweep point ({e}); move the file away to start afresh",
                    path.display(),
                    i + 1
                )
            })?;
            done.insert(o.identity.clone(), o);
        }
        Ok(Store { path, file, done })
    }

    /// Appends `o` as one line, written with one call and flushed to the device.
    pub fn append(&mut self, o: Outcome) -> Result<(), String> {
        let mut line = serde_json::to_string(&o).expect("an outcome serialises");
        line.push('\n');
        self.file
            .write_all(line.as_bytes())
            .and_then(|_| self.file.sync_data())
            .map_err(|e| {
                format!(
                    "`{}`: cannot append a finished point: {e}",
                    self.path.display()
                )
            })?;
        self.done.insert(o.identity.clone(), o);
        Ok(())
    }
}

/// Runs point `p` in the twin: `None` when a stop request cut it short (it is
/// not a result).
pub fn run_point(sweep: &Sweep, p: &Point, samples: Option<usize>) -> Option<Outcome> {
    if stop::requested().is_some() {
        return None;
    }
    let mut params = vec![("ranks".to_string(), p.ranks.to_string())];
    params.extend(
        sweep.dims[1..]
            .iter()
            .zip(&p.settings)
            .map(|(d, s)| (d.name.clone(), s.shown.clone())),
    );
    let identity = sweep.identity(p, samples);
    let outcome = |metrics, headline, intervals, failure| Outcome {
        index: p.index,
        identity: identity.clone(),
        params: params.clone(),
        metrics,
        headline,
        intervals,
        failure,
    };
    let predicted = sweep
        .bench(p, samples)
        .map_err(CliError::Usage)
        .and_then(|b| b.predict());
    match predicted {
        Ok((report, _)) if report.interrupted.is_some() => None,
        Ok((report, failure)) => Some(outcome(
            report.metrics,
            report.headline,
            report.intervals,
            failure,
        )),
        Err(CliError::Interrupted { .. }) => None,
        Err(e) => Some(outcome(
            BTreeMap::new(),
            Vec::new(),
            BTreeMap::new(),
            Some(e.message().unwrap_or("failed").to_string()),
        )),
    }
}

/// A pool of worker threads running points.
struct Workers(rayon::ThreadPool);

impl Workers {
    fn start(jobs: usize) -> Result<Workers, String> {
        rayon::ThreadPoolBuilder::new()
            .num_threads(jobs)
            .build()
            .map(Workers)
            .map_err(|e| format!("cannot start {jobs} worker threads: {e}"))
    }

    /// Runs `points`, one task each, sending every outcome to `tx` as it
    /// finishes (the channel closes when the last worker is done).
    fn run(
        &self,
        sweep: &Sweep,
        points: &[&Point],
        samples: Option<usize>,
        tx: mpsc::Sender<Outcome>,
    ) {
        self.0.install(|| {
            points
                .par_iter()
                .with_max_len(1)
                .for_each_with(tx, |tx, p| {
                    if let Some(o) = run_point(sweep, p, samples) {
                        let _ = tx.send(o);
                    }
                })
        })
    }
}

/// Runs `todo` on `jobs` worker threads; every finished point goes to `done`
/// as it comes (on the calling thread, in finishing order).
pub fn run_threads(
    sweep: &Sweep,
    todo: &[&Point],
    jobs: usize,
    samples: Option<usize>,
    mut done: impl FnMut(Outcome) -> Result<(), String>,
) -> Result<(), String> {
    let workers = Workers::start(jobs)?;
    let (tx, rx) = mpsc::channel();
    std::thread::scope(|scope| {
        scope.spawn(move || workers.run(sweep, todo, samples, tx));
        // Ends when every worker is done (the last sender dropped).
        rx.iter().try_for_each(&mut done)
    })
}

/// Under `mpiexec -n K`: rank r runs every K-th point of `todo` (from r) on
/// its own `jobs` threads and sends each result to rank 0, which hands them
/// all to `done`. Every rank returns when every rank has finished its share.
#[cfg(feature = "mpi")]
pub fn run_mpi(
    sweep: &Sweep,
    todo: &[usize],
    jobs: usize,
    samples: Option<usize>,
    mut done: impl FnMut(Outcome) -> Result<(), String>,
) -> Result<(), String> {
    const RESULT: i32 = 71;
    const FINISHED: i32 = 72;
    let job = piotwin_real::init().map_err(|e| format!("MPI: {e}"))?;
    let world = piotwin_real::Comm::world();
    // Rank 0's list of points to run is everyone's.
    let bytes = world.bcast_bytes(serde_json::to_vec(todo).expect("indices serialise"), 0);
    let todo: Vec<usize> =
        serde_json::from_slice(&bytes).map_err(|e| format!("MPI: the list of points: {e}"))?;
    let mine: Vec<&Point> = todo
        .iter()
        .skip(job.rank)
        .step_by(job.size)
        .map(|&i| &sweep.points[i])
        .collect();
    let pool = Workers::start(jobs)?;
    let (tx, rx) = mpsc::channel::<Outcome>();
    std::thread::scope(|scope| {
        let workers = scope.spawn(move || pool.run(sweep, &mine, samples, tx));
        // Only this thread calls MPI (thread level funneled).
        if job.rank != 0 {
            let mut sent = 0u64;
            for o in rx.iter() {
                world.send_bytes(
                    &serde_json::to_vec(&o).expect("an outcome serialises"),
                    0,
                    RESULT,
                );
                sent += 1;
            }
            world.send_bytes(&sent.to_le_bytes(), 0, FINISHED);
            let _ = workers.join();
            return Ok(());
        }
        // Rank 0: its own results and the others', until every rank said how
        // many it sent and all of them arrived.
        let mut expected: BTreeMap<usize, u64> = BTreeMap::new();
        let mut received: BTreeMap<usize, u64> = BTreeMap::new();
        let mut local_done = false;
        let mut failed = None;
        loop {
            let mut idle = true;
            loop {
                match rx.try_recv() {
                    Ok(o) => {
                        idle = false;
                        if let Err(e) = done(o) {
                            failed.get_or_insert(e);
                        }
                    }
                    Err(mpsc::TryRecvError::Empty) => break,
                    Err(mpsc::TryRecvError::Disconnected) => {
                        local_done = true;
                        break;
                    }
                }
            }
            while let Some((source, bytes)) = world.try_receive_bytes(RESULT) {
                idle = false;
                *received.entry(source).or_default() += 1;
                match serde_json::from_slice::<Outcome>(&bytes) {
                    Ok(o) => {
                        if let Err(e) = done(o) {
                            failed.get_or_insert(e);
                        }
                    }
                    Err(e) => {
                        failed.get_or_insert(format!("MPI: a result from rank {source}: {e}"));
                    }
                }
            }
            while let Some((source, bytes)) = world.try_receive_bytes(FINISHED) {
                idle = false;
                let n = bytes.try_into().map(u64::from_le_bytes).unwrap_or(0);
                expected.insert(source, n);
            }
            let all_in = expected.len() + 1 == job.size
                && expected
                    .iter()
                    .all(|(r, n)| received.get(r).copied().unwrap_or(0) == *n);
            if local_done && all_in {
                break;
            }
            if idle {
                std::thread::sleep(std::time::Duration::from_millis(2));
            }
        }
        let _ = workers.join();
        failed.map_or(Ok(()), Err)
    })
}
