//! A source is declared once (raw's table of sources, `raw::source`):
//! the files outside a source's own crates that wire it in — that name
//! its producer id, its paradigm, its configuration variable or field,
//! its library, the variable that loads it or its stream stem — are
//! listed here for every source, and for NVTX (a source of the size a
//! new one would have) they must stay few. Test code (`tests/`, a file's
//! `#[cfg(test)]` module) does not count: tests name what they test.

use std::path::{Path, PathBuf};

use crate::util::*;

/// What wires source `s` in, as its words appear in code.
fn wiring(s: &raw::source::Source) -> Vec<String> {
    let variant = format!("{:?}", s.producer);
    let mut words = vec![
        format!("Producer::{variant}"),
        format!("Paradigm::{variant}"),
        format!("GPUTRACE_{}_ENABLE", s.name),
        format!("{}_enable", s.stem),
        format!("\"{}\"", s.stem),
        s.loaded_by.to_string(),
    ];
    words.extend(s.library.map(|l| l.trim_end_matches(".so").to_string()));
    words
}

/// The code of `path` before its test module.
fn code(path: &Path) -> String {
    let text = std::fs::read_to_string(path).unwrap();
    match text.find("#[cfg(test)]\nmod tests") {
        Some(i) => text[..i].to_string(),
        None => text,
    }
}

fn sources_of(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap() {
        let path = e.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        if path.is_dir() && name != "tests" && name != "target" {
            sources_of(&path, out);
        } else if name.ends_with(".rs") && name != "tests.rs" {
            out.push(path);
        }
    }
}

/// The files outside `own` (a source's crates) that name its wiring.
fn files_wiring(s: &raw::source::Source, own: &str, files: &[PathBuf]) -> Vec<String> {
    let root = workspace();
    let words = wiring(s);
    let mut hits: Vec<String> = files
        .iter()
        .map(|f| f.strip_prefix(&root).unwrap().to_string_lossy().into_owned())
        .filter(|rel| !rel.starts_with(own))
        .filter(|rel| {
            let text = code(&root.join(rel));
            words.iter().any(|w| text.contains(w.as_str()))
        })
        .collect();
    hits.sort();
    hits
}

#[test]
fn a_source_is_wired_in_at_most_six_files_outside_its_crates() {
    let mut files = Vec::new();
    sources_of(&workspace().join("crates"), &mut files);
    let mut nvtx = Vec::new();
    for s in &raw::source::SOURCES {
        let own = format!("crates/producers/{}/", s.stem);
        let hits = files_wiring(s, &own, &files);
        eprintln!("{} ({}), {} files outside {own}:\n  {}", s.name, wiring(s).join(" "), hits.len(), hits.join("\n  "));
        if s.producer == raw::Producer::Nvtx {
            nvtx = hits;
        }
    }
    // raw's table and paradigm, the configuration's variable and field,
    // the command line's switch.
    assert!(!nvtx.is_empty() && nvtx.len() <= 6, "NVTX is wired in {} files: {nvtx:#?}", nvtx.len());
    assert!(nvtx.contains(&"crates/raw/src/source.rs".to_string()), "{nvtx:?}");
}

/// The configuration knows every source by its table stem
/// (`Config::records` matches the stems, as the configuration crate does
/// not read raw's table): each is recorded under the default settings but
/// sampling, off until asked for (`GPUTRACE_SAMPLING`), and a stem the
/// table does not have is not.
#[test]
fn the_configuration_knows_every_source_by_its_stem() {
    let config = config::Config::from_pairs(&[]).unwrap();
    let sampling = config::Config::from_pairs(&[("GPUTRACE_SAMPLING".into(), "1ms".into())]).unwrap();
    for s in &raw::source::SOURCES {
        let on = if s.producer == raw::Producer::Sampling { &sampling } else { &config };
        assert!(on.records(s.stem), "{} ({}) is not recorded when asked for", s.name, s.stem);
    }
    assert!(!config.records("sampling"));
    assert!(!config.records("synthetic") && !config.records("hip"));
}
