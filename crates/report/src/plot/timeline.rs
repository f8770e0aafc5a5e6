//! The timeline overview: a lane per host thread and GPU stream (grouped
//! by process, in rank order), time left to right, coloured by function.
//!
//! The functions with the most time in the picture get a colour each
//! ([`PALETTE`], by total time), the rest share one grey; the legend lists
//! the coloured ones with their share and kind, and the grey only when
//! something is grey. A pixel column of a lane is a small stacked bar: each
//! function's share of the column's time is that share of the lane's
//! height, so a column that is 30 % `MPI_Recv` and 70 % computation shows
//! both (no majority vote that turns a busy run into one colour), and
//! time in no region is left blank.
//!
//! Memory is bounded by the picture and the functions, not the trace: each
//! lane keeps, per pixel column, the time of each function seen there. A
//! lane's time between two consecutive events belongs to its innermost
//! open region, so nested calls (a driver call inside a runtime call, a
//! send inside a collective) count once, as the innermost. The picture is
//! `width` × (48 + lane height × lanes + legend) px: lanes are 20 px
//! high, less (down to 3 px, labels then thinned out) when there are many.

use std::collections::HashMap;
use std::path::Path;

use crate::{Error, Result};
use otf2::reader::{EventContext, EventVisitor};
use otf2::{LocationRef, RegionRef};
use plotters::prelude::*;

use super::{FONT, nice_step, register_font, time_label, write_png};
use crate::model::{LocationKind, Model, RegionKind};
use crate::window::Window;

const LABEL_WIDTH: u32 = 230;
const RIGHT: u32 = 16;
const TOP: u32 = 48;
const AXIS: u32 = 40;
const LEGEND_ROW: u32 = 20;
const MAX_HEIGHT: u32 = 8000;

/// The colours of the functions with the most time, in that order:
/// distinct on screen and in print, none of them grey.
pub const PALETTE: [RGBColor; 12] = [
    RGBColor(31, 119, 180),
    RGBColor(255, 127, 14),
    RGBColor(44, 160, 44),
    RGBColor(214, 39, 40),
    RGBColor(148, 103, 189),
    RGBColor(140, 86, 75),
    RGBColor(227, 119, 194),
    RGBColor(188, 189, 34),
    RGBColor(23, 190, 207),
    RGBColor(174, 199, 232),
    RGBColor(255, 187, 120),
    RGBColor(152, 223, 138),
];

/// The colour of every function beyond the palette.
pub const OTHER: RGBColor = RGBColor(150, 150, 150);

/// A colour of the legend: one function, or all the others.
#[derive(Clone, Debug, PartialEq)]
pub struct Class {
    /// The function's name, or `N other functions`.
    pub name: String,
    /// What kind of work it is (`MPI`, `kernel`...), empty for the others.
    pub kind: &'static str,
    /// Its time in the picture, over all lanes (s).
    pub seconds: f64,
    pub color: RGBColor,
}

/// What `gputrace plot` drew, for the line it prints and for tests.
#[derive(Clone, Debug)]
pub struct TimelineFacts {
    pub lanes: usize,
    /// The time axis, ns since the trace's start.
    pub start_ns: u64,
    pub end_ns: u64,
    /// The legend, in order: coloured functions by time, then the grey
    /// others when there are any.
    pub classes: Vec<Class>,
}

/// Per pixel column, the time (in columns' widths) of each region there.
type Columns = Vec<Vec<(u32, f32)>>;

struct Lane {
    label: String,
    columns: Columns,
}

/// Accumulates one location into its lane.
struct LanePass<'a> {
    columns: &'a mut Columns,
    /// The time span the columns cover, in ticks.
    start: u64,
    ticks_per_column: f64,
    stack: Vec<RegionRef>,
    last: u64,
}

impl LanePass<'_> {
    /// Adds [from, to) to the region on top of the stack.
    fn span(&mut self, to: u64) {
        let from = std::mem::replace(&mut self.last, to);
        let Some(&region) = self.stack.last() else { return };
        if to <= from {
            return;
        }
        let n = self.columns.len();
        let x0 = (from.saturating_sub(self.start)) as f64 / self.ticks_per_column;
        let x1 = (to.saturating_sub(self.start)) as f64 / self.ticks_per_column;
        let (c0, c1) = (x0.floor() as usize, (x1.ceil() as usize).min(n));
        for c in c0.min(n)..c1 {
            let overlap = (x1.min(c as f64 + 1.0) - x0.max(c as f64)).max(0.0) as f32;
            let column = &mut self.columns[c];
            match column.iter_mut().find(|(r, _)| *r == region.id()) {
                Some((_, t)) => *t += overlap,
                None => column.push((region.id(), overlap)),
            }
        }
    }
}

impl EventVisitor for LanePass<'_> {
    fn enter(&mut self, ev: &EventContext<'_>, region: RegionRef) {
        self.span(ev.time);
        self.stack.push(region);
    }

    fn leave(&mut self, ev: &EventContext<'_>, region: RegionRef) {
        self.span(ev.time);
        if let Some(depth) = self.stack.iter().rposition(|r| *r == region) {
            self.stack.truncate(depth);
        }
    }
}

/// A short name for a kind of work, for the legend.
fn kind_label(kind: RegionKind) -> &'static str {
    match kind {
        RegionKind::Kernel => "kernel",
        RegionKind::Graph => "CUDA graph",
        RegionKind::Copy(_) | RegionKind::Memset => "GPU memory",
        RegionKind::Mpi => "MPI",
        RegionKind::Nccl => "NCCL",
        RegionKind::Sync => "CUDA sync",
        RegionKind::CudaApi => "CUDA API",
        RegionKind::Nvtx => "NVTX",
        RegionKind::CudaMemory => "CUDA memory",
        RegionKind::Other => "code",
    }
}

/// The legend for functions with these total times: the `PALETTE.len()`
/// longest (ties by name) a colour each, in that order, and one grey class
/// for the rest when there is a rest. Returns the classes and, for each
/// function given, its class.
pub fn classify(functions: &[(String, &'static str, f64)]) -> (Vec<Class>, Vec<usize>) {
    let mut order: Vec<usize> = (0..functions.len()).filter(|&i| functions[i].2 > 0.0).collect();
    order.sort_by(|&a, &b| functions[b].2.total_cmp(&functions[a].2).then_with(|| functions[a].0.cmp(&functions[b].0)));
    let coloured = order.len().min(PALETTE.len());
    let mut classes: Vec<Class> = order[..coloured]
        .iter()
        .zip(PALETTE)
        .map(|(&i, color)| Class { name: functions[i].0.clone(), kind: functions[i].1, seconds: functions[i].2, color })
        .collect();
    let mut class_of = vec![usize::MAX; functions.len()];
    for (c, &i) in order[..coloured].iter().enumerate() {
        class_of[i] = c;
    }
    let rest = &order[coloured..];
    if !rest.is_empty() {
        let seconds = rest.iter().map(|&i| functions[i].2).sum();
        let name = format!("{} other function{}", rest.len(), if rest.len() == 1 { "" } else { "s" });
        classes.push(Class { name, kind: "", seconds, color: OTHER });
        for &i in rest {
            class_of[i] = coloured;
        }
    }
    (classes, class_of)
}

/// `gputrace plot -o FILE`: the timeline of what `window` holds of
/// `input`, as a PNG.
pub fn timeline(input: &Path, output: &Path, width: u32, window: &Window) -> Result<TimelineFacts> {
    let width = width.clamp(400, 16000);
    let mut reader = crate::open(input)?;
    let model = Model::new(reader.defs());
    let cut = window.resolve(&model)?;
    let plot_width = (width - LABEL_WIDTH - RIGHT) as usize;

    // Lanes: per process, its host threads, then its streams.
    let mut order: Vec<(usize, bool, LocationRef)> = model
        .locations
        .iter()
        .filter(|(_, l)| l.kind != LocationKind::Metrics && cut.keeps_process(l.process))
        .map(|(r, l)| (l.process, l.kind == LocationKind::GpuStream, *r))
        .collect();
    order.sort();
    if order.is_empty() {
        return Err(Error::NothingToShow(format!("{}: the archive has no thread or stream to draw", input.display())));
    }
    let (start, end) = cut.ticks(&model);
    let ticks_per_column = (end - start) as f64 / plot_width as f64;
    // Time per (region, stream or not), over all lanes, in columns.
    let mut totals: HashMap<(u32, bool), f64> = HashMap::new();
    let mut lanes = Vec::with_capacity(order.len());
    let mut on_stream_of_lane = Vec::with_capacity(order.len());
    for &(process, on_stream, loc) in &order {
        let mut columns = vec![Vec::new(); plot_width];
        let mut pass = LanePass { columns: &mut columns, start, ticks_per_column, stack: Vec::new(), last: start };
        cut.read_location(&mut reader, loc, &mut pass).map_err(|e| crate::read_error(&reader, loc, e))?;
        for &(r, t) in columns.iter().flatten() {
            *totals.entry((r, on_stream)).or_default() += f64::from(t);
        }
        let label = format!("{}  {}", model.process_label(process), model.locations[&loc].name);
        lanes.push(Lane { label, columns });
        on_stream_of_lane.push(on_stream);
    }

    // A function is a name and a kind: a region on a stream (a kernel) and
    // on a thread (its launch, by the same name in some archives) differ.
    let seconds_per_column = ticks_per_column / model.resolution as f64;
    let mut functions: Vec<(String, &'static str, f64)> = Vec::new();
    let mut function_of: HashMap<(u32, bool), usize> = HashMap::new();
    let mut by_name: HashMap<(String, &'static str), usize> = HashMap::new();
    for (&(r, on_stream), &t) in &totals {
        let info = model.region(RegionRef::from_id(r));
        let name = info.map_or_else(|| format!("region {r}"), |i| i.name.clone());
        let kind = kind_label(info.map_or(RegionKind::Other, |i| if on_stream { i.on_stream } else { i.on_host }));
        let f = *by_name.entry((name.clone(), kind)).or_insert_with(|| {
            functions.push((name, kind, 0.0));
            functions.len() - 1
        });
        functions[f].2 += t * seconds_per_column;
        function_of.insert((r, on_stream), f);
    }
    let (classes, class_of) = classify(&functions);
    let classes_of_lanes: Vec<Vec<Vec<(usize, f32)>>> = lanes
        .iter()
        .zip(&on_stream_of_lane)
        .map(|(lane, &on_stream)| {
            lane.columns
                .iter()
                .map(|col| {
                    let mut shares: Vec<(usize, f32)> = Vec::with_capacity(col.len());
                    for &(r, t) in col {
                        let class = class_of[function_of[&(r, on_stream)]];
                        match shares.iter_mut().find(|(c, _)| *c == class) {
                            Some((_, s)) => *s += t,
                            None => shares.push((class, t)),
                        }
                    }
                    // The same order in every column: the legend's.
                    shares.sort_by_key(|(c, _)| *c);
                    shares
                })
                .collect()
        })
        .collect();

    let lane_h = ((MAX_HEIGHT - TOP - AXIS) / lanes.len() as u32).clamp(3, 20);
    let legend_rows = classes.len().div_ceil(3) as u32;
    let height = TOP + lane_h * lanes.len() as u32 + AXIS + LEGEND_ROW * legend_rows + 12;
    let mut rgb = vec![255u8; (width * height * 3) as usize];
    let facts = TimelineFacts { lanes: lanes.len(), start_ns: cut.start_ns, end_ns: cut.end_ns, classes };
    let seconds = (facts.end_ns - facts.start_ns) as f64 / 1e9;
    let windowed = if cut.is_timed() || window.ranks.is_some() { " (window)" } else { "" };
    let title = format!(
        "{}  —  {} lanes, {}{windowed}",
        reader.anchor_path().display(),
        lanes.len(),
        time_label(seconds, nice_step(seconds, 10.0) / 10.0)
    );
    let labels: Vec<&str> = lanes.iter().map(|l| l.label.as_str()).collect();
    draw(&mut rgb, (width, height), lane_h, &labels, &classes_of_lanes, &facts, &title)?;
    write_png(output, width, height, &rgb)?;
    Ok(facts)
}

fn draw(
    rgb: &mut [u8],
    (width, height): (u32, u32),
    lane_h: u32,
    labels: &[&str],
    lanes: &[Vec<Vec<(usize, f32)>>],
    facts: &TimelineFacts,
    title: &str,
) -> Result<()> {
    register_font();
    let root = BitMapBackend::with_buffer(rgb, (width, height)).into_drawing_area();
    let err = |e: DrawingAreaErrorKind<_>| Error::Draw { what: "timeline", detail: format!("{e:?}") };
    let x0 = LABEL_WIDTH as i32;
    let text = |size: u32| (FONT, size).into_font().color(&BLACK);
    root.draw(&Text::new(title.to_owned(), (8, 8), text(15))).map_err(err)?;

    let label_every = (12 / lane_h as usize).max(1);
    let pad = if lane_h >= 8 { 2 } else { 0 };
    let bar = (lane_h as i32 - 2 * pad) as f32;
    for (i, columns) in lanes.iter().enumerate() {
        let y = (TOP + lane_h * i as u32) as i32;
        let shade = if i % 2 == 0 { RGBColor(244, 244, 244) } else { RGBColor(232, 232, 232) };
        root.draw(&Rectangle::new([(x0, y), (width as i32 - RIGHT as i32, y + lane_h as i32)], shade.filled()))
            .map_err(err)?;
        let bottom = y + lane_h as i32 - pad;
        for (c, shares) in columns.iter().enumerate() {
            // Stacked from the bottom, each class its share of the height;
            // rounding carried on so that the column's total is exact.
            let x = x0 + c as i32;
            let (mut acc, mut drawn) = (0f32, 0i32);
            for &(class, share) in shares {
                acc += share.min(1.0) * bar;
                let top = (acc.round() as i32).min(bar as i32);
                if top > drawn {
                    let color = facts.classes[class].color;
                    root.draw(&Rectangle::new([(x, bottom - top), (x + 1, bottom - drawn)], color.filled()))
                        .map_err(err)?;
                    drawn = top;
                }
            }
        }
        if i % label_every == 0 {
            let mut label = labels[i].to_owned();
            if label.chars().count() > 34 {
                label = format!("{}…", label.chars().take(33).collect::<String>());
            }
            let size = lane_h.clamp(9, 13);
            root.draw(&Text::new(label, (6, y + (lane_h as i32 - size as i32) / 2), text(size))).map_err(err)?;
        }
    }

    // Time axis under the lanes, in time since the trace's start.
    let axis_y = (TOP + lane_h * lanes.len() as u32) as i32 + 4;
    let plot_w = (width - LABEL_WIDTH - RIGHT) as f64;
    root.draw(&PathElement::new(vec![(x0, axis_y), (width as i32 - RIGHT as i32, axis_y)], BLACK)).map_err(err)?;
    let (t0, t1) = (facts.start_ns as f64 / 1e9, facts.end_ns as f64 / 1e9);
    let span = (t1 - t0).max(1e-9);
    let step = nice_step(span, 10.0);
    let mut t = (t0 / step).ceil() * step;
    while t <= t1 + span * 1e-4 {
        let x = x0 + ((t - t0) / span * plot_w) as i32;
        root.draw(&PathElement::new(vec![(x, axis_y), (x, axis_y + 5)], BLACK)).map_err(err)?;
        root.draw(&Text::new(time_label(t, step), (x - 12, axis_y + 8), text(12))).map_err(err)?;
        t += step;
    }

    // Legend: the classes present, three to a row, with their share.
    let total: f64 = facts.classes.iter().map(|c| c.seconds).sum();
    let legend_y = axis_y + AXIS as i32 - 8;
    let column_w = (width as i32 - 16) / 3;
    for (k, class) in facts.classes.iter().enumerate() {
        let (x, y) = (8 + column_w * (k % 3) as i32, legend_y + LEGEND_ROW as i32 * (k / 3) as i32);
        root.draw(&Rectangle::new([(x, y), (x + 14, y + 14)], class.color.filled())).map_err(err)?;
        let share = if total > 0.0 { class.seconds * 100.0 / total } else { 0.0 };
        let kind = if class.kind.is_empty() { String::new() } else { format!(" ({})", class.kind) };
        let mut name = class.name.clone();
        let room = (column_w as usize / 7).saturating_sub(kind.len() + 10).max(8);
        if name.chars().count() > room {
            name = format!("{}…", name.chars().take(room - 1).collect::<String>());
        }
        root.draw(&Text::new(format!("{name}{kind} {share:.1}%"), (x + 19, y), text(13))).map_err(err)?;
    }
    root.present().map_err(err)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn f(name: &str, kind: &'static str, s: f64) -> (String, &'static str, f64) {
        (name.to_owned(), kind, s)
    }

    #[test]
    fn the_longest_functions_get_a_colour_each_and_the_rest_one_grey() {
        // 14 functions: the 12 longest coloured by time, 2 grey.
        let mut functions: Vec<_> = (0..14).map(|i| f(&format!("fn{i:02}"), "code", 1.0 + i as f64)).collect();
        functions.push(f("never", "MPI", 0.0));
        let (classes, class_of) = classify(&functions);
        assert_eq!(classes.len(), 13);
        assert_eq!(classes[0].name, "fn13");
        assert_eq!(classes[0].color, PALETTE[0]);
        assert_eq!(classes[11].name, "fn02");
        assert_eq!(classes[12].name, "2 other functions");
        assert_eq!(classes[12].color, OTHER);
        assert_eq!(classes[12].seconds, 1.0 + 2.0);
        assert_eq!(class_of[13], 0);
        assert_eq!((class_of[0], class_of[1]), (12, 12));
        // A function with no time in the picture is in no class.
        assert_eq!(class_of[14], usize::MAX);
        // Distinct colours, none of them the others' grey.
        let mut colours: Vec<_> = classes[..12].iter().map(|c| (c.color.0, c.color.1, c.color.2)).collect();
        colours.sort_unstable();
        colours.dedup();
        assert_eq!(colours.len(), 12);
        assert!(!PALETTE.contains(&OTHER));
    }

    #[test]
    fn a_legend_lists_only_what_is_there() {
        let (classes, _) = classify(&[f("MPI_Recv", "MPI", 2.0), f("main", "code", 3.0)]);
        let names: Vec<&str> = classes.iter().map(|c| c.name.as_str()).collect();
        assert_eq!(names, ["main", "MPI_Recv"], "no grey class without others, no GPU class without GPUs");
        // Equal times: by name, so the picture does not change between runs.
        let (classes, _) = classify(&[f("b", "MPI", 1.0), f("a", "MPI", 1.0)]);
        assert_eq!(classes[0].name, "a");
    }
}
