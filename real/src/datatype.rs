//! [`MpiType`]: an MPI derived datatype built from a [`Datatype`] description.
//!
//! Built bottom-up with the `MPI_Type_create_*` constructors (MPI 3.1 §4.1);
//! every intermediate type is freed as soon as its parent exists (MPI keeps what
//! it needs), and the final type is committed and freed on drop, so no handle
//! leaks (MPICH's yaksa reports leaked handles at `MPI_Finalize`). Counts,
//! block lengths and array sizes above `i32::MAX` are errors, never wrapped.

use std::os::raw::c_int;

use mpi::ffi;
use piotwin_types::{DARG_DEFAULT, Datatype, Distrib, Order};

use crate::error::{RealError, RealResult, check, to_int, to_int_signed};

/// A committed MPI datatype; predefined types are borrowed, derived ones freed on drop.
pub struct MpiType {
    raw: ffi::MPI_Datatype,
    derived: bool,
}

impl MpiType {
    /// `MPI_UINT8_T` (rsmpi has no `MPI_BYTE`; the two are the same 8 bits).
    pub fn byte() -> MpiType {
        MpiType {
            raw: unsafe { ffi::RSMPI_UINT8_T },
            derived: false,
        }
    }

    /// Builds and commits the MPI datatype `dt` describes
    /// (`Byte` → `MPI_UINT8_T`, `Double` → `MPI_DOUBLE`).
    pub fn build(dt: &Datatype) -> RealResult<MpiType> {
        let t = build_uncommitted(dt)?;
        t.commit()
    }

    /// An `MPI_Type_create_hindexed` of bytes over `(byte displacement, length)`
    /// blocks, committed: the filetype of an aggregated collective access.
    pub fn byte_blocks(blocks: &[(u64, u64)]) -> RealResult<MpiType> {
        const CALL: &str = "MPI_Type_create_hindexed";
        let n = to_int(blocks.len() as u64, "block count", CALL, None)?;
        let mut lens = Vec::with_capacity(blocks.len());
        let mut disps = Vec::with_capacity(blocks.len());
        for &(disp, len) in blocks {
            lens.push(to_int(len, "block length", CALL, None)?);
            disps.push(to_aint(disp as i128, "displacement", CALL)?);
        }
        let mut raw = unsafe { ffi::RSMPI_DATATYPE_NULL };
        // SAFETY: arrays of `n` elements; out-parameter owned by the result.
        check(
            unsafe {
                ffi::MPI_Type_create_hindexed(
                    n,
                    lens.as_ptr(),
                    disps.as_ptr(),
                    ffi::RSMPI_UINT8_T,
                    &mut raw,
                )
            },
            CALL,
            None,
        )?;
        MpiType { raw, derived: true }.commit()
    }

    pub(crate) fn raw(&self) -> ffi::MPI_Datatype {
        self.raw
    }

    /// `MPI_Type_size_x`: data bytes in one instance.
    pub fn size(&self) -> RealResult<u64> {
        let mut size: ffi::MPI_Count = 0;
        // SAFETY: valid handle, out-parameter.
        check(
            unsafe { ffi::MPI_Type_size_x(self.raw, &mut size) },
            "MPI_Type_size_x",
            None,
        )?;
        Ok(size as u64)
    }

    /// `MPI_Type_get_extent_x`: `(lower bound, extent)` in bytes.
    pub fn lb_extent(&self) -> RealResult<(i64, u64)> {
        let (mut lb, mut extent): (ffi::MPI_Count, ffi::MPI_Count) = (0, 0);
        // SAFETY: valid handle, out-parameters.
        check(
            unsafe { ffi::MPI_Type_get_extent_x(self.raw, &mut lb, &mut extent) },
            "MPI_Type_get_extent_x",
            None,
        )?;
        Ok((lb as i64, extent as u64))
    }

    fn commit(mut self) -> RealResult<MpiType> {
        if self.derived {
            // SAFETY: a derived handle we own.
            check(
                unsafe { ffi::MPI_Type_commit(&mut self.raw) },
                "MPI_Type_commit",
                None,
            )?;
        }
        Ok(self)
    }
}

impl Drop for MpiType {
    fn drop(&mut self) {
        if self.derived {
            // SAFETY: a derived handle we own; MPI resets it to MPI_DATATYPE_NULL.
            unsafe { ffi::MPI_Type_free(&mut self.raw) };
        }
    }
}

fn to_aint(v: i128, what: &str, call: &'static str) -> RealResult<ffi::MPI_Aint> {
    ffi::MPI_Aint::try_from(v).map_err(|_| RealError::Invalid {
        call,
        path: None,
        reason: format!("{what} = {v} is outside MPI_Aint's range"),
    })
}

fn ints(values: &[u64], what: &str, call: &'static str) -> RealResult<Vec<c_int>> {
    values
        .iter()
        .map(|&v| to_int(v, what, call, None))
        .collect()
}

fn order(o: Order) -> c_int {
    match o {
        Order::C => ffi::MPI_ORDER_C as c_int,
        Order::Fortran => ffi::MPI_ORDER_FORTRAN as c_int,
    }
}

fn dims_match(call: &'static str, lens: &[usize]) -> RealResult<c_int> {
    let n = lens[0];
    if lens.iter().any(|&l| l != n) {
        return Err(RealError::Invalid {
            call,
            path: None,
            reason: format!("per-dimension arrays differ in length: {lens:?}"),
        });
    }
    to_int(n as u64, "number of dimensions", call, None)
}

/// Runs one `MPI_Type_create_*` that writes a new handle, owning the result.
fn create(
    call: &'static str,
    f: impl FnOnce(*mut ffi::MPI_Datatype) -> c_int,
) -> RealResult<MpiType> {
    let mut raw = unsafe { ffi::RSMPI_DATATYPE_NULL };
    check(f(&mut raw), call, None)?;
    Ok(MpiType { raw, derived: true })
}

fn build_uncommitted(dt: &Datatype) -> RealResult<MpiType> {
    // SAFETY (all `unsafe` below): every array passed holds the count given with it,
    // every input handle is alive for the call, and the new handle is owned by the
    // returned `MpiType`. Inner types are freed when they go out of scope, after
    // the constructor that uses them has returned.
    match dt {
        Datatype::Byte => Ok(MpiType::byte()),
        Datatype::Double => Ok(MpiType {
            raw: unsafe { ffi::RSMPI_DOUBLE },
            derived: false,
        }),
        Datatype::Contiguous { count, inner } => {
            const CALL: &str = "MPI_Type_contiguous";
            let n = to_int(*count, "count", CALL, None)?;
            let inner = build_uncommitted(inner)?;
            create(CALL, |out| unsafe {
                ffi::MPI_Type_contiguous(n, inner.raw, out)
            })
        }
        Datatype::Vector {
            count,
            blocklen,
            stride,
            inner,
        } => {
            const CALL: &str = "MPI_Type_vector";
            let n = to_int(*count, "count", CALL, None)?;
            let b = to_int(*blocklen, "blocklen", CALL, None)?;
            let s = to_int_signed(*stride, "stride", CALL)?;
            let inner = build_uncommitted(inner)?;
            create(CALL, |out| unsafe {
                ffi::MPI_Type_vector(n, b, s, inner.raw, out)
            })
        }
        Datatype::Hvector {
            count,
            blocklen,
            stride_bytes,
            inner,
        } => {
            const CALL: &str = "MPI_Type_create_hvector";
            let n = to_int(*count, "count", CALL, None)?;
            let b = to_int(*blocklen, "blocklen", CALL, None)?;
            let s = to_aint(*stride_bytes as i128, "stride_bytes", CALL)?;
            let inner = build_uncommitted(inner)?;
            create(CALL, |out| unsafe {
                ffi::MPI_Type_create_hvector(n, b, s, inner.raw, out)
            })
        }
        Datatype::Hindexed { blocks, inner } => {
            const CALL: &str = "MPI_Type_create_hindexed";
            let n = to_int(blocks.len() as u64, "block count", CALL, None)?;
            let lens: Vec<c_int> = blocks
                .iter()
                .map(|&(_, l)| to_int(l, "block length", CALL, None))
                .collect::<RealResult<_>>()?;
            let disps: Vec<ffi::MPI_Aint> = blocks
                .iter()
                .map(|&(d, _)| to_aint(d as i128, "displacement", CALL))
                .collect::<RealResult<_>>()?;
            let inner = build_uncommitted(inner)?;
            create(CALL, |out| unsafe {
                ffi::MPI_Type_create_hindexed(n, lens.as_ptr(), disps.as_ptr(), inner.raw, out)
            })
        }
        Datatype::Subarray {
            sizes,
            subsizes,
            starts,
            order: o,
            inner,
        } => {
            const CALL: &str = "MPI_Type_create_subarray";
            let nd = dims_match(CALL, &[sizes.len(), subsizes.len(), starts.len()])?;
            let (sz, sub, st) = (
                ints(sizes, "size", CALL)?,
                ints(subsizes, "subsize", CALL)?,
                ints(starts, "start", CALL)?,
            );
            let inner = build_uncommitted(inner)?;
            create(CALL, |out| unsafe {
                ffi::MPI_Type_create_subarray(
                    nd,
                    sz.as_ptr(),
                    sub.as_ptr(),
                    st.as_ptr(),
                    order(*o),
                    inner.raw,
                    out,
                )
            })
        }
        Datatype::Darray {
            size,
            rank,
            gsizes,
            distribs,
            dargs,
            psizes,
            order: o,
            inner,
        } => {
            const CALL: &str = "MPI_Type_create_darray";
            let nd = dims_match(
                CALL,
                &[gsizes.len(), distribs.len(), dargs.len(), psizes.len()],
            )?;
            let sz = to_int(*size, "size", CALL, None)?;
            let rk = to_int(*rank, "rank", CALL, None)?;
            let gs = ints(gsizes, "gsize", CALL)?;
            let ps = ints(psizes, "psize", CALL)?;
            let ds: Vec<c_int> = distribs
                .iter()
                .map(|d| match d {
                    Distrib::Block => ffi::MPI_DISTRIBUTE_BLOCK as c_int,
                    Distrib::Cyclic => ffi::MPI_DISTRIBUTE_CYCLIC as c_int,
                    Distrib::None => ffi::MPI_DISTRIBUTE_NONE as c_int,
                })
                .collect();
            let da: Vec<c_int> = dargs
                .iter()
                .map(|&a| match a {
                    DARG_DEFAULT => Ok(ffi::MPI_DISTRIBUTE_DFLT_DARG as c_int),
                    a => to_int_signed(a, "darg", CALL),
                })
                .collect::<RealResult<_>>()?;
            let inner = build_uncommitted(inner)?;
            create(CALL, |out| unsafe {
                ffi::MPI_Type_create_darray(
                    sz,
                    rk,
                    nd,
                    gs.as_ptr(),
                    ds.as_ptr(),
                    da.as_ptr(),
                    ps.as_ptr(),
                    order(*o),
                    inner.raw,
                    out,
                )
            })
        }
        Datatype::Struct { fields } => {
            const CALL: &str = "MPI_Type_create_struct";
            let n = to_int(fields.len() as u64, "field count", CALL, None)?;
            let lens: Vec<c_int> = fields
                .iter()
                .map(|(_, l, _)| to_int(*l, "block length", CALL, None))
                .collect::<RealResult<_>>()?;
            let disps: Vec<ffi::MPI_Aint> = fields
                .iter()
                .map(|(d, _, _)| to_aint(*d as i128, "displacement", CALL))
                .collect::<RealResult<_>>()?;
            let types: Vec<MpiType> = fields
                .iter()
                .map(|(_, _, t)| build_uncommitted(t))
                .collect::<RealResult<_>>()?;
            let raws: Vec<ffi::MPI_Datatype> = types.iter().map(|t| t.raw).collect();
            create(CALL, |out| unsafe {
                ffi::MPI_Type_create_struct(n, lens.as_ptr(), disps.as_ptr(), raws.as_ptr(), out)
            })
        }
        Datatype::Resized { lb, extent, inner } => {
            const CALL: &str = "MPI_Type_create_resized";
            let l = to_aint(*lb as i128, "lb", CALL)?;
            let e = to_aint(*extent as i128, "extent", CALL)?;
            let inner = build_uncommitted(inner)?;
            create(CALL, |out| unsafe {
                ffi::MPI_Type_create_resized(inner.raw, l, e, out)
            })
        }
    }
}
