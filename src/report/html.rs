//! The HTML page of `piotwin compare`: one self-contained file with the table of
//! predicted against measured metrics, the summary, and the figures of both runs
//! side by side (measured left, predicted right), referenced as relative image
//! files in the comparison's directory.
//!
//! What it is for: reading one comparison in a browser. What it is not: a
//! templating engine — the page is built from the [`Comparison`] and a few facts,
//! with every text HTML-escaped.

use std::fmt::Write;

use super::compare::{Comparison, Kind, Summary, format_value};

/// One row of figures: the same figure of the measured and of the predicted run.
#[derive(Debug, Clone, PartialEq)]
pub struct FigureRow {
    /// Caption over the row.
    pub caption: String,
    /// Image of the measured run (a path relative to the page), if it exists.
    pub measured: Option<String>,
    /// Image of the predicted run (a path relative to the page), if it exists.
    pub predicted: Option<String>,
}

/// Everything on the page.
#[derive(Debug, Clone)]
pub struct Page<'a> {
    /// Title (`<title>` and heading).
    pub title: String,
    /// `(name, value)` facts listed under the title: scenario, ranks, options, …
    pub facts: Vec<(String, String)>,
    /// Which side failed and why (shown prominently); empty on success.
    pub failures: Vec<String>,
    /// The metrics of both runs.
    pub comparison: &'a Comparison,
    /// `(caption, image)`: charts with measured and predicted in one.
    pub charts: Vec<(String, String)>,
    /// Figures, measured left and predicted right.
    pub figures: Vec<FigureRow>,
    /// `(caption, text)` blocks shown preformatted at the end (the benchmarks' own output).
    pub texts: Vec<(String, String)>,
}

/// `text` with `& < > " '` escaped for HTML text and attribute values.
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// The pages' style sheet (compare's and the sweep's).
pub const STYLE: &str = "body{font-family:sans-serif;margin:1.5em;color:#222}
table{border-collapse:collapse;margin:0.5em 0}
td,th{padding:2px 10px;border-bottom:1px solid #ddd;text-align:right}
td:first-child,th:first-child{text-align:left;font-family:monospace}
tr.section td{background:#f0f0f0;font-weight:bold;font-family:sans-serif}
.over{color:#b00}.under{color:#05a}
.failed{background:#fee;border:1px solid #c00;padding:0.5em}
.pair{display:grid;grid-template-columns:1fr 1fr;gap:1em;align-items:start}
.pair img{width:100%;border:1px solid #ccc}
pre{background:#f8f8f8;padding:0.5em;overflow-x:auto;font-size:12px}";

fn summary_text(s: &Summary) -> String {
    escape(&s.line())
}

/// The page as HTML5.
pub fn render(page: &Page) -> String {
    let mut h = String::new();
    let title = escape(&page.title);
    // Writing into a String cannot fail.
    let _ = write!(
        h,
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>{title}</title>\n<style>\n{STYLE}\n</style>\n</head>\n<body>\n<h1>{title}</h1>\n"
    );
    h.push_str("<table class=\"facts\">\n");
    for (k, v) in &page.facts {
        let _ = writeln!(h, "<tr><th>{}</th><td>{}</td></tr>", escape(k), escape(v));
    }
    h.push_str("</table>\n");
    for f in &page.failures {
        let _ = writeln!(h, "<p class=\"failed\">{}</p>", escape(f));
    }
    let c = page.comparison;
    let _ = writeln!(
        h,
        "<h2>Predicted against measured</h2>\n<p>Error = 100 &middot; (predicted &minus; measured) / |measured| %.<br>\nHeadline: {}<br>\nAll compared: {}</p>",
        summary_text(&c.headline),
        summary_text(&c.all)
    );
    h.push_str(
        "<table class=\"metrics\">\n<tr><th>metric</th><th>predicted</th><th>measured</th><th>error %</th></tr>\n",
    );
    let mut section = None;
    for r in &c.rows {
        if section != Some(r.kind) {
            section = Some(r.kind);
            let name = match r.kind {
                Kind::Headline => "headline",
                Kind::Detail => "detail",
                Kind::Info => "not summarised (counts, flags, dispersion)",
            };
            let _ = writeln!(
                h,
                "<tr class=\"section\"><td colspan=\"4\">{name}</td></tr>"
            );
        }
        let (class, err) = match r.pair.error_pct {
            Some(e) if e > 0.0 => ("over", format!("{e:+.1}")),
            Some(e) if e < 0.0 => ("under", format!("{e:+.1}")),
            Some(e) => ("", format!("{e:+.1}")),
            None => ("", "-".to_string()),
        };
        let _ = writeln!(
            h,
            "<tr><td>{}</td><td>{}</td><td>{}</td><td class=\"{class}\">{err}</td></tr>",
            escape(&r.pair.name),
            format_value(r.pair.predicted),
            format_value(r.pair.measured),
        );
    }
    h.push_str("</table>\n");
    if !page.charts.is_empty() {
        h.push_str("<h2>Measured and predicted</h2>\n");
    }
    for (caption, src) in &page.charts {
        let _ = writeln!(
            h,
            "<figure><figcaption>{}</figcaption><a href=\"{1}\"><img src=\"{1}\" style=\"max-width:100%\" alt=\"{0}\"></a></figure>",
            escape(caption),
            escape(src)
        );
    }
    if !page.figures.is_empty() {
        h.push_str("<h2>Figures: measured (left), predicted (right)</h2>\n");
    }
    for f in &page.figures {
        let _ = writeln!(h, "<h3>{}</h3>\n<div class=\"pair\">", escape(&f.caption));
        for (side, img) in [("measured", &f.measured), ("predicted", &f.predicted)] {
            match img {
                Some(src) => {
                    let _ = writeln!(
                        h,
                        "<figure><figcaption>{side}</figcaption><a href=\"{0}\"><img src=\"{0}\" alt=\"{side}: {1}\"></a></figure>",
                        escape(src),
                        escape(&f.caption)
                    );
                }
                None => {
                    let _ = writeln!(
                        h,
                        "<figure><figcaption>{side}</figcaption><p>(no figure: this run did not produce it)</p></figure>"
                    );
                }
            }
        }
        h.push_str("</div>\n");
    }
    for (caption, text) in &page.texts {
        let _ = writeln!(
            h,
            "<h2>{}</h2>\n<pre>{}</pre>",
            escape(caption),
            escape(text)
        );
    }
    h.push_str("</body>\n</html>\n");
    h
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::{Mode, RunReport};
    use std::collections::BTreeMap;

    fn report(mode: Mode, metrics: &[(&str, f64)]) -> RunReport {
        let metrics: BTreeMap<String, f64> =
            metrics.iter().map(|(k, v)| (k.to_string(), *v)).collect();
        RunReport {
            interrupted: None,
            intervals: Default::default(),
            bands: Default::default(),
            benchmark: "ior".into(),
            mode,
            ranks: 2,
            params: serde_json::Value::Null,
            environment: Default::default(),
            hints: Default::default(),
            headline: crate::report::headline_among(&metrics, crate::bench::ior::HEADLINE),
            metrics,
            tables: Default::default(),
            errors: vec![],
        }
    }

    #[test]
    fn escapes_markup() {
        assert_eq!(
            escape(r#"<a href="x">&'"#),
            "&lt;a href=&quot;x&quot;&gt;&amp;&#39;"
        );
    }

    #[test]
    fn page_has_the_table_the_summary_and_figures_measured_left() {
        let m = report(Mode::Real, &[("write_mib_s", 100.0)]);
        let p = report(Mode::Sim, &[("write_mib_s", 125.0)]);
        let c = Comparison::new("ior", Some(&m), Some(&p)).unwrap();
        let page = Page {
            title: "ior <2 ranks>".into(),
            facts: vec![("options".into(), "-b 1m".into())],
            failures: vec!["the real run failed: boom".into()],
            comparison: &c,
            charts: vec![(
                "bandwidth [MiB/s]: measured and predicted".into(),
                "plots/both.svg".into(),
            )],
            figures: vec![FigureRow {
                caption: "bandwidth".into(),
                measured: Some("plots/m.svg".into()),
                predicted: None,
            }],
            texts: vec![("out".into(), "a < b".into())],
        };
        let h = render(&page);
        assert!(h.starts_with("<!DOCTYPE html>") && h.trim_end().ends_with("</html>"));
        assert!(h.contains("<title>ior &lt;2 ranks&gt;</title>"));
        assert!(h.contains("<tr><td>write_mib_s</td><td>125.00</td><td>100.00</td><td class=\"over\">+25.0</td></tr>"), "{h}");
        assert!(h.contains("median |error| 25.0 %"));
        assert!(h.contains("class=\"failed\">the real run failed: boom"));
        let left = h.find("<img src=\"plots/m.svg\"").unwrap();
        let right = h.find("this run did not produce it").unwrap();
        assert!(left < right, "measured left, predicted right");
        assert!(h.contains("<pre>a &lt; b</pre>"));
        let both = h.find("<img src=\"plots/both.svg\"").unwrap();
        assert!(
            both < left,
            "the chart with both sides comes before the paired figures"
        );
    }
}
