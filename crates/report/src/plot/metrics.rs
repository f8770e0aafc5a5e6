//! Line plots of the GPU metrics sampled over time (utilization, memory
//! in use, SM clock, power, temperature — whatever the archive's `GPU
//! metrics` locations hold): one panel per metric, stacked, time on a
//! shared horizontal axis, a line per GPU in its own colour with a legend.

use std::path::Path;

use crate::{Error, Result};
use plotters::prelude::*;

use super::{FONT, register_font, write_png};
use crate::numbers::{human_bytes, thousands};
use crate::stats::collect::{self, MetricSeries};

const PANEL_HEIGHT: u32 = 220;
const TOP: u32 = 40;

/// One colour per GPU, cycled: the timeline's palette.
const COLOURS: &[RGBColor] = &super::timeline::PALETTE;

/// `gputrace plot --metrics -o FILE`: the samples inside `window`.
pub fn metrics(input: &Path, output: &Path, width: u32, window: &crate::window::Window) -> Result<()> {
    let mut reader = crate::open(input)?;
    let c = collect::collect_in(&mut reader, false, window)?;
    // Metric name -> (GPU label, series), metrics in the order of their
    // first appearance by name, GPUs in the archive's order.
    let mut panels: Vec<(String, Vec<(String, &MetricSeries)>)> = Vec::new();
    for ((gpu, name), series) in &c.gpu_metrics {
        if series.points.is_empty() {
            continue;
        }
        let label = c.model.gpus.get(*gpu).map_or_else(|| format!("GPU {gpu}"), |g| g.label.clone());
        match panels.iter_mut().find(|(n, _)| n == name) {
            Some((_, lines)) => lines.push((label, series)),
            None => panels.push((name.clone(), vec![(label, series)])),
        }
    }
    if panels.is_empty() {
        return Err(Error::NothingToShow(format!(
            "{}: the archive has no GPU metrics to draw (sampled with GPUTRACE_GPU_METRICS_INTERVAL \
             while a process used a GPU)",
            reader.anchor_path().display()
        )));
    }
    panels.sort_by_key(|(name, _)| order(name));
    let end = panels
        .iter()
        .flat_map(|(_, lines)| lines.iter().filter_map(|(_, s)| s.points.last().map(|p| p.0)))
        .max()
        .unwrap_or(0)
        .max(1);
    let width = width.max(480);
    let height = TOP + PANEL_HEIGHT * panels.len() as u32;
    let mut rgb = vec![255u8; (width * height * 3) as usize];
    draw(&mut rgb, (width, height), &panels, end)
        .map_err(|e| Error::Draw { what: "metrics plot", detail: e.to_string() })?;
    write_png(output, width, height, &rgb)
}

/// Utilization first, then memory, clock, power, temperature, the rest.
fn order(name: &str) -> (usize, String) {
    let rank = ["GPU utilization", "GPU memory utilization", "GPU memory used", "SM clock", "GPU power"]
        .iter()
        .position(|n| *n == name)
        .unwrap_or(5);
    (rank, name.to_string())
}

type Panels<'a> = [(String, Vec<(String, &'a MetricSeries)>)];

fn draw(
    rgb: &mut [u8],
    size: (u32, u32),
    panels: &Panels<'_>,
    end_ns: u64,
) -> std::result::Result<(), Box<dyn std::error::Error>> {
    register_font();
    let root = BitMapBackend::with_buffer(rgb, size).into_drawing_area();
    let (title, body) = root.split_vertically(TOP);
    title.draw_text("GPU metrics over time (NVML samples)", &(FONT, 20).into_font().color(&BLACK), (12, 10))?;
    let end_s = end_ns as f64 / 1e9;
    for (area, (name, lines)) in body.split_evenly((panels.len(), 1)).iter().zip(panels) {
        let unit = lines.first().map_or("", |(_, s)| s.unit.as_str()).to_string();
        let max = lines.iter().map(|(_, s)| s.max).max().unwrap_or(0);
        let min = lines.iter().map(|(_, s)| s.min).min().unwrap_or(0);
        // Percentages on 0..100; others from 0 (or just below the least
        // value for clocks and temperatures far from 0) to above the most.
        let (lo, hi) = if unit == "%" {
            (0.0, 100.0)
        } else {
            let span = (max - min) as f64;
            let lo = if (min as f64) > 2.0 * span && span > 0.0 { min as f64 - span * 0.2 } else { 0.0 };
            (lo, (max as f64 + span * 0.1).max(lo + 1.0))
        };
        let mut chart = ChartBuilder::on(area)
            .margin(8)
            .caption(format!("{name} ({unit})"), (FONT, 15))
            .x_label_area_size(28)
            .y_label_area_size(90)
            .build_cartesian_2d(0.0..end_s.max(1e-6), lo..hi)?;
        let bytes = unit == "bytes";
        chart
            .configure_mesh()
            .light_line_style(WHITE.mix(0.0))
            .x_desc("s since the trace's start")
            .y_label_formatter(&|v| if bytes { human_bytes(*v as u64) } else { thousands(*v as u64) })
            .label_style((FONT, 12))
            .draw()?;
        for (i, (label, series)) in lines.iter().enumerate() {
            let colour = COLOURS[i % COLOURS.len()];
            let points = series.points.iter().map(|&(t, v)| (t as f64 / 1e9, v as f64));
            chart
                .draw_series(LineSeries::new(points, colour.stroke_width(2)))?
                .label(label.clone())
                .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 18, y)], colour.stroke_width(2)));
        }
        chart
            .configure_series_labels()
            .background_style(WHITE.mix(0.8))
            .border_style(BLACK.mix(0.3))
            .label_font((FONT, 12))
            .position(SeriesLabelPosition::UpperRight)
            .draw()?;
    }
    root.present()?;
    Ok(())
}
