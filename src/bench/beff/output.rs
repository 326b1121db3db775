//! The results: b_eff's averages, the text, the report and the plot.

use std::path::Path;

use super::*;
use crate::report::plot::{Figure, Panel, PlotError, Series};

/// b_eff's averages over a run's samples (bytes/s).
#[derive(Debug, Clone, PartialEq)]
pub struct Averages {
    /// Per pattern and size index: the best over methods and repetitions.
    pub best: Vec<Vec<f64>>,
    /// Per pattern: Σ over sizes of `best` / number of sizes.
    pub per_pattern: Vec<f64>,
    /// logavg over the ring patterns, and over the random ones.
    pub rings: f64,
    /// See `rings`.
    pub random: f64,
    /// logavg(rings, random).
    pub b_eff: f64,
    /// The same at `Lmax` alone.
    pub b_eff_lmax: f64,
    /// logavg over the ring patterns at `Lmax`.
    pub rings_lmax: f64,
}

/// b_eff's formulas over `out` for `sizes` (`None` if a pattern has no positive value).
pub fn averages(out: &BeffOutput, sizes: &[u64]) -> Option<Averages> {
    let np = out.patterns.len();
    let mut best = vec![vec![0.0f64; sizes.len()]; np];
    for s in &out.samples {
        let i = sizes.iter().position(|&b| b == s.bytes)?;
        best[s.pattern][i] = best[s.pattern][i].max(s.bandwidth);
    }
    let per_pattern: Vec<f64> = best
        .iter()
        .map(|row| row.iter().sum::<f64>() / sizes.len() as f64)
        .collect();
    let of = |family: Family, values: &dyn Fn(usize) -> f64| -> Option<f64> {
        let v: Vec<f64> = (0..np)
            .filter(|&p| out.patterns[p].1 == family)
            .map(values)
            .collect();
        logavg(&v)
    };
    let last = sizes.len() - 1;
    let rings = of(Family::Ring, &|p| per_pattern[p])?;
    let random = of(Family::Random, &|p| per_pattern[p])?;
    let rings_lmax = of(Family::Ring, &|p| best[p][last])?;
    let random_lmax = of(Family::Random, &|p| best[p][last])?;
    Some(Averages {
        rings,
        random,
        b_eff: logavg(&[rings, random])?,
        b_eff_lmax: logavg(&[rings_lmax, random_lmax])?,
        rings_lmax,
        best,
        per_pattern,
    })
}

const MB: f64 = 1e6;

/// `1`, `32`, `1k`, `32k`, `1M`, `32M`: a size in powers of 1024.
fn size_label(bytes: u64) -> String {
    match bytes {
        b if b >= 1 << 20 => format!("{}M", b >> 20),
        b if b >= 1 << 10 => format!("{}k", b >> 10),
        b => b.to_string(),
    }
}

impl Beff {
    /// The original's protocol: per pattern a table of sizes by methods (MB/s,
    /// the best repetition), then the headline numbers.
    pub fn render(&self, out: &BeffOutput, label: &str, ranks: u64) -> String {
        let sizes = self.params.sizes();
        let mut s = format!("b_eff, the effective communication bandwidth (piotwin, {label})\n");
        let _ = writeln!(
            s,
            "{ranks} processes, Lmax = {} bytes (--mb {}), {} repetitions, random patterns seeded {}",
            self.params.lmax(),
            self.params.mb,
            self.params.repetitions,
            self.params.seed
        );
        for (p, (name, _)) in out.patterns.iter().enumerate() {
            let _ = writeln!(
                s,
                "\npattern {name}\n{:>10} {:>6} {:>12} {:>12} {:>12}   [MB/s]",
                "L [bytes]", "loop", "Sndrcv", "Alltoal", "non-blk"
            );
            for &bytes in &sizes {
                let cell = |m: Method| {
                    out.samples
                        .iter()
                        .filter(|x| x.pattern == p && x.bytes == bytes && x.method == m)
                        .map(|x| x.bandwidth)
                        .fold(None, |a: Option<f64>, b| Some(a.map_or(b, |a| a.max(b))))
                };
                let Some(loops) = out
                    .samples
                    .iter()
                    .find(|x| x.pattern == p && x.bytes == bytes)
                    .map(|x| x.loops)
                else {
                    continue;
                };
                let _ = write!(s, "{bytes:>10} {loops:>6}");
                for m in METHODS {
                    match cell(m) {
                        Some(b) => {
                            let _ = write!(s, " {:>12.3}", b / MB);
                        }
                        None => s.push_str(&format!(" {:>12}", "-")),
                    }
                }
                s.push('\n');
            }
        }
        if out.interrupted {
            s.push_str("\ninterrupted: b_eff not computed\n");
            return s;
        }
        match averages(out, &sizes) {
            Some(a) => {
                let _ = writeln!(
                    s,
                    "\nb_eff = {:.3} MB/s = {:.3} MB/s * {ranks} processes",
                    a.b_eff / MB,
                    a.b_eff / MB / ranks as f64
                );
                let _ = writeln!(
                    s,
                    "  logavg over the 6 ring patterns {:.3} MB/s, over the 6 random patterns {:.3} MB/s",
                    a.rings / MB,
                    a.random / MB
                );
                let _ = writeln!(
                    s,
                    "b_eff at Lmax = {:.3} MB/s; rings only at Lmax = {:.3} MB/s",
                    a.b_eff_lmax / MB,
                    a.rings_lmax / MB
                );
            }
            None => s.push_str("\nb_eff not computed: a pattern has no positive bandwidth\n"),
        }
        if let (Some(first), Some(last)) = (out.pingpong.first(), out.pingpong.last()) {
            let _ = writeln!(
                s,
                "ping-pong of ranks 0 and 1: latency {:.3} us ({} B), bandwidth {:.3} MB/s ({} B)",
                first.seconds * 1e6,
                first.bytes,
                last.bytes as f64 / last.seconds / MB,
                last.bytes
            );
        }
        s
    }

    /// The run report: the headline numbers as metrics; tables `samples` (every
    /// measurement), `best` (per pattern and size) and `pingpong`.
    pub fn report(
        &self,
        out: &BeffOutput,
        mode: Mode,
        ranks: u64,
        environment: std::collections::BTreeMap<String, String>,
    ) -> RunReport {
        let sizes = self.params.sizes();
        let mut metrics = std::collections::BTreeMap::new();
        let averages = averages(out, &sizes).filter(|_| !out.interrupted);
        if let Some(a) = &averages {
            for (k, v) in [
                ("b_eff_mb_s", a.b_eff),
                ("b_eff_per_process_mb_s", a.b_eff / ranks as f64),
                ("b_eff_rings_mb_s", a.rings),
                ("b_eff_random_mb_s", a.random),
                ("b_eff_lmax_mb_s", a.b_eff_lmax),
                ("rings_lmax_mb_s", a.rings_lmax),
            ] {
                metrics.insert(k.to_string(), v / MB);
            }
        }
        if let (Some(first), Some(last)) = (out.pingpong.first(), out.pingpong.last()) {
            metrics.insert("pingpong_latency_us".into(), first.seconds * 1e6);
            metrics.insert(
                "pingpong_bandwidth_mb_s".into(),
                last.bytes as f64 / last.seconds / MB,
            );
        }
        let name = |p: usize| out.patterns[p].0.clone();
        let family = |p: usize| match out.patterns[p].1 {
            Family::Ring => "ring",
            Family::Random => "random",
        };
        let samples = Table {
            columns: [
                "pattern", "family", "bytes", "method", "rep", "loops", "seconds", "mb_s",
            ]
            .map(String::from)
            .to_vec(),
            rows: out
                .samples
                .iter()
                .map(|x| {
                    vec![
                        name(x.pattern).into(),
                        family(x.pattern).into(),
                        x.bytes.into(),
                        x.method.label().into(),
                        x.rep.into(),
                        x.loops.into(),
                        x.seconds.into(),
                        (x.bandwidth / MB).into(),
                    ]
                })
                .collect(),
        };
        let mut tables = std::collections::BTreeMap::new();
        tables.insert("samples".to_string(), samples);
        if let Some(a) = &averages {
            let rows = (0..out.patterns.len())
                .flat_map(|p| sizes.iter().enumerate().map(move |(i, &b)| (p, i, b)))
                .map(|(p, i, b)| {
                    vec![
                        name(p).into(),
                        family(p).into(),
                        b.into(),
                        (a.best[p][i] / MB).into(),
                    ]
                })
                .collect();
            tables.insert(
                "best".to_string(),
                Table {
                    columns: ["pattern", "family", "bytes", "mb_s"]
                        .map(String::from)
                        .to_vec(),
                    rows,
                },
            );
        }
        tables.insert(
            "pingpong".to_string(),
            Table {
                columns: ["bytes", "loops", "seconds"].map(String::from).to_vec(),
                rows: out
                    .pingpong
                    .iter()
                    .map(|r| vec![r.bytes.into(), r.loops.into(), r.seconds.into()])
                    .collect(),
            },
        );
        RunReport {
            interrupted: None,
            intervals: Default::default(),
            bands: Default::default(),
            benchmark: "b_eff".into(),
            mode,
            ranks: ranks as usize,
            params: serde_json::to_value(&self.params).expect("b_eff options serialise"),
            environment,
            hints: Default::default(),
            headline: ["b_eff_mb_s", "b_eff_lmax_mb_s", "pingpong_bandwidth_mb_s"]
                .iter()
                .filter(|k| metrics.contains_key(**k))
                .map(|k| k.to_string())
                .collect(),
            metrics,
            tables,
            errors: out.mismatches.clone(),
        }
    }

    /// Bandwidth over message size, log–log: one panel per family, a line per
    /// pattern (the best over methods and repetitions).
    pub fn figure(&self, out: &BeffOutput, title: &str) -> Option<Figure> {
        let sizes = self.params.sizes();
        let a = averages(out, &sizes)?;
        let x = |b: u64| (b as f64).log2();
        let lmax = *sizes.last()?;
        let ticks: Vec<(f64, String)> = [1u64, 32, 1 << 10, 32 << 10, 1 << 20, 32 << 20]
            .into_iter()
            .filter(|&b| b <= lmax)
            .map(|b| (x(b), size_label(b)))
            .collect();
        let panel = |family: Family, title: &str| Panel {
            title: title.into(),
            x_label: "message size [bytes]".into(),
            y_label: "bandwidth [MB/s]".into(),
            x_range: (0.0, x(*sizes.last().expect("21 sizes"))),
            x_ticks: ticks.clone(),
            log_y: true,
            series: (0..out.patterns.len())
                .filter(|&p| out.patterns[p].1 == family)
                .map(|p| Series {
                    // Numbered: on few processes several patterns share a name.
                    name: format!("{}: {}", p % RINGS + 1, out.patterns[p].0),
                    points: sizes
                        .iter()
                        .zip(&a.best[p])
                        .map(|(&b, &v)| (x(b), v / MB))
                        .collect(),
                })
                .collect(),
        };
        Some(Figure {
            title: title.into(),
            panels: vec![
                panel(Family::Ring, "ring patterns"),
                panel(Family::Random, "random patterns"),
            ],
            panel_size: (560, 420),
        })
    }

    /// Writes the figure to `stem.svg` and `stem.png`.
    pub fn write_plot(
        &self,
        out: &BeffOutput,
        title: &str,
        stem: &Path,
    ) -> Result<Vec<std::path::PathBuf>, PlotError> {
        let Some(fig) = self.figure(out, title) else {
            return Ok(Vec::new());
        };
        let (svg, png) = (stem.with_extension("svg"), stem.with_extension("png"));
        fig.write_svg(&svg)?;
        fig.write_png(&png)?;
        Ok(vec![svg, png])
    }
}
