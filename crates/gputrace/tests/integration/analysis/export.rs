//! `gputrace export --format chrome` (and names through `stats --format
//! csv`): every region a slice, every message and GPU launch a flow that
//! pairs up and never ends before it starts, counters, and odd names
//! carried exactly, read back by serde_json and Python.

use std::collections::{HashMap, HashSet};
use std::path::Path;
use std::process::Command;

use serde_json::Value;

use super::{archives, cuda_run, gpu_pair, int, p2p_run, stats, traced};
use crate::util::*;

/// Reads a Chrome JSON export (gzipped or not).
fn chrome(input: &Path, output: &Path) -> Vec<Value> {
    ok(gt(&["export", "--format", "chrome", "-o", s(output), s(input)]));
    let bytes = std::fs::read(output).unwrap();
    let json: Value = if output.extension().is_some_and(|e| e == "gz") {
        serde_json::from_reader(flate2::read::GzDecoder::new(&bytes[..])).unwrap()
    } else {
        serde_json::from_slice(&bytes).unwrap()
    };
    json["traceEvents"].as_array().unwrap().clone()
}

fn phases(events: &[Value], ph: &str) -> Vec<Value> {
    events.iter().filter(|e| e["ph"] == ph).cloned().collect()
}

/// Every flow start has one end with its id, and the other way round.
fn assert_flows_pair_up(events: &[Value]) -> usize {
    let ids = |ph: &str| -> Vec<u64> { phases(events, ph).iter().map(|e| e["id"].as_u64().unwrap()).collect() };
    let (starts, ends) = (ids("s"), ids("f"));
    let set: HashSet<u64> = starts.iter().copied().collect();
    assert_eq!(set.len(), starts.len(), "flow ids are unique");
    assert_eq!(set, ends.iter().copied().collect::<HashSet<u64>>());
    assert!(phases(events, "f").iter().all(|e| e["bp"] == "e"));
    starts.len()
}

/// A multi-threaded ping-pong (`mt_pingpong.c`: two threads per rank,
/// on a tag each, then on one tag together): every message the export,
/// the analysis and the matrix pair is paired with the send its receive
/// got, so no arrow ends before it starts. Paired per thread as the
/// locations were read, the second thread's receives got the sends of
/// the first thread's later messages (4,000 of 16,000 backward by up to
/// 4 ms at `-n 2000`).
#[test]
fn multi_threaded_ping_pong_has_no_message_backward_in_time() {
    let n = 300i64;
    let (dir, stdout) = traced("an-mt-pingpong", "mt_pingpong.c", 2, &n.to_string());
    let counters = program_counters(&stdout);
    let sends: i64 = counters.values().map(|c| c["sends"]).sum();
    assert_eq!(sends, 2 * 2 * 2 * n, "{stdout}");
    // The export: a flow per message, none ending before it starts.
    let events = chrome(&dir, &scratch().join("mt-pingpong.json"));
    assert_eq!(assert_flows_pair_up(&events) as i64, sends);
    let at = |ph: &str| -> HashMap<u64, f64> {
        phases(&events, ph)
            .iter()
            .filter(|e| e["cat"] == "mpi")
            .map(|e| (e["id"].as_u64().unwrap(), e["ts"].as_f64().unwrap()))
            .collect()
    };
    let (starts, ends) = (at("s"), at("f"));
    let backward: Vec<f64> = starts.iter().map(|(id, t)| ends[id] - t).filter(|d| *d < 0.0).collect();
    assert!(backward.is_empty(), "{} of {} flows end before they start: {backward:?}", backward.len(), starts.len());
    // The analysis pairs the same way, and says so.
    let out = ok(gt(&["analyze", "--format", "json", s(&dir)]));
    let analysis: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(analysis["messages"]["matched"].as_i64(), Some(sends), "{}", analysis["messages"]);
    assert_eq!(analysis["messages"]["received_before_sent"].as_i64(), Some(0), "{}", analysis["notes"]);
    // The matrix counts sends (it pairs nothing): what each rank sent.
    let st = stats(&dir, &["mpi_matrix"]);
    for (rank, c) in &counters {
        let me = format!("rank {rank}");
        let row = st["mpi_matrix"]["rows"].as_array().unwrap().iter().find(|r| r["Sender"] == me.as_str()).cloned();
        assert_eq!(row.map(|r| int(&r, "Messages")), Some(c["sends"]), "{me}");
    }
}

#[test]
fn chrome_export_of_p2p_has_every_region_and_message() {
    let (dir, _) = p2p_run();
    let events = chrome(dir, &scratch().join("p2p.json.gz"));
    let f = facts(&dir.join("traces.otf2"));
    let enters: i64 = f["regions"]
        .as_object()
        .unwrap()
        .values()
        .flat_map(|r| r.as_object().unwrap().values())
        .map(|v| v.as_i64().unwrap())
        .sum();
    // Every region a slice; the analysis tracks' slices apart.
    let slices = phases(&events, "X");
    assert_eq!(slices.iter().filter(|e| e["cat"] != "analysis").count() as i64, enters);
    assert_eq!(assert_flows_pair_up(&events), messages(&f, "sends").len());
    let names = phases(&events, "M");
    assert_eq!(names.iter().filter(|e| e["name"] == "process_name").count(), 4);
    assert!(names.iter().any(|e| e["name"] == "thread_name" && e["args"]["name"] == "Master thread"));
    // Timestamps agree with the Python reader's: the first enters of rank 2.
    let script = r#"
import otf2, sys
from otf2.events import Enter
with otf2.reader.open(sys.argv[1]) as t:
    origin = t.definitions.clock_properties.global_offset
    n = 0
    for loc, ev in t.events:
        if loc.group.name == "MPI Rank 2" and isinstance(ev, Enter) and n < 5:
            print(ev.region.name, ev.time - origin)
            n += 1
"#;
    let out = Command::new("/usr/bin/python3").arg("-c").arg(script).arg(dir.join("traces.otf2")).output().unwrap();
    let lines = text(&out.stdout);
    assert_eq!(lines.lines().count(), 5, "{}", text(&out.stderr));
    for line in lines.lines() {
        let (region, ns) = line.rsplit_once(' ').unwrap();
        let ns: u64 = ns.parse().unwrap();
        let found = phases(&events, "X").iter().any(|e| {
            e["pid"] == 3 && e["name"] == region && (e["ts"].as_f64().unwrap() * 1000.0 - ns as f64).abs() < 0.5
        });
        assert!(found, "no slice {region} at {ns} ns on rank 2");
    }
}

#[test]
fn chrome_export_of_cuda_joins_launches_to_kernels() {
    let (dir, expected) = cuda_run();
    let events = chrome(dir, &scratch().join("cuda.json"));
    let expect = |key: &str| -> usize {
        expected
            .lines()
            .find(|l| l.starts_with(&format!("expect {key} ")))
            .unwrap()
            .rsplit(' ')
            .next()
            .unwrap()
            .parse()
            .unwrap()
    };
    let gpu_work = expect("kernels")
        + ["HtoD", "DtoH", "DtoD", "HtoH"].iter().map(|k| expect(&format!("copies {k}"))).sum::<usize>()
        + expect("memsets");
    assert_eq!(assert_flows_pair_up(&events), gpu_work);
    // Each flow ends on a stream track at the start of a kernel or copy,
    // and starts inside a CUDA API slice of the host thread.
    let x = phases(&events, "X");
    for f in phases(&events, "f") {
        let slice = x.iter().find(|e| e["tid"] == f["tid"] && e["ts"] == f["ts"]).unwrap();
        assert!(["kernel", "memcpy", "memset"].contains(&slice["cat"].as_str().unwrap()), "{slice}");
        assert!(slice["args"]["CUDA correlation id"].is_u64());
    }
    for st in phases(&events, "s") {
        let (ts, tid) = (st["ts"].as_f64().unwrap(), &st["tid"]);
        assert!(x.iter().any(|e| &e["tid"] == tid && e["cat"] == "cuda_api" && e["ts"].as_f64().unwrap() <= ts));
    }
    let kernels = x.iter().filter(|e| e["cat"] == "kernel").count();
    assert_eq!(kernels, expect("kernels"));
    let k = x.iter().find(|e| e["cat"] == "kernel").unwrap();
    assert!(k["args"]["grid x"].is_u64() && k["dur"].as_f64().unwrap() > 0.0, "{k}");
}

#[test]
fn chrome_export_of_two_gpus_has_counters_and_both_kinds_of_flows() {
    let g = gpu_pair();
    let events = chrome(&g.anchor, &scratch().join("gpus.json"));
    let n = g.iterations as usize;
    // Flows: 2 kernels + 1 peer copy, 1 MPI and 1 NCCL message per iteration.
    assert_eq!(assert_flows_pair_up(&events), 5 * n);
    let counters = phases(&events, "C");
    assert_eq!(counters.len(), 4 * n);
    let last_sent = counters
        .iter()
        .filter(|c| c["name"] == "NVLink sent (NVLink GPU 0)")
        .map(|c| c["args"]["value"].as_u64().unwrap())
        .max();
    assert_eq!(last_sent, Some(g.nvlink.0));
}

/// Names with quotes, backslashes, control characters and non-ASCII come
/// back from the Chrome JSON as they were, read by Python's json module
/// and by serde_json.
#[test]
fn chrome_export_carries_odd_names_exactly() {
    let anchor = archives::odd_names(&fresh_dir("an-odd"), 3);
    let odd = |what: &str| format!("{} {what}", archives::ODD_NAME);
    let json = scratch().join("odd.json");
    let events = chrome(&anchor, &json);
    let slices = phases(&events, "X");
    let named = |name: &str| slices.iter().filter(|e| e["name"] == name).count();
    assert_eq!((named(&odd("region")), named(&odd("kernel"))), (3, 3), "{slices:?}");
    let kernel = slices.iter().find(|e| e["name"] == odd("kernel").as_str()).unwrap();
    assert_eq!(kernel["args"][odd("attribute")], odd("value"), "{kernel}");
    let meta: Vec<Value> = phases(&events, "M").iter().map(|e| e["args"]["name"].clone()).collect();
    assert!(meta.contains(&Value::from(odd("thread"))), "{meta:?}");
    assert!(meta.contains(&Value::from(format!("MPI Rank 0 ({})", odd("host")))), "{meta:?}");
    // Python's reader: the same names, every event a dict with a phase.
    let script = r#"
import json, sys
doc = json.load(open(sys.argv[1], encoding="utf-8"))
events = doc["traceEvents"]
assert all(isinstance(e, dict) and "ph" in e for e in events)
names = sorted({e["name"] for e in events if e["ph"] == "X"})
args = sorted({k for e in events if e["ph"] == "X" for k in e.get("args", {})})
meta = sorted({e["args"]["name"] for e in events if e["ph"] == "M" and "name" in e["args"]})
print(json.dumps({"names": names, "args": args, "meta": meta}))
"#;
    let out = Command::new("/usr/bin/python3").arg("-c").arg(script).arg(&json).output().unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    let seen: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(seen["names"], serde_json::json!([odd("kernel"), odd("region")]));
    assert_eq!(seen["args"], serde_json::json!([odd("attribute")]));
    assert!(seen["meta"].as_array().unwrap().contains(&Value::from(odd("thread"))), "{seen}");
}

/// The same names through `stats --format csv`, read by Python's csv
/// module: each a single field, as it was.
#[test]
fn stats_csv_carries_odd_names_exactly() {
    let anchor = archives::odd_names(&fresh_dir("an-odd-csv"), 3);
    let odd = |what: &str| format!("{} {what}", archives::ODD_NAME);
    let csv = ok(gt(&["stats", "--format", "csv", "--report", "gpu_kern_sum", s(&anchor)])).stdout;
    let script = r#"
import csv, io, json, sys
rows = list(csv.reader(io.StringIO(sys.stdin.read(), newline="")))
print(json.dumps(rows))
"#;
    let mut child = Command::new("/usr/bin/python3")
        .arg("-c")
        .arg(script)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    std::io::Write::write_all(&mut child.stdin.take().unwrap(), &csv).unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success());
    let rows: Vec<Vec<String>> = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(rows.len(), 2, "a header and the kernel: {rows:?}");
    assert_eq!(rows[0].len(), rows[1].len(), "{rows:?}");
    assert_eq!(rows[1].last(), Some(&odd("kernel")), "{rows:?}");
    let instances = rows[0].iter().position(|c| c == "Instances").unwrap();
    assert_eq!(rows[1][instances], "3");
}
