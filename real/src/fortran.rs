//! [`FortranUnit`]: a file accessed through the Fortran runtime (libgfortran), as a
//! Fortran program's unformatted `OPEN`/`WRITE`/`READ`/`CLOSE` do it (BTIO's
//! `fortran` and `epio` subtypes). The statements are ours (`fortran/units.f90`,
//! compiled by the build script with `$FC`, default `gfortran`); the runtime that
//! buffers, positions and writes is the compiler's, so its cost per statement is the
//! one a Fortran application pays.

use std::ffi::CStr;
use std::os::raw::{c_char, c_int};

use crate::error::{RealError, RealResult};
use piotwin_types::{FortranAccess, OpenMode, SequentialPosition};

unsafe extern "C" {
    fn piotwin_f_open(
        path: *const c_char,
        path_len: c_int,
        direct: c_int,
        recl: c_int,
        action: c_int,
        unit: *mut c_int,
        fd: *mut c_int,
        ios: *mut c_int,
        msg: *mut c_char,
    );
    fn piotwin_f_direct(
        unit: c_int,
        write: c_int,
        rec0: i64,
        nrec: i64,
        k: c_int,
        buf: *mut f64,
        ios: *mut c_int,
        msg: *mut c_char,
    );
    fn piotwin_f_sequential(
        unit: c_int,
        write: c_int,
        n: i64,
        buf: *mut f64,
        ios: *mut c_int,
        msg: *mut c_char,
    );
    fn piotwin_f_flush_or_close(unit: c_int, close_it: c_int, ios: *mut c_int, msg: *mut c_char);
}

/// The message buffer every routine of `units.f90` fills (NUL-terminated).
const MSG: usize = 256;

/// Runs one routine of `units.f90` with an `IOSTAT` and an `IOMSG`, and turns a
/// nonzero `IOSTAT` into an error naming the statement and the file.
fn statement(
    call: &'static str,
    path: &str,
    run: impl FnOnce(*mut c_int, *mut c_char),
) -> RealResult<()> {
    let mut ios: c_int = 0;
    let mut msg = [0 as c_char; MSG];
    run(&mut ios, msg.as_mut_ptr());
    if ios == 0 {
        return Ok(());
    }
    // SAFETY: the routine wrote a NUL-terminated message of at most 255 characters.
    let text = unsafe { CStr::from_ptr(msg.as_ptr()) };
    let text = text.to_string_lossy();
    Err(RealError::Fortran {
        call,
        path: path.to_string(),
        iostat: ios,
        message: if text.is_empty() {
            "the Fortran runtime gave no message".into()
        } else {
            text.into_owned()
        },
    })
}

/// An open Fortran unit of this process alone.
pub struct FortranUnit {
    unit: c_int,
    fd: c_int,
    path: String,
    access: FortranAccess,
    /// Sequential units: the records so far.
    position: SequentialPosition,
    open: bool,
}

fn invalid(call: &'static str, path: &str, reason: String) -> RealError {
    RealError::Invalid {
        call,
        path: Some(path.to_string()),
        reason,
    }
}

/// `buf` as 8-byte reals, or why not (a length off 8 bytes, a misaligned buffer).
fn reals(call: &'static str, path: &str, buf: &[u8]) -> RealResult<usize> {
    if !buf.len().is_multiple_of(8) || buf.as_ptr().align_offset(8) != 0 {
        return Err(invalid(
            call,
            path,
            format!(
                "Fortran I/O lists here are 8-byte reals: the buffer of {} bytes must be a multiple \
                 of 8 long and 8-byte aligned",
                buf.len()
            ),
        ));
    }
    Ok(buf.len() / 8)
}

impl FortranUnit {
    /// `OPEN(NEWUNIT=…, FILE=path, FORM='UNFORMATTED', ACCESS=…)`: `Create`
    /// writes, `CreateReadWrite` reads and writes (both create a missing file and
    /// truncate nothing), `Read` reads an existing file. Sequential units start at
    /// the file's beginning.
    pub fn open(path: &str, mode: OpenMode, access: FortranAccess) -> RealResult<FortranUnit> {
        let (direct, recl) = match access {
            FortranAccess::Direct { recl } => (1, recl),
            FortranAccess::Sequential => (0, 0),
        };
        let recl = c_int::try_from(recl).map_err(|_| {
            invalid(
                "OPEN",
                path,
                format!("RECL={recl} exceeds Fortran's integer"),
            )
        })?;
        if let Some(why) = access.refuses(0, 0) {
            return Err(invalid("OPEN", path, why));
        }
        let action = match mode {
            OpenMode::Create => 0,
            OpenMode::CreateReadWrite => 1,
            OpenMode::Read => 2,
        };
        let len = c_int::try_from(path.len())
            .map_err(|_| invalid("OPEN", path, "the path is too long".into()))?;
        let (mut unit, mut fd): (c_int, c_int) = (-1, -1);
        statement("OPEN", path, |ios, msg| {
            // SAFETY: `path` is valid for `len` bytes; the out-parameters are live locals.
            unsafe {
                piotwin_f_open(
                    path.as_ptr().cast(),
                    len,
                    direct,
                    recl,
                    action,
                    &mut unit,
                    &mut fd,
                    ios,
                    msg,
                )
            }
        })?;
        Ok(FortranUnit {
            unit,
            fd,
            path: path.to_string(),
            access,
            position: SequentialPosition::default(),
            open: true,
        })
    }

    /// The path the unit was opened with.
    pub fn path(&self) -> &str {
        &self.path
    }

    /// Direct access: `WRITE(REC=offset/recl + 1 + i)` of each record of `buf`;
    /// sequential: one `WRITE` of `buf` as the next record, `offset` being where
    /// the previous record's contents ended. Returns `buf.len()`.
    pub fn write_at(&mut self, offset: u64, buf: &[u8]) -> RealResult<usize> {
        let n = self.check("WRITE", offset, buf)?;
        // The statements only read the buffer when they write (`write` = 1).
        self.statements(true, offset, n, buf.as_ptr().cast_mut().cast())?;
        Ok(buf.len())
    }

    /// The reads matching [`FortranUnit::write_at`]: whole records into `buf`
    /// (a sequential `READ` takes the next record's first `buf.len()` bytes).
    /// Reading past the last record is an error (`IOSTAT` of end of file).
    pub fn read_at(&mut self, offset: u64, buf: &mut [u8]) -> RealResult<usize> {
        let n = self.check("READ", offset, buf)?;
        self.statements(false, offset, n, buf.as_mut_ptr().cast())?;
        Ok(buf.len())
    }

    /// The `WRITE` (or `READ`) statements of `n` reals at `reals`, checked by
    /// [`FortranUnit::check`]: one per record of a direct-access unit, one
    /// record of a sequential unit.
    fn statements(
        &mut self,
        write: bool,
        offset: u64,
        n: usize,
        reals: *mut f64,
    ) -> RealResult<()> {
        let call = if write { "WRITE" } else { "READ" };
        let (unit, path, w) = (self.unit, self.path.as_str(), c_int::from(write));
        match self.access {
            FortranAccess::Direct { recl } => {
                let k = recl as usize / 8;
                let rec0 = (offset / u64::from(recl)) as i64 + 1;
                // SAFETY: `reals` holds `n` aligned reals, `n / k` records of `k`.
                statement(call, path, |ios, msg| unsafe {
                    piotwin_f_direct(unit, w, rec0, (n / k) as i64, k as c_int, reals, ios, msg)
                })
            }
            FortranAccess::Sequential => {
                // SAFETY: `reals` holds `n` aligned reals.
                statement(call, path, |ios, msg| unsafe {
                    piotwin_f_sequential(unit, w, n as i64, reals, ios, msg)
                })?;
                self.position.advance(8 * n as u64);
                Ok(())
            }
        }
    }

    fn check(&self, call: &'static str, offset: u64, buf: &[u8]) -> RealResult<usize> {
        let n = reals(call, &self.path, buf)?;
        if let Some(why) = self.access.refuses(offset, buf.len() as u64) {
            return Err(invalid(call, &self.path, why));
        }
        if self.access == FortranAccess::Sequential
            && let Some(why) = self.position.refuses(offset)
        {
            return Err(invalid(call, &self.path, why));
        }
        Ok(n)
    }

    /// Sequential units: the file's byte position of the next record (contents
    /// and markers so far).
    pub fn file_position(&self) -> u64 {
        self.position.file_bytes()
    }

    /// `FLUSH`: the runtime's buffer to the OS.
    pub fn flush(&self) -> RealResult<()> {
        let unit = self.unit;
        // SAFETY: plain values and live out-parameters.
        statement("FLUSH", &self.path, |ios, msg| unsafe {
            piotwin_f_flush_or_close(unit, 0, ios, msg)
        })
    }

    /// `FLUSH`, then `fsync(2)` of the unit's descriptor (`FNUM`).
    pub fn sync(&self) -> RealResult<()> {
        self.flush()?;
        // SAFETY: the runtime's descriptor stays open while the unit is.
        match unsafe { libc::fsync(self.fd) } {
            0 => Ok(()),
            _ => Err(crate::posix::os_error("fsync", &self.path)),
        }
    }

    /// `FLUSH`, `fsync(2)`, then drops the page cache's copy (as [`crate::drop_cache`]).
    pub fn drop_cache(&self) -> RealResult<()> {
        self.flush()?;
        crate::drop_cache(&self.path)
    }

    /// Size in bytes after a `FLUSH` (`fstat(2)` of the unit's descriptor).
    pub fn size(&self) -> RealResult<u64> {
        self.flush()?;
        let mut st: libc::stat = unsafe { std::mem::zeroed() };
        // SAFETY: a live descriptor and a zeroed stat buffer.
        match unsafe { libc::fstat(self.fd, &mut st) } {
            0 => Ok(st.st_size as u64),
            _ => Err(crate::posix::os_error("fstat", &self.path)),
        }
    }

    /// `CLOSE`: the runtime writes out its buffer and closes the descriptor.
    pub fn close(mut self) -> RealResult<()> {
        self.open = false;
        let unit = self.unit;
        // SAFETY: plain values and live out-parameters.
        statement("CLOSE", &self.path, |ios, msg| unsafe {
            piotwin_f_flush_or_close(unit, 1, ios, msg)
        })
    }
}

impl Drop for FortranUnit {
    /// A unit dropped unclosed (an error path) is closed; its error, if any, is
    /// lost as `close(2)`'s is for a dropped `std::fs::File`.
    fn drop(&mut self) {
        if self.open {
            let (mut ios, mut msg) = (0, [0 as c_char; MSG]);
            // SAFETY: plain values and live out-parameters.
            unsafe { piotwin_f_flush_or_close(self.unit, 1, &mut ios, msg.as_mut_ptr()) };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reals_bytes(values: impl Iterator<Item = f64>) -> Vec<u8> {
        values.flat_map(f64::to_ne_bytes).collect()
    }

    #[test]
    fn direct_records_land_at_their_offsets_and_read_back() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("d").to_str().unwrap().to_string();
        let access = FortranAccess::Direct { recl: 40 };
        let mut u = FortranUnit::open(&path, OpenMode::Create, access).unwrap();
        // Records 3..=6 (offset 80), then record 1: a hole at record 2.
        let row = reals_bytes((0..20).map(|i| i as f64 + 0.5));
        u.write_at(80, &row).unwrap();
        u.write_at(0, &reals_bytes((100..105).map(f64::from)))
            .unwrap();
        assert_eq!(u.size().unwrap(), 240);
        u.close().unwrap();
        let bytes = std::fs::read(&path).unwrap();
        assert_eq!(&bytes[80..240], &row[..]);
        assert_eq!(&bytes[0..8], &100f64.to_ne_bytes());
        let mut r = FortranUnit::open(&path, OpenMode::Read, access).unwrap();
        let mut back = vec![0u8; 160];
        r.read_at(80, &mut back).unwrap();
        assert_eq!(back, row);
        let err = r.read_at(240, &mut vec![0u8; 40]).unwrap_err().to_string();
        assert!(err.contains("READ on") && err.contains("IOSTAT"), "{err}");
        let off = r.read_at(4, &mut vec![0u8; 40]).unwrap_err().to_string();
        assert!(off.contains("multiples of 40"), "{off}");
    }

    #[test]
    fn sequential_records_carry_markers_and_go_in_order() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s").to_str().unwrap().to_string();
        let mut u = FortranUnit::open(&path, OpenMode::Create, FortranAccess::Sequential).unwrap();
        let a = reals_bytes((0..3).map(f64::from));
        let b = reals_bytes((10..12).map(f64::from));
        u.write_at(0, &a).unwrap();
        let skip = u.write_at(100, &b).unwrap_err().to_string();
        assert!(skip.contains("begin at 24, not 100"), "{skip}");
        u.write_at(24, &b).unwrap();
        assert_eq!(u.file_position(), 24 + 16 + 16);
        u.close().unwrap();
        let bytes = std::fs::read(&path).unwrap();
        assert_eq!(bytes.len(), 24 + 16 + 16);
        assert_eq!(&bytes[0..4], &24u32.to_ne_bytes());
        assert_eq!(&bytes[4..28], &a[..]);
        assert_eq!(&bytes[28..32], &24u32.to_ne_bytes());
        let mut r = FortranUnit::open(&path, OpenMode::Read, FortranAccess::Sequential).unwrap();
        let mut back = vec![0u8; 24];
        r.read_at(0, &mut back).unwrap();
        assert_eq!(back, a);
        let mut back = vec![0u8; 16];
        r.read_at(24, &mut back).unwrap();
        assert_eq!(back, b);
        assert!(r.read_at(40, &mut back).is_err(), "past the last record");
    }

    #[test]
    fn a_missing_file_read_names_open_and_the_path() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("none").to_str().unwrap().to_string();
        let err = FortranUnit::open(&path, OpenMode::Read, FortranAccess::Sequential)
            .err()
            .unwrap()
            .to_string();
        assert!(
            err.starts_with("OPEN on `") && err.contains("none"),
            "{err}"
        );
    }
}
