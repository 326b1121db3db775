//! Cross-check of `piotwin_types::Datatype`'s own arithmetic (`size`, `lb`,
//! `extent`) against MPI's (`MPI_Type_size_x`, `MPI_Type_get_extent_x`) for every
//! variant, on 4 ranks (the darray case differs per rank).
//!
//! NOTE: this needs `Datatype::size`/`lb`/`extent` from piotwin-types, which are
//! implemented on another branch; until that is merged this target fails with
//! `not yet implemented`. `mpi_io` checks the same MPI values against hand-worked
//! numbers and does not depend on them.

mod common;

use std::path::Path;
use std::process::ExitCode;

use piotwin_real::{Comm, MpiType};

use common::datatype_cases;

fn main() -> ExitCode {
    common::main(4, &[("Datatype arithmetic matches MPI", matches_mpi)])
}

fn matches_mpi(_: &Path) -> Result<(), String> {
    let r = Comm::world().rank() as u64;
    for (name, d, _, _) in datatype_cases(r) {
        let t = MpiType::build(&d).map_err(|e| format!("{name}: {e}"))?;
        let mpi = (
            t.size().map_err(|e| e.to_string())?,
            t.lb_extent().map_err(|e| e.to_string())?,
        );
        let ours = (d.size(), (d.lb(), d.extent()));
        ensure!(
            mpi == ours,
            "{name}: MPI (size, (lb, extent)) = {mpi:?}, Datatype says {ours:?}"
        );
    }
    Ok(())
}
