//! The sample as OTF2's Python bindings (`import otf2`, the reader Score-P
//! users script against) see it, through `count_events.py`.

use std::collections::BTreeMap;
use std::process::Command;

use crate::fixture::{self, TempDir};

const SCRIPT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/archive/count_events.py");

#[test]
fn python_reader_sees_the_sample() {
    let dir = TempDir::new("python");
    let sample = fixture::write_sample(dir.path()).unwrap();
    let out = Command::new("/usr/bin/python3")
        .arg(SCRIPT)
        .arg(&sample.anchor)
        .output()
        .expect("/usr/bin/python3 not runnable");
    let stdout = String::from_utf8(out.stdout).unwrap();
    assert!(
        out.status.success(),
        "count_events.py failed (is python3-otf2 installed?):\n{}",
        String::from_utf8_lossy(&out.stderr)
    );

    let mut counts = BTreeMap::new();
    let mut facts: BTreeMap<&str, Vec<Vec<&str>>> = BTreeMap::new();
    for line in stdout.lines() {
        let fields: Vec<&str> = line.split_whitespace().collect();
        match fields.as_slice() {
            ["count", location, kind, n] => {
                counts.insert((location.parse::<u64>().unwrap(), kind.to_string()), n.parse::<usize>().unwrap());
            }
            [fact, rest @ ..] => facts.entry(fact).or_default().push(rest.to_vec()),
            [] => {}
        }
    }
    assert_eq!(counts, sample.counts(), "{stdout}");

    let master0 = fixture::location_id(0, 0).to_string();
    let master1 = fixture::location_id(1, 0).to_string();
    assert_eq!(facts["send"], vec![vec![master0.as_str(), "1", "MPI_COMM_WORLD", "42", "1024"]]);
    assert_eq!(facts["recv"], vec![vec![master1.as_str(), "0", "MPI_COMM_WORLD", "42", "1024"]]);
    assert_eq!(facts["put"], vec![vec![master0.as_str(), "MPI_Win", "1", "4096", "7"]]);
    assert_eq!(facts["metric"], vec![vec![master0.as_str(), "4096", "42.5"]]);
    assert_eq!(facts["collective"].len(), 2);
    assert!(facts["collective"].iter().all(|c| c[1..] == ["ALLREDUCE", "MPI_COMM_WORLD", "8", "8"]));
    assert_eq!(
        facts["attr"],
        vec![vec![master0.as_str(), "grid", "128"], vec![master0.as_str(), "kernel", fixture::KERNEL_NAME]]
    );
    // The location definitions carry the counts the writers measured.
    for (id, events) in &sample.events {
        let line = facts["events"].iter().find(|f| f[0] == id.to_string()).unwrap();
        assert_eq!(line[1], events.len().to_string());
    }
}
