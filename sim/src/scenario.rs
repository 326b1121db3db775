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
//! ```

use std::collections::BTreeMap;
use std::fmt;
use std::ops::Range;
use std::path::Path;

use toml::Spanned;
use toml::de::{DeTable, DeValue};

use crate::units::{self, UnitError};

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
    /// Main memory per node in bytes (the page-cache model uses it in a later issue).
    pub memory: u64,
    /// NIC bandwidth per direction in bytes/s.
    pub nic_bw: f64,
    /// NIC latency per message in seconds.
    pub nic_latency: f64,
    /// Per-core compute rates.
    pub compute: ComputeRates,
}

/// Per-core compute rates, one per kernel kind.
#[derive(Debug, Clone, PartialEq)]
pub struct ComputeRates {
    /// Memory copy bandwidth in bytes/s (also intra-node message bandwidth).
    pub memcpy: f64,
    /// Complex FFT rate in flop/s.
    pub fft: f64,
    /// NPB BT solver rate in flop/s.
    pub bt: f64,
    /// Any other kernel, in flop/s.
    pub flops: f64,
}

/// The interconnect: one switch.
#[derive(Debug, Clone, PartialEq)]
pub struct Network {
    /// Aggregate switch (backplane) bandwidth in bytes/s, shared by all flows crossing it.
    pub bandwidth: f64,
    /// One-way latency through the switch in seconds.
    pub latency: f64,
}

/// The file server.
#[derive(Debug, Clone, PartialEq)]
pub struct Server {
    /// Server NIC bandwidth per direction in bytes/s.
    pub nic_bw: f64,
    /// Its storage device.
    pub device: Device,
}

/// A storage device: per-request latency plus a transfer rate, reads and writes apart.
#[derive(Debug, Clone, PartialEq)]
pub struct Device {
    /// Read bandwidth in bytes/s.
    pub read_bw: f64,
    /// Write bandwidth in bytes/s.
    pub write_bw: f64,
    /// Service latency per read request in seconds.
    pub read_latency: f64,
    /// Service latency per write request in seconds.
    pub write_latency: f64,
    /// Relative spread of the request latency: each request's latency is drawn
    /// uniformly from `latency·(1 ± jitter)` with the rank's seeded RNG. 0 = none.
    pub latency_jitter: f64,
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
    /// `fsync`/`MPI_File_sync`: a server round trip forcing data to stable storage.
    pub sync: f64,
}

/// MPI-IO middleware costs.
#[derive(Debug, Clone, PartialEq)]
pub struct MpiIo {
    /// Time to read and update the shared file pointer once (ROMIO keeps it in a
    /// hidden file under a lock), in seconds.
    pub shared_pointer: f64,
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
    /// The file server.
    pub server: Server,
    /// Metadata costs.
    pub metadata: Metadata,
    /// MPI-IO middleware costs.
    pub mpiio: MpiIo,
}

/// Reading context: the file name and its text (for line numbers and values).
struct Doc<'t> {
    file: &'t str,
    text: &'t str,
}

impl Doc<'_> {
    fn line(&self, span: &Range<usize>) -> usize {
        let end = span.start.min(self.text.len());
        self.text[..end].bytes().filter(|&b| b == b'\n').count() + 1
    }

    fn err(
        &self,
        span: &Range<usize>,
        key: &str,
        value: bool,
        message: impl Into<String>,
    ) -> ScenarioError {
        let raw = self.text.get(span.clone()).map(str::trim).unwrap_or("");
        ScenarioError {
            file: self.file.to_string(),
            line: Some(self.line(span)),
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
        let v = self.req(k, what)?;
        self.string_of(k, v, what)
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
        let s = self.unit(k, "a size like \"4MiB\"", units::parse_size)?;
        if s == 0 {
            return Err(self.bad(k, self.req(k, "")?, "a size must be positive"));
        }
        Ok(s)
    }

    fn rate(&self, k: &str) -> Result<f64, ScenarioError> {
        self.unit(k, "a rate like \"200MB/s\"", units::parse_rate)
    }

    fn time(&self, k: &str) -> Result<f64, ScenarioError> {
        self.unit(k, "a time like \"5ms\"", units::parse_time)
    }

    fn flops(&self, k: &str) -> Result<f64, ScenarioError> {
        self.unit(k, "a compute rate like \"2Gflop/s\"", units::parse_flops)
    }

    fn int(&self, k: &str, min: u64) -> Result<u64, ScenarioError> {
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

    fn fraction(&self, k: &str) -> Result<Option<f64>, ScenarioError> {
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
}

fn join(path: &str, k: &str) -> String {
    if path.is_empty() {
        k.to_string()
    } else {
        format!("{path}.{k}")
    }
}

impl Scenario {
    /// Reads and checks a scenario file.
    pub fn load(path: &Path) -> Result<Scenario, ScenarioError> {
        let file = path.display().to_string();
        let text = std::fs::read_to_string(path).map_err(|e| ScenarioError {
            file: file.clone(),
            line: None,
            key: None,
            value: None,
            message: format!("cannot read the scenario: {e}"),
        })?;
        Scenario::from_str(&text, &file)
    }

    /// Parses and checks scenario `text`; `file_name` names it in errors.
    #[allow(clippy::should_implement_trait)]
    pub fn from_str(text: &str, file_name: &str) -> Result<Scenario, ScenarioError> {
        let doc = Doc {
            file: file_name,
            text,
        };
        let root = DeTable::parse(text).map_err(|e| {
            let span = e.span().unwrap_or(0..0);
            ScenarioError {
                file: file_name.to_string(),
                line: Some(doc.line(&span)),
                key: None,
                value: None,
                message: format!("not valid TOML: {}", e.message().trim()),
            }
        })?;
        let top = Tbl::new(
            &doc,
            String::new(),
            root.span(),
            root.get_ref(),
            &[
                "name",
                "description",
                "seed",
                "source",
                "nodes",
                "network",
                "server",
                "metadata",
                "mpiio",
            ],
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
        let DeValue::Array(arr) = nodes_v.get_ref() else {
            return Err(top.bad(
                "nodes",
                nodes_v,
                "expected [[nodes]] groups (an array of tables)",
            ));
        };
        let mut nodes = Vec::new();
        for (i, g) in arr.iter().enumerate() {
            let path = format!("nodes[{i}]");
            let DeValue::Table(t) = g.get_ref() else {
                return Err(doc.err(&g.span(), &path, true, "expected a table"));
            };
            let n = Tbl::new(
                &doc,
                path,
                g.span(),
                t,
                &[
                    "name",
                    "count",
                    "cores",
                    "memory",
                    "nic_bw",
                    "nic_latency",
                    "compute",
                ],
            )?;
            let c = n.sub("compute", &["memcpy", "fft", "bt", "flops"])?;
            nodes.push(NodeGroup {
                name: n.string("name", "a group name")?,
                count: n.int("count", 1)? as usize,
                cores: n.int("cores", 1)? as usize,
                memory: n.size("memory")?,
                nic_bw: n.rate("nic_bw")?,
                nic_latency: n.time("nic_latency")?,
                compute: ComputeRates {
                    memcpy: c.rate("memcpy")?,
                    fft: c.flops("fft")?,
                    bt: c.flops("bt")?,
                    flops: c.flops("flops")?,
                },
            });
        }
        if nodes.is_empty() {
            return Err(top.bad("nodes", nodes_v, "at least one [[nodes]] group is needed"));
        }

        let net = top.sub("network", &["bandwidth", "latency"])?;
        let srv = top.sub("server", &["nic_bw", "device"])?;
        let dev = srv.sub(
            "device",
            &[
                "read_bw",
                "write_bw",
                "read_latency",
                "write_latency",
                "latency_jitter",
            ],
        )?;
        let md = top.sub("metadata", &["open", "create", "close", "delete", "sync"])?;
        let mpiio = top.sub("mpiio", &["shared_pointer"])?;
        Ok(Scenario {
            file: file_name.to_string(),
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
            },
            server: Server {
                nic_bw: srv.rate("nic_bw")?,
                device: Device {
                    read_bw: dev.rate("read_bw")?,
                    write_bw: dev.rate("write_bw")?,
                    read_latency: dev.time("read_latency")?,
                    write_latency: dev.time("write_latency")?,
                    latency_jitter: dev.fraction("latency_jitter")?.unwrap_or(0.0),
                },
            },
            metadata: Metadata {
                open: md.time("open")?,
                create: md.time("create")?,
                close: md.time("close")?,
                delete: md.time("delete")?,
                sync: md.time("sync")?,
            },
            mpiio: MpiIo {
                shared_pointer: mpiio.time("shared_pointer")?,
            },
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
        }
        writeln!(
            f,
            "  network: switch {} / {}",
            fmt_rate(self.network.bandwidth),
            fmt_time(self.network.latency)
        )?;
        let d = &self.server.device;
        writeln!(
            f,
            "  server: NIC {}; device read {} + {}/req, write {} + {}/req{}",
            fmt_rate(self.server.nic_bw),
            fmt_rate(d.read_bw),
            fmt_time(d.read_latency),
            fmt_rate(d.write_bw),
            fmt_time(d.write_latency),
            if d.latency_jitter > 0.0 {
                format!(", latency jitter ±{:.0}%", d.latency_jitter * 100.0)
            } else {
                String::new()
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
        writeln!(
            f,
            "  mpi-io: shared file pointer update {}",
            fmt_time(self.mpiio.shared_pointer)
        )?;
        for (k, v) in &self.source {
            writeln!(f, "  source[{k}]: {v}")?;
        }
        Ok(())
    }
}
