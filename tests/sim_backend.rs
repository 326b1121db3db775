//! The twin back end end to end: a small program through `IoCtx` at 1024 ranks.

use piotwin::backend::sim::launch;
use piotwin::ctx::{
    Api, Hints, IoBuf, IoCtx, Op, OpenMode, OpenOptions, RankProgram, ReduceOp, Scope,
};
use piotwin_sim::Scenario;

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

#[test]
fn small_program_at_1024_ranks_is_plausible_and_deterministic() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/scenarios/default.toml");
    let scn = Scenario::load(std::path::Path::new(path)).unwrap();
    let n = 1024;
    let a = launch(&scn, n, scn.seed, &Program).unwrap();
    let b = launch(&scn, n, scn.seed, &Program).unwrap();
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
    let dev = &scn.server.device;
    for (rank, &(w, r, got, size, sum, end)) in a.iter().enumerate() {
        assert_eq!(got, BLOCK, "rank {rank} reads its block back");
        assert_eq!(size, (n * BLOCK) as u64);
        assert_eq!(sum, (n * (n - 1) / 2) as f64);
        // The device is the bottleneck: no faster than total / bandwidth, and with
        // only latencies and collectives on top, not much slower.
        assert!(
            w >= total / dev.write_bw && w <= 1.5 * total / dev.write_bw + 0.01,
            "rank {rank}: write {w}"
        );
        assert!(
            r >= total / dev.read_bw && r <= 1.5 * total / dev.read_bw + 0.01,
            "rank {rank}: read {r}"
        );
        assert!(end > w + r);
    }
}
