//! The timeline overview: a lane per host thread and GPU stream (grouped
//! by process, in rank order), time left to right, each pixel column
//! coloured by the kind of work that took most of its time there.
//!
//! Memory is bounded by the picture, not the trace: each lane keeps, per
//! pixel column, the time spent in each kind of work (8 × f32). A lane's
//! time between two consecutive events belongs to its innermost open
//! region, so nested calls (a driver call inside a runtime call, a send
//! inside a collective) count once, as the innermost. The picture is
//! `width` × (48 + lane height × lanes + 64) px: lanes are 20 px high, less
//! (down to 3 px, labels then thinned out) when there are many.

use std::path::Path;

use crate::{Error, Result};
use otf2::reader::{EventContext, EventVisitor};
use otf2::{LocationRef, RegionRef};
use plotters::prelude::*;

use super::{Activity, FONT, nice_step, register_font, time_label, write_png};
use crate::model::{LocationKind, Model, RegionKind};

const LABEL_WIDTH: u32 = 230;
const RIGHT: u32 = 16;
const TOP: u32 = 48;
const BOTTOM: u32 = 64;
const MAX_HEIGHT: u32 = 8000;

/// Per pixel column, the time (s) in each activity.
type Columns = Vec<[f32; 8]>;

struct Lane {
    label: String,
    columns: Columns,
}

/// Accumulates one location into its lane.
struct LanePass<'a> {
    model: &'a Model,
    on_stream: bool,
    columns: &'a mut Columns,
    /// The time span the columns cover, in ticks.
    start: u64,
    ticks_per_column: f64,
    stack: Vec<(RegionRef, Activity)>,
    last: u64,
}

impl LanePass<'_> {
    /// Adds [from, to) to the activity on top of the stack.
    fn span(&mut self, to: u64) {
        let from = std::mem::replace(&mut self.last, to);
        let Some(&(_, activity)) = self.stack.last() else { return };
        if to <= from {
            return;
        }
        let a = activity as usize;
        let n = self.columns.len();
        let x0 = (from.saturating_sub(self.start)) as f64 / self.ticks_per_column;
        let x1 = (to.saturating_sub(self.start)) as f64 / self.ticks_per_column;
        let (c0, c1) = (x0.floor() as usize, (x1.ceil() as usize).min(n));
        for c in c0.min(n)..c1 {
            let overlap = (x1.min(c as f64 + 1.0) - x0.max(c as f64)).max(0.0);
            self.columns[c][a] += overlap as f32;
        }
    }
}

impl EventVisitor for LanePass<'_> {
    fn enter(&mut self, ev: &EventContext<'_>, region: RegionRef) {
        self.span(ev.time);
        let kind = self
            .model
            .region(region)
            .map_or(RegionKind::Other, |r| if self.on_stream { r.on_stream } else { r.on_host });
        self.stack.push((region, Activity::of(kind)));
    }

    fn leave(&mut self, ev: &EventContext<'_>, region: RegionRef) {
        self.span(ev.time);
        if let Some(depth) = self.stack.iter().rposition(|(r, _)| *r == region) {
            self.stack.truncate(depth);
        }
    }
}

/// `gputrace plot -o FILE`: the timeline of `input` as a PNG.
pub fn timeline(input: &Path, output: &Path, width: u32) -> Result<()> {
    let width = width.clamp(400, 16000);
    let mut reader = crate::open(input)?;
    let model = Model::new(reader.defs());
    let plot_width = (width - LABEL_WIDTH - RIGHT) as usize;

    // Lanes: per process, its host threads, then its streams.
    let mut order: Vec<(usize, bool, LocationRef)> = model
        .locations
        .iter()
        .filter(|(_, l)| l.kind != LocationKind::Metrics)
        .map(|(r, l)| (l.process, l.kind == LocationKind::GpuStream, *r))
        .collect();
    order.sort();
    if order.is_empty() {
        return Err(Error::NothingToShow(format!("{}: the archive has no thread or stream to draw", input.display())));
    }
    let (start, length) = (model.origin, model.length.max(1));
    let ticks_per_column = length as f64 / plot_width as f64;
    let mut lanes = Vec::with_capacity(order.len());
    for &(process, on_stream, loc) in &order {
        let mut columns = vec![[0f32; 8]; plot_width];
        let mut pass = LanePass {
            model: &model,
            on_stream,
            columns: &mut columns,
            start,
            ticks_per_column,
            stack: Vec::new(),
            last: start,
        };
        reader.read_location(loc, &mut pass).map_err(|e| crate::read_error(&reader, loc, e))?;
        let label = format!("{}  {}", model.process_label(process), model.locations[&loc].name);
        lanes.push(Lane { label, columns });
    }

    let lane_h = ((MAX_HEIGHT - TOP - BOTTOM) / lanes.len() as u32).clamp(3, 20);
    let height = TOP + lane_h * lanes.len() as u32 + BOTTOM;
    let mut rgb = vec![255u8; (width * height * 3) as usize];
    let seconds = length as f64 / model.resolution as f64;
    let title = format!(
        "{}  —  {} lanes, {}",
        reader.anchor_path().display(),
        lanes.len(),
        time_label(seconds, nice_step(seconds, 10.0) / 10.0)
    );
    draw(&mut rgb, width, height, lane_h, &lanes, seconds, &title)?;
    write_png(output, width, height, &rgb)
}

fn draw(rgb: &mut [u8], width: u32, height: u32, lane_h: u32, lanes: &[Lane], seconds: f64, title: &str) -> Result<()> {
    register_font();
    let root = BitMapBackend::with_buffer(rgb, (width, height)).into_drawing_area();
    let err = |e: DrawingAreaErrorKind<_>| Error::Draw { what: "timeline", detail: format!("{e:?}") };
    let x0 = LABEL_WIDTH as i32;
    let text = |size: u32| (FONT, size).into_font().color(&BLACK);
    root.draw(&Text::new(title.to_owned(), (8, 8), text(15))).map_err(err)?;

    let label_every = (12 / lane_h as usize).max(1);
    for (i, lane) in lanes.iter().enumerate() {
        let y = (TOP + lane_h * i as u32) as i32;
        let shade = if i % 2 == 0 { RGBColor(244, 244, 244) } else { RGBColor(232, 232, 232) };
        root.draw(&Rectangle::new([(x0, y), (width as i32 - RIGHT as i32, y + lane_h as i32)], shade.filled()))
            .map_err(err)?;
        for (c, col) in lane.columns.iter().enumerate() {
            let (best, t) = col.iter().enumerate().fold((0, 0f32), |b, (k, &t)| if t > b.1 { (k, t) } else { b });
            if t <= 0.0 {
                continue;
            }
            let color = Activity::ALL[best].color();
            let x = x0 + c as i32;
            let pad = if lane_h >= 8 { 2 } else { 0 };
            root.draw(&Rectangle::new([(x, y + pad), (x + 1, y + lane_h as i32 - pad)], color.filled()))
                .map_err(err)?;
        }
        if i % label_every == 0 {
            let mut label = lane.label.clone();
            if label.chars().count() > 34 {
                label = format!("{}…", label.chars().take(33).collect::<String>());
            }
            let size = lane_h.clamp(9, 13);
            root.draw(&Text::new(label, (6, y + (lane_h as i32 - size as i32) / 2), text(size))).map_err(err)?;
        }
    }

    // Time axis under the lanes.
    let axis_y = (TOP + lane_h * lanes.len() as u32) as i32 + 4;
    let plot_w = (width - LABEL_WIDTH - RIGHT) as f64;
    root.draw(&PathElement::new(vec![(x0, axis_y), (width as i32 - RIGHT as i32, axis_y)], BLACK)).map_err(err)?;
    let step = nice_step(seconds, 10.0);
    let mut t = 0.0;
    while t <= seconds * 1.0001 {
        let x = x0 + (t / seconds * plot_w) as i32;
        root.draw(&PathElement::new(vec![(x, axis_y), (x, axis_y + 5)], BLACK)).map_err(err)?;
        root.draw(&Text::new(time_label(t, step), (x - 12, axis_y + 8), text(12))).map_err(err)?;
        t += step;
    }

    // Legend.
    let legend_y = axis_y + 32;
    let mut x = 8;
    for a in Activity::ALL {
        root.draw(&Rectangle::new([(x, legend_y), (x + 14, legend_y + 14)], a.color().filled())).map_err(err)?;
        root.draw(&Text::new(a.label(), (x + 19, legend_y), text(13))).map_err(err)?;
        x += 24 + 8 * a.label().len() as i32;
    }
    root.present().map_err(err)?;
    Ok(())
}
