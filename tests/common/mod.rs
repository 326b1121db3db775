//! What the end-to-end tests share: running the `piotwin` binary (directly or
//! under the MPI launcher), reading its outputs, and checking that bad input is
//! refused without anything written.
#![allow(dead_code)] // each test crate uses its own subset

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

/// The binary under test.
pub const BIN: &str = env!("CARGO_BIN_EXE_piotwin");

/// `run madbench2 NO_PIX NO_BIN 1 SBLOCKSIZE 1024 1 1` (one gang, no token
/// passing), one shared file through MPI-IO, then `more`.
pub fn madbench2_shared_mpi<'a>(
    no_pix: &'a str,
    no_bin: &'a str,
    sblocksize: &'a str,
    more: &[&'a str],
) -> Vec<&'a str> {
    let mut v = vec![
        "run",
        "madbench2",
        no_pix,
        no_bin,
        "1",
        sblocksize,
        "1024",
        "1",
        "1",
        "--filetype",
        "shared",
        "--iomethod",
        "mpi",
    ];
    v.extend_from_slice(more);
    v
}

/// Runs `piotwin ARGS` in `dir`.
pub fn piotwin<S: AsRef<std::ffi::OsStr>>(dir: &Path, args: &[S]) -> Output {
    piotwin_env(dir, args, &[])
}

/// Runs `piotwin ARGS` in `dir` with extra environment variables.
pub fn piotwin_env<S: AsRef<std::ffi::OsStr>>(
    dir: &Path,
    args: &[S],
    env: &[(&str, &str)],
) -> Output {
    output_within_limit(
        Command::new(BIN)
            .current_dir(dir)
            .args(args)
            // A real run sizes itself from the launcher's variables: never inherit them.
            .env_remove("PMI_SIZE")
            .env_remove("OMPI_COMM_WORLD_SIZE")
            .envs(env.iter().copied()),
    )
}

/// How long one run of the binary may take before the test calls it hung.
pub const HUNG: Duration = Duration::from_secs(600);

/// Runs `cmd` to its end and returns its output, like `Command::output`, but
/// a run still going after [`HUNG`] is killed (under mpiexec: the launcher,
/// whose proxies then kill the ranks) and the test fails saying so, with what
/// it printed: a hang must fail a test, never stall the suite.
pub fn output_within_limit(cmd: &mut Command) -> Output {
    let shown = format!("{cmd:?}");
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("{shown}: cannot start: {e}"));
    let drain = |mut r: Box<dyn Read + Send>| {
        std::thread::spawn(move || {
            let mut v = Vec::new();
            let _ = r.read_to_end(&mut v);
            v
        })
    };
    let out = drain(Box::new(child.stdout.take().expect("piped")));
    let err = drain(Box::new(child.stderr.take().expect("piped")));
    let started = Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait().expect("waitable") {
            break s;
        }
        if started.elapsed() > HUNG {
            let _ = child.kill();
            let _ = child.wait();
            let err = String::from_utf8_lossy(&err.join().unwrap_or_default()).into_owned();
            panic!(
                "{shown}: hung: still running after {} s, killed; its stderr:\n{err}",
                HUNG.as_secs()
            );
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    Output {
        status,
        stdout: out.join().unwrap_or_default(),
        stderr: err.join().unwrap_or_default(),
    }
}

/// Standard error as text.
pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// Standard output as text.
pub fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// Names of the files in `dir`, sorted.
pub fn files_in(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

/// A refused run: exit code 2, every `expect` in the message, nothing on
/// stdout, nothing written in `dir` (the run's working and output directory).
pub fn assert_refused(o: &Output, dir: &Path, expect: &[&str]) {
    let err = stderr(o);
    assert_eq!(o.status.code(), Some(2), "stderr: {err}");
    for e in expect {
        assert!(err.contains(e), "expected `{e}` in: {err}");
    }
    assert!(stdout(o).is_empty(), "printed {}", stdout(o));
    assert_eq!(files_in(dir), Vec::<String>::new(), "files were written");
}

/// `piotwin ARGS` in an empty directory must be refused as [`assert_refused`] says.
pub fn bad_input<S: AsRef<std::ffi::OsStr> + std::fmt::Debug>(args: &[S], expect: &[&str]) {
    let dir = tempfile::tempdir().unwrap();
    let o = piotwin(dir.path(), args);
    assert_refused(&o, dir.path(), expect);
}

/// A shipped scenario file.
pub fn scenario(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("scenarios")
        .join(name)
}

/// The index of column `name` in a report table (`{"columns": [...], "rows": ...}`).
pub fn column(table: &serde_json::Value, name: &str) -> usize {
    table["columns"]
        .as_array()
        .expect("a table has columns")
        .iter()
        .position(|c| c == name)
        .unwrap_or_else(|| panic!("no column `{name}` in {}", table["columns"]))
}

/// A JSON file, parsed.
pub fn read_json(path: &Path) -> serde_json::Value {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The MPI launcher: `PIOTWIN_MPIEXEC` (split on spaces) or `mpiexec`; `None`
/// (and a note on stderr) when it cannot be started. Where `PIOTWIN_REQUIRE_MPI`
/// is set (`make test`, CI), a missing launcher fails the test instead: a
/// real-mode test never passes without running.
pub fn mpiexec() -> Option<Vec<String>> {
    let launcher = std::env::var("PIOTWIN_MPIEXEC").unwrap_or_else(|_| "mpiexec".into());
    let words: Vec<String> = launcher.split_whitespace().map(String::from).collect();
    let found = Command::new(&words[0]).arg("--version").output().is_ok();
    if !found {
        assert!(
            std::env::var_os("PIOTWIN_REQUIRE_MPI").is_none(),
            "PIOTWIN_REQUIRE_MPI is set but the launcher `{launcher}` cannot be started \
             (install MPI, `make deps`, or set PIOTWIN_MPIEXEC)"
        );
        eprintln!("skipped: no `{launcher}` (set PIOTWIN_MPIEXEC to the launcher)");
    }
    found.then_some(words)
}

/// `mpiexec -n N piotwin ARGS` in `dir`; `None` when no launcher is installed
/// (see [`mpiexec`]: a failure under `PIOTWIN_REQUIRE_MPI`).
pub fn mpirun(dir: &Path, n: usize, args: &[&str]) -> Option<Output> {
    let Some(launcher) = mpiexec() else {
        return None;
    };
    Some(output_within_limit(
        Command::new(&launcher[0])
            .args(&launcher[1..])
            .args(["-n", &n.to_string(), BIN])
            .args(args)
            .current_dir(dir),
    ))
}

/// A small tmpfs mounted at `dir` for the life of the value (root only): a file
/// system that fills up. Unmounted on drop.
pub struct Tmpfs(PathBuf);

impl Tmpfs {
    /// Mounts `size` of tmpfs at `dir`; `None` where this process may not mount
    /// (not root) and no test requires it. Under `PIOTWIN_REQUIRE_MPI` (`make
    /// test`, CI as root) a failure to mount fails the test instead.
    pub fn mount(dir: &Path, size: &str) -> Option<Tmpfs> {
        std::fs::create_dir_all(dir).unwrap();
        let ok = std::process::Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"])
            .arg(dir)
            .status()
            .is_ok_and(|s| s.success());
        if !ok {
            assert!(
                std::env::var_os("PIOTWIN_REQUIRE_MPI").is_none(),
                "cannot mount a tmpfs at {} (these tests need root)",
                dir.display()
            );
            eprintln!("skipped: cannot mount a tmpfs (not root)");
            return None;
        }
        Some(Tmpfs(dir.to_path_buf()))
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = std::process::Command::new("umount").arg(&self.0).status();
    }
}
