//! The client-CPU terms of the twin on hand-computed cases: per-call MPI-IO
//! and system-call costs, page-cache copy rates, processor sharing on an
//! oversubscribed node and its wake-up latency, waiting ranks that poll, data
//! patterns filled and checked at their own rates, fresh memory for a growing
//! page cache, deletion by size; every term off by default (0 / absent gives
//! bit-identical times to leaving the key out).

mod common;

use common::run;

use piotwin_sim::{Rank, Scenario};
use piotwin_types::{
    Access, Api, Coordination, FortranAccess, KernelKind, Op, OpenMode, Position, ReduceOp,
};

/// A node group of `cores` cores with only what a test names costing anything:
/// zero latencies, a 1 GB/s memcpy, an SSD of 100 MB/s writes and 200 MB/s
/// reads with 1 ms latency and 64 channels, free metadata; `--set` overrides.
fn scenario(cores: usize, cache: bool, set: &[&str]) -> Scenario {
    let text = format!(
        "name = \"cpu\"\nseed = 1\n[[nodes]]\nname = \"n\"\ncount = 1\ncores = {cores}\nmemory = \"1GiB\"\n\
         nic_bw = \"1TB/s\"\nnic_latency = \"0s\"\n{}[nodes.compute]\nmemcpy = \"1GB/s\"\nfft = \"1Gflop/s\"\n\
         bt = \"1Gflop/s\"\nflops = \"1Gflop/s\"\n[network]\nbandwidth = \"1TB/s\"\nlatency = \"0s\"\n\
         [server]\nnic_bw = \"1TB/s\"\n[server.device]\nread_bw = \"200MB/s\"\nwrite_bw = \"100MB/s\"\n\
         read_latency = \"1ms\"\nwrite_latency = \"1ms\"\nchannels = 64\n[metadata]\nopen = \"0s\"\n\
         create = \"0s\"\nclose = \"0s\"\ndelete = \"0s\"\nsync = \"0s\"\n[mpiio]\nshared_pointer = \"0s\"\n",
        if cache { "[nodes.cache]\n" } else { "" }
    );
    let set: Vec<String> = set.iter().map(|s| s.to_string()).collect();
    Scenario::from_str_with(&text, "cpu.toml", &set).unwrap()
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-9 * b.abs().max(1e-6)
}

/// Each rank: open (shared, MPI-IO), `calls` independent writes of `len` bytes
/// in its own block, a collective write, close; returns the virtual times
/// after the open, the independent writes, the collective write and the close.
async fn io_program(r: &Rank, api: Api, calls: u64, len: u64) -> [f64; 4] {
    let shared = api == Api::MpiIo;
    let mut f = r
        .open("/f", OpenMode::CreateReadWrite, shared, api)
        .await
        .unwrap();
    let t_open = r.now();
    let base = r.world_rank() as u64 * (calls + 1) * len;
    for i in 0..calls {
        let pos = Position::At(base + i * len);
        r.xfer(
            &mut f,
            Op {
                access: Access::Write,
                coord: Coordination::Independent,
                pos: pos,
            },
            len,
        )
        .await
        .unwrap();
    }
    let t_ind = r.now();
    if api == Api::MpiIo {
        let pos = Position::At(base + calls * len);
        r.xfer(
            &mut f,
            Op {
                access: Access::Write,
                coord: Coordination::Collective,
                pos: pos,
            },
            len,
        )
        .await
        .unwrap();
    }
    let t_coll = r.now();
    r.close(f).await;
    [t_open, t_ind, t_coll, r.now()]
}

fn bits(v: &[[f64; 4]]) -> Vec<[u64; 4]> {
    v.iter().map(|a| a.map(f64::to_bits)).collect()
}

/// Every new key at its "off" value gives the same bits as leaving it out:
/// on a cached node with two ranks (independent, collective, open, close).
#[test]
fn terms_at_their_defaults_leave_times_bit_identical() {
    let off = [
        "mpiio.independent_call=0s",
        "mpiio.collective_call=0s",
        "mpiio.open=0s",
        "mpiio.close=0s",
        "nodes[0].syscall=0s",
        "nodes[0].fortran_statement=0s",
        "nodes[0].oversubscribed_wakeup=0s",
        "nodes[0].sleeping_ranks=hold",
        "nodes[0].compute.private_cache=0B",
        "mpiio.first_open=0s",
        "mpiio.first_close=0s",
        "nodes[0].read_syscall=0s",
        // the memcpy rate (only with a page cache: a --set would create one)
        "nodes[0].cache.write_bw=1GB/s",
        "nodes[0].cache.read_bw=1GB/s",
        "nodes[0].cache.rewrite_bw=1GB/s",
    ];
    for cache in [false, true] {
        let off = &off[..if cache { 15 } else { 12 }];
        let a = run(&scenario(2, cache, &[]), 2, async |r| {
            io_program(r, Api::MpiIo, 3, 65536).await
        });
        let b = run(&scenario(2, cache, off), 2, async |r| {
            io_program(r, Api::MpiIo, 3, 65536).await
        });
        assert_eq!(bits(&a), bits(&b), "cache {cache}");
    }
    // A wake-up cost on a node that is not oversubscribed changes nothing either.
    let a = run(&scenario(2, false, &[]), 2, async |r| {
        r.barrier().await;
        r.sendrecv(1000, 1 - r.rank(), 1 - r.rank()).await;
        r.now().to_bits()
    });
    let b = run(
        &scenario(2, false, &["nodes[0].oversubscribed_wakeup=1ms"]),
        2,
        async |r| {
            r.barrier().await;
            r.sendrecv(1000, 1 - r.rank(), 1 - r.rank()).await;
            r.now().to_bits()
        },
    );
    assert_eq!(a, b);
}

/// Per-call costs add exactly their CPU time: open and close once per rank,
/// `independent_call` per independent call, `collective_call` per collective
/// call, `syscall` per file-system request (every call here is one request).
#[test]
fn per_call_costs_add_their_time() {
    let calls = 3;
    let base = run(&scenario(2, false, &[]), 2, async |r| {
        io_program(r, Api::MpiIo, calls, 65536).await
    });
    let (open, ind, coll, cls, sys) = (10e-6, 5e-6, 7e-6, 3e-6, 2e-6);
    let with = run(
        &scenario(
            2,
            false,
            &[
                "mpiio.open=10us",
                "mpiio.independent_call=5us",
                "mpiio.collective_call=7us",
                "mpiio.close=3us",
                "nodes[0].syscall=2us",
            ],
        ),
        2,
        async |r| io_program(r, Api::MpiIo, calls, 65536).await,
    );
    let n = calls as f64;
    for (b, w) in base.iter().zip(&with) {
        // Phases: open; 3 × (call + syscall + write); collective write (its
        // call cost, then one request per rank: the blocks do not interleave,
        // so ROMIO's rule does them independently); close.
        let d_open = w[0] - b[0];
        let d_ind = (w[1] - w[0]) - (b[1] - b[0]);
        let d_coll = (w[2] - w[1]) - (b[2] - b[1]);
        let d_close = (w[3] - w[2]) - (b[3] - b[2]);
        assert!(close(d_open, open), "open {d_open}");
        assert!(close(d_ind, n * (ind + sys)), "independent {d_ind}");
        assert!(close(d_coll, coll + sys), "collective {d_coll}");
        assert!(close(d_close, cls), "close {d_close}");
    }
}

/// A process's first MPI-IO open and close pay `first_open` and `first_close`
/// on top of `open` and `close`, its later ones not; a read request pays
/// `read_syscall`, a write `syscall`. By hand, per rank of two: open, one
/// write, close, open, two reads, close.
#[test]
fn first_opens_and_closes_and_read_calls_add_their_time() {
    let program = async |r: &Rank| {
        let mut t = vec![r.now()];
        for (access, calls) in [(Access::Write, 1), (Access::Read, 2)] {
            let mut f = r
                .open("/f", OpenMode::CreateReadWrite, true, Api::MpiIo)
                .await
                .unwrap();
            t.push(r.now());
            for i in 0..calls {
                let pos = Position::At((r.world_rank() as u64 * 2 + i) * 4096);
                let op = Op {
                    access,
                    coord: Coordination::Independent,
                    pos,
                };
                r.xfer(&mut f, op, 4096).await.unwrap();
            }
            t.push(r.now());
            r.close(f).await;
            t.push(r.now());
        }
        t
    };
    let base = run(&scenario(2, false, &[]), 2, program);
    let set = [
        "mpiio.open=10us",
        "mpiio.first_open=100us",
        "mpiio.close=3us",
        "mpiio.first_close=30us",
        "nodes[0].syscall=2us",
        "nodes[0].read_syscall=500ns",
    ];
    let with = run(&scenario(2, false, &set), 2, program);
    let want = [110e-6, 2e-6, 33e-6, 10e-6, 2.0 * 0.5e-6, 3e-6];
    for (b, w) in base.iter().zip(&with) {
        for (i, want) in want.iter().enumerate() {
            let d = (w[i + 1] - w[i]) - (b[i + 1] - b[i]);
            assert!(close(d, *want), "phase {i}: {d} against {want}");
        }
    }
}

/// POSIX calls pay the system call only, not the MPI-IO call costs.
#[test]
fn posix_calls_pay_the_syscall_only() {
    let set = [
        "mpiio.open=10us",
        "mpiio.independent_call=5us",
        "mpiio.close=3us",
        "nodes[0].syscall=2us",
    ];
    let base = run(&scenario(1, false, &[]), 1, async |r| {
        io_program(r, Api::Posix, 4, 4096).await
    });
    let with = run(&scenario(1, false, &set), 1, async |r| {
        io_program(r, Api::Posix, 4, 4096).await
    });
    assert_eq!(
        base[0][0].to_bits(),
        with[0][0].to_bits(),
        "no MPI-IO open cost"
    );
    assert!(
        close(with[0][3] - base[0][3], 4.0 * 2e-6),
        "{:?} {:?}",
        base,
        with
    );
}

/// A Fortran unit pays `nodes.fortran_statement` per statement on top of the system
/// call: 4 direct-access accesses of 4096 bytes with RECL=512 are 32 statements;
/// and a sequential unit puts each record behind its predecessor's markers.
#[test]
fn fortran_units_pay_per_statement_and_place_records_with_markers() {
    let set = ["nodes[0].syscall=2us", "nodes[0].fortran_statement=300ns"];
    let direct = Api::Fortran(FortranAccess::Direct { recl: 512 });
    let without = run(&scenario(1, false, &set[..1]), 1, async |r| {
        io_program(r, direct, 4, 4096).await
    });
    let with = run(&scenario(1, false, &set), 1, async |r| {
        io_program(r, direct, 4, 4096).await
    });
    assert!(
        close(with[0][1] - without[0][1], 32.0 * 300e-9),
        "{without:?} {with:?}"
    );
    let posix = run(&scenario(1, false, &set[..1]), 1, async |r| {
        io_program(r, Api::Posix, 4, 4096).await
    });
    assert_eq!(bits(&posix), bits(&without), "statements at 0 cost nothing");

    let sizes = run(&scenario(1, false, &set), 1, async |r| {
        let mut f = r
            .open(
                "/s",
                OpenMode::Create,
                false,
                Api::Fortran(FortranAccess::Sequential),
            )
            .await
            .unwrap();
        for (off, len) in [(0, 800), (800, 1600)] {
            let op = Op {
                access: Access::Write,
                coord: Coordination::Independent,
                pos: Position::At(off),
            };
            assert_eq!(r.xfer(&mut f, op, len).await.unwrap(), len);
        }
        let out_of_order = Op {
            access: Access::Write,
            coord: Coordination::Independent,
            pos: Position::At(0),
        };
        let err = r
            .xfer(&mut f, out_of_order, 8)
            .await
            .unwrap_err()
            .to_string();
        assert!(err.contains("begin at 2400, not 0"), "{err}");
        let size = r.file_size(&f).await;
        r.close(f).await;
        [size as f64, 0.0, 0.0, 0.0]
    });
    assert_eq!(
        sizes[0][0],
        800.0 + 1600.0 + 2.0 * 8.0,
        "contents and markers"
    );
}

/// Page-cache copies at the per-core rate: 1 MB at 100 MB/s is 10 ms for one
/// rank, and for each of two ranks on two cores (each has its own core);
/// without the key both share the node's 1 GB/s memory bus (2 ms each).
/// Cached reads at `read_bw` likewise.
#[test]
fn page_cache_copies_at_per_core_rates() {
    let prog = async |r: &Rank| {
        let mut f = r
            .open("/c", OpenMode::CreateReadWrite, false, Api::Posix)
            .await
            .unwrap();
        let t0 = r.now();
        let off = Position::At(r.world_rank() as u64 * 1_000_000);
        r.xfer(
            &mut f,
            Op {
                access: Access::Write,
                coord: Coordination::Independent,
                pos: off,
            },
            1_000_000,
        )
        .await
        .unwrap();
        let t1 = r.now();
        r.xfer(
            &mut f,
            Op {
                access: Access::Read,
                coord: Coordination::Independent,
                pos: off,
            },
            1_000_000,
        )
        .await
        .unwrap();
        (t1 - t0, r.now() - t1)
    };
    let shared = run(&scenario(2, true, &[]), 2, prog);
    for &(w, rd) in &shared {
        assert!(close(w, 2e-3) && close(rd, 2e-3), "{shared:?}");
    }
    let set = [
        "nodes[0].cache.write_bw=100MB/s",
        "nodes[0].cache.read_bw=250MB/s",
    ];
    let one = run(&scenario(2, true, &set), 1, prog);
    assert!(close(one[0].0, 10e-3) && close(one[0].1, 4e-3), "{one:?}");
    let two = run(&scenario(2, true, &set), 2, prog);
    for &(w, rd) in &two {
        assert!(close(w, 10e-3) && close(rd, 4e-3), "{two:?}");
    }
    // Two ranks on one core share it: 20 ms each to write, 8 ms each to read.
    let over = run(&scenario(1, true, &set), 2, prog);
    for &(w, rd) in &over {
        assert!(close(w, 20e-3) && close(rd, 8e-3), "{over:?}");
    }
    // The bus's rate for reads: two ranks on two cores read 1 MB at 800 MB/s
    // a core, the 1 GB/s bus shared (0.5 GB/s each: 2 ms); with
    // memory_read_bw = 2 GB/s a read into a buffer the 2 MB private cache
    // holds takes the bus at half a write's weight, so the cores bind
    // (1.25 ms). Writes keep the bus at 1 GB/s (2 ms each), and so does a
    // read into a buffer larger than the private cache.
    let reads = [
        "nodes[0].cache.read_bw=800MB/s",
        "nodes[0].compute.private_cache=2MB",
    ];
    let bus = run(&scenario(2, true, &reads), 2, prog);
    let fast = [&reads[..], &["nodes[0].memory_read_bw=2GB/s"]].concat();
    let fast = run(&scenario(2, true, &fast), 2, prog);
    for i in 0..2 {
        assert!(
            close(bus[i].1, 2e-3) && close(fast[i].1, 1.25e-3),
            "{bus:?} {fast:?}"
        );
        assert!(
            close(bus[i].0, 2e-3) && close(fast[i].0, 2e-3),
            "{bus:?} {fast:?}"
        );
    }
    let large = [
        "nodes[0].cache.read_bw=800MB/s",
        "nodes[0].compute.private_cache=512kB",
        "nodes[0].memory_read_bw=2GB/s",
    ];
    let large = run(&scenario(2, true, &large), 2, prog);
    let bits = |v: &[(f64, f64)]| {
        v.iter()
            .map(|p| (p.0.to_bits(), p.1.to_bits()))
            .collect::<Vec<_>>()
    };
    assert_eq!(
        bits(&large),
        bits(&bus),
        "a buffer beyond the private cache"
    );
    let same = [&reads[..], &["nodes[0].memory_read_bw=1GB/s"]].concat();
    let same = run(&scenario(2, true, &same), 2, prog);
    assert_eq!(bits(&same), bits(&bus), "memory_read_bw = memory_bw");
}

/// Writes into new page-cache pages at `memory_write_bw`: two ranks on two
/// cores each write 1 MB at 400 MB/s a core, then rewrite it. The 1 GB/s bus
/// carries their 0.8 GB/s (2.5 ms each). With memory_write_bw = 500 MB/s a
/// new byte takes the bus at twice a rewritten one's weight: the two writes
/// ask 1.6 GB/s of it and move at 250 MB/s each (4 ms); one rank alone stays
/// at its core's 400 MB/s (2.5 ms, under 500); rewrites keep the bus at
/// memory_bw (2.5 ms). memory_write_bw = memory_bw changes nothing, to the bit.
#[test]
fn writes_into_new_pages_share_the_node_at_memory_write_bw() {
    let prog = async |r: &Rank| {
        let mut f = r
            .open("/w", OpenMode::CreateReadWrite, false, Api::Posix)
            .await
            .unwrap();
        let op = Op {
            access: Access::Write,
            coord: Coordination::Independent,
            pos: Position::At(r.world_rank() as u64 * 1_000_000),
        };
        let t0 = r.now();
        r.xfer(&mut f, op, 1_000_000).await.unwrap();
        let t1 = r.now();
        r.xfer(&mut f, op, 1_000_000).await.unwrap();
        (t1 - t0, r.now() - t1)
    };
    let rates = [
        "nodes[0].cache.write_bw=400MB/s",
        "nodes[0].cache.rewrite_bw=400MB/s",
    ];
    let bus = run(&scenario(2, true, &rates), 2, prog);
    for &(w, rw) in &bus {
        assert!(close(w, 2.5e-3) && close(rw, 2.5e-3), "{bus:?}");
    }
    let apart = [&rates[..], &["nodes[0].memory_write_bw=500MB/s"]].concat();
    let two = run(&scenario(2, true, &apart), 2, prog);
    for &(w, rw) in &two {
        assert!(close(w, 4e-3) && close(rw, 2.5e-3), "{two:?}");
    }
    let one = run(&scenario(2, true, &apart), 1, prog);
    assert!(
        close(one[0].0, 2.5e-3) && close(one[0].1, 2.5e-3),
        "{one:?}"
    );
    let same = [&rates[..], &["nodes[0].memory_write_bw=1GB/s"]].concat();
    let same = run(&scenario(2, true, &same), 2, prog);
    let bits = |v: &[(f64, f64)]| {
        v.iter()
            .map(|p| (p.0.to_bits(), p.1.to_bits()))
            .collect::<Vec<_>>()
    };
    assert_eq!(bits(&same), bits(&bus), "memory_write_bw = memory_bw");
}

/// Two ranks on one core share it by processor sharing: rank 1's 0.5 s of
/// work and rank 0's 1 s run at half speed together until rank 1 is done at
/// 1 s; rank 0 then has the core alone and ends at 1.5 s. Per-call costs share
/// the core the same way.
#[test]
fn oversubscribed_ranks_share_the_cores() {
    let t = run(&scenario(1, false, &[]), 2, async |r| {
        let work = if r.rank() == 0 { 1e9 } else { 0.5e9 };
        r.compute(KernelKind::Flops, work).await;
        r.now()
    });
    assert!(close(t[0], 1.5) && close(t[1], 1.0), "{t:?}");
    // With a core each, each takes its own time.
    let t = run(&scenario(2, false, &[]), 2, async |r| {
        let work = if r.rank() == 0 { 1e9 } else { 0.5e9 };
        r.compute(KernelKind::Flops, work).await;
        r.now()
    });
    assert!(close(t[0], 1.0) && close(t[1], 0.5), "{t:?}");
    // Four ranks on two cores, each 100 POSIX system calls of 10 us (the
    // writes themselves overlap on the 64-channel SSD): 1 ms of CPU each at
    // half a core = 2 ms of calls, against 1 ms with a core each.
    let calls = async |r: &Rank| {
        let mut f = r
            .open(
                &format!("/p{}", r.rank()),
                OpenMode::Create,
                false,
                Api::Posix,
            )
            .await
            .unwrap();
        let t0 = r.now();
        for i in 0..100u64 {
            r.xfer(
                &mut f,
                Op {
                    access: Access::Write,
                    coord: Coordination::Independent,
                    pos: Position::At(i),
                },
                1,
            )
            .await
            .unwrap();
        }
        r.now() - t0
    };
    let set = ["nodes[0].syscall=10us"];
    let free = run(&scenario(2, false, &[]), 4, calls);
    let over = run(&scenario(2, false, &set), 4, calls);
    let own = run(&scenario(4, false, &set), 4, calls);
    for i in 0..4 {
        assert!(close(over[i] - free[i], 2e-3), "{over:?} {free:?}");
        assert!(close(own[i] - free[i], 1e-3), "{own:?} {free:?}");
    }
}

/// A message step to a rank on an oversubscribed node costs the wake-up:
/// a barrier of two ranks (one step) and a sendrecv each take 1 ms more.
#[test]
fn oversubscribed_wakeup_delays_messages() {
    let prog = async |r: &Rank| {
        let t0 = r.now();
        r.barrier().await;
        let t1 = r.now();
        r.sendrecv(0, 1 - r.rank(), 1 - r.rank()).await;
        (t1 - t0, r.now() - t1)
    };
    let base = run(&scenario(1, false, &[]), 2, prog);
    let wake = run(
        &scenario(1, false, &["nodes[0].oversubscribed_wakeup=1ms"]),
        2,
        prog,
    );
    for (b, w) in base.iter().zip(&wake) {
        assert!(close(w.0 - b.0, 1e-3), "barrier {b:?} {w:?}");
        assert!(close(w.1 - b.1, 1e-3), "sendrecv {b:?} {w:?}");
    }
}

/// An all-reduce's steps wait `allreduce_wake` of the wake-up, the barrier's
/// the whole of it: 4 ranks on 1 core with a 4 ms wake-up take 2 steps of
/// 4 ms in a barrier, and in an all-reduce of one value 2 steps of 1 ms at
/// 0.25 (the word's 8 bytes at 1 GB/s are 16 ns), 8 ms without the key.
#[test]
fn an_all_reduce_waits_its_part_of_the_wake_up() {
    let prog = async |r: &Rank| {
        let t0 = r.now();
        r.barrier().await;
        let t1 = r.now();
        let sum = r.allreduce_f64(r.rank() as f64, ReduceOp::Sum).await;
        assert_eq!(sum, 6.0);
        (t1 - t0, r.now() - t1)
    };
    let wake = "nodes[0].oversubscribed_wakeup=4ms";
    for (set, allreduce) in [
        (&[wake][..], 8e-3),
        (&[wake, "nodes[0].allreduce_wake=0.25"][..], 2e-3),
    ] {
        for t in run(&scenario(1, false, set), 4, prog) {
            assert!(close(t.0, 8e-3), "barrier {set:?}: {t:?}");
            assert!(close(t.1, allreduce + 16e-9), "all-reduce {set:?}: {t:?}");
        }
    }
}

/// Above `nodes.eager_limit` a message goes by rendezvous and waits for the
/// wake-up twice: 2 ranks on 1 core exchange 8 KiB (1 ms more than free
/// wake-ups) and 8 KiB + 1 (2 ms more); with no limit both pay 1 ms.
#[test]
fn a_rendezvous_message_wakes_its_receiver_twice() {
    let prog = async |r: &Rank| {
        let t0 = r.now();
        r.sendrecv(8192, 1 - r.rank(), 1 - r.rank()).await;
        let t1 = r.now();
        r.sendrecv(8193, 1 - r.rank(), 1 - r.rank()).await;
        (t1 - t0, r.now() - t1)
    };
    let base = run(&scenario(1, false, &[]), 2, prog);
    let wake = "nodes[0].oversubscribed_wakeup=1ms";
    for (set, above) in [
        (&[wake][..], 1e-3),
        (&[wake, "nodes[0].eager_limit=8KiB"][..], 2e-3),
    ] {
        let with = run(&scenario(1, false, set), 2, prog);
        for (b, w) in base.iter().zip(&with) {
            assert!(close(w.0 - b.0, 1e-3), "eager {set:?}: {b:?} {w:?}");
            assert!(close(w.1 - b.1, above), "rendezvous {set:?}: {b:?} {w:?}");
        }
    }
}

/// One independent write of `bytes` at the start of `f`.
async fn write_at_start(r: &Rank, f: &mut piotwin_sim::File, bytes: u64) {
    write_at(r, f, 0, bytes).await;
}

/// One independent write of `bytes` at `offset` of `f`.
async fn write_at(r: &Rank, f: &mut piotwin_sim::File, offset: u64, bytes: u64) {
    r.xfer(
        f,
        Op {
            access: Access::Write,
            coord: Coordination::Independent,
            pos: Position::At(offset),
        },
        bytes,
    )
    .await
    .unwrap();
}

/// `/f`, created by this rank alone through POSIX.
async fn open_posix(r: &Rank) -> piotwin_sim::File {
    r.open("/f", OpenMode::CreateReadWrite, false, Api::Posix)
        .await
        .unwrap()
}

/// Fresh memory: a POSIX writer's page cache grows at the copy rate while it
/// stays within `warm`, and pays bytes / `fresh_bw` for what it takes beyond;
/// rewriting cached bytes takes nothing fresh.
#[test]
fn page_cache_growth_beyond_warm_memory_pays_the_fresh_rate() {
    const MB: u64 = 1_000_000;
    let times = |set: &[&str]| -> [f64; 3] {
        let scn = scenario(1, true, set);
        run(&scn, 1, async |r: &Rank| {
            let mut f = open_posix(r).await;
            let t0 = r.now();
            write_at_start(r, &mut f, 2 * MB).await;
            let t1 = r.now();
            write_at_start(r, &mut f, 2 * MB).await;
            [t0, t1, r.now()]
        })[0]
    };
    let off = times(&[]);
    let on = times(&["nodes[0].cache.fresh_bw=100MB/s", "nodes[0].cache.warm=1MB"]);
    // 2 MB at the 1 GB/s copy either way; 1 MB beyond warm memory at 100 MB/s: +10 ms.
    assert!(close(off[1] - off[0], 2e-3), "{off:?}");
    assert!(close(on[1] - on[0], 2e-3 + 10e-3), "{on:?}");
    // The rewrite stays in memory the cache has backed.
    assert!(close(on[2] - on[1], off[2] - off[1]), "{on:?} {off:?}");
    // Absent keys and an infinite rate are the same model.
    let inf = times(&["nodes[0].cache.warm=1MB"]);
    assert_eq!(inf.map(f64::to_bits), off.map(f64::to_bits));
}

/// Huge pages: a write request of `huge_from` or more grows the cache in huge
/// pages, which the `warm` floor does not hold: by hand, warm 1 MB, fresh
/// 100 MB/s, copies at 1 GB/s. A 2 MB request takes all 2 MB fresh (2 + 20 ms;
/// without the key 1 MB of it is warm: 2 + 10 ms); a 0.5 MB request after it
/// finds the warm floor untouched (0.5 ms; without the key the floor is used
/// up: 0.5 + 5 ms).
#[test]
fn a_huge_write_request_takes_fresh_memory_past_the_warm_floor() {
    const MB: u64 = 1_000_000;
    let times = |set: &[&str]| -> [f64; 2] {
        let scn = scenario(1, true, set);
        run(&scn, 1, async |r: &Rank| {
            let mut f = open_posix(r).await;
            let t0 = r.now();
            write_at_start(r, &mut f, 2 * MB).await;
            let t1 = r.now();
            write_at(r, &mut f, 2 * MB, MB / 2).await;
            [t1 - t0, r.now() - t1]
        })[0]
    };
    let fresh = ["nodes[0].cache.fresh_bw=100MB/s", "nodes[0].cache.warm=1MB"];
    let off = times(&fresh);
    assert!(close(off[0], 2e-3 + 10e-3), "{off:?}");
    assert!(close(off[1], 0.5e-3 + 5e-3), "{off:?}");
    let on = times(&[&fresh[..], &["nodes[0].cache.huge_from=2MB"]].concat());
    assert!(close(on[0], 2e-3 + 20e-3), "{on:?}");
    assert!(close(on[1], 0.5e-3), "{on:?}");
    // Below the size the key changes nothing.
    let above = times(&[&fresh[..], &["nodes[0].cache.huge_from=3MB"]].concat());
    assert_eq!(above.map(f64::to_bits), off.map(f64::to_bits));
}

/// `fresh_stall = "core"`: growth into fresh memory holds the writer's core,
/// as a guest's vCPU waits in the hypervisor while the host backs the page.
/// By hand, one core, two polling ranks (each holds half of it), copies at
/// 1 GB/s (the bus at 10 GB/s, so the copy is the core's), warm 1 MB, fresh
/// 100 MB/s: rank 0 writes 2 MB to a file of its own while rank 1 computes.
/// The copy takes 4 ms at half the core; the 1 MB beyond warm memory takes
/// 10 ms at the host's rate, or, holding the core, 20 ms at half of it. With a
/// core each, holding it changes nothing: 2 + 10 ms.
#[test]
fn growth_into_fresh_memory_can_hold_the_writers_core() {
    const MB: u64 = 1_000_000;
    let write = |cores: usize, set: &[&str]| -> f64 {
        let base = [
            "nodes[0].waiting_ranks=poll",
            "nodes[0].memory_bw=10GB/s",
            "nodes[0].cache.fresh_bw=100MB/s",
            "nodes[0].cache.warm=1MB",
        ];
        let scn = scenario(cores, true, &[&base[..], set].concat());
        run(&scn, 2, async |r: &Rank| {
            if r.rank() == 1 {
                r.compute(KernelKind::Flops, 1e9).await;
                return 0.0;
            }
            let mut f = r
                .open("/f0", OpenMode::CreateReadWrite, false, Api::Posix)
                .await
                .unwrap();
            let t0 = r.now();
            write_at_start(r, &mut f, 2 * MB).await;
            r.now() - t0
        })[0]
    };
    let core = ["nodes[0].cache.fresh_stall=\"core\""];
    let off = write(1, &[]);
    assert!(close(off, 4e-3 + 10e-3), "{off}");
    let on = write(1, &core);
    assert!(close(on, 4e-3 + 20e-3), "{on}");
    let none = write(1, &["nodes[0].cache.fresh_stall=\"none\""]);
    assert_eq!(none.to_bits(), off.to_bits());
    let own = write(2, &core);
    assert!(close(own, 2e-3 + 10e-3), "{own}");
    assert_eq!(own.to_bits(), write(2, &[]).to_bits(), "a core each");
}

/// Released memory: a file's pages freed by its delete stay backed, beyond
/// `warm`, while the host takes them back linearly over `release_time`: a
/// second file whose pages land t after the delete finds 1 − t / release_time
/// of the freed excess still backed and pays `fresh_bw` for the rest.
#[test]
fn freed_page_cache_memory_is_released_over_release_time() {
    const MB: u64 = 1_000_000;
    let write = async |r: &Rank, path: &str| -> [f64; 2] {
        let mut f = r
            .open(path, OpenMode::CreateReadWrite, false, Api::Posix)
            .await
            .unwrap();
        let t0 = r.now();
        write_at_start(r, &mut f, 2 * MB).await;
        let t1 = r.now();
        r.close(f).await;
        [t0, t1]
    };
    // (first write's time, when the delete freed its pages, second write's start and end)
    let times = |set: &[&str]| -> [f64; 4] {
        let scn = scenario(1, true, set);
        run(&scn, 1, async |r: &Rank| {
            let [a0, a1] = write(r, "/f").await;
            let freed = r.now();
            r.delete("/f").await;
            r.sleep(freed + 0.5 - r.now()).await;
            let [b0, b1] = write(r, "/g").await;
            [a1 - a0, freed, b0, b1]
        })[0]
    };
    let fresh = ["nodes[0].cache.fresh_bw=100MB/s", "nodes[0].cache.warm=1MB"];
    let kept = times(&fresh);
    let released = times(&[&fresh[..], &["nodes[0].cache.release_time=1s"]].concat());
    // 2 MB at the 1 GB/s copy, the 1 MB beyond warm memory at 100 MB/s.
    assert!(close(kept[0], 2e-3 + 10e-3), "{kept:?}");
    assert_eq!(released[0].to_bits(), kept[0].to_bits());
    // Kept for ever: the second file reuses the first one's memory.
    assert!(close(kept[3] - kept[2], 2e-3), "{kept:?}");
    // The second file's pages land after its 2 ms copy; of the freed 1 MB,
    // 1 − t / 1 s is still backed then, the rest comes at 100 MB/s.
    let [_, freed, b0, b1] = released;
    let t = b0 + 2e-3 - freed;
    assert!(t > 0.5, "{released:?}");
    let fresh_bytes = 1e6 * t;
    // (within 10 bytes' worth: the call's own costs move the landing by microseconds)
    let expected = 2e-3 + fresh_bytes / 100e6;
    assert!((b1 - b0 - expected).abs() < 1e-7, "{released:?} {expected}");
}

/// Free memory: growth beyond the backed memory pays `fresh_bw` only while
/// the node's `free` memory lasts; beyond it the kernel reclaims backed
/// pages: 3 MB written with 1 MB warm and 1 MB free pay for 1 MB fresh.
#[test]
fn fresh_growth_stops_where_free_memory_ends() {
    const MB: u64 = 1_000_000;
    let time = |set: &[&str]| -> f64 {
        let scn = scenario(1, true, set);
        run(&scn, 1, async |r: &Rank| {
            let mut f = open_posix(r).await;
            let t0 = r.now();
            write_at_start(r, &mut f, 3 * MB).await;
            r.now() - t0
        })[0]
    };
    let fresh = ["nodes[0].cache.fresh_bw=100MB/s", "nodes[0].cache.warm=1MB"];
    // 3 MB at the 1 GB/s copy; 2 MB beyond warm memory at 100 MB/s, or 1 MB.
    assert!(close(time(&fresh), 3e-3 + 20e-3));
    let limited = time(&[&fresh[..], &["nodes[0].cache.free=1MB"]].concat());
    assert!(close(limited, 3e-3 + 10e-3), "{limited}");
}

/// Deleting a file costs `metadata.delete` plus its size over `delete_bw`.
#[test]
fn deleting_a_file_costs_its_size_over_delete_bw() {
    const MB: u64 = 1_000_000;
    let time = |set: &[&str]| -> f64 {
        let scn = scenario(1, true, set);
        run(&scn, 1, async |r: &Rank| {
            let mut f = open_posix(r).await;
            write_at_start(r, &mut f, 3 * MB).await;
            r.close(f).await;
            let t = r.now();
            r.delete("/f").await;
            r.now() - t
        })[0]
    };
    assert_eq!(time(&[]), 0.0);
    assert!(close(time(&["metadata.delete_bw=100MB/s"]), 30e-3));
    assert!(close(
        time(&["metadata.delete_bw=100MB/s", "metadata.delete=1ms"]),
        31e-3
    ));
}

/// Each of 4 ranks writes, then reads, 1 MB collectively through an interleaved
/// view (blocks of 500 kB, rank r's at (r + 4k)·500 kB), so ROMIO buffers
/// collectively with one aggregator (rank 0); returns (write, read) call times.
async fn interleaved_program(r: &Rank) -> (f64, f64) {
    use piotwin_types::{Datatype, View};
    const BLOCK: u64 = 500_000;
    let view = View {
        disp: r.rank() as u64 * BLOCK,
        etype: Datatype::Byte,
        filetype: Datatype::Resized {
            lb: 0,
            extent: 4 * BLOCK,
            inner: Box::new(Datatype::Contiguous {
                count: BLOCK,
                inner: Box::new(Datatype::Byte),
            }),
        },
    };
    collective_write_then_read(r, Some(&view), 0, 2 * BLOCK).await
}

/// Opens `/f` for MPI-IO on every rank (through `view` where given), then
/// writes and reads `len` bytes at `offset` collectively, each call after a
/// barrier; returns the (write, read) call times.
async fn collective_write_then_read(
    r: &Rank,
    view: Option<&piotwin_types::View>,
    offset: u64,
    len: u64,
) -> (f64, f64) {
    let mut f = r
        .open("/f", OpenMode::CreateReadWrite, true, Api::MpiIo)
        .await
        .unwrap();
    if let Some(v) = view {
        r.set_view(&mut f, v).await.unwrap();
    }
    let mut times = [0.0; 2];
    for (i, access) in [Access::Write, Access::Read].into_iter().enumerate() {
        r.barrier().await;
        let t0 = r.now();
        let op = Op {
            access,
            coord: Coordination::Collective,
            pos: Position::At(offset),
        };
        r.xfer(&mut f, op, len).await.unwrap();
        times[i] = r.now() - t0;
    }
    r.close(f).await;
    (times[0], times[1])
}

/// Two-phase exchange on an oversubscribed node (4 ranks, 2 cores): the three
/// other ranks' 1 MB each reach the one aggregator through the node's unpack
/// rate (writes) and leave it through the pack rate (reads). At 1 MB/s and
/// 2 MB/s the 3 MB take 3 s and 1.5 s, in place of the exchange over the 1 GB/s
/// memory bus: the four 1 MB pieces (the aggregator's own, copied, too) sharing
/// it, 4 ms; nothing else changes. On a node with a core per rank the keys
/// change no bit.
#[test]
fn oversubscribed_exchange_moves_at_the_datatype_rates() {
    let set = [
        "nodes[0].oversubscribed_unpack_bw=1MB/s",
        "nodes[0].oversubscribed_pack_bw=2MB/s",
    ];
    let free = run(&scenario(2, false, &[]), 4, interleaved_program);
    let slow = run(&scenario(2, false, &set), 4, interleaved_program);
    let bus = 4e6 / 1e9;
    for (f, s) in free.iter().zip(&slow) {
        assert!(close(s.0 - f.0, 3.0 - bus), "write {f:?} {s:?}");
        assert!(close(s.1 - f.1, 1.5 - bus), "read {f:?} {s:?}");
    }
    let bits = |v: Vec<(f64, f64)>| -> Vec<(u64, u64)> {
        v.iter().map(|t| (t.0.to_bits(), t.1.to_bits())).collect()
    };
    assert_eq!(
        bits(run(&scenario(4, false, &[]), 4, interleaved_program)),
        bits(run(&scenario(4, false, &set), 4, interleaved_program))
    );
}

/// A collective data call's synchronisation, each message step the wake-up
/// (1 ms) on 4 ranks of 2 cores. Without `mpiio.offsets_steps`, the generic
/// cost: the offsets' exchange (ceil(log2 4) = 2 steps) and a closing barrier
/// (2 more): 4 ms for a call whose ranks do not interleave, write or read.
/// With it (1.5 steps) as ROMIO: such a call goes independent after the
/// exchange and returns, 1.5 ms; a two-phase write still ends with the error
/// codes' collective (2 steps) and a two-phase read does not, so, the
/// exchanges' steps alike, the write's wake-ups exceed the read's by 2 ms,
/// where without the key they match.
#[test]
fn collective_calls_synchronise_as_romio_with_offsets_steps() {
    // each rank 1000 bytes of its own: no interleaving
    let contiguous =
        async |r: &Rank| collective_write_then_read(r, None, r.rank() as u64 * 1000, 1000).await;
    let wake = "nodes[0].oversubscribed_wakeup=1ms";
    let romio = "mpiio.offsets_steps=1.5";
    let free = run(&scenario(2, false, &[]), 4, contiguous);
    for (set, steps) in [(vec![wake], 4e-3), (vec![wake, romio], 1.5e-3)] {
        let woken = run(&scenario(2, false, &set), 4, contiguous);
        for (f, w) in free.iter().zip(&woken) {
            assert!(close(w.0 - f.0, steps), "write {set:?}: {f:?} {w:?}");
            assert!(close(w.1 - f.1, steps), "read {set:?}: {f:?} {w:?}");
        }
    }
    for (keys, closing) in [(vec![], 0.0), (vec![romio], 2e-3)] {
        let free = run(&scenario(2, false, &keys), 4, interleaved_program);
        let woken = run(
            &scenario(2, false, &[&keys[..], &[wake]].concat()),
            4,
            interleaved_program,
        );
        for (f, w) in free.iter().zip(&woken) {
            assert!(
                close((w.0 - f.0) - (w.1 - f.1), closing),
                "{keys:?}: {f:?} {w:?}"
            );
        }
    }
}

/// `mpiio.open_steps`: a collective open makes that many more message steps
/// of its communicator, each the wake-up (1 ms) on an oversubscribed node: 3
/// steps add 3 ms to every rank's open of 4 ranks on 2 cores; on a node with a
/// core per rank a step costs the latency (0 here), so nothing changes.
#[test]
fn open_steps_add_message_steps_to_a_collective_open() {
    let open_time = |cores: usize, set: &[&str]| {
        let mut all = vec!["nodes[0].oversubscribed_wakeup=1ms"];
        all.extend_from_slice(set);
        run(&scenario(cores, false, &all), 4, async |r: &Rank| {
            let t0 = r.now();
            let f = r
                .open("/f", OpenMode::CreateReadWrite, true, Api::MpiIo)
                .await
                .unwrap();
            let t = r.now() - t0;
            r.close(f).await;
            t
        })
    };
    let (base, more) = (open_time(2, &[]), open_time(2, &["mpiio.open_steps=3"]));
    for (b, m) in base.iter().zip(&more) {
        assert!(close(m - b, 3e-3), "{b} {m}");
    }
    let bits = |v: Vec<f64>| v.into_iter().map(f64::to_bits).collect::<Vec<_>>();
    assert_eq!(
        bits(open_time(4, &[])),
        bits(open_time(4, &["mpiio.open_steps=3"]))
    );
}

/// Filling and checking a data pattern run at their own rates: 1 MB filled at
/// 100 MB/s takes 10 ms, checked at 250 MB/s 4 ms; without `pattern_check` a
/// check goes at the fill rate (10 ms).
#[test]
fn pattern_checks_run_at_their_own_rate() {
    let prog = async |r: &Rank| {
        r.compute(KernelKind::Pattern, 1e6).await;
        let filled = r.now();
        r.compute(KernelKind::PatternCheck, 1e6).await;
        (filled, r.now() - filled)
    };
    let both = [
        "nodes[0].compute.pattern=100MB/s",
        "nodes[0].compute.pattern_check=250MB/s",
    ];
    let t = run(&scenario(1, false, &both), 1, prog);
    assert!(close(t[0].0, 10e-3) && close(t[0].1, 4e-3), "{t:?}");
    let t = run(&scenario(1, false, &both[..1]), 1, prog);
    assert!(close(t[0].0, 10e-3) && close(t[0].1, 10e-3), "{t:?}");
}

/// BTIO's error norm runs at `error_norm`, kept at `error_norm_all_cores`
/// with every core busy: 1 MB at 50 MB/s is 20 ms on 1 rank of 1 core; on
/// 2 ranks of 2 cores at 0.8 kept, 25 ms. Without the key it is a pattern
/// check (1 MB at 250 MB/s: 4 ms).
#[test]
fn the_error_norm_runs_at_its_own_rate_else_as_a_pattern_check() {
    let prog = async |r: &Rank| {
        r.compute(KernelKind::ErrorNorm, 1e6).await;
        r.now()
    };
    let check = "nodes[0].compute.pattern_check=250MB/s";
    let norm = [
        "nodes[0].compute.error_norm=50MB/s",
        "nodes[0].compute.error_norm_all_cores=0.8",
    ];
    let t = run(&scenario(1, false, &[check]), 1, prog);
    assert!(close(t[0], 4e-3), "{t:?}");
    let t = run(&scenario(1, false, &[check, norm[0], norm[1]]), 1, prog);
    assert!(close(t[0], 20e-3), "{t:?}");
    for t in run(&scenario(2, false, &[check, norm[0], norm[1]]), 2, prog) {
        assert!(close(t, 25e-3), "{t:?}");
    }
}

/// IOR's data pattern is kept at `pattern_all_cores` with every core busy:
/// 2 MB at 100 MB/s is 20 ms on 1 rank of 2 cores (no core beyond the
/// first); on 2 ranks of 2 cores at 0.8 kept, 25 ms, and so in the private
/// cache (1 MB at 400 MB/s: 2.5 ms, 3.125 ms kept at 0.8). Without the key,
/// 20 and 2.5 ms on 2 ranks too.
#[test]
fn the_pattern_fill_is_kept_at_its_part_with_every_core_busy() {
    let prog = async |r: &Rank| {
        let t0 = r.now();
        r.compute(KernelKind::Pattern, 2e6).await;
        let t1 = r.now();
        r.compute(KernelKind::Pattern, 1e6).await;
        (t1 - t0, r.now() - t1)
    };
    let rates = [
        "nodes[0].compute.pattern=100MB/s",
        "nodes[0].compute.private_cache=1MB",
        "nodes[0].compute.pattern_cached=400MB/s",
    ];
    let kept = "nodes[0].compute.pattern_all_cores=0.8";
    let with_kept = [rates[0], rates[1], rates[2], kept];
    let t = run(&scenario(2, false, &with_kept), 1, prog);
    assert!(close(t[0].0, 20e-3) && close(t[0].1, 2.5e-3), "{t:?}");
    for t in run(&scenario(2, false, &with_kept), 2, prog) {
        assert!(close(t.0, 25e-3) && close(t.1, 3.125e-3), "{t:?}");
    }
    for t in run(&scenario(2, false, &rates), 2, prog) {
        assert!(close(t.0, 20e-3) && close(t.1, 2.5e-3), "{t:?}");
    }
}

/// A pattern over a buffer within the core's private cache runs at the cached
/// rates: with a 1 MB private cache, 1 MB filled at 400 MB/s takes 2.5 ms and
/// checked at 1 GB/s 1 ms; 2 MB is past it: 20 ms and 8 ms at the plain rates.
#[test]
fn patterns_within_the_private_cache_run_at_the_cached_rates() {
    let prog = async |r: &Rank| {
        let mut t = Vec::new();
        for bytes in [1e6, 2e6] {
            let t0 = r.now();
            r.compute(KernelKind::Pattern, bytes).await;
            let t1 = r.now();
            r.compute(KernelKind::PatternCheck, bytes).await;
            t.push((t1 - t0, r.now() - t1));
        }
        t
    };
    let set = [
        "nodes[0].compute.pattern=100MB/s",
        "nodes[0].compute.pattern_check=250MB/s",
        "nodes[0].compute.private_cache=1MB",
        "nodes[0].compute.pattern_cached=400MB/s",
        "nodes[0].compute.pattern_check_cached=1GB/s",
    ];
    let t = run(&scenario(1, false, &set), 1, prog);
    let want = [(2.5e-3, 1e-3), (20e-3, 8e-3)];
    for (got, want) in t[0].iter().zip(want) {
        assert!(close(got.0, want.0) && close(got.1, want.1), "{t:?}");
    }
    // Without `private_cache` the cached rates are not used.
    let t = run(
        &scenario(1, false, &[set[0], set[1], set[3], set[4]]),
        1,
        prog,
    );
    assert!(close(t[0][0].0, 10e-3) && close(t[0][0].1, 4e-3), "{t:?}");
}

/// Four ranks on two cores, ranks 0 and 1 splitting off to compute 1 s of work
/// each and meet in their own barrier while ranks 2 and 3 wait in the world's.
/// Idle waiting ranks leave them a core each: 1 s; every step on the node
/// wakes a rank (10 ms each, 1 step of the 2-rank barrier): 1.01 s. Polling
/// waiting ranks keep their share, so 0 and 1 get half a core: 2 s, and their
/// 2-rank barrier wakes no one (2 ranks of the communicator on 2 cores): 2 s.
/// The world barrier after it (4 ranks on 2 cores: 2 steps of 10 ms) costs
/// 20 ms either way.
#[test]
fn polling_ranks_keep_their_share_and_wake_only_crowded_communicators() {
    let prog = async |r: &Rank| {
        let sub = r.split(Some(usize::from(r.rank() >= 2)), 0).await.unwrap();
        let t0 = r.now();
        if r.rank() < 2 {
            sub.compute(KernelKind::Flops, 1e9).await;
            sub.barrier().await;
        }
        let done = r.now() - t0;
        r.barrier().await;
        (done, r.now() - t0 - done)
    };
    let wake = "nodes[0].oversubscribed_wakeup=10ms";
    let idle = run(&scenario(2, false, &[wake]), 4, prog);
    let poll = run(
        &scenario(2, false, &[wake, "nodes[0].waiting_ranks=poll"]),
        4,
        prog,
    );
    for r in 0..2 {
        assert!(close(idle[r].0, 1.01), "{idle:?}");
        assert!(close(poll[r].0, 2.0), "{poll:?}");
    }
    assert!(close(idle[0].1 + idle[0].0, 1.01 + 20e-3), "{idle:?}");
    assert!(close(poll[0].1 + poll[0].0, 2.0 + 20e-3), "{poll:?}");
}

/// Four ranks on two cores polling, wake-up 10 ms: the world barrier's 2
/// steps end at 20 ms. With `release_stagger` 4 ms ranks 0 and 1 leave at
/// 16 ms, ranks 2 and 3 at 20 ms. Each then computes 1 s of work on half a
/// core (2 s): the span from the first out to the last done is 2.004 s, not
/// 2 s, and the next barrier (its last arrival at 2.020 s) ends at 2.040 s
/// for ranks 2 and 3 and 2.036 s for 0 and 1. A split into pairs (2 ranks of
/// the communicator on 2 cores) releases both together; so does every
/// barrier without the key, or with ranks waiting idle.
#[test]
fn polling_ranks_beyond_the_cores_leave_a_crowded_collective_later() {
    let prog = async |r: &Rank| {
        r.barrier().await;
        let out = r.now();
        r.compute(KernelKind::Flops, 1e9).await;
        let done = r.now();
        r.barrier().await;
        let next = r.now();
        let sub = r.split(Some(r.rank() / 2), 0).await.unwrap();
        let t = r.now();
        sub.barrier().await;
        (out, done, next, r.now() - t)
    };
    let wake = "nodes[0].oversubscribed_wakeup=10ms";
    let stagger = "nodes[0].release_stagger=4ms";
    let t = run(
        &scenario(2, false, &[wake, "nodes[0].waiting_ranks=poll", stagger]),
        4,
        prog,
    );
    for (r, &(out, done, next, pair)) in t.iter().enumerate() {
        let early = if r < 2 { 4e-3 } else { 0.0 };
        assert!(close(out, 20e-3 - early), "rank {r}: {t:?}");
        assert!(close(done, 2.020 - early), "rank {r}: {t:?}");
        assert!(close(next, 2.040 - early), "rank {r}: {t:?}");
        assert!(close(pair, 0.0), "rank {r}: {t:?}");
    }
    let span =
        t.iter().map(|x| x.1).fold(0.0, f64::max) - t.iter().map(|x| x.0).fold(1.0, f64::min);
    assert!(close(span, 2.004), "{t:?}");
    for set in [
        vec![wake, "nodes[0].waiting_ranks=poll"],
        vec![wake, stagger],
    ] {
        let t = run(&scenario(2, false, &set), 4, prog);
        assert!(t.iter().all(|x| close(x.0, 20e-3)), "{set:?}: {t:?}");
    }
}

/// `MPI_Sendrecv_replace` packs its message into a temporary buffer: from
/// `nodes.mmap_from` on, a freshly mapped one each call, filled at
/// `compute.first_touch` on the rank's core. 2 ranks exchange 4 MB with
/// mmap_from 2 MB and first_touch 100 MB/s: 40 ms more than a sendrecv with a
/// core each, 80 ms with one core for both; 1 MB costs nothing more; the
/// rate alone, or the threshold alone, changes nothing.
#[test]
fn a_large_sendrecv_replace_fills_a_freshly_mapped_buffer() {
    let prog = async |r: &Rank| {
        let peer = 1 - r.rank();
        let t0 = r.now();
        r.sendrecv(4_000_000, peer, peer).await;
        let t1 = r.now();
        r.sendrecv_replace(4_000_000, peer, peer).await;
        let t2 = r.now();
        r.sendrecv_replace(1_000_000, peer, peer).await;
        let t3 = r.now();
        r.sendrecv(1_000_000, peer, peer).await;
        (t1 - t0, t2 - t1, t3 - t2, r.now() - t3)
    };
    let on = [
        "nodes[0].mmap_from=2MB",
        "nodes[0].compute.first_touch=100MB/s",
    ];
    for (cores, fill) in [(2, 0.04), (1, 0.08)] {
        for (e, x) in run(&scenario(cores, false, &on), 2, prog).iter().zip(run(
            &scenario(cores, false, &[]),
            2,
            prog,
        )) {
            assert!(close(e.1 - e.0, fill), "{cores} cores: {e:?}");
            assert!(close(e.2, e.3), "{cores} cores: {e:?}");
            assert!(
                close(x.0, x.1) && close(x.2, x.3),
                "{cores} cores, off: {x:?}"
            );
        }
        for half in [&on[..1], &on[1..]] {
            let a = run(&scenario(cores, false, half), 2, prog);
            let b = run(&scenario(cores, false, &[]), 2, prog);
            let bits = |v: &Vec<(f64, f64, f64, f64)>| {
                v.iter()
                    .map(|t| [t.0, t.1, t.2, t.3].map(f64::to_bits))
                    .collect::<Vec<_>>()
            };
            assert_eq!(bits(&a), bits(&b), "{half:?}");
        }
    }
}

/// The inode lock (`filesystem.write_lock = "inode"`): a node's buffered
/// writes to one file copy one at a time. By hand, page-cache writes at
/// 100 MB/s per core, two ranks on two cores each writing 1 MB, both at once:
/// into one file the first is done at 10 ms and the second, which waited for
/// it, at 20 ms; without the lock both at 10 ms; into a file each, 10 ms with
/// the lock too. Fresh pages are taken under the lock: with warm 0 and
/// fresh memory at 100 MB/s each write also takes 1 MB fresh (10 ms alone),
/// so one file gives 20 and 40 ms; without the lock the two copies run
/// together (10 ms) and then share the node's fresh rate (20 ms): 30 ms each.
#[test]
fn writers_of_one_file_take_its_inode_lock_in_turn() {
    let times = |set: &[&str], one_file: bool| -> Vec<f64> {
        let mut set = set.to_vec();
        set.push("nodes[0].cache.write_bw=100MB/s");
        let mut t = run(&scenario(2, true, &set), 2, async |r: &Rank| {
            let path = if one_file {
                "/c".to_string()
            } else {
                format!("/c{}", r.world_rank())
            };
            let mut f = r
                .open(&path, OpenMode::CreateReadWrite, false, Api::Posix)
                .await
                .unwrap();
            let t0 = r.now();
            write_at(r, &mut f, r.world_rank() as u64 * 1_000_000, 1_000_000).await;
            r.now() - t0
        });
        t.sort_by(f64::total_cmp);
        t
    };
    let lock = ["filesystem.write_lock=\"inode\""];
    let shared = times(&lock, true);
    assert!(
        close(shared[0], 10e-3) && close(shared[1], 20e-3),
        "{shared:?}"
    );
    let unlocked = times(&[], true);
    assert!(unlocked.iter().all(|&t| close(t, 10e-3)), "{unlocked:?}");
    let separate = times(&lock, false);
    assert!(separate.iter().all(|&t| close(t, 10e-3)), "{separate:?}");
    let fresh = ["nodes[0].cache.warm=0B", "nodes[0].cache.fresh_bw=100MB/s"];
    let fresh_locked = times(&[&fresh[..], &lock[..]].concat(), true);
    assert!(
        close(fresh_locked[0], 20e-3) && close(fresh_locked[1], 40e-3),
        "{fresh_locked:?}"
    );
    let fresh_unlocked = times(&fresh, true);
    assert!(
        fresh_unlocked.iter().all(|&t| close(t, 30e-3)),
        "{fresh_unlocked:?}"
    );
    // "none" is the default.
    let none = times(&["filesystem.write_lock=\"none\""], true);
    assert_eq!(
        none.iter().map(|t| t.to_bits()).collect::<Vec<_>>(),
        unlocked.iter().map(|t| t.to_bits()).collect::<Vec<_>>()
    );
    // `write_lock_span`: with a 5 ms system call per write, the lock over the
    // copy alone lets both calls run at once (5 ms), then the copies in turn:
    // 15 and 25 ms; over the whole call the second waits for the first's call
    // and copy: 15 and 30 ms. Writers of a file each: 15 ms either way.
    let call = ["nodes[0].syscall=5ms"];
    let copy_span = times(&[&call[..], &lock[..]].concat(), true);
    assert!(
        close(copy_span[0], 15e-3) && close(copy_span[1], 25e-3),
        "{copy_span:?}"
    );
    let span = ["filesystem.write_lock_span=\"call\""];
    let call_span = times(&[&call[..], &lock[..], &span[..]].concat(), true);
    assert!(
        close(call_span[0], 15e-3) && close(call_span[1], 30e-3),
        "{call_span:?}"
    );
    let separate = times(&[&call[..], &lock[..], &span[..]].concat(), false);
    assert!(separate.iter().all(|&t| close(t, 15e-3)), "{separate:?}");
    // "copy" is the default.
    let copy = times(
        &[
            &call[..],
            &lock[..],
            &["filesystem.write_lock_span=\"copy\""],
        ]
        .concat(),
        true,
    );
    assert_eq!(
        copy.iter().map(|t| t.to_bits()).collect::<Vec<_>>(),
        copy_span.iter().map(|t| t.to_bits()).collect::<Vec<_>>()
    );
}
