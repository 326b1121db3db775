//! The fast-forward's plan for requests the devices serve, on hand-computed
//! cases: a stream of small reads from a RAID of disks is skipped only over a
//! window and a stretch long enough for the head movements it does not
//! simulate (a positioning each time it reaches the next member) to stay
//! within ε·k·Δ; a stream from an SSD has none to bound.

mod common;

use common::run;
use piotwin_sim::{FF_EPSILON, FfPlan, Scenario};
use piotwin_types::{Access, Api, Coordination, KernelKind, Op, OpenMode, Position};

/// One node without a page cache, one server without a cache that spends
/// 20 ms of CPU per request (so an iteration is long against a disk's
/// positioning), and `device`.
fn scenario(device: &str) -> Scenario {
    let text = format!(
        "name = \"ff\"\nseed = 1\n[[nodes]]\nname = \"n\"\ncount = 1\ncores = 1\nmemory = \"1GiB\"\n\
         nic_bw = \"1GB/s\"\nnic_latency = \"0s\"\n[nodes.compute]\nmemcpy = \"1GB/s\"\n\
         fft = \"1Gflop/s\"\nbt = \"1Gflop/s\"\nflops = \"1Gflop/s\"\n\
         [network]\nbandwidth = \"1GB/s\"\nlatency = \"0s\"\n\
         [server]\ncount = 1\nnic_bw = \"1GB/s\"\nrequest_cpu = \"20ms\"\n{device}\n\
         [metadata]\nopen = \"0s\"\ncreate = \"0s\"\nclose = \"0s\"\ndelete = \"0s\"\nsync = \"0s\"\n\
         [mpiio]\nshared_pointer = \"0s\"\n"
    );
    Scenario::from_str(&text, "ff.toml").unwrap()
}

const RAID5: &str = "[server.device]\nkind = \"raid\"\nlevel = 5\ndisks = 5\nstripe_unit = \"64KiB\"\n\
     [server.device.member]\nkind = \"hdd\"\ncapacity = \"100GB\"\nrpm = 6000\nseek_track = \"1ms\"\n\
     seek_full = \"15ms\"\ntransfer_rate = \"100MB/s\"\ntransfer_rate_inner = \"100MB/s\"\nqueue = \"fifo\"";

const SSD: &str = "[server.device]\nread_bw = \"1GB/s\"\nwrite_bw = \"1GB/s\"\n\
     read_latency = \"100us\"\nwrite_latency = \"100us\"";

/// Writes 4 MiB, then reads it back 1 KiB per iteration observing each; the
/// plans made on windows of `2B + 1` observations for each `B` of `halves`.
fn plans(scn: &Scenario, halves: &[usize]) -> Vec<Option<FfPlan>> {
    let mut out = run(scn, 1, async |rank| {
        let mut f = rank
            .open("/f", OpenMode::CreateReadWrite, false, Api::Posix)
            .await
            .unwrap();
        rank.xfer(
            &mut f,
            Op {
                access: Access::Write,
                coord: Coordination::Independent,
                pos: Position::At(0),
            },
            4 << 20,
        )
        .await
        .unwrap();
        rank.ff_start();
        let mut window = vec![rank.ff_observe(None, false)];
        let mut plans = Vec::new();
        for j in 0..600u64 {
            rank.xfer(
                &mut f,
                Op {
                    access: Access::Read,
                    coord: Coordination::Independent,
                    pos: Position::At(j << 10),
                },
                1024,
            )
            .await
            .unwrap();
            window.push(rank.ff_observe(None, true));
            if halves.iter().any(|&b| window.len() == 2 * b + 1) {
                plans.push(rank.ff_plan(&window, u64::MAX));
            }
        }
        rank.ff_stop();
        plans
    });
    out.remove(0)
}

/// Worst cost of reaching another member for a read: a full seek and a full
/// revolution, 15 ms + 60/6000 s = 25 ms. With Δ ≈ 20 ms of server CPU, a
/// window needs B > c/(εΔ) = 125 to bound the crossings it may have missed;
/// at B = 256 the plan asks for at least ⌈2c / (εΔ − c/B)⌉ iterations.
#[test]
fn raid_reads_skip_only_over_a_long_stretch() {
    let got = plans(&scenario(RAID5), &[2, 64, 256]);
    assert_eq!(got.len(), 3);
    assert!(got[0].is_none(), "B = 2 cannot bound a crossing");
    assert!(got[1].is_none(), "B = 64 cannot bound a crossing");
    let plan = got[2].as_ref().expect("B = 256 bounds them");
    let c = 0.015 + 60.0 / 6000.0;
    let d = plan.delta;
    assert!(d > 0.020 && d < 0.0201, "Δ = {d}");
    let fewest = (2.0 * c / (FF_EPSILON * d - c / 256.0)).ceil() as u64;
    assert_eq!(plan.min_skip, fewest);
    assert!((480..=500).contains(&fewest), "{fewest}");
    assert!(plan.max_skip >= plan.min_skip);
}

/// An SSD has no head: a short window is enough.
#[test]
fn ssd_reads_skip_over_any_stretch() {
    let got = plans(&scenario(SSD), &[2]);
    let plan = got[0].as_ref().expect("a steady SSD stream");
    assert_eq!(plan.min_skip, 0);
    assert!(plan.max_skip > 0);
}

/// Rank 0 repeats 2000 iterations of 1 ms of CPU work while rank 1 computes
/// 1 s, both on the node's one core (processor sharing: each gets half of
/// it while both run). Exactly: rank 1 ends at 2 s, rank 0 at 3 s. Rank 0
/// skipping 1000 of its iterations alone must keep their load on the core
/// (skipping it would let rank 1 end at about 1 s).
fn shared_core_ends(skip: bool) -> Vec<f64> {
    run(&scenario(SSD), 2, async |rank| {
        if rank.rank() == 1 {
            rank.compute(KernelKind::Flops, 1e9).await;
            return rank.now();
        }
        rank.ff_start();
        let mut window = vec![rank.ff_observe(None, false)];
        let mut j = 0;
        while j < 2000 {
            rank.compute(KernelKind::Flops, 1e6).await;
            j += 1;
            window.push(rank.ff_observe(None, true));
            if skip && window.len() == 5 && j < 1000 {
                let plan = rank.ff_plan(&window, u64::MAX).expect("steady compute");
                assert!(plan.local(), "no request leaves the node");
                rank.ff_skip_alone(&plan, 1000).await;
                j += 1000;
                window = vec![rank.ff_observe(None, false)];
            }
        }
        rank.ff_stop();
        rank.now()
    })
}

#[test]
fn a_lone_skip_keeps_its_load_on_a_shared_core() {
    let exact = shared_core_ends(false);
    assert!(
        (exact[0] - 3.0).abs() < 1e-6 && (exact[1] - 2.0).abs() < 1e-6,
        "{exact:?}"
    );
    let skipped = shared_core_ends(true);
    for (s, e) in skipped.iter().zip(&exact) {
        assert!(
            (s - e).abs() <= FF_EPSILON * e,
            "skipping: {skipped:?}, exact: {exact:?}"
        );
    }
}
