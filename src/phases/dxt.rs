//! Darshan's DXT traces as `darshan-dxt-parser` prints them: one block per
//! file and rank (`# DXT, file_id: …, file_name: …`, `# DXT, rank: …`, the
//! column line `# Module Rank Wt/Rd Segment Offset Length Start(s) End(s)`),
//! then one row per call. What varies between Darshan versions:
//!
//! * before 3.2.0 `X_MPIIO` rows have no Offset column: they are read, their
//!   offsets reported as not usable;
//! * MPI-IO offsets are −1 where the runtime could not get them: likewise;
//! * on Lustre `X_POSIX` rows end in OST ids (`[ 3]`), current versions in a
//!   thread id (or `N/A`): both ignored.
//!
//! A block lists its writes before its reads, so the calls are put in
//! start-time order per rank, which numbers their ticks.

use super::{Access, Pointer, Record, Trace, TraceError};

/// Reads `darshan-dxt-parser` output; `file` names it in errors.
pub fn read(file: &str, text: &str) -> Result<Trace, TraceError> {
    let err = |line: usize, message: String| TraceError {
        file: file.into(),
        line,
        message,
    };
    let mut records = Vec::new();
    let (mut current, mut has_offset): (Option<String>, Option<bool>) = (None, None);
    let (mut no_offset_rows, mut unknown_offsets) = (0usize, 0usize);
    for (k, raw) in text.lines().enumerate() {
        let line = k + 1;
        let l = raw.trim();
        if l.is_empty() {
            continue;
        }
        if let Some(rest) = l.strip_prefix("# DXT,") {
            let rest = rest.trim();
            if let Some(at) = rest.find("file_name:") {
                current = Some(rest[at + "file_name:".len()..].trim().to_string());
                has_offset = None;
            }
            continue;
        }
        if l.starts_with('#') {
            // The column line says whether this block's rows carry offsets.
            if l.contains("Module") && l.contains("Length") {
                has_offset = Some(l.contains("Offset"));
            }
            continue;
        }
        let t: Vec<&str> = l.split_whitespace().collect();
        let module = t[0];
        let mpiio = match module {
            "X_MPIIO" => true,
            "X_POSIX" => false,
            _ => continue, // another module's lines (darshan-dxt-parser prints only these two)
        };
        let file_name = current.clone().ok_or_else(|| {
            err(
                line,
                "a DXT row before any `# DXT, file_id: …, file_name: …` line".into(),
            )
        })?;
        if t.len() < 7 {
            return Err(err(
                line,
                format!(
                    "{} fields; a DXT row has module, rank, wt/rd, segment, [offset,] length, start, end",
                    t.len()
                ),
            ));
        }
        let rank: usize = t[1]
            .parse()
            .map_err(|_| err(line, format!("rank `{}` is not a whole number", t[1])))?;
        let access = match t[2] {
            "write" => Access::Write,
            "read" => Access::Read,
            other => return Err(err(line, format!("`{other}`: expected `write` or `read`"))),
        };
        // Numbers after the segment, up to the OST list or the thread id.
        let numbers: Vec<&str> = t[4..]
            .iter()
            .copied()
            .take_while(|x| !x.starts_with('[') && x.parse::<f64>().is_ok())
            .collect();
        let with_offset = has_offset.unwrap_or(numbers.len() >= 4);
        let need = if with_offset { 4 } else { 3 };
        if numbers.len() < need {
            return Err(err(
                line,
                format!(
                    "expected {need} numbers after the segment ({}length, start, end), found {}",
                    if with_offset { "offset, " } else { "" },
                    numbers.len()
                ),
            ));
        }
        let int = |s: &str, what: &str| -> Result<i64, TraceError> {
            s.parse()
                .map_err(|_| err(line, format!("{what} `{s}` is not a whole number")))
        };
        let real = |s: &str, what: &str| -> Result<f64, TraceError> {
            s.parse()
                .map_err(|_| err(line, format!("{what} `{s}` is not a number")))
        };
        let (offset, rest) = if with_offset {
            (Some(int(numbers[0], "offset")?), &numbers[1..])
        } else {
            (None, &numbers[..])
        };
        let length = int(rest[0], "length")?;
        let (start, end) = (real(rest[1], "start")?, real(rest[2], "end")?);
        if length < 0 || end < start {
            return Err(err(
                line,
                format!(
                    "length {length}, start {start}, end {end}: a call has a length ≥ 0 and ends after it starts"
                ),
            ));
        }
        let offset = match offset {
            None => {
                no_offset_rows += 1;
                None
            }
            Some(o) if o < 0 => {
                unknown_offsets += 1;
                None
            }
            Some(o) => Some(o as u64),
        };
        records.push(Record {
            rank,
            file: file_name,
            operation: format!("{module} {}", t[2]),
            access,
            mpiio,
            collective: if mpiio { None } else { Some(false) },
            blocking: true,
            pointer: if mpiio {
                Pointer::Unknown
            } else {
                Pointer::Explicit
            },
            offset,
            bytes: length as u64,
            tick: 0,
            start,
            duration: end - start,
        });
    }
    if records.is_empty() {
        return Err(err(0, "no X_POSIX or X_MPIIO rows: is this darshan-dxt-parser output of a log with DXT enabled (DXT_ENABLE_IO_TRACE)?".into()));
    }
    super::order_by_start(&mut records);
    let mut warnings = Vec::new();
    if no_offset_rows > 0 {
        warnings.push(format!(
            "{no_offset_rows} X_MPIIO rows have no offset column (Darshan before 3.2.0): their offsets are not usable; their sizes and times are"
        ));
    }
    if unknown_offsets > 0 {
        warnings.push(format!(
            "{unknown_offsets} rows have offset -1 (the MPI-IO runtime could not give it): their offsets are not usable"
        ));
    }
    Ok(Trace { records, warnings })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Written by hand in the format of darshan-dxt-parser 3.4 (thread ids, Lustre OSTs).
    const CURRENT: &str = "\
# DXT, file_id: 6301214003475582585, file_name: /lustre/run/out.dat
# DXT, rank: 1, hostname: nid00042
# DXT, write_count: 2, read_count: 1
# DXT, mnt_pt: /lustre, fs_type: lustre
# DXT, Lustre stripe_size: 1048576, Lustre stripe_count: 2
# DXT, Lustre OST obdidx: 3 7
# Module    Rank  Wt/Rd  Segment          Offset          Length    Start(s)      End(s)  [OST]  Pthread-ID
 X_POSIX       1  write        0         1048576         1048576      0.2000      0.2500  [  7] 140313
 X_POSIX       1  write        1         3145728         1048576      0.6000      0.6400  [  7] 140313
 X_POSIX       1   read        0         1048576         1048576      0.9000      0.9100  [  7] 140313

# DXT, file_id: 6301214003475582585, file_name: /lustre/run/out.dat
# DXT, rank: 0, hostname: nid00041
# DXT, write_count: 1, read_count: 0
# DXT, mnt_pt: /lustre, fs_type: lustre
# Module    Rank  Wt/Rd  Segment          Offset          Length    Start(s)      End(s)  Pthread-ID
 X_MPIIO       0  write        0               0         1048576      0.1000      0.3000  N/A
";

    /// Darshan 3.1: MPI-IO rows without offsets, no thread column.
    const OLD: &str = "\
# DXT, file_id: 12, file_name: /scratch/a
# DXT, rank: 0, hostname: n1
# DXT, write_count: 2, read_count: 0
# DXT, mnt_pt: /scratch, fs_type: ext4
# Module    Rank  Wt/Rd  Segment          Length    Start(s)      End(s)
 X_MPIIO       0  write        0          4096      0.0010      0.0020
 X_MPIIO       0  write        1          4096      0.0030      0.0040
";

    #[test]
    fn current_rows_are_read_with_offsets_and_put_in_start_order() {
        let t = read("cur.txt", CURRENT).unwrap();
        assert!(t.warnings.is_empty(), "{:?}", t.warnings);
        let got: Vec<_> = t
            .records
            .iter()
            .map(|r| (r.rank, r.tick, r.access, r.offset, r.bytes, r.mpiio))
            .collect();
        assert_eq!(
            got,
            [
                (0, 0, Access::Write, Some(0), 1048576, true),
                (1, 0, Access::Write, Some(1048576), 1048576, false),
                (1, 1, Access::Write, Some(3145728), 1048576, false),
                (1, 2, Access::Read, Some(1048576), 1048576, false),
            ]
        );
        assert_eq!(t.records[1].file, "/lustre/run/out.dat");
        assert!((t.records[1].duration - 0.05).abs() < 1e-12);
    }

    #[test]
    fn old_mpiio_rows_are_read_and_said_unusable_for_offsets() {
        let t = read("old.txt", OLD).unwrap();
        assert_eq!(t.records.len(), 2);
        assert!(
            t.records
                .iter()
                .all(|r| r.offset.is_none() && r.bytes == 4096)
        );
        assert!(
            t.warnings[0].contains("2 X_MPIIO rows have no offset column"),
            "{:?}",
            t.warnings
        );
    }

    #[test]
    fn minus_one_offsets_are_unknown() {
        let text = CURRENT.replace(
            " X_MPIIO       0  write        0               0 ",
            " X_MPIIO       0  write        0              -1 ",
        );
        let t = read("m.txt", &text).unwrap();
        assert_eq!(t.records[0].offset, None);
        assert!(t.warnings[0].contains("offset -1"));
    }

    #[test]
    fn bad_rows_name_their_line() {
        let text = CURRENT.replace("0.6400", "0.5000");
        let e = read("b.txt", &text).unwrap_err();
        assert_eq!((e.file.as_str(), e.line), ("b.txt", 9));
        assert!(e.message.contains("ends after it starts"), "{e}");
        let e = read("c.txt", " X_POSIX 0 write 0 0 1 0.1 0.2\n# DXT, x").unwrap_err();
        assert!(e.message.contains("before any"), "{e}");
    }
}
