//! Line plots for reports: a figure of panels side by side, each a set of named
//! series over a shared x axis, optionally with a logarithmic y axis, written as PNG
//! and SVG with an embedded font (DejaVu Sans), so no system fonts are needed.
//!
//! What it is for: the benchmarks' figures in the originals' styles (b_eff_io's
//! "bandwidth over chunk size, one line per pattern type, one panel per access
//! method"), and [`BarChart`]s of a run's metrics of one unit for `piotwin compare`
//! (measured and predicted drawn on the same scale). What it is not: a general
//! plotting library — no legends placement options, no styling beyond a fixed
//! palette.
//!
//! Files are written atomically (temporary file in the same directory, then
//! rename), like every report output.

use std::path::{Path, PathBuf};
use std::sync::Once;

use plotters::prelude::*;
use plotters::style::FontStyle;

/// An error while drawing or writing a figure: names the file.
#[derive(Debug, thiserror::Error)]
#[error("plot `{path}`: {message}")]
pub struct PlotError {
    /// The file being written.
    pub path: PathBuf,
    /// What went wrong.
    pub message: String,
}

/// One named line of `(x, y)` points, drawn with markers at the points.
#[derive(Debug, Clone, PartialEq)]
pub struct Series {
    /// Legend text.
    pub name: String,
    /// Points in drawing order. On a log axis, points with `y <= 0` are left out.
    pub points: Vec<(f64, f64)>,
}

/// One chart: axes, labels and series.
#[derive(Debug, Clone, PartialEq)]
pub struct Panel {
    /// Caption above the chart.
    pub title: String,
    /// Text under the x axis.
    pub x_label: String,
    /// Text beside the y axis.
    pub y_label: String,
    /// The x range drawn.
    pub x_range: (f64, f64),
    /// Labelled x positions; with a non-empty list, integer x positions not listed
    /// carry no label (gnuplot's `set xtics ("1k" 1, …)`).
    pub x_ticks: Vec<(f64, String)>,
    /// Logarithmic y axis (base 10).
    pub log_y: bool,
    /// The lines.
    pub series: Vec<Series>,
}

/// Panels side by side under one title.
#[derive(Debug, Clone, PartialEq)]
pub struct Figure {
    /// Title over the whole figure.
    pub title: String,
    /// The panels, left to right.
    pub panels: Vec<Panel>,
    /// Size of one panel in pixels (width, height).
    pub panel_size: (u32, u32),
}

const TITLE_HEIGHT: u32 = 40;
/// How many lines a panel tells apart by colour.
pub const PALETTE_COLOURS: usize = 6;
const PALETTE: [RGBColor; PALETTE_COLOURS] = [
    RGBColor(0xd6, 0x27, 0x28),
    RGBColor(0x1f, 0x77, 0xb4),
    RGBColor(0x2c, 0xa0, 0x2c),
    RGBColor(0x94, 0x67, 0xbd),
    RGBColor(0xff, 0x7f, 0x0e),
    RGBColor(0x8c, 0x56, 0x4b),
];

fn register_font() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        // The embedded DejaVu Sans always parses; a failure here is a broken build.
        plotters::style::register_font("sans-serif", FontStyle::Normal, dejavu::sans::regular())
            .unwrap_or_else(|_| panic!("the embedded DejaVu Sans font does not parse"));
    });
}

impl Figure {
    /// Total size in pixels.
    pub fn size(&self) -> (u32, u32) {
        let n = self.panels.len().max(1) as u32;
        (self.panel_size.0 * n, self.panel_size.1 + TITLE_HEIGHT)
    }

    /// Writes the figure as SVG to `path`, atomically.
    pub fn write_svg(&self, path: &Path) -> Result<(), PlotError> {
        let mut svg = String::new();
        {
            let root = SVGBackend::with_string(&mut svg, self.size()).into_drawing_area();
            self.draw(&root).map_err(|m| err(path, m))?;
            root.present().map_err(|e| err(path, e.to_string()))?;
        }
        crate::report::write_atomic(path, svg.as_bytes()).map_err(|e| err(path, e.to_string()))
    }

    /// Writes the figure as PNG to `path`, atomically (drawn into a temporary `.png`
    /// beside it, then renamed).
    pub fn write_png(&self, path: &Path) -> Result<(), PlotError> {
        let dir = match path.parent() {
            Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
            _ => PathBuf::from("."),
        };
        let stem = path
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default();
        let tmp = dir.join(format!(".{}.tmp-{}.png", stem, std::process::id()));
        let result = (|| {
            {
                let root = BitMapBackend::new(&tmp, self.size()).into_drawing_area();
                self.draw(&root)?;
                root.present().map_err(|e| e.to_string())?;
            }
            std::fs::rename(&tmp, path).map_err(|e| e.to_string())
        })();
        if result.is_err() {
            let _ = std::fs::remove_file(&tmp);
        }
        result.map_err(|m| err(path, m))
    }

    fn draw<DB: DrawingBackend>(
        &self,
        root: &DrawingArea<DB, plotters::coord::Shift>,
    ) -> Result<(), String> {
        register_font();
        let e = |x: DrawingAreaErrorKind<DB::ErrorType>| x.to_string();
        root.fill(&WHITE).map_err(e)?;
        let (body_title, body) = root.split_vertically(TITLE_HEIGHT);
        body_title
            .titled(&self.title, ("sans-serif", 20))
            .map_err(e)?;
        let areas = body.split_evenly((1, self.panels.len().max(1)));
        for (panel, area) in self.panels.iter().zip(areas.iter()) {
            draw_panel(panel, area)?;
        }
        Ok(())
    }
}

/// Checks that an SVG drawn by [`Figure::write_svg`] for `figure` can be read:
/// every panel carries at least three numeric values on its y axis and two
/// labels on its x axis, and both axis descriptions, each with a unit in
/// brackets (`bandwidth [MB/s]`). The error names the panel and what is missing.
pub fn check_readable_axes(svg: &str, figure: &Figure) -> Result<(), String> {
    let texts = svg_texts(svg);
    let (w, h) = (figure.panel_size.0 as f64, figure.panel_size.1 as f64);
    for (i, panel) in figure.panels.iter().enumerate() {
        let (left, top) = (i as f64 * w, TITLE_HEIGHT as f64);
        let inside = |t: &&SvgText| t.x >= left && t.x < left + w && t.y >= top && t.y < top + h;
        let here: Vec<&SvgText> = texts.iter().filter(inside).collect();
        // The y tick labels sit in the label area left of the plot (60 px + margin),
        // the x tick labels in the band under it (40 px + margin).
        let y_values = here
            .iter()
            .filter(|t| t.x < left + 75.0 && t.y < top + h - 50.0)
            .filter(|t| t.text.parse::<f64>().is_ok())
            .count();
        let x_labels = here
            .iter()
            .filter(|t| t.y >= top + h - 50.0 && t.text != panel.x_label && !t.text.is_empty())
            .count();
        let name = &panel.title;
        if y_values < 3 {
            return Err(format!(
                "panel `{name}`: {y_values} numeric y-axis values (at least 3 wanted)"
            ));
        }
        if x_labels < 2 {
            return Err(format!(
                "panel `{name}`: {x_labels} x-axis labels (at least 2 wanted)"
            ));
        }
        for (axis, label) in [("x", &panel.x_label), ("y", &panel.y_label)] {
            if !(label.contains('[') && label.ends_with(']')) {
                return Err(format!(
                    "panel `{name}`: the {axis} axis `{label}` names no unit in brackets"
                ));
            }
            if !here.iter().any(|t| &t.text == label) {
                return Err(format!(
                    "panel `{name}`: the {axis} axis description `{label}` is not drawn"
                ));
            }
        }
    }
    Ok(())
}

/// A `<text>` element of an SVG: its anchor position and content.
struct SvgText {
    x: f64,
    y: f64,
    text: String,
}

/// The `<text>` elements of an SVG as plotters writes them (`<text x=".." y=".." …>content</text>`).
fn svg_texts(svg: &str) -> Vec<SvgText> {
    let attr = |tag: &str, name: &str| -> Option<f64> {
        let at = tag.find(&format!(" {name}=\""))? + name.len() + 3;
        tag[at..].split('"').next()?.parse().ok()
    };
    svg.split("<text")
        .skip(1)
        .filter_map(|rest| {
            let (tag, body) = rest.split_once('>')?;
            let text = body.split("</text>").next()?.trim();
            let text = text
                .replace("&lt;", "<")
                .replace("&gt;", ">")
                .replace("&quot;", "\"")
                .replace("&apos;", "'")
                .replace("&amp;", "&");
            Some(SvgText {
                x: attr(tag, "x")?,
                y: attr(tag, "y")?,
                text,
            })
        })
        .collect()
}

/// Horizontal bars, one per named value, over a linear axis from 0 to
/// `value_max` (give two charts the same `value_max` to compare them by eye).
#[derive(Debug, Clone, PartialEq)]
pub struct BarChart {
    /// Caption above the chart.
    pub title: String,
    /// Text under the value axis, with the unit (`bandwidth [MiB/s]`).
    pub value_label: String,
    /// `(label, value)`, drawn top to bottom; non-finite or negative values are drawn as 0.
    pub bars: Vec<(String, f64)>,
    /// Right end of the value axis (at least the largest value, or 1 where all are 0).
    pub value_max: f64,
    /// Per bar, a range drawn across it as a black line with end marks (a
    /// predicted interval, the spread of measured repetitions); empty or `None`: none.
    pub whiskers: Vec<Option<(f64, f64)>>,
    /// Size in pixels (width, height).
    pub size: (u32, u32),
}

impl BarChart {
    /// Writes the chart as SVG to `path`, atomically.
    pub fn write_svg(&self, path: &Path) -> Result<(), PlotError> {
        let mut svg = String::new();
        {
            let root = SVGBackend::with_string(&mut svg, self.size).into_drawing_area();
            self.draw(&root).map_err(|m| err(path, m))?;
            root.present().map_err(|e| err(path, e.to_string()))?;
        }
        crate::report::write_atomic(path, svg.as_bytes()).map_err(|e| err(path, e.to_string()))
    }

    fn draw<DB: DrawingBackend>(
        &self,
        root: &DrawingArea<DB, plotters::coord::Shift>,
    ) -> Result<(), String> {
        register_font();
        let e = |x: DrawingAreaErrorKind<DB::ErrorType>| x.to_string();
        root.fill(&WHITE).map_err(e)?;
        let clean = |v: f64| if v.is_finite() && v > 0.0 { v } else { 0.0 };
        let top = self
            .bars
            .iter()
            .map(|b| clean(b.1))
            .chain(self.whiskers.iter().flatten().map(|w| clean(w.1)))
            .fold(self.value_max, f64::max);
        let top = if top > 0.0 { top * 1.2 } else { 1.0 };
        // Slots 0..=n-1 (plotters' integer ranges include their end), the first bar on top.
        let n = self.bars.len().max(1) as i32;
        let label_width = self
            .bars
            .iter()
            .map(|b| b.0.len())
            .max()
            .unwrap_or(4)
            .clamp(4, 40) as u32
            * 7
            + 10;
        let labels: Vec<String> = self.bars.iter().map(|b| b.0.clone()).collect();
        let y_fmt = move |y: &SegmentValue<i32>| match y {
            SegmentValue::CenterOf(i) => labels
                .get((n - 1 - *i) as usize)
                .cloned()
                .unwrap_or_default(),
            _ => String::new(),
        };
        let mut chart = ChartBuilder::on(root)
            .caption(&self.title, ("sans-serif", 16))
            .margin(10)
            .x_label_area_size(40)
            .y_label_area_size(label_width)
            .build_cartesian_2d(0f64..top, (0..n - 1).into_segmented())
            .map_err(e)?;
        chart
            .configure_mesh()
            .disable_y_mesh()
            .x_desc(self.value_label.as_str())
            .y_labels(self.bars.len().max(1))
            .y_label_formatter(&y_fmt)
            .label_style(("sans-serif", 12))
            .draw()
            .map_err(e)?;
        for (i, (_, v)) in self.bars.iter().enumerate() {
            let color = PALETTE[i % PALETTE.len()];
            // The first bar on top.
            let slot = n - 1 - i as i32;
            let mut bar = Rectangle::new(
                [
                    (0.0, SegmentValue::Exact(slot)),
                    (clean(*v), SegmentValue::Exact(slot + 1)),
                ],
                color.mix(0.8).filled(),
            );
            bar.set_margin(6, 6, 0, 0);
            chart.draw_series(std::iter::once(bar)).map_err(e)?;
            if let Some(Some((lo, hi))) = self.whiskers.get(i) {
                let (lo, hi) = (clean(*lo), clean(*hi));
                let y = SegmentValue::CenterOf(slot);
                chart
                    .draw_series(std::iter::once(PathElement::new(
                        vec![(lo, y.clone()), (hi, y.clone())],
                        BLACK.stroke_width(2),
                    )))
                    .map_err(e)?;
                chart
                    .draw_series(
                        [lo, hi]
                            .into_iter()
                            .map(|x| Circle::new((x, y.clone()), 4, BLACK.filled())),
                    )
                    .map_err(e)?;
            }
            chart
                .draw_series(std::iter::once(Text::new(
                    crate::report::compare::format_value(Some(*v)),
                    (clean(*v), SegmentValue::CenterOf(slot)),
                    ("sans-serif", 12),
                )))
                .map_err(e)?;
        }
        Ok(())
    }
}

fn err(path: &Path, message: String) -> PlotError {
    PlotError {
        path: path.to_path_buf(),
        message,
    }
}

/// The y range to draw: the data's range widened by a factor 2 (log) or 5 % (linear);
/// a fixed range where there is nothing to draw.
fn y_range(panel: &Panel) -> (f64, f64) {
    let ys: Vec<f64> = panel
        .series
        .iter()
        .flat_map(|s| s.points.iter().map(|p| p.1))
        .filter(|y| y.is_finite() && (!panel.log_y || *y > 0.0))
        .collect();
    let lo = ys.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = ys.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    if ys.is_empty() {
        return if panel.log_y { (0.1, 10.0) } else { (0.0, 1.0) };
    }
    if panel.log_y {
        (lo / 2.0, hi * 2.0)
    } else {
        let pad = ((hi - lo) * 0.05).max(hi.abs() * 0.05).max(1e-9);
        (lo - pad, hi + pad)
    }
}

/// The labelled values of a log axis over `[lo, hi]`: the powers of ten inside,
/// or where that gives fewer than four, the 1-2-5 values, or every 1…9 multiple:
/// a panel whose data span less than a decade still carries readable values.
pub fn log_ticks(lo: f64, hi: f64) -> Vec<f64> {
    if !(lo > 0.0 && hi > lo && hi.is_finite()) {
        return Vec::new();
    }
    let (k0, k1) = (lo.log10().floor() as i32, hi.log10().ceil() as i32);
    let mut ticks = Vec::new();
    for mantissas in [
        &[1.0][..],
        &[1.0, 2.0, 5.0],
        &[1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0],
    ] {
        ticks = (k0..=k1)
            .flat_map(|k| mantissas.iter().map(move |m| m * 10f64.powi(k)))
            .filter(|v| (lo..=hi).contains(v))
            .collect();
        if ticks.len() >= 4 {
            break;
        }
    }
    ticks
}

/// An axis value as a person reads it: whole numbers from 1 up (`20000`, not
/// `2e4`), up to three significant digits below (`0.05`, `0.125`).
fn tick_label(v: f64) -> String {
    if v.abs() >= 1.0 || v == 0.0 {
        format!("{v:.0}")
    } else {
        let digits = (2 - v.abs().log10().floor() as i32).max(0) as usize;
        let s = format!("{v:.digits$}");
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    }
}

fn draw_panel<DB: DrawingBackend>(
    panel: &Panel,
    area: &DrawingArea<DB, plotters::coord::Shift>,
) -> Result<(), String> {
    let e = |x: DrawingAreaErrorKind<DB::ErrorType>| x.to_string();
    let (y0, y1) = y_range(panel);
    let (x0, x1) = panel.x_range;
    let ticks = panel.x_ticks.clone();
    let x_fmt = move |x: &f64| -> String {
        if ticks.is_empty() {
            return format!("{x}");
        }
        ticks
            .iter()
            .find(|(p, _)| (p - x).abs() < 1e-9)
            .map(|(_, s)| s.clone())
            .unwrap_or_default()
    };
    let n_x_labels = (x1 - x0).round().max(2.0) as usize + 1;
    let mut builder = ChartBuilder::on(area);
    builder
        .caption(&panel.title, ("sans-serif", 16))
        .margin(10)
        .x_label_area_size(40)
        .y_label_area_size(60);
    let visible = |p: &&(f64, f64)| p.1.is_finite() && (!panel.log_y || p.1 > 0.0);
    let y_fmt = |v: &f64| tick_label(*v);
    macro_rules! body {
        ($chart:expr) => {{
            let mut chart = $chart;
            chart
                .configure_mesh()
                .x_desc(panel.x_label.as_str())
                .y_desc(panel.y_label.as_str())
                .x_labels(n_x_labels)
                .y_labels(12)
                .x_label_formatter(&x_fmt)
                .y_label_formatter(&y_fmt)
                .label_style(("sans-serif", 12))
                .draw()
                .map_err(e)?;
            for (i, s) in panel.series.iter().enumerate() {
                let color = PALETTE[i % PALETTE.len()];
                let pts: Vec<(f64, f64)> = s.points.iter().filter(visible).copied().collect();
                chart
                    .draw_series(LineSeries::new(pts.clone(), color.stroke_width(3)))
                    .map_err(e)?
                    .label(s.name.as_str())
                    .legend(move |(x, y)| {
                        PathElement::new(vec![(x, y), (x + 20, y)], color.stroke_width(3))
                    });
                chart
                    .draw_series(pts.iter().map(|&p| Circle::new(p, 3, color.filled())))
                    .map_err(e)?;
            }
            chart
                .configure_series_labels()
                .background_style(WHITE.mix(0.8))
                .border_style(BLACK)
                .label_font(("sans-serif", 12))
                .position(SeriesLabelPosition::UpperLeft)
                .draw()
                .map_err(e)?;
        }};
    }
    if panel.log_y {
        body!(
            builder
                .build_cartesian_2d(
                    x0..x1,
                    (y0..y1).log_scale().with_key_points(log_ticks(y0, y1))
                )
                .map_err(e)?
        );
    } else {
        body!(builder.build_cartesian_2d(x0..x1, y0..y1).map_err(e)?);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn figure() -> Figure {
        let panel = |t: &str| Panel {
            title: t.to_string(),
            x_label: "contiguous chunk on disk [bytes]".into(),
            y_label: "bandwidth [MB/s]".into(),
            x_range: (0.5, 10.5),
            x_ticks: vec![(1.0, "1k".into()), (2.0, "+8".into()), (10.0, "2M".into())],
            log_y: true,
            series: vec![
                Series {
                    name: "scatter - type 0".into(),
                    points: vec![(1.0, 3.5), (2.0, 2.0), (10.0, 400.0)],
                },
                // A failed point (negative, as b_eff_io marks errors) is left out on a log axis.
                Series {
                    name: "shared - type 1".into(),
                    points: vec![(1.0, -999.999), (10.0, 120.0)],
                },
            ],
        };
        Figure {
            title: "test figure".into(),
            panels: vec![panel("write"), panel("read")],
            panel_size: (400, 300),
        }
    }

    /// Log panels whose data span less than a decade (b_eff_io's rewrite panel:
    /// one series, 2000–2700 MB/s) or several decades still carry readable values.
    #[test]
    fn every_panel_has_readable_axes_with_units() {
        let mut fig = figure();
        fig.panels.push(Panel {
            title: "rewrite".into(),
            series: vec![Series {
                name: "scatter - type 0".into(),
                points: vec![(1.0, 2705.0), (2.0, 2199.0), (10.0, 2666.0)],
            }],
            ..fig.panels[0].clone()
        });
        fig.panels.push(Panel {
            title: "linear".into(),
            log_y: false,
            ..fig.panels[2].clone()
        });
        let dir = tempfile::tempdir().unwrap();
        let svg = dir.path().join("f.svg");
        fig.write_svg(&svg).unwrap();
        let text = std::fs::read_to_string(&svg).unwrap();
        check_readable_axes(&text, &fig).unwrap();
        // The check fails where values or units are missing.
        let err = check_readable_axes("<svg></svg>", &fig).unwrap_err();
        assert!(err.contains("0 numeric y-axis values"), "{err}");
        let mut no_unit = fig.clone();
        no_unit.panels[1].y_label = "bandwidth".into();
        no_unit.write_svg(&svg).unwrap();
        let err =
            check_readable_axes(&std::fs::read_to_string(&svg).unwrap(), &no_unit).unwrap_err();
        assert!(err.contains("names no unit"), "{err}");
    }

    #[test]
    fn log_ticks_give_readable_values_for_any_span() {
        assert_eq!(log_ticks(1.0, 1e4), vec![1.0, 10.0, 100.0, 1000.0, 10000.0]);
        // Under a decade: the 1-2-5 values or every multiple, at least four.
        assert_eq!(
            log_ticks(1000.0, 6000.0),
            vec![1000.0, 2000.0, 3000.0, 4000.0, 5000.0, 6000.0]
        );
        assert_eq!(log_ticks(150.0, 2500.0), vec![200.0, 500.0, 1000.0, 2000.0]);
        assert!(log_ticks(0.0, 1.0).is_empty());
        assert_eq!(tick_label(20000.0), "20000");
        assert_eq!(tick_label(0.05), "0.05");
        assert_eq!(tick_label(0.125), "0.125");
        assert_eq!(tick_label(0.5), "0.5");
    }

    #[test]
    fn writes_valid_png_and_svg() {
        let dir = tempfile::tempdir().unwrap();
        let png = dir.path().join("f.png");
        let svg = dir.path().join("f.svg");
        let fig = figure();
        fig.write_png(&png).unwrap();
        fig.write_svg(&svg).unwrap();
        let p = std::fs::read(&png).unwrap();
        assert!(p.len() > 1000, "PNG of {} bytes", p.len());
        assert_eq!(&p[..8], b"\x89PNG\r\n\x1a\n");
        // IHDR carries the size: width and height big-endian at bytes 16..24.
        let w = u32::from_be_bytes(p[16..20].try_into().unwrap());
        let h = u32::from_be_bytes(p[20..24].try_into().unwrap());
        assert_eq!((w, h), fig.size());
        let s = std::fs::read_to_string(&svg).unwrap();
        assert!(s.starts_with("<svg"), "{}", &s[..s.len().min(80)]);
        assert!(s.trim_end().ends_with("</svg>"));
        assert!(s.contains("scatter - type 0") && s.contains("write") && s.contains("2M"));
        // Nothing but the two outputs is left in the directory (no temporary files).
        let mut names: Vec<_> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        names.sort();
        assert_eq!(names, vec!["f.png", "f.svg"]);
    }

    #[test]
    fn bar_chart_writes_an_svg_with_its_labels_and_values() {
        let dir = tempfile::tempdir().unwrap();
        let svg = dir.path().join("bars.svg");
        let chart = BarChart {
            title: "ior measured".into(),
            value_label: "bandwidth [MiB/s]".into(),
            bars: vec![
                ("write_mib_s".into(), 3277.0),
                ("read_mib_s".into(), 2018.0),
            ],
            value_max: 9400.0,
            size: (640, 200),
            whiskers: vec![Some((3000.0, 3500.0)), None],
        };
        chart.write_svg(&svg).unwrap();
        if let Ok(p) = std::env::var("PIOTWIN_BAR_PNG") {
            let root = BitMapBackend::new(&p, chart.size).into_drawing_area();
            chart.draw(&root).unwrap();
            root.present().unwrap();
        }
        let s = std::fs::read_to_string(&svg).unwrap();
        assert!(s.starts_with("<svg") && s.trim_end().ends_with("</svg>"));
        for text in [
            "ior measured",
            "bandwidth [MiB/s]",
            "write_mib_s",
            "read_mib_s",
            "3277.0",
            "2018.0",
        ] {
            assert!(s.contains(text), "no `{text}` in the SVG");
        }
        // Two bars: filled rectangles besides the white background.
        assert_eq!(s.matches("<rect").count(), 3, "{s}");
        // One whisker: its line and the marks at both ends.
        assert_eq!(s.matches("<circle").count(), 2, "{s}");
    }

    #[test]
    fn log_range_ignores_non_positive_points() {
        let f = figure();
        let (lo, hi) = y_range(&f.panels[0]);
        assert_eq!((lo, hi), (1.0, 800.0));
    }
}
