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
    assert_eq!(s.server.device.write_latency, 30e-6);
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
         read_bw, write_bw, read_latency, write_latency, latency_jitter"
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
