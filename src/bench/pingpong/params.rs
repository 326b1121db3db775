//! The options, checked.

use super::*;

/// The probe's options.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PingpongParams {
    /// Message sizes, bytes (each at least 1).
    pub sizes: Vec<u64>,
    /// Most exchanges per size.
    pub iterations: u64,
    /// Bytes each size should move at least (sets the exchanges of large sizes).
    pub bytes_per_size: u64,
    /// Barriers timed.
    pub barriers: u64,
    /// Bytes each rank moves per collective call of the two-phase test (none: no test).
    #[serde(default)]
    pub two_phase: Vec<u64>,
    /// Block of the two-phase test's interleaved view, bytes: rank r's blocks lie at
    /// `(r + k·ranks)·block`.
    #[serde(default = "default_block")]
    pub two_phase_block: u64,
    /// The two-phase test's file (created, then deleted).
    #[serde(default = "default_file")]
    pub file: String,
    /// Ranks taking part in the polled test (the first ones; 0: no test).
    #[serde(default)]
    pub polled: u64,
    /// Bytes of each copy of the polled test.
    #[serde(default)]
    pub polled_copies: Vec<u64>,
    /// Bytes each rank writes per call of the locked-write test, one test per
    /// size (none: no test).
    #[serde(default)]
    pub locked_writes: Vec<u64>,
}

fn default_block() -> u64 {
    64 << 10
}

fn default_file() -> String {
    "pingpong.dat".into()
}

impl PingpongParams {
    /// Exchanges timed for a message of `size` bytes (see the module docs).
    pub fn exchanges(&self, size: u64) -> u64 {
        (self.bytes_per_size / size.max(1)).clamp(4, self.iterations.max(4))
    }

    /// Copies (and steps) timed per copy size of the polled test: about
    /// `bytes_per_size` bytes, 20 to `iterations`.
    pub fn polled_steps(&self, bytes: u64) -> u64 {
        (self.bytes_per_size / bytes.max(1)).clamp(20, self.iterations.max(20))
    }

    /// Calls timed by the locked-write test of `bytes` per rank on `ranks`
    /// ranks: about `bytes_per_size` bytes in all, 3 to 20 calls.
    pub fn locked_calls(&self, bytes: u64, ranks: u64) -> u64 {
        (self.bytes_per_size / (bytes * ranks).max(1)).clamp(3, 20)
    }

    /// Collective calls timed per two-phase size of `per_rank` bytes on `ranks`
    /// ranks: about `bytes_per_size` bytes in all, 3 to 10 calls.
    pub fn two_phase_calls(&self, per_rank: u64, ranks: u64) -> u64 {
        (self.bytes_per_size / (per_rank * ranks).max(1)).clamp(3, 10)
    }

    /// Checks the options for `ranks` ranks; the error names the option.
    pub fn validate(&self, ranks: u64) -> Result<(), OptionError> {
        if ranks < 2 {
            return Err(opt_err(
                "--ranks",
                ranks,
                "pingpong needs at least 2 ranks to pair; run it under mpiexec -n 2 or more, or with --ranks 2",
            ));
        }
        if self.sizes.is_empty() {
            return Err(opt_err(
                "--sizes",
                "",
                "give at least one message size, e.g. --sizes 1,1k,64k,1m",
            ));
        }
        if let Some(s) = self.sizes.iter().find(|&&s| s > (1 << 30)) {
            return Err(opt_err(
                "--sizes",
                s,
                "over the 1 GiB a single message may have here",
            ));
        }
        if self.two_phase_block == 0 {
            return Err(opt_err("--two-phase-block", 0, "must be at least 1 byte"));
        }
        if let Some(s) = self
            .two_phase
            .iter()
            .find(|&&s| s == 0 || s % self.two_phase_block != 0 || s > (1 << 30))
        {
            return Err(opt_err(
                "--two-phase",
                s,
                &format!(
                    "each size must be a positive multiple of --two-phase-block ({} bytes), at most 1 GiB",
                    self.two_phase_block
                ),
            ));
        }
        if self.polled >= ranks {
            return Err(opt_err(
                "--polled",
                self.polled,
                &format!("the ranks taking part must leave some of the {ranks} to wait"),
            ));
        }
        if self.polled > 0 && self.polled_copies.is_empty() {
            return Err(opt_err(
                "--polled-copies",
                "",
                "give the copy sizes of the polled test, e.g. --polled-copies 64k,1m,8m",
            ));
        }
        if let Some(s) = self
            .polled_copies
            .iter()
            .find(|&&s| s == 0 || s > (1 << 30))
        {
            return Err(opt_err(
                "--polled-copies",
                s,
                "each copy must be 1 byte to 1 GiB",
            ));
        }
        if let Some(&s) = self
            .locked_writes
            .iter()
            .find(|&&s| s == 0 || s > (1 << 30))
        {
            return Err(opt_err(
                "--locked-writes",
                s,
                "each rank's write must be 1 byte to 1 GiB",
            ));
        }
        if self.iterations == 0 || self.barriers == 0 {
            return Err(opt_err(
                "--iterations/--barriers",
                "0",
                "must be at least 1",
            ));
        }
        Ok(())
    }
}
