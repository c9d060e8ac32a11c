//! The timeline of a real fleet's log (`herdless analyze --out`): retries
//! and give-ups per bucket on one time axis, the spikes marked.
//!
//! Two panels share the horizontal axis (seconds since the first bucket):
//! retries per bucket on top, the buckets the lockstep search called spikes
//! drawn in red, every other bucket in blue; give-ups per bucket below, in
//! black. The largest retry bucket is labelled with its count, so the worst
//! moment is visible at a glance.

use std::path::{Path, PathBuf};

use plotters::coord::Shift;
use plotters::prelude::*;

use super::{DrawResult, Figure, PlotError, both, register_font};

/// The data of a timeline figure.
#[derive(Debug, Clone, PartialEq)]
pub struct TimelineFigure<'a> {
    /// The title.
    pub title: String,
    /// The width of a bucket, seconds.
    pub bucket_s: f64,
    /// Retries per bucket, from the first bucket.
    pub retries: &'a [u32],
    /// Give-ups per bucket, on the same axis.
    pub give_ups: &'a [u32],
    /// Indices of the buckets that are spikes.
    pub spikes: &'a [usize],
}

/// Writes `analyze-timeline.svg` and `analyze-timeline.png` into `dir`
/// (created if missing); returns the files written.
///
/// ```
/// use herdless_sim::plots::{write_timeline, TimelineFigure};
/// let dir = std::env::temp_dir().join(format!("herdless-timeline-doc-{}", std::process::id()));
/// let fig = TimelineFigure { title: "t".into(), bucket_s: 0.1, retries: &[1, 9, 0, 2], give_ups: &[0, 0, 1, 0], spikes: &[1] };
/// let files = write_timeline(&fig, &dir)?;
/// assert_eq!(files.len(), 2);
/// # std::fs::remove_dir_all(&dir).ok();
/// # Ok::<(), herdless_sim::plots::PlotError>(())
/// ```
pub fn write_timeline(fig: &TimelineFigure<'_>, dir: &Path) -> Result<Vec<PathBuf>, PlotError> {
    register_font();
    std::fs::create_dir_all(dir)
        .map_err(|e| PlotError::new(format!("cannot create {}: {e}", dir.display())))?;
    let mut files = Vec::new();
    both(dir, "analyze-timeline", 560, &mut files, &Timeline(fig))?;
    Ok(files)
}

struct Timeline<'a, 'b>(&'a TimelineFigure<'b>);

fn bars<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    caption: &str,
    counts: &[u32],
    bucket_s: f64,
    color: &dyn Fn(usize) -> RGBColor,
    label_largest: bool,
) -> DrawResult
where
    DB::ErrorType: 'static,
{
    let x_max = (counts.len().max(1) as f64) * bucket_s;
    let top = counts.iter().copied().max().unwrap_or(0).max(1);
    let y_max = f64::from(top) * 1.15;
    let mut chart = ChartBuilder::on(area)
        .margin(8)
        .caption(caption, ("sans-serif", 15))
        .x_label_area_size(30)
        .y_label_area_size(60)
        .build_cartesian_2d(0f64..x_max, 0f64..y_max)?;
    chart
        .configure_mesh()
        .x_desc("seconds since the first bucket")
        .y_desc("per bucket")
        .x_label_formatter(&|v| format!("{v:.1}"))
        .y_label_formatter(&|v| format!("{v:.0}"))
        .label_style(("sans-serif", 12))
        .y_labels((top as usize + 1).clamp(2, 10))
        .max_light_lines(2)
        .draw()?;
    chart.draw_series(
        counts
            .iter()
            .enumerate()
            .filter(|&(_, &c)| c > 0)
            .map(|(i, &c)| {
                let x0 = i as f64 * bucket_s;
                Rectangle::new(
                    [(x0, 0.0), (x0 + bucket_s, f64::from(c))],
                    color(i).filled(),
                )
            }),
    )?;
    if let Some((i, &c)) = counts
        .iter()
        .enumerate()
        .max_by_key(|&(_, &c)| c)
        .filter(|_| label_largest)
    {
        chart.draw_series(std::iter::once(Text::new(
            format!("{c}"),
            (i as f64 * bucket_s, f64::from(c) * 1.05),
            ("sans-serif", 13),
        )))?;
    }
    Ok(())
}

impl Figure for Timeline<'_, '_> {
    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> DrawResult
    where
        DB::ErrorType: 'static,
    {
        let f = self.0;
        root.fill(&WHITE)?;
        let (head, body) = root.split_vertically(36);
        head.titled(&f.title, ("sans-serif", 17))?;
        let (top, bottom) = body.split_vertically(320);
        let spike = |i: usize| {
            if f.spikes.contains(&i) {
                RGBColor(200, 40, 40)
            } else {
                RGBColor(30, 110, 200)
            }
        };
        bars(
            &top,
            "retries (spikes in red, largest labelled)",
            f.retries,
            f.bucket_s,
            &spike,
            true,
        )?;
        bars(
            &bottom,
            "give-ups",
            f.give_ups,
            f.bucket_s,
            &|_| RGBColor(40, 40, 40),
            true,
        )?;
        Ok(())
    }
}
