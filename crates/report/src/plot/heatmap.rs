//! Heatmaps of the communication matrices: a square cell per (sender,
//! receiver) pair, its colour the bytes sent, white where nothing was
//! sent; labels on both axes and a colour bar that says its range.
//!
//! The scale is honest ([`Scale`]): linear from 0 to the largest cell
//! (pale yellow → dark blue), so cells of near-equal traffic look equal
//! — a scale stretched between the smallest and largest cell made a
//! matrix whose cells differ by 0.03 % look as uneven as it can. Only when
//! the cells span more than [`LOG_ABOVE`]× does the scale turn
//! logarithmic, and then the bar and the title say from what to what.

use std::path::Path;

use crate::{Error, Result};
use plotters::prelude::*;

use super::{FONT, register_font, write_png};
use crate::stats::collect;
use crate::table::human_bytes;
use crate::window::Window;

/// Cells spanning more than this ratio (largest to smallest non-zero) are
/// drawn on a logarithmic scale: on a linear one most would be the
/// palest colour.
pub const LOG_ABOVE: f64 = 100.0;

/// How bytes map to colours.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Scale {
    /// 0 → the palest colour, `max` → the darkest.
    Linear { max: u128 },
    /// `min` → the palest, `max` → the darkest, logarithmic between.
    Log { min: u128, max: u128 },
}

impl Scale {
    /// The scale for these cells (zeros are white, outside any scale).
    pub fn of(values: &[u128]) -> Scale {
        let (min, max) = values.iter().filter(|v| **v > 0).fold((u128::MAX, 0), |(lo, hi), &v| (lo.min(v), hi.max(v)));
        if max > 0 && max as f64 > LOG_ABOVE * min as f64 { Scale::Log { min, max } } else { Scale::Linear { max } }
    }

    /// Where `v` is on the colour ramp, 0 to 1.
    pub fn fraction(self, v: u128) -> f64 {
        match self {
            Scale::Linear { max } if max > 0 => v as f64 / max as f64,
            Scale::Linear { .. } => 0.0,
            Scale::Log { min, max } => {
                let (lmin, lmax) = ((min as f64).ln(), (max as f64).ln());
                (((v.max(1) as f64).ln() - lmin) / (lmax - lmin)).clamp(0.0, 1.0)
            }
        }
    }

    /// The ends of the colour bar.
    pub fn range(self) -> (u128, u128) {
        match self {
            Scale::Linear { max } => (0, max),
            Scale::Log { min, max } => (min, max),
        }
    }

    /// The scale in words: `linear, 0 to 1.2 MiB`.
    pub fn describe(self) -> String {
        let (lo, hi) = self.range();
        let kind = if matches!(self, Scale::Log { .. }) { "logarithmic" } else { "linear" };
        format!("{kind}, {} to {}", human_bytes(lo), human_bytes(hi))
    }
}

/// What `gputrace plot --matrix` drew.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct HeatmapFacts {
    pub cells: usize,
    pub scale: Scale,
}

/// `gputrace plot --matrix mpi|gpu -o FILE`, of what `window` holds.
pub fn heatmap(input: &Path, output: &Path, which: &str, window: &Window) -> Result<HeatmapFacts> {
    let mut reader = crate::open(input)?;
    let c = collect::collect_in(&mut reader, false, window)?;
    let (labels, values, title): (Vec<String>, Vec<u128>, &str) = match which {
        "mpi" => (
            (0..c.mpi.n).map(|i| c.model.process_label(i)).collect(),
            (0..c.mpi.n * c.mpi.n).map(|k| c.mpi.cell(k / c.mpi.n, k % c.mpi.n).bytes).collect(),
            "MPI point-to-point bytes (row: sender, column: receiver)",
        ),
        _ => (
            c.model.gpus.iter().map(|g| g.label.clone()).collect(),
            (0..c.gpu.n * c.gpu.n).map(|k| c.gpu.total(k / c.gpu.n, k % c.gpu.n)).collect(),
            "Bytes between GPUs, peer copies + NCCL (row: source, column: destination)",
        ),
    };
    if values.iter().all(|v| *v == 0) {
        return Err(Error::NothingToShow(format!(
            "{}: the archive has no {} traffic to draw",
            reader.anchor_path().display(),
            which.to_uppercase()
        )));
    }
    let n = labels.len();
    let cell = (720 / n as u32).clamp(3, 64);
    let label_w = 150;
    let (top, bottom, right) = (64, 70, 40);
    let width = (label_w + cell * n as u32 + right).max(640);
    let height = top + cell * n as u32 + bottom + label_w / 2;
    let mut rgb = vec![255u8; (width * height * 3) as usize];
    let scale = Scale::of(&values);
    draw(&mut rgb, (width, height), (label_w, top, cell), &labels, &values, title, scale)?;
    write_png(output, width, height, &rgb)?;
    Ok(HeatmapFacts { cells: n * n, scale })
}

/// Pale yellow → green → dark blue, for t in [0, 1].
fn ramp(t: f64) -> RGBColor {
    const STOPS: [(f64, f64, f64); 3] = [(255.0, 237.0, 160.0), (65.0, 182.0, 196.0), (8.0, 29.0, 88.0)];
    let t = t.clamp(0.0, 1.0) * 2.0;
    let i = (t.floor() as usize).min(1);
    let f = t - i as f64;
    let (a, b) = (STOPS[i], STOPS[i + 1]);
    let mix = |x: f64, y: f64| (x + (y - x) * f).round() as u8;
    RGBColor(mix(a.0, b.0), mix(a.1, b.1), mix(a.2, b.2))
}

fn draw(
    rgb: &mut [u8],
    size: (u32, u32),
    (label_w, top, cell): (u32, u32, u32),
    labels: &[String],
    values: &[u128],
    title: &str,
    scale: Scale,
) -> Result<()> {
    register_font();
    let root = BitMapBackend::with_buffer(rgb, size).into_drawing_area();
    let err = |e: DrawingAreaErrorKind<_>| Error::Draw { what: "heatmap", detail: format!("{e:?}") };
    let text = |s: u32| (FONT, s).into_font().color(&BLACK);
    root.draw(&Text::new(title.to_owned(), (8, 8), text(15))).map_err(err)?;
    let n = labels.len();
    let fraction = |v: u128| scale.fraction(v);
    let (x0, y0, c) = (label_w as i32, top as i32, cell as i32);
    let every = (14 / cell as usize).max(1);
    for i in 0..n {
        for j in 0..n {
            let v = values[i * n + j];
            let color = if v == 0 { RGBColor(255, 255, 255) } else { ramp(fraction(v)) };
            let (x, y) = (x0 + j as i32 * c, y0 + i as i32 * c);
            root.draw(&Rectangle::new([(x, y), (x + c, y + c)], color.filled())).map_err(err)?;
            if cell >= 8 {
                root.draw(&Rectangle::new([(x, y), (x + c, y + c)], RGBColor(210, 210, 210))).map_err(err)?;
            }
            // Values in cells wide enough to hold them, light on dark.
            if cell >= 56 && v > 0 {
                let ink = if fraction(v) > 0.5 { WHITE } else { BLACK };
                let style = (FONT, 11).into_font().color(&ink);
                root.draw(&Text::new(human_bytes(v), (x + 4, y + c / 2 - 6), style)).map_err(err)?;
            }
        }
        if i % every == 0 {
            let size = cell.clamp(9, 13);
            let y = y0 + i as i32 * c + (c - size as i32) / 2;
            root.draw(&Text::new(labels[i].clone(), (6, y), text(size))).map_err(err)?;
            // Column labels, written downwards under the grid.
            let x = x0 + i as i32 * c + (c - size as i32) / 2;
            let style = text(size).transform(FontTransform::Rotate90);
            root.draw(&Text::new(labels[i].clone(), (x + size as i32, y0 + n as i32 * c + 6), style)).map_err(err)?;
        }
    }
    // Colour bar.
    let bar_y = y0 + n as i32 * c + label_w as i32 / 2 + 16;
    let bar_w = 300;
    for k in 0..bar_w {
        let color = ramp(k as f64 / (bar_w - 1) as f64);
        root.draw(&Rectangle::new([(x0 + k, bar_y), (x0 + k + 1, bar_y + 14)], color.filled())).map_err(err)?;
    }
    let (lo, hi) = scale.range();
    root.draw(&Text::new(human_bytes(lo), (x0 - 70, bar_y), text(12))).map_err(err)?;
    let kind = if matches!(scale, Scale::Log { .. }) { "logarithmic scale" } else { "linear scale from 0" };
    root.draw(&Text::new(format!("{} ({kind}; white: none)", human_bytes(hi)), (x0 + bar_w + 8, bar_y), text(12)))
        .map_err(err)?;
    root.present().map_err(err)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn near_equal_cells_look_equal_and_a_wide_range_says_so() {
        // A CG-like matrix: neighbours exchange within 0.03 % of each other.
        let cells = [0, 1_000_000, 1_000_300, 0, 999_900, 0];
        let scale = Scale::of(&cells);
        assert_eq!(scale, Scale::Linear { max: 1_000_300 });
        assert_eq!(scale.range(), (0, 1_000_300));
        let fractions: Vec<f64> = cells.iter().filter(|v| **v > 0).map(|&v| scale.fraction(v)).collect();
        let spread =
            fractions.iter().cloned().fold(f64::MIN, f64::max) - fractions.iter().cloned().fold(f64::MAX, f64::min);
        assert!(spread < 0.001, "{fractions:?}");
        assert_eq!(scale.describe(), "linear, 0 B to 976.9 KiB");
        // Cells from 10 B to 1 MiB: logarithmic, with its ends.
        let scale = Scale::of(&[10, 1 << 20, 0]);
        assert_eq!(scale, Scale::Log { min: 10, max: 1 << 20 });
        assert_eq!((scale.fraction(10), scale.fraction(1 << 20)), (0.0, 1.0));
        assert!(scale.describe().starts_with("logarithmic, 10 B to 1.0 MiB"));
        // 100x exactly is still linear; one cell alone is the top.
        assert!(matches!(Scale::of(&[1, 100]), Scale::Linear { .. }));
        assert_eq!(Scale::of(&[7]).fraction(7), 1.0);
    }
}
