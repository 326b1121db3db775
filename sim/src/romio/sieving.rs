//! The planner of independent noncontiguous I/O: data sieving (ROMIO's
//! `ad_read_str.c` / `ad_write_str.c`, Thakur, Gropp & Lusk 1999 §3).
//!
//! Instead of one file-system request per extent, ROMIO reads a window of up to
//! `ind_rd_buffer_size` (`ind_wr_buffer_size` for writes) bytes starting at the
//! first byte not yet in its buffer and ending no later than the access's last
//! byte, and copies the wanted pieces out; extents past the window start a new
//! one (gaps larger than a window are skipped). Writes do read-modify-write:
//! lock the window, read it, modify it, write it back, unlock.

use piotwin_types::Access;

use super::hints::{Effective, Switch};

/// How an independent access reaches the file system.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Method {
    /// One request per extent (contiguous access, or data sieving disabled).
    Direct,
    /// Data sieving with windows of this many bytes.
    Sieve(u64),
}

/// The method ROMIO takes for an independent access of `extents` extents:
/// data sieving for a noncontiguous one unless `romio_ds_{read,write}` is disabled
/// (automatic means on, as in ROMIO's generic driver).
pub fn method(access: Access, eff: &Effective, extents: usize) -> Method {
    let (s, buf) = match access {
        Access::Read => (eff.ds_read, eff.ind_rd_buffer_size),
        Access::Write => (eff.ds_write, eff.ind_wr_buffer_size),
    };
    if extents <= 1 || s == Switch::Disable {
        Method::Direct
    } else {
        Method::Sieve(buf)
    }
}

/// Lazy iterator over the sieving windows `(offset, len)` covering ascending
/// extents whose data ends at `end` (exclusive).
pub struct Windows<I> {
    extents: I,
    buffer: u64,
    end: u64,
    /// Everything before this offset is in a window already.
    covered: u64,
    /// The rest of an extent longer than the window it started in.
    rest: Option<(u64, u64)>,
}

/// The windows of data sieving with a `buffer`-byte buffer over `extents`
/// (ascending) whose data ends at `end` (exclusive).
pub fn windows<I: Iterator<Item = (u64, u64)>>(extents: I, buffer: u64, end: u64) -> Windows<I> {
    Windows {
        extents,
        buffer: buffer.max(1),
        end,
        covered: 0,
        rest: None,
    }
}

impl<I: Iterator<Item = (u64, u64)>> Iterator for Windows<I> {
    type Item = (u64, u64);

    fn next(&mut self) -> Option<(u64, u64)> {
        loop {
            let (o, l) = match self.rest.take() {
                Some(x) => x,
                None => self.extents.next()?,
            };
            let e = o + l;
            if l == 0 || e <= self.covered {
                continue;
            }
            let start = o.max(self.covered);
            let stop = (start + self.buffer).min(self.end).max(start + 1);
            self.covered = stop;
            if e > stop {
                self.rest = Some((stop, e - stop));
            }
            return Some((start, stop - start));
        }
    }
}
