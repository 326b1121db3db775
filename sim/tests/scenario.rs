//! Scenario loading: the shipped file loads; every kind of mistake gives one
//! precise message with file, line, key path, value and what is allowed.

use piotwin_sim::Scenario;

const GOOD: &str = r#"name = "t"
seed = 7
[source]
general = "made up for a test"
[[nodes]]
name = "c"
count = 2
cores = 4
memory = "8GiB"
nic_bw = "10Gb/s"
nic_latency = "2us"
[nodes.compute]
memcpy = "5GB/s"
fft = "1Gflop/s"
bt = "1Gflop/s"
flops = "1Gflop/s"
[network]
bandwidth = "40GB/s"
latency = "1us"
[server]
nic_bw = "1.5GiB/s"
[server.device]
read_bw = "500MB/s"
write_bw = "400MB/s"
read_latency = "80us"
write_latency = "30us"
[metadata]
open = "50us"
create = "200us"
close = "20us"
delete = "150us"
sync = "1ms"
[mpiio]
shared_pointer = "100us"
"#;

fn err(text: &str) -> String {
    Scenario::from_str(text, "s.toml").unwrap_err().to_string()
}

#[test]
fn good_file_loads_with_exact_units() {
    let s = Scenario::from_str(GOOD, "s.toml").unwrap();
    assert_eq!(s.name, "t");
    assert_eq!(s.seed, 7);
    assert_eq!(s.nodes[0].memory, 8 << 30);
    assert_eq!(s.nodes[0].nic_bw, 1.25e9);
    assert_eq!(s.server.nic_bw, 1.5 * (1u64 << 30) as f64);
    match &s.server.device {
        piotwin_sim::scenario::Device::Ssd(d) => assert_eq!(d.write_latency, 30e-6),
        other => panic!("an SSD by default, got {other:?}"),
    }
    assert_eq!(s.node_count(), 2);
    assert_eq!(s.core_count(), 8);
    let shown = s.to_string();
    assert!(shown.contains("2 node(s), 8 core(s)"), "{shown}");
    assert!(
        shown.contains("source[general]: made up for a test"),
        "{shown}"
    );
}

#[test]
fn shipped_default_scenario_loads() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../scenarios/default.toml");
    let s = Scenario::load(std::path::Path::new(path)).unwrap();
    assert_eq!(s.core_count(), 2);
    assert_eq!(s.nodes[0].memory, 24 << 30);
}

#[test]
fn unknown_key_names_line_path_and_allowed_keys() {
    let text = GOOD.replace("write_bw = \"400MB/s\"", "writ_bw = \"400MB/s\"");
    assert_eq!(
        err(&text),
        "s.toml:24: server.device.writ_bw: unknown key; allowed in [server.device]: \
         kind, read_bw, write_bw, overwrite_bw, read_latency, write_latency, latency_jitter, channels"
    );
}

#[test]
fn missing_unit() {
    let text = GOOD.replace("write_bw = \"400MB/s\"", "write_bw = 400");
    let e = err(&text);
    assert_eq!(
        e,
        "s.toml:24: server.device.write_bw = 400: missing unit; expected a rate like \"200MB/s\" as a quoted string"
    );
    let text = GOOD.replace("latency = \"1us\"", "latency = \"1\"");
    assert!(
        err(&text)
            .starts_with("s.toml:19: network.latency = \"1\": missing unit; expected a time like"),
        "{}",
        err(&text)
    );
}

#[test]
fn negative_and_zero_values() {
    let text = GOOD.replace("write_bw = \"400MB/s\"", "write_bw = \"-400MB/s\"");
    assert!(err(&text).starts_with(
        "s.toml:24: server.device.write_bw = \"-400MB/s\": negative value; expected a rate"
    ));
    let text = GOOD.replace("write_bw = \"400MB/s\"", "write_bw = \"0MB/s\"");
    assert!(
        err(&text)
            .starts_with("s.toml:24: server.device.write_bw = \"0MB/s\": a rate must be positive")
    );
    let text = GOOD.replace("count = 2", "count = 0");
    assert_eq!(
        err(&text),
        "s.toml:7: nodes[0].count = 0: expected a whole number ≥ 1"
    );
    let text = GOOD.replace("memory = \"8GiB\"", "memory = \"0B\"");
    assert_eq!(
        err(&text),
        "s.toml:9: nodes[0].memory = \"0B\": a size must be positive"
    );
}

#[test]
fn bad_unit() {
    let text = GOOD.replace(
        "read_latency = \"80us\"",
        "read_latency = \"80 lightyears\"",
    );
    assert!(err(&text).starts_with(
        "s.toml:25: server.device.read_latency = \"80 lightyears\": unknown unit `lightyears`; expected a time like"
    ));
    let text = GOOD.replace("memory = \"8GiB\"", "memory = \"8Gib\"");
    assert!(
        err(&text).starts_with(
            "s.toml:9: nodes[0].memory = \"8Gib\": unknown unit `Gib`; expected a size"
        )
    );
}

#[test]
fn missing_key_and_bad_toml() {
    let text = GOOD.replace("sync = \"1ms\"\n", "");
    assert_eq!(
        err(&text),
        "s.toml:27: metadata.sync: missing key in [metadata]; expected a time like \"5ms\""
    );
    let e = err("name = \"x\"\nseed = \n");
    assert!(e.starts_with("s.toml:2: not valid TOML"), "{e}");
    let e = Scenario::load(std::path::Path::new("/nonexistent/x.toml"))
        .unwrap_err()
        .to_string();
    assert!(
        e.starts_with("/nonexistent/x.toml: cannot read the scenario"),
        "{e}"
    );
}

#[test]
fn every_shipped_scenario_loads() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../scenarios");
    let mut n = 0;
    for e in std::fs::read_dir(&dir).unwrap() {
        let p = e.unwrap().path();
        if p.extension().is_some_and(|x| x == "toml") {
            Scenario::load(&p).unwrap_or_else(|e| panic!("{e}"));
            n += 1;
        }
    }
    assert!(n >= 5, "{n} scenarios");
}

#[test]
fn set_overrides_with_precise_errors() {
    let s = Scenario::from_str_with(GOOD, "s.toml", &["nodes[0].count=3".into()]).unwrap();
    assert_eq!(s.node_count(), 3);
    let e =
        Scenario::from_str_with(GOOD, "s.toml", &["network.bandwidth=fast".into()]).unwrap_err();
    assert!(
        e.to_string()
            .starts_with("--set network.bandwidth=fast: network.bandwidth = fast:"),
        "{e}"
    );
    let e = Scenario::from_str_with(GOOD, "s.toml", &["nodes[4].count=1".into()]).unwrap_err();
    assert!(e.to_string().contains("`nodes` has 1 entry"), "{e}");
}

/// The client-CPU terms: absent = off (0 s, page-cache rates = memcpy); set
/// with units; mistakes named like any other key.
#[test]
fn cpu_cost_keys_default_off_and_check_units() {
    let s = Scenario::from_str(GOOD, "s.toml").unwrap();
    let g = &s.nodes[0];
    assert_eq!((g.syscall, g.oversubscribed_wakeup), (0.0, 0.0));
    let m = &s.mpiio;
    assert_eq!(
        (m.independent_call, m.collective_call, m.open, m.close),
        (0.0, 0.0, 0.0, 0.0)
    );
    assert!(s.calibration.is_empty());
    let text = GOOD
        .replace(
            "nic_latency = \"2us\"\n",
            "nic_latency = \"2us\"\nsyscall = \"1.5us\"\noversubscribed_wakeup = \"4ms\"\n[nodes.cache]\nwrite_bw = \"1.7GB/s\"\n",
        )
        .replace(
            "shared_pointer = \"100us\"\n",
            "shared_pointer = \"100us\"\nindependent_call = \"5us\"\ncollective_call = \"20us\"\nopen = \"300us\"\nclose = \"50us\"\n",
        );
    let s = Scenario::from_str(&text, "s.toml").unwrap();
    let g = &s.nodes[0];
    assert_eq!((g.syscall, g.oversubscribed_wakeup), (1.5e-6, 4e-3));
    let c = g.cache.as_ref().unwrap();
    assert_eq!(
        (c.write_bw, c.read_bw),
        (1.7e9, 5e9),
        "read_bw defaults to memcpy"
    );
    let m = &s.mpiio;
    assert_eq!(
        (m.independent_call, m.collective_call, m.open, m.close),
        (5e-6, 20e-6, 300e-6, 50e-6)
    );
    let shown = s.to_string();
    assert!(
        shown.contains("independent 5.00 us, collective 20.00 us"),
        "{shown}"
    );
    assert!(
        shown.contains("page-cache copies per core: write 1.7 GB/s"),
        "{shown}"
    );

    assert_eq!(
        err(&text.replace("syscall = \"1.5us\"", "syscall = 1.5")),
        "s.toml:12: nodes[0].syscall = 1.5: missing unit; expected a time like \"5ms\" as a quoted string"
    );
    assert!(
        err(&text.replace("write_bw = \"1.7GB/s\"", "write_bw = \"0GB/s\""))
            .starts_with("s.toml:15: nodes[0].cache.write_bw = \"0GB/s\": a rate must be positive"),
        "{}",
        err(&text.replace("write_bw = \"1.7GB/s\"", "write_bw = \"0GB/s\""))
    );
    assert!(
        err(&text.replace(
            "independent_call = \"5us\"",
            "independent_call = \"5 parsecs\""
        ))
        .contains("mpiio.independent_call = \"5 parsecs\": unknown unit `parsecs`"),
    );
    let e = Scenario::from_str_with(GOOD, "s.toml", &["mpiio.colective_call=1us".into()])
        .unwrap_err()
        .to_string();
    assert!(
        e.starts_with("--set mpiio.colective_call=1us: mpiio.colective_call: unknown key; allowed in [mpiio]: shared_pointer, independent_call, collective_call, open, close, first_open, first_close, open_steps"),
        "{e}"
    );
}

const CALIBRATION: &str = r#"
[calibration."mpiio.independent_call"]
value = "5.2us"
low = "4.9us"
high = "5.5us"
probe = "ior mpiio independent 1 KiB, 1..2 ranks"
quality = "r2=0.998 n=24"

[calibration."nodes[0].cache.write_bw"]
value = "1.7GB/s"
low = "1.65GB/s"
high = "1.75GB/s"
probe = "iozone seq write in cache"
quality = "r2=0.99 n=12"

[calibration."nodes[0].cache.dirty_ratio"]
value = 0.2
low = 0.19
high = 0.21
probe = "sync cost over dirty bytes"
"#;

/// `[calibration]` entries are checked against the schema, kept, printed by
/// `scenario check` (Display), and written back by `Calibrated::to_toml` to
/// text that parses to the same entries.
#[test]
fn calibration_table_round_trips() {
    let text = format!("{GOOD}{CALIBRATION}");
    let s = Scenario::from_str(&text, "s.toml").unwrap();
    assert_eq!(s.calibration.len(), 3);
    let c = &s.calibration["mpiio.independent_call"];
    assert_eq!((c.value, c.low, c.high), (5.2e-6, 4.9e-6, 5.5e-6));
    assert_eq!(c.kind, piotwin_sim::scenario::KeyKind::Time);
    assert_eq!(c.probe, "ior mpiio independent 1 KiB, 1..2 ranks");
    assert_eq!(c.quality, "r2=0.998 n=24");
    let w = &s.calibration["nodes[0].cache.write_bw"];
    assert_eq!((w.value, w.low, w.high), (1.7e9, 1.65e9, 1.75e9));
    let d = &s.calibration["nodes[0].cache.dirty_ratio"];
    assert_eq!((d.value, d.quality.as_str()), (0.2, ""));
    let shown = s.to_string();
    assert!(
        shown.contains(
            "calibrated mpiio.independent_call = 5.2us [4.9us .. 5.5us] from `ior mpiio independent 1 KiB, 1..2 ranks` (r2=0.998 n=24)"
        ),
        "{shown}"
    );
    let written: String = s
        .calibration
        .iter()
        .map(|(k, c)| c.to_toml(k))
        .collect::<Vec<_>>()
        .join("\n");
    let again = Scenario::from_str(&format!("{GOOD}\n{written}"), "w.toml").unwrap();
    assert_eq!(again.calibration, s.calibration);
}

#[test]
fn calibration_errors_name_file_line_and_key() {
    let with = |extra: &str| format!("{GOOD}{extra}");
    let entry = |key: &str, body: &str| with(&format!("[calibration.\"{key}\"]\n{body}"));
    let ok = "value = \"5us\"\nlow = \"4us\"\nhigh = \"6us\"\nprobe = \"p\"\n";
    // a key the schema does not have
    let e = err(&entry("mpiio.indep_call", ok));
    assert!(
        e.starts_with(
            "s.toml:35: calibration.\"mpiio.indep_call\": not a scenario key with a number"
        ),
        "{e}"
    );
    // list indices as --set writes them, within the scenario's lists
    let e = err(&entry("nodes.syscall", ok));
    assert!(
        e.contains("`nodes` is a list of tables: name one, e.g. nodes[0]"),
        "{e}"
    );
    let e = err(&entry("nodes[3].syscall", ok));
    assert!(e.contains("`nodes` has 1 entry (index 0..1)"), "{e}");
    let e = err(&entry("mpiio[0].open", ok));
    assert!(e.contains("`mpiio` is not a list"), "{e}");
    // the unit the key expects
    let e = err(&entry(
        "nodes[0].cache.write_bw",
        "value = \"5us\"\nlow = \"4us\"\nhigh = \"6us\"\nprobe = \"p\"\n",
    ));
    assert!(
        e.starts_with(
            "s.toml:36: calibration.\"nodes[0].cache.write_bw\".value = \"5us\": unknown unit `us`; expected a rate"
        ),
        "{e}"
    );
    let e = err(&entry(
        "nodes[0].cores",
        "value = \"4\"\nlow = 3\nhigh = 5\nprobe = \"p\"\n",
    ));
    assert!(e.contains(".value = \"4\": expected a plain number"), "{e}");
    // the shape: interval holds the value, probe required, no other fields
    let e = err(&entry(
        "mpiio.open",
        "value = \"5us\"\nlow = \"6us\"\nhigh = \"7us\"\nprobe = \"p\"\n",
    ));
    assert!(
        e.starts_with(
            "s.toml:37: calibration.\"mpiio.open\".low = \"6us\": the interval must hold the value"
        ),
        "{e}"
    );
    let e = err(&entry(
        "mpiio.open",
        "value = \"5us\"\nlow = \"4us\"\nhigh = \"6us\"\n",
    ));
    assert!(
        e.contains("calibration.\"mpiio.open\".probe: missing key in [calibration.\"mpiio.open\"]"),
        "{e}"
    );
    let e = err(&entry("mpiio.open", &format!("{ok}r2 = 0.9\n")));
    assert!(
        e.contains("calibration.\"mpiio.open\".r2: unknown key; allowed in [calibration.\"mpiio.open\"]: value, low, high, probe, quality"),
        "{e}"
    );
    let e = err(&with("[calibration]\n\"mpiio.open\" = \"5us\"\n"));
    assert!(
        e.contains("expected a table with value, low, high, probe and quality"),
        "{e}"
    );
}

/// The schema section of `scenarios/README.md` is what `piotwin scenario
/// schema` prints (the schema is declared once, in `scenario::schema`).
#[test]
fn the_readme_schema_is_the_declared_one() {
    let readme = include_str!("../../scenarios/README.md");
    let begin = "<!-- schema: generated by `piotwin scenario schema`; a test keeps it equal -->\n";
    let end = "<!-- schema:end -->";
    let a = readme.find(begin).expect("the README marks the schema") + begin.len();
    let b = readme.find(end).expect("the README marks the schema's end");
    let expected = piotwin_sim::scenario::schema::markdown();
    assert!(
        readme[a..b] == expected,
        "scenarios/README.md's schema differs from the declared one: regenerate it with \
         `piotwin scenario schema` between its markers"
    );
}

#[test]
fn overwrite_and_aliasing_keys_are_checked() {
    let raid = GOOD.replace(
        "[server.device]\nread_bw = \"500MB/s\"\nwrite_bw = \"400MB/s\"\nread_latency = \"80us\"\nwrite_latency = \"30us\"\n",
        "[server.device]\nkind = \"raid\"\nlevel = 0\ndisks = 2\nstripe_unit = \"64KiB\"\n[server.device.member]\nread_bw = \"500MB/s\"\nwrite_bw = \"400MB/s\"\noverwrite_bw = \"600MB/s\"\nread_latency = \"80us\"\nwrite_latency = \"30us\"\n",
    );
    let e = err(&raid);
    assert!(
        e.contains(
            "server.device.member.overwrite_bw = \"600MB/s\": a RAID member writes at `write_bw`"
        ),
        "{e}"
    );
    let within = GOOD.replace(
        "[network]",
        "[nodes.cache]\naliased_bw = \"1GB/s\"\naliased_within = \"8KiB\"\n[network]",
    );
    let e = err(&within);
    assert!(
        e.contains("nodes[0].cache.aliased_within = \"8KiB\": copies alias modulo 4 KiB"),
        "{e}"
    );
    let kept = |v: &str| {
        GOOD.replace(
            "[network]",
            &format!("[nodes.cache]\naliased_bw = \"1GB/s\"\naliased_all_cores = {v}\n[network]"),
        )
    };
    let e = err(&kept("0"));
    assert!(
        e.contains("nodes[0].cache.aliased_all_cores = 0: must be above 0"),
        "{e}"
    );
    let e = err(&GOOD.replace(
        "nic_latency = \"2us\"\n",
        "nic_latency = \"2us\"\nmessage_bw = \"quick\"\n",
    ));
    assert!(e.contains("nodes[0].message_bw = \"quick\""), "{e}");
    let s = Scenario::from_str(
        &GOOD.replace(
            "nic_latency = \"2us\"\n",
            "nic_latency = \"2us\"\nmessage_bw = \"2.5GB/s\"\n",
        ),
        "s.toml",
    )
    .unwrap();
    assert_eq!(s.nodes[0].message_bw, 2.5e9);
    assert!(
        s.to_string()
            .contains("intra-node messages 2.5 GB/s per core"),
        "{s}"
    );
    let s = Scenario::from_str(&kept("0.6"), "s.toml").unwrap();
    assert_eq!(
        s.nodes[0].cache.as_ref().map(|c| c.aliased_all_cores),
        Some(Some(0.6))
    );
    let fine = GOOD.replace(
        "write_bw = \"400MB/s\"",
        "write_bw = \"400MB/s\"\noverwrite_bw = \"600MB/s\"",
    );
    let s = Scenario::from_str(&fine, "s.toml").unwrap();
    assert!(s.to_string().contains("(overwrites 600.0 MB/s)"), "{s}");
}

/// BTIO's error norm takes a rate and a part kept; an all-reduce's part of
/// the wake-up a plain number; each is shown where given.
#[test]
fn error_norm_and_allreduce_keys_are_checked() {
    let with = |lines: &str| {
        GOOD.replace(
            "flops = \"1Gflop/s\"\n",
            &format!("flops = \"1Gflop/s\"\n{lines}"),
        )
    };
    let e = err(&with("error_norm = \"fast\"\n"));
    assert!(e.contains("nodes[0].compute.error_norm = \"fast\""), "{e}");
    let e = err(&with("error_norm_all_cores = 0\n"));
    assert!(e.contains("nodes[0].compute.error_norm_all_cores"), "{e}");
    let e = err(&GOOD.replace(
        "nic_latency = \"2us\"\n",
        "nic_latency = \"2us\"\nallreduce_wake = \"half\"\n",
    ));
    assert!(e.contains("nodes[0].allreduce_wake = \"half\""), "{e}");
    let fine = with("error_norm = \"150MB/s\"\nerror_norm_all_cores = 0.9\n").replace(
        "nic_latency = \"2us\"\n",
        "nic_latency = \"2us\"\nallreduce_wake = 0.6\n",
    );
    let s = Scenario::from_str(&fine, "s.toml").unwrap();
    let g = &s.nodes[0];
    assert_eq!(
        (
            g.compute.error_norm,
            g.compute.all_cores.error_norm,
            g.allreduce_wake
        ),
        (Some(150e6), 0.9, 0.6)
    );
    let shown = s.to_string();
    assert!(
        shown.contains("BTIO's error norm 150.0 MB/s of the dump (×0.9"),
        "{shown}"
    );
    assert!(shown.contains("waits 0.6 of a wake-up"), "{shown}");
    let plain = Scenario::from_str(GOOD, "s.toml").unwrap();
    assert_eq!(
        (
            plain.nodes[0].compute.error_norm,
            plain.nodes[0].allreduce_wake
        ),
        (None, 1.0)
    );
}
