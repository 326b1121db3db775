//! A parallel file system (Lustre, PVFS2, GPFS-like): files striped over the
//! servers (Lustre manual, "Managing File Layout"): stripe `k` of size
//! `stripe_size` goes to server `(first + k mod stripe_count) mod servers`,
//! `first` round-robin over files, at object offset `⌊k/stripe_count⌋·stripe_size`.

use std::collections::BTreeMap;

use super::{FileSystemKind, Pieces, RomioDriver};

pub(crate) struct Parallel {
    pub(crate) stripe_size: u64,
    pub(crate) stripe_count: usize,
}

impl FileSystemKind for Parallel {
    fn map(&self, file: usize, a: u64, b: u64, servers: usize) -> BTreeMap<usize, Pieces> {
        let mut out: BTreeMap<usize, Pieces> = BTreeMap::new();
        let (ss, sc) = (self.stripe_size, self.stripe_count as u64);
        let n = servers as u64;
        let first = (file as u64 * sc) % n;
        let mut x = a;
        while x < b {
            let k = x / ss;
            let take = (ss - x % ss).min(b - x);
            let srv = ((first + k % sc) % n) as usize;
            let obj = (k / sc) * ss + x % ss;
            let v = out.entry(srv).or_default();
            match v.last_mut() {
                Some(l) if l.0 + l.2 == x && l.1 + l.2 == obj => l.2 += take,
                _ => v.push((x, obj, take)),
            }
            x += take;
        }
        out
    }
    fn flush_on_close(&self) -> bool {
        false
    }
    fn stripes_across_servers(&self) -> bool {
        self.stripe_count > 1
    }
    fn romio(&self) -> RomioDriver {
        RomioDriver {
            fs_type: "LUSTRE:",
            striping_unit: self.stripe_size,
            striping_factor: Some(self.stripe_count),
            layout_fixed: true,
        }
    }
}
