//! Scenarios: one storage system described completely in TOML — compute nodes,
//! network, file server and device, metadata costs, MPI-IO costs — with units on
//! every quantity and a `[source]` table saying where the numbers came from.
//!
//! Loading is strict: unknown keys, missing units, impossible values and missing
//! keys are errors that name the file, the line, the key path, the value as
//! written and what is allowed (see [`ScenarioError`]). The document is read from
//! `toml`'s spanned tree ([`toml::de::DeTable`]) so every error has its line.
//!
//! ```toml
//! name = "example"
//! seed = 1
//! [source]
//! general = "datasheet numbers"
//! [[nodes]]
//! name = "compute"
//! count = 4
//! cores = 8
//! memory = "64GiB"
//! nic_bw = "10Gb/s"
//! nic_latency = "2us"
//! [nodes.compute]
//! memcpy = "5GB/s"
//! fft = "2Gflop/s"
//! bt = "1Gflop/s"
//! flops = "2Gflop/s"
//! [network]
//! bandwidth = "40GB/s"
//! latency = "1us"
//! [server]
//! nic_bw = "10Gb/s"
//! [server.device]
//! read_bw = "500MB/s"
//! write_bw = "400MB/s"
//! read_latency = "80us"
//! write_latency = "30us"
//! [metadata]
//! open = "50us"
//! create = "200us"
//! close = "20us"
//! delete = "150us"
//! sync = "1ms"
//! [mpiio]
//! shared_pointer = "100us"
//! independent_call = "5us"    # optional CPU costs per call (default 0)
//! [calibration."mpiio.independent_call"]
//! value = "5us"
//! low = "4.8us"
//! high = "5.2us"
//! probe = "ior mpiio independent, 1 KiB-1 MiB transfers, 1-2 ranks"
//! quality = "r2=0.998 n=24"
//! ```
//!
//! Optional keys that are off by default model the client's CPU (see
//! `scenarios/README.md`): `[[nodes]] syscall`, `oversubscribed_wakeup`,
//! `[nodes.cache] write_bw`, `read_bw`, `[mpiio] independent_call`,
//! `collective_call`, `open`, `close`. The `[calibration]` table records what
//! `piotwin calibrate` fitted ([`Calibrated`]); its key paths are checked
//! against the schema.

use std::collections::BTreeMap;
use std::fmt;
use std::ops::Range;
use std::path::Path;

use toml::Spanned;
use toml::de::{DeTable, DeValue};

use crate::units::{self, UnitError};

pub mod schema;

use schema::{Default as KeyDefault, Holds};

/// An error in a scenario file: where, which key, which value, and what is allowed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub struct ScenarioError {
    /// The file (as given to [`Scenario::load`] or [`Scenario::from_str`]).
    pub file: String,
    /// 1-based line of the offending key or value, where known.
    pub line: Option<usize>,
    /// Dotted key path, e.g. `server.device.write_bw`, where one applies.
    pub key: Option<String>,
    /// The value as written in the file, where one applies.
    pub value: Option<String>,
    /// What is wrong and what is allowed.
    pub message: String,
}

impl fmt::Display for ScenarioError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.file)?;
        if let Some(l) = self.line {
            write!(f, ":{l}")?;
        }
        write!(f, ":")?;
        if let Some(k) = &self.key {
            write!(f, " {k}")?;
            if let Some(v) = &self.value {
                write!(f, " = {v}")?;
            }
            write!(f, ":")?;
        }
        write!(f, " {}", self.message)
    }
}

/// A group of identical compute nodes.
#[derive(Debug, Clone, PartialEq)]
pub struct NodeGroup {
    /// Name of the group (for reports).
    pub name: String,
    /// Number of nodes in the group.
    pub count: usize,
    /// Cores per node: ranks beyond `count·cores` oversubscribe the cores.
    pub cores: usize,
    /// Main memory per node in bytes (the default page-cache capacity).
    pub memory: u64,
    /// NIC bandwidth per direction in bytes/s.
    pub nic_bw: f64,
    /// NIC latency per message in seconds.
    pub nic_latency: f64,
    /// The switch the nodes' NICs attach to (a name from `[network]`).
    pub switch: String,
    /// Per-core compute rates.
    pub compute: ComputeRates,
    /// The client page cache, if the file system's clients cache (absent = none).
    pub cache: Option<ClientCache>,
    /// CPU time of one POSIX read or write system call on a core, in seconds
    /// (kernel entry and exit, VFS and file-system bookkeeping): charged per
    /// file-system request a rank issues, whether a POSIX call or one ROMIO
    /// makes for it. 0 = free (the default).
    pub syscall: f64,
    /// Extra latency, in seconds, of a message or synchronisation step that
    /// reaches a rank on an oversubscribed node (more ranks than `cores`):
    /// MPICH busy-polls, so a descheduled receiver answers only at its next
    /// time slice. 0 = none (the default).
    pub oversubscribed_wakeup: f64,
}

/// Per-core compute rates, one per kernel kind.
#[derive(Debug, Clone, PartialEq)]
pub struct ComputeRates {
    /// Memory copy bandwidth in bytes/s (also intra-node message bandwidth and page-cache copies).
    pub memcpy: f64,
    /// Complex FFT rate in flop/s.
    pub fft: f64,
    /// NPB BT solver rate in flop/s.
    pub bt: f64,
    /// Any other kernel, in flop/s.
    pub flops: f64,
    /// Generating or checking a benchmark's data pattern, bytes/s (`pattern`;
    /// absent = infinite: the pattern costs nothing, as in datasheet scenarios).
    pub pattern: f64,
}

/// A client node's page cache, modelled on Linux's write-back (`vm.dirty_ratio`,
/// `vm.dirty_background_ratio`; Documentation/admin-guide/sysctl/vm.rst).
#[derive(Debug, Clone, PartialEq)]
pub struct ClientCache {
    /// Bytes of file data the node can cache (clean + dirty).
    pub capacity: u64,
    /// Fraction of `capacity` that may be dirty before writers are throttled (Linux default 0.2).
    pub dirty_ratio: f64,
    /// Fraction of `capacity` dirty at which background write-back starts (Linux default 0.1).
    pub dirty_background_ratio: f64,
    /// Per-core rate of copying written data into the page cache, in bytes/s
    /// (page allocation, zeroing and accounting make it slower than a memcpy);
    /// defaults to `compute.memcpy`.
    pub write_bw: f64,
    /// Per-core rate of copying cached data out of the page cache, in bytes/s;
    /// defaults to `compute.memcpy`.
    pub read_bw: f64,
    /// Rate at which the page cache takes memory the node has not backed yet,
    /// bytes/s per node (`fresh_bw`; absent = infinite): a VM whose hypervisor
    /// took back free memory faults it in again, a full host reclaims first.
    pub fresh_bw: f64,
    /// Memory the page cache can take without fresh memory, bytes (`warm`;
    /// default `capacity`): freed cache pages stay backed and are reused at
    /// the normal rate.
    pub warm: u64,
    /// Largest read-ahead window in bytes (`readahead`; 0 = none; default
    /// 128 KiB, Linux's `read_ahead_kb`): a rank reading a file sequentially
    /// that misses the cache fetches a window beyond its request, growing as
    /// Linux's on-demand read-ahead grows it (`mm/readahead.c`).
    pub readahead: u64,
}

/// The interconnect: switches (each with a backplane bandwidth) joined by links;
/// routes are shortest paths by latency.
#[derive(Debug, Clone, PartialEq)]
pub struct Network {
    /// Backplane bandwidth of every switch in bytes/s, shared by all flows crossing it.
    pub bandwidth: f64,
    /// One-way latency through a switch in seconds.
    pub latency: f64,
    /// Links between switches (none: one switch, `core`).
    pub links: Vec<Link>,
}

/// A full-duplex link between two switches.
#[derive(Debug, Clone, PartialEq)]
pub struct Link {
    /// One end (a switch name).
    pub from: String,
    /// The other end.
    pub to: String,
    /// Bandwidth per direction in bytes/s.
    pub bandwidth: f64,
    /// One-way latency in seconds.
    pub latency: f64,
}

/// The I/O servers (one for a local or NFS file system, several for a parallel one).
#[derive(Debug, Clone, PartialEq)]
pub struct Server {
    /// Number of identical servers.
    pub count: usize,
    /// Server NIC bandwidth per direction in bytes/s.
    pub nic_bw: f64,
    /// The switch the servers attach to.
    pub switch: String,
    /// CPU time per request at the server in seconds (requests queue FIFO on one CPU).
    pub request_cpu: f64,
    /// The server's cache, if any.
    pub cache: Option<ServerCache>,
    /// Each server's storage device.
    pub device: Device,
}

/// A server's cache in front of its device: an LRU read cache, write-back or write-through.
#[derive(Debug, Clone, PartialEq)]
pub struct ServerCache {
    /// Bytes it holds.
    pub capacity: u64,
    /// Copy bandwidth in and out of it in bytes/s.
    pub bandwidth: f64,
    /// True: writes complete in the cache and a flusher writes them to the device;
    /// false: writes go through to the device before they complete.
    pub write_back: bool,
    /// Fraction of `capacity` that may be dirty (write-back only); writes beyond go through.
    pub dirty_ratio: f64,
}

/// Order in which an HDD serves queued requests.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum QueueOrder {
    /// Arrival order: each request seeks from the previous one.
    Fifo,
    /// Elevator (SCAN): a request joins the sorted sweep and seeks from its nearest queued neighbour.
    Elevator,
}

/// A storage device.
#[derive(Debug, Clone, PartialEq)]
pub enum Device {
    /// Flash: per-request latency, bandwidth, internal channels.
    Ssd(Ssd),
    /// Disk: seek over distance, rotation, zoned transfer rate, queue order.
    Hdd(Hdd),
    /// RAID 0, 5 or 6 over identical member devices.
    Raid(Raid),
}

/// A solid-state device.
#[derive(Debug, Clone, PartialEq)]
pub struct Ssd {
    /// Read bandwidth in bytes/s.
    pub read_bw: f64,
    /// Write bandwidth in bytes/s.
    pub write_bw: f64,
    /// Service latency per read request in seconds.
    pub read_latency: f64,
    /// Service latency per write request in seconds.
    pub write_latency: f64,
    /// Relative spread of the request latency: each request's latency is drawn
    /// uniformly from `latency·(1 ± jitter)` with the model's seeded RNG. 0 = none.
    pub latency_jitter: f64,
    /// Requests whose latency phases overlap (internal channels / dies); more queue.
    pub channels: usize,
}

/// A hard disk (Ruemmler & Wilkes, *An introduction to disk drive modeling*, IEEE Computer 27(3), 1994).
#[derive(Debug, Clone, PartialEq)]
pub struct Hdd {
    /// Capacity in bytes (seek distances are fractions of it).
    pub capacity: u64,
    /// Spindle speed in revolutions per minute.
    pub rpm: f64,
    /// Track-to-track seek time in seconds (shortest non-zero seek).
    pub seek_track: f64,
    /// Full-stroke seek time in seconds.
    pub seek_full: f64,
    /// Media transfer rate at the outer edge (offset 0) in bytes/s.
    pub transfer_rate: f64,
    /// Media transfer rate at the inner edge in bytes/s (zoned recording).
    pub transfer_rate_inner: f64,
    /// Queue order.
    pub queue: QueueOrder,
}

/// A RAID array (Chen, Lee, Gibson, Katz & Patterson, *RAID: High-Performance,
/// Reliable Secondary Storage*, ACM Computing Surveys 26(2), 1994).
#[derive(Debug, Clone, PartialEq)]
pub struct Raid {
    /// 0, 5 or 6.
    pub level: u8,
    /// Member devices (data + parity).
    pub disks: usize,
    /// Stripe unit in bytes (contiguous bytes on one member).
    pub stripe_unit: u64,
    /// The member device (every member alike; not itself a RAID).
    pub member: Box<Device>,
}

/// Kind of file system.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FsKind {
    /// A local file system: the one "server" is the node's own block layer.
    Local,
    /// NFS-like: one server; clients flush dirty data on close (close-to-open consistency).
    Nfs,
    /// Parallel (Lustre/PVFS2/GPFS-like): files striped over the servers.
    Parallel,
}

/// The file system.
#[derive(Debug, Clone, PartialEq)]
pub struct FileSystem {
    /// Kind.
    pub kind: FsKind,
    /// Stripe size in bytes (parallel; consecutive stripes go to consecutive servers).
    pub stripe_size: u64,
    /// Servers a file is striped over (parallel; ≤ server count).
    pub stripe_count: usize,
    /// Extent-lock granularity in bytes (Lustre LDLM / GPFS byte-range tokens); `None` = no locking.
    pub lock_granularity: Option<u64>,
    /// Time to revoke a lock held by another client (callback round trip), in seconds.
    pub lock_revoke: f64,
}

/// Metadata operation costs at the server, in seconds each; the server runs them one at a time.
#[derive(Debug, Clone, PartialEq)]
pub struct Metadata {
    /// Open an existing file.
    pub open: f64,
    /// Create a file (instead of `open` when it does not exist).
    pub create: f64,
    /// Close.
    pub close: f64,
    /// Delete.
    pub delete: f64,
    /// Bytes of a deleted file dropped per second (`delete_bw`; absent =
    /// infinite): unlinking a large file drops its cached pages and frees its
    /// extents, a cost in its size on top of `delete`.
    pub delete_bw: f64,
    /// `fsync`/`MPI_File_sync`: the journal commit after the dirty data reached the servers.
    pub sync: f64,
}

/// MPI-IO middleware costs.
#[derive(Debug, Clone, PartialEq)]
pub struct MpiIo {
    /// Time to read and update the shared file pointer once (ROMIO keeps it in a
    /// hidden file under a lock), in seconds.
    pub shared_pointer: f64,
    /// CPU time of each independent data call (`MPI_File_{read,write}[_at]`,
    /// their nonblocking forms) in the MPI-IO library above its system calls
    /// (ROMIO's argument checks, view handling, ADIO dispatch), in seconds. 0 = free.
    pub independent_call: f64,
    /// CPU time of each collective data call (`*_all`, ordered calls) beyond
    /// the modelled messages (computing and exchanging offsets, file-domain and
    /// request bookkeeping), in seconds. 0 = free.
    pub collective_call: f64,
    /// CPU time of `MPI_File_open` on each rank beyond the metadata operation
    /// (communicator duplicate, hints, ADIO set-up), in seconds. 0 = free.
    pub open: f64,
    /// CPU time of `MPI_File_close` on each rank beyond the metadata operation, in seconds. 0 = free.
    pub close: f64,
}

/// The kind of value a scenario key holds, and so the unit a
/// [`Calibrated`] value of it is written in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KeyKind {
    /// A size in bytes (`"4MiB"`).
    Size,
    /// A data rate in bytes/s (`"200MB/s"`).
    Rate,
    /// A time in seconds (`"5us"`).
    Time,
    /// A compute rate in flop/s (`"2Gflop/s"`).
    Flops,
    /// A plain number (counts, ratios): written without a unit.
    Number,
}

/// One fitted parameter as the calibrator recorded it in `[calibration."<key path>"]`:
/// the value, its confidence interval, the probe it came from and the fit's quality.
#[derive(Debug, Clone, PartialEq)]
pub struct Calibrated {
    /// What the key holds (the unit of `value`, `low` and `high`).
    pub kind: KeyKind,
    /// The fitted value in the key's base unit (s, B, B/s, flop/s or a plain number).
    pub value: f64,
    /// Lower confidence bound, same unit.
    pub low: f64,
    /// Upper confidence bound, same unit.
    pub high: f64,
    /// `value`, `low` and `high` as written in the file.
    pub text: [String; 3],
    /// The probe the value was fitted from (e.g. `"iozone seq write, 1 rank"`).
    pub probe: String,
    /// The fit's quality as the calibrator states it (e.g. `"r2=0.998 n=24"`).
    pub quality: String,
}

impl Calibrated {
    /// This entry as the TOML table the parser reads back, under `key` (a key path
    /// such as `mpiio.independent_call` or `nodes[0].cache.write_bw`).
    pub fn to_toml(&self, key: &str) -> String {
        let q = |s: &str| toml::Value::String(s.to_string()).to_string();
        let v = |s: &str| match self.kind {
            KeyKind::Number => s.to_string(),
            _ => q(s),
        };
        format!(
            "[calibration.{}]\nvalue = {}\nlow = {}\nhigh = {}\nprobe = {}\nquality = {}\n",
            q(key),
            v(&self.text[0]),
            v(&self.text[1]),
            v(&self.text[2]),
            q(&self.probe),
            q(&self.quality)
        )
    }
}

/// A storage system. Built by [`Scenario::load`] or [`Scenario::from_str`].
#[derive(Debug, Clone, PartialEq)]
pub struct Scenario {
    /// The file it was read from.
    pub file: String,
    /// Short name.
    pub name: String,
    /// One line describing the system.
    pub description: String,
    /// Default RNG seed for runs of this scenario.
    pub seed: u64,
    /// Where the numbers came from: topic (or key path) → note, in key order.
    pub source: BTreeMap<String, String>,
    /// Compute node groups; ranks are placed over them in order.
    pub nodes: Vec<NodeGroup>,
    /// The interconnect.
    pub network: Network,
    /// The I/O servers.
    pub server: Server,
    /// The file system.
    pub filesystem: FileSystem,
    /// Metadata costs.
    pub metadata: Metadata,
    /// MPI-IO middleware costs.
    pub mpiio: MpiIo,
    /// Fitted parameters with their confidence intervals, by key path (the
    /// `[calibration]` table `piotwin calibrate` writes); empty for datasheet scenarios.
    pub calibration: BTreeMap<String, Calibrated>,
}

/// Reading context: the file name, the text it was parsed from (the file, then
/// one line per `--set` override) and where each override's text lies.
struct Doc<'t> {
    file: &'t str,
    text: &'t str,
    /// (start of the override's text in `text`, the override as given: `KEY=VALUE`).
    overrides: Vec<(usize, String)>,
}

impl Doc<'_> {
    fn line(&self, span: &Range<usize>) -> usize {
        let end = span.start.min(self.text.len());
        self.text[..end].bytes().filter(|&b| b == b'\n').count() + 1
    }

    /// The `--set` override a span lies in, if any.
    fn override_of(&self, span: &Range<usize>) -> Option<&str> {
        self.overrides
            .iter()
            .rev()
            .find(|(start, _)| span.start >= *start)
            .map(|(_, o)| o.as_str())
    }

    fn err(
        &self,
        span: &Range<usize>,
        key: &str,
        value: bool,
        message: impl Into<String>,
    ) -> ScenarioError {
        let raw = self.text.get(span.clone()).map(str::trim).unwrap_or("");
        let (file, line) = match self.override_of(span) {
            Some(o) => (format!("--set {o}"), None),
            None => (self.file.to_string(), Some(self.line(span))),
        };
        ScenarioError {
            file,
            line,
            key: (!key.is_empty()).then(|| key.to_string()),
            value: (value && !raw.is_empty()).then(|| raw.to_string()),
            message: message.into(),
        }
    }
}

/// One table being read: checks its keys against the allowed set on creation.
struct Tbl<'a, 'i> {
    doc: &'a Doc<'a>,
    path: String,
    span: Range<usize>,
    table: &'a DeTable<'i>,
}

type Val<'i> = Spanned<DeValue<'i>>;

impl<'a, 'i> Tbl<'a, 'i> {
    fn new(
        doc: &'a Doc<'a>,
        path: String,
        span: Range<usize>,
        table: &'a DeTable<'i>,
        allowed: &[&str],
    ) -> Result<Self, ScenarioError> {
        for (k, _) in table.iter() {
            if !allowed.contains(&k.get_ref().as_ref()) {
                let full = join(&path, k.get_ref());
                let here = if path.is_empty() {
                    "at the top level".to_string()
                } else {
                    format!("in [{path}]")
                };
                return Err(doc.err(
                    &k.span(),
                    &full,
                    false,
                    format!("unknown key; allowed {here}: {}", allowed.join(", ")),
                ));
            }
        }
        Ok(Tbl {
            doc,
            path,
            span,
            table,
        })
    }

    fn key(&self, k: &str) -> String {
        join(&self.path, k)
    }

    /// Checks (debug builds) that key `k` of this table is in the schema and
    /// holds what `ok` accepts: the reader takes every key as the schema
    /// declares it. `[calibration]` entries are checked against the schema
    /// by [`calibrated_key`] instead.
    fn declared(&self, k: &str, ok: fn(Holds) -> bool) {
        if cfg!(debug_assertions) && !self.path.starts_with("calibration") {
            let path = schema::plain(&self.key(k));
            let key = schema::find(&path);
            assert!(
                key.is_some_and(|key| ok(key.holds)),
                "scenario key `{path}` is read as another kind than the schema declares ({key:?})"
            );
        }
    }

    /// Checks (debug builds) that `default`, used where key `k` is absent, is
    /// the schema's: its value (parsed by `parse`), or one it says is worked
    /// out from other keys.
    fn default_is<T: PartialEq + fmt::Debug>(
        &self,
        k: &str,
        default: &T,
        parse: fn(&str) -> Option<T>,
    ) {
        if cfg!(debug_assertions) && !self.path.starts_with("calibration") {
            let path = schema::plain(&self.key(k));
            match schema::find(&path).map(|key| key.default) {
                Some(KeyDefault::Value(text)) => {
                    let declared = parse(text.trim_matches('"'));
                    assert!(
                        declared.as_ref() == Some(default),
                        "scenario key `{path}`: the reader's default {default:?} is not the schema's {text}"
                    );
                }
                Some(KeyDefault::Otherwise(_)) => {}
                other => panic!(
                    "scenario key `{path}`: a default for a key the schema declares {other:?}"
                ),
            }
        }
    }

    fn opt(&self, k: &str) -> Option<&'a Val<'i>> {
        self.table.get(k)
    }

    fn req(&self, k: &str, what: &str) -> Result<&'a Val<'i>, ScenarioError> {
        self.opt(k).ok_or_else(|| {
            let where_ = if self.path.is_empty() {
                "the top level".into()
            } else {
                format!("[{}]", self.path)
            };
            self.doc.err(
                &self.span,
                &self.key(k),
                false,
                format!("missing key in {where_}; expected {what}"),
            )
        })
    }

    fn bad(&self, k: &str, v: &Val<'i>, message: impl Into<String>) -> ScenarioError {
        self.doc.err(&v.span(), &self.key(k), true, message)
    }

    fn string_of(&self, k: &str, v: &Val<'i>, what: &str) -> Result<String, ScenarioError> {
        match v.get_ref() {
            DeValue::String(s) => Ok(s.to_string()),
            other => Err(self.bad(
                k,
                v,
                format!("expected {what} in quotes, found a {}", other.type_str()),
            )),
        }
    }

    fn string(&self, k: &str, what: &str) -> Result<String, ScenarioError> {
        self.declared(k, |h| h == Holds::Text);
        let v = self.req(k, what)?;
        self.string_of(k, v, what)
    }

    fn string_or(&self, k: &str, what: &str, default: &str) -> Result<String, ScenarioError> {
        self.declared(k, |h| h == Holds::Text);
        self.default_is(k, &default.to_string(), |t| Some(t.to_string()));
        match self.opt(k) {
            Some(v) => self.string_of(k, v, what),
            None => Ok(default.to_string()),
        }
    }

    /// One of `choices` (a quoted word); its index.
    fn choice(&self, k: &str, choices: &[&str], default: usize) -> Result<usize, ScenarioError> {
        self.declared(k, |h| matches!(h, Holds::Choice(_)));
        let first = choices[default].to_string();
        self.default_is(k, &first, |t| Some(t.to_string()));
        let Some(v) = self.opt(k) else {
            return Ok(default);
        };
        let what = format!("one of {}", choices.join(", "));
        let s = self.string_of(k, v, &what)?;
        choices
            .iter()
            .position(|c| *c == s)
            .ok_or_else(|| self.bad(k, v, format!("expected {what}")))
    }

    fn unit<T>(
        &self,
        k: &str,
        what: &str,
        parse: fn(&str) -> Result<T, UnitError>,
    ) -> Result<T, ScenarioError> {
        let v = self.req(k, what)?;
        match v.get_ref() {
            DeValue::String(s) => parse(s).map_err(|e| self.bad(k, v, e.0)),
            DeValue::Integer(_) | DeValue::Float(_) => Err(self.bad(
                k,
                v,
                format!("missing unit; expected {what} as a quoted string"),
            )),
            other => Err(self.bad(
                k,
                v,
                format!("expected {what}, found a {}", other.type_str()),
            )),
        }
    }

    fn size(&self, k: &str) -> Result<u64, ScenarioError> {
        self.declared(k, |h| h == Holds::Quantity(KeyKind::Size));
        let s = self.unit(k, "a size like \"4MiB\"", units::parse_size)?;
        if s == 0 {
            return Err(self.bad(k, self.req(k, "")?, "a size must be positive"));
        }
        Ok(s)
    }

    /// A size that may be 0 (`"0B"`), or `default` when absent.
    fn size_or_zero(&self, k: &str, default: u64) -> Result<u64, ScenarioError> {
        self.declared(k, |h| h == Holds::Quantity(KeyKind::Size));
        self.default_is(k, &default, |t| units::parse_size(t).ok());
        match self.opt(k) {
            Some(_) => self.unit(k, "a size like \"4MiB\"", units::parse_size),
            None => Ok(default),
        }
    }

    fn size_or(&self, k: &str, default: u64) -> Result<u64, ScenarioError> {
        self.default_is(k, &default, |t| units::parse_size(t).ok());
        if self.opt(k).is_some() {
            self.size(k)
        } else {
            Ok(default)
        }
    }

    fn rate(&self, k: &str) -> Result<f64, ScenarioError> {
        self.declared(k, |h| h == Holds::Quantity(KeyKind::Rate));
        let r = self.unit(k, "a rate like \"200MB/s\"", units::parse_rate)?;
        if r <= 0.0 {
            return Err(self.bad(k, self.req(k, "")?, "a rate must be positive"));
        }
        Ok(r)
    }

    /// A required value of `kind` (with its unit, or a plain number for
    /// [`KeyKind::Number`]): the value in base units and the text as written.
    fn quantity(&self, k: &str, kind: KeyKind) -> Result<(f64, String), ScenarioError> {
        let v = self.req(k, "a value")?;
        let x = match kind {
            KeyKind::Size => self.unit(k, "a size like \"4MiB\"", units::parse_size)? as f64,
            KeyKind::Rate => self.rate(k)?,
            KeyKind::Time => self.time(k)?,
            KeyKind::Flops => self.flops(k)?,
            KeyKind::Number => {
                let n = match v.get_ref() {
                    DeValue::Float(f) => f.as_str().parse::<f64>().ok(),
                    DeValue::Integer(i) => i.as_str().parse::<f64>().ok(),
                    _ => None,
                };
                match n {
                    Some(n) if n.is_finite() && n >= 0.0 => n,
                    _ => {
                        return Err(self.bad(
                            k,
                            v,
                            "expected a plain number ≥ 0 (this key has no unit)",
                        ));
                    }
                }
            }
        };
        let raw = match v.get_ref() {
            DeValue::String(s) => s.to_string(),
            _ => self.doc.text[v.span()].trim().to_string(),
        };
        Ok((x, raw))
    }

    fn rate_or(&self, k: &str, default: f64) -> Result<f64, ScenarioError> {
        self.default_is(k, &default, |t| units::parse_rate(t).ok());
        if self.opt(k).is_some() {
            self.rate(k)
        } else {
            Ok(default)
        }
    }

    fn time(&self, k: &str) -> Result<f64, ScenarioError> {
        self.declared(k, |h| h == Holds::Quantity(KeyKind::Time));
        self.unit(k, "a time like \"5ms\"", units::parse_time)
    }

    fn time_or(&self, k: &str, default: f64) -> Result<f64, ScenarioError> {
        self.default_is(k, &default, |t| units::parse_time(t).ok());
        if self.opt(k).is_some() {
            self.time(k)
        } else {
            Ok(default)
        }
    }

    fn flops(&self, k: &str) -> Result<f64, ScenarioError> {
        self.declared(k, |h| h == Holds::Quantity(KeyKind::Flops));
        self.unit(k, "a compute rate like \"2Gflop/s\"", units::parse_flops)
    }

    fn int(&self, k: &str, min: u64) -> Result<u64, ScenarioError> {
        self.declared(k, |h| matches!(h, Holds::Integer | Holds::Choice(_)));
        let what = format!("a whole number ≥ {min}");
        let v = self.req(k, &what)?;
        let n = match v.get_ref() {
            DeValue::Integer(i) => i64::from_str_radix(i.as_str(), i.radix()).ok(),
            _ => None,
        };
        match n {
            Some(n) if n >= 0 && n as u64 >= min => Ok(n as u64),
            _ => Err(self.bad(k, v, format!("expected {what}"))),
        }
    }

    fn int_or(&self, k: &str, min: u64, default: u64) -> Result<u64, ScenarioError> {
        self.default_is(k, &default, |t| t.parse().ok());
        if self.opt(k).is_some() {
            self.int(k, min)
        } else {
            Ok(default)
        }
    }

    /// A fraction, or `default` (the schema's) when absent.
    fn fraction_or(&self, k: &str, default: f64) -> Result<f64, ScenarioError> {
        self.default_is(k, &default, |t| t.parse().ok());
        Ok(self.fraction(k)?.unwrap_or(default))
    }

    fn fraction(&self, k: &str) -> Result<Option<f64>, ScenarioError> {
        self.declared(k, |h| h == Holds::Fraction);
        let Some(v) = self.opt(k) else {
            return Ok(None);
        };
        let x = match v.get_ref() {
            DeValue::Float(f) => f.as_str().parse::<f64>().ok(),
            DeValue::Integer(i) => i.as_str().parse::<f64>().ok(),
            _ => None,
        };
        match x {
            Some(x) if (0.0..1.0).contains(&x) => Ok(Some(x)),
            _ => Err(self.bad(
                k,
                v,
                "expected a number from 0 (inclusive) to 1 (exclusive), e.g. 0.1",
            )),
        }
    }

    fn sub(&self, k: &str, allowed: &[&str]) -> Result<Tbl<'a, 'i>, ScenarioError> {
        let v = self.req(k, "a table")?;
        match v.get_ref() {
            DeValue::Table(t) => Tbl::new(self.doc, self.key(k), v.span(), t, allowed),
            other => Err(self.bad(
                k,
                v,
                format!(
                    "expected a table [{}], found a {}",
                    self.key(k),
                    other.type_str()
                ),
            )),
        }
    }

    fn sub_opt(&self, k: &str, allowed: &[&str]) -> Result<Option<Tbl<'a, 'i>>, ScenarioError> {
        if self.opt(k).is_some() {
            self.sub(k, allowed).map(Some)
        } else {
            Ok(None)
        }
    }

    /// An array of tables `[[k]]` (absent = empty).
    fn tables(&self, k: &str, allowed: &[&str]) -> Result<Vec<Tbl<'a, 'i>>, ScenarioError> {
        let Some(v) = self.opt(k) else {
            return Ok(Vec::new());
        };
        let DeValue::Array(arr) = v.get_ref() else {
            return Err(self.bad(k, v, format!("expected [[{}]] tables", self.key(k))));
        };
        arr.iter()
            .enumerate()
            .map(|(i, g)| {
                let path = format!("{}[{i}]", self.key(k));
                match g.get_ref() {
                    DeValue::Table(t) => Tbl::new(self.doc, path, g.span(), t, allowed),
                    _ => Err(self.doc.err(&g.span(), &path, true, "expected a table")),
                }
            })
            .collect()
    }
}

fn join(path: &str, k: &str) -> String {
    if path.is_empty() {
        k.to_string()
    } else {
        format!("{path}.{k}")
    }
}

/// Reads a `[…device]` table: `kind = "ssd"` (the default), `"hdd"` or `"raid"`.
fn device(parent: &Tbl<'_, '_>, k: &str, nested: bool) -> Result<Device, ScenarioError> {
    let table = schema::plain(&parent.key(k));
    // Read `kind` first (any keys allowed); the kind's own table then checks the keys.
    let keys: Vec<String> = match parent.req(k, "a table")?.get_ref() {
        DeValue::Table(t) => t.iter().map(|(k, _)| k.get_ref().to_string()).collect(),
        _ => Vec::new(),
    };
    let keys: Vec<&str> = keys.iter().map(String::as_str).collect();
    let probe = parent.sub(k, &keys)?;
    let kinds: &[&str] = if nested {
        &["ssd", "hdd"]
    } else {
        &["ssd", "hdd", "raid"]
    };
    let kind = probe.choice("kind", kinds, 0)?;
    Ok(match kinds[kind] {
        "ssd" => {
            let d = parent.sub(k, &schema::children(&table, Some("ssd")))?;
            Device::Ssd(Ssd {
                read_bw: d.rate("read_bw")?,
                write_bw: d.rate("write_bw")?,
                read_latency: d.time("read_latency")?,
                write_latency: d.time("write_latency")?,
                latency_jitter: d.fraction_or("latency_jitter", 0.0)?,
                channels: d.int_or("channels", 1, 1)? as usize,
            })
        }
        "hdd" => {
            let d = parent.sub(k, &schema::children(&table, Some("hdd")))?;
            let outer = d.rate("transfer_rate")?;
            let inner = if d.opt("transfer_rate_inner").is_some() {
                d.rate("transfer_rate_inner")?
            } else {
                outer
            };
            if inner > outer {
                return Err(d.bad(
                    "transfer_rate_inner",
                    d.req("transfer_rate_inner", "")?,
                    "the inner-zone rate cannot exceed the outer-zone `transfer_rate`",
                ));
            }
            let rpm = d.int("rpm", 1)? as f64;
            let (track, full) = (d.time("seek_track")?, d.time("seek_full")?);
            if full < track {
                return Err(d.bad(
                    "seek_full",
                    d.req("seek_full", "")?,
                    "the full-stroke seek cannot be shorter than `seek_track`",
                ));
            }
            Device::Hdd(Hdd {
                capacity: d.size("capacity")?,
                rpm,
                seek_track: track,
                seek_full: full,
                transfer_rate: outer,
                transfer_rate_inner: inner,
                queue: [QueueOrder::Fifo, QueueOrder::Elevator]
                    [d.choice("queue", &["fifo", "elevator"], 0)?],
            })
        }
        _ => {
            let d = parent.sub(k, &schema::children(&table, Some("raid")))?;
            let lv = d.req("level", "0, 5 or 6")?;
            let level = d.int("level", 0)?;
            if ![0, 5, 6].contains(&level) {
                return Err(d.bad("level", lv, "expected RAID level 0, 5 or 6"));
            }
            let min = [1, 3, 4][[0, 5, 6].iter().position(|&l| l == level).expect("checked")];
            let disks = d.int("disks", min)? as usize;
            Device::Raid(Raid {
                level: level as u8,
                disks,
                stripe_unit: d.size("stripe_unit")?,
                member: Box::new(device(&d, "member", true)?),
            })
        }
    })
}

/// What a `[calibration]` key path names: its kind, or why it names nothing.
/// Lists are indexed as `--set` writes them (`nodes[0]`, `network.links[1]`),
/// within the `nodes` groups and `links` the scenario has.
fn calibrated_key(path: &str, nodes: usize, links: usize) -> Result<KeyKind, String> {
    let mut plain = Vec::new();
    for seg in path.split('.') {
        let (name, index) = match seg.split_once('[') {
            Some((n, rest)) => match rest.strip_suffix(']').and_then(|x| x.parse::<usize>().ok()) {
                Some(i) => (n, Some(i)),
                None => {
                    return Err(format!(
                        "`{seg}`: an index is written name[N], e.g. nodes[0]"
                    ));
                }
            },
            None => (seg, None),
        };
        let listed = match (plain.as_slice(), name) {
            ([], "nodes") => Some(("nodes", nodes)),
            (["network"], "links") => Some(("network.links", links)),
            _ => None,
        };
        match (listed, index) {
            (Some((list, n)), Some(i)) if i >= n => {
                return Err(format!(
                    "`{list}` has {n} entr{} (index 0..{n})",
                    if n == 1 { "y" } else { "ies" }
                ));
            }
            (Some((list, _)), None) => {
                return Err(format!(
                    "`{list}` is a list of tables: name one, e.g. {list}[0]"
                ));
            }
            (None, Some(_)) => return Err(format!("`{name}` is not a list and takes no index")),
            _ => {}
        }
        plain.push(name);
    }
    let plain = plain.join(".");
    schema::calibratable(&plain).ok_or_else(|| {
            "not a scenario key with a number; expected a key path as --set writes it, \
             e.g. \"mpiio.independent_call\", \"nodes[0].cache.write_bw\", \"server.device.write_bw\""
                .to_string()
        })
}

/// Reads `[calibration."<key path>"]` tables: `value`, `low`, `high` in the
/// key's unit (plain numbers for unitless keys), `probe`, optional `quality`.
fn calibration(
    top: &Tbl<'_, '_>,
    nodes: usize,
    links: usize,
) -> Result<BTreeMap<String, Calibrated>, ScenarioError> {
    let v = top.req("calibration", "a table")?;
    let DeValue::Table(t) = v.get_ref() else {
        return Err(top.bad(
            "calibration",
            v,
            "expected tables [calibration.\"<key path>\"] of fitted values",
        ));
    };
    let mut out = BTreeMap::new();
    for (k, _) in t.iter() {
        let path = k.get_ref().to_string();
        let kind = calibrated_key(&path, nodes, links).map_err(|m| {
            top.doc
                .err(&k.span(), &format!("calibration.\"{path}\""), false, m)
        })?;
        let tv = t.get(path.as_str()).expect("iterated");
        let DeValue::Table(et) = tv.get_ref() else {
            return Err(top.doc.err(
                &tv.span(),
                &format!("calibration.\"{path}\""),
                true,
                "expected a table with value, low, high, probe and quality",
            ));
        };
        let e = Tbl::new(
            top.doc,
            format!("calibration.\"{path}\""),
            tv.span(),
            et,
            &["value", "low", "high", "probe", "quality"],
        )?;
        let mut nums = [0.0; 3];
        let mut text: [String; 3] = Default::default();
        for (i, f) in ["value", "low", "high"].into_iter().enumerate() {
            // A fit can leave the upper bound open (a bandwidth whose slope's
            // interval reaches zero): written as "unbounded".
            let open = f == "high"
                && matches!(e.req(f, "")?.get_ref(), DeValue::String(s) if s.as_ref() == "unbounded");
            let (x, raw) = match open {
                true => (f64::INFINITY, "unbounded".to_string()),
                false => e.quantity(f, kind)?,
            };
            nums[i] = x;
            text[i] = raw;
        }
        let [value, low, high] = nums;
        if !(low <= value && value <= high) {
            let which = if low > value { "low" } else { "high" };
            return Err(e.bad(
                which,
                e.req(which, "")?,
                "the interval must hold the value: low ≤ value ≤ high",
            ));
        }
        out.insert(
            path,
            Calibrated {
                kind,
                value,
                low,
                high,
                text,
                probe: e.string("probe", "the probe the value came from")?,
                quality: e.string_or("quality", "the fit's quality, e.g. \"r2=0.998 n=24\"", "")?,
            },
        );
    }
    Ok(out)
}

impl Scenario {
    /// Reads and checks a scenario file.
    pub fn load(path: &Path) -> Result<Scenario, ScenarioError> {
        Scenario::load_with(path, &[])
    }

    /// Reads a scenario file and applies `--set KEY=VALUE` overrides (each given
    /// as `KEY=VALUE`, e.g. `filesystem.stripe_count=8`, `nodes[0].memory=16GiB`)
    /// before checking it. An override's value is TOML (`8`, `"4MiB"`, `true`) or
    /// a bare word taken as a string (`4MiB`); errors in it name the override.
    pub fn load_with(path: &Path, overrides: &[String]) -> Result<Scenario, ScenarioError> {
        let file = path.display().to_string();
        let text = std::fs::read_to_string(path).map_err(|e| ScenarioError {
            file: file.clone(),
            line: None,
            key: None,
            value: None,
            message: format!("cannot read the scenario: {e}"),
        })?;
        Scenario::from_str_with(&text, &file, overrides)
    }

    /// Parses and checks scenario `text`; `file_name` names it in errors.
    #[allow(clippy::should_implement_trait)]
    pub fn from_str(text: &str, file_name: &str) -> Result<Scenario, ScenarioError> {
        Scenario::from_str_with(text, file_name, &[])
    }

    /// [`Scenario::from_str`] with `--set` overrides (see [`Scenario::load_with`]).
    pub fn from_str_with(
        text: &str,
        file_name: &str,
        overrides: &[String],
    ) -> Result<Scenario, ScenarioError> {
        // The file, then one line per override: spans past the file's end name the override.
        let mut all = text.to_string();
        let mut starts = Vec::new();
        for o in overrides {
            all.push('\n');
            starts.push((all.len(), o.clone()));
            all.push_str(o);
        }
        let doc = Doc {
            file: file_name,
            text: &all,
            overrides: starts,
        };
        let mut root = DeTable::parse(&all[..text.len()]).map_err(|e| {
            let span = e.span().unwrap_or(0..0);
            ScenarioError {
                file: file_name.to_string(),
                line: Some(doc.line(&span)),
                key: None,
                value: None,
                message: format!("not valid TOML: {}", e.message().trim()),
            }
        })?;
        for (start, o) in &doc.overrides {
            apply_override(&doc, root.get_mut(), &all, *start, o)?;
        }
        Scenario::read(&doc, &root)
    }

    fn read(doc: &Doc<'_>, root: &Spanned<DeTable<'_>>) -> Result<Scenario, ScenarioError> {
        let top = Tbl::new(
            doc,
            String::new(),
            root.span(),
            root.get_ref(),
            &schema::children("", None),
        )?;

        let mut source = BTreeMap::new();
        if let Some(v) = top.opt("source") {
            let DeValue::Table(t) = v.get_ref() else {
                return Err(top.bad("source", v, "expected a table [source] of notes (strings)"));
            };
            for (k, nv) in t.iter() {
                let key = format!("source.{}", k.get_ref());
                match nv.get_ref() {
                    DeValue::String(s) => {
                        source.insert(k.get_ref().to_string(), s.to_string());
                    }
                    other => {
                        return Err(doc.err(
                            &nv.span(),
                            &key,
                            true,
                            format!("expected a note in quotes, found a {}", other.type_str()),
                        ));
                    }
                }
            }
        }

        let nodes_v = top.req("nodes", "one or more [[nodes]] groups")?;
        let groups = top.tables("nodes", &schema::children("nodes", None))?;
        let mut nodes = Vec::new();
        for n in &groups {
            let c = n.sub("compute", &schema::children("nodes.compute", None))?;
            let memory = n.size("memory")?;
            let memcpy = c.rate("memcpy")?;
            let cache = match n.sub_opt("cache", &schema::children("nodes.cache", None))? {
                Some(t) => {
                    let dirty = t.fraction_or("dirty_ratio", 0.2)?;
                    let bg = t.fraction_or("dirty_background_ratio", 0.1)?;
                    if bg > dirty {
                        return Err(t.bad(
                            "dirty_background_ratio",
                            t.req("dirty_background_ratio", "")?,
                            format!("must not exceed dirty_ratio ({dirty})"),
                        ));
                    }
                    let capacity = t.size_or("capacity", memory)?;
                    Some(ClientCache {
                        capacity,
                        fresh_bw: t.rate_or("fresh_bw", f64::INFINITY)?,
                        warm: t.size_or_zero("warm", capacity)?,
                        readahead: t.size_or_zero("readahead", 128 << 10)?,
                        dirty_ratio: dirty,
                        dirty_background_ratio: bg,
                        write_bw: t.rate_or("write_bw", memcpy)?,
                        read_bw: t.rate_or("read_bw", memcpy)?,
                    })
                }
                None => None,
            };
            nodes.push(NodeGroup {
                name: n.string("name", "a group name")?,
                count: n.int("count", 1)? as usize,
                cores: n.int("cores", 1)? as usize,
                memory,
                nic_bw: n.rate("nic_bw")?,
                nic_latency: n.time("nic_latency")?,
                switch: n.string_or("switch", "a switch name", "core")?,
                compute: ComputeRates {
                    memcpy,
                    fft: c.flops("fft")?,
                    bt: c.flops("bt")?,
                    flops: c.flops("flops")?,
                    pattern: c.rate_or("pattern", f64::INFINITY)?,
                },
                cache,
                syscall: n.time_or("syscall", 0.0)?,
                oversubscribed_wakeup: n.time_or("oversubscribed_wakeup", 0.0)?,
            });
        }
        if nodes.is_empty() {
            return Err(top.bad("nodes", nodes_v, "at least one [[nodes]] group is needed"));
        }

        let net = top.sub("network", &schema::children("network", None))?;
        let mut links = Vec::new();
        for l in net.tables("links", &schema::children("network.links", None))? {
            links.push(Link {
                from: l.string("from", "a switch name")?,
                to: l.string("to", "a switch name")?,
                bandwidth: l.rate("bandwidth")?,
                latency: l.time("latency")?,
            });
        }
        let srv = top.sub("server", &schema::children("server", None))?;
        let server_cache = match srv.sub_opt("cache", &schema::children("server.cache", None))? {
            Some(t) => Some(ServerCache {
                capacity: t.size("capacity")?,
                bandwidth: t.rate("bandwidth")?,
                write_back: t.choice("policy", &["write-back", "write-through"], 0)? == 0,
                dirty_ratio: t.fraction_or("dirty_ratio", 0.5)?,
            }),
            None => None,
        };
        let server = Server {
            count: srv.int_or("count", 1, 1)? as usize,
            nic_bw: srv.rate("nic_bw")?,
            switch: srv.string_or("switch", "a switch name", "core")?,
            request_cpu: srv.time_or("request_cpu", 0.0)?,
            cache: server_cache,
            device: device(&srv, "device", false)?,
        };

        let (fs_kind, fs) =
            match top.sub_opt("filesystem", &schema::children("filesystem", None))? {
                Some(f) => {
                    let kind = [FsKind::Local, FsKind::Nfs, FsKind::Parallel]
                        [f.choice("kind", &["local", "nfs", "parallel"], 0)?];
                    (kind, Some(f))
                }
                None => (FsKind::Local, None),
            };
        let filesystem = match &fs {
            Some(f) => {
                let stripe_count = f.int_or("stripe_count", 1, 1)? as usize;
                if stripe_count > server.count {
                    return Err(f.bad(
                        "stripe_count",
                        f.req("stripe_count", "")?,
                        format!(
                            "at most server.count = {} (a file is striped over distinct servers)",
                            server.count
                        ),
                    ));
                }
                if fs_kind != FsKind::Parallel && server.count != 1 {
                    return Err(f.bad(
                        "kind",
                        f.req("kind", "").unwrap_or_else(|_| f.req("stripe_count", "").expect("table")),
                        format!(
                            "a {} file system has one server, but server.count = {}; use kind = \"parallel\"",
                            if fs_kind == FsKind::Nfs { "nfs" } else { "local" },
                            server.count
                        ),
                    ));
                }
                FileSystem {
                    kind: fs_kind,
                    stripe_size: f.size_or("stripe_size", 1 << 20)?,
                    stripe_count,
                    lock_granularity: if f.opt("lock_granularity").is_some() {
                        Some(f.size("lock_granularity")?)
                    } else {
                        None
                    },
                    lock_revoke: f.time_or("lock_revoke", 0.0)?,
                }
            }
            None => FileSystem {
                kind: FsKind::Local,
                stripe_size: 1 << 20,
                stripe_count: 1,
                lock_granularity: None,
                lock_revoke: 0.0,
            },
        };
        if fs.is_none() && server.count != 1 {
            return Err(srv.bad(
                "count",
                srv.req("count", "")?,
                "several servers need a [filesystem] with kind = \"parallel\"",
            ));
        }

        let md = top.sub("metadata", &schema::children("metadata", None))?;
        let mpiio = top.sub("mpiio", &schema::children("mpiio", None))?;
        let calibration = match top.opt("calibration") {
            Some(_) => calibration(&top, nodes.len(), links.len())?,
            None => BTreeMap::new(),
        };
        Ok(Scenario {
            file: doc.file.to_string(),
            name: top.string("name", "a scenario name")?,
            description: match top.opt("description") {
                Some(v) => top.string_of("description", v, "a one-line description")?,
                None => String::new(),
            },
            seed: top.int("seed", 0)?,
            source,
            nodes,
            network: Network {
                bandwidth: net.rate("bandwidth")?,
                latency: net.time("latency")?,
                links,
            },
            server,
            filesystem,
            metadata: Metadata {
                open: md.time("open")?,
                create: md.time("create")?,
                close: md.time("close")?,
                delete: md.time("delete")?,
                delete_bw: md.rate_or("delete_bw", f64::INFINITY)?,
                sync: md.time("sync")?,
            },
            mpiio: MpiIo {
                shared_pointer: mpiio.time("shared_pointer")?,
                independent_call: mpiio.time_or("independent_call", 0.0)?,
                collective_call: mpiio.time_or("collective_call", 0.0)?,
                open: mpiio.time_or("open", 0.0)?,
                close: mpiio.time_or("close", 0.0)?,
            },
            calibration,
        })
    }

    /// Total number of compute nodes over all groups.
    pub fn node_count(&self) -> usize {
        self.nodes.iter().map(|g| g.count).sum()
    }

    /// Total number of cores over all groups.
    pub fn core_count(&self) -> usize {
        self.nodes.iter().map(|g| g.count * g.cores).sum()
    }
}

/// Puts one `--set KEY=VALUE` (its text at `all[start..]`) into the parsed tree.
fn apply_override<'i>(
    doc: &Doc<'_>,
    root: &mut DeTable<'i>,
    all: &'i str,
    start: usize,
    o: &str,
) -> Result<(), ScenarioError> {
    let whole = start..start + o.len();
    let usage = |m: &str| doc.err(&whole, "", false, m.to_string());
    let Some(eq) = o.find('=') else {
        return Err(usage(
            "expected KEY=VALUE, e.g. filesystem.stripe_count=8 or nodes[0].memory=16GiB",
        ));
    };
    let key = o[..eq].trim();
    let vtext = &all[start + eq + 1..start + o.len()];
    let lead = vtext.len() - vtext.trim_start().len();
    let vstart = start + eq + 1 + lead;
    let vtrim = vtext.trim();
    let vspan = vstart..vstart + vtrim.len();
    if key.is_empty() || vtrim.is_empty() {
        return Err(usage("expected KEY=VALUE with a key path and a value"));
    }
    // TOML if it parses as a single value, else the bare text as a string.
    let value = match DeValue::parse(vtrim) {
        Ok(v) => match v.into_inner() {
            DeValue::Array(_) | DeValue::Table(_) => {
                return Err(doc.err(
                    &vspan,
                    key,
                    true,
                    "--set takes one value (a number, a string, true or false), not an array or table",
                ));
            }
            v => v,
        },
        Err(_) => DeValue::String(std::borrow::Cow::Borrowed(&all[vspan.clone()])),
    };
    let kspan = start..start + eq;
    let mut table: &mut DeTable<'i> = root;
    let segs: Vec<&str> = key.split('.').map(str::trim).collect();
    let mut path = String::new();
    for (i, seg) in segs.iter().enumerate() {
        let (name, index) = match seg.split_once('[') {
            Some((n, rest)) => {
                let idx = rest.strip_suffix(']').and_then(|x| x.parse::<usize>().ok());
                match idx {
                    Some(ix) => (n, Some(ix)),
                    None => {
                        return Err(doc.err(
                            &kspan,
                            key,
                            false,
                            format!("`{seg}`: an index is written name[N], e.g. nodes[0]"),
                        ));
                    }
                }
            }
            None => (*seg, None),
        };
        if name.is_empty() {
            return Err(doc.err(&kspan, key, false, "empty key segment"));
        }
        path = join(&path, name);
        let last = i + 1 == segs.len();
        let k = Spanned::new(kspan.clone(), std::borrow::Cow::Owned(name.to_string()));
        if last && index.is_none() {
            table.insert(k, Spanned::new(vspan.clone(), value));
            return Ok(());
        }
        if !table.contains_key(name) {
            if index.is_some() {
                return Err(doc.err(
                    &kspan,
                    key,
                    false,
                    format!(
                        "`{path}` does not exist in the scenario, so `{seg}` cannot be indexed"
                    ),
                ));
            }
            table.insert(
                k,
                Spanned::new(kspan.clone(), DeValue::Table(DeTable::new())),
            );
        }
        let entry = table.get_mut(name).expect("present").get_mut();
        let next = match (entry, index) {
            (DeValue::Table(t), None) => t,
            (DeValue::Array(a), Some(ix)) => {
                let n = a.len();
                match a.get_mut(ix).map(Spanned::get_mut) {
                    Some(DeValue::Table(t)) => t,
                    _ => {
                        return Err(doc.err(
                            &kspan,
                            key,
                            false,
                            format!(
                                "`{path}` has {n} entr{} (index 0..{n}); `{seg}` does not exist",
                                if n == 1 { "y" } else { "ies" }
                            ),
                        ));
                    }
                }
            }
            (DeValue::Array(_), None) => {
                return Err(doc.err(
                    &kspan,
                    key,
                    false,
                    format!("`{path}` is a list of tables: name one, e.g. {name}[0]"),
                ));
            }
            _ => {
                return Err(doc.err(
                    &kspan,
                    key,
                    false,
                    format!("`{path}` is a value, not a table: it has no keys below it"),
                ));
            }
        };
        table = next;
    }
    Ok(())
}

impl fmt::Display for Scenario {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        use units::{fmt_rate, fmt_size, fmt_time};
        writeln!(
            f,
            "scenario `{}` ({}), seed {}",
            self.name, self.file, self.seed
        )?;
        if !self.description.is_empty() {
            writeln!(f, "  {}", self.description)?;
        }
        writeln!(
            f,
            "  compute: {} node(s), {} core(s)",
            self.node_count(),
            self.core_count()
        )?;
        for g in &self.nodes {
            writeln!(
                f,
                "    {} × `{}`: {} cores, {} memory, NIC {} / {}; memcpy {}, fft {:.2} Gflop/s, bt {:.2} Gflop/s, other {:.2} Gflop/s",
                g.count,
                g.name,
                g.cores,
                fmt_size(g.memory),
                fmt_rate(g.nic_bw),
                fmt_time(g.nic_latency),
                fmt_rate(g.compute.memcpy),
                g.compute.fft / 1e9,
                g.compute.bt / 1e9,
                g.compute.flops / 1e9
            )?;
            if g.compute.pattern.is_finite() {
                writeln!(f, "      data pattern {}", fmt_rate(g.compute.pattern))?;
            }
        }
        writeln!(
            f,
            "  network: switch {} / {}",
            fmt_rate(self.network.bandwidth),
            fmt_time(self.network.latency)
        )?;
        let sv = &self.server;
        writeln!(
            f,
            "  servers: {} × (NIC {}, CPU {}/request, on switch `{}`); device: {}",
            sv.count,
            fmt_rate(sv.nic_bw),
            fmt_time(sv.request_cpu),
            sv.switch,
            sv.device
        )?;
        if let Some(c) = &sv.cache {
            writeln!(
                f,
                "  server cache: {} at {}, {}",
                fmt_size(c.capacity),
                fmt_rate(c.bandwidth),
                if c.write_back {
                    format!("write-back (dirty ≤ {:.0}%)", c.dirty_ratio * 100.0)
                } else {
                    "write-through".to_string()
                }
            )?;
        }
        for g in &self.nodes {
            if let Some(c) = &g.cache {
                writeln!(
                    f,
                    "  page cache of `{}`: {}, dirty_ratio {:.0}%, dirty_background_ratio {:.0}%, {}",
                    g.name,
                    fmt_size(c.capacity),
                    c.dirty_ratio * 100.0,
                    c.dirty_background_ratio * 100.0,
                    match c.readahead {
                        0 => "no read-ahead".to_string(),
                        r => format!("read-ahead up to {}", fmt_size(r)),
                    }
                )?;
                if c.fresh_bw.is_finite() {
                    writeln!(
                        f,
                        "    fresh memory beyond {} backed: {} per node",
                        fmt_size(c.warm),
                        fmt_rate(c.fresh_bw)
                    )?;
                }
                if c.write_bw != g.compute.memcpy || c.read_bw != g.compute.memcpy {
                    writeln!(
                        f,
                        "    page-cache copies per core: write {}, read {}",
                        fmt_rate(c.write_bw),
                        fmt_rate(c.read_bw)
                    )?;
                }
            }
            if g.syscall > 0.0 || g.oversubscribed_wakeup > 0.0 {
                writeln!(
                    f,
                    "  CPU costs on `{}`: {} per system call, {} wake-up of a rank on an oversubscribed node",
                    g.name,
                    fmt_time(g.syscall),
                    fmt_time(g.oversubscribed_wakeup)
                )?;
            }
        }
        for l in &self.network.links {
            writeln!(
                f,
                "  link {} ↔ {}: {} / {}",
                l.from,
                l.to,
                fmt_rate(l.bandwidth),
                fmt_time(l.latency)
            )?;
        }
        let fs = &self.filesystem;
        writeln!(
            f,
            "  file system: {}{}",
            match fs.kind {
                FsKind::Local => "local".to_string(),
                FsKind::Nfs => "NFS-like, one server".to_string(),
                FsKind::Parallel => format!(
                    "parallel, stripe {} over {} of {} servers",
                    fmt_size(fs.stripe_size),
                    fs.stripe_count,
                    sv.count
                ),
            },
            match fs.lock_granularity {
                Some(g) => format!(
                    "; extent locks of {}, revoke {}",
                    fmt_size(g),
                    fmt_time(fs.lock_revoke)
                ),
                None => String::new(),
            }
        )?;
        let m = &self.metadata;
        writeln!(
            f,
            "  metadata: open {}, create {}, close {}, delete {}, sync {}",
            fmt_time(m.open),
            fmt_time(m.create),
            fmt_time(m.close),
            fmt_time(m.delete),
            fmt_time(m.sync)
        )?;
        if m.delete_bw.is_finite() {
            writeln!(
                f,
                "    a deleted file's bytes dropped at {}",
                fmt_rate(m.delete_bw)
            )?;
        }
        let mp = &self.mpiio;
        writeln!(
            f,
            "  mpi-io: shared file pointer update {}; CPU per call: independent {}, collective {}, open {}, close {}",
            fmt_time(mp.shared_pointer),
            fmt_time(mp.independent_call),
            fmt_time(mp.collective_call),
            fmt_time(mp.open),
            fmt_time(mp.close)
        )?;
        for (k, c) in &self.calibration {
            writeln!(
                f,
                "  calibrated {k} = {} [{} .. {}] from `{}`{}",
                c.text[0],
                c.text[1],
                c.text[2],
                c.probe,
                if c.quality.is_empty() {
                    String::new()
                } else {
                    format!(" ({})", c.quality)
                }
            )?;
        }
        for (k, v) in &self.source {
            writeln!(f, "  source[{k}]: {v}")?;
        }
        Ok(())
    }
}

impl fmt::Display for Device {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        use units::{fmt_rate, fmt_size, fmt_time};
        match self {
            Device::Ssd(d) => write!(
                f,
                "SSD read {} + {}/req, write {} + {}/req, {} channel(s){}",
                fmt_rate(d.read_bw),
                fmt_time(d.read_latency),
                fmt_rate(d.write_bw),
                fmt_time(d.write_latency),
                d.channels,
                if d.latency_jitter > 0.0 {
                    format!(", latency jitter ±{:.0}%", d.latency_jitter * 100.0)
                } else {
                    String::new()
                }
            ),
            Device::Hdd(d) => write!(
                f,
                "HDD {} at {} rpm, seek {}..{}, {}..{}, {} queue",
                fmt_size(d.capacity),
                d.rpm,
                fmt_time(d.seek_track),
                fmt_time(d.seek_full),
                fmt_rate(d.transfer_rate),
                fmt_rate(d.transfer_rate_inner),
                match d.queue {
                    QueueOrder::Fifo => "FIFO",
                    QueueOrder::Elevator => "elevator",
                }
            ),
            Device::Raid(r) => write!(
                f,
                "RAID{} over {} × [{}], stripe unit {}",
                r.level,
                r.disks,
                r.member,
                fmt_size(r.stripe_unit)
            ),
        }
    }
}
