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
pub fn fill(buf: &mut [u8], seed: u64, file_id: u64, offset: u64) {
    let key = pattern_key(seed, file_id);
    let mut i = 0;
    while i < buf.len() {
        let o = offset + i as u64;
        let w = pattern_word(key, o / 8);
        let start = (o % 8) as usize;
        let n = (8 - start).min(buf.len() - i);
        buf[i..i + n].copy_from_slice(&w[start..start + n]);
        i += n;
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
pub fn verify(buf: &[u8], seed: u64, file_id: u64, offset: u64) -> (u64, Option<Mismatch>) {
    let key = pattern_key(seed, file_id);
    let (mut count, mut first) = (0u64, None);
    let mut i = 0;
    while i < buf.len() {
        let o = offset + i as u64;
        let w = pattern_word(key, o / 8);
        let start = (o % 8) as usize;
        let n = (8 - start).min(buf.len() - i);
        // Whole words compare as integers: the check then costs about what the
        // fill does (it runs inside the timed region of a real read).
        let same = match n {
            8 => {
                u64::from_le_bytes(buf[i..i + 8].try_into().expect("8 bytes"))
                    == u64::from_le_bytes(w)
            }
            _ => buf[i..i + n] == w[start..start + n],
        };
        if !same {
            for k in 0..n {
                if buf[i + k] != w[start + k] {
                    count += 1;
                    first.get_or_insert(Mismatch {
                        offset: o + k as u64,
                        expected: w[start + k],
                        got: buf[i + k],
                    });
                }
            }
        }
        i += n;
    }
    (count, first)
}
