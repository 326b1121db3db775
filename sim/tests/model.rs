//! The storage model pinned to hand-computable truths (each test's comment
//! gives the system and the arithmetic, as SimGrid's max–min tests do).

mod common;

use common::run;

use piotwin_sim::{Rank, Scenario};
use piotwin_types::{Access, Api, Coordination, Op, OpenMode, Position};

/// 1 GB/s memcpy, links and NICs at 1 TB/s, zero latencies and metadata costs,
/// `servers` servers each with an SSD of 100 MB/s (read and write), 0 latency.
/// `set` overrides anything (`--set` syntax).
fn scenario(nodes: usize, servers: usize, set: &[&str]) -> Scenario {
    with_device(nodes, servers, SSD, set)
}

const SSD: &str = "read_bw = \"100MB/s\"\nwrite_bw = \"100MB/s\"\nread_latency = \"0s\"\nwrite_latency = \"0s\"\nchannels = 64";

/// [`scenario`] with `device` as the body of `[server.device]`.
fn with_device(nodes: usize, servers: usize, device: &str, set: &[&str]) -> Scenario {
    let text = format!(
        r#"name = "model"
seed = 1
[[nodes]]
name = "n"
count = {nodes}
cores = 1
memory = "1GiB"
nic_bw = "1TB/s"
nic_latency = "0s"
[nodes.compute]
memcpy = "1GB/s"
fft = "1Gflop/s"
bt = "1Gflop/s"
flops = "1Gflop/s"
[network]
bandwidth = "1TB/s"
latency = "0s"
[server]
count = {servers}
nic_bw = "1TB/s"
[server.device]
{device}
[filesystem]
kind = "{kind}"
stripe_size = "1MB"
stripe_count = {servers}
[metadata]
open = "0s"
create = "0s"
close = "0s"
delete = "0s"
sync = "0s"
[mpiio]
shared_pointer = "0s"
"#,
        kind = if servers > 1 { "parallel" } else { "local" }
    );
    let set: Vec<String> = set.iter().map(|s| s.to_string()).collect();
    Scenario::from_str_with(&text, "model.toml", &set).unwrap()
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-9 * a.abs().max(b.abs()).max(1e-3)
}

/// Each rank writes (or reads) `len` bytes at `off` of its own file (`per_rank`)
/// or of one shared file; returns the seconds it took.
async fn xfer(r: &Rank, path: &str, access: Access, off: u64, len: u64) -> f64 {
    let mut f = r
        .open(path, OpenMode::CreateReadWrite, false, Api::Posix)
        .await
        .unwrap();
    let t0 = r.now();
    r.xfer(
        &mut f,
        Op {
            access: access,
            coord: Coordination::Independent,
            pos: Position::At(off),
        },
        len,
    )
    .await
    .unwrap();
    let t = r.now() - t0;
    r.close(f).await;
    t
}

/// One stream alone reaches the device: 100 MB at 100 MB/s = 1 s.
#[test]
fn one_stream_reaches_device_bandwidth() {
    let t = run(&scenario(1, 1, &[]), 1, async |r| {
        xfer(r, "/a", Access::Write, 0, 100_000_000).await
    });
    assert!(close(t[0], 1.0), "{t:?}");
}

/// Two streams on one link split it: server NIC 100 MB/s, device 1 TB/s;
/// two nodes write 50 MB each: 50 MB/s each, both end at 1 s.
#[test]
fn two_streams_on_one_link_split_it() {
    let scn = scenario(
        2,
        1,
        &["server.nic_bw=100MB/s", "server.device.write_bw=1TB/s"],
    );
    let t = run(&scn, 2, async |r| {
        xfer(r, &format!("/f{}", r.rank()), Access::Write, 0, 50_000_000).await
    });
    assert!(close(t[0], 1.0) && close(t[1], 1.0), "{t:?}");
}

/// A switch backplane shares itself among the flows crossing it only where
/// it is below what its ports can send into it; above that it never limits a
/// flow (and the twin leaves it out of the flows' paths). Two nodes with
/// 100 MB/s NICs write 100 MB each to their own file on a server with a
/// 1 TB/s NIC and device: a 100 MB/s backplane gives each 50 MB/s (2 s); one
/// of 10 GB/s (below the 1 TB/s the server's port could send: kept in the
/// paths, not the bottleneck) or of 2 TB/s (above all its ports together:
/// left out) gives each its NIC's 100 MB/s (1 s).
#[test]
fn a_backplane_limits_flows_only_below_what_its_ports_send() {
    for (backplane, want) in [("100MB/s", 2.0), ("10GB/s", 1.0), ("2TB/s", 1.0)] {
        let scn = scenario(
            2,
            1,
            &[
                "nodes[0].nic_bw=100MB/s",
                "server.device.write_bw=1TB/s",
                &format!("network.bandwidth={backplane}"),
            ],
        );
        let t = run(&scn, 2, async |r| {
            xfer(r, &format!("/f{}", r.rank()), Access::Write, 0, 100_000_000).await
        });
        assert!(close(t[0], want) && close(t[1], want), "{backplane}: {t:?}");
    }
}

/// Page cache of 1 GiB, dirty_ratio 0.2, background 0.1 (107 MB): 100 MB of
/// writes stay dirty and cost a memcpy, 100 MB / 1 GB/s = 0.1 s; `sync` then
/// writes them to the device, 100 MB / 100 MB/s = 1 s; re-reading costs a memcpy again, 0.1 s.
#[test]
fn page_cache_writes_at_memory_speed_until_sync_and_rereads_from_memory() {
    let scn = scenario(
        1,
        1,
        &[
            "nodes[0].cache.dirty_ratio=0.2",
            "nodes[0].cache.dirty_background_ratio=0.1",
        ],
    );
    let t = run(&scn, 1, async |r| {
        let mut f = r
            .open("/c", OpenMode::CreateReadWrite, false, Api::Posix)
            .await
            .unwrap();
        let t0 = r.now();
        r.xfer(
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
        let t1 = r.now();
        r.sync(&mut f).await;
        let t2 = r.now();
        r.xfer(
            &mut f,
            Op {
                access: Access::Read,
                coord: Coordination::Independent,
                pos: Position::At(0),
            },
            100_000_000,
        )
        .await
        .unwrap();
        let t3 = r.now();
        vec![t1 - t0, t2 - t1, t3 - t2]
    });
    let t = &t[0];
    assert!(
        close(t[0], 0.1) && close(t[1], 1.0) && close(t[2], 0.1),
        "{t:?}"
    );
}

/// A file striped over k servers (1 MB stripes, 100 MB/s devices): 400 MB takes
/// 4 s on one server, 1 s on four. With the client NIC at 200 MB/s the network
/// saturates first: 400 MB / 200 MB/s = 2 s.
#[test]
fn striping_scales_until_the_network_saturates() {
    let one = run(
        &scenario(1, 4, &["filesystem.stripe_count=1"]),
        1,
        async |r| xfer(r, "/s", Access::Write, 0, 400_000_000).await,
    );
    let four = run(&scenario(1, 4, &[]), 1, async |r| {
        xfer(r, "/s", Access::Write, 0, 400_000_000).await
    });
    let capped = run(
        &scenario(1, 4, &["nodes[0].nic_bw=200MB/s"]),
        1,
        async |r| xfer(r, "/s", Access::Write, 0, 400_000_000).await,
    );
    assert!(
        close(one[0], 4.0) && close(four[0], 1.0) && close(capped[0], 2.0),
        "{one:?} {four:?} {capped:?}"
    );
}

const HDD: &str = "kind = \"hdd\"\ncapacity = \"100GB\"\nrpm = 7200\nseek_track = \"1ms\"\nseek_full = \"10ms\"\ntransfer_rate = \"100MB/s\"\nqueue = \"fifo\"";

/// Random 4 KB reads on an HDD are seek-bound: each pays at least a track seek
/// (1 ms) plus half a revolution at 7200 rpm (4.1667 ms) on top of 40.96 µs of
/// transfer; 100 sequential 4 KB reads cost 100 · 40.96 µs = 4.096 ms in all.
#[test]
fn random_small_hdd_requests_are_seek_bound() {
    let scn = with_device(1, 1, HDD, &[]);
    let t = run(&scn, 1, async |r| {
        let mut f = r
            .open("/h", OpenMode::CreateReadWrite, false, Api::Posix)
            .await
            .unwrap();
        r.xfer(
            &mut f,
            Op {
                access: Access::Write,
                coord: Coordination::Independent,
                pos: Position::At(0),
            },
            10_000_000_000,
        )
        .await
        .unwrap();
        let t0 = r.now();
        for i in 0..100u64 {
            r.xfer(
                &mut f,
                Op {
                    access: Access::Read,
                    coord: Coordination::Independent,
                    pos: Position::At(i * 4096),
                },
                4096,
            )
            .await
            .unwrap();
        }
        let seq = r.now() - t0;
        let mut x: u64 = 12345;
        let t1 = r.now();
        for _ in 0..100 {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let off = (x >> 20) % 2_000_000 * 4096;
            r.xfer(
                &mut f,
                Op {
                    access: Access::Read,
                    coord: Coordination::Independent,
                    pos: Position::At(off),
                },
                4096,
            )
            .await
            .unwrap();
        }
        (seq, r.now() - t1)
    });
    let (seq, rand) = t[0];
    // The first sequential read seeks back from the end of the 10 GB write.
    let first = 1e-3 + 9e-3 * (0.1f64).sqrt() + 30.0 / 7200.0;
    assert!(close(seq, first + 100.0 * 4096.0 / 100e6), "{seq}");
    assert!(
        rand >= 100.0 * (1e-3 + 30.0 / 7200.0 + 4096.0 / 100e6),
        "{rand}"
    );
}

/// RAID over 5 SSDs (1 ms per request, 100 MB/s), stripe unit 64 KB. A 4 KB
/// write on RAID 0 costs 1 ms + 40.96 µs. On RAID 5 it is a read-modify-write:
/// read old data and parity (1 ms), write both (1 ms), each disk moving 4 KB
/// twice: 2 ms + 81.92 µs. A full-stripe write (4 × 64 KB) reads nothing:
/// 1 ms + 64 KB / 100 MB/s = 1.65536 ms.
#[test]
fn raid5_small_writes_pay_read_modify_write() {
    let raid = |level: &str| {
        let dev = format!(
            "kind = \"raid\"\nlevel = {level}\ndisks = 5\nstripe_unit = \"64kB\"\n[server.device.member]\n\
             read_bw = \"100MB/s\"\nwrite_bw = \"100MB/s\"\nread_latency = \"1ms\"\nwrite_latency = \"1ms\""
        );
        with_device(1, 1, &dev, &[])
    };
    let small = async |r: &Rank| xfer(r, "/r", Access::Write, 0, 4_000).await;
    let r0 = run(&raid("0"), 1, small);
    let r5 = run(&raid("5"), 1, small);
    let full = run(&raid("5"), 1, async |r| {
        xfer(r, "/r", Access::Write, 0, 256_000).await
    });
    assert!(close(r0[0], 1e-3 + 4e-5), "{r0:?}");
    assert!(close(r5[0], 2e-3 + 8e-5), "{r5:?}");
    assert!(close(full[0], 1e-3 + 64e-5), "{full:?}");
}

/// Extent locks of 1 MiB, revoke 1 ms, two nodes, no caches, device 100 MB/s.
/// Two writers of 512 KiB in one lock unit serialise: the first alone at
/// 100 MB/s ends at 5.24288 ms; the second waits for it, pays the 1 ms
/// revocation, then writes alone: 11.48576 ms. In different units they share
/// the device: both end at 2 · 5.24288 = 10.48576 ms.
#[test]
fn two_writers_in_one_lock_extent_serialise() {
    let scn = scenario(
        2,
        2,
        &[
            "filesystem.stripe_count=1",
            "filesystem.lock_granularity=1MiB",
            "filesystem.lock_revoke=1ms",
        ],
    );
    let ends = |gap: u64| {
        run(&scn, 2, async move |r| {
            let mut f = r
                .open("/l", OpenMode::Create, true, Api::MpiIo)
                .await
                .unwrap();
            let t0 = r.now();
            r.xfer(
                &mut f,
                Op {
                    access: Access::Write,
                    coord: Coordination::Independent,
                    pos: Position::At(r.rank() as u64 * gap),
                },
                524_288,
            )
            .await
            .unwrap();
            let t = r.now() - t0;
            r.close(f).await;
            t
        })
    };
    let same = ends(524_288);
    let apart = ends(1 << 20);
    assert!(
        close(same[0], 5.24288e-3) && close(same[1], 11.48576e-3),
        "{same:?}"
    );
    assert!(
        close(apart[0], 10.48576e-3) && close(apart[1], 10.48576e-3),
        "{apart:?}"
    );
}

/// Reads 1 MiB of a file written, synced and dropped from the page cache,
/// in 256 reads of 4 KiB, forwards (sequential) or backwards; returns the
/// seconds the reads took.
async fn cold_reads(r: &Rank, backwards: bool) -> f64 {
    const LEN: u64 = 4096;
    xfer(r, "/ra", Access::Write, 0, 256 * LEN).await;
    let mut f = r
        .open("/ra", OpenMode::CreateReadWrite, false, Api::Posix)
        .await
        .unwrap();
    r.drop_cache(&mut f).await;
    let t0 = r.now();
    for i in 0..256 {
        let at = if backwards { 255 - i } else { i } * LEN;
        r.xfer(
            &mut f,
            Op {
                access: Access::Read,
                coord: Coordination::Independent,
                pos: Position::At(at),
            },
            LEN,
        )
        .await
        .unwrap();
    }
    let t = r.now() - t0;
    r.close(f).await;
    t
}

/// Read-ahead, Linux's windows (`mm/readahead.c`): a page cache, an SSD of
/// 1 ms per request at 100 MB/s, memcpy 1 GB/s. 4 KiB reads of a cold 1 MiB
/// file, sequentially, with read-ahead up to 128 KiB: the first read (at 0)
/// fetches 4 · 4 KiB = 16 KiB, each read past a window the next one, four
/// times a window below 8 KiB, else twice, at most 128 KiB: 16, 32, 64, then
/// 128 KiB seven times, then the last 16 KiB (the end of the file): 11
/// requests, 11 ms + 1 MiB / 100 MB/s = 10.48576 ms; the other 245 reads are
/// copies of 4 KiB at 1 GB/s: 1.00352 ms. Without read-ahead (`readahead =
/// 0`), or read backwards, each read is a request: 256 · (1 ms + 40.96 µs).
#[test]
fn sequential_reads_fetch_growing_read_ahead_windows() {
    let ssd = "read_bw = \"100MB/s\"\nwrite_bw = \"100MB/s\"\nread_latency = \"1ms\"\nwrite_latency = \"0s\"\nchannels = 64";
    let with = |readahead: &str| {
        with_device(
            1,
            1,
            ssd,
            &[
                "nodes[0].cache.capacity=1GiB",
                &format!("nodes[0].cache.readahead={readahead}"),
            ],
        )
    };
    let forwards = run(&with("128KiB"), 1, async |r| cold_reads(r, false).await);
    let backwards = run(&with("128KiB"), 1, async |r| cold_reads(r, true).await);
    let none = run(&with("0B"), 1, async |r| cold_reads(r, false).await);
    let each = 256.0 * (1e-3 + 4096.0 / 100e6);
    assert!(
        close(forwards[0], 11e-3 + 10.48576e-3 + 245.0 * 4096.0 / 1e9),
        "{forwards:?}"
    );
    assert!(close(backwards[0], each), "{backwards:?}");
    assert!(close(none[0], each), "{none:?}");
}

/// A write larger than the room left under the dirty limit, while the dirty
/// data is below the background threshold (the flusher asleep), is not held
/// for ever: 1 GiB of memory, limit 20 % (~215 MB), background 10 % (~107 MB);
/// 50 MB dirty, then one write of 300 MB goes through at memory speed (0.3 s
/// at 1 GB/s), as Linux lets a writer dirty its pages until the flusher runs.
#[test]
fn a_write_beyond_the_dirty_limit_with_the_flusher_asleep_goes_through() {
    let scn = scenario(
        1,
        1,
        &[
            "nodes[0].cache.dirty_ratio=0.2",
            "nodes[0].cache.dirty_background_ratio=0.1",
        ],
    );
    let t = run(&scn, 1, async |r| {
        let mut f = r
            .open("/big", OpenMode::CreateReadWrite, false, Api::Posix)
            .await
            .unwrap();
        let write = Op {
            access: Access::Write,
            coord: Coordination::Independent,
            pos: Position::At(0),
        };
        r.xfer(&mut f, write, 50_000_000).await.unwrap();
        let t0 = r.now();
        let at = Op {
            pos: Position::At(50_000_000),
            ..write
        };
        r.xfer(&mut f, at, 300_000_000).await.unwrap();
        vec![r.now() - t0]
    });
    assert!(close(t[0][0], 0.3), "{:?}", t[0]);
}

/// RAID 3 over 5 SSDs (1 ms per request, 100 MB/s), interleave 512 B (a row
/// of the 4 data disks: 2 KB). A 4 KB write is two whole rows, written with
/// their parity on the last disk, no read-modify-write: each disk moves 1 KB,
/// 1 ms + 10.24 µs. A 1 kB write is a partial row (2 of 4 units): read old
/// data and parity, write both, 2 ms + 2 × 5.12 µs. 409.6 kB moves 102.4 kB
/// on every disk (1 ms + 1.024 ms); reading it back, the 4 data disks the same.
#[test]
fn raid3_spreads_every_request_over_all_disks_with_parity_on_the_last() {
    let raid = |level: &str, unit: &str| {
        let dev = format!(
            "kind = \"raid\"\nlevel = {level}\ndisks = 5\nstripe_unit = \"{unit}\"\n[server.device.member]\n\
             read_bw = \"100MB/s\"\nwrite_bw = \"100MB/s\"\nread_latency = \"1ms\"\nwrite_latency = \"1ms\""
        );
        with_device(1, 1, &dev, &[])
    };
    let write = |len: u64| async move |r: &Rank| xfer(r, "/r", Access::Write, 0, len).await;
    let row = run(&raid("3", "512B"), 1, write(4096));
    assert!(close(row[0], 1e-3 + 1024.0 / 100e6), "{row:?}");
    let part = run(&raid("3", "512B"), 1, write(1024));
    assert!(close(part[0], 2e-3 + 2.0 * 512.0 / 100e6), "{part:?}");
    let big = run(&raid("3", "512B"), 1, write(409_600));
    assert!(close(big[0], 1e-3 + 102_400.0 / 100e6), "{big:?}");
    // A RAID 3 read leaves the parity disk idle: 4 data disks each 102.4 kB.
    let read = run(&raid("3", "512B"), 1, async |r: &Rank| {
        xfer(r, "/r", Access::Write, 0, 409_600).await;
        xfer(r, "/r", Access::Read, 0, 409_600).await
    });
    assert!(close(read[0], 1e-3 + 102_400.0 / 100e6), "{read:?}");
    let bad = Scenario::from_str_with(
        &std::fs::read_to_string(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../scenarios/nfs-raid5.toml"
        ))
        .unwrap(),
        "nfs-raid5.toml",
        &["server.device.level=4".to_string()],
    )
    .unwrap_err()
    .to_string();
    assert!(
        bad.contains("level") && bad.contains("0, 3, 5 or 6"),
        "{bad}"
    );
}

/// A page cache that only takes requests below 1 MB (`direct_from`), as NEC's
/// SFS: a 100 kB write lands in the cache at memcpy speed (1 GB/s: 0.1 ms), a
/// 1 MB write goes to the 100 MB/s device (10 ms) and leaves no cached copy,
/// so re-reading it costs the device again (10 ms) while the small one is a
/// cache hit (0.1 ms).
#[test]
fn a_cache_used_only_below_a_request_size_sends_larger_requests_direct() {
    let scn = scenario(1, 1, &["nodes[0].cache.direct_from=1MB"]);
    let t = run(&scn, 1, async |r| {
        let small = xfer(r, "/s", Access::Write, 0, 100_000).await;
        let large = xfer(r, "/l", Access::Write, 0, 1_000_000).await;
        let small_again = xfer(r, "/s", Access::Read, 0, 100_000).await;
        let large_again = xfer(r, "/l", Access::Read, 0, 1_000_000).await;
        [small, large, small_again, large_again]
    });
    let [small, large, small_again, large_again] = t[0];
    assert!(close(small, 1e-4), "{:?}", t[0]);
    assert!(close(large, 1e-2), "{:?}", t[0]);
    assert!(close(small_again, 1e-4), "{:?}", t[0]);
    assert!(close(large_again, 1e-2), "{:?}", t[0]);
}

/// A direct write of a range another request left dirty in the cache writes
/// the dirty bytes back first: 500 kB cached dirty (0.5 ms), then a 1 MB
/// direct write over it: 500 kB written back (5 ms), then 1 MB (10 ms).
#[test]
fn a_direct_request_writes_back_the_dirty_cached_bytes_it_covers_first() {
    let scn = scenario(1, 1, &["nodes[0].cache.direct_from=1MB"]);
    let t = run(&scn, 1, async |r| {
        let cached = xfer(r, "/d", Access::Write, 0, 500_000).await;
        let direct = xfer(r, "/d", Access::Write, 0, 1_000_000).await;
        [cached, direct]
    });
    assert!(close(t[0][0], 5e-4), "{:?}", t[0]);
    assert!(close(t[0][1], 5e-3 + 1e-2), "{:?}", t[0]);
}

/// A node's memory bus shared by its intra-node messages: 4 ranks on one
/// 4-core node, memcpy 1 GB/s per core. Ranks 0→1 and 2→3 each send 100 MB.
/// With the bus at memcpy (the default) the two copies share 1 GB/s: 0.2 s;
/// with `memory_bw = 4GB/s` each copy runs at its core's 1 GB/s: 0.1 s; with
/// 1.5 GB/s they share the bus: 100 MB at 0.75 GB/s, 0.1333 s.
#[test]
fn intra_node_messages_share_the_memory_bus_each_at_most_one_core_s_memcpy() {
    for (bus, want) in [
        (None, 0.2),
        (Some("4GB/s"), 0.1),
        (Some("1.5GB/s"), 0.2 / 1.5),
    ] {
        let mut set = vec!["nodes[0].cores=4".to_string()];
        if let Some(b) = bus {
            set.push(format!("nodes[0].memory_bw={b}"));
        }
        let set: Vec<&str> = set.iter().map(String::as_str).collect();
        let scn = scenario(1, 1, &set);
        let t = run(&scn, 4, async |r| {
            let t0 = r.now();
            match r.rank() % 2 {
                0 => r.send(100_000_000, r.rank() + 1).await,
                _ => r.recv(r.rank() - 1).await,
            }
            r.now() - t0
        });
        assert!(close(t[1], want) && close(t[3], want), "{bus:?}: {t:?}");
    }
}

/// Round-robin placement: 4 ranks on 2 two-core nodes, NIC 100 MB/s, memcpy
/// 1 GB/s. Ranks 0 and 1 exchange 100 MB: by block they share node 0 (memory
/// bus, 0.1 s); round robin puts them on nodes 0 and 1 (NIC, 1 s).
#[test]
fn round_robin_placement_puts_neighbouring_ranks_on_different_nodes() {
    for (placement, want) in [("block", 0.1), ("round-robin", 1.0)] {
        let scn = scenario(
            2,
            1,
            &[
                "nodes[0].cores=2",
                "nodes[0].nic_bw=100MB/s",
                &format!("placement={placement}"),
            ],
        );
        let t = run(&scn, 4, async |r| {
            let t0 = r.now();
            match r.rank() {
                0 => r.send(100_000_000, 1).await,
                1 => r.recv(0).await,
                _ => {}
            }
            r.now() - t0
        });
        assert!(close(t[1], want), "{placement}: {t:?}");
    }
}

/// NFS close-to-open consistency: node 0 writes 100 MB of a shared file and
/// closes it (written back), node 1 then writes 1 MB elsewhere in it. When
/// node 0 opens the file again its cached pages go (the attributes changed),
/// so reading its 100 MB back costs the 100 MB/s device, 1 s; on a local file
/// system (no revalidation) it is a page-cache hit, 100 MB at 1 GB/s: 0.1 s.
/// Without node 1's write, node 0 keeps its cache on NFS too.
#[test]
fn an_nfs_open_drops_cached_pages_another_node_changed_since() {
    for (kind, other_writes, want) in [
        ("nfs", true, 1.0),
        ("local", true, 0.1),
        ("nfs", false, 0.1),
    ] {
        let scn = scenario(
            2,
            1,
            &[
                &format!("filesystem.kind={kind}"),
                "nodes[0].cache.dirty_ratio=0.2",
            ],
        );
        let t = run(&scn, 2, async |r| {
            let open = async || {
                r.open("/s", OpenMode::CreateReadWrite, true, Api::MpiIo)
                    .await
                    .unwrap()
            };
            let op = |access, at| Op {
                access,
                coord: Coordination::Independent,
                pos: Position::At(at),
            };
            let mut f = open().await;
            if r.rank() == 0 {
                r.xfer(&mut f, op(Access::Write, 0), 100_000_000)
                    .await
                    .unwrap();
            }
            r.close(f).await;
            let mut f = open().await;
            if r.rank() == 1 && other_writes {
                r.xfer(&mut f, op(Access::Write, 200_000_000), 1_000_000)
                    .await
                    .unwrap();
            }
            r.close(f).await;
            let mut f = open().await;
            let t0 = r.now();
            if r.rank() == 0 {
                r.xfer(&mut f, op(Access::Read, 0), 100_000_000)
                    .await
                    .unwrap();
            }
            let t = r.now() - t0;
            r.close(f).await;
            t
        });
        assert!(
            close(t[0], want),
            "{kind}, other writes {other_writes}: {t:?}"
        );
    }
}

/// Dirty limits that hold every write of the tests below until their syncs.
const ROOMY_DIRTY: [&str; 2] = [
    "nodes[0].cache.dirty_ratio=0.5",
    "nodes[0].cache.dirty_background_ratio=0.4",
];

/// `server.device.overwrite_bw`: write-back of blocks the file wrote to the
/// device before. 100 MB written (0.1 s at 1 GB/s) and synced: new blocks at
/// 100 MB/s, 1 s. Rewritten and synced: at 400 MB/s, 0.25 s. 100 MB at 50 MB:
/// 50 MB over blocks written before, 50 MB new: 0.125 + 0.5 = 0.625 s. Without
/// the key every sync is at `write_bw`: 1 s, 1 s.
#[test]
fn a_sync_writes_blocks_written_before_at_overwrite_bw() {
    let program = async |r: &Rank| {
        let mut f = r
            .open("/o", OpenMode::CreateReadWrite, false, Api::Posix)
            .await
            .unwrap();
        let write = |at| Op {
            access: Access::Write,
            coord: Coordination::Independent,
            pos: Position::At(at),
        };
        let mut syncs = Vec::new();
        for at in [0, 0, 50_000_000] {
            r.xfer(&mut f, write(at), 100_000_000).await.unwrap();
            let t = r.now();
            r.sync(&mut f).await;
            syncs.push(r.now() - t);
        }
        syncs
    };
    let mut set = ROOMY_DIRTY.to_vec();
    set.push("server.device.overwrite_bw=\"400MB/s\"");
    let t = run(&scenario(1, 1, &set), 1, program);
    let want = [1.0, 0.25, 0.625];
    assert!(
        t[0].iter().zip(want).all(|(&a, b)| close(a, b)),
        "{:?}",
        t[0]
    );
    let t = run(&scenario(1, 1, &ROOMY_DIRTY), 1, program);
    assert!(
        t[0].iter().zip([1.0, 1.0, 1.0]).all(|(&a, b)| close(a, b)),
        "{:?}",
        t[0]
    );
}

/// `nodes.cache.aliased_bw`: a page-cache copy whose destination lies 1 to 31
/// bytes past its source, modulo 4 KiB, runs at 250 MB/s instead of 1 GB/s.
/// 100 MB each: written at offset 0 from a buffer 16 B past a page (the page
/// cache 4080 B past it: 0.1 s); read back into it (16 B past: 0.4 s); read
/// into one 48 B past (0.1 s; with `aliased_within` = 64 B, 0.4 s); written
/// from one 4072 B past (the page cache 24 B past it: 0.4 s). Without the key,
/// 0.1 s each.
#[test]
fn a_cache_copy_a_few_bytes_past_its_source_runs_at_aliased_bw() {
    let program = async |r: &Rank| {
        let mut f = r
            .open("/a", OpenMode::CreateReadWrite, false, Api::Posix)
            .await
            .unwrap();
        let op = |access| Op {
            access,
            coord: Coordination::Independent,
            pos: Position::At(0),
        };
        let mut times = Vec::new();
        for (access, placed) in [
            (Access::Write, 16),
            (Access::Read, 16),
            (Access::Read, 48),
            (Access::Write, 4072),
        ] {
            let t = r.now();
            r.xfer_placed(&mut f, op(access), 100_000_000, Some(placed))
                .await
                .unwrap();
            times.push(r.now() - t);
        }
        times
    };
    let with = |extra: &[&'static str]| {
        let mut set = ROOMY_DIRTY.to_vec();
        set.extend_from_slice(extra);
        run(&scenario(1, 1, &set), 1, program).remove(0)
    };
    let check = |t: Vec<f64>, want: [f64; 4]| {
        assert!(
            t.iter().zip(want).all(|(&a, b)| close(a, b)),
            "{t:?}, want {want:?}"
        );
    };
    check(
        with(&["nodes[0].cache.aliased_bw=\"250MB/s\""]),
        [0.1, 0.4, 0.1, 0.4],
    );
    check(
        with(&[
            "nodes[0].cache.aliased_bw=\"250MB/s\"",
            "nodes[0].cache.aliased_within=\"64B\"",
        ]),
        [0.1, 0.4, 0.4, 0.4],
    );
    check(with(&[]), [0.1, 0.1, 0.1, 0.1]);
}

/// `nodes.cache.aliased_all_cores`: 2 ranks on a 2-core node each read
/// 100 MB at a page-aligned offset (25 000 pages apart) into a buffer 16 B
/// past a page (aliased, 250 MB/s a core). Alone:
/// 0.4 s each. Each core keeping 0.6 while both copy aliased, the node's
/// aliased copies share 2 × 0.6 × 250 = 300 MB/s: 150 MB/s each, 2/3 s.
/// Only rank 0 reading: its core's 250 MB/s is below 300, 0.4 s.
#[test]
fn aliased_copies_on_every_core_share_the_part_each_keeps() {
    let times = |readers: usize, extra: &[&'static str]| {
        let mut set = ROOMY_DIRTY.to_vec();
        set.push("nodes[0].cores=2");
        set.push("nodes[0].cache.aliased_bw=\"250MB/s\"");
        set.extend_from_slice(extra);
        run(&scenario(1, 1, &set), 2, async |r: &Rank| {
            let mut f = r
                .open("/a", OpenMode::CreateReadWrite, false, Api::Posix)
                .await
                .unwrap();
            let op = |access| Op {
                access,
                coord: Coordination::Independent,
                pos: Position::At(102_400_000 * r.rank() as u64),
            };
            // written from a page-aligned buffer: not aliased
            r.xfer_placed(&mut f, op(Access::Write), 100_000_000, Some(0))
                .await
                .unwrap();
            r.barrier().await;
            let t = r.now();
            if r.rank() < readers {
                r.xfer_placed(&mut f, op(Access::Read), 100_000_000, Some(16))
                    .await
                    .unwrap();
            }
            r.now() - t
        })
    };
    let check = |t: Vec<f64>, want: [f64; 2]| {
        assert!(
            t.iter().zip(want).all(|(&a, b)| close(a, b)),
            "{t:?}, want {want:?}"
        );
    };
    let kept = ["nodes[0].cache.aliased_all_cores=0.6"];
    check(times(2, &kept), [2.0 / 3.0, 2.0 / 3.0]);
    check(times(1, &kept), [0.4, 0.0]);
    check(times(2, &[]), [0.4, 0.4]);
}

/// `nodes.message_bw`: a 100 MB message between 2 ranks of a 2-core node at
/// 250 MB/s on the sender's core takes 0.4 s; without the key it moves at
/// `compute.memcpy`, 1 GB/s: 0.1 s.
#[test]
fn an_intra_node_message_moves_at_message_bw() {
    for (extra, want) in [(Some("nodes[0].message_bw=\"250MB/s\""), 0.4), (None, 0.1)] {
        let mut set = vec!["nodes[0].cores=2"];
        set.extend(extra);
        let t = run(&scenario(1, 1, &set), 2, async |r| {
            let t0 = r.now();
            match r.rank() {
                0 => r.send(100_000_000, 1).await,
                _ => r.recv(0).await,
            }
            r.now() - t0
        });
        assert!(close(t[1], want), "{extra:?}: {t:?}");
    }
}
