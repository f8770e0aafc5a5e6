//! The sample as OTF2's reference tool, `otf2-print`, sees it.

use std::collections::BTreeMap;
use std::process::Command;

use crate::fixture::{self, TempDir};

fn otf2_print(args: &[&str], anchor: &std::path::Path) -> String {
    let out = Command::new("otf2-print")
        .args(args)
        .arg(anchor)
        .output()
        .expect("otf2-print not runnable: install otf2-tools");
    assert!(out.status.success(), "otf2-print failed: {}", String::from_utf8_lossy(&out.stderr));
    assert!(out.stderr.is_empty(), "otf2-print complained: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap()
}

/// `MPI_COLLECTIVE_END` -> `MpiCollectiveEnd`, the Python class name the
/// fixture uses for kinds.
fn camel(kind: &str) -> String {
    kind.split('_')
        .map(|part| {
            let lower = part.to_ascii_lowercase();
            let mut chars = lower.chars();
            chars.next().map(|c| c.to_ascii_uppercase().to_string() + chars.as_str()).unwrap_or_default()
        })
        .collect()
}

/// Event lines: (kind, location, timestamp, rest).
fn event_lines(output: &str) -> Vec<(String, u64, u64, String)> {
    output
        .lines()
        .filter_map(|line| {
            let mut fields = line.split_whitespace();
            let kind = fields.next()?;
            let location = fields.next()?.parse().ok()?;
            let time = fields.next()?.parse().ok()?;
            kind.chars()
                .all(|c| c.is_ascii_uppercase() || c == '_')
                .then(|| (camel(kind), location, time, fields.collect::<Vec<_>>().join(" ")))
        })
        .collect()
}

#[test]
fn events_and_counts_match() {
    let dir = TempDir::new("print");
    let sample = fixture::write_sample(dir.path()).unwrap();
    let output = otf2_print(&[], &sample.anchor);
    let events = event_lines(&output);

    let mut counts = BTreeMap::new();
    for (kind, location, _, _) in &events {
        *counts.entry((*location, kind.clone())).or_default() += 1;
    }
    assert_eq!(counts, sample.counts(), "{output}");

    let find = |kind: &str| events.iter().find(|e| e.0 == kind).unwrap_or_else(|| panic!("no {kind} in\n{output}"));
    let send = find("MpiSend");
    assert_eq!((send.1, send.2), (fixture::location_id(0, 0), 21));
    for part in ["Receiver: 1", "Communicator: \"MPI_COMM_WORLD\"", "Tag: 42", "Length: 1024"] {
        assert!(send.3.contains(part), "{part} missing in {send:?}");
    }
    let recv = find("MpiRecv");
    // Written at 25 on rank 1, whose clock offsets add 5.
    assert_eq!((recv.1, recv.2), (fixture::location_id(1, 0), 25 + fixture::RANK1_OFFSET as u64));
    assert!(recv.3.contains("Sender: 0") && recv.3.contains("Tag: 42"), "{recv:?}");
    let put = find("RmaPut");
    for part in ["Window: \"MPI_Win\"", "Remote: 1", "Bytes: 4096", "Matching: 7"] {
        assert!(put.3.contains(part), "{part} missing in {put:?}");
    }
    let end = find("MpiCollectiveEnd");
    assert!(end.3.contains("Operation: ALLREDUCE") && end.3.contains("Sent: 8"), "{end:?}");
    let metric = find("Metric");
    assert!(metric.3.contains("UINT64; 4096") && metric.3.contains("DOUBLE; 42.5"), "{metric:?}");
    assert!(output.contains("(\"grid\" <0>; UINT32; 128)"), "{output}");
    assert!(output.contains("STRING; \"saxpy_kernel\""), "{output}");
}

#[test]
fn definitions_match() {
    let dir = TempDir::new("print-defs");
    let sample = fixture::write_sample(dir.path()).unwrap();
    let output = otf2_print(&["-G"], &sample.anchor);
    let definitions: Vec<&str> = output
        .lines()
        .skip_while(|line| !line.starts_with("-----"))
        .skip(1)
        .filter(|line| !line.trim().is_empty())
        .collect();
    assert!(definitions[0].starts_with("CLOCK_PROPERTIES"), "{output}");
    assert!(definitions[0].contains("Length: 1000"), "{output}");

    for (id, events) in &sample.events {
        let line = definitions
            .iter()
            .find(|l| l.starts_with("LOCATION ") && l.split_whitespace().nth(1) == Some(&id.to_string()))
            .unwrap_or_else(|| panic!("no location {id} in\n{output}"));
        assert!(line.contains(&format!("# Events: {},", events.len())), "{line}");
    }
    // Every kind of definition the fixture made, in dependency order.
    let order = [
        "CLOCK_PROPERTIES",
        "STRING",
        "PARADIGM",
        "ATTRIBUTE",
        "SYSTEM_TREE_NODE",
        "SYSTEM_TREE_NODE_PROPERTY",
        "SYSTEM_TREE_NODE_DOMAIN",
        "LOCATION_GROUP",
        "LOCATION_GROUP_PROPERTY",
        "LOCATION",
        "LOCATION_PROPERTY",
        "REGION",
        "GROUP",
        "COMM",
        "RMA_WIN",
        "METRIC_MEMBER",
        "METRIC_CLASS",
        "METRIC_INSTANCE",
    ];
    let first = |kind: &str| {
        definitions
            .iter()
            .position(|l| l.split_whitespace().next() == Some(kind))
            .unwrap_or_else(|| panic!("no {kind} in\n{output}"))
    };
    for pair in order.windows(2) {
        assert!(first(pair[0]) < first(pair[1]), "{} after {}\n{output}", pair[0], pair[1]);
    }
}

#[test]
fn every_location_has_event_and_definition_files() {
    let dir = TempDir::new("files");
    let sample = fixture::write_sample(dir.path()).unwrap();
    for id in sample.events.keys() {
        for ext in ["evt", "def"] {
            let file = dir.path().join("traces").join(format!("{id}.{ext}"));
            assert!(file.is_file(), "{} missing", file.display());
        }
    }
    assert!(dir.path().join("traces.def").is_file());
}
