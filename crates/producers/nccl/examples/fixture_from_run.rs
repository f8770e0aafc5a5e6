//! Makes a test fixture of a run on the GPU machine: the plugin's capture,
//! optionally cut to some of the program's iterations, and the lines of
//! NCCL's own log (`NCCL_DEBUG_SUBSYS=COLL`) for the calls kept.
//!
//! ```text
//! cargo run -p gputrace-nccl --example fixture_from_run -- \
//!     CAPTURE NVTX_STREAM COLL_LOG OUT_PREFIX [FIRST..END ...]
//! ```
//!
//! writes `OUT_PREFIX.ncclcap` and `OUT_PREFIX.coll`. A capture of
//! version 3 holds NCCL's NVTX ranges itself (`nvtx_push`/`nvtx_pop`,
//! recorded by the live plugin): give `-` for NVTX_STREAM, and the kept
//! lines are written as they were. A capture of version 2 (without them)
//! is joined with the NCCL-domain ranges the NVTX library recorded in the
//! same process's raw stream (NVTX_STREAM, `vm.<pid>.nvtx.gtr`), as the
//! records the plugin now captures itself, and written as version 3.
//!
//! A *unit* is an outermost NCCL range on the process's main thread, a
//! group from its `ncclGroupStart` to its `ncclGroupEnd` being one;
//! `FIRST..END` keeps units FIRST to END-1 (the list is printed), every
//! record outside all units (initialization, the end) is kept, and every
//! record inside a unit left out is left out. No value is changed. A
//! range of a version 2 join whose end the NVTX library did not record
//! (its `nvtxRangePopPayload` was not answered then: `ncclCommInitRank`)
//! is left out, said in a comment record.

use std::collections::HashMap;
use std::io::Write;
use std::path::Path;

use raw::{Definition, Event, LocationKind, RawFile};
use serde_json::{Value, json};

struct Range {
    tid: u32,
    name: String,
    start: u64,
    end: Option<u64>,
}

fn nvtx_ranges(path: &Path) -> Vec<Range> {
    let raw = RawFile::open(path).expect("an NVTX raw stream");
    let mut strings = HashMap::new();
    for d in &raw.definitions {
        if let Definition::String { id, value } = d {
            strings.insert(*id, value.clone());
        }
    }
    let mut nccl_regions = HashMap::new();
    let mut tids = HashMap::new();
    for d in &raw.definitions {
        match d {
            Definition::Region { id, name, group, .. } if strings[group] == "NVTX domain NCCL" => {
                nccl_regions.insert(*id, strings[name].clone());
            }
            Definition::Location { id, kind: LocationKind::HostThread { tid, .. }, .. } => {
                tids.insert(*id, *tid);
            }
            _ => {}
        }
    }
    let mut events = Vec::new();
    let mut buf = Vec::new();
    for c in &raw.chunks {
        raw.read_payload(c, &mut buf).expect("a readable chunk");
        for (t, e) in RawFile::events(c, &buf) {
            if let Some(&tid) = tids.get(&c.header.location) {
                events.push((tid, t, e));
            }
        }
    }
    // NCCL's ranges per thread, by their Enter and Leave (a thread's events
    // are in time order in its chunks).
    let mut ranges: Vec<Range> = Vec::new();
    let mut open: HashMap<u32, Vec<usize>> = HashMap::new();
    for (tid, t, e) in events {
        match e {
            Event::Enter { region } if nccl_regions.contains_key(&region) => {
                open.entry(tid).or_default().push(ranges.len());
                ranges.push(Range { tid, name: nccl_regions[&region].clone(), start: t, end: None });
            }
            Event::Leave { region } if nccl_regions.contains_key(&region) => {
                if let Some(i) = open.entry(tid).or_default().pop() {
                    ranges[i].end = Some(t);
                }
            }
            _ => {}
        }
    }
    ranges
}

/// NCCL's ranges per thread from a capture's own `nvtx_push`/`nvtx_pop`
/// records (version 3).
fn captured_ranges(records: &[Value]) -> Vec<Range> {
    let mut ranges: Vec<Range> = Vec::new();
    let mut open: HashMap<u32, Vec<usize>> = HashMap::new();
    for r in records {
        let (Some(t), Some(tid)) = (r["t"].as_u64(), r["tid"].as_u64()) else { continue };
        let tid = tid as u32;
        match r["record"].as_str() {
            Some("nvtx_push") => {
                open.entry(tid).or_default().push(ranges.len());
                let name = r["range"]["name"].as_str().unwrap_or_default().to_string();
                ranges.push(Range { tid, name, start: t, end: None });
            }
            Some("nvtx_pop") => {
                if let Some(i) = open.entry(tid).or_default().pop() {
                    ranges[i].end = Some(t);
                }
            }
            _ => {}
        }
    }
    ranges
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [capture, nvtx, coll, out, keep @ ..] = args.as_slice() else {
        eprintln!("usage: fixture_from_run CAPTURE NVTX_STREAM COLL_LOG OUT_PREFIX [FIRST..END ...]");
        std::process::exit(2);
    };
    let keep: Vec<(usize, usize)> = keep
        .iter()
        .map(|k| {
            let (a, b) = k.split_once("..").expect("FIRST..END");
            (a.parse().unwrap(), b.parse().unwrap())
        })
        .collect();
    let text = std::fs::read_to_string(capture).unwrap();
    let mut lines = text.lines();
    let head_line = lines.next().unwrap();
    let mut head: Value = serde_json::from_str(head_line).unwrap();
    let pid = head["process"]["pid"].as_u64().unwrap() as u32;
    let lines: Vec<&str> = lines.collect();
    let records: Vec<Value> = lines.iter().map(|l| serde_json::from_str(l).unwrap()).collect();
    // Version 3: NCCL's ranges are in the capture; else joined from the
    // raw stream.
    let captured = head["version"].as_u64().is_some_and(|v| v >= 3);
    assert_eq!(captured, nvtx == "-", "NVTX_STREAM is `-` exactly for a capture of version 3");

    let all = if captured { captured_ranges(&records) } else { nvtx_ranges(Path::new(nvtx)) };
    let unended: Vec<&Range> = all.iter().filter(|r| r.end.is_none()).collect();
    let ranges: Vec<&Range> = all.iter().filter(|r| r.end.is_some()).collect();

    let units = units_of(&ranges, pid);
    for (i, u) in units.iter().enumerate() {
        eprintln!("unit {i}: {}", u.2.join(" "));
    }
    let dropped = |t: u64| {
        !keep.is_empty()
            && units
                .iter()
                .enumerate()
                .any(|(i, u)| t >= u.0 && t <= u.1 && !keep.iter().any(|&(a, b)| (a..b).contains(&i)))
    };

    let kept: Vec<String> = keep.iter().map(|(a, b)| format!("{a}..{b}")).collect();
    let units_note =
        if kept.is_empty() { String::new() } else { format!("; units kept: {} of {}", kept.join(", "), units.len()) };
    let mut f = std::fs::File::create(format!("{out}.ncclcap")).unwrap();
    let capture_name = Path::new(capture).file_name().unwrap().to_string_lossy();
    if captured {
        // The kept lines as they were.
        let note = format!(
            "made by crates/producers/nccl/examples/fixture_from_run.rs from {capture_name} (NCCL's ranges captured by \
             the plugin){units_note}"
        );
        writeln!(f, "{head_line}").unwrap();
        writeln!(f, "{}", json!({"record":"comment","text":note})).unwrap();
        for (line, rec) in lines.iter().zip(&records) {
            if !rec.get("t").and_then(Value::as_u64).is_some_and(dropped) {
                writeln!(f, "{line}").unwrap();
            }
        }
    } else {
        // NVTX records by time, then merged into the capture's order.
        let mut nvtx_records: Vec<(u64, Value)> = Vec::new();
        for r in &ranges {
            if dropped(r.start) {
                continue;
            }
            nvtx_records.push((r.start, json!({"record":"nvtx_push","t":r.start,"tid":r.tid,"range":{"name":r.name}})));
            let end = r.end.unwrap_or(r.start);
            nvtx_records.push((end, json!({"record":"nvtx_pop","t":end,"tid":r.tid})));
        }
        nvtx_records.sort_by_key(|(t, _)| *t);
        let mut merged: Vec<Value> = Vec::new();
        let mut pending = nvtx_records.into_iter().peekable();
        for rec in records {
            if let Some(t) = rec.get("t").and_then(Value::as_u64) {
                while pending.peek().is_some_and(|(tn, _)| *tn <= t) {
                    merged.push(pending.next().unwrap().1);
                }
                if dropped(t) {
                    continue;
                }
            }
            merged.push(rec);
        }
        merged.extend(pending.map(|(_, v)| v));

        let mut note = format!(
            "made by crates/producers/nccl/examples/fixture_from_run.rs from {capture_name} and the NCCL-domain NVTX \
             ranges of {}{units_note}",
            Path::new(nvtx).file_name().unwrap().to_string_lossy()
        );
        for r in &unended {
            note += &format!("; left out: {} at {} on {} (its end was not recorded)", r.name, r.start, r.tid);
        }
        head["version"] = json!(3);
        writeln!(f, "{head}").unwrap();
        writeln!(f, "{}", json!({"record":"comment","text":note})).unwrap();
        for m in &merged {
            writeln!(f, "{m}").unwrap();
        }
    }

    write_log(coll, &ranges, &dropped, out);
}

/// Units: outermost ranges of the main thread (`pid`), a group as one:
/// (start, end, the names of its ranges).
fn units_of(ranges: &[&Range], pid: u32) -> Vec<(u64, u64, Vec<String>)> {
    let mut units: Vec<(u64, u64, Vec<String>)> = Vec::new();
    let mut depth = 0usize;
    let mut main: Vec<&&Range> = ranges.iter().filter(|r| r.tid == pid).collect();
    main.sort_by_key(|r| r.start);
    let mut last_end = 0;
    for r in main {
        let end = r.end.unwrap_or(r.start);
        if r.start < last_end {
            continue; // nested in the previous outermost range
        }
        last_end = end;
        let in_group = depth > 0;
        match r.name.as_str() {
            "ncclGroupStart" => depth += 1,
            "ncclGroupEnd" => depth = depth.saturating_sub(1),
            _ => {}
        }
        match units.last_mut() {
            Some(u) if in_group => {
                u.1 = end;
                u.2.push(r.name.clone());
            }
            _ => units.push((r.start, end, vec![r.name.clone()])),
        }
    }
    units
}

/// NCCL's log (`coll`): one line per call, in the order of the calls'
/// ranges; the kept ones to `OUT_PREFIX.coll`.
fn write_log(coll: &str, ranges: &[&Range], dropped: &dyn Fn(u64) -> bool, out: &str) {
    let log = std::fs::read_to_string(coll).unwrap();
    let calls = |name: &str| {
        let n = name.strip_prefix("nccl").unwrap_or(name);
        matches!(
            n,
            "AllReduce"
                | "AllGather"
                | "ReduceScatter"
                | "Broadcast"
                | "Reduce"
                | "AlltoAll"
                | "Gather"
                | "Scatter"
                | "Send"
                | "Recv"
        )
        .then(|| n.to_string())
    };
    let mut call_ranges: Vec<&&Range> = ranges.iter().filter(|r| calls(&r.name).is_some()).collect();
    call_ranges.sort_by_key(|r| r.start);
    let log_lines: Vec<&str> = log.lines().filter(|l| l.contains(": opCount ")).collect();
    assert_eq!(log_lines.len(), call_ranges.len(), "one log line per call");
    let mut g = std::fs::File::create(format!("{out}.coll")).unwrap();
    for (line, r) in log_lines.iter().zip(&call_ranges) {
        let func = calls(&r.name).unwrap();
        assert!(line.contains(&format!("NCCL INFO {func}: ")), "log line {line} for call {}", r.name);
        if !dropped(r.start) {
            writeln!(g, "{line}").unwrap();
        }
    }
}
