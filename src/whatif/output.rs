//! A sweep's results as files: `sweep.csv` (one row per point: parameters,
//! headline metrics, their intervals when sampled), `sweep.json` (every metric
//! of every point), `plots/<metric>--<key>.svg|png` (each headline metric over
//! each varied key, one line per setting of the other keys) and `index.html`
//! (all of it on one page). Every file is written atomically.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use super::runner::Outcome;
use super::sweep::Sweep;
use crate::report::html::{STYLE, escape};
use crate::report::plot::{Figure, PALETTE_COLOURS, Panel, Series};
use crate::report::{unit_group, write_atomic};

/// What a sweep produced so far: its points' outcomes in point order.
pub struct Results<'a> {
    /// The sweep.
    pub sweep: &'a Sweep,
    /// Finished points, by point index.
    pub outcomes: Vec<&'a Outcome>,
    /// Points of the sweep not (yet) run.
    pub missing: usize,
}

impl Results<'_> {
    /// The headline metrics over all outcomes, first-seen order.
    pub fn headline(&self) -> Vec<String> {
        let mut names: Vec<String> = Vec::new();
        for o in &self.outcomes {
            for h in &o.headline {
                if !names.contains(h) {
                    names.push(h.clone());
                }
            }
        }
        names
    }

    fn sampled(&self) -> bool {
        self.outcomes.iter().any(|o| !o.intervals.is_empty())
    }

    /// The table as CSV.
    pub fn csv(&self) -> String {
        let mut w = csv::Writer::from_writer(Vec::new());
        let headline = self.headline();
        let mut header = vec!["point".to_string()];
        header.extend(self.sweep.dims.iter().map(|d| d.name.clone()));
        for m in &headline {
            header.push(m.clone());
            if self.sampled() {
                header.extend([
                    format!("{m}.median"),
                    format!("{m}.low"),
                    format!("{m}.high"),
                ]);
            }
        }
        header.push("failure".into());
        w.write_record(&header).expect("in-memory CSV");
        for o in &self.outcomes {
            let mut row = vec![(o.index + 1).to_string()];
            row.extend(o.params.iter().map(|(_, v)| v.clone()));
            for m in &headline {
                row.push(o.metrics.get(m).map(f64::to_string).unwrap_or_default());
                if self.sampled() {
                    let i = o.intervals.get(m);
                    row.extend([
                        i.map(|i| i.median.to_string()).unwrap_or_default(),
                        i.map(|i| i.low.to_string()).unwrap_or_default(),
                        i.map(|i| i.high.to_string()).unwrap_or_default(),
                    ]);
                }
            }
            row.push(o.failure.clone().unwrap_or_default());
            w.write_record(&row).expect("in-memory CSV");
        }
        String::from_utf8(w.into_inner().expect("in-memory CSV")).expect("UTF-8")
    }

    /// Everything as JSON: the sweep's facts and every point's outcome.
    pub fn json(&self) -> String {
        let s = self.sweep;
        let v = serde_json::json!({
            "sweep": s.file.display().to_string(),
            "scenario": s.scenario.display().to_string(),
            "benchmark": s.benchmark,
            "options": s.options.join(" "),
            "seed": s.seed,
            "varied": s.dims.iter().map(|d| d.name.clone()).collect::<Vec<_>>(),
            "points_total": s.points.len(),
            "points_missing": self.missing,
            "headline": self.headline(),
            "points": self.outcomes,
        });
        serde_json::to_string_pretty(&v).expect("JSON") + "\n"
    }

    /// The figures: each headline metric over each key that takes more than one
    /// value, one line per setting of the other keys. Where that would be more
    /// lines than the palette has colours, one panel per value of another
    /// varied key (the first), its lines the settings of the rest.
    pub fn figures(&self) -> Vec<(String, Figure)> {
        let mut out = Vec::new();
        for m in self.headline() {
            for (j, d) in self.sweep.dims.iter().enumerate() {
                let xs = self.values(j);
                if xs.len() < 2 {
                    continue;
                }
                let others: Vec<usize> = (0..self.sweep.dims.len())
                    .filter(|&k| k != j && self.varies(k))
                    .collect();
                let lines: usize = others.iter().map(|&k| self.values(k).len()).product();
                let panels = match others.first() {
                    Some(&k) if lines > PALETTE_COLOURS && others.len() > 1 => self
                        .values(k)
                        .into_iter()
                        .map(|v| self.panel(&m, j, &xs, Some((k, v))))
                        .collect(),
                    _ => vec![self.panel(&m, j, &xs, None)],
                };
                let stem = format!("{}--{}", m, file_safe(&d.name));
                let wide = panels.len() > 1;
                out.push((
                    stem,
                    Figure {
                        title: format!(
                            "{}: {} over {} ({})",
                            self.sweep.benchmark,
                            m,
                            d.name,
                            self.sweep.file.display()
                        ),
                        panels,
                        panel_size: if wide { (640, 520) } else { (900, 560) },
                    },
                ));
            }
        }
        out
    }

    /// The values key `k` takes over the outcomes, in the order they come.
    fn values(&self, k: usize) -> Vec<&str> {
        let mut xs: Vec<&str> = Vec::new();
        for o in &self.outcomes {
            if !xs.contains(&o.params[k].1.as_str()) {
                xs.push(&o.params[k].1);
            }
        }
        xs
    }

    /// Metric `m` over key `j` (taking values `xs`), for the outcomes where key
    /// `only.0` has value `only.1` (all, with `None`): one line per setting of
    /// the other varied keys, with the 95 % bounds where sampled.
    fn panel(&self, m: &str, j: usize, xs: &[&str], only: Option<(usize, &str)>) -> Panel {
        let d = &self.sweep.dims[j];
        let x_of = |v: &str| -> f64 {
            match d.numeric {
                true => v.parse().unwrap_or(0.0),
                false => xs.iter().position(|x| *x == v).unwrap_or(0) as f64,
            }
        };
        // In the order the points come (the sweep's), not by name.
        let mut series: Vec<(String, Vec<(f64, f64)>)> = Vec::new();
        let mut bounds: BTreeMap<String, [Vec<(f64, f64)>; 2]> = BTreeMap::new();
        let chosen = |o: &&&Outcome| only.is_none_or(|(k, v)| o.params[k].1 == v);
        for o in self.outcomes.iter().filter(chosen) {
            let Some(&y) = o.metrics.get(m) else {
                continue;
            };
            let name: Vec<String> = o
                .params
                .iter()
                .enumerate()
                .filter(|(k, _)| *k != j && only.is_none_or(|(p, _)| p != *k))
                .filter(|(k, _)| self.varies(*k))
                .map(|(_, (n, v))| format!("{n}={v}"))
                .collect();
            let name = match name.is_empty() {
                true => m.to_string(),
                false => name.join(" "),
            };
            let x = x_of(&o.params[j].1);
            match series.iter_mut().find(|(n, _)| *n == name) {
                Some((_, points)) => points.push((x, y)),
                None => series.push((name.clone(), vec![(x, y)])),
            }
            if let Some(i) = o.intervals.get(m) {
                let b = bounds.entry(name).or_default();
                b[0].push((x, i.low));
                b[1].push((x, i.high));
            }
        }
        let mut lines: Vec<Series> = Vec::new();
        for (name, mut points) in series {
            points.sort_by(|a, b| a.0.total_cmp(&b.0));
            if let Some([mut lo, mut hi]) = bounds.remove(&name) {
                lo.sort_by(|a, b| a.0.total_cmp(&b.0));
                hi.sort_by(|a, b| a.0.total_cmp(&b.0));
                lines.push(Series {
                    name: format!("{name} (95 % low)"),
                    points: lo,
                });
                lines.push(Series {
                    name: format!("{name} (95 % high)"),
                    points: hi,
                });
            }
            lines.push(Series { name, points });
        }
        let (lo, hi) = match d.numeric {
            true => xs
                .iter()
                .map(|v| x_of(v))
                .fold((f64::MAX, f64::MIN), |(a, b), x| (a.min(x), b.max(x))),
            false => (-0.5, xs.len() as f64 - 0.5),
        };
        let pad = if d.numeric { (hi - lo) * 0.05 } else { 0.0 };
        let ys: Vec<f64> = lines
            .iter()
            .flat_map(|s| s.points.iter().map(|p| p.1))
            .filter(|y| *y > 0.0)
            .collect();
        let (ymin, ymax) = ys
            .iter()
            .fold((f64::MAX, 0.0f64), |(a, b), y| (a.min(*y), b.max(*y)));
        Panel {
            title: match only {
                Some((k, v)) => format!("{}={v}", self.sweep.dims[k].name),
                None => format!("{m} over {}", d.name),
            },
            x_label: format!(
                "{} [{}]",
                d.name,
                if d.numeric { "value" } else { "alternative" }
            ),
            y_label: unit_group(m)
                .map_or_else(|| format!("{m} [value]"), |(_, l)| format!("{m}: {l}")),
            x_range: (lo - pad, hi + pad),
            x_ticks: match d.numeric {
                true => xs.iter().map(|v| (x_of(v), v.to_string())).collect(),
                false => xs
                    .iter()
                    .enumerate()
                    .map(|(i, v)| (i as f64, v.to_string()))
                    .collect(),
            },
            log_y: !ys.is_empty() && ymax / ymin > 20.0,
            series: lines,
        }
    }

    fn varies(&self, k: usize) -> bool {
        let first = self.outcomes.first().map(|o| &o.params[k].1);
        self.outcomes.iter().any(|o| Some(&o.params[k].1) != first)
    }

    /// Writes `sweep.csv`, `sweep.json`, the plots and `index.html` into `dir`;
    /// returns the page's path.
    pub fn write(&self, dir: &Path) -> Result<PathBuf, String> {
        let put = |name: &str, text: &str| {
            let p = dir.join(name);
            write_atomic(&p, text.as_bytes())
                .map_err(|e| format!("cannot write `{}`: {e}", p.display()))
        };
        put("sweep.csv", &self.csv())?;
        put("sweep.json", &self.json())?;
        let plots = dir.join("plots");
        std::fs::create_dir_all(&plots)
            .map_err(|e| format!("cannot create `{}`: {e}", plots.display()))?;
        let mut images = Vec::new();
        for (stem, fig) in self.figures() {
            fig.write_svg(&plots.join(format!("{stem}.svg")))
                .map_err(|e| e.to_string())?;
            fig.write_png(&plots.join(format!("{stem}.png")))
                .map_err(|e| e.to_string())?;
            images.push(format!("plots/{stem}.svg"));
        }
        put("index.html", &self.html(&images))?;
        Ok(dir.join("index.html"))
    }

    fn html(&self, images: &[String]) -> String {
        let s = self.sweep;
        let title = escape(&format!("sweep {} ({})", s.file.display(), s.benchmark));
        let mut h = format!(
            "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>{title}</title>\n<style>\n{STYLE}\n</style>\n</head>\n<body>\n<h1>{title}</h1>\n<table class=\"facts\">\n"
        );
        let facts = [
            ("scenario", s.scenario.display().to_string()),
            (
                "benchmark",
                format!("{} {}", s.benchmark, s.options.join(" ")),
            ),
            (
                "varied",
                s.dims
                    .iter()
                    .map(|d| d.name.as_str())
                    .collect::<Vec<_>>()
                    .join(", "),
            ),
            (
                "points",
                format!("{} finished of {}", self.outcomes.len(), s.points.len()),
            ),
            (
                "seed",
                s.seed.map_or("the scenario's".into(), |x| x.to_string()),
            ),
        ];
        for (k, v) in facts {
            let _ = writeln!(h, "<tr><th>{}</th><td>{}</td></tr>", escape(k), escape(&v));
        }
        h.push_str("</table>\n");
        if self.missing > 0 {
            let _ = writeln!(
                h,
                "<p class=\"failed\">{} point(s) not run (the sweep was stopped): run the same command again to resume.</p>",
                self.missing
            );
        }
        let headline = self.headline();
        h.push_str("<table class=\"metrics\">\n<tr><th>point</th>");
        for d in &s.dims {
            let _ = write!(h, "<th>{}</th>", escape(&d.name));
        }
        for m in &headline {
            let _ = write!(h, "<th>{}</th>", escape(m));
        }
        h.push_str("<th>failure</th></tr>\n");
        for o in &self.outcomes {
            let _ = write!(h, "<tr><td>{}</td>", o.index + 1);
            for (_, v) in &o.params {
                let _ = write!(h, "<td>{}</td>", escape(v));
            }
            for m in &headline {
                let v = o.metrics.get(m).map_or("-".into(), |v| format!("{v:.6}"));
                let i = o
                    .intervals
                    .get(m)
                    .map_or(String::new(), |i| format!(" [{:.6}, {:.6}]", i.low, i.high));
                let _ = write!(h, "<td>{}{}</td>", v, i);
            }
            let _ = writeln!(
                h,
                "<td>{}</td></tr>",
                escape(o.failure.as_deref().unwrap_or(""))
            );
        }
        h.push_str("</table>\n");
        for img in images {
            let _ = writeln!(
                h,
                "<figure><a href=\"{0}\"><img src=\"{0}\" style=\"max-width:100%\" alt=\"{0}\"></a></figure>",
                escape(img)
            );
        }
        h.push_str("</body>\n</html>\n");
        h
    }
}

/// `name` with every character but letters, digits, `.`, `_` and `-` replaced by `_`.
fn file_safe(name: &str) -> String {
    name.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-') {
                c
            } else {
                '_'
            }
        })
        .collect()
}
