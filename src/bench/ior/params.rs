//! The options, checked.

use super::*;

/// The probe's options (IOR's names in the field docs).
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct IorParams {
    /// `-a`: POSIX or MPI-IO.
    pub api: Api,
    /// `-b`: bytes per rank per segment.
    pub block: u64,
    /// `-t`: bytes per transfer (divides `block`).
    pub transfer: u64,
    /// `-s`: number of segments (≥ 1).
    pub segments: u64,
    /// `-F`: one file per rank instead of one shared file.
    pub file_per_proc: bool,
    /// `-c`: collective transfers (MPI-IO only).
    pub collective: bool,
    /// `-C`: read back what another node wrote (rank shift by `tasks_per_node`).
    pub reorder: bool,
    /// `--tasks-per-node`: ranks per node, the shift of `-C` (≥ 1).
    pub tasks_per_node: u64,
    /// `-e`: fsync (`MPI_File_sync`) after the writes, inside the timed wr phase.
    pub fsync: bool,
    /// `-w`: write.
    pub write: bool,
    /// `-r`: read (and verify where data exists).
    pub read: bool,
    /// `-z`: transfers in a seeded random order.
    pub random: bool,
    /// `-i`: repetitions (≥ 1).
    pub repetitions: u64,
    /// `-k`: keep the file after each repetition (otherwise a repetition that
    /// wrote removes it at its end, as IOR does).
    pub keep_file: bool,
    /// `-o`: the test file (`-F` appends `.%08d` of the rank).
    pub path: String,
    /// MPI-IO hints given (`--hint`, `--hints-file`).
    pub hints: Hints,
    /// Seed of the `-z` order and of the data pattern.
    pub seed: u64,
}

impl IorParams {
    /// Checks the options on their own and for a run on `ranks` ranks.
    pub fn validate(&self, ranks: u64) -> Result<(), OptionError> {
        if self.block == 0 {
            return Err(opt_err(
                "-b",
                self.block,
                "the block size must be at least 1 byte",
            ));
        }
        if self.transfer == 0 {
            return Err(opt_err(
                "-t",
                self.transfer,
                "the transfer size must be at least 1 byte",
            ));
        }
        if !self.block.is_multiple_of(self.transfer) {
            return Err(opt_err(
                "-t",
                self.transfer,
                format!(
                    "the transfer size must divide the block size (-b {})",
                    self.block
                ),
            ));
        }
        if self.transfer > usize::MAX as u64 / 2 {
            return Err(opt_err(
                "-t",
                self.transfer,
                "too large for one buffer on this machine",
            ));
        }
        if self.segments == 0 {
            return Err(opt_err("-s", 0, "at least one segment"));
        }
        if self.repetitions == 0 {
            return Err(opt_err("-i", 0, "at least one repetition"));
        }
        if self.tasks_per_node == 0 {
            return Err(opt_err("--tasks-per-node", 0, "at least one rank per node"));
        }
        if self.collective && self.api == Api::Posix {
            return Err(opt_err("-c", "", "collective I/O needs -a MPIIO"));
        }
        if self.path.is_empty() {
            return Err(opt_err("-o", "", "the test file name is empty"));
        }
        if ranks == 0 {
            return Err(opt_err("--ranks", 0, "at least one rank"));
        }
        let file_bytes = if self.file_per_proc {
            Some(self.block)
        } else {
            self.block.checked_mul(ranks)
        }
        .and_then(|x| x.checked_mul(self.segments));
        if file_bytes.is_none() {
            return Err(opt_err(
                "-s",
                self.segments,
                "segments × ranks × block size exceeds 2^64 bytes",
            ));
        }
        Ok(())
    }

    /// Transfers per block (`b / t`).
    pub fn transfers_per_block(&self) -> u64 {
        self.block / self.transfer
    }

    /// Transfers per rank and access (`s · b / t`).
    pub fn transfers_per_rank(&self) -> u64 {
        self.segments * self.transfers_per_block()
    }

    /// Bytes each rank moves per access.
    pub fn bytes_per_rank(&self) -> u64 {
        self.segments * self.block
    }

    /// The rank whose data `rank` accesses: itself for writes, and for reads under
    /// `-C` the rank `tasks_per_node` further on (mod `ranks`).
    pub fn role_rank(&self, access: Access, rank: u64, ranks: u64) -> u64 {
        match access {
            Access::Read if self.reorder => (rank + self.tasks_per_node) % ranks,
            _ => rank,
        }
    }

    /// The file rank `role` accesses: the shared file, or `path.%08d` under `-F`.
    pub fn file_name(&self, role: u64) -> String {
        if self.file_per_proc {
            format!("{}.{:08}", self.path, role)
        } else {
            self.path.clone()
        }
    }

    /// Identity of the file for the data pattern: the owning rank under `-F`,
    /// `u64::MAX` for the shared file (where the offset already says who wrote).
    pub(super) fn file_id(&self, role: u64) -> u64 {
        if self.file_per_proc { role } else { u64::MAX }
    }

    /// File offset of the `q`-th transfer visited by the rank in role `role`:
    /// `q` is mapped through the `-z` permutation, then split into segment `s` and
    /// transfer `j`; shared file `j·t + s·(N·b) + role·b`, file per process `j·t + s·b`.
    pub fn offset(&self, role: u64, ranks: u64, q: u64) -> u64 {
        let n = self.transfers_per_rank();
        let idx = if self.random {
            permute(q, n, self.seed.wrapping_add(role))
        } else {
            q
        };
        let (s, j) = (
            idx / self.transfers_per_block(),
            idx % self.transfers_per_block(),
        );
        if self.file_per_proc {
            j * self.transfer + s * self.block
        } else {
            j * self.transfer + s * (ranks * self.block) + role * self.block
        }
    }

    /// The accesses of each repetition, in order (`-w`, `-r`; neither means both).
    pub fn accesses(&self) -> Vec<Access> {
        let (w, r) = if !self.write && !self.read {
            (true, true)
        } else {
            (self.write, self.read)
        };
        let mut v = Vec::new();
        if w {
            v.push(Access::Write);
        }
        if r {
            v.push(Access::Read);
        }
        v
    }
}
