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
}

impl PingpongParams {
    /// Exchanges timed for a message of `size` bytes (see the module docs).
    pub fn exchanges(&self, size: u64) -> u64 {
        (self.bytes_per_size / size.max(1)).clamp(4, self.iterations.max(4))
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
