//! Inputs of BTIO: the NPB class table, NPB BT-IO's `inputbt.data` and the
//! PnetCDF BTIO kernel's `inputbt.data`, with errors that name the input.
//!
//! Both files are read the way the Fortran originals read them (list-directed
//! `read(2,*)`): each line supplies the leading values it is read for and the
//! rest of the line (NPB's `= comment`, the kernel's `# comment`) is ignored.
//! Fortran `d` exponents (`0.0008d0`) are accepted.
//!
//! NPB 3.x BT (`bt.f`): line 1 `niter`, line 2 `dt`, line 3 `nx ny nz`, line 4
//! `wr_interval [rd_interval]` (a missing or unreadable read interval is 0, a
//! write interval ≤ 0 means the default 5), line 5 `collbuf_nodes collbuf_size`
//! (read by the `full` subtype; here optional for every subtype, absent = no hints).
//!
//! PnetCDF BTIO (`bt.f90`): line 1 `w|r`, line 2 method `0..3`, line 3 records,
//! line 4 `X Y Z`, line 5 the directory (the whole line, trimmed; a trailing
//! `  # comment` after whitespace is dropped).

use std::fmt;

/// A bad input: which input (`FILE:LINE`, `--option`, `mpiexec -n`) and what is
/// wrong with it, including what is allowed. The CLI prints it and exits with 2.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InputError {
    /// The input: `inputbt.data:3`, `--grid`, `number of processes`.
    pub input: String,
    /// What is wrong and what is allowed.
    pub message: String,
}

impl InputError {
    /// An error about `input`.
    pub fn new(input: impl Into<String>, message: impl Into<String>) -> InputError {
        InputError {
            input: input.into(),
            message: message.into(),
        }
    }
}

impl fmt::Display for InputError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.input, self.message)
    }
}

impl std::error::Error for InputError {}

/// NPB problem classes of BT.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, clap::ValueEnum, serde::Serialize)]
#[value(rename_all = "UPPER")]
pub enum Class {
    /// 12³, 60 steps.
    S,
    /// 24³, 200 steps.
    W,
    /// 64³, 200 steps.
    A,
    /// 102³, 200 steps.
    B,
    /// 162³, 200 steps.
    C,
    /// 408³, 250 steps.
    D,
    /// 1020³, 250 steps.
    E,
}

/// One row of NPB BT's class table (`set_class` / `npbparams.h`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ClassParams {
    /// The class.
    pub class: Class,
    /// Grid points per direction (the grid is cubic).
    pub n: u64,
    /// Time steps (`niter_default`).
    pub niter: u64,
    /// Time step size (`dt_default`).
    pub dt: f64,
}

/// NPB BT's classes as data.
pub const CLASSES: [ClassParams; 7] = [
    ClassParams {
        class: Class::S,
        n: 12,
        niter: 60,
        dt: 0.010,
    },
    ClassParams {
        class: Class::W,
        n: 24,
        niter: 200,
        dt: 0.0008,
    },
    ClassParams {
        class: Class::A,
        n: 64,
        niter: 200,
        dt: 0.0008,
    },
    ClassParams {
        class: Class::B,
        n: 102,
        niter: 200,
        dt: 0.0003,
    },
    ClassParams {
        class: Class::C,
        n: 162,
        niter: 200,
        dt: 0.0001,
    },
    ClassParams {
        class: Class::D,
        n: 408,
        niter: 250,
        dt: 0.00002,
    },
    ClassParams {
        class: Class::E,
        n: 1020,
        niter: 250,
        dt: 0.4e-5,
    },
];

/// NPB's default write interval (`wr_default`).
pub const WR_DEFAULT: u64 = 5;

impl Class {
    /// This class's row of [`CLASSES`].
    pub fn params(self) -> ClassParams {
        *CLASSES
            .iter()
            .find(|c| c.class == self)
            .expect("every class has a row")
    }

    /// The class a cubic grid and step count match, as NPB's `set_class` decides
    /// (`None` is NPB's class `U`).
    pub fn of(grid: [u64; 3], niter: u64) -> Option<Class> {
        CLASSES
            .iter()
            .find(|c| grid == [c.n; 3] && niter == c.niter)
            .map(|c| c.class)
    }
}

/// NPB BT-IO's `inputbt.data`.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct NpbInput {
    /// Time steps.
    pub niter: u64,
    /// Time step size.
    pub dt: f64,
    /// Grid points (nx, ny, nz).
    pub grid: [u64; 3],
    /// Dump every this many steps (≤ 0 in the file means 5, as in NPB).
    pub wr_interval: u64,
    /// NPB 3.4's read interval (0 = read back at the end only).
    pub rd_interval: u64,
    /// `(cb_nodes, cb_buffer_size)` for the `full` subtype; `None` when the line is
    /// absent or cb_nodes is 0 (NPB then passes `MPI_INFO_NULL`).
    pub collbuf: Option<(u64, u64)>,
}

/// The PnetCDF BTIO kernel's `inputbt.data`.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct KernelInput {
    /// `true` for `w` (write), `false` for `r` (read).
    pub write: bool,
    /// I/O method 0..=3.
    pub method: u8,
    /// Records to write or read.
    pub records: u64,
    /// Global array size (X, Y, Z).
    pub grid: [u64; 3],
    /// Directory of the file.
    pub dir: String,
}

/// Lines of an input file with their 1-based numbers and the file's name for errors.
struct Lines<'a> {
    name: &'a str,
    lines: Vec<&'a str>,
}

impl<'a> Lines<'a> {
    fn new(text: &'a str, name: &'a str) -> Lines<'a> {
        Lines {
            name,
            lines: text.lines().collect(),
        }
    }

    fn at(&self, line: usize) -> String {
        format!("{}:{}", self.name, line)
    }

    /// Line `n` (1-based) or an error saying what was expected there.
    fn line(&self, n: usize, what: &str) -> Result<&'a str, InputError> {
        self.lines.get(n - 1).copied().ok_or_else(|| {
            InputError::new(
                self.at(n),
                format!("expected {what}, found the end of the file"),
            )
        })
    }

    /// The leading list-directed values of line `n`: tokens split on blanks and commas.
    fn tokens(&self, n: usize, what: &str) -> Result<Vec<&'a str>, InputError> {
        Ok(self
            .line(n, what)?
            .split([' ', '\t', ','])
            .filter(|t| !t.is_empty())
            .collect())
    }
}

/// A Fortran integer.
fn int(tok: &str) -> Option<i64> {
    tok.parse().ok()
}

/// A Fortran real: `0.0008`, `8e-4`, `0.0008d0`, `8.0D-4`.
fn real(tok: &str) -> Option<f64> {
    tok.replace(['d', 'D'], "e")
        .parse()
        .ok()
        .filter(|v: &f64| v.is_finite())
}

/// A positive integer at `(line, position)`, or an error naming both.
fn positive(
    l: &Lines<'_>,
    n: usize,
    toks: &[&str],
    i: usize,
    what: &str,
) -> Result<u64, InputError> {
    let tok = toks.get(i).ok_or_else(|| {
        InputError::new(
            l.at(n),
            format!("expected {what}, found only {} value(s)", toks.len()),
        )
    })?;
    match int(tok) {
        Some(v) if v > 0 => Ok(v as u64),
        _ => Err(InputError::new(
            l.at(n),
            format!("{what}: `{tok}` is not a positive integer"),
        )),
    }
}

/// Parses NPB BT-IO's `inputbt.data`; `name` is the file name used in errors.
pub fn parse_npb(text: &str, name: &str) -> Result<NpbInput, InputError> {
    let l = Lines::new(text, name);
    let t1 = l.tokens(1, "the number of time steps (niter)")?;
    let niter = positive(&l, 1, &t1, 0, "niter (time steps)")?;

    let t2 = l.tokens(2, "the time step dt (a real, e.g. 0.0008d0)")?;
    let dt_tok = t2.first().copied().unwrap_or("");
    let dt = real(dt_tok).filter(|&v| v > 0.0).ok_or_else(|| {
        InputError::new(
            l.at(2),
            format!("dt: `{dt_tok}` is not a positive real (e.g. 0.0008d0)"),
        )
    })?;

    let t3 = l.tokens(3, "the grid `nx ny nz`")?;
    let mut grid = [0; 3];
    for (i, g) in grid.iter_mut().enumerate() {
        *g = positive(&l, 3, &t3, i, ["nx", "ny", "nz"][i])?;
    }

    let t4 = l.tokens(4, "the write interval `wr_interval [rd_interval]`")?;
    let wr_tok = t4.first().copied().unwrap_or("");
    let wr = int(wr_tok).ok_or_else(|| {
        InputError::new(
            l.at(4),
            format!("write interval: `{wr_tok}` is not an integer (NPB default: 5)"),
        )
    })?;
    let wr_interval = if wr <= 0 { WR_DEFAULT } else { wr as u64 };
    // NPB: `read (cbuff,*,iostat=i) wr_interval, rd_interval; if (i /= 0) rd_interval = 0`.
    let rd_interval = t4
        .get(1)
        .and_then(|t| int(t))
        .filter(|&v| v > 0)
        .unwrap_or(0) as u64;

    let collbuf = match l.lines.get(4) {
        None => None,
        Some(line) if line.trim().is_empty() => None,
        Some(_) => {
            let t5 = l.tokens(5, "collective buffering `cb_nodes cb_buffer_size`")?;
            let nodes_tok = t5.first().copied().unwrap_or("");
            let nodes = int(nodes_tok).filter(|&v| v >= 0).ok_or_else(|| {
                InputError::new(
                    l.at(5),
                    format!("collective-buffering nodes: `{nodes_tok}` is not an integer ≥ 0 (0 = no hints)"),
                )
            })? as u64;
            if nodes == 0 {
                None
            } else {
                let size = positive(&l, 5, &t5, 1, "collective-buffering buffer size in bytes")?;
                Some((nodes, size))
            }
        }
    };
    Ok(NpbInput {
        niter,
        dt,
        grid,
        wr_interval,
        rd_interval,
        collbuf,
    })
}

/// Parses the PnetCDF BTIO kernel's `inputbt.data`; `name` is used in errors.
pub fn parse_kernel(text: &str, name: &str) -> Result<KernelInput, InputError> {
    let l = Lines::new(text, name);
    let t1 = l.tokens(1, "the I/O mode `w` or `r`")?;
    let write = match t1.first().copied() {
        Some("w") | Some("W") => true,
        Some("r") | Some("R") => false,
        other => {
            return Err(InputError::new(
                l.at(1),
                format!(
                    "I/O mode: `{}` is not `w` (write) or `r` (read)",
                    other.unwrap_or("")
                ),
            ));
        }
    };
    let t2 = l.tokens(2, "the I/O method 0..3")?;
    let m_tok = t2.first().copied().unwrap_or("");
    let method = match int(m_tok) {
        Some(m @ 0..=3) => m as u8,
        _ => {
            return Err(InputError::new(
                l.at(2),
                format!(
                    "I/O method: `{m_tok}` is not one of 0 (MPI collective), 1 (MPI independent), \
                     2 (blocking per-cell collective), 3 (nonblocking, one wait)"
                ),
            ));
        }
    };
    let t3 = l.tokens(3, "the number of records")?;
    let records = positive(&l, 3, &t3, 0, "records")?;
    let t4 = l.tokens(4, "the grid `X Y Z`")?;
    let mut grid = [0; 3];
    for (i, g) in grid.iter_mut().enumerate() {
        *g = positive(&l, 4, &t4, i, ["X", "Y", "Z"][i])?;
    }
    let raw = l.line(5, "the output directory")?;
    let dir = match raw.find(" #").or_else(|| raw.find("\t#")) {
        Some(i) => &raw[..i],
        None => raw,
    }
    .trim();
    if dir.is_empty() {
        return Err(InputError::new(l.at(5), "the output directory is empty"));
    }
    Ok(KernelInput {
        write,
        method,
        records,
        grid,
        dir: dir.to_string(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn class_table_bytes_per_dump() {
        // One dump = 40·N³ bytes; the totals of the spec's table (10^6 bytes, dumps every 5 steps).
        let expect = [
            (Class::S, 0.83),
            (Class::W, 22.12),
            (Class::A, 419.43),
            (Class::B, 1697.93),
            (Class::C, 6802.44),
            (Class::D, 135834.62),
        ];
        for (class, mb) in expect {
            let c = class.params();
            let per_dump = 40 * c.n.pow(3);
            let dumps = c.niter.div_ceil(WR_DEFAULT);
            let total = (per_dump * dumps) as f64 * 1e-6;
            assert!((total - mb).abs() < 0.006, "{class:?}: {total} vs {mb}");
        }
        assert_eq!(40 * Class::E.params().n.pow(3), 42_448_320_000);
        assert_eq!(Class::of([64; 3], 200), Some(Class::A));
        assert_eq!(Class::of([64; 3], 100), None);
    }

    const NPB_A: &str = "200       = number of time steps
0.0008d0  = dt for class A = 0.0008d0. class B = 0.0003d0 class C = 0.0001d0
64 64 64
5 0       = Write interval and read interval
2 1048576 = number of nodes and buffer size for collective buffering
";

    #[test]
    fn parses_npb_input() {
        let i = parse_npb(NPB_A, "inputbt.data").unwrap();
        assert_eq!(
            i,
            NpbInput {
                niter: 200,
                dt: 0.0008,
                grid: [64, 64, 64],
                wr_interval: 5,
                rd_interval: 0,
                collbuf: Some((2, 1048576))
            }
        );
        // Short form (NPB 3.3 without read interval, no collective-buffering line),
        // commas as separators, a zero write interval meaning the default.
        let i = parse_npb("60\n0.010\n12,12,12\n0 = wr\n", "f").unwrap();
        assert_eq!(
            (i.niter, i.grid, i.wr_interval, i.rd_interval, i.collbuf),
            (60, [12; 3], 5, 0, None)
        );
        let i = parse_npb("60\n1e-2\n12 12 12\n10 3\n0 1000000\n", "f").unwrap();
        assert_eq!((i.wr_interval, i.rd_interval, i.collbuf), (10, 3, None));
    }

    #[test]
    fn npb_input_errors_name_file_and_line() {
        let e = parse_npb("200\n0.0008d0\n64 64\n5\n", "in.dat").unwrap_err();
        assert_eq!(e.input, "in.dat:3");
        assert!(e.message.contains("nz"), "{e}");
        let e = parse_npb("200\nfast\n64 64 64\n5\n", "in.dat").unwrap_err();
        assert_eq!(e.input, "in.dat:2");
        assert!(e.to_string().starts_with("in.dat:2: dt: `fast`"), "{e}");
        let e = parse_npb("-3\n", "in.dat").unwrap_err();
        assert_eq!(e.input, "in.dat:1");
        let e = parse_npb("200\n0.1\n", "in.dat").unwrap_err();
        assert_eq!(e.input, "in.dat:3");
        assert!(e.message.contains("end of the file"), "{e}");
        let e = parse_npb("200\n0.1\n8 8 8\nx\n", "in.dat").unwrap_err();
        assert_eq!(e.input, "in.dat:4");
        let e = parse_npb("200\n0.1\n8 8 8\n5\n4 lots\n", "in.dat").unwrap_err();
        assert_eq!(e.input, "in.dat:5");
    }

    #[test]
    fn parses_kernel_input() {
        let text = "w                  # IO mode:    w for write, r for read
3                  # IO method
5                  # number of time steps
16 16 16           # grid_points(1), grid_points(2), grid_points(3)
./output
";
        let k = parse_kernel(text, "inputbt.data").unwrap();
        assert_eq!(
            k,
            KernelInput {
                write: true,
                method: 3,
                records: 5,
                grid: [16, 16, 16],
                dir: "./output".into()
            }
        );
        let k = parse_kernel("r\n0\n2\n8 9 10\n/scratch/x  # dir\n", "f").unwrap();
        assert_eq!(
            (k.write, k.method, k.dir.as_str()),
            (false, 0, "/scratch/x")
        );
    }

    #[test]
    fn kernel_input_errors_name_file_and_line() {
        let e = parse_kernel("x\n", "k.dat").unwrap_err();
        assert_eq!(e.input, "k.dat:1");
        let e = parse_kernel("w\n4\n", "k.dat").unwrap_err();
        assert_eq!(e.input, "k.dat:2");
        assert!(e.message.contains("`4`"), "{e}");
        let e = parse_kernel("w\n3\n0\n", "k.dat").unwrap_err();
        assert_eq!(e.input, "k.dat:3");
        let e = parse_kernel("w\n3\n5\n16 16 16\n", "k.dat").unwrap_err();
        assert_eq!(e.input, "k.dat:5");
    }
}
