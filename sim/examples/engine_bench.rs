//! Engine throughput (plain harness): events handled per wall-clock second.
//!
//! `cargo run --release -p piotwin-sim --example engine_bench [ranks…]` (default 4096)
//!
//! Events per second are given per wall second and per second of CPU time of
//! the (single) engine thread, read from Linux's `/proc/thread-self/schedstat`:
//! on a shared machine the wall figure counts time spent waiting for a core,
//! the CPU figure is the events/s per core.
//!
//! * `delays`: every rank sleeps 1000 times (a distinct step per rank) — pure
//!   event-queue + executor cost;
//! * `barriers`: 100 barriers — rendezvous plus one completion per rank;
//! * `ior-like`: 16 independent 1 MiB `write_at`s per rank to one shared file
//!   with a barrier after each — flows through the max–min solver.

use std::future::Future;
use std::pin::Pin;
use std::time::Instant;

use piotwin_sim::{Rank, Scenario, SimOptions, Twin};
use piotwin_types::{Access, Api, Coordination, Op, OpenMode, Position};

type Task<'a> = Pin<Box<dyn Future<Output = ()> + 'a>>;

/// Nanoseconds this thread has run on a CPU (Linux schedstat), if readable.
fn cpu_ns() -> Option<u64> {
    std::fs::read_to_string("/proc/thread-self/schedstat")
        .ok()?
        .split_whitespace()
        .next()?
        .parse()
        .ok()
}

#[allow(clippy::disallowed_methods)] // timing the harness, not the model
fn time<'a>(name: &str, scn: &Scenario, n: usize, body: impl AsyncFn(&Rank) + 'a) {
    let twin = Twin::new(scn, n, SimOptions::seeded(1)).unwrap();
    let ranks: Vec<Rank> = (0..n).map(|r| twin.rank(r)).collect();
    let body = &body;
    let tasks: Vec<Task<'_>> = ranks
        .iter()
        .map(|r| Box::pin(async move { body(r).await }) as Task<'_>)
        .collect();
    let (t0, c0) = (Instant::now(), cpu_ns());
    let stats = twin.run(tasks).unwrap();
    let wall = t0.elapsed().as_secs_f64();
    let cpu = cpu_ns().zip(c0).map(|(c1, c0)| (c1 - c0) as f64 * 1e-9);
    let per_core = cpu.map_or("-".to_string(), |c| {
        format!("{:.2}", stats.events as f64 / c.max(1e-9) / 1e6)
    });
    println!(
        "{name:>9}  {n:>6}  {:>9}  {wall:>7.3}  {:>7}  {:>9.2}  {per_core:>9}  {:.6}",
        stats.events,
        cpu.map_or("-".to_string(), |c| format!("{c:.3}")),
        stats.events as f64 / wall / 1e6,
        stats.end_time
    );
}

fn main() {
    let mut sizes: Vec<usize> = std::env::args()
        .skip(1)
        .map(|s| s.parse().expect("ranks: a positive integer"))
        .collect();
    if sizes.is_empty() {
        sizes.push(4096);
    }
    let scn =
        Scenario::from_str(include_str!("../../scenarios/default.toml"), "default.toml").unwrap();
    println!(
        "{:>9}  {:>6}  {:>9}  {:>7}  {:>7}  {:>9}  {:>9}  virtual end s",
        "bench", "ranks", "events", "wall s", "cpu s", "M ev/s", "M ev/s/cpu"
    );
    for n in sizes {
        run(&scn, n);
    }
}

fn run(scn: &Scenario, n: usize) {
    time("delays", scn, n, async |r| {
        let step = 1e-6 * (1.0 + r.world_rank() as f64 / 7919.0);
        for _ in 0..1000 {
            r.sleep(step).await;
        }
    });
    time("barriers", scn, n, async |r| {
        for _ in 0..100 {
            r.barrier().await;
        }
    });
    time("ior-like", scn, n, async |r| {
        let mut f = r
            .open("/ior", OpenMode::Create, true, Api::MpiIo)
            .await
            .unwrap();
        let block = 1u64 << 20;
        for i in 0..16u64 {
            let off = (i * r.size() as u64 + r.rank() as u64) * block;
            r.xfer(
                &mut f,
                Op {
                    access: Access::Write,
                    coord: Coordination::Independent,
                    pos: Position::At(off),
                },
                block,
            )
            .await
            .unwrap();
            r.barrier().await;
        }
        r.close(f).await;
    });
}
