//! The memcpy probe: timed in-process copies over sizes, for the twin's
//! `nodes.compute.memcpy` (the rate of page-cache copies and intra-node
//! messages). It runs in the calibrating process itself: no MPI is involved.

use std::time::Instant;

use serde::{Deserialize, Serialize};

/// One timed copy.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct CopySample {
    /// Bytes copied.
    pub bytes: u64,
    /// Seconds the copy took.
    pub seconds: f64,
}

/// Copies `reps` times at each size between two buffers of the largest size and
/// times each copy. Both buffers are written once first (page faults are not a
/// copy cost), and each size gets one untimed copy so it starts warm.
pub fn measure(sizes: &[u64], reps: usize) -> Vec<CopySample> {
    let max = sizes.iter().copied().max().unwrap_or(0) as usize;
    let src: Vec<u8> = (0..max).map(|i| (i * 31 % 251) as u8).collect();
    let mut dst = vec![1u8; max];
    let mut out = Vec::with_capacity(sizes.len() * reps);
    for &s in sizes {
        let n = s as usize;
        dst[..n].copy_from_slice(&src[..n]);
        for _ in 0..reps {
            let t0 = Instant::now();
            dst[..n].copy_from_slice(std::hint::black_box(&src[..n]));
            std::hint::black_box(&dst);
            out.push(CopySample {
                bytes: s,
                seconds: t0.elapsed().as_secs_f64(),
            });
        }
    }
    out
}

#[cfg(test)]
mod tests {
    #[test]
    fn one_sample_per_size_and_repetition() {
        let v = super::measure(&[4096, 65536], 3);
        assert_eq!(v.len(), 6);
        assert_eq!(v[0].bytes, 4096);
        assert_eq!(v[5].bytes, 65536);
        assert!(v.iter().all(|s| s.seconds >= 0.0));
    }
}
