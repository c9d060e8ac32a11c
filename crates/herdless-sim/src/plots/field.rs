//! The field figure: the drain against the physical limit of every cell as
//! a heat map — one row per strategy and server set-up (replicas, split,
//! shared state or not), one column per outage length and end — green where
//! the cell met its goals, red where not, with the value written in it (or
//! how many clients gave up).

use plotters::coord::Shift;
use plotters::prelude::*;

use super::{DrawResult, Figure};
use crate::report::FieldReport;
use crate::scenario::field::FieldCell;

pub(super) struct Field<'a>(pub(super) &'a FieldReport);

/// A row: strategy, replicas, split, coordination.
type Row<'a> = (&'a str, u32, &'a str, &'a str);

fn row_of(c: &FieldCell) -> Row<'_> {
    (c.strategy.as_str(), c.replicas, c.split, c.coordination)
}

fn label(r: &Row<'_>) -> String {
    match r.0 {
        "full+hold" => format!(
            "hold, {} x{}{}",
            r.2,
            r.1,
            if r.3 == "shared" { ", shared" } else { "" }
        ),
        "full+throttle" => "throttle (client side)".to_owned(),
        other => format!("{other} (baseline)"),
    }
}

fn shade(c: &FieldCell) -> RGBColor {
    match (c.verdict, c.drain_vs_limit) {
        ("baseline", _) => RGBColor(215, 215, 215),
        ("met", Some(d)) => {
            let k = ((1.3 - d) / 0.3).clamp(0.0, 1.0);
            RGBColor(
                (200.0 - 90.0 * k) as u8,
                (235.0 - 30.0 * k) as u8,
                (200.0 - 90.0 * k) as u8,
            )
        }
        ("met", None) => RGBColor(200, 235, 200),
        _ => RGBColor(240, 140, 130),
    }
}

impl Figure for Field<'_> {
    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> DrawResult
    where
        DB::ErrorType: 'static,
    {
        let r = self.0;
        let mut rows: Vec<Row<'_>> = Vec::new();
        let mut columns: Vec<(f64, &str)> = Vec::new();
        for c in &r.cells {
            if !rows.contains(&row_of(c)) {
                rows.push(row_of(c));
            }
            if !columns.contains(&(c.outage_s, c.outage_end)) {
                columns.push((c.outage_s, c.outage_end));
            }
        }
        root.fill(&WHITE)?;
        let (top, body) = root.split_vertically(56);
        let met: usize = r.met.iter().map(|m| m.met).sum();
        let judged: usize = r.met.iter().map(|m| m.cells).sum();
        top.titled(
            &format!(
                "field: drain / (T + N/C) per cell, {met} of {judged} cells meet their goals ({} clients, {} calls/s; seed {})",
                r.parameters.clients, r.parameters.capacity_per_s, r.seed
            ),
            ("sans-serif", 17),
        )?;
        let font = ("sans-serif", 12).into_font();
        let (w, h) = body.dim_in_pixel();
        let (left, head) = (170i32, 40i32);
        let cw = (w as i32 - left - 10) / columns.len().max(1) as i32;
        let ch = ((h as i32 - head - 10) / rows.len().max(1) as i32).max(12);
        for (j, (t, end)) in columns.iter().enumerate() {
            let x = left + j as i32 * cw + 4;
            body.draw(&Text::new(format!("{t} s"), (x, 4), font.clone()))?;
            body.draw(&Text::new((*end).to_owned(), (x, 20), font.clone()))?;
        }
        for (i, row) in rows.iter().enumerate() {
            let y = head + i as i32 * ch;
            body.draw(&Text::new(label(row), (6, y + ch / 2 - 6), font.clone()))?;
            for (j, col) in columns.iter().enumerate() {
                let x = left + j as i32 * cw;
                let Some(c) = r
                    .cells
                    .iter()
                    .find(|c| row_of(c) == *row && (c.outage_s, c.outage_end) == *col)
                else {
                    continue;
                };
                body.draw(&Rectangle::new(
                    [(x + 1, y + 1), (x + cw - 1, y + ch - 1)],
                    shade(c).filled(),
                ))?;
                let text = match c.drain_vs_limit {
                    Some(d) => format!("{d:.2}"),
                    None => format!("{} gave up", c.gave_up),
                };
                body.draw(&Text::new(text, (x + 4, y + ch / 2 - 6), font.clone()))?;
            }
        }
        Ok(())
    }
}
