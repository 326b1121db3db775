//! The twin back end end to end: the back-end checks that the real back end
//! passes (`backend_checks/`), and a small program through `IoCtx` at 1024 ranks.

mod backend_checks;

use piotwin::backend::sim::launch;
use piotwin::ctx::{
    Api, Hints, IoBuf, IoCtx, Op, OpenMode, OpenOptions, RankProgram, ReduceOp, Scope,
};
use piotwin_sim::{Scenario, SimOptions};

const BLOCK: usize = 1 << 20;

struct Program;

/// Per rank: (write time, read time, bytes read, file size seen, allreduce sum, end time).
type Out = (f64, f64, usize, u64, f64, f64);

impl RankProgram for Program {
    type Output = Out;
    async fn run<C: IoCtx>(&self, ctx: &C) -> Out {
        let opts = OpenOptions {
            mode: OpenMode::CreateReadWrite,
            scope: Scope::Shared,
            api: Api::MpiIo,
            hints: Hints::new(),
            unique_open: false,
        };
        ctx.barrier().await;
        let sum = ctx.allreduce_f64(ctx.rank() as f64, ReduceOp::Sum).await;
        let mut f = ctx.open("/twin/shared.dat", &opts).await.unwrap();
        let mut buf = ctx.alloc(BLOCK);
        assert!(buf.bytes().is_none() && buf.len() == BLOCK);
        let off = (ctx.rank() * BLOCK) as u64;
        ctx.barrier().await;
        let t0 = ctx.wtime();
        ctx.xfer(&mut f, Op::write_at(off), &mut buf).await.unwrap();
        ctx.barrier().await;
        let t1 = ctx.wtime();
        let got = ctx.xfer(&mut f, Op::read_at(off), &mut buf).await.unwrap();
        ctx.barrier().await;
        let t2 = ctx.wtime();
        let size = ctx.file_size(&mut f).await.unwrap();
        ctx.close(f).await.unwrap();
        (t1 - t0, t2 - t1, got, size, sum, ctx.wtime())
    }
}

const UNCACHED_SSD: &str = r#"
name = "uncached-ssd"
seed = 1
[[nodes]]
name = "n"
count = 64
cores = 16
memory = "64GiB"
nic_bw = "10GB/s"
nic_latency = "1us"
[nodes.compute]
memcpy = "10GB/s"
fft = "2Gflop/s"
bt = "2Gflop/s"
flops = "2Gflop/s"
[network]
bandwidth = "400GB/s"
latency = "1us"
[server]
nic_bw = "100GB/s"
[server.device]
read_bw = "3GB/s"
write_bw = "2GB/s"
read_latency = "80us"
write_latency = "20us"
channels = 64
[metadata]
open = "5us"
create = "30us"
close = "3us"
delete = "40us"
sync = "1ms"
[mpiio]
shared_pointer = "50us"
"#;

#[test]
fn small_program_at_1024_ranks_is_plausible_and_deterministic() {
    // No page cache and overlapping device requests: the device's bandwidth is
    // then the bound the checks below compute by hand.
    let scn = Scenario::from_str(UNCACHED_SSD, "uncached-ssd.toml").unwrap();
    let n = 1024;
    let (a, _) = launch(&scn, n, SimOptions::seeded(scn.seed), &Program).unwrap();
    let (b, _) = launch(&scn, n, SimOptions::seeded(scn.seed), &Program).unwrap();
    let bits = |v: &Vec<Out>| {
        v.iter()
            .map(|o| (o.0.to_bits(), o.1.to_bits(), o.5.to_bits()))
            .collect::<Vec<_>>()
    };
    assert_eq!(
        bits(&a),
        bits(&b),
        "same scenario and seed must give identical times"
    );

    let total = (n * BLOCK) as f64;
    let (read_bw, write_bw) = (3e9, 2e9);
    for (rank, &(w, r, got, size, sum, end)) in a.iter().enumerate() {
        assert_eq!(got, BLOCK, "rank {rank} reads its block back");
        assert_eq!(size, (n * BLOCK) as u64);
        assert_eq!(sum, (n * (n - 1) / 2) as f64);
        // The device is the bottleneck: no faster than total / bandwidth, and with
        // only latencies and collectives on top, not much slower.
        assert!(
            w >= total / write_bw && w <= 1.5 * total / write_bw + 0.01,
            "rank {rank}: write {w}"
        );
        assert!(
            r >= total / read_bw && r <= 1.5 * total / read_bw + 0.01,
            "rank {rank}: read {r}"
        );
        assert!(end > w + r);
    }
}

#[test]
fn the_backend_checks_pass_in_the_twin() {
    let scn = Scenario::from_str(include_str!("../scenarios/default.toml"), "default.toml")
        .expect("the shipped scenario loads");
    let checks = backend_checks::Checks {
        dir: "/twin/checks".into(),
    };
    let (outs, _) = launch(
        &scn,
        backend_checks::NPROCS,
        SimOptions::seeded(scn.seed),
        &checks,
    )
    .expect("no deadlock");
    for (rank, out) in outs.iter().enumerate() {
        assert_eq!(out, &Ok(()), "rank {rank}");
    }
}
