//! The data pattern benchmarks write and check (IOR's and IOzone's): every
//! byte of a file is a pure function of the seed, the file and the offset, so
//! a reader checks what it reads without knowing who wrote it; and the
//! pseudo-random permutation of IOR's `-z`.

/// SplitMix64's finaliser (Steele, Lea & Flood, OOPSLA 2014): a bijective 64-bit mix.
fn mix64(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// The `i`-th element (`i < n`) of a pseudo-random permutation of `0..n` chosen by
/// `key`: a 4-round balanced Feistel network on the smallest even-bit power of two
/// ≥ n, with cycle walking back into `0..n` (Black & Rogaway, "Ciphers with
/// arbitrary finite domains", CT-RSA 2002). O(1) memory, so `-z` costs nothing
/// per transfer at any scale, and it is the same on every machine.
pub fn permute(i: u64, n: u64, key: u64) -> u64 {
    assert!(i < n, "permute: index {i} out of 0..{n}");
    if n <= 1 {
        return i;
    }
    let bits = 64 - (n - 1).leading_zeros();
    let half = bits.div_ceil(2);
    let mask = (1u64 << half) - 1;
    let mut x = i;
    loop {
        let (mut l, mut r) = (x >> half, x & mask);
        for round in 0..4u64 {
            let f = mix64(key ^ mix64(r ^ (round << 56))) & mask;
            (l, r) = (r, l ^ f);
        }
        x = (l << half) | r;
        if x < n {
            return x;
        }
    }
}

/// The key of file `file_id`'s pattern for `seed` (computed once per buffer).
fn pattern_key(seed: u64, file_id: u64) -> u64 {
    mix64(seed ^ mix64(file_id))
}

/// The 8-byte pattern word number `word` of the file whose key is `key`.
fn pattern_word(key: u64, word: u64) -> [u8; 8] {
    mix64(key ^ word).to_le_bytes()
}

/// Fills `buf` with the data that belongs at `offset` of file `file_id`: byte `o`
/// of the file is byte `o mod 8` (little-endian) of the pattern word `o / 8`.
/// One compiled copy (not inlined) serves every caller, so that a benchmark
/// costs the same whichever context it runs in (traced or not).
#[inline(never)]
pub fn fill(buf: &mut [u8], seed: u64, file_id: u64, offset: u64) {
    let key = pattern_key(seed, file_id);
    let len = buf.len();
    let (head, words, tail) = split_words(len, offset);
    let (first, rest) = buf.split_at_mut(head);
    let (whole, last) = rest.split_at_mut(words * 8);
    fill_bytes(first, key, offset);
    let word0 = (offset + head as u64) / 8;
    for (k, w) in whole.chunks_exact_mut(8).enumerate() {
        w.copy_from_slice(&pattern_word(key, word0 + k as u64));
    }
    fill_bytes(last, key, offset + (len - tail) as u64);
}

/// A buffer of `len` bytes at file offset `offset` as (bytes before the first
/// whole pattern word, whole words, bytes after the last).
fn split_words(len: usize, offset: u64) -> (usize, usize, usize) {
    let head = (((8 - offset % 8) % 8) as usize).min(len);
    let words = (len - head) / 8;
    (head, words, len - head - 8 * words)
}

/// [`fill`] byte by byte, for the ends of a buffer that cut a pattern word.
fn fill_bytes(buf: &mut [u8], key: u64, offset: u64) {
    for (i, b) in buf.iter_mut().enumerate() {
        let o = offset + i as u64;
        *b = pattern_word(key, o / 8)[(o % 8) as usize];
    }
}

/// A byte read back that differs from what was written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Mismatch {
    /// File offset of the byte.
    pub offset: u64,
    /// The byte written there.
    pub expected: u8,
    /// The byte read.
    pub got: u8,
}

impl Mismatch {
    /// "rank R reading `FILE` at offset O: expected 0xEE, got 0xGG", as the
    /// verification errors of IOR and IOzone report their first mismatch.
    pub fn at(&self, rank: u64, file: &str) -> String {
        format!(
            "rank {rank} reading `{file}` at offset {}: expected 0x{:02x}, got 0x{:02x}",
            self.offset, self.expected, self.got
        )
    }
}

/// Compares `buf`, read from `offset` of file `file_id`, with the pattern
/// [`fill`] writes; returns the number of differing bytes and the first one.
/// Whole words compare as integers, so the check costs about what the fill does.
#[inline(never)]
pub fn verify(buf: &[u8], seed: u64, file_id: u64, offset: u64) -> (u64, Option<Mismatch>) {
    let key = pattern_key(seed, file_id);
    let (mut count, mut first) = (0u64, None);
    let mut check = |i: usize, got: &[u8]| {
        for (k, &g) in got.iter().enumerate() {
            let o = offset + (i + k) as u64;
            let expected = pattern_word(key, o / 8)[(o % 8) as usize];
            if g != expected {
                count += 1;
                first.get_or_insert(Mismatch {
                    offset: o,
                    expected,
                    got: g,
                });
            }
        }
    };
    let (head, words, tail) = split_words(buf.len(), offset);
    check(0, &buf[..head]);
    let word0 = (offset + head as u64) / 8;
    for (k, w) in buf[head..head + 8 * words].chunks_exact(8).enumerate() {
        let got = u64::from_le_bytes(w.try_into().expect("8 bytes"));
        if got != mix64(key ^ (word0 + k as u64)) {
            check(head + 8 * k, w);
        }
    }
    check(buf.len() - tail, &buf[buf.len() - tail..]);
    (count, first)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// The definition, byte by byte.
    fn byte_at(seed: u64, file_id: u64, o: u64) -> u8 {
        pattern_word(pattern_key(seed, file_id), o / 8)[(o % 8) as usize]
    }

    proptest! {
        #[test]
        fn fill_is_the_definition_at_any_offset_and_length(
            seed in any::<u64>(), file_id in 0u64..1000, offset in 0u64..1 << 40, len in 0usize..200,
        ) {
            let mut buf = vec![0u8; len];
            fill(&mut buf, seed, file_id, offset);
            for (i, &b) in buf.iter().enumerate() {
                prop_assert_eq!(b, byte_at(seed, file_id, offset + i as u64));
            }
            prop_assert_eq!(verify(&buf, seed, file_id, offset), (0, None));
        }

        #[test]
        fn verify_counts_every_flipped_byte_and_names_the_first(
            offset in 0u64..1 << 40, len in 1usize..200, flips in proptest::collection::btree_set(0usize..200, 1..6),
        ) {
            let mut buf = vec![0u8; len];
            fill(&mut buf, 7, 3, offset);
            let flips: Vec<usize> = flips.into_iter().filter(|&f| f < len).collect();
            for &f in &flips {
                buf[f] ^= 0x5a;
            }
            let (count, first) = verify(&buf, 7, 3, offset);
            prop_assert_eq!(count, flips.len() as u64);
            prop_assert_eq!(first.map(|m| m.offset), flips.first().map(|&f| offset + f as u64));
        }
    }
}
