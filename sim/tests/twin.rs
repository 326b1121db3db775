//! The twin on hand-computed cases: virtual times, sharing, MPI semantics,
//! determinism and deadlock detection.

mod common;

use common::try_run;
use piotwin_sim::{Rank, Scenario, SimError};
use piotwin_types::{Access, Api, Coordination, IoError, Op, OpenMode, Position, ReduceOp};

/// A scenario where only what a test names costs anything: zero latencies,
/// links far faster than the device, no caches, an SSD with 64 channels (request
/// latencies overlap). `extra` replaces lines (`key = value`).
fn scenario(cores: usize, nodes: usize, extra: &[(&str, &str)]) -> Scenario {
    let mut lines: Vec<(String, String)> = [
        ("nic_bw", "\"1TB/s\""),
        ("nic_latency", "\"0s\""),
        ("net_bw", "\"1TB/s\""),
        ("net_latency", "\"0s\""),
        ("srv_nic_bw", "\"1TB/s\""),
        ("read_bw", "\"200MB/s\""),
        ("write_bw", "\"100MB/s\""),
        ("read_latency", "\"1ms\""),
        ("write_latency", "\"1ms\""),
        ("latency_jitter", "0.0"),
        ("open", "\"0s\""),
        ("create", "\"0s\""),
        ("close", "\"0s\""),
        ("delete", "\"0s\""),
        ("sync", "\"0s\""),
        ("shared_pointer", "\"0s\""),
        ("memcpy", "\"1GB/s\""),
    ]
    .iter()
    .map(|(k, v)| (k.to_string(), v.to_string()))
    .collect();
    for (k, v) in extra {
        lines
            .iter_mut()
            .find(|(kk, _)| kk == k)
            .expect("known key")
            .1 = v.to_string();
    }
    let g = |k: &str| lines.iter().find(|(kk, _)| kk == k).unwrap().1.clone();
    let text = format!(
        "name = \"test\"\nseed = 1\n[[nodes]]\nname = \"n\"\ncount = {nodes}\ncores = {cores}\nmemory = \"1GiB\"\n\
         nic_bw = {}\nnic_latency = {}\n[nodes.compute]\nmemcpy = {}\nfft = \"1Gflop/s\"\nbt = \"2Gflop/s\"\nflops = \"4Gflop/s\"\n\
         [network]\nbandwidth = {}\nlatency = {}\n[server]\nnic_bw = {}\n[server.device]\nread_bw = {}\nwrite_bw = {}\n\
         read_latency = {}\nwrite_latency = {}\nlatency_jitter = {}\nchannels = 64\n[metadata]\nopen = {}\ncreate = {}\nclose = {}\n\
         delete = {}\nsync = {}\n[mpiio]\nshared_pointer = {}\n",
        g("nic_bw"),
        g("nic_latency"),
        g("memcpy"),
        g("net_bw"),
        g("net_latency"),
        g("srv_nic_bw"),
        g("read_bw"),
        g("write_bw"),
        g("read_latency"),
        g("write_latency"),
        g("latency_jitter"),
        g("open"),
        g("create"),
        g("close"),
        g("delete"),
        g("sync"),
        g("shared_pointer"),
    );
    Scenario::from_str(&text, "test.toml").unwrap()
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-12 * b.abs().max(1.0)
}

/// One rank writes 100 MB over a 100 MB/s device with 1 ms latency: 1.001 s.
#[test]
fn one_writer_takes_latency_plus_size_over_bandwidth() {
    let scn = scenario(1, 1, &[]);
    let t = try_run(&scn, 1, 1, async |r| {
        let mut f = r
            .open("/f", OpenMode::Create, false, Api::Posix)
            .await
            .unwrap();
        let t0 = r.now();
        let n = r
            .xfer(
                &mut f,
                Op {
                    access: Access::Write,
                    coord: Coordination::Independent,
                    pos: Position::At(0),
                },
                100_000_000,
            )
            .await
            .unwrap();
        assert_eq!(n, 100_000_000);
        let dt = r.now() - t0;
        assert_eq!(r.file_size(&f).await, 100_000_000);
        dt
    })
    .unwrap();
    assert!(close(t[0], 1.001), "{}", t[0]);
}

/// Two ranks write 50 MB each at once: they share the device (50 MB/s each) and
/// both finish at 1 ms + 1 s. A third on a slow NIC (10 MB/s) leaves its share
/// to the others: 10 MB/s for it, 45 MB/s each for the two others.
#[test]
fn writers_share_the_device_max_min_fairly() {
    let scn = scenario(1, 2, &[]);
    let t = try_run(&scn, 2, 1, async |r| {
        let mut f = r
            .open("/f", OpenMode::Create, true, Api::MpiIo)
            .await
            .unwrap();
        let t0 = r.now();
        r.xfer(
            &mut f,
            Op {
                access: Access::Write,
                coord: Coordination::Independent,
                pos: Position::At(r.rank() as u64 * 50_000_000),
            },
            50_000_000,
        )
        .await
        .unwrap();
        r.now() - t0
    })
    .unwrap();
    assert!(close(t[0], 1.001) && close(t[1], 1.001), "{t:?}");
}

/// Reads beyond the end of file come back short; deleted files cannot be opened for reading.
#[test]
fn short_reads_and_delete() {
    let scn = scenario(1, 1, &[]);
    let got = try_run(&scn, 1, 1, async |r| {
        let mut f = r
            .open("/f", OpenMode::CreateReadWrite, false, Api::Posix)
            .await
            .unwrap();
        r.xfer(
            &mut f,
            Op {
                access: Access::Write,
                coord: Coordination::Independent,
                pos: Position::At(0),
            },
            1000,
        )
        .await
        .unwrap();
        let t0 = r.now();
        let n = r
            .xfer(
                &mut f,
                Op {
                    access: Access::Read,
                    coord: Coordination::Independent,
                    pos: Position::At(600),
                },
                1000,
            )
            .await
            .unwrap();
        let dt = r.now() - t0;
        let view = r.set_view(&mut f, &piotwin_sim_view()).await;
        r.close(f).await;
        r.delete("/f").await;
        let e = r.open("/f", OpenMode::Read, false, Api::Posix).await.err();
        (n, dt, view, e)
    })
    .unwrap();
    let (n, dt, view, e) = got[0].clone();
    assert_eq!(n, 400);
    assert!(close(dt, 1e-3 + 400.0 / 200e6), "{dt}");
    assert!(matches!(view, Err(IoError::Invalid(m)) if m.contains("POSIX files have no views")));
    assert!(
        matches!(e, Some(IoError::Call { message, .. }) if message == "No such file or directory")
    );
}

fn piotwin_sim_view() -> piotwin_types::View {
    piotwin_types::View::bytes()
}

/// Barrier, bcast and allreduce by their cost models: with 1 us message latency
/// and 8 ranks on 8 nodes, a barrier costs ⌈log2 8⌉ · 1 us = 3 us.
#[test]
fn collectives_cost_and_results() {
    let scn = scenario(
        1,
        8,
        &[("nic_latency", "\"0.5us\""), ("net_latency", "\"0s\"")],
    );
    let got = try_run(&scn, 8, 1, async |r| {
        let t0 = r.now();
        r.barrier().await;
        let dt = r.now() - t0;
        let b = r.bcast_u64(r.rank() as u64 * 10 + 1, 3).await;
        let s = r.allreduce_f64(r.rank() as f64, ReduceOp::Sum).await;
        let mx = r.allreduce_f64(r.rank() as f64, ReduceOp::Max).await;
        let all = r.allgather_f64(r.rank() as f64 * 2.0).await;
        (dt, b, s, mx, all)
    })
    .unwrap();
    for (dt, b, s, mx, all) in got {
        assert!(close(dt, 3e-6), "{dt}");
        assert_eq!((b, s, mx), (31, 28.0, 7.0));
        assert_eq!(all, (0..8).map(|i| i as f64 * 2.0).collect::<Vec<_>>());
    }
}

/// `split` orders by key, then old rank; `None` gets nothing; collectives then run per sub-communicator.
#[test]
fn split_groups_and_orders() {
    let scn = scenario(4, 1, &[]);
    let got = try_run(&scn, 6, 1, async |r| {
        let color = if r.rank() == 5 {
            None
        } else {
            Some(r.rank() % 2)
        };
        let key = 10 - r.rank();
        match r.split(color, key).await {
            Some(sub) => {
                let sum = sub.allreduce_f64(r.rank() as f64, ReduceOp::Sum).await;
                Some((sub.rank(), sub.size(), sum))
            }
            None => None,
        }
    })
    .unwrap();
    // even: old 0, 2, 4 with keys 10, 8, 6 → new order 4, 2, 0. odd: 1, 3 → 3, 1.
    assert_eq!(got[0], Some((2, 3, 6.0)));
    assert_eq!(got[4], Some((0, 3, 6.0)));
    assert_eq!(got[1], Some((1, 2, 4.0)));
    assert_eq!(got[3], Some((0, 2, 4.0)));
    assert_eq!(got[5], None);
}

/// A ring of sendrecv over the network: 1 MB at 1 GB/s per NIC plus 2·1 us of NIC latency.
#[test]
fn sendrecv_ring() {
    let scn = scenario(1, 4, &[("nic_latency", "\"1us\""), ("nic_bw", "\"1GB/s\"")]);
    let got = try_run(&scn, 4, 1, async |r| {
        let n = r.size();
        let t0 = r.now();
        r.sendrecv(1_000_000, (r.rank() + 1) % n, (r.rank() + n - 1) % n)
            .await;
        r.now() - t0
    })
    .unwrap();
    for dt in got {
        assert!(close(dt, 2e-6 + 1e-3), "{dt}");
    }
}

/// write_ordered places data by rank order; write_shared serialises on the pointer lock.
#[test]
fn shared_file_pointer() {
    let scn = scenario(
        4,
        1,
        &[("shared_pointer", "\"10us\""), ("write_latency", "\"0s\"")],
    );
    let got = try_run(&scn, 4, 1, async |r| {
        let mut f = r
            .open("/s", OpenMode::Create, true, Api::MpiIo)
            .await
            .unwrap();
        let len = (r.rank() as u64 + 1) * 100;
        r.xfer(
            &mut f,
            Op {
                access: Access::Write,
                coord: Coordination::Collective,
                pos: Position::SharedPointer,
            },
            len,
        )
        .await
        .unwrap();
        r.barrier().await;
        let size_ordered = r.file_size(&f).await;
        let t0 = r.now();
        r.xfer(
            &mut f,
            Op {
                access: Access::Write,
                coord: Coordination::Independent,
                pos: Position::SharedPointer,
            },
            100,
        )
        .await
        .unwrap();
        let dt = r.now() - t0;
        r.barrier().await;
        (size_ordered, dt, r.file_size(&f).await)
    })
    .unwrap();
    assert!(got.iter().all(|g| g.0 == 1000 && g.2 == 1400), "{got:?}");
    // Four ranks queue on the pointer lock: they get it after 10, 20, 30, 40 us,
    // then write 100 B each (sharing the device while they overlap).
    let mut dts: Vec<f64> = got.iter().map(|g| g.1).collect();
    dts.sort_by(f64::total_cmp);
    assert!(
        dts[0] >= 10e-6 && dts[3] >= 40e-6 && dts[3] < 41e-6 * (1.0 + 1e-9),
        "{dts:?}"
    );
}

/// Nonblocking: independent posts overlap; collective posts complete in `wait_all`,
/// one collective access after the other (ROMIO's schedule for each).
#[test]
fn post_and_wait_all() {
    let scn = scenario(2, 1, &[]);
    let got = try_run(&scn, 2, 1, async |r| {
        let mut f = r
            .open("/p", OpenMode::Create, true, Api::MpiIo)
            .await
            .unwrap();
        let base = r.rank() as u64 * 2_000_000;
        let t0 = r.now();
        let a = r
            .post(
                &mut f,
                Op {
                    access: Access::Write,
                    coord: Coordination::Collective,
                    pos: Position::At(base),
                },
                1_000_000,
            )
            .await
            .unwrap();
        let b = r
            .post(
                &mut f,
                Op {
                    access: Access::Write,
                    coord: Coordination::Collective,
                    pos: Position::At(base + 1_000_000),
                },
                1_000_000,
            )
            .await
            .unwrap();
        let n = r.wait_all(&mut f, vec![a, b]).await;
        (n, r.now() - t0, r.file_size(&f).await)
    })
    .unwrap();
    for (n, dt, size) in got {
        assert_eq!(n, vec![1_000_000, 1_000_000]);
        // Twice two 1 MB requests sharing 100 MB/s: 2 × (2 MB / 100 MB/s + 1 ms
        // latency), plus ROMIO's all-gather of offsets per call (2 × 8 B at 1 GB/s).
        assert!(close(dt, 0.042 + 2.0 * 16e-9), "{dt}");
        assert_eq!(size, 4_000_000);
    }
}

/// compute() costs amount / rate; oversubscribed cores slow it down.
#[test]
fn compute_costs_by_kind() {
    let scn = scenario(1, 1, &[]);
    let got = try_run(&scn, 2, 1, async |r| {
        let t0 = r.now();
        r.compute(piotwin_types::KernelKind::BtStep, 2e9).await;
        r.now() - t0
    })
    .unwrap();
    // 2 ranks on 1 core: 2e9 flops at 2 Gflop/s, twice as slow.
    assert!(close(got[0], 2.0), "{got:?}");
}

/// Same seed → bit-identical times; a different seed changes jittered latencies.
#[test]
fn deterministic_for_a_seed() {
    let scn = scenario(2, 4, &[("latency_jitter", "0.5")]);
    let prog = async |r: &Rank| {
        let mut f = r
            .open("/d", OpenMode::Create, true, Api::MpiIo)
            .await
            .unwrap();
        let mut times = Vec::new();
        for i in 0..5u64 {
            let off = (i * r.size() as u64 + r.rank() as u64) * 65536;
            r.xfer(
                &mut f,
                Op {
                    access: Access::Write,
                    coord: Coordination::Independent,
                    pos: Position::At(off),
                },
                65536,
            )
            .await
            .unwrap();
            times.push(r.now().to_bits());
        }
        r.close(f).await;
        times
    };
    let a = try_run(&scn, 8, 42, prog).unwrap();
    let b = try_run(&scn, 8, 42, prog).unwrap();
    let c = try_run(&scn, 8, 43, prog).unwrap();
    assert_eq!(a, b);
    assert_ne!(a, c);
}

/// A rank that skips a barrier leaves the others blocked: a diagnosable deadlock.
#[test]
fn deadlock_is_reported() {
    let scn = scenario(4, 1, &[]);
    let e = try_run(&scn, 3, 1, async |r| {
        if r.rank() != 1 {
            r.barrier().await;
        }
    })
    .unwrap_err();
    match e {
        SimError::Deadlock {
            blocked_ranks,
            waiting_on,
        } => {
            assert_eq!(blocked_ranks, vec![0, 2]);
            assert_eq!(
                waiting_on[0],
                "rank 0: barrier #0 on communicator 0, 2 of 3 ranks arrived"
            );
        }
        other => panic!("{other}"),
    }
    let e = try_run(&scn, 2, 1, async |r| {
        let peer = 1 - r.rank();
        if r.rank() == 0 {
            r.sendrecv(10, peer, peer).await;
        }
    })
    .unwrap_err();
    assert!(
        e.to_string().contains("rank 0: sendrecv to world rank 1"),
        "{e}"
    );
}
