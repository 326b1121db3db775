//! Sweep files and their points.
//!
//! ```toml
//! scenario  = "../scenarios/lustre-hdd.toml"   # relative to the sweep file
//! benchmark = "ior"
//! options   = "-a MPIIO -b 16m -t 1m -e"       # or a list of words
//! ranks     = [256, 1024]                      # or one number
//! seed      = 1                                # optional: the scenario's by default
//! samples   = 16                               # optional: prediction intervals per point
//!
//! [vary]                                       # the cartesian product of these
//! "server.count"            = [4, 8, 16, 32]   # a scenario key, as --set writes it
//! "filesystem.stripe_count" = [1, 4, 8]
//! "-t"                      = ["1m", "4m"]     # a benchmark option (true: a bare flag)
//! device                    = ["raid6", "nvme"] # named alternatives, below
//!
//! [alternatives.device.raid6]                  # each: scenario keys and their values
//! "server.device" = { kind = "raid", level = 6, disks = 10, stripe_unit = "128KiB",
//!                     member = { kind = "hdd", capacity = "4TB", rpm = 7200 } }
//! [alternatives.device.nvme]
//! "server.device" = { kind = "ssd", read_bw = "3GB/s", write_bw = "2GB/s" }
//! ```
//!
//! A varied benchmark option replaces the same option among `options`.
//! Instead of `[vary]`, `[[points]]` lists the points one by one (each a table
//! of the same keys with one value). The rank counts multiply either. A table
//! value replaces the whole table of the scenario (a device block, say).
//!
//! Every point is checked before anything runs: its scenario read with its
//! overrides, its benchmark options parsed and checked as `piotwin run` checks
//! them. An error names the sweep file, the line of the value, the point, the
//! key and the value.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use piotwin_sim::Scenario;
use toml::de::{DeTable, DeValue};

use super::TwinRun;
use crate::bench::Bench;

/// What a varied key is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DimKind {
    /// The rank count.
    Ranks,
    /// A scenario key (`--set KEY=VALUE`).
    Scenario,
    /// A benchmark option (`-t 4m`).
    Option,
    /// A name among `[alternatives.<key>]`.
    Alternative,
}

/// One varied key of a sweep.
#[derive(Debug, Clone, PartialEq)]
pub struct Dim {
    /// As the sweep file spells it (`server.count`, `-t`, `device`, `ranks`).
    pub name: String,
    /// What it varies.
    pub kind: DimKind,
    /// Whether every value is a number (plots draw it on a numeric axis).
    pub numeric: bool,
}

/// One point's value of one varied key, and where it was written.
#[derive(Debug, Clone, PartialEq)]
pub struct Setting {
    /// The value as a person reads it (`4`, `"1m"` as `1m`, `nvme`).
    pub shown: String,
    /// Its line in the sweep file.
    pub line: usize,
    /// The `--set` overrides it makes.
    pub overrides: Vec<String>,
    /// The benchmark options it adds.
    pub options: Vec<String>,
}

/// One run of the sweep.
#[derive(Debug, Clone, PartialEq)]
pub struct Point {
    /// Its position among the sweep's points, from 0.
    pub index: usize,
    /// Ranks of the run.
    pub ranks: u64,
    /// One setting per dimension of [`Sweep::dims`] but `ranks`, in that order.
    pub settings: Vec<Setting>,
}

/// A sweep file, read and expanded into its points (not yet checked against
/// the scenario and the benchmark: see [`Sweep::check`]).
#[derive(Debug, Clone, PartialEq)]
pub struct Sweep {
    /// The sweep file.
    pub file: PathBuf,
    /// The base scenario (relative paths taken from the sweep file's directory).
    pub scenario: PathBuf,
    /// The benchmark, as `piotwin run` names it.
    pub benchmark: String,
    /// Its options common to every point.
    pub options: Vec<String>,
    /// `--seed` of every run; `None`: the scenario's.
    pub seed: Option<u64>,
    /// `--samples K` of every point.
    pub samples: Option<usize>,
    /// The varied keys: `ranks` first, then the file's in its order.
    pub dims: Vec<Dim>,
    /// The points, ranks outermost.
    pub points: Vec<Point>,
    /// Line of `options` (where a point's options fail and none is varied).
    options_line: usize,
    /// Digest of the base scenario's text: a stored result is reused only for
    /// the same scenario file content, not merely the same path.
    scenario_digest: u64,
}

/// FNV-1a (64 bits) of `bytes`: a digest that stays the same on every build
/// and platform (std's hasher promises neither).
fn digest(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(*b)).wrapping_mul(0x0000_0100_0000_01b3)
    })
}

/// The digest of the file at `path` (0 where it cannot be read: `check` says why).
fn file_digest(path: &Path) -> u64 {
    std::fs::read(path).map_or(0, |b| digest(&b))
}

/// The top-level keys of a sweep file.
const TOP: [&str; 9] = [
    "scenario",
    "benchmark",
    "options",
    "ranks",
    "seed",
    "samples",
    "vary",
    "points",
    "alternatives",
];

/// A sweep file being read: its text for line numbers, its spanned tree.
struct Reader<'a> {
    file: &'a Path,
    text: &'a str,
}

impl Reader<'_> {
    fn line(&self, span: &std::ops::Range<usize>) -> usize {
        self.text[..span.start.min(self.text.len())]
            .bytes()
            .filter(|&b| b == b'\n')
            .count()
            + 1
    }

    fn err(
        &self,
        span: &std::ops::Range<usize>,
        key: &str,
        message: impl std::fmt::Display,
    ) -> String {
        let raw = self.text.get(span.clone()).unwrap_or("").trim();
        let shown = match raw.lines().count() {
            0 => String::new(),
            1 => format!(" = {raw}"),
            _ => format!(" = {} …", raw.lines().next().unwrap_or("")),
        };
        format!(
            "sweep `{}`, line {}: {key}{shown}: {message}",
            self.file.display(),
            self.line(span)
        )
    }
}

/// `v` as TOML text on one line (tables inline), for `--set KEY=VALUE`.
fn inline(v: &DeValue<'_>, text: &str, span: &std::ops::Range<usize>) -> String {
    match v {
        DeValue::Table(t) => {
            let items: Vec<String> = t
                .iter()
                .map(|(k, x)| {
                    let key = k.get_ref();
                    let bare = !key.is_empty()
                        && key
                            .chars()
                            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
                    let key = match bare {
                        true => key.to_string(),
                        false => toml::Value::String(key.to_string()).to_string(),
                    };
                    format!("{key} = {}", inline(x.get_ref(), text, &x.span()))
                })
                .collect();
            format!("{{{}}}", items.join(", "))
        }
        DeValue::Array(a) => {
            let items: Vec<String> = a
                .iter()
                .map(|x| inline(x.get_ref(), text, &x.span()))
                .collect();
            format!("[{}]", items.join(", "))
        }
        _ => text[span.clone()].trim().to_string(),
    }
}

/// A scalar as a person reads it: strings unquoted.
fn shown(v: &DeValue<'_>, text: &str, span: &std::ops::Range<usize>) -> String {
    match v {
        DeValue::String(s) => s.to_string(),
        _ => inline(v, text, span),
    }
}

impl Sweep {
    /// Reads and expands the sweep file at `path`.
    pub fn load(path: &Path) -> Result<Sweep, String> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| format!("sweep `{}`: cannot read it: {e}", path.display()))?;
        Sweep::from_str(&text, path)
    }

    /// Reads and expands sweep `text`; `path` names it and anchors relative paths.
    pub fn from_str(text: &str, path: &Path) -> Result<Sweep, String> {
        let r = Reader { file: path, text };
        let root = DeTable::parse(text).map_err(|e| {
            let span = e.span().unwrap_or(0..0);
            format!(
                "sweep `{}`, line {}: not valid TOML: {}",
                path.display(),
                r.line(&span),
                e.message().trim()
            )
        })?;
        let top = root.get_ref();
        for (k, _) in top.iter() {
            if !TOP.contains(&k.get_ref().as_ref()) {
                return Err(r.err(
                    &k.span(),
                    k.get_ref(),
                    format!("unknown key; a sweep file has {}", TOP.join(", ")),
                ));
            }
        }
        let whole = 0..0;
        let string = |key: &str| -> Result<(String, usize), String> {
            let v = top.get(key).ok_or_else(|| {
                r.err(
                    &whole,
                    key,
                    "missing; a sweep needs scenario, benchmark and ranks",
                )
            })?;
            match v.get_ref() {
                DeValue::String(s) => Ok((s.to_string(), r.line(&v.span()))),
                _ => Err(r.err(&v.span(), key, "expected a string in quotes")),
            }
        };
        let (scenario, _) = string("scenario")?;
        let scenario = match Path::new(&scenario).is_absolute() {
            true => PathBuf::from(scenario),
            false => path.parent().unwrap_or(Path::new("")).join(scenario),
        };
        let (benchmark, _) = string("benchmark")?;
        let (options, options_line) = match top.get("options") {
            None => (Vec::new(), 1),
            Some(v) => {
                let words = match v.get_ref() {
                    DeValue::String(s) => s.split_whitespace().map(str::to_string).collect(),
                    DeValue::Array(a) => a
                        .iter()
                        .map(|w| match w.get_ref() {
                            DeValue::String(s) => Ok(s.to_string()),
                            _ => Err(r.err(&w.span(), "options", "expected words in quotes")),
                        })
                        .collect::<Result<Vec<_>, _>>()?,
                    _ => {
                        return Err(r.err(
                            &v.span(),
                            "options",
                            "expected the benchmark's options as one string or a list of words",
                        ));
                    }
                };
                (words, r.line(&v.span()))
            }
        };
        let count = |key: &str, min: u64| -> Result<Option<u64>, String> {
            let Some(v) = top.get(key) else {
                return Ok(None);
            };
            match v.get_ref() {
                DeValue::Integer(i) => match i.as_str().parse::<u64>() {
                    Ok(n) if n >= min => Ok(Some(n)),
                    _ => Err(r.err(&v.span(), key, format!("expected a whole number ≥ {min}"))),
                },
                _ => Err(r.err(&v.span(), key, format!("expected a whole number ≥ {min}"))),
            }
        };
        let seed = count("seed", 0)?;
        let samples = count("samples", 2)?.map(|k| k as usize);

        // ranks: one number or a list.
        let ranks_v = top.get("ranks").ok_or_else(|| {
            r.err(
                &whole,
                "ranks",
                "missing; a sweep needs scenario, benchmark and ranks",
            )
        })?;
        let rank_items: Vec<_> = match ranks_v.get_ref() {
            DeValue::Array(a) => a.iter().collect(),
            _ => vec![ranks_v],
        };
        if rank_items.is_empty() {
            return Err(r.err(&ranks_v.span(), "ranks", "expected at least one rank count"));
        }
        let mut ranks = Vec::new();
        for v in rank_items {
            match v.get_ref() {
                DeValue::Integer(i) if i.as_str().parse::<u64>().is_ok_and(|n| n >= 1) => {
                    ranks.push(i.as_str().parse::<u64>().expect("checked"))
                }
                _ => {
                    return Err(r.err(
                        &v.span(),
                        "ranks",
                        "expected a rank count ≥ 1 (or a list of them)",
                    ));
                }
            }
        }

        // Alternatives: [alternatives.<key>.<name>] = table of scenario keys.
        let mut alternatives: BTreeMap<String, BTreeMap<String, (usize, Vec<String>)>> =
            BTreeMap::new();
        if let Some(a) = top.get("alternatives") {
            let DeValue::Table(groups) = a.get_ref() else {
                return Err(r.err(
                    &a.span(),
                    "alternatives",
                    "expected tables [alternatives.<key>.<name>]",
                ));
            };
            for (g, gv) in groups.iter() {
                let gname = g.get_ref().to_string();
                let DeValue::Table(names) = gv.get_ref() else {
                    return Err(r.err(
                        &gv.span(),
                        &format!("alternatives.{gname}"),
                        "expected tables [alternatives.<key>.<name>] of scenario keys",
                    ));
                };
                for (n, nv) in names.iter() {
                    let at = format!("alternatives.{gname}.{}", n.get_ref());
                    let DeValue::Table(keys) = nv.get_ref() else {
                        return Err(r.err(
                            &nv.span(),
                            &at,
                            "expected a table of scenario keys and their values",
                        ));
                    };
                    let overrides = keys
                        .iter()
                        .map(|(k, x)| {
                            format!("{}={}", k.get_ref(), inline(x.get_ref(), text, &x.span()))
                        })
                        .collect();
                    alternatives
                        .entry(gname.clone())
                        .or_default()
                        .insert(n.get_ref().to_string(), (r.line(&n.span()), overrides));
                }
            }
        }

        let mut dims = vec![Dim {
            name: "ranks".into(),
            kind: DimKind::Ranks,
            numeric: true,
        }];
        // One setting from `key = value`.
        let setting = |key: &str, v: &toml::Spanned<DeValue<'_>>| -> Result<Setting, String> {
            let span = v.span();
            let line = r.line(&span);
            let kind = dim_kind(key, &alternatives);
            match kind {
                DimKind::Alternative => {
                    let DeValue::String(name) = v.get_ref() else {
                        return Err(r.err(
                            &span,
                            key,
                            format!(
                                "expected the name of an alternative in quotes ({})",
                                names(&alternatives[key])
                            ),
                        ));
                    };
                    let Some((_, overrides)) = alternatives[key].get(name.as_ref()) else {
                        return Err(r.err(
                            &span,
                            key,
                            format!(
                                "no alternative of that name; [alternatives.{key}] has {}",
                                names(&alternatives[key])
                            ),
                        ));
                    };
                    Ok(Setting {
                        shown: name.to_string(),
                        line,
                        overrides: overrides.clone(),
                        options: Vec::new(),
                    })
                }
                DimKind::Option => {
                    let options = match v.get_ref() {
                        DeValue::Boolean(true) => vec![key.to_string()],
                        DeValue::Boolean(false) => Vec::new(),
                        DeValue::String(s) => vec![key.to_string(), s.to_string()],
                        DeValue::Integer(_) | DeValue::Float(_) => vec![key.to_string(), text[span.clone()].trim().to_string()],
                        _ => return Err(r.err(&span, key, "a benchmark option takes a word, a number, or true/false for a bare flag")),
                    };
                    Ok(Setting {
                        shown: shown(v.get_ref(), text, &span),
                        line,
                        overrides: Vec::new(),
                        options,
                    })
                }
                DimKind::Scenario | DimKind::Ranks => {
                    if let DeValue::Array(_) = v.get_ref() {
                        return Err(r.err(&span, key, "a scenario key takes one value here (a number, a string, true/false or a table)"));
                    }
                    Ok(Setting {
                        shown: shown(v.get_ref(), text, &span),
                        line,
                        overrides: vec![format!("{key}={}", inline(v.get_ref(), text, &span))],
                        options: Vec::new(),
                    })
                }
            }
        };

        let mut combos: Vec<Vec<Setting>> = vec![Vec::new()];
        match (top.get("vary"), top.get("points")) {
            (Some(v), Some(_)) => {
                return Err(r.err(
                    &v.span(),
                    "vary",
                    "give [vary] (every combination) or [[points]] (a list), not both",
                ));
            }
            (Some(v), None) => {
                let DeValue::Table(t) = v.get_ref() else {
                    return Err(r.err(
                        &v.span(),
                        "vary",
                        "expected a table [vary] of keys and their lists of values",
                    ));
                };
                // In the file's order (the parsed table is sorted by key).
                let mut entries: Vec<_> = t.iter().collect();
                entries.sort_by_key(|(k, _)| k.span().start);
                for (k, vals) in entries {
                    let key = k.get_ref().to_string();
                    check_key(&r, &k.span(), &key)?;
                    let DeValue::Array(items) = vals.get_ref() else {
                        return Err(r.err(
                            &vals.span(),
                            &key,
                            "expected a list of values, e.g. [1, 4, 8]",
                        ));
                    };
                    if items.is_empty() {
                        return Err(r.err(&vals.span(), &key, "expected at least one value"));
                    }
                    let settings = items
                        .iter()
                        .map(|x| setting(&key, x))
                        .collect::<Result<Vec<_>, _>>()?;
                    dims.push(Dim {
                        numeric: items.iter().all(|x| {
                            matches!(x.get_ref(), DeValue::Integer(_) | DeValue::Float(_))
                        }),
                        kind: dim_kind(&key, &alternatives),
                        name: key,
                    });
                    combos = combos
                        .into_iter()
                        .flat_map(|c| {
                            settings.iter().map(move |s| {
                                let mut c = c.clone();
                                c.push(s.clone());
                                c
                            })
                        })
                        .collect();
                }
            }
            (None, Some(p)) => {
                let DeValue::Array(list) = p.get_ref() else {
                    return Err(r.err(&p.span(), "points", "expected [[points]] tables"));
                };
                combos.clear();
                for (i, item) in list.iter().enumerate() {
                    let DeValue::Table(t) = item.get_ref() else {
                        return Err(r.err(&item.span(), "points", "expected [[points]] tables"));
                    };
                    let mut c = Vec::new();
                    let mut entries: Vec<_> = t.iter().collect();
                    entries.sort_by_key(|(k, _)| k.span().start);
                    for (j, (k, x)) in entries.into_iter().enumerate() {
                        let key = k.get_ref().to_string();
                        check_key(&r, &k.span(), &key)?;
                        match (i, dims.get(j + 1)) {
                            (0, _) => dims.push(Dim {
                                name: key.clone(),
                                kind: dim_kind(&key, &alternatives),
                                numeric: matches!(
                                    x.get_ref(),
                                    DeValue::Integer(_) | DeValue::Float(_)
                                ),
                            }),
                            (_, Some(d)) if d.name == key => {}
                            _ => {
                                let first: Vec<&str> =
                                    dims[1..].iter().map(|d| d.name.as_str()).collect();
                                return Err(r.err(&k.span(), &key, format!("every [[points]] entry sets the same keys in the same order as the first: {}", first.join(", "))));
                            }
                        }
                        c.push(setting(&key, x)?);
                    }
                    if c.len() + 1 != dims.len() {
                        return Err(r.err(
                            &item.span(),
                            "points",
                            "every [[points]] entry sets the same keys as the first",
                        ));
                    }
                    combos.push(c);
                }
                if combos.is_empty() {
                    return Err(r.err(&p.span(), "points", "expected at least one point"));
                }
                let numeric = |j: usize| {
                    list.iter().all(|item| match item.get_ref() {
                        DeValue::Table(t) => t.get(dims[j].name.as_str()).is_some_and(|x| {
                            matches!(x.get_ref(), DeValue::Integer(_) | DeValue::Float(_))
                        }),
                        _ => false,
                    })
                };
                let numeric: Vec<bool> = (1..dims.len()).map(numeric).collect();
                for (d, n) in dims[1..].iter_mut().zip(numeric) {
                    d.numeric = n;
                }
            }
            (None, None) => {}
        }
        let points = ranks
            .iter()
            .flat_map(|&n| combos.iter().map(move |c| (n, c.clone())))
            .enumerate()
            .map(|(index, (ranks, settings))| Point {
                index,
                ranks,
                settings,
            })
            .collect();
        Ok(Sweep {
            file: path.to_path_buf(),
            scenario_digest: file_digest(&scenario),
            scenario,
            benchmark,
            options,
            seed,
            samples,
            dims,
            points,
            options_line,
        })
    }

    /// A sweep with no points yet over `scenario` (its points made one at a
    /// time: goal-seek), varying the scenario keys `keys`; `label` names it.
    pub fn base(
        label: &Path,
        scenario: PathBuf,
        benchmark: String,
        options: Vec<String>,
        seed: Option<u64>,
        keys: &[String],
    ) -> Sweep {
        let mut dims = vec![Dim {
            name: "ranks".into(),
            kind: DimKind::Ranks,
            numeric: true,
        }];
        dims.extend(keys.iter().map(|k| Dim {
            name: k.clone(),
            kind: DimKind::Scenario,
            numeric: true,
        }));
        Sweep {
            file: label.to_path_buf(),
            scenario_digest: file_digest(&scenario),
            scenario,
            benchmark,
            options,
            seed,
            samples: None,
            dims,
            points: Vec::new(),
            options_line: 0,
        }
    }

    /// A point of a [`Sweep::base`] sweep: `ranks`, and one value (TOML text)
    /// per varied scenario key.
    pub fn point(&self, index: usize, ranks: u64, values: &[String]) -> Point {
        let settings = self.dims[1..]
            .iter()
            .zip(values)
            .map(|(d, v)| Setting {
                shown: v.trim_matches('"').to_string(),
                line: 0,
                overrides: vec![format!("{}={v}", d.name)],
                options: Vec::new(),
            })
            .collect();
        Point {
            index,
            ranks,
            settings,
        }
    }

    /// Point `p`'s values as `name=value` words, ranks first.
    pub fn describe(&self, p: &Point) -> String {
        let mut words = vec![format!("ranks={}", p.ranks)];
        for (d, s) in self.dims[1..].iter().zip(&p.settings) {
            words.push(format!("{}={}", d.name, s.shown));
        }
        words.join(" ")
    }

    /// What identifies point `p`'s result: everything that decides its run,
    /// the base scenario's content included. A stored result is reused only
    /// for the same identity.
    pub fn identity(&self, p: &Point, samples: Option<usize>) -> String {
        let overrides: Vec<&str> = p
            .settings
            .iter()
            .flat_map(|s| s.overrides.iter().map(String::as_str))
            .collect();
        format!(
            "{} {} | {} (text {:016x}) | seed {:?} | samples {:?} | {} | set {}",
            self.benchmark,
            self.options.join(" "),
            self.scenario.display(),
            self.scenario_digest,
            self.seed,
            samples,
            self.describe(p),
            overrides.join(" ")
        )
    }

    /// The common options less those point `p` varies: a varied `-t` replaces
    /// the `-t 1m` of `options` (with its value, if the point gives one).
    fn base_options(&self, p: &Point) -> Vec<String> {
        let varied: Vec<(&str, bool)> = self.dims[1..]
            .iter()
            .zip(&p.settings)
            .filter(|(d, _)| d.kind == DimKind::Option)
            .map(|(d, s)| (d.name.as_str(), s.options.len() == 2))
            .collect();
        let mut out = Vec::new();
        let mut words = self.options.iter();
        while let Some(w) = words.next() {
            match varied.iter().find(|(k, _)| k == w) {
                Some((_, true)) => {
                    words.next();
                }
                Some((_, false)) => {}
                None => out.push(w.clone()),
            }
        }
        out
    }

    /// Point `p`'s `--set` overrides.
    pub fn overrides(&self, p: &Point) -> Vec<String> {
        p.settings
            .iter()
            .flat_map(|s| s.overrides.iter().cloned())
            .collect()
    }

    /// Point `p` as `piotwin run`'s benchmark, parsed and (with its scenario) ready to run.
    pub fn bench(&self, p: &Point, samples: Option<usize>) -> Result<Bench, String> {
        let mut options = self.base_options(p);
        options.extend(p.settings.iter().flat_map(|s| s.options.iter().cloned()));
        TwinRun {
            benchmark: &self.benchmark,
            options,
            scenario: &self.scenario,
            ranks: p.ranks,
            seed: self.seed,
            samples,
            overrides: self.overrides(p),
        }
        .bench()
    }

    /// Checks every point as its run will see it: the scenario with the point's
    /// overrides, the benchmark's options. The first error names the sweep file,
    /// the line, the point, the key and the value; nothing has run.
    pub fn check(&self, samples: Option<usize>) -> Result<(), String> {
        if !self.scenario.is_file() {
            return Err(format!(
                "sweep `{}`: scenario `{}`: no such file (relative paths are taken from the sweep file's directory)",
                self.file.display(),
                self.scenario.display()
            ));
        }
        let total = self.points.len();
        for p in &self.points {
            let at = |line: usize, what: &str, message: &str| {
                format!(
                    "sweep `{}`, line {line}: point {} of {total} ({}): {what}: {message}",
                    self.file.display(),
                    p.index + 1,
                    self.describe(p)
                )
            };
            if let Err(e) = Scenario::load_with(&self.scenario, &self.overrides(p)) {
                let culprit = e.file.strip_prefix("--set ").and_then(|o| {
                    self.dims[1..]
                        .iter()
                        .zip(&p.settings)
                        .find(|(_, s)| s.overrides.iter().any(|x| x == o))
                });
                let message = match (&e.key, &e.value) {
                    (Some(k), Some(v)) => format!("{k} = {v}: {}", e.message),
                    (Some(k), None) => format!("{k}: {}", e.message),
                    _ => e.message.clone(),
                };
                return Err(match culprit {
                    Some((d, s)) if e.key.as_deref() == Some(d.name.as_str()) => {
                        at(s.line, &format!("{} = {}", d.name, s.shown), &e.message)
                    }
                    Some((d, s)) => at(s.line, &format!("{} = {}", d.name, s.shown), &message),
                    None => format!(
                        "sweep `{}`: point {} of {total} ({}): scenario: {e}",
                        self.file.display(),
                        p.index + 1,
                        self.describe(p)
                    ),
                });
            }
            let varied: Vec<(&Dim, &Setting)> = self.dims[1..]
                .iter()
                .zip(&p.settings)
                .filter(|(d, _)| d.kind == DimKind::Option)
                .collect();
            let checked = self
                .bench(p, samples)
                .and_then(|b| b.check().map_err(|e| e.message().unwrap_or("").to_string()));
            if let Err(message) = checked {
                let mut words: Vec<String> = self.base_options(p);
                words.extend(varied.iter().flat_map(|(_, s)| s.options.iter().cloned()));
                let line = varied.last().map_or(self.options_line, |(_, s)| s.line);
                return Err(at(
                    line,
                    &format!("options `{}`", words.join(" ")),
                    &message,
                ));
            }
        }
        Ok(())
    }
}

fn dim_kind(
    key: &str,
    alternatives: &BTreeMap<String, BTreeMap<String, (usize, Vec<String>)>>,
) -> DimKind {
    if alternatives.contains_key(key) {
        DimKind::Alternative
    } else if key.starts_with('-') {
        DimKind::Option
    } else if key == "ranks" {
        DimKind::Ranks
    } else {
        DimKind::Scenario
    }
}

fn check_key(r: &Reader<'_>, span: &std::ops::Range<usize>, key: &str) -> Result<(), String> {
    match key {
        "ranks" => Err(r.err(
            span,
            key,
            "the rank counts are the top-level `ranks = [...]`",
        )),
        "--sim" | "--ranks" | "--set" | "--json" | "--csv" | "--seed" | "--samples"
        | "--dry-run" => Err(r.err(
            span,
            key,
            "set by the sweep itself (scenario, ranks, [vary] scenario keys, seed, samples)",
        )),
        _ => Ok(()),
    }
}

fn names(group: &BTreeMap<String, (usize, Vec<String>)>) -> String {
    group
        .keys()
        .map(String::as_str)
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stored_result_belongs_to_the_scenario_text_not_only_its_path() {
        let dir = tempfile::tempdir().unwrap();
        let scenario = dir.path().join("s.toml");
        let base = concat!(env!("CARGO_MANIFEST_DIR"), "/scenarios/lustre-hdd.toml");
        std::fs::copy(base, &scenario).unwrap();
        let text = "scenario = \"s.toml\"\nbenchmark = \"ior\"\nranks = 4\n[vary]\n\"server.count\" = [2, 4]\n";
        let file = dir.path().join("sweep.toml");
        let identity = || {
            let s = Sweep::from_str(text, &file).unwrap();
            (
                s.identity(&s.points[0], None),
                s.identity(&s.points[1], None),
            )
        };
        let before = identity();
        assert_ne!(before.0, before.1, "two points, two identities");
        assert_eq!(identity(), before, "the same sweep, the same identities");
        let mut changed = std::fs::read_to_string(&scenario).unwrap();
        changed.push_str("\n# an edit\n");
        std::fs::write(&scenario, changed).unwrap();
        assert_ne!(identity().0, before.0, "an edited scenario runs again");
    }
}
