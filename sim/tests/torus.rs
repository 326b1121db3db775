//! The torus network pinned to hand-computable truths: latency by hop count
//! in dimension order, link sharing where dimension-order routes overlap, the
//! single link of a dimension of two, and a clear error for more nodes than
//! routers.

mod common;

use common::{run, try_run};

use piotwin_sim::Scenario;

/// `x`×`y`×`z` routers, `nodes` single-core nodes spread over them
/// (`switch = "torus"`), one server on the torus; NICs at 1 TB/s with no
/// latency, no per-hop switch latency; each torus link `link_bw` per
/// direction and 1 us.
fn torus(dims: [usize; 3], nodes: usize, link_bw: &str) -> Result<Scenario, String> {
    Scenario::from_str_with(&torus_text(dims, nodes, link_bw), "torus.toml", &[])
        .map_err(|e| e.to_string())
}

/// The text of [`torus`]'s scenario.
fn torus_text(dims: [usize; 3], nodes: usize, link_bw: &str) -> String {
    let [x, y, z] = dims;
    format!(
        r#"name = "torus"
seed = 1
[[nodes]]
name = "pe"
count = {nodes}
cores = 1
memory = "1GiB"
nic_bw = "1TB/s"
nic_latency = "0s"
switch = "torus"
[nodes.compute]
memcpy = "1GB/s"
fft = "1Gflop/s"
bt = "1Gflop/s"
flops = "1Gflop/s"
[network]
bandwidth = "1TB/s"
latency = "0s"
[network.torus]
x = {x}
y = {y}
z = {z}
bandwidth = "{link_bw}"
latency = "1us"
[server]
nic_bw = "1TB/s"
switch = "torus"
[server.device]
read_bw = "100MB/s"
write_bw = "100MB/s"
read_latency = "0s"
write_latency = "0s"
[metadata]
open = "0s"
create = "0s"
close = "0s"
delete = "0s"
sync = "0s"
[mpiio]
shared_pointer = "0s"
"#
    )
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-9 * a.abs().max(b.abs()).max(1e-3)
}

/// Seconds rank 0 takes to send an empty message to each other rank of a
/// 4×4×4 torus (one node per router, x fastest), one after another.
fn latencies(dims: [usize; 3]) -> Vec<f64> {
    let n = dims.iter().product();
    let scn = torus(dims, n, "1GB/s").unwrap();
    let got = run(&scn, n, async |r| {
        let mut took = Vec::new();
        for peer in 1..r.size() {
            if r.rank() == 0 {
                let t0 = r.now();
                r.sendrecv(0, peer, peer).await;
                took.push(r.now() - t0);
            } else if r.rank() == peer {
                r.sendrecv(0, 0, 0).await;
            }
        }
        took
    });
    got[0].clone()
}

/// One hop per router crossed, each dimension the shorter way round (a tie
/// at half the ring goes forward): on 4×4×4, router (2,3,1) = rank 2 + 4·3 +
/// 16·1 = 30 is 2 + 1 + 1 = 4 hops from (0,0,0), (1,1,1) = 21 three, and the
/// farthest, (2,2,2) = 42, six. A sendrecv is one message each way at once:
/// the hops' latency, 1 us each.
#[test]
fn latency_counts_dimension_order_hops() {
    let t = latencies([4, 4, 4]);
    for (peer, hops) in [
        (1, 1.0),
        (3, 1.0),
        (2, 2.0),
        (30, 4.0),
        (21, 3.0),
        (42, 6.0),
    ] {
        assert!(
            close(t[peer - 1], hops * 1e-6),
            "rank {peer}: {}",
            t[peer - 1]
        );
    }
    let farthest = t.iter().fold(0.0, |a: f64, &b| a.max(b));
    assert!(close(farthest, 6e-6), "{farthest}");
}

/// A dimension of two routers has one link between them, not two: on
/// 2×2×2 every router is one hop from three others, and the opposite corner
/// (rank 7) is three hops away.
#[test]
fn a_dimension_of_two_is_one_link() {
    let t = latencies([2, 2, 2]);
    let want = [1.0, 1.0, 2.0, 1.0, 2.0, 2.0, 3.0];
    for (peer, hops) in want.iter().enumerate() {
        assert!(
            close(t[peer], hops * 1e-6),
            "rank {}: {}",
            peer + 1,
            t[peer]
        );
    }
}

/// Dimension-order routes that share a link share its bandwidth: on an
/// 8-router ring (8×1×1) with 100 MB/s links, 0 → 2 and 1 → 3 both cross
/// link 1→2, so each moves 100 MB at 50 MB/s (2 s); 0 → 2 and 4 → 6 share
/// nothing (1 s each). Plus 2 hops of 1 us.
#[test]
fn routes_through_one_link_share_it() {
    let scn = torus([8, 1, 1], 8, "100MB/s").unwrap();
    for (pairs, want) in [([(0, 2), (1, 3)], 2.0), ([(0, 2), (4, 6)], 1.0)] {
        let got = run(&scn, 8, async |r| {
            let t0 = r.now();
            for &(from, to) in &pairs {
                if r.rank() == from {
                    r.send(100_000_000, to).await;
                } else if r.rank() == to {
                    r.recv(from).await;
                }
            }
            r.now() - t0
        });
        for &(from, to) in &pairs {
            assert!(
                close(got[to], want + 2e-6),
                "{pairs:?}: {from}→{to} {}",
                got[to]
            );
        }
    }
}

/// Nodes spread over the routers evenly: 4 nodes on an 8-router ring sit on
/// routers 0, 2, 4 and 6, so ranks 0 and 1 are two hops apart.
#[test]
fn fewer_nodes_than_routers_spread_evenly() {
    let scn = torus([8, 1, 1], 4, "1GB/s").unwrap();
    let got = run(&scn, 4, async |r| {
        let t0 = r.now();
        if r.rank() < 2 {
            r.sendrecv(0, 1 - r.rank(), 1 - r.rank()).await;
        }
        r.now() - t0
    });
    assert!(close(got[0], 2e-6), "{got:?}");
}

/// More nodes than routers is refused, naming both counts.
#[test]
fn more_nodes_than_routers_is_an_error() {
    let scn = torus([2, 2, 2], 9, "1GB/s").unwrap();
    let err = try_run(&scn, 9, 1, async |_| ()).unwrap_err().to_string();
    assert!(
        err.contains("9 nodes attach to the torus") && err.contains("8 routers"),
        "{err}"
    );
}

/// A torus dimension of 0 routers is refused with the key and what is allowed.
#[test]
fn a_dimension_of_zero_is_an_error() {
    let text = torus_text([2, 2, 2], 8, "1GB/s").replace("y = 2", "y = 0");
    let err = Scenario::from_str_with(&text, "torus.toml", &[])
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("network.torus.y") && err.contains("≥ 1"),
        "{err}"
    );
}

/// A link may join one router of the torus, named `torus(x,y,z)` (a storage
/// switch on router (1,0,0): the twin builds and runs), but not the torus as
/// a whole (an error naming the link and what to write).
#[test]
fn a_link_joins_one_router() {
    let link = |end: &str| {
        torus_text([4, 1, 1], 4, "1GB/s").replace(
            "[server]\nnic_bw = \"1TB/s\"\nswitch = \"torus\"",
            &format!(
                "[[network.links]]\nfrom = \"{end}\"\nto = \"storage\"\nbandwidth = \"1GB/s\"\nlatency = \"1us\"\n[server]\nnic_bw = \"1TB/s\"\nswitch = \"storage\""
            ),
        )
    };
    let whole = Scenario::from_str_with(&link("torus"), "torus.toml", &[]).unwrap();
    let err = try_run(&whole, 4, 1, async |_| ()).unwrap_err().to_string();
    assert!(
        err.contains("names `torus`") && err.contains("torus(x,y,z)"),
        "{err}"
    );
    let one = Scenario::from_str_with(&link("torus(1,0,0)"), "torus.toml", &[]).unwrap();
    run(&one, 4, async |_| ());
}
