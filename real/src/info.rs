//! [`Info`]: an `MPI_Info` built from [`Hints`], and the way back.

use std::ffi::CString;
use std::os::raw::{c_char, c_int};

use mpi::ffi;
use piotwin_types::Hints;

use crate::error::{RealError, RealResult, check};

/// An `MPI_Info` object holding hints; freed (`MPI_Info_free`) on drop.
pub struct Info {
    raw: ffi::MPI_Info,
}

impl Info {
    /// `MPI_Info_create` plus one `MPI_Info_set` per hint.
    pub fn from_hints(hints: &Hints) -> RealResult<Info> {
        let mut raw = unsafe { ffi::RSMPI_INFO_NULL };
        // SAFETY: out-parameter; the handle is owned by the returned value.
        check(
            unsafe { ffi::MPI_Info_create(&mut raw) },
            "MPI_Info_create",
            None,
        )?;
        let info = Info { raw };
        for (key, value) in hints.iter() {
            let k = c_string(key, "MPI_Info_set")?;
            let v = c_string(value, "MPI_Info_set")?;
            // SAFETY: valid handle and NUL-terminated strings; MPI copies them.
            check(
                unsafe { ffi::MPI_Info_set(info.raw, k.as_ptr(), v.as_ptr()) },
                "MPI_Info_set",
                None,
            )?;
        }
        Ok(info)
    }

    pub(crate) fn raw(&self) -> ffi::MPI_Info {
        self.raw
    }

    /// Takes ownership of an info handle returned by MPI (e.g. `MPI_File_get_info`).
    pub(crate) fn from_raw(raw: ffi::MPI_Info) -> Info {
        Info { raw }
    }

    /// Every key and value, read back with `MPI_Info_get_nthkey` and `MPI_Info_get`.
    pub fn to_hints(&self) -> RealResult<Hints> {
        let mut nkeys: c_int = 0;
        // SAFETY: valid handle, out-parameter.
        check(
            unsafe { ffi::MPI_Info_get_nkeys(self.raw, &mut nkeys) },
            "MPI_Info_get_nkeys",
            None,
        )?;
        let mut hints = Hints::new();
        for n in 0..nkeys {
            let mut key = vec![0 as c_char; ffi::MPI_MAX_INFO_KEY as usize + 1];
            // SAFETY: the buffer holds MPI_MAX_INFO_KEY characters plus the NUL.
            check(
                unsafe { ffi::MPI_Info_get_nthkey(self.raw, n, key.as_mut_ptr()) },
                "MPI_Info_get_nthkey",
                None,
            )?;
            let mut len: c_int = 0;
            let mut flag: c_int = 0;
            // SAFETY: `key` is NUL-terminated by MPI.
            check(
                unsafe { ffi::MPI_Info_get_valuelen(self.raw, key.as_ptr(), &mut len, &mut flag) },
                "MPI_Info_get_valuelen",
                None,
            )?;
            if flag == 0 {
                continue;
            }
            let mut value = vec![0 as c_char; len as usize + 1];
            // SAFETY: the buffer holds `len` characters plus the NUL.
            check(
                unsafe {
                    ffi::MPI_Info_get(self.raw, key.as_ptr(), len, value.as_mut_ptr(), &mut flag)
                },
                "MPI_Info_get",
                None,
            )?;
            if flag != 0 {
                hints.set(from_c(&key), from_c(&value));
            }
        }
        Ok(hints)
    }
}

impl Drop for Info {
    fn drop(&mut self) {
        if self.raw != unsafe { ffi::RSMPI_INFO_NULL } {
            // SAFETY: we own the handle; MPI sets it to MPI_INFO_NULL.
            unsafe { ffi::MPI_Info_free(&mut self.raw) };
        }
    }
}

pub(crate) fn c_string(s: &str, call: &'static str) -> RealResult<CString> {
    CString::new(s).map_err(|_| RealError::Invalid {
        call,
        path: None,
        reason: format!("`{s}` contains a NUL byte"),
    })
}

fn from_c(buf: &[c_char]) -> String {
    let bytes: Vec<u8> = buf
        .iter()
        .take_while(|&&c| c != 0)
        .map(|&c| c as u8)
        .collect();
    String::from_utf8_lossy(&bytes).into_owned()
}
