//! How real runs are started and learn their size: one [`Launcher`] for
//! `run`, `compare` and `calibrate`; [`Relayed`] children that get this
//! process's stop request (Ctrl-C, SIGTERM) passed on.

use std::ffi::OsString;
use std::os::unix::process::CommandExt;
use std::process::{Child, Command};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;

use piotwin_types::stop;
#[cfg(feature = "mpi")]
use std::process::Stdio;

use super::CliError;

/// The MPI launcher real runs start under: its words, without `-n N`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Launcher {
    words: Vec<OsString>,
}

impl Launcher {
    /// `--mpiexec CMD` split like a shell's words, or the launcher of this
    /// binary's MPI (`PIOTWIN_MPIEXEC` if set). It must start (`--version`),
    /// or this is bad input. Open MPI's gets `--oversubscribe
    /// --allow-run-as-root` unless given.
    #[cfg(feature = "mpi")]
    pub(crate) fn resolve(mpiexec: Option<&str>) -> Result<Launcher, CliError> {
        let (mut words, what): (Vec<OsString>, String) = match mpiexec {
            Some(cmd) => {
                let words = split_words(cmd)
                    .map_err(|e| CliError::Usage(format!("--mpiexec `{cmd}`: {e}")))?;
                if words.is_empty() {
                    return Err(CliError::Usage(
                        "--mpiexec ``: empty; give the launcher, e.g. --mpiexec mpiexec.mpich"
                            .into(),
                    ));
                }
                (
                    words.into_iter().map(OsString::from).collect(),
                    format!("--mpiexec `{cmd}`"),
                )
            }
            None => {
                let cmd = piotwin_real::mpiexec_command(1);
                let mut w = vec![cmd.get_program().to_os_string()];
                // The default command ends in `-n 1`: keep what comes before.
                let args: Vec<OsString> = cmd.get_args().map(|a| a.to_os_string()).collect();
                w.extend(args[..args.len().saturating_sub(2)].iter().cloned());
                let shown = w[0].to_string_lossy().into_owned();
                (
                    w,
                    format!("the MPI launcher `{shown}` (choose one with --mpiexec CMD)"),
                )
            }
        };
        let version = Command::new(&words[0])
            .arg("--version")
            .stdin(Stdio::null())
            .output()
            .map_err(|e| CliError::Usage(format!("{what}: cannot start it: {e}")))?;
        let text = String::from_utf8_lossy(&version.stdout).into_owned()
            + &String::from_utf8_lossy(&version.stderr);
        if is_open_mpi(&text) {
            for flag in ["--oversubscribe", "--allow-run-as-root"] {
                if !words.iter().any(|w| w == flag) {
                    words.push(flag.into());
                }
            }
        }
        Ok(Launcher { words })
    }

    /// Without MPI no real run can start.
    #[cfg(not(feature = "mpi"))]
    pub(crate) fn resolve(_: Option<&str>) -> Result<Launcher, CliError> {
        Err(CliError::Usage(
            "this piotwin was built without MPI (cargo feature `mpi` off): it cannot run anything for real; \
             run in the twin with `piotwin run <bench> --sim SCENARIO --ranks N`"
                .into(),
        ))
    }

    /// The words that start `n` processes (the program and its arguments follow).
    pub(crate) fn words(&self, n: u64) -> Vec<OsString> {
        let mut w = self.words.clone();
        w.push("-n".into());
        w.push(n.to_string().into());
        w
    }

    /// The command that starts `n` processes (the program and its arguments follow).
    pub(crate) fn command(&self, n: u64) -> Command {
        let w = self.words(n);
        let mut c = Command::new(&w[0]);
        c.args(&w[1..]);
        c
    }
}

/// True when `version_text` (a launcher's `--version` output) is Open MPI's.
#[cfg(feature = "mpi")]
fn is_open_mpi(version_text: &str) -> bool {
    let t = version_text.to_ascii_lowercase();
    t.contains("open mpi") || t.contains("openrte") || t.contains("open-mpi")
}

/// Splits `line` into words as a POSIX shell does for a simple command: blanks
/// separate, `'…'` is literal, `"…"` keeps `\"`, `\\`, `\$`, `` \` `` escapes, and a
/// backslash outside quotes escapes the next character. No expansions.
#[cfg(feature = "mpi")]
fn split_words(line: &str) -> Result<Vec<String>, String> {
    let mut words = Vec::new();
    let mut word = String::new();
    let mut in_word = false;
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        match c {
            c if c.is_whitespace() => {
                if in_word {
                    words.push(std::mem::take(&mut word));
                    in_word = false;
                }
            }
            '\'' => {
                in_word = true;
                loop {
                    match chars.next() {
                        Some('\'') => break,
                        Some(c) => word.push(c),
                        None => return Err("a single quote (') is not closed".into()),
                    }
                }
            }
            '"' => {
                in_word = true;
                loop {
                    match chars.next() {
                        Some('"') => break,
                        Some('\\') => match chars.next() {
                            Some(c @ ('"' | '\\' | '$' | '`')) => word.push(c),
                            Some(c) => {
                                word.push('\\');
                                word.push(c);
                            }
                            None => return Err("a double quote (\") is not closed".into()),
                        },
                        Some(c) => word.push(c),
                        None => return Err("a double quote (\") is not closed".into()),
                    }
                }
            }
            '\\' => {
                in_word = true;
                match chars.next() {
                    Some(c) => word.push(c),
                    None => return Err("it ends in a lone backslash".into()),
                }
            }
            c => {
                in_word = true;
                word.push(c);
            }
        }
    }
    if in_word {
        words.push(word);
    }
    Ok(words)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[cfg(feature = "mpi")]
    #[test]
    fn launcher_words_split_like_a_shell() {
        assert_eq!(
            split_words(r#"mpiexec.openmpi --mca io romio321  -x "A=b c" 'd e'\ f"#).unwrap(),
            [
                "mpiexec.openmpi",
                "--mca",
                "io",
                "romio321",
                "-x",
                "A=b c",
                "d e f"
            ]
        );
        assert_eq!(
            split_words(r#"a "x\"y\\z" ''"#).unwrap(),
            ["a", r#"x"y\z"#, ""]
        );
        assert!(
            split_words("mpiexec 'open")
                .unwrap_err()
                .contains("single quote")
        );
        assert!(
            split_words("mpiexec \"open")
                .unwrap_err()
                .contains("double quote")
        );
        assert!(split_words("").unwrap().is_empty());
    }

    #[cfg(feature = "mpi")]
    #[test]
    fn open_mpi_is_told_from_its_version_text() {
        assert!(is_open_mpi("mpiexec (OpenRTE) 4.1.4\n"));
        assert!(is_open_mpi("mpirun (Open MPI) 5.0.3"));
        assert!(!is_open_mpi("HYDRA build details:\n    Version: 4.0.2"));
    }
}

/// A child run (`mpiexec … piotwin run …` or a twin run) in a process group of
/// its own, so that Ctrl-C at the terminal reaches this process only, and a
/// thread that passes this process's stop request on to it, once (a second
/// Ctrl-C makes mpiexec abort at once), and never before the child has run
/// [`RELAY_AFTER`]: MPICH 4.0's hydra loses a SIGINT that arrives while it is
/// still starting its ranks, which then wait in `MPI_Init` for ever (seen in
/// CI: a calibration's pingpong step signalled 0.1 s after its launch).
pub(crate) struct Relayed {
    /// The child.
    pub(crate) child: Child,
    ended: Arc<AtomicBool>,
    relay: Option<JoinHandle<()>>,
}

/// How long a relayed child runs before a stop request is passed on to it.
pub(crate) const RELAY_AFTER: std::time::Duration = std::time::Duration::from_secs(2);

impl Relayed {
    /// Starts `cmd` as a relayed child.
    pub(crate) fn spawn(cmd: &mut Command) -> std::io::Result<Relayed> {
        let child = cmd.process_group(0).spawn()?;
        let ended = Arc::new(AtomicBool::new(false));
        let relay = {
            let (ended, pid) = (ended.clone(), child.id() as i32);
            let started = std::time::Instant::now();
            std::thread::spawn(move || {
                while !ended.load(Ordering::SeqCst) {
                    if let Some(signal) = stop::requested()
                        && started.elapsed() >= RELAY_AFTER
                    {
                        // SAFETY: kill(2) on our child, not yet reaped while `ended` is false.
                        unsafe { libc::kill(pid, signal) };
                        return;
                    }
                    std::thread::sleep(std::time::Duration::from_millis(20));
                }
            })
        };
        Ok(Relayed {
            child,
            ended,
            relay: Some(relay),
        })
    }

    /// Waits for the child (its output is read elsewhere) and stops the relay.
    pub(crate) fn wait(mut self) -> std::io::Result<std::process::ExitStatus> {
        // The child is waited for without reaping it first, so the relay can
        // never signal a process that reused its pid.
        let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
        // SAFETY: waitid(2) on our child with WNOWAIT leaves it to `wait`.
        unsafe {
            libc::waitid(
                libc::P_PID,
                self.child.id(),
                &mut info,
                libc::WEXITED | libc::WNOWAIT,
            )
        };
        self.ended.store(true, Ordering::SeqCst);
        if let Some(r) = self.relay.take() {
            let _ = r.join();
        }
        self.child.wait()
    }
}
