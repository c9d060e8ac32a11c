//! The reactivation figure: calls per 100 ms, one panel per strategy, one
//! figure per fleet, on the outage figure's clipped scale (three times the
//! capacity per 100 ms; clipped bars darker, their value written over
//! them). Each panel marks the capacity, the physical limit `N / C` (dashed
//! black) and the strategy's own drain (dashed, in its colour); its caption
//! gives the drain, the calls, the peak after the first 100 ms and the
//! latency's 99th percentile from the intended send time.

use plotters::coord::Shift;
use plotters::prelude::*;

use super::{COLORS, DrawResult, Figure};
use crate::report::ReactivationReport;
use crate::scenario::reactivation::{Fleet, ReactivationFigures};

const CLIP: f64 = 3.0;

pub(super) struct Reactivation<'a>(pub(super) &'a ReactivationReport, pub(super) Fleet);

impl Reactivation<'_> {
    fn strategies(&self) -> Vec<&ReactivationFigures> {
        self.0
            .strategies
            .iter()
            .filter(|f| f.fleet == self.1.name())
            .collect()
    }

    /// How many panels the figure has.
    pub(super) fn panels(&self) -> usize {
        self.strategies().len()
    }
}

fn caption(s: &ReactivationFigures) -> String {
    let drain = match s.drain_vs_limit {
        Some(x) => format!("drained at {x:.2}x the limit"),
        None => format!("did not drain: {} gave up", s.gave_up),
    };
    let p99 = s
        .latency_p99_s
        .map_or("-".to_owned(), |v| format!("{v:.2} s"));
    format!(
        "{}: {drain}, {:.2} calls per client, peak after 100 ms {:.2}x capacity, latency p99 {p99}",
        s.strategy, s.calls, s.peak_after_100ms_over_capacity
    )
}

impl Figure for Reactivation<'_> {
    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> DrawResult
    where
        DB::ErrorType: 'static,
    {
        let r = self.0;
        let p = &r.parameters;
        let strategies = self.strategies();
        root.fill(&WHITE)?;
        let (top, body) = root.split_vertically(44);
        top.titled(
            &format!(
                "reactivation ({}, plan {}): calls per 100 ms, {} clients back at once to {}/s; \
                 axis clipped at {CLIP}x capacity",
                self.1.name(),
                p.plan,
                p.clients,
                p.capacity_per_s
            ),
            ("sans-serif", 17),
        )?;
        let cap = f64::from(p.capacity_per_s) * 0.1;
        let limit = r.physical_limit_s;
        let y_max = cap * CLIP;
        let x_max = strategies
            .iter()
            .map(|s| s.arrivals_per_100ms.len() as f64 * 0.1)
            .fold(limit, f64::max)
            .mul_add(1.05, 0.3);
        let panels = body.split_evenly((strategies.len().max(1), 1));
        for (i, (panel, s)) in panels.iter().zip(&strategies).enumerate() {
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
            chart.draw_series(
                s.arrivals_per_100ms
                    .iter()
                    .enumerate()
                    .filter(|&(_, &c)| c > 0)
                    .map(|(b, &c)| {
                        let x0 = b as f64 * 0.1;
                        let (h, fill) = if f64::from(c) > y_max {
                            (y_max, dark.filled())
                        } else {
                            (f64::from(c), color.filled())
                        };
                        Rectangle::new([(x0, 0.0), (x0 + 0.1, h)], fill)
                    }),
            )?;
            let clipped = s
                .arrivals_per_100ms
                .iter()
                .enumerate()
                .filter(|&(_, &c)| f64::from(c) > y_max)
                .take(1);
            chart.draw_series(clipped.map(|(b, &c)| {
                Text::new(
                    format!("{c}"),
                    (b as f64 * 0.1 + 0.15, y_max * 0.9),
                    ("sans-serif", 11).into_font().color(&BLACK),
                )
            }))?;
            chart.draw_series(LineSeries::new(
                [(0.0, cap), (x_max, cap)],
                BLACK.stroke_width(1),
            ))?;
            chart.draw_series(DashedLineSeries::new(
                [(limit, 0.0), (limit, y_max)],
                6,
                4,
                BLACK.stroke_width(2),
            ))?;
            if let Some(d) = s.drain_s {
                chart.draw_series(DashedLineSeries::new(
                    [(d, 0.0), (d, y_max)],
                    3,
                    3,
                    dark.stroke_width(2),
                ))?;
            }
            if i == 0 {
                chart.draw_series([Text::new(
                    format!("N/C = {limit:.1} s"),
                    (limit + 0.1, y_max * 0.75),
                    ("sans-serif", 11).into_font().color(&BLACK),
                )])?;
            }
        }
        Ok(())
    }
}
