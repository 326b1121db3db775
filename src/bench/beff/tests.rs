//! b_eff's sizes, loop lengths, patterns and averages by hand, and the program on
//! the twin and the dry run.

use super::output::averages;
use super::program::{byte, check};
use super::*;

fn params(mb: u64) -> BeffParams {
    BeffParams {
        mb,
        repetitions: 3,
        seed: 1,
        first_loop: FIRST_LOOP,
    }
}

#[test]
fn the_21_sizes_double_to_4k_then_step_geometrically_to_lmax() {
    // --mb 512: Lmax = 4 MiB = 4096 · (2^1.25)^8; the fourth step is 4096 · 2^5.
    let s = params(512).sizes();
    assert_eq!(s.len(), MSGLENGTHS);
    assert_eq!(
        &s[..13],
        &[1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096]
    );
    assert_eq!(
        &s[13..],
        &[9742, 23170, 55109, 131072, 311744, 741455, 1763488, 4 << 20]
    );
    // --mb 1024: Lmax = 8 MiB.
    assert_eq!(params(1024).lmax(), 8 << 20);
    assert_eq!(
        &params(1024).sizes()[13..],
        &[
            10624,
            27554,
            71468,
            185364,
            480774,
            1246974,
            3234251,
            8 << 20
        ]
    );
    // Capped at 128 MiB, as b_eff's int counts are.
    assert_eq!(params(64 << 10).lmax(), 128 << 20);
}

#[test]
fn loops_shrink_only_when_the_next_size_would_take_over_5_ms() {
    // 1 ms at 1 B, the next size 2 B: 2 ms predicted, kept.
    assert_eq!(next_loop_length(300, 1e-3, 1, 2), 300);
    // 4 ms at 4 KiB, next 8 KiB: 8 ms predicted, cut to 2.5 ms: 300 · 2.5 / 8 = 93.75.
    assert_eq!(next_loop_length(300, 4e-3, 4096, 8192), 93);
    // Never below 1, never longer.
    assert_eq!(next_loop_length(1, 1.0, 1 << 20, 2 << 20), 1);
    assert_eq!(next_loop_length(10, 1e-6, 8, 16), 10);
}

fn names(n: usize) -> Vec<String> {
    patterns(n, 1)
        .into_iter()
        .filter(|p| p.family == Family::Ring)
        .map(|p| p.name)
        .collect()
}

/// The ring sizes of each pattern: (count, size) groups in rank order.
fn rings_of(p: &Pattern) -> Vec<usize> {
    let n = p.neighbours.len();
    let mut seen = vec![false; n];
    let mut sizes = Vec::new();
    for start in 0..n {
        if seen[start] {
            continue;
        }
        let mut r = start;
        let mut size = 0;
        while !seen[r] {
            seen[r] = true;
            size += 1;
            r = p.neighbours[r].0;
        }
        sizes.push(size);
    }
    sizes
}

#[test]
fn ring_sizes_are_the_specs_for_2_7_24_and_128_processes() {
    assert_eq!(names(2), vec!["ring-1*2fix"; 6]);
    assert_eq!(
        names(7),
        vec![
            "ring-3*2&+1",
            "ring-1*7fix",
            "ring-1*7fix",
            "ring-1*7fix",
            "ring-1*7fix",
            "ring-1*7fix"
        ]
    );
    assert_eq!(
        names(24),
        vec![
            "ring-12*2fix",
            "ring-6*4fix",
            "ring-3*8fix",
            "ring-1*24fix",
            "ring-1*24fix",
            "ring-1*24fix"
        ]
    );
    assert_eq!(
        names(128),
        vec![
            "ring-64*2fix",
            "ring-32*4fix",
            "ring-16*8fix",
            "ring-4*32fix",
            "ring-2*64fix",
            "ring-1*128fix"
        ]
    );
    let p7 = patterns(7, 1);
    assert_eq!(rings_of(&p7[0]), vec![2, 2, 3], "rings of 2, the last of 3");
    // The rings of 4 elsewhere: a remainder of 1 makes the last ring 5, of 2 the
    // last two 5, of 3 the last 3.
    for (n, want) in [
        (9, vec![4, 5]),
        (10, vec![5, 5]),
        (11, vec![4, 4, 3]),
        (14, vec![4, 5, 5]),
        (12, vec![4, 4, 4]),
    ] {
        assert_eq!(rings_of(&patterns(n, 1)[1]), want, "n = {n}");
    }
    // Rings of 8: the last 7 or 9.
    assert_eq!(rings_of(&patterns(23, 1)[2]), vec![8, 8, 7]);
    assert_eq!(rings_of(&patterns(25, 1)[2]), vec![8, 8, 9]);
}

#[test]
fn every_pattern_is_rings_and_random_ones_are_seeded_permutations() {
    for n in [2, 3, 7, 24, 128] {
        for p in patterns(n, 7) {
            for (r, &(next, prev)) in p.neighbours.iter().enumerate() {
                assert_eq!(p.neighbours[next].1, r, "{}: next's previous", p.name);
                assert_eq!(p.neighbours[prev].0, r, "{}: previous's next", p.name);
                assert_ne!(next, r, "{}: nobody is its own neighbour", p.name);
            }
            let sizes = rings_of(&p);
            assert_eq!(sizes.iter().sum::<usize>(), n);
        }
        let perm = random_permutation(n, 7, 2);
        let mut sorted = perm.clone();
        sorted.sort_unstable();
        assert_eq!(sorted, (0..n).collect::<Vec<_>>(), "a permutation");
        assert_eq!(perm, random_permutation(n, 7, 2), "seeded");
    }
    assert_ne!(random_permutation(128, 7, 0), random_permutation(128, 8, 0));
    assert_ne!(random_permutation(128, 7, 0), random_permutation(128, 7, 1));
    // A random pattern is its ring pattern over the permutation: same ring sizes.
    let p = patterns(24, 3);
    for k in 0..RINGS {
        let mut a = rings_of(&p[k]);
        let mut b = rings_of(&p[RINGS + k]);
        a.sort_unstable();
        b.sort_unstable();
        assert_eq!(a, b);
        assert_eq!(p[RINGS + k].name, format!("random-{}", p[k].name));
    }
}

#[test]
fn a_wrong_byte_in_a_message_is_named() {
    let len = 300;
    let mut got: Vec<u8> = (0..2 * len).map(|j| byte(5, j % len)).collect();
    assert_eq!(check(Some(&got), 5, len, "m"), None);
    assert_eq!(check(None, 5, len, "m"), None, "the twin holds no data");
    got[len + 7] ^= 1;
    let m = check(Some(&got), 5, len, "m").unwrap();
    assert!(
        m.starts_with(&format!("m: byte {} from rank 5", len + 7)),
        "{m}"
    );
    assert!(
        check(Some(&got[..len]), 4, len, "m").is_some(),
        "another sender's bytes"
    );
}

/// The plot: two panels (rings, random), a line per pattern, readable axes.
#[test]
fn the_figure_has_readable_axes() {
    let b = Beff { params: params(16) };
    let sizes = b.params.sizes();
    let mut out = BeffOutput {
        patterns: patterns(4, 1)
            .into_iter()
            .map(|p| (p.name, p.family))
            .collect(),
        ..BeffOutput::default()
    };
    for p in 0..2 * RINGS {
        for (i, &bytes) in sizes.iter().enumerate() {
            out.samples.push(Sample {
                pattern: p,
                bytes,
                method: Method::Sendrecv,
                rep: 0,
                loops: 1,
                seconds: 1.0,
                bandwidth: 1e6 * (1.0 + i as f64) * (1.0 + p as f64),
            });
        }
    }
    let fig = b.figure(&out, "t").unwrap();
    assert_eq!(fig.panels.len(), 2);
    assert!(fig.panels.iter().all(|p| p.series.len() == RINGS));
    let dir = tempfile::tempdir().unwrap();
    let files = b.write_plot(&out, "t", &dir.path().join("f")).unwrap();
    assert_eq!(files.len(), 2);
    let text = std::fs::read_to_string(&files[0]).unwrap();
    crate::report::plot::check_readable_axes(&text, &fig).unwrap();
}

#[test]
fn logavg_is_the_geometric_mean() {
    assert_eq!(
        logavg(&[1.0, 100.0]).map(|v| (v * 1e9).round() / 1e9),
        Some(10.0)
    );
    assert!((logavg(&[2.0, 8.0, 4.0]).unwrap() - 4.0).abs() < 1e-12);
    assert_eq!(logavg(&[]), None);
    assert_eq!(logavg(&[3.0, 0.0]), None);
}

#[test]
fn averages_follow_b_effs_formulas() {
    // Two sizes, one ring and one random pattern: the best of methods and
    // repetitions per size, the mean over sizes, logavgs.
    let sizes = [1, 2];
    let mut out = BeffOutput {
        patterns: vec![
            ("ring".into(), Family::Ring),
            ("random".into(), Family::Random),
        ],
        ..BeffOutput::default()
    };
    let mut add = |pattern, bytes, method, rep, bandwidth| {
        out.samples.push(Sample {
            pattern,
            bytes,
            method,
            rep,
            loops: 1,
            seconds: 1.0,
            bandwidth,
        })
    };
    add(0, 1, Method::Sendrecv, 0, 10.0);
    add(0, 1, Method::Nonblocking, 1, 30.0);
    add(0, 2, Method::Alltoallv, 0, 50.0);
    add(1, 1, Method::Sendrecv, 0, 40.0);
    add(1, 2, Method::Sendrecv, 2, 160.0);
    let a = averages(&out, &sizes).unwrap();
    assert_eq!(a.per_pattern, vec![40.0, 100.0]);
    assert!((a.b_eff - (40.0f64 * 100.0).sqrt()).abs() < 1e-9);
    assert!((a.b_eff_lmax - (50.0f64 * 160.0).sqrt()).abs() < 1e-9);
    assert!((a.rings_lmax - 50.0).abs() < 1e-9);
}
