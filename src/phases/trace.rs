//! piotwin's own trace (`run --trace`), CSV with the columns of
//! [`crate::backend::trace::TRACE_COLUMNS`]: its data calls as [`Record`]s.

use super::{Access, Pointer, Record, Trace, TraceError};

/// What an operation name says: (access, MPI-IO, collective, blocking, pointer),
/// or `None` for a call that moves no data (open, close, sync, set_view, wait).
pub fn classify(operation: &str) -> Option<(Access, bool, Option<bool>, bool, Pointer)> {
    match operation {
        "pwrite" => return Some((Access::Write, false, Some(false), true, Pointer::Explicit)),
        "pread" => return Some((Access::Read, false, Some(false), true, Pointer::Explicit)),
        _ => {}
    }
    let call = operation.strip_prefix("MPI_File_")?;
    let (blocking, call) = match call.strip_prefix('i') {
        Some(rest) if rest.starts_with("write") || rest.starts_with("read") => (false, rest),
        _ => (true, call),
    };
    let (access, form) = if let Some(f) = call.strip_prefix("write") {
        (Access::Write, f)
    } else if let Some(f) = call.strip_prefix("read") {
        (Access::Read, f)
    } else {
        return None;
    };
    let (collective, pointer) = match form {
        "" => (false, Pointer::Individual),
        "_all" => (true, Pointer::Individual),
        "_at" => (false, Pointer::Explicit),
        "_at_all" => (true, Pointer::Explicit),
        "_shared" => (false, Pointer::Shared),
        "_ordered" => (true, Pointer::Shared),
        _ => return None,
    };
    Some((access, true, Some(collective), blocking, pointer))
}

/// Reads a piotwin trace: its data calls, in rank then tick order.
pub fn read(file: &str, text: &str) -> Result<Trace, TraceError> {
    let err = |line: usize, message: String| TraceError {
        file: file.into(),
        line,
        message,
    };
    let mut rdr = csv::ReaderBuilder::new().from_reader(text.as_bytes());
    let mut records = Vec::new();
    for (k, row) in rdr.records().enumerate() {
        let line = k + 2;
        let row = row.map_err(|e| err(line, e.to_string()))?;
        if row.len() != 9 {
            return Err(err(
                line,
                format!("{} fields; a trace row has 9", row.len()),
            ));
        }
        let num = |i: usize| -> Result<u64, TraceError> {
            row[i].parse().map_err(|_| {
                err(
                    line,
                    format!(
                        "column `{}`: `{}` is not a whole number",
                        crate::backend::trace::TRACE_COLUMNS[i],
                        &row[i]
                    ),
                )
            })
        };
        let real = |i: usize| -> Result<f64, TraceError> {
            row[i].parse().map_err(|_| {
                err(
                    line,
                    format!(
                        "column `{}`: `{}` is not a number",
                        crate::backend::trace::TRACE_COLUMNS[i],
                        &row[i]
                    ),
                )
            })
        };
        let Some((access, mpiio, collective, blocking, pointer)) = classify(&row[2]) else {
            continue;
        };
        records.push(Record {
            rank: num(0)? as usize,
            file: row[1].to_string(),
            operation: row[2].to_string(),
            access,
            mpiio,
            collective,
            blocking,
            pointer,
            offset: if row[3].is_empty() {
                None
            } else {
                Some(num(3)?)
            },
            bytes: num(5)?,
            tick: num(6)?,
            start: real(7)?,
            duration: real(8)?,
        });
    }
    records.sort_by_key(|r| (r.rank, r.tick));
    Ok(Trace {
        records,
        warnings: Vec::new(),
    })
}
