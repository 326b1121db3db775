//! Tests of the pingpong benchmark.

use super::*;

fn params() -> PingpongParams {
    PingpongParams {
        sizes: vec![1, 1024, 1 << 20],
        iterations: 100,
        bytes_per_size: 8 << 20,
        barriers: 10,
        two_phase: Vec::new(),
        two_phase_block: 64 << 10,
        file: "pingpong.dat".into(),
        polled: 0,
        polled_copies: Vec::new(),
        locked_writes: Vec::new(),
    }
}

#[test]
fn exchanges_scale_with_size() {
    let p = params();
    assert_eq!(p.exchanges(1), 100);
    assert_eq!(p.exchanges(1 << 20), 8);
    assert_eq!(p.exchanges(1 << 30), 4);
}

#[test]
fn validation_names_the_problem() {
    let p = params();
    assert!(
        p.validate(1)
            .unwrap_err()
            .to_string()
            .contains("at least 2 ranks")
    );
    assert!(p.validate(2).is_ok());
    let mut q = p.clone();
    q.sizes.clear();
    assert!(q.validate(2).unwrap_err().to_string().contains("--sizes"));
    q.sizes = vec![2 << 30];
    assert!(q.validate(2).unwrap_err().to_string().contains("1 GiB"));
}

#[test]
fn twin_exchange_time_grows_with_size_and_barrier_is_timed() {
    let scenario = piotwin_sim::Scenario::from_str(
        include_str!("../../../scenarios/default.toml"),
        "default.toml",
    )
    .unwrap();
    let p = Pingpong { params: params() };
    let (outs, _) =
        crate::backend::sim::launch(&scenario, 3, piotwin_sim::SimOptions::seeded(1), &p).unwrap();
    let rows = &outs[0].rows;
    // 3 sizes, the barrier, when the second and third ranks left it (together:
    // no stagger in the default scenario), then the all-reduces
    assert_eq!(rows.len(), 7);
    assert!(
        rows[..4].iter().all(|r| r.ranks == 3 && r.seconds > 0.0),
        "{rows:?}"
    );
    assert!(rows[0].seconds < rows[2].seconds, "{rows:?}");
    assert_eq!(rows[3].test, "barrier");
    assert!(
        rows[4..6]
            .iter()
            .zip(1..)
            .all(|(r, k)| r.test == "barrier_exit" && r.active == k && r.seconds == 0.0),
        "{rows:?}"
    );
    // An all-reduce of one value: the barrier's steps and 8 bytes more.
    let a = &rows[6];
    assert_eq!(
        (a.test.as_str(), a.bytes, a.iterations),
        ("allreduce", 8, rows[3].iterations)
    );
    assert!(a.seconds > rows[3].seconds, "{rows:?}");
    assert!(
        outs.iter().all(|o| o.mismatches.is_empty()),
        "every sum checked"
    );
    assert_eq!(outs[1].rows, *rows, "every rank returns the same rows");
}
