//! The communication patterns: six ring patterns over the processes in rank
//! order, and the same six over a random permutation of them. In a pattern every
//! process sends to its ring's next process and receives from its previous one,
//! then the reverse: two messages per process and iteration.

use rand::SeedableRng;
use rand::seq::SliceRandom;

use super::*;

/// Ring patterns (and random patterns: the same rings, permuted).
pub const RINGS: usize = 6;

/// Which family a pattern belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Family {
    /// Rings of neighbouring ranks.
    Ring,
    /// Rings over a random permutation of the ranks.
    Random,
}

/// One pattern: its name and every rank's ring neighbours.
#[derive(Debug, Clone, PartialEq)]
pub struct Pattern {
    /// b_eff's description, e.g. `ring-2*4fix`, with `random-` before a random one.
    pub name: String,
    /// Ring or random.
    pub family: Family,
    /// For each rank: (next, previous) in its ring.
    pub neighbours: Vec<(usize, usize)>,
}

/// The ring sizes aimed at (b_eff's `medium_ring_size`): 2, 4, 8, max(16, n/4),
/// max(32, n/2), n — none above n; and, as the b_eff paper has it, one ring of
/// all for the rings of 4 on up to 7 processes.
pub fn medium_ring_sizes(n: usize) -> [usize; RINGS] {
    let four = if n <= 7 { n } else { 4 };
    [2, four, 8, 16.max(n / 4), 32.max(n / 2), n].map(|s| s.min(n))
}

/// How b_eff splits `n` positions into rings near `medium` each: the rings (as
/// `(count, size)` groups, first group first) and the pattern's name.
/// `round(n / medium)` rings (at most n/2, at least one) of sizes differing by at
/// most one; when the smaller size is odd the larger rings come first.
pub fn ring_split(n: usize, medium: usize) -> ([(usize, usize); 2], String) {
    let rings = ((n as f64 / medium as f64 + 0.4) as usize)
        .min(n / 2)
        .max(1);
    let low = n / rings;
    let high = low + 1;
    let high_count = n - low * rings;
    let low_count = rings - high_count;
    let (first, second) = if low % 2 == 1 && high_count > 0 {
        ((high_count, high), (low_count, low))
    } else {
        ((low_count, low), (high_count, high))
    };
    let tail = match second.0 {
        0 => "fix",
        _ if second.1 > first.1 => "&+1",
        _ => "&-1",
    };
    ([first, second], format!("ring-{rings}*{}{tail}", first.1))
}

/// Next and previous position of every position `0..n` in the rings of `split`.
fn ring_neighbours(n: usize, split: [(usize, usize); 2]) -> Vec<(usize, usize)> {
    let [(first_count, first), (_, second)] = split;
    (0..n)
        .map(|p| {
            let (size, base) = if p < first_count * first {
                (first, p / first * first)
            } else {
                let q = p - first_count * first;
                (second, q / second * second + first_count * first)
            };
            (
                (p - base + 1) % size + base,
                (p - base + size - 1) % size + base,
            )
        })
        .collect()
}

/// The seeded permutation of random pattern `k`: position `p` holds rank `perm[p]`.
pub fn random_permutation(n: usize, seed: u64, k: usize) -> Vec<usize> {
    let mut perm: Vec<usize> = (0..n).collect();
    let mut rng = rand_pcg::Pcg64::seed_from_u64(seed ^ (0x6265_6666_0000_0000 | k as u64));
    perm.shuffle(&mut rng);
    perm
}

/// The twelve patterns for `n` processes: six rings, then the same rings over
/// six seeded random permutations.
pub fn patterns(n: usize, seed: u64) -> Vec<Pattern> {
    let mut out = Vec::with_capacity(2 * RINGS);
    let splits: Vec<_> = medium_ring_sizes(n)
        .iter()
        .map(|&m| ring_split(n, m))
        .collect();
    for (split, name) in &splits {
        out.push(Pattern {
            name: name.clone(),
            family: Family::Ring,
            neighbours: ring_neighbours(n, *split),
        });
    }
    for (k, (split, name)) in splits.iter().enumerate() {
        let perm = random_permutation(n, seed, k);
        let mut at = vec![0; n];
        for (p, &r) in perm.iter().enumerate() {
            at[r] = p;
        }
        let by_position = ring_neighbours(n, *split);
        out.push(Pattern {
            name: format!("random-{name}"),
            family: Family::Random,
            neighbours: (0..n)
                .map(|r| {
                    let (next, prev) = by_position[at[r]];
                    (perm[next], perm[prev])
                })
                .collect(),
        });
    }
    out
}

/// The logarithmic average `exp(Σ ln v / n)` (b_eff's `logavg`); `None` when a
/// value is not positive or there is none.
pub fn logavg(values: &[f64]) -> Option<f64> {
    // Not positive, or not a number.
    let positive = |v: &f64| v.partial_cmp(&0.0) == Some(std::cmp::Ordering::Greater);
    if values.is_empty() || !values.iter().all(positive) {
        return None;
    }
    Some((values.iter().map(|v| v.ln()).sum::<f64>() / values.len() as f64).exp())
}
