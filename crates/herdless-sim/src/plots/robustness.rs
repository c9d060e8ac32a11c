//! The robustness figure: the matrix as three heat maps side by side — the
//! honoring clients' drain against the physical limit, their peak of
//! arrivals after the outage against the capacity, and their calls — of the
//! first strategy under test, at the base outage: one row per true capacity
//! (over the told estimate) and outage end, one column per share of clients
//! that honor Retry-After. A cell is green when it meets its goal and red when it
//! does not (deeper the further from the goal), with its value written in it.

use plotters::coord::Shift;
use plotters::prelude::*;

use super::{DrawResult, Figure};
use crate::report::RobustnessReport;
use crate::report::robustness::ratio;
use crate::scenario::robustness::RobustnessCell;

pub(super) struct Robustness<'a>(pub(super) &'a RobustnessReport);

/// One heat map: a value per cell and its goal (at most).
struct Map<'a> {
    title: String,
    value: &'a dyn Fn(&RobustnessCell) -> Option<f64>,
    goal: f64,
    digits: usize,
}

fn shade(value: Option<f64>, goal: f64) -> RGBColor {
    match value {
        None => RGBColor(190, 190, 190),
        Some(v) if v <= goal => {
            // From pale (at the goal) to deeper green (far below it).
            let k = ((1.0 - v / goal) * 2.0).clamp(0.0, 1.0);
            RGBColor(
                (200.0 - 90.0 * k) as u8,
                (235.0 - 30.0 * k) as u8,
                (200.0 - 90.0 * k) as u8,
            )
        }
        Some(v) => {
            let k = ((v / goal - 1.0) * 2.0).clamp(0.0, 1.0);
            RGBColor(240, (190.0 - 120.0 * k) as u8, (180.0 - 120.0 * k) as u8)
        }
    }
}

impl Figure for Robustness<'_> {
    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> DrawResult
    where
        DB::ErrorType: 'static,
    {
        let r = self.0;
        let g = &r.goals;
        let cells: Vec<&RobustnessCell> = r
            .cells
            .iter()
            .filter(|c| c.strategy == r.strategy && !c.long)
            .collect();
        root.fill(&WHITE)?;
        let (top, body) = root.split_vertically(64);
        top.titled(
            &format!(
                "robustness of {}: {} of {} cells meet every goal ({} clients, {} s outage, told {} calls/s, true C per row; seed {})",
                r.strategy,
                cells.iter().filter(|c| c.passed).count(),
                cells.len(),
                r.parameters.clients,
                r.parameters.outage_s,
                r.capacity_estimate_per_s,
                r.seed
            ),
            ("sans-serif", 17),
        )?;
        let drain = |c: &RobustnessCell| c.honoring_vs_limit;
        let peak = |c: &RobustnessCell| Some(c.honoring_peak_over_capacity);
        let calls = |c: &RobustnessCell| Some(c.honoring_calls);
        let maps = [
            Map {
                title: format!(
                    "honoring clients' drain / limit (goal <= {})",
                    g.honoring_vs_limit
                ),
                value: &drain,
                goal: g.honoring_vs_limit,
                digits: 2,
            },
            Map {
                title: format!("honoring peak per 100 ms after T / C (goal <= {})", g.peak),
                value: &peak,
                goal: g.peak,
                digits: 2,
            },
            Map {
                title: format!("calls per honoring client (goal <= {})", g.honoring_calls),
                value: &calls,
                goal: g.honoring_calls,
                digits: 2,
            },
        ];
        let mut rows: Vec<(f64, &str)> = Vec::new();
        let mut columns: Vec<f64> = Vec::new();
        for c in &cells {
            if !rows.contains(&(c.capacity_over_estimate, c.outage_end)) {
                rows.push((c.capacity_over_estimate, c.outage_end));
            }
            if !columns.contains(&c.honor) {
                columns.push(c.honor);
            }
        }
        let font = ("sans-serif", 13).into_font();
        for (panel, map) in body.split_evenly((1, maps.len())).iter().zip(&maps) {
            let (w, h) = panel.dim_in_pixel();
            let (left, head) = (112i32, 56i32);
            let cw = (w as i32 - left - 10) / columns.len().max(1) as i32;
            let ch = (h as i32 - head - 10) / rows.len().max(1) as i32;
            panel.draw(&Text::new(map.title.clone(), (8, 6), font.clone()))?;
            for (j, honor) in columns.iter().enumerate() {
                let x = left + j as i32 * cw + cw / 2 - 30;
                panel.draw(&Text::new(
                    format!("honor {honor}"),
                    (x, head - 22),
                    font.clone(),
                ))?;
            }
            for (i, (factor, end)) in rows.iter().enumerate() {
                let y = head + i as i32 * ch;
                panel.draw(&Text::new(
                    format!("C = {}, {end}", ratio(*factor)),
                    (6, y + ch / 2 - 7),
                    font.clone(),
                ))?;
                for (j, honor) in columns.iter().enumerate() {
                    let x = left + j as i32 * cw;
                    let cell = cells.iter().find(|c| {
                        c.capacity_over_estimate == *factor
                            && c.outage_end == *end
                            && c.honor == *honor
                    });
                    let value = cell.and_then(|c| (map.value)(c));
                    panel.draw(&Rectangle::new(
                        [(x + 2, y + 2), (x + cw - 2, y + ch - 2)],
                        shade(value, map.goal).filled(),
                    ))?;
                    let text = match (cell, value) {
                        (Some(_), Some(v)) => format!("{v:.*}", map.digits),
                        (Some(c), None) => format!("{} gave up", c.honoring_gave_up),
                        (None, _) => String::new(),
                    };
                    panel.draw(&Text::new(
                        text,
                        (x + cw / 2 - 18, y + ch / 2 - 8),
                        ("sans-serif", 16).into_font(),
                    ))?;
                }
            }
        }
        Ok(())
    }
}
