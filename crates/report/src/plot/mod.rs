//! `gputrace plot`: PNG pictures of an archive — a timeline overview
//! ([`timeline`]), heatmaps of the communication matrices ([`heatmap`])
//! and line plots of the GPU metrics over time ([`metrics`]).
//!
//! Drawing uses `plotters` on an in-memory RGB buffer with an embedded
//! font (DejaVu Sans, from the `dejavu` crate), so it works headless and
//! needs no system fonts; the buffer is written with the `png` crate.

mod heatmap;
mod metrics;
mod timeline;

use crate::output::OutputFile;
use std::io::BufWriter;
use std::path::Path;
use std::sync::Once;

use crate::{Error, Result};

pub use heatmap::{HeatmapFacts, Scale, heatmap};
pub use metrics::metrics;
pub use timeline::{Class, TimelineFacts, timeline};

/// The font family every text of a plot uses.
const FONT: &str = "sans-serif";

/// Registers the embedded font with plotters, once per process.
fn register_font() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        // The font is compiled in and known to parse; a failure would only
        // mean text is not drawn, so it is not an error.
        let _ = plotters::style::register_font(FONT, plotters::style::FontStyle::Normal, dejavu::sans::regular());
    });
}

/// Writes an RGB buffer as a PNG file.
fn write_png(path: &Path, width: u32, height: u32, rgb: &[u8]) -> Result<()> {
    // Renamed into place when complete: a link at `path` is replaced,
    // never written through (see `output`).
    let mut file = OutputFile::create(path).map_err(|source| Error::Create { path: path.to_path_buf(), source })?;
    let mut encoder = png::Encoder::new(BufWriter::new(&mut file), width, height);
    encoder.set_color(png::ColorType::Rgb);
    encoder.set_depth(png::BitDepth::Eight);
    let written = (|| {
        let mut writer = encoder.write_header()?;
        writer.write_image_data(rgb)?;
        writer.finish()
    })();
    written.map_err(|e| Error::writing(path)(e.into()))?;
    file.commit().map_err(|e| Error::writing(path)(e.into()))
}

/// Tick spacing for an axis spanning `span`: 1, 2 or 5 × a power of ten,
/// giving at most about `max_ticks` ticks.
fn nice_step(span: f64, max_ticks: f64) -> f64 {
    let raw = span / max_ticks.max(1.0);
    let mag = 10f64.powf(raw.log10().floor());
    [1.0, 2.0, 5.0, 10.0].iter().map(|m| m * mag).find(|s| *s >= raw).unwrap_or(10.0 * mag)
}

/// A time in seconds, in a readable unit.
fn time_label(s: f64, step: f64) -> String {
    let (scale, unit) = if step >= 0.1 {
        (1.0, "s")
    } else if step >= 1e-4 {
        (1e3, "ms")
    } else if step >= 1e-7 {
        (1e6, "us")
    } else {
        (1e9, "ns")
    };
    let v = s * scale;
    let step_scaled = step * scale;
    let decimals = if step_scaled >= 1.0 { 0 } else { (-step_scaled.log10().floor()) as usize };
    format!("{v:.decimals$} {unit}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn axis_steps() {
        assert_eq!(nice_step(10.0, 10.0), 1.0);
        assert_eq!(nice_step(0.15, 10.0), 0.02);
        assert_eq!(time_label(0.004, 0.002), "4 ms");
        assert_eq!(time_label(1.5, 0.5), "1.5 s");
    }
}
