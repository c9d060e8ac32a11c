//! The outage figure: calls per 100 ms, one panel per strategy, on a scale a
//! person can read.
//!
//! A storm without jitter puts 40,000 calls in one 100 ms bucket while the
//! endpoint serves 1,000; on a linear axis to 40,000 the capacity line and
//! every well-behaved strategy are flat at the bottom. The vertical axis is
//! therefore **clipped at three times the capacity per 100 ms**: bars above
//! it are drawn to the top in a darker shade with their value written over
//! them, so the spikes stay visible and the region that matters (around the
//! capacity) fills the panel. Each panel also marks:
//!
//! * the end of the outage `T` (grey) and the capacity after it (black);
//! * the **physical limit** `T + N / C` (dashed black): no strategy drains
//!   before it;
//! * the strategy's own end (dashed, in its colour): when its last client
//!   succeeded, or, when clients gave up, when the last one was done;
//!
//! and its caption gives the figures behind them (calls per client, drain
//! against the limit, give-ups, peak after `T`).

use plotters::coord::Shift;
use plotters::prelude::*;

use super::{COLORS, DrawResult, Figure};
use crate::report::OutageReport;
use crate::scenario::outage::OutageFigures;

/// Clip the vertical axis at this many times the capacity per 100 ms.
const CLIP: f64 = 3.0;

pub(super) struct Outage<'a>(pub(super) &'a OutageReport);

fn caption(s: &OutageFigures) -> String {
    let end = match (s.drain_s, s.drain_vs_limit) {
        (Some(d), Some(x)) => format!("drained {d:.2} s = {x:.2}x the limit"),
        _ => format!(
            "did not drain: {} gave up (last done {:.1} s)",
            s.gave_up, s.completion_s
        ),
    };
    format!(
        "{}: {:.2} calls per client, {end}, peak after T {:.2}x capacity",
        s.strategy, s.calls, s.peak_over_capacity
    )
}

impl Figure for Outage<'_> {
    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> DrawResult
    where
        DB::ErrorType: 'static,
    {
        let r = self.0;
        let p = &r.parameters;
        root.fill(&WHITE)?;
        let (top, body) = root.split_vertically(44);
        top.titled(
            &format!(
                "outage: calls per 100 ms ({} clients, down {} s, then {}/s); axis clipped at \
                 {CLIP}x capacity, darker bars clipped",
                p.clients, p.outage_s, p.capacity_per_s
            ),
            ("sans-serif", 17),
        )?;
        let cap = f64::from(p.capacity_per_s) * 0.1;
        let limit = r.physical_limit_s;
        let tallest = r
            .strategies
            .iter()
            .flat_map(|s| s.arrivals_per_100ms.iter().copied())
            .max()
            .unwrap_or(1) as f64;
        let y_max = (tallest * 1.05).clamp(cap * 1.5, cap * CLIP);
        let x_max = r
            .strategies
            .iter()
            .map(|s| s.completion_s)
            .fold(limit, f64::max)
            .mul_add(1.05, 0.5);
        let panels = body.split_evenly((r.strategies.len().max(1), 1));
        for (i, (panel, s)) in panels.iter().zip(&r.strategies).enumerate() {
            let color = COLORS[i % COLORS.len()];
            let dark = RGBColor(color.0 / 2, color.1 / 2, color.2 / 2);
            let mut chart = ChartBuilder::on(panel)
                .margin(6)
                .caption(caption(s), ("sans-serif", 14))
                .x_label_area_size(26)
                .y_label_area_size(64)
                .build_cartesian_2d(0f64..x_max, 0f64..y_max)?;
            chart
                .configure_mesh()
                .x_desc("time (s)")
                .y_desc("calls / 100 ms")
                .x_label_formatter(&|v| format!("{v:.0}"))
                .y_label_formatter(&|v| format!("{v:.0}"))
                .label_style(("sans-serif", 11))
                .max_light_lines(2)
                .draw()?;
            let bars = s
                .arrivals_per_100ms
                .iter()
                .enumerate()
                .filter(|&(_, &c)| c > 0);
            chart.draw_series(bars.map(|(b, &c)| {
                let x0 = b as f64 * 0.1;
                let (h, fill) = if f64::from(c) > y_max {
                    (y_max, dark.filled())
                } else {
                    (f64::from(c), color.filled())
                };
                Rectangle::new([(x0, 0.0), (x0 + 0.1, h)], fill)
            }))?;
            // The value of each run of clipped bars, once, above its first bar
            // (skipped when it would overlap the previous label).
            let mut previous_clipped = false;
            let mut labels: Vec<(f64, u32)> = Vec::new();
            for (b, &c) in s.arrivals_per_100ms.iter().enumerate() {
                let clipped = f64::from(c) > y_max;
                let x = b as f64 * 0.1;
                let room = labels.last().is_none_or(|&(l, _)| x - l >= x_max / 25.0);
                if clipped && !previous_clipped && room {
                    labels.push((x, c));
                }
                previous_clipped = clipped;
            }
            chart.draw_series(labels.into_iter().map(|(x, c)| {
                Text::new(
                    format!("{c}"),
                    (x + 0.15, y_max * 0.93),
                    ("sans-serif", 11).into_font().color(&BLACK),
                )
            }))?;
            let t = p.outage_s;
            chart.draw_series(LineSeries::new(
                [(t, 0.0), (t, y_max)],
                BLACK.mix(0.35).stroke_width(1),
            ))?;
            chart.draw_series(LineSeries::new(
                [(t, cap), (x_max, cap)],
                BLACK.stroke_width(1),
            ))?;
            chart.draw_series(DashedLineSeries::new(
                [(limit, 0.0), (limit, y_max)],
                6,
                4,
                BLACK.stroke_width(2),
            ))?;
            let end = s.drain_s.unwrap_or(s.completion_s);
            chart.draw_series(DashedLineSeries::new(
                [(end, 0.0), (end, y_max)],
                3,
                3,
                dark.stroke_width(2),
            ))?;
            if i == 0 {
                chart.draw_series([
                    Text::new(
                        format!("physical limit {limit:.1} s"),
                        (limit + 0.15, y_max * 0.8),
                        ("sans-serif", 11).into_font().color(&BLACK),
                    ),
                    Text::new(
                        "capacity".to_owned(),
                        (t + 0.15, cap + y_max * 0.03),
                        ("sans-serif", 11).into_font().color(&BLACK),
                    ),
                ])?;
            }
        }
        Ok(())
    }
}
