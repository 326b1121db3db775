//! Engine throughput (plain harness): events handled per wall-clock second.
//!
//! `cargo run --release -p piotwin-sim --example engine_bench [ranks]`
//!
//! * `delays`: every rank sleeps 1000 times (a distinct step per rank) — pure
//!   event-queue + executor cost;
//! * `barriers`: 100 barriers — rendezvous plus one completion per rank;
//! * `ior-like`: 16 independent 1 MiB `write_at`s per rank to one shared file
//!   with a barrier after each — flows through the max–min solver.

use std::future::Future;
use std::pin::Pin;
use std::time::Instant;

use piotwin_sim::{Access, Coord, FileApi, OpenMode, Pos, Rank, Scenario, Twin};

type Task<'a> = Pin<Box<dyn Future<Output = ()> + 'a>>;

#[allow(clippy::disallowed_methods)] // timing the harness, not the model
fn time<'a>(name: &str, scn: &Scenario, n: usize, body: impl AsyncFn(&Rank) + 'a) {
    let twin = Twin::new(scn, n, 1).unwrap();
    let ranks: Vec<Rank> = (0..n).map(|r| twin.rank(r)).collect();
    let body = &body;
    let tasks: Vec<Task<'_>> = ranks
        .iter()
        .map(|r| Box::pin(async move { body(r).await }) as Task<'_>)
        .collect();
    let t0 = Instant::now();
    let stats = twin.run(tasks).unwrap();
    let wall = t0.elapsed().as_secs_f64();
    println!(
        "{name:>9}: {n} ranks, {:>9} events in {wall:.3} s = {:.2} M events/s; virtual end {:.6} s",
        stats.events,
        stats.events as f64 / wall / 1e6,
        stats.end_time
    );
}

fn main() {
    let n: usize = std::env::args()
        .nth(1)
        .map_or(4096, |s| s.parse().expect("ranks"));
    let scn =
        Scenario::from_str(include_str!("../../scenarios/default.toml"), "default.toml").unwrap();
    time("delays", &scn, n, async |r| {
        let step = 1e-6 * (1.0 + r.world_rank() as f64 / 7919.0);
        for _ in 0..1000 {
            r.sleep(step).await;
        }
    });
    time("barriers", &scn, n, async |r| {
        for _ in 0..100 {
            r.barrier().await;
        }
    });
    time("ior-like", &scn, n, async |r| {
        let mut f = r
            .open("/ior", OpenMode::Create, true, FileApi::MpiIo)
            .await
            .unwrap();
        let block = 1u64 << 20;
        for i in 0..16u64 {
            let off = (i * r.size() as u64 + r.rank() as u64) * block;
            r.xfer(
                &mut f,
                Access::Write,
                Coord::Independent,
                Pos::At(off),
                block,
            )
            .await
            .unwrap();
            r.barrier().await;
        }
        r.close(f).await;
    });
}
