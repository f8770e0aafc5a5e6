//! CUDA graphs without a GPU: CUPTI buffers built from the bindings'
//! structs (CUPTI 13.0, the GPU machine's release) as a run of
//! tests/gpu/programs/cuda_graphs.cu would fill them — two graphs launched
//! `LAUNCHES` times each, node by node and then with graph-level trace —
//! replayed through the agent's decoding and conversion, merged by
//! `gputrace merge`, and checked by the GPU tests' checker
//! (tests/gpu/check_archives.py, the Python OTF2 reader) and by
//! `gputrace stats --report cuda_graph_sum`.

use std::collections::HashMap;
use std::path::Path;
use std::process::Command;

use cupti_sys::{self as sys, v12_9, v13_0};
use gputrace_cuda::capture::Capture;
use gputrace_cuda::convert::Enabled;
use gputrace_cuda::records::ApiDomain;
use gputrace_cuda::synthetic::record;
use serde_json::Value;

use crate::util::*;

const LAUNCHES: u64 = 3;
const THREAD: u32 = 468;
const STREAM: u32 = 13;
/// Node time (ns), and the gap between nodes.
const NODE: u64 = 1_000;
const GAP: u64 = 100;

/// CUPTI callback ids the capture names (any numbers do: the capture
/// carries their names).
const CB_LAUNCH_KERNEL: u32 = 211;
const CB_GRAPH_LAUNCH: u32 = 311;
const CB_DRIVER_GRAPH_LAUNCH: u32 = 514;

/// A node of a graph: what it is, and its CUPTI node id.
#[derive(Clone, Copy)]
enum Node {
    Kernel(u64),
    Copy(u8, u64),
    Memset(u64),
}

/// The two graphs of cuda_graphs.cu: (CUPTI graph id, nodes in order).
fn graphs() -> [(u32, Vec<Node>); 2] {
    use Node::*;
    let (htod, dtoh, dtod) = (
        sys::CUPTI_ACTIVITY_MEMCPY_KIND_HTOD as u8,
        sys::CUPTI_ACTIVITY_MEMCPY_KIND_DTOH as u8,
        sys::CUPTI_ACTIVITY_MEMCPY_KIND_DTOD as u8,
    );
    [
        // By stream capture: HtoD, memset, scale, add, scale, DtoH.
        (7, vec![Copy(htod, 101), Memset(102), Kernel(103), Kernel(104), Kernel(105), Copy(dtoh, 106)]),
        // By the explicit API: memset, memset, add, scale, DtoD.
        (9, vec![Memset(201), Memset(202), Kernel(203), Kernel(204), Copy(dtod, 205)]),
    ]
}

const EXPECTED: &str = "graph capture nodes kernels=3 memcpy=2 memset=1 launches=3
graph explicit nodes kernels=2 memcpy=1 memset=2 launches=3
expect plain kernels 2
expect graphs 2
expect graph launches 6
";

/// A capture of CUPTI 13.0 records, built record by record.
struct Builder(Capture);

impl Builder {
    /// Appends a record of struct `T` with what `fill` sets.
    fn push<T>(&mut self, fill: impl FnOnce(&mut T)) {
        // SAFETY: every `T` used here is a bindings activity record struct,
        // and every `fill` sets fields one by one.
        self.0.records.push(unsafe { record::<T>(fill) });
    }

    fn api(&mut self, kind: u32, cbid: u32, (start, end): (u64, u64), correlation: u32) {
        self.push(|r: &mut v12_9::CUpti_ActivityAPI| {
            (r.kind, r.cbid, r.start, r.end) = (kind, cbid, start, end);
            (r.processId, r.threadId, r.correlationId) = (THREAD, THREAD, correlation);
        });
    }

    fn kernel(&mut self, start: u64, correlation: u32, name: u64, (graph, node): (u32, u64)) {
        self.push(|r: &mut v13_0::CUpti_ActivityKernel10| {
            r.kind = sys::CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
            (r.start, r.end) = (start, start + NODE);
            (r.deviceId, r.contextId, r.streamId) = (0, 1, STREAM);
            (r.gridX, r.gridY, r.gridZ, r.blockX, r.blockY, r.blockZ) = (4096, 1, 1, 256, 1, 1);
            r.correlationId = correlation;
            r.name = name as *const _;
            (r.graphId, r.graphNodeId) = (graph, node);
        });
    }

    fn node(&mut self, node: Node, at: u64, correlation: u32, graph: u32) {
        let (pinned, device) =
            (sys::CUPTI_ACTIVITY_MEMORY_KIND_PINNED as u8, sys::CUPTI_ACTIVITY_MEMORY_KIND_DEVICE as u8);
        match node {
            Node::Kernel(id) => self.kernel(at, correlation, if id % 2 == 0 { 0x30 } else { 0x20 }, (graph, id)),
            Node::Copy(kind, id) => self.push(|r: &mut v13_0::CUpti_ActivityMemcpy6| {
                r.kind = sys::CUPTI_ACTIVITY_KIND_MEMCPY;
                (r.start, r.end) = (at, at + NODE);
                (r.deviceId, r.contextId, r.streamId) = (0, 1, STREAM);
                r.correlationId = correlation;
                r.copyKind = kind;
                r.srcKind = if kind == sys::CUPTI_ACTIVITY_MEMCPY_KIND_HTOD as u8 { pinned } else { device };
                r.dstKind = if kind == sys::CUPTI_ACTIVITY_MEMCPY_KIND_DTOH as u8 { pinned } else { device };
                r.bytes = 4 << 20;
                (r.graphId, r.graphNodeId) = (graph, id);
            }),
            Node::Memset(id) => self.push(|r: &mut v13_0::CUpti_ActivityMemset4| {
                r.kind = sys::CUPTI_ACTIVITY_KIND_MEMSET;
                (r.start, r.end) = (at, at + NODE);
                (r.deviceId, r.contextId, r.streamId) = (0, 1, STREAM);
                r.correlationId = correlation;
                r.bytes = 4 << 20;
                r.memoryKind = sys::CUPTI_ACTIVITY_MEMORY_KIND_DEVICE as u16;
                (r.graphId, r.graphNodeId) = (graph, id);
            }),
        }
    }

    fn graph_trace(&mut self, (start, end): (u64, u64), correlation: u32, graph: u32) {
        self.push(|r: &mut v13_0::CUpti_ActivityGraphTrace2| {
            r.kind = sys::CUPTI_ACTIVITY_KIND_GRAPH_TRACE;
            r.correlationId = correlation;
            (r.start, r.end) = (start, end);
            (r.deviceId, r.contextId, r.streamId) = (0, 1, STREAM);
            (r.endDeviceId, r.endContextId) = (0, 1);
            r.graphId = graph;
        });
    }
}

/// Builds one process's records: device and context, two kernels
/// outside graphs, then the launches of both graphs, alternating; with
/// `whole`, one GRAPH_TRACE record per launch instead of the nodes'.
fn capture(whole: bool) -> Capture {
    let mut b = Builder(Capture { api_version: 130_001, library_major: 13, ..Capture::default() });
    let c = &mut b.0;
    c.strings.insert(0x10, "NVIDIA H100 80GB HBM3".into());
    c.strings.insert(0x20, "_Z5scalePffi".into());
    c.strings.insert(0x30, "_Z3addPfPKfi".into());
    c.api_names.insert((ApiDomain::Runtime, CB_LAUNCH_KERNEL), "cudaLaunchKernel_v7000".into());
    c.api_names.insert((ApiDomain::Runtime, CB_GRAPH_LAUNCH), "cudaGraphLaunch_v10000".into());
    c.api_names.insert((ApiDomain::Driver, CB_DRIVER_GRAPH_LAUNCH), "cuGraphLaunch".into());
    b.push(|r: &mut v12_9::CUpti_ActivityDevice5| {
        r.kind = sys::CUPTI_ACTIVITY_KIND_DEVICE;
        r.id = 0;
        r.name = 0x10 as *const _;
        r.numMultiprocessors = 132;
        r.globalMemorySize = 80 << 30;
        r.computeCapabilityMajor = 9;
    });
    b.push(|r: &mut v12_9::CUpti_ActivityContext3| {
        r.kind = sys::CUPTI_ACTIVITY_KIND_CONTEXT;
        (r.contextId, r.deviceId) = (1, 0);
    });
    let (runtime, driver) = (sys::CUPTI_ACTIVITY_KIND_RUNTIME, sys::CUPTI_ACTIVITY_KIND_DRIVER);
    let mut t = 1_000_000;
    let mut correlation = 10;
    // Outside graphs: two kernel launches.
    for name in [0x20, 0x30] {
        b.api(runtime, CB_LAUNCH_KERNEL, (t, t + 500), correlation);
        b.kernel(t + 1_000, correlation, name, (0, 0));
        (t, correlation) = (t + 10_000, correlation + 1);
    }
    for _ in 0..LAUNCHES {
        for (graph, nodes) in graphs() {
            // cudaGraphLaunch and the driver's cuGraphLaunch inside it, one
            // correlation id.
            b.api(runtime, CB_GRAPH_LAUNCH, (t, t + 3_000), correlation);
            b.api(driver, CB_DRIVER_GRAPH_LAUNCH, (t + 100, t + 2_900), correlation);
            let first = t + 5_000;
            let mut at = first;
            for node in &nodes {
                if !whole {
                    b.node(*node, at, correlation, graph);
                }
                at += NODE + GAP;
            }
            if whole {
                b.graph_trace((first, at - GAP), correlation, graph);
            }
            (t, correlation) = (at + 10_000, correlation + 1);
        }
    }
    b.0
}

/// Replays `capture` as part `part` of a GPU run (results/exp-<part>,
/// results/<part>.out) and merges it.
fn replay_and_merge(results: &Path, part: &str, capture: &Capture, enable: &str) {
    let exp = results.join(format!("exp-{part}"));
    let config = config::Config::from_pairs(&[("GPUTRACE_CUDA_ENABLE".into(), enable.into())]).unwrap();
    let enabled = Enabled::from_set(&config.cuda_enable);
    gputrace_cuda::replay::replay(std::slice::from_ref(capture), &exp, gpu_node_header(THREAD, "cuda_graphs"), enabled)
        .unwrap();
    std::fs::write(results.join(format!("{part}.out")), EXPECTED).unwrap();
    let out = merge(&exp, false);
    assert!(out.status.success(), "{}", text(&out.stderr));
}

/// `gputrace stats --report cuda_graph_sum --format json`: its rows by graph.
fn graph_sum(exp: &Path) -> HashMap<String, Value> {
    let out = run(Command::new(gputrace()).args(["stats", "--report", "cuda_graph_sum", "--format", "json"]).arg(exp));
    assert!(out.status.success(), "{}", text(&out.stderr));
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    let rows = report["cuda_graph_sum"]["rows"].as_array().unwrap();
    rows.iter().map(|r| (r["Graph"].as_str().unwrap().to_owned(), r.clone())).collect()
}

#[test]
fn graph_nodes_carry_graph_ids_and_their_launch() {
    let results = fresh_dir("graphs-nodes");
    std::fs::create_dir_all(&results).unwrap();
    replay_and_merge(&results, "graphs", &capture(false), "default");
    let report = check_archives(&results);
    assert_reported(
        &report,
        &[
            "ok   graphs: kernels outside graphs",
            "ok   graphs: kernels with a graph id = launches x nodes",
            "ok   graphs: memcpy with a graph id = launches x nodes",
            "ok   graphs: memset with a graph id = launches x nodes",
            "ok   graphs: graph capture: 3 launches, each 3 kernels, 2 copies, 1 memsets, 6 node ids",
            "ok   graphs: graph explicit: 3 launches, each 2 kernels, 1 copies, 2 memsets, 5 node ids",
            "ok   graphs: every graph node's launch call (same correlation id) recorded",
            "ok   graphs: cudaGraphLaunch calls",
        ],
    );
    // The report: per graph, launches and what one launch ran; an
    // execution from its first node's start to its last node's end.
    let rows = graph_sum(&results.join("exp-graphs"));
    assert_eq!(rows.len(), 2, "{rows:?}");
    for (graph, nodes, kernels, copies, memsets) in [("7", 6, 3, 2, 1), ("9", 5, 2, 1, 2)] {
        let r = &rows[graph];
        let span = nodes * NODE + (nodes - 1) * GAP;
        assert_eq!(r["Launches"], LAUNCHES, "{r}");
        assert_eq!(r["Total Time (ns)"], LAUNCHES * span, "{r}");
        assert_eq!((r["Min (ns)"].as_u64(), r["Max (ns)"].as_u64()), (Some(span), Some(span)), "{r}");
        assert_eq!(r["Nodes/Launch"], nodes, "{r}");
        assert_eq!((r["Kernels/Launch"].clone(), r["Copies/Launch"].clone()), (kernels.into(), copies.into()));
        assert_eq!(r["Memsets/Launch"], memsets, "{r}");
    }
    // Chrome export: the ids among a kernel's args.
    let json = results.join("trace.json");
    let out = run(Command::new(gputrace())
        .args(["export", "--format", "chrome", "-o"])
        .arg(&json)
        .arg(results.join("exp-graphs")));
    assert!(out.status.success(), "{}", text(&out.stderr));
    let trace = std::fs::read_to_string(&json).unwrap();
    assert!(
        trace.contains("\"CUDA graph id\":7") && trace.contains("\"CUDA graph node id\":205"),
        "{}",
        &trace[..2000.min(trace.len())]
    );
}

#[test]
fn graph_level_trace_is_one_region_per_execution() {
    let results = fresh_dir("graphs-whole");
    std::fs::create_dir_all(&results).unwrap();
    replay_and_merge(&results, "graphs_whole", &capture(true), "default,graph");
    let report = check_archives(&results);
    assert_reported(
        &report,
        &[
            "ok   graphs_whole: one region per graph execution, per graph",
            "ok   graphs_whole: regions named by their graph",
            "ok   graphs_whole: no graph nodes recorded one by one",
            "ok   graphs_whole: every graph execution's launch call (same correlation id) recorded",
            "ok   graphs_whole: kernels outside graphs still recorded",
        ],
    );
    let rows = graph_sum(&results.join("exp-graphs_whole"));
    for (graph, nodes) in [("7", 6), ("9", 5)] {
        let r = &rows[graph];
        assert_eq!(r["Launches"], LAUNCHES, "{r}");
        assert_eq!(r["Min (ns)"], nodes * NODE + (nodes - 1) * GAP, "{r}");
        assert_eq!(r["Nodes/Launch"], "-", "{r}");
    }
    // Graph executions are not kernels.
    let out = run(Command::new(gputrace())
        .args(["stats", "--report", "gpu_kern_sum", "--format", "json"])
        .arg(results.join("exp-graphs_whole")));
    assert!(out.status.success(), "{}", text(&out.stderr));
    let kern: Value = serde_json::from_slice(&out.stdout).unwrap();
    let instances: u64 =
        kern["gpu_kern_sum"]["rows"].as_array().unwrap().iter().map(|r| r["Instances"].as_u64().unwrap()).sum();
    assert_eq!(instances, 2);
}

/// The same on the CUPTI buffers captured on the H100 (CUDA 13.0) from
/// tests/gpu/programs/cuda_graphs.cu with 25 launches per graph
/// (tests/fixtures/cupti/cuda_graphs*): node by node, and graph-level.
#[test]
fn captured_graph_runs_check_out() {
    for (part, fixture, enable, lines) in [
        (
            "graphs",
            "cuda_graphs",
            "default",
            &[
                "ok   graphs: kernels outside graphs: 2 vs 2",
                "ok   graphs: kernels with a graph id = launches x nodes: 125 vs 125",
                "ok   graphs: memcpy with a graph id = launches x nodes: 75 vs 75",
                "ok   graphs: memset with a graph id = launches x nodes: 75 vs 75",
                "ok   graphs: graph capture: 25 launches, each 3 kernels, 2 copies, 1 memsets, 6 node ids",
                "ok   graphs: graph explicit: 25 launches, each 2 kernels, 1 copies, 2 memsets, 5 node ids",
                "ok   graphs: every graph node's launch call (same correlation id) recorded",
                "ok   graphs: cudaGraphLaunch calls: 50 vs 50",
            ][..],
        ),
        (
            "graphs_whole",
            "cuda_graphs_whole",
            "default,graph",
            &[
                "ok   graphs_whole: one region per graph execution, per graph: [25, 25] vs [25, 25]",
                "ok   graphs_whole: no graph nodes recorded one by one",
                "ok   graphs_whole: every graph execution's launch call (same correlation id) recorded",
                "ok   graphs_whole: kernels outside graphs still recorded: 2 vs 2",
            ][..],
        ),
    ] {
        let results = fresh_dir(&format!("graphs-captured-{part}"));
        std::fs::create_dir_all(&results).unwrap();
        let (captures, expected) = crate::cuda::fixture(fixture);
        let exp = results.join(format!("exp-{part}"));
        let config = config::Config::from_pairs(&[("GPUTRACE_CUDA_ENABLE".into(), enable.into())]).unwrap();
        let header = gpu_node_header(856, "cuda_graphs");
        gputrace_cuda::replay::replay(&captures, &exp, header, Enabled::from_set(&config.cuda_enable)).unwrap();
        std::fs::write(results.join(format!("{part}.out")), expected).unwrap();
        let out = merge(&exp, false);
        assert!(out.status.success(), "{}", text(&out.stderr));
        let report = check_archives(&results);
        assert_reported(&report, lines);
        let rows = graph_sum(&exp);
        let launches: Vec<u64> = rows.values().map(|r| r["Launches"].as_u64().unwrap()).collect();
        assert_eq!(launches, [25, 25], "{rows:?}");
    }
}
