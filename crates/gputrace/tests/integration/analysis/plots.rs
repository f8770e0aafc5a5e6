//! What is drawn: `gputrace plot`'s timeline PNGs (a lane per location,
//! a colour per function) and heatmaps, decoded; ViTE's rendering of the
//! ViTE copy that `export --format vite-otf2` writes.

use std::collections::HashSet;
use std::path::Path;
use std::process::Command;

use super::{cuda_run, gpu_pair, p2p_run};
use crate::util::*;

/// Decodes a PNG: (width, height, distinct colours).
fn decode_png(path: &Path) -> (u32, u32, HashSet<[u8; 3]>) {
    let decoder = png::Decoder::new(std::io::BufReader::new(std::fs::File::open(path).unwrap()));
    let mut reader = decoder.read_info().unwrap();
    let mut buf = vec![0; reader.output_buffer_size().unwrap()];
    let info = reader.next_frame(&mut buf).unwrap();
    assert_eq!(info.color_type, png::ColorType::Rgb);
    let colors = buf[..info.buffer_size()].chunks(3).map(|c| [c[0], c[1], c[2]]).collect();
    (info.width, info.height, colors)
}

/// The timeline's colours, in the order of the functions' time
/// (`report::plot::timeline::PALETTE`), and the grey of the rest.
const PALETTE: [[u8; 3]; 12] = [
    [31, 119, 180],
    [255, 127, 14],
    [44, 160, 44],
    [214, 39, 40],
    [148, 103, 189],
    [140, 86, 75],
    [227, 119, 194],
    [188, 189, 34],
    [23, 190, 207],
    [174, 199, 232],
    [255, 187, 120],
    [152, 223, 138],
];
const OTHER_GREY: [u8; 3] = [150, 150, 150];

#[test]
fn timeline_pngs_have_a_lane_per_location_and_a_colour_per_function() {
    // (input, lanes, kinds the legend must name)
    let cases: [(&Path, usize, &[&str]); 3] = [
        (&p2p_run().0, 4, &["MPI"]),
        (&cuda_run().0, 4, &["kernel", "GPU memory", "CUDA API"]),
        (&gpu_pair().anchor, 4, &["kernel", "GPU memory", "MPI", "NCCL", "CUDA API"]),
    ];
    for (i, (input, lanes, kinds)) in cases.into_iter().enumerate() {
        let png = scratch().join(format!("timeline{i}.png"));
        let out = ok(gt(&["plot", "-o", s(&png), s(input)]));
        // `... colours by time: NAME SHARE % (KIND), ...`: what the legend lists.
        let line = text(&out.stderr);
        let legend = line.trim_end().trim_end_matches(')').split("colours by time: ").nth(1).unwrap().to_owned();
        let classes: Vec<&str> = legend.split("), ").collect();
        for kind in kinds {
            assert!(classes.iter().any(|c| c.ends_with(&format!("({kind}"))), "{kind}: {line}");
        }
        let grey = classes.last().is_some_and(|c| c.ends_with("(grey"));
        assert_eq!(grey, classes.len() > 12, "a grey class only beyond 12 functions: {line}");
        let (w, h, seen) = decode_png(&png);
        let rows = classes.len().div_ceil(3) as u32;
        assert_eq!((w, h), (1600, 48 + 20 * lanes as u32 + 40 + 20 * rows + 12), "{}", input.display());
        // Each listed function's colour is in the picture (in the legend
        // at least), in order of time; no colour of an absent class.
        let coloured = classes.len().min(12) - usize::from(grey && classes.len() <= 12);
        for (k, c) in PALETTE.iter().enumerate() {
            assert_eq!(seen.contains(c), k < coloured, "{}: colour {k} {c:?}: {line}", input.display());
        }
        // (The grey is also among the shades of anti-aliased text.)
        assert!(!grey || seen.contains(&OTHER_GREY), "{line}");
    }
}

#[test]
fn heatmaps_show_who_sent_to_whom() {
    for (input, which) in [(&p2p_run().0, "mpi"), (&gpu_pair().anchor, "gpu"), (&gpu_pair().anchor, "mpi")] {
        let png = scratch().join(format!("heat-{which}.png"));
        ok(gt(&["plot", "--matrix", which, "-o", s(&png), s(input)]));
        let (w, h, seen) = decode_png(&png);
        assert!(w >= 640 && h >= 300, "{w}x{h}");
        assert!(seen.len() > 20, "{} colours", seen.len());
        assert!(seen.contains(&[255, 255, 255]), "empty cells are white");
    }
    // An archive without the traffic: a clear error, no picture.
    let out = gt(&["plot", "--matrix", "gpu", "-o", s(&scratch().join("none.png")), s(&p2p_run().0)]);
    assert_eq!(out.status.code(), Some(1));
    assert!(text(&out.stderr).contains("no GPU traffic"), "{}", text(&out.stderr));
}

/// ViTE draws the ViTE copy: an SVG with states and, for MPI, messages.
fn vite_svg(anchor: &Path, name: &str) -> Option<String> {
    if !required("ViTE (Debian package vite)", have("vite")) {
        return None;
    }
    let svg = scratch().join(format!("{name}.svg"));
    let out = Command::new("timeout")
        .args(["120", "vite"])
        .arg(anchor)
        .arg("-e")
        .arg(&svg)
        .env("QT_QPA_PLATFORM", "offscreen")
        .env("XDG_RUNTIME_DIR", scratch())
        .output()
        .unwrap();
    assert!(out.status.success(), "vite on {}: {:?}\n{}", anchor.display(), out.status, text(&out.stdout));
    Some(std::fs::read_to_string(&svg).unwrap())
}

#[test]
fn vite_renders_the_vite_copy() {
    let cases = [
        (p2p_run().0.join("traces.otf2"), "p2p", true),
        (cuda_run().0.join("traces.otf2"), "cuda", false),
        (gpu_pair().anchor.clone(), "gpus", true),
    ];
    for (anchor, name, has_messages) in cases {
        let copy = fresh_dir(&format!("an-vite-{name}"));
        let out = ok(gt(&["export", "--format", "vite-otf2", "-o", s(&copy), s(&anchor)]));
        assert!(text(&out.stderr).contains("traces.otf2"));
        // The copy is a valid archive for OTF2's own reader: the same
        // regions, messages and metrics as the original, no RMA.
        let (a, b) = (otf2_print_counts(&anchor), otf2_print_counts(&copy.join("traces.otf2")));
        for kind in ["ENTER", "LEAVE", "MPI_SEND", "MPI_RECV", "METRIC"] {
            assert_eq!(a.get(kind), b.get(kind), "{name}: {kind}");
        }
        assert!(!b.contains_key("RMA_PUT") && !b.contains_key("RMA_GET"), "{name}: {b:?}");
        let Some(svg) = vite_svg(&copy.join("traces.otf2"), name) else { return };
        // States are the rectangles inside the clipped drawing area.
        let states =
            svg.split("clip-path=\"url(#stateArea)\"").skip(1).map(|g| g.matches("<rect").count()).sum::<usize>();
        assert!(states >= 20, "{name}: {states} states drawn");
        if has_messages {
            assert!(svg.matches("<line").count() >= 10, "{name}: no message arrows");
        }
        if name == "gpus" {
            // The NVLink counters, drawn as step lines on their containers.
            assert!(svg.contains("NVLink GPU 0"), "{name}");
            assert!(svg.matches("<line").count() >= 60, "{name}: no metric lines");
        }
    }
    // The original is untouched by the export.
    assert!(!p2p_run().0.join("traces.otf2.vite").exists());
}
