//! Reading a scenario: the spanned TOML tree, `--set` overrides laid over it,
//! each table checked against the schema's keys, every value with its unit.

use std::collections::BTreeMap;
use std::path::Path;

use toml::Spanned;
use toml::de::{DeTable, DeValue};

use super::schema::{self};
use super::*;

use super::table::{Doc, Tbl, join};

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
            let write_bw = d.rate("write_bw")?;
            if nested && d.opt("overwrite_bw").is_some() {
                return Err(d.bad(
                    "overwrite_bw",
                    d.req("overwrite_bw", "")?,
                    "a RAID member writes at `write_bw`: `overwrite_bw` is the rate of a server's own SSD",
                ));
            }
            Device::Ssd(Ssd {
                read_bw: d.rate("read_bw")?,
                write_bw,
                overwrite_bw: d.rate_or("overwrite_bw", write_bw)?,
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
            let lv = d.req("level", "0, 3, 5 or 6")?;
            let level = d.int("level", 0)?;
            if ![0, 3, 5, 6].contains(&level) {
                return Err(d.bad("level", lv, "expected RAID level 0, 3, 5 or 6"));
            }
            let min = [1, 3, 3, 4][[0, 3, 5, 6]
                .iter()
                .position(|&l| l == level)
                .expect("checked")];
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
            let pattern = c.rate_or("pattern", f64::INFINITY)?;
            let kept = |k: &str| match c.number_or(k, 1.0)? {
                v if v > 0.0 => Ok(v),
                _ => Err(c.bad(
                    k,
                    c.req(k, "a number")?,
                    "must be above 0 (the part of the rate kept)",
                )),
            };
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
                        release_time: t.time_or("release_time", f64::INFINITY)?,
                        free: match t.opt("free") {
                            Some(_) => t.size("free")? as f64,
                            None => f64::INFINITY,
                        },
                        readahead: t.size_or_zero("readahead", 128 << 10)?,
                        dirty_ratio: dirty,
                        dirty_background_ratio: bg,
                        write_bw: t.rate_or("write_bw", memcpy)?,
                        rewrite_bw: t.rate_or("rewrite_bw", t.rate_or("write_bw", memcpy)?)?,
                        read_bw: t.rate_or("read_bw", memcpy)?,
                        aliased_bw: t.rate_or("aliased_bw", f64::INFINITY)?,
                        aliased_within: {
                            let within = t.size_or("aliased_within", 32)?;
                            if within > 4096 {
                                return Err(t.bad(
                                    "aliased_within",
                                    t.req("aliased_within", "")?,
                                    "copies alias modulo 4 KiB: at most \"4KiB\"",
                                ));
                            }
                            within
                        },
                        aliased_all_cores: match t.number_opt("aliased_all_cores")? {
                            Some(kept) if kept <= 0.0 => {
                                return Err(t.bad(
                                    "aliased_all_cores",
                                    t.req("aliased_all_cores", "")?,
                                    "must be above 0 (the part of `aliased_bw` each core keeps)",
                                ));
                            }
                            kept => kept,
                        },
                        direct_from: match t.opt("direct_from") {
                            Some(_) => t.size("direct_from")?,
                            None => u64::MAX,
                        },
                        huge_from: match t.opt("huge_from") {
                            Some(_) => t.size("huge_from")?,
                            None => u64::MAX,
                        },
                        fresh_holds_core: t.choice("fresh_stall", &["none", "core"], 0)? == 1,
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
                memory_bw: n.rate_or("memory_bw", memcpy)?,
                memory_read_bw: n.rate_or("memory_read_bw", n.rate_or("memory_bw", memcpy)?)?,
                memory_write_bw: n.rate_or("memory_write_bw", n.rate_or("memory_bw", memcpy)?)?,
                message_bw: n.rate_or("message_bw", memcpy)?,
                nic_latency: n.time("nic_latency")?,
                switch: n.string_or("switch", "a switch name", "core")?,
                compute: ComputeRates {
                    memcpy,
                    fft: c.flops("fft")?,
                    signal: c.rate_or("signal", memcpy / 2.0)?,
                    bt: c.flops("bt")?,
                    flops: c.flops("flops")?,
                    pattern,
                    pattern_check: c.rate_or("pattern_check", pattern)?,
                    private_cache: c.size_or_zero("private_cache", 0)?,
                    pattern_cached: c.rate_or("pattern_cached", pattern)?,
                    pattern_check_cached: c
                        .rate_or("pattern_check_cached", c.rate_or("pattern_check", pattern)?)?,
                    first_touch: c.rate_or("first_touch", f64::INFINITY)?,
                    error_norm: match c.opt("error_norm") {
                        Some(_) => Some(c.rate("error_norm")?),
                        None => None,
                    },
                    all_cores: AllCores {
                        fft: kept("fft_all_cores")?,
                        signal: kept("signal_all_cores")?,
                        bt: kept("bt_all_cores")?,
                        flops: kept("flops_all_cores")?,
                        error_norm: kept("error_norm_all_cores")?,
                        pattern: kept("pattern_all_cores")?,
                    },
                },
                cache,
                syscall: n.time_or("syscall", 0.0)?,
                read_syscall: n.time_or("read_syscall", n.time_or("syscall", 0.0)?)?,
                fortran_statement: n.time_or("fortran_statement", 0.0)?,
                oversubscribed_wakeup: n.time_or("oversubscribed_wakeup", 0.0)?,
                waiting_ranks: [WaitingRanks::Idle, WaitingRanks::Poll]
                    [n.choice("waiting_ranks", &["idle", "poll"], 0)?],
                polled_wakeup: n.time_or("polled_wakeup", 0.0)?,
                allreduce_wake: n.number_or("allreduce_wake", 1.0)?,
                release_stagger: n.time_or("release_stagger", 0.0)?,
                sleeping_ranks: [SleepingRanks::Hold, SleepingRanks::Yield]
                    [n.choice("sleeping_ranks", &["hold", "yield"], 0)?],
                wake_slice: n.time_or("wake_slice", f64::INFINITY)?,
                eager_limit: n.size_or("eager_limit", u64::MAX)?,
                mmap_from: n.size_or("mmap_from", u64::MAX)?,
                oversubscribed_unpack_bw: n.rate_or("oversubscribed_unpack_bw", f64::INFINITY)?,
                oversubscribed_pack_bw: n.rate_or("oversubscribed_pack_bw", f64::INFINITY)?,
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
        let torus = match net.sub_opt("torus", &schema::children("network.torus", None))? {
            Some(t) => Some(Torus {
                dims: [t.int("x", 1)?, t.int_or("y", 1, 1)?, t.int_or("z", 1, 1)?]
                    .map(|d| d as usize),
                bandwidth: t.rate("bandwidth")?,
                latency: t.time("latency")?,
            }),
            None => None,
        };
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
                    inode_write_lock: f.choice("write_lock", &["none", "inode"], 0)? == 1,
                    locked_syscall: f.choice("write_lock_span", &["copy", "call"], 0)? == 1,
                }
            }
            None => FileSystem {
                kind: FsKind::Local,
                stripe_size: 1 << 20,
                stripe_count: 1,
                lock_granularity: None,
                lock_revoke: 0.0,
                inode_write_lock: false,
                locked_syscall: false,
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
        let spread = |table: &str| -> Result<Option<Spread>, ScenarioError> {
            let Some(t) = top.sub_opt(table, &schema::children(table, None))? else {
                return Ok(None);
            };
            t.req("spread", "the spread, e.g. 0.1")?;
            Ok(Some(Spread {
                // A standard deviation of a log: any number >= 0 (a noisy
                // machine's exceeds 1).
                spread: t.quantity("spread", KeyKind::Number)?.0,
                probe: t.string_or("probe", "the probes it was measured over", "")?,
                quality: t.string_or("quality", "how many, and how", "")?,
            }))
        };
        let run_to_run = spread("run_to_run")?;
        let model_error = spread("model_error")?;
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
            placement: [Placement::Block, Placement::RoundRobin]
                [top.choice("placement", &["block", "round-robin"], 0)?],
            network: Network {
                bandwidth: net.rate("bandwidth")?,
                latency: net.time("latency")?,
                links,
                torus,
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
                first_open: mpiio.time_or("first_open", 0.0)?,
                first_close: mpiio.time_or("first_close", 0.0)?,
                open_steps: mpiio.number_or("open_steps", 0.0)?,
                offsets_steps: mpiio.number_opt("offsets_steps")?,
            },
            calibration,
            run_to_run,
            model_error,
        })
    }
}

/// Puts one `--set KEY=VALUE` (its text at `all[start..]`) into the parsed tree.
/// `v`, parsed on its own, with every span moved `by` bytes on: where it lies in
/// the text the scenario is read from (so errors inside it name the override).
fn shift_spans<'i>(v: Spanned<DeValue<'i>>, by: usize) -> Spanned<DeValue<'i>> {
    let span = v.span();
    let moved = span.start + by..span.end + by;
    let inner = match v.into_inner() {
        DeValue::Table(t) => DeValue::Table(
            t.into_iter()
                .map(|(k, x)| {
                    let ks = k.span();
                    (
                        Spanned::new(ks.start + by..ks.end + by, k.into_inner()),
                        shift_spans(x, by),
                    )
                })
                .collect(),
        ),
        DeValue::Array(a) => DeValue::Array(a.into_iter().map(|x| shift_spans(x, by)).collect()),
        other => other,
    };
    Spanned::new(moved, inner)
}

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
    // TOML if it parses as a single value, else the bare text as a string. An
    // inline table replaces the whole table (a device block, say), so that keys of
    // the old one that the new one does not allow are gone.
    let value = match DeValue::parse(vtrim) {
        Ok(v) => match v.get_ref() {
            DeValue::Array(_) => {
                return Err(doc.err(
                    &vspan,
                    key,
                    true,
                    "--set takes one value (a number, a string, true or false) or an inline table {…}, not an array",
                ));
            }
            DeValue::Table(_) => shift_spans(v, vstart).into_inner(),
            _ => v.into_inner(),
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
