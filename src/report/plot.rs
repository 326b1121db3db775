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
const PALETTE: [RGBColor; 6] = [
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
                .build_cartesian_2d(x0..x1, (y0..y1).log_scale())
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
    }

    #[test]
    fn log_range_ignores_non_positive_points() {
        let f = figure();
        let (lo, hi) = y_range(&f.panels[0]);
        assert_eq!((lo, hi), (1.0, 800.0));
    }
}
