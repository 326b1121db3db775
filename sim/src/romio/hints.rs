//! The hints in effect on an open file, as ROMIO resolves them at
//! `MPI_File_open` (`ad_hints.c`, `cb_config_list.c`): the user's `MPI_Info`
//! over ROMIO's defaults, checked, and the aggregator list built from
//! `cb_config_list` and `cb_nodes`.

use crate::storage::fs::FileSystemKind as _;
use piotwin_types::Hints;

use crate::scenario::FileSystem;

/// A `romio_cb_*` / `romio_ds_*` switch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Switch {
    /// Always on.
    Enable,
    /// Always off.
    Disable,
    /// ROMIO decides per call (collective buffering: only when accesses interleave;
    /// data sieving: on).
    Automatic,
}

impl Switch {
    fn parse(key: &str, v: &str) -> Result<Switch, HintError> {
        match v {
            "enable" => Ok(Switch::Enable),
            "disable" => Ok(Switch::Disable),
            "automatic" => Ok(Switch::Automatic),
            _ => Err(HintError::new(
                key,
                v,
                "allowed values are enable, disable, automatic",
            )),
        }
    }

    fn name(self) -> &'static str {
        match self {
            Switch::Enable => "enable",
            Switch::Disable => "disable",
            Switch::Automatic => "automatic",
        }
    }
}

/// A hint value ROMIO would not take: the key, the value, what is allowed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("hint `{key}={value}`: {allowed}")]
pub struct HintError {
    /// The hint's key.
    pub key: String,
    /// The value given.
    pub value: String,
    /// What is wrong, and what is allowed.
    pub allowed: String,
}

impl HintError {
    fn new(key: &str, value: &str, allowed: impl Into<String>) -> HintError {
        HintError {
            key: key.into(),
            value: value.into(),
            allowed: allowed.into(),
        }
    }
}

/// ROMIO's default `cb_buffer_size`: 16 MiB.
pub const CB_BUFFER_SIZE: u64 = 16 << 20;
/// ROMIO's default `ind_rd_buffer_size`: 4 MiB.
pub const IND_RD_BUFFER_SIZE: u64 = 4 << 20;
/// ROMIO's default `ind_wr_buffer_size`: 512 KiB.
pub const IND_WR_BUFFER_SIZE: u64 = 512 << 10;

/// Hints ROMIO reports but the twin does not model (they only change how ROMIO
/// arranges its own messages); reported with the user's value or ROMIO's default
/// so the twin's key set is the one `MPI_File_get_info` gives under MPICH.
const ECHOED: [(&str, &str); 6] = [
    ("romio_cb_alltoall", "automatic"),
    ("romio_cb_ds_threshold", "0"),
    ("romio_cb_fr_alignment", "1"),
    ("romio_cb_fr_types", "aar"),
    ("romio_cb_pfr", "disable"),
    ("romio_synchronized_flush", "disabled"),
];

/// The hints in effect on one open file.
#[derive(Debug, Clone, PartialEq)]
pub struct Effective {
    /// Collective buffer per aggregator and round, bytes (`cb_buffer_size`).
    pub cb_buffer_size: u64,
    /// The aggregators: ranks of the file's communicator, in file-domain order
    /// (`romio_aggregator_list`; its length is `cb_nodes`).
    pub aggregators: Vec<usize>,
    /// `cb_config_list` as given (`*:N`: at most N aggregators per node).
    pub cb_config_list: String,
    /// `romio_cb_read`.
    pub cb_read: Switch,
    /// `romio_cb_write`.
    pub cb_write: Switch,
    /// `romio_ds_read`.
    pub ds_read: Switch,
    /// `romio_ds_write`.
    pub ds_write: Switch,
    /// Data-sieving buffer for independent reads, bytes (`ind_rd_buffer_size`).
    pub ind_rd_buffer_size: u64,
    /// Data-sieving buffer for independent writes, bytes (`ind_wr_buffer_size`).
    pub ind_wr_buffer_size: u64,
    /// File-domain alignment in bytes (`striping_unit`; 0: even split, no alignment).
    pub striping_unit: u64,
    /// Stripe count of the file (`striping_factor`; parallel file systems only).
    pub striping_factor: Option<usize>,
    /// ROMIO's driver name for the file system (`romio_filesystem_type`).
    pub fs_type: &'static str,
    /// `romio_no_indep_rw`: only aggregators open the file and independent I/O is refused.
    pub no_indep_rw: bool,
    echoed: Vec<(String, String)>,
}

fn bytes(h: &Hints, key: &str, default: u64) -> Result<u64, HintError> {
    match h.get(key) {
        None => Ok(default),
        Some(v) => match v.trim().parse::<u64>() {
            Ok(n) if n > 0 => Ok(n),
            _ => Err(HintError::new(
                key,
                v,
                format!("expected a positive whole number of bytes, e.g. {default}"),
            )),
        },
    }
}

fn switch(h: &Hints, key: &str) -> Result<Switch, HintError> {
    h.get(key)
        .map_or(Ok(Switch::Automatic), |v| Switch::parse(key, v.trim()))
}

/// ROMIO's aggregator list for `cb_config_list = "*:N"` (or `"*"`, `"*:*"`):
/// nodes in the order of their lowest rank, up to N ranks of each (lowest
/// ranks first), node after node.
fn config_list(value: &str, rank_nodes: &[usize]) -> Result<Vec<usize>, HintError> {
    let per_node = match value.trim() {
        "*" | "*:*" => usize::MAX,
        v => match v.strip_prefix("*:").map(|n| n.trim().parse::<usize>()) {
            Some(Ok(n)) if n > 0 => n,
            _ => {
                return Err(HintError::new(
                    "cb_config_list",
                    value,
                    "the twin takes `*:N` (N > 0 aggregators per node), `*:*` or `*`",
                ));
            }
        },
    };
    let mut order: Vec<usize> = Vec::new();
    for &n in rank_nodes {
        if !order.contains(&n) {
            order.push(n);
        }
    }
    let mut out = Vec::new();
    for n in order {
        out.extend(
            rank_nodes
                .iter()
                .enumerate()
                .filter(|&(_, &m)| m == n)
                .map(|(r, _)| r)
                .take(per_node),
        );
    }
    Ok(out)
}

impl Effective {
    /// Resolves `hints` for a file opened by ranks placed on `rank_nodes` (node of
    /// each rank of the file's communicator) on file system `fs`. A value ROMIO
    /// would not understand is an error naming the hint and what is allowed.
    pub fn resolve(
        hints: &Hints,
        rank_nodes: &[usize],
        fs: &FileSystem,
    ) -> Result<Effective, HintError> {
        let cb_config_list = hints.get("cb_config_list").unwrap_or("*:1").to_string();
        let mut aggregators = config_list(&cb_config_list, rank_nodes)?;
        if let Some(v) = hints.get("cb_nodes") {
            match v.trim().parse::<usize>() {
                Ok(n) if n > 0 => aggregators.truncate(n),
                _ => {
                    return Err(HintError::new(
                        "cb_nodes",
                        v,
                        "expected a positive number of aggregators",
                    ));
                }
            }
        }
        let driver = crate::storage::fs::kind(fs).romio();
        let (fs_type, striping_unit, striping_factor) =
            (driver.fs_type, driver.striping_unit, driver.striping_factor);
        // On a parallel file system the file's layout is the file system's (the
        // twin stripes every file alike), so that is what is in effect; elsewhere
        // ROMIO's generic driver only uses `striping_unit` to align file domains.
        let striping_unit = match (driver.layout_fixed, hints.get("striping_unit")) {
            (true, _) | (_, None) => striping_unit,
            (_, Some(_)) => bytes(hints, "striping_unit", 1)?,
        };
        let no_indep_rw = match hints.get("romio_no_indep_rw").map(str::trim) {
            None | Some("false") => false,
            Some("true") => true,
            Some(v) => {
                return Err(HintError::new(
                    "romio_no_indep_rw",
                    v,
                    "allowed values are true, false",
                ));
            }
        };
        let echoed = ECHOED
            .iter()
            .map(|&(k, d)| (k.to_string(), hints.get(k).unwrap_or(d).to_string()))
            .collect();
        Ok(Effective {
            cb_buffer_size: bytes(hints, "cb_buffer_size", CB_BUFFER_SIZE)?,
            aggregators,
            cb_config_list,
            cb_read: switch(hints, "romio_cb_read")?,
            cb_write: switch(hints, "romio_cb_write")?,
            ds_read: switch(hints, "romio_ds_read")?,
            ds_write: switch(hints, "romio_ds_write")?,
            ind_rd_buffer_size: bytes(hints, "ind_rd_buffer_size", IND_RD_BUFFER_SIZE)?,
            ind_wr_buffer_size: bytes(hints, "ind_wr_buffer_size", IND_WR_BUFFER_SIZE)?,
            striping_unit,
            striping_factor,
            fs_type,
            no_indep_rw,
            echoed,
        })
    }

    /// The hints as `MPI_File_get_info` reports them under MPICH's ROMIO (same keys).
    pub fn to_hints(&self) -> Hints {
        let mut h = Hints::new();
        h.set("cb_buffer_size", self.cb_buffer_size.to_string());
        h.set("cb_config_list", self.cb_config_list.clone());
        h.set("cb_nodes", self.aggregators.len().to_string());
        h.set("ind_rd_buffer_size", self.ind_rd_buffer_size.to_string());
        h.set("ind_wr_buffer_size", self.ind_wr_buffer_size.to_string());
        let list: String = self.aggregators.iter().map(|r| format!("{r} ")).collect();
        h.set("romio_aggregator_list", list);
        h.set("romio_cb_read", self.cb_read.name());
        h.set("romio_cb_write", self.cb_write.name());
        h.set("romio_ds_read", self.ds_read.name());
        h.set("romio_ds_write", self.ds_write.name());
        h.set("romio_filesystem_type", self.fs_type);
        h.set(
            "romio_no_indep_rw",
            if self.no_indep_rw { "true" } else { "false" },
        );
        for (k, v) in &self.echoed {
            h.set(k.clone(), v.clone());
        }
        if let Some(f) = self.striping_factor {
            h.set("striping_factor", f.to_string());
            h.set("striping_unit", self.striping_unit.to_string());
        } else if self.striping_unit > 0 {
            h.set("striping_unit", self.striping_unit.to_string());
        }
        h
    }
}
