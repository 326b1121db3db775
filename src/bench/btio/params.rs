//! Command-line options of `piotwin run btio` and `piotwin run btio-kernel`, and
//! their resolution (class defaults ← `inputbt.data` ← explicit options) into a
//! checked configuration. Every error names the input it comes from.

use crate::bench::common::options::{OptionError, opt_err};
use std::path::PathBuf;

use piotwin_types::Hints;

use super::decomp::{DecompError, Decomposition};
use super::input::{self, Class, InputError, WR_DEFAULT};
use super::layout;

/// NPB BT-IO's I/O subtypes (`IOTYPE` at build time in NPB).
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Subtype {
    /// MPI-IO collective: one `write_at_all` per dump through the struct-of-subarrays view.
    Full,
    /// MPI-IO independent: one `write_at` per (cell, z, y) row.
    Simple,
    /// NPB's Fortran direct access (`RECL=40`): one `WRITE(REC=)` per point through
    /// the Fortran runtime, at the same offsets as `simple`.
    Fortran,
    /// Each process its own file of Fortran sequential records, one per cell and dump.
    Epio,
    /// No I/O: the compute-only baseline.
    None,
}

impl Subtype {
    /// NPB's name in its banner (`BTIO -- FULL MPI-IO write interval: …`).
    pub fn npb_name(self) -> &'static str {
        match self {
            Subtype::Full => "FULL MPI-IO",
            Subtype::Simple => "SIMPLE MPI-IO",
            Subtype::Fortran => "FORTRAN IO",
            Subtype::Epio => "EPIO",
            Subtype::None => "NO I/O",
        }
    }
}

/// A grid `NX,NY,NZ` given on the command line.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct Grid(pub [u64; 3]);

/// Parses `NX,NY,NZ` (three positive integers; `x` also separates).
pub fn parse_grid(s: &str) -> Result<Grid, OptionError> {
    let parts: Vec<&str> = s.split([',', 'x', 'X']).map(str::trim).collect();
    let bad = || {
        opt_err(
            "--grid",
            s,
            "not a grid NX,NY,NZ of three positive integers, e.g. 64,64,64",
        )
    };
    if parts.len() != 3 {
        return Err(bad());
    }
    let mut g = [0; 3];
    for (v, p) in g.iter_mut().zip(&parts) {
        *v = p.parse().ok().filter(|&v: &u64| v > 0).ok_or_else(bad)?;
    }
    Ok(Grid(g))
}

/// `piotwin run btio`: NPB BT-IO (NPB-IO 2.4 / 3.x). Hints come from the common options.
#[derive(clap::Args, Debug, Clone, serde::Serialize)]
pub struct BtioArgs {
    /// NPB problem class: grid N³ and step count (S 12³/60, W 24³/200, A 64³/200,
    /// B 102³/200, C 162³/200, D 408³/250, E 1020³/250).
    #[arg(long, value_enum, ignore_case = true, default_value = "S")]
    pub class: Class,
    /// Custom grid NX,NY,NZ (overrides the class and inputbt.data).
    #[arg(long, value_parser = parse_grid)]
    pub grid: Option<Grid>,
    /// Time steps (overrides the class and inputbt.data).
    #[arg(long)]
    pub steps: Option<u64>,
    /// Write a dump every this many steps, and after the last step (NPB default 5).
    #[arg(long)]
    pub wr_interval: Option<u64>,
    /// I/O method.
    #[arg(long, value_enum, default_value = "full")]
    pub subtype: Subtype,
    /// NPB's inputbt.data: niter, dt, grid, write [read] interval, cb nodes and size.
    #[arg(long)]
    pub input: Option<PathBuf>,
    /// Directory of the output file `btio.out` (epio: `btio.out.NNNN`).
    #[arg(short = 'p', long = "path", default_value = ".")]
    pub path: PathBuf,
}

/// `piotwin run btio-kernel`: the PnetCDF BTIO kernel (no time stepping).
#[derive(clap::Args, Debug, Clone, serde::Serialize)]
pub struct BtioKernelArgs {
    /// 0 MPI collective, 1 MPI independent, 2 blocking per-cell collective,
    /// 3 nonblocking per-cell requests completed by one wait.
    #[arg(long, value_parser = clap::value_parser!(u8).range(0..=3))]
    pub method: Option<u8>,
    /// `w` writes the records, `r` reads records written by an earlier `w` run.
    #[arg(long, value_parser = ["w", "r"])]
    pub mode: Option<String>,
    /// Records (global arrays) to write or read.
    #[arg(long)]
    pub records: Option<u64>,
    /// Global array size X,Y,Z.
    #[arg(long, value_parser = parse_grid)]
    pub grid: Option<Grid>,
    /// The kernel's inputbt.data: w|r, method, records, X Y Z, directory.
    #[arg(long)]
    pub input: Option<PathBuf>,
    /// Directory of the file `btio.mpi` (overrides inputbt.data).
    #[arg(short = 'p', long = "path")]
    pub path: Option<PathBuf>,
}

/// A checked BTIO configuration: what the run does.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct BtioConfig {
    /// NPB's class of the grid and step count (`None`: NPB's class U).
    pub class: Option<Class>,
    /// Grid (nx, ny, nz).
    pub grid: [u64; 3],
    /// Time steps.
    pub niter: u64,
    /// Time step size (recorded; the compute kernel does not integrate in time).
    pub dt: f64,
    /// Dump every this many steps and after the last.
    pub wr_interval: u64,
    /// NPB 3.4's read interval from inputbt.data; piotwin always reads back after
    /// the timed region (the spec), so it is recorded only.
    pub rd_interval: u64,
    /// I/O method.
    pub subtype: Subtype,
    /// `(cb_nodes, cb_buffer_size)` from inputbt.data (full only).
    pub collbuf: Option<(u64, u64)>,
    /// Output directory.
    pub dir: String,
    /// The inputbt.data read, if any.
    pub input: Option<String>,
    /// Number of processes.
    pub nprocs: usize,
}

/// A checked BTIO-kernel configuration.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct KernelConfig {
    /// Write (`w`) or read (`r`).
    pub write: bool,
    /// I/O method 0..=3.
    pub method: u8,
    /// Records.
    pub records: u64,
    /// Global array (X, Y, Z).
    pub grid: [u64; 3],
    /// Directory of `btio.mpi`.
    pub dir: String,
    /// The inputbt.data read, if any.
    pub input: Option<String>,
    /// Number of processes.
    pub nprocs: usize,
}

/// Read an input file, naming it in the error.
fn read_input(path: &PathBuf) -> Result<(String, String), InputError> {
    let name = path.display().to_string();
    let text = std::fs::read_to_string(path).map_err(|e| {
        InputError::new(
            format!("--input {name}"),
            format!("cannot read the file: {e}"),
        )
    })?;
    Ok((name, text))
}

/// A directory as a UTF-8 string (the I/O interface takes `&str` paths).
fn dir_str(path: &std::path::Path, input: &str) -> Result<String, InputError> {
    path.to_str()
        .map(str::to_string)
        .ok_or_else(|| InputError::new(input, format!("`{}` is not valid UTF-8", path.display())))
}

/// Check the decomposition of `grid` on `nprocs`; errors name the process count or
/// the grid's source.
fn check_decomposition(grid: [u64; 3], nprocs: usize, grid_source: &str) -> Result<(), InputError> {
    match Decomposition::new(grid, nprocs) {
        Ok(_) => Ok(()),
        Err(e @ DecompError::NotSquare { .. }) => Err(InputError::new(
            format!("number of processes ({nprocs})"),
            e.to_string(),
        )),
        Err(e @ DecompError::CellTooSmall { .. }) => Err(InputError::new(
            grid_source,
            format!(
                "grid {}x{}x{} on {nprocs} processes: {e}",
                grid[0], grid[1], grid[2]
            ),
        )),
    }
}

impl BtioArgs {
    /// Resolve class defaults, inputbt.data and explicit options for `nprocs`
    /// processes, and check everything before any file is touched.
    pub fn resolve(&self, nprocs: usize) -> Result<BtioConfig, InputError> {
        let class = self.class.params();
        let mut grid = [class.n; 3];
        let mut grid_source = format!("--class {:?}", self.class);
        let mut niter = class.niter;
        let mut dt = class.dt;
        let mut wr_interval = WR_DEFAULT;
        let mut rd_interval = 0;
        let mut collbuf = None;
        let mut input_name = None;
        if let Some(path) = &self.input {
            let (name, text) = read_input(path)?;
            let f = input::parse_npb(&text, &name)?;
            grid = f.grid;
            grid_source = format!("{name}:3");
            niter = f.niter;
            dt = f.dt;
            wr_interval = f.wr_interval;
            rd_interval = f.rd_interval;
            collbuf = f.collbuf;
            input_name = Some(name);
        }
        if let Some(Grid(g)) = self.grid {
            grid = g;
            grid_source = "--grid".into();
        }
        if let Some(s) = self.steps {
            if s == 0 {
                return Err(InputError::new(
                    "--steps",
                    "`0`: the number of time steps must be at least 1",
                ));
            }
            niter = s;
        }
        if let Some(w) = self.wr_interval {
            if w == 0 {
                return Err(InputError::new(
                    "--wr-interval",
                    "`0`: the write interval must be at least 1 step",
                ));
            }
            wr_interval = w;
        }
        check_decomposition(grid, nprocs, &grid_source)?;
        let cfg = BtioConfig {
            class: Class::of(grid, niter),
            grid,
            niter,
            dt,
            wr_interval,
            rd_interval,
            subtype: self.subtype,
            collbuf,
            dir: dir_str(&self.path, "-p")?,
            input: input_name,
            nprocs,
        };
        if cfg.dumps() > layout::max_dumps(grid) {
            return Err(InputError::new(
                "--steps",
                format!(
                    "{} dumps of a {}x{}x{} grid exceed the 2^53 doubles whose content can be verified exactly",
                    cfg.dumps(),
                    grid[0],
                    grid[1],
                    grid[2]
                ),
            ));
        }
        Ok(cfg)
    }
}

impl BtioConfig {
    /// Dumps written: at every multiple of the write interval and after the last step.
    pub fn dumps(&self) -> u64 {
        if self.subtype == Subtype::None {
            0
        } else {
            self.niter.div_ceil(self.wr_interval)
        }
    }

    /// Whether step `step` (1-based) ends with a dump.
    pub fn dumps_after(&self, step: u64) -> bool {
        self.subtype != Subtype::None
            && (step.is_multiple_of(self.wr_interval) || step == self.niter)
    }

    /// The shared output file (`DIR/btio.out`, NPB's `filenm`).
    pub fn file_path(&self) -> String {
        format!("{}/btio.out", self.dir)
    }

    /// Rank `rank`'s file under `epio` (`btio.out.NNNN`).
    pub fn epio_path(&self, rank: usize) -> String {
        format!("{}/btio.out.{:04}", self.dir, rank)
    }

    /// MPI-IO hints the configuration itself asks for: NPB's collective-buffering
    /// line of inputbt.data (`cb_nodes`, `cb_buffer_size`, `collective_buffering`),
    /// for the `full` subtype. The common `--hint` options are laid over these.
    pub fn hints(&self) -> Hints {
        let mut h = Hints::new();
        if let (Subtype::Full, Some((nodes, size))) = (self.subtype, self.collbuf) {
            h.set("cb_nodes", nodes.to_string());
            h.set("cb_buffer_size", size.to_string());
            h.set("collective_buffering", "true");
        }
        h
    }
}

/// Kernel defaults where neither inputbt.data nor an option gives a value.
const KERNEL_DEFAULT_GRID: [u64; 3] = [64, 64, 64];
const KERNEL_DEFAULT_RECORDS: u64 = 5;
const KERNEL_DEFAULT_METHOD: u8 = 3;

impl BtioKernelArgs {
    /// Resolve inputbt.data and explicit options for `nprocs` processes.
    pub fn resolve(&self, nprocs: usize) -> Result<KernelConfig, InputError> {
        let mut cfg = KernelConfig {
            write: true,
            method: KERNEL_DEFAULT_METHOD,
            records: KERNEL_DEFAULT_RECORDS,
            grid: KERNEL_DEFAULT_GRID,
            dir: ".".into(),
            input: None,
            nprocs,
        };
        let mut grid_source = "the default grid 64,64,64".to_string();
        if let Some(path) = &self.input {
            let (name, text) = read_input(path)?;
            let f = input::parse_kernel(&text, &name)?;
            cfg.write = f.write;
            cfg.method = f.method;
            cfg.records = f.records;
            cfg.grid = f.grid;
            cfg.dir = f.dir;
            grid_source = format!("{name}:4");
            cfg.input = Some(name);
        }
        if let Some(m) = &self.mode {
            cfg.write = m == "w";
        }
        if let Some(m) = self.method {
            cfg.method = m;
        }
        if let Some(r) = self.records {
            if r == 0 {
                return Err(InputError::new("--records", "`0`: at least one record"));
            }
            cfg.records = r;
        }
        if let Some(Grid(g)) = self.grid {
            cfg.grid = g;
            grid_source = "--grid".into();
        }
        if let Some(p) = &self.path {
            cfg.dir = dir_str(p, "-p")?;
        }
        check_decomposition(cfg.grid, nprocs, &grid_source)?;
        if cfg.records > layout::max_dumps(cfg.grid) {
            return Err(InputError::new(
                "--records",
                format!(
                    "{} records exceed the 2^53 doubles whose content can be verified exactly",
                    cfg.records
                ),
            ));
        }
        Ok(cfg)
    }
}

impl KernelConfig {
    /// The file: `DIR/btio.mpi` for every method (the canonical array without a
    /// netCDF header; see the module docs).
    pub fn file_path(&self) -> String {
        format!("{}/btio.mpi", self.dir)
    }

    /// The kernel's own hints: data sieving off for writes (both variants), and
    /// collective buffering on for writes in the PnetCDF methods 2 and 3.
    pub fn hints(&self) -> Hints {
        let mut h = Hints::new();
        h.set("romio_ds_write", "disable");
        if self.method >= 2 {
            h.set("romio_cb_write", "enable");
        }
        h
    }

    /// The kernel's name for the method.
    pub fn method_name(&self) -> &'static str {
        match self.method {
            0 => "MPI collective I/O",
            1 => "MPI independent I/O",
            2 => "blocking per-cell collective I/O (PnetCDF blocking)",
            _ => "nonblocking per-cell I/O, one wait (PnetCDF non-blocking)",
        }
    }
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use super::*;

    #[derive(clap::Parser)]
    struct Cli {
        #[command(subcommand)]
        cmd: Cmd,
    }
    #[derive(clap::Subcommand)]
    enum Cmd {
        Btio(BtioArgs),
        BtioKernel(BtioKernelArgs),
    }

    fn btio(args: &[&str]) -> BtioArgs {
        let mut v = vec!["t", "btio"];
        v.extend_from_slice(args);
        match Cli::try_parse_from(v).unwrap().cmd {
            Cmd::Btio(a) => a,
            Cmd::BtioKernel(_) => unreachable!(),
        }
    }

    fn kernel(args: &[&str]) -> BtioKernelArgs {
        let mut v = vec!["t", "btio-kernel"];
        v.extend_from_slice(args);
        match Cli::try_parse_from(v).unwrap().cmd {
            Cmd::BtioKernel(a) => a,
            Cmd::Btio(_) => unreachable!(),
        }
    }

    #[test]
    fn class_options_and_overrides() {
        let c = btio(&["--class", "A", "--subtype", "simple"])
            .resolve(4)
            .unwrap();
        assert_eq!(
            (c.grid, c.niter, c.wr_interval, c.class, c.dumps()),
            ([64; 3], 200, 5, Some(Class::A), 40)
        );
        assert_eq!(c.file_path(), "./btio.out");
        let c = btio(&[
            "--class",
            "A",
            "--grid",
            "30,40,50",
            "--steps",
            "12",
            "--wr-interval",
            "5",
            "-p",
            "/tmp/x",
        ])
        .resolve(9)
        .unwrap();
        assert_eq!(
            (c.grid, c.niter, c.dumps(), c.class),
            ([30, 40, 50], 12, 3, None)
        );
        assert!(c.dumps_after(5) && c.dumps_after(10) && c.dumps_after(12) && !c.dumps_after(11));
        assert_eq!(c.epio_path(3), "/tmp/x/btio.out.0003");
        assert_eq!(btio(&["--subtype", "none"]).resolve(1).unwrap().dumps(), 0);
    }

    #[test]
    fn inputbt_data_then_options() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("inputbt.data");
        std::fs::write(&f, "20 = niter\n0.0008d0\n24 24 24\n4 0\n2 1048576\n").unwrap();
        let fs = f.to_str().unwrap();
        let c = btio(&["--input", fs, "--class", "C"]).resolve(4).unwrap();
        assert_eq!(
            (c.grid, c.niter, c.wr_interval, c.collbuf),
            ([24; 3], 20, 4, Some((2, 1048576)))
        );
        assert_eq!(c.hints().get("cb_nodes"), Some("2"));
        assert_eq!(c.hints().get("cb_buffer_size"), Some("1048576"));
        let c = btio(&["--input", fs, "--steps", "7", "--subtype", "epio"])
            .resolve(4)
            .unwrap();
        assert_eq!((c.niter, c.dumps()), (7, 2));
        assert!(
            c.hints().is_empty(),
            "collective-buffering hints apply to full only"
        );
    }

    #[test]
    fn bad_inputs_name_the_input() {
        let e = btio(&["--class", "A"]).resolve(8).unwrap_err();
        assert_eq!(e.input, "number of processes (8)");
        assert!(e.message.contains("square"), "{e}");
        let e = btio(&["--class", "S"]).resolve(25).unwrap_err();
        assert_eq!(e.input, "--class S");
        assert!(e.message.contains("at least 3"), "{e}");
        let e = btio(&["--grid", "64,8,64"]).resolve(9).unwrap_err();
        assert_eq!(e.input, "--grid");
        let e = btio(&["--steps", "0"]).resolve(1).unwrap_err();
        assert_eq!(e.input, "--steps");
        let e = btio(&["--input", "/nonexistent/inputbt.data"])
            .resolve(1)
            .unwrap_err();
        assert_eq!(e.input, "--input /nonexistent/inputbt.data");
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("inputbt.data");
        std::fs::write(&f, "200\n0.0008d0\n64 sixty-four 64\n5 0\n").unwrap();
        let e = btio(&["--input", f.to_str().unwrap()])
            .resolve(4)
            .unwrap_err();
        assert_eq!(e.input, format!("{}:3", f.display()));
        std::fs::write(&f, "200\n0.0008d0\n64 4 64\n5 0\n").unwrap();
        let e = btio(&["--input", f.to_str().unwrap()])
            .resolve(4)
            .unwrap_err();
        assert_eq!(
            e.input,
            format!("{}:3", f.display()),
            "a tiny cell names the grid's line"
        );
        assert!(parse_grid("64,64").is_err() && parse_grid("0,1,2").is_err());
        assert_eq!(parse_grid("8x9x10"), Ok(Grid([8, 9, 10])));
    }

    #[test]
    fn kernel_options_and_inputbt_data() {
        let c = kernel(&[]).resolve(4).unwrap();
        assert_eq!(
            (c.write, c.method, c.records, c.grid),
            (true, 3, 5, [64; 3])
        );
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("inputbt.data");
        std::fs::write(&f, "r\n1\n4\n16 16 16\n./out\n").unwrap();
        let fs = f.to_str().unwrap();
        let c = kernel(&["--input", fs]).resolve(4).unwrap();
        assert_eq!(
            (c.write, c.method, c.records, c.grid, c.file_path().as_str()),
            (false, 1, 4, [16; 3], "./out/btio.mpi")
        );
        assert_eq!(c.hints().get("romio_cb_write"), None);
        let c = kernel(&["--input", fs, "--mode", "w", "--method", "2", "-p", "/d"])
            .resolve(4)
            .unwrap();
        assert_eq!((c.write, c.method, c.dir.as_str()), (true, 2, "/d"));
        assert_eq!(c.hints().get("romio_cb_write"), Some("enable"));
        let e = kernel(&["--input", fs]).resolve(36).unwrap_err();
        assert_eq!(e.input, format!("{fs}:4"));
        let e = kernel(&[]).resolve(3).unwrap_err();
        assert_eq!(e.input, "number of processes (3)");
        assert!(Cli::try_parse_from(["t", "btio-kernel", "--method", "4"]).is_err());
        assert!(Cli::try_parse_from(["t", "btio-kernel", "--mode", "x"]).is_err());
    }
}
