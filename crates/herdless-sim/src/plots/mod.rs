//! Figures (feature `plots`): SVG and PNG, drawn with plotters.
//!
//! * spread: **retries over time**, one panel per strategy on a shared time
//!   axis and a shared vertical scale, retries per 100 ms bucket. A storm
//!   shows as spikes, its cure as a smear.
//! * outage: **calls over time**, one panel per strategy, the vertical axis
//!   clipped at three times the capacity per 100 ms (clipped bars darker, with
//!   their value), the capacity, the end of the outage, the physical limit
//!   and each strategy's own end marked (see `outage.rs`).
//! * reactivation: **calls over time**, one figure per fleet, one panel per
//!   strategy, on the outage figure's clipped scale (see `reactivation.rs`).
//! * robustness: the matrix as **heat maps** (drain, peak, calls; green where
//!   a goal is met, red where not; see `robustness.rs`).
//! * field: the drain of every cell as a heat map (strategy and server
//!   set-up per row, outage and end per column; `field.rs`).
//! * contention: **write calls** and **completion time** against the number of
//!   clients, one line per strategy.
//! * a real fleet's log (`herdless analyze --out`): **retries and give-ups
//!   over time**, the spikes marked (see `timeline.rs`).
//!
//! # Fonts
//!
//! plotters' default text rendering (`ttf` feature) loads system fonts through
//! fontconfig and FreeType, which a fresh CI machine or a minimal container may
//! not have. This crate instead enables plotters' `ab_glyph` backend (pure
//! Rust) and registers DejaVu Sans, bundled in `assets/` (Bitstream Vera
//! licence, in `assets/DejaVuSans-LICENSE.txt`), as `sans-serif`. The PNG needs
//! no system library at all; the SVG writes `<text>` elements that a viewer
//! renders with its own sans-serif font.
//!
//! The bundled file is DejaVu Sans 2.37 with every glyph, outline, advance,
//! `kern` pair and `cmap` entry kept, less what `ab_glyph` never reads: the
//! TrueType hinting, the OpenType layout tables (`GPOS`, `GSUB`, `GDEF`,
//! `MATH`) and the glyph names (557,992 bytes instead of 759,720; every figure
//! is byte for byte the same), stored zlib-compressed
//! (`assets/DejaVuSans.ttf.zlib`, 279,625 bytes) and inflated once, by the
//! first figure drawn (2.5 to 5 ms of CPU). Made with fonttools' `pyftsubset` and
//! Python's `zlib`:
//!
//! ```sh
//! pyftsubset DejaVuSans.ttf --unicodes='*' --glyphs='*' --retain-gids \
//!   --no-hinting --legacy-kern --layout-features='' \
//!   --drop-tables+=GPOS,GSUB,GDEF,MATH,FFTM --name-IDs='*' --name-languages='*' \
//!   --notdef-outline --notdef-glyph --no-glyph-names --output-file=out.ttf
//! python3 -c 'import sys, zlib; sys.stdout.buffer.write(zlib.compress(open("out.ttf", "rb").read(), 9))' \
//!   > DejaVuSans.ttf.zlib
//! ```

use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Once;

use plotters::coord::Shift;
use plotters::prelude::*;

use crate::report::{ContentionReport, Report, SpreadReport};

mod field;
mod outage;
mod reactivation;
mod robustness;
mod timeline;

use field::Field;
use outage::Outage;
use reactivation::Reactivation;
use robustness::Robustness;
pub use timeline::{TimelineFigure, write_timeline};

/// The bundled font, zlib-compressed (see [Fonts](self#fonts)).
static FONT_ZLIB: &[u8] = include_bytes!("../../assets/DejaVuSans.ttf.zlib");
static REGISTER: Once = Once::new();

/// The bundled TrueType file, inflated.
fn font() -> Option<Vec<u8>> {
    miniz_oxide::inflate::decompress_to_vec_zlib(FONT_ZLIB).ok()
}

fn register_font() {
    REGISTER.call_once(|| {
        // The bundled font is a valid zlib stream of a valid TrueType file; if
        // inflating or registration failed anyway, drawing text reports an
        // error that names the file. plotters keeps the font for the whole
        // process: the inflated bytes are leaked once.
        if let Some(font) = font() {
            let font: &'static [u8] = Box::leak(font.into_boxed_slice());
            let _ = plotters::style::register_font("sans-serif", FontStyle::Normal, font);
        }
    });
}

/// A figure could not be written (the message names the file).
///
/// ```
/// let e = herdless_sim::plots::PlotError::new("x.svg: permission denied");
/// assert!(e.to_string().contains("x.svg"));
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlotError(String);

impl PlotError {
    /// An error with this message.
    pub fn new(msg: impl Into<String>) -> Self {
        Self(msg.into())
    }
}

impl fmt::Display for PlotError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for PlotError {}

pub(crate) type DrawResult = Result<(), Box<dyn std::error::Error>>;

const WIDTH: u32 = 1000;
pub(crate) const COLORS: [RGBColor; 9] = [
    RGBColor(200, 40, 40),
    RGBColor(30, 110, 200),
    RGBColor(40, 150, 70),
    RGBColor(150, 80, 180),
    RGBColor(220, 130, 20),
    RGBColor(90, 90, 90),
    RGBColor(0, 150, 150),
    RGBColor(180, 60, 120),
    RGBColor(110, 120, 20),
];

/// Writes the report's figures into `dir` (created if missing), each as SVG
/// and PNG; returns the files written.
///
/// ```
/// use herdless_sim::{Config, Scenario, Simulation};
/// let dir = std::env::temp_dir().join(format!("herdless-plots-doc-{}", std::process::id()));
/// let report = Simulation::new(Config::default_for(Scenario::Spread)).run()?;
/// let files = herdless_sim::plots::write_all(&report, &dir)?;
/// assert!(files.iter().any(|f| f.extension().is_some_and(|e| e == "png")));
/// # std::fs::remove_dir_all(&dir).ok();
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn write_all(report: &Report, dir: &Path) -> Result<Vec<PathBuf>, PlotError> {
    register_font();
    std::fs::create_dir_all(dir)
        .map_err(|e| PlotError(format!("cannot create {}: {e}", dir.display())))?;
    let mut files = Vec::new();
    match report {
        Report::Spread(r) => {
            let h = panel_height(r.strategies.len());
            both(dir, "spread-retries", h, &mut files, &Spread(r))?;
        }
        Report::Outage(r) => {
            let h = panel_height(r.strategies.len());
            both(dir, "outage-arrivals", h, &mut files, &Outage(r))?;
        }
        Report::Robustness(r) => {
            both(dir, "robustness", 560, &mut files, &Robustness(r))?;
        }
        Report::Field(r) => {
            both(dir, "field-drain", 900, &mut files, &Field(r))?;
        }
        Report::Contention(r) => {
            both(
                dir,
                "contention-calls",
                600,
                &mut files,
                &Contention(r, true),
            )?;
            both(
                dir,
                "contention-time",
                600,
                &mut files,
                &Contention(r, false),
            )?;
        }
        // Its figures are a handful of numbers per strategy: the table.
        Report::LatencyTail(_) => {}
        Report::Reactivation(r) => {
            for fleet in crate::scenario::reactivation::Fleet::ALL {
                let fig = Reactivation(r, fleet);
                if fig.panels() > 0 {
                    let stem = format!("reactivation-{}", fleet.name());
                    both(dir, &stem, panel_height(fig.panels()), &mut files, &fig)?;
                }
            }
        }
    }
    Ok(files)
}

fn panel_height(panels: usize) -> u32 {
    (70 + 160 * panels as u32).min(4000)
}

/// A figure that can be drawn on any plotters backend.
pub(crate) trait Figure {
    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> DrawResult
    where
        DB::ErrorType: 'static;
}

/// Draws one figure twice, as `stem.svg` and `stem.png`.
fn both<F: Figure>(
    dir: &Path,
    stem: &str,
    height: u32,
    files: &mut Vec<PathBuf>,
    fig: &F,
) -> Result<(), PlotError> {
    let svg = dir.join(format!("{stem}.svg"));
    let png = dir.join(format!("{stem}.png"));
    let fail = |path: &Path, e: Box<dyn std::error::Error>| {
        PlotError(format!("cannot write {}: {e}", path.display()))
    };
    {
        let root = SVGBackend::new(&svg, (WIDTH, height)).into_drawing_area();
        fig.draw(&root).map_err(|e| fail(&svg, e))?;
        root.present().map_err(|e| fail(&svg, e.into()))?;
    }
    files.push(svg);
    let mut rgb = vec![0u8; WIDTH as usize * height as usize * 3];
    {
        let root = BitMapBackend::with_buffer(&mut rgb, (WIDTH, height)).into_drawing_area();
        fig.draw(&root).map_err(|e| fail(&png, e))?;
        root.present().map_err(|e| fail(&png, e.into()))?;
    }
    write_png(&png, WIDTH, height, &rgb).map_err(|e| fail(&png, e))?;
    files.push(png);
    Ok(())
}

/// Encodes an 8-bit RGB buffer as a PNG file with the `png` crate (plotters'
/// own encoder would bring the whole `image` crate, decoders included: about
/// 25 s of a first build's CPU for a file format we only write).
fn write_png(
    path: &Path,
    width: u32,
    height: u32,
    rgb: &[u8],
) -> Result<(), Box<dyn std::error::Error>> {
    let file = std::io::BufWriter::new(std::fs::File::create(path)?);
    let mut encoder = png::Encoder::new(file, width, height);
    encoder.set_color(png::ColorType::Rgb);
    encoder.set_depth(png::BitDepth::Eight);
    let mut writer = encoder.write_header()?;
    writer.write_image_data(rgb)?;
    writer.finish()?;
    Ok(())
}

/// Small multiples: one bar chart of counts per 100 ms per panel.
fn histograms<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    title: &str,
    y_desc: &str,
    series: &[(&str, &[u32])],
    marks: Marks,
) -> DrawResult
where
    DB::ErrorType: 'static,
{
    root.fill(&WHITE)?;
    let (top, body) = root.split_vertically(40);
    top.titled(title, ("sans-serif", 20))?;
    let buckets = series
        .iter()
        .map(|(_, c)| c.len())
        .max()
        .unwrap_or(1)
        .max(1);
    let x_max = buckets as f64 * 0.1;
    let y_max = series
        .iter()
        .flat_map(|(_, c)| c.iter().copied())
        .max()
        .unwrap_or(1)
        .max(1) as f64
        * 1.05;
    let y_max = marks.capacity.map_or(y_max, |c| y_max.max(c * 1.2));
    for (i, (panel, (name, counts))) in body
        .split_evenly((series.len().max(1), 1))
        .iter()
        .zip(series)
        .enumerate()
    {
        let color = COLORS[i % COLORS.len()];
        let mut chart = ChartBuilder::on(panel)
            .margin(6)
            .caption(*name, ("sans-serif", 15))
            .x_label_area_size(28)
            .y_label_area_size(70)
            .build_cartesian_2d(0f64..x_max, 0f64..y_max)?;
        chart
            .configure_mesh()
            .x_desc("time (s)")
            .y_desc(y_desc)
            .x_label_formatter(&|v| format!("{v:.0}"))
            .y_label_formatter(&|v| format!("{v:.0}"))
            .label_style(("sans-serif", 12))
            .max_light_lines(2)
            .draw()?;
        chart.draw_series(
            counts
                .iter()
                .enumerate()
                .filter(|&(_, &c)| c > 0)
                .map(|(b, &c)| {
                    let x0 = b as f64 * 0.1;
                    Rectangle::new([(x0, 0.0), (x0 + 0.1, f64::from(c))], color.filled())
                }),
        )?;
        if let Some(cap) = marks.capacity {
            let from = marks.recovery_s.unwrap_or(0.0);
            chart.draw_series(LineSeries::new(
                [(from, cap), (x_max, cap)],
                BLACK.stroke_width(1),
            ))?;
        }
        if let Some(t) = marks.recovery_s {
            chart.draw_series(LineSeries::new(
                [(t, 0.0), (t, y_max)],
                BLACK.mix(0.5).stroke_width(1),
            ))?;
        }
    }
    Ok(())
}

#[derive(Debug, Clone, Copy, Default)]
struct Marks {
    capacity: Option<f64>,
    recovery_s: Option<f64>,
}

struct Spread<'a>(&'a SpreadReport);

impl Figure for Spread<'_> {
    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> DrawResult
    where
        DB::ErrorType: 'static,
    {
        let r = self.0;
        let series: Vec<(&str, &[u32])> = r
            .strategies
            .iter()
            .map(|s| (s.strategy.as_str(), s.retries_per_100ms.as_slice()))
            .collect();
        let title = format!(
            "spread: retries per 100 ms, {} workers, first {} calls fail (seed {})",
            r.parameters.workers, r.parameters.failures, r.seed
        );
        histograms(root, &title, "retries / 100 ms", &series, Marks::default())
    }
}

struct Contention<'a>(&'a ContentionReport, bool);

impl Figure for Contention<'_> {
    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> DrawResult
    where
        DB::ErrorType: 'static,
    {
        let (r, calls) = (self.0, self.1);
        root.fill(&WHITE)?;
        let value = |p: &crate::scenario::contention::ContentionPoint| {
            if calls { p.calls } else { p.completion_s }
        };
        let x_max = r.parameters.clients.iter().copied().max().unwrap_or(1) as f64;
        let y_max = r
            .strategies
            .iter()
            .flat_map(|s| s.points.iter().map(value))
            .fold(0.0f64, f64::max)
            .max(1e-9)
            * 1.05;
        let (title, y_desc) = if calls {
            (
                "contention: write calls against clients",
                "write calls (mean)",
            )
        } else {
            (
                "contention: completion time against clients",
                "completion (s, mean)",
            )
        };
        let mut chart = ChartBuilder::on(root)
            .margin(12)
            .caption(
                format!("{title} ({} trials, seed {})", r.parameters.trials, r.seed),
                ("sans-serif", 18),
            )
            .x_label_area_size(40)
            .y_label_area_size(80)
            .build_cartesian_2d(0f64..x_max, 0f64..y_max)?;
        chart
            .configure_mesh()
            .x_desc("clients")
            .y_desc(y_desc)
            .x_label_formatter(&|v| format!("{v:.0}"))
            .y_label_formatter(&|v| {
                if calls {
                    format!("{v:.0}")
                } else {
                    format!("{v:.1}")
                }
            })
            .label_style(("sans-serif", 13))
            .draw()?;
        for (i, s) in r.strategies.iter().enumerate() {
            let color = COLORS[i % COLORS.len()];
            chart
                .draw_series(LineSeries::new(
                    s.points.iter().map(|p| (f64::from(p.clients), value(p))),
                    color.stroke_width(2),
                ))?
                .label(s.strategy.clone())
                .legend(move |(x, y)| {
                    PathElement::new([(x, y), (x + 20, y)], color.stroke_width(2))
                });
        }
        chart
            .configure_series_labels()
            .position(SeriesLabelPosition::UpperLeft)
            .background_style(WHITE.mix(0.85))
            .border_style(BLACK)
            .label_font(("sans-serif", 14))
            .draw()?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::font;

    #[test]
    fn the_bundled_font_inflates_to_the_truetype_file_with_every_glyph() {
        let font = font().expect("the bundled zlib stream inflates");
        assert_eq!(font.len(), 557_992);
        // A TrueType file (sfnt version 1.0); glyph count from `maxp`.
        assert_eq!(&font[..4], &[0, 1, 0, 0]);
        let tables = usize::from(u16::from_be_bytes([font[4], font[5]]));
        let maxp = (0..tables)
            .map(|i| &font[12 + 16 * i..28 + 16 * i])
            .find(|record| &record[..4] == b"maxp")
            .map(|record| u32::from_be_bytes([record[8], record[9], record[10], record[11]]))
            .expect("a maxp table") as usize;
        assert_eq!(u16::from_be_bytes([font[maxp + 4], font[maxp + 5]]), 6253);
    }
}
